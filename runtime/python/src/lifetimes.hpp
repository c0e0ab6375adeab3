#pragma once
/// \file
/// The Python lease, hold, reservation and scope objects (§7, §8, §12).
/// Each keeps its manager alive; destroying one while active releases it
/// (with a ResourceWarning, as the runtime's abandoned lifetimes do).

#include "binding.hpp"

namespace fhr::python {

/// The C++ side of a ResidencyLease. The Python type is a plain CPython
/// type that holds it inline (lifetimes.cpp): pybind11's instances cost a
/// lease a heap allocation, the registration of the instance in its
/// address map and the removal from it, a quarter of its instructions.
struct PyLease {
  /// Only moves its arguments: it cannot fail once they are made.
  PyLease(py::object owner, PyManager &owner_core, Lease taken, py::tuple unique, Location at,
          std::vector<py::object> consumer_streams) noexcept;
  ~PyLease();
  /// Releases the lease (without the GIL). Once it is released, this
  /// object's destruction need not drop the GIL (Lifetime::released).
  void release(bool wait);
  py::object manager;
  PyManager *core;
  Lease lease;
  py::tuple handles;
  Location location;
  std::vector<py::object> streams; ///< the consumer stream objects, kept alive
  bool entered = false;
};

/// A new ResidencyLease owning `lease` (the arguments are PyLease's).
py::object lease_object(py::object owner, PyManager &owner_core, Lease lease, py::tuple unique, Location at,
                        py::object stream);

struct PyHold {
  PyHold(py::object owner, Hold taken, py::tuple unique, Location at);
  ~PyHold();
  py::object manager;
  Hold hold;
  py::tuple handles;
  Location location;
  bool entered = false;
};

struct PyReservation {
  PyReservation(py::object owner, ActiveReservation taken, Location at, std::uint64_t size, std::string text);
  ~PyReservation();
  py::object manager;
  ActiveReservation reservation;
  Location location;
  std::uint64_t nbytes;
  std::string label;
  bool entered = false;
};

/// The runtime's side of a ResidencyScope (fhr/_scope.py has the rest).
struct PyScope {
  PyScope(py::object owner, Scope taken, py::object source_plan, std::vector<py::object> actions);
  ~PyScope();
  py::object manager;
  std::optional<Scope> scope;
  py::object plan;
  std::vector<py::object> sequence; ///< reclaim, enter and exit actions
};

} // namespace fhr::python

// ResidencyLease, ResidencyHold, ResidencyReservation and the runtime half
// of ResidencyScope (§7, §8, §12).
#include "lifetimes.hpp"
#include "vectorcall.hpp"

#include <structmember.h> // T_PYSSIZET, READONLY (Python 3.11 and earlier)

#include <cstddef>

namespace fhr::python {

namespace {

/// Destroys a lifetime without the GIL (its release takes the manager's
/// lock), then issues the warning an abandoned one leaves.
template <typename T>
void destroy_without_gil(T &lifetime) {
  {
    py::gil_scoped_release release;
    T gone(std::move(lifetime));
  }
  drain_deferred();
}

[[noreturn]] void released(const char *what) {
  raise_error("ResidencyLifetimeClosedError", std::string(what) + " was released");
}

bool same_stream(py::handle a, py::handle b) { return a.is(b); }

/// BorrowedValues, the mapping a lease lends its values through.
py::handle borrowed_values_class() {
  // Set under the GIL, without a static's guard: the import may release the
  // GIL, and a second thread blocked on the guard would hold it meanwhile.
  // Two threads may both import; the class is the same (one extra reference).
  static PyObject *type = nullptr;
  if (!type) type = python_class("fhr._lifetimes", "BorrowedValues").release().ptr();
  return type;
}

py::object borrowed_values(py::handle lease) {
  PyObject *values = PyObject_CallOneArg(borrowed_values_class().ptr(), lease.ptr());
  if (!values) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(values);
}

// ---- the lease's vectorcall methods (vectorcall.hpp) ------------------------
// `self` is a ResidencyLease: CPython checks it before calling a method.

/// What CPython reads of a lease object: a plain struct, so that the weak
/// references' offset is an offsetof CPython can be given.
struct LeaseHeader {
  PyObject ob_base;          // PyObject_HEAD
  PyObject *weak_references; ///< null until a weak reference is taken (tp_alloc zeroes it)
};
/// A ResidencyLease: the object header and the lease in one allocation.
/// Instances are made by acquire() alone (the type cannot be instantiated
/// from Python), so every one holds a constructed PyLease.
struct LeaseObject {
  LeaseHeader header; // first: a LeaseObject * is the PyObject *
  PyLease lease;
};

PyTypeObject *lease_type = nullptr; ///< made by bind_lifetimes

PyLease &lease_of(PyObject *self) {
  if (!PyObject_TypeCheck(self, lease_type)) throw py::type_error("not a ResidencyLease");
  return reinterpret_cast<LeaseObject *>(self)->lease;
}

void lease_dealloc(PyObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  auto *object = reinterpret_cast<LeaseObject *>(self);
  if (object->header.weak_references) PyObject_ClearWeakRefs(self);
  object->lease.~PyLease();
  type->tp_free(self);
  Py_DECREF(type); // a heap type's instances own a reference to it
}

void require_active(PyLease &l) {
  if (!without_gil([&] { return l.lease.active(); })) released("the lease");
}

/// release(*, wait=False) and close(*, wait=False).
py::object release_lease(const Parameters<1> &parameters, PyObject *self, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames) {
  const auto [wait_object] = parameters.parse(args, nargs, kwnames);
  bool wait = false;
  if (wait_object) {
    try { // pybind11's conversion to bool, as the method's pybind11 binding had
      wait = wait_object.cast<bool>();
    } catch (const py::cast_error &) {
      throw py::type_error("wait must be a bool, not " + std::string(Py_TYPE(wait_object.ptr())->tp_name));
    }
  }
  lease_of(self).release(wait);
  return py::none();
}

PyObject *lease_release(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<1> parameters("release", {"wait"}, 0, 0);
    return release_lease(parameters, self, args, nargs, kwnames);
  });
}

PyObject *lease_close(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<1> parameters("close", {"wait"}, 0, 0);
    return release_lease(parameters, self, args, nargs, kwnames);
  });
}

PyObject *lease_enter(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<0> parameters("__enter__", {}, 0, 0);
    parameters.parse(args, nargs, kwnames);
    PyLease &l = lease_of(self);
    if (!without_gil([&] { return l.lease.active(); }))
      raise_error("ResidencyLifetimeClosedError", "ResidencyLease cannot be entered after release");
    if (l.entered) throw std::logic_error("ResidencyLease cannot be entered twice");
    l.entered = true;
    return borrowed_values(self);
  });
}

/// __exit__(*args): any positional arguments (the exception), no keywords.
PyObject *lease_exit(PyObject *self, PyObject *const *, Py_ssize_t, PyObject *kwnames) {
  return guarded([&] {
    if (kwnames && PyTuple_GET_SIZE(kwnames) > 0)
      throw py::type_error("__exit__() takes no keyword arguments");
    lease_of(self).release(false);
    return py::none();
  });
}

PyObject *lease_value(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<1> parameters("_value", {"handle"}, 1, 1);
    const auto [handle] = parameters.parse(args, nargs, kwnames);
    PyLease &l = lease_of(self);
    bool held = false;
    for (py::handle h : l.handles)
      held = held || h.equal(handle);
    if (!held) {
      require_active(l);
      throw py::key_error(py::repr(handle).cast<std::string>());
    }
    const Handle native = as_handle(handle).handle;
    const std::span<const std::byte> bytes = without_gil([&] { return l.lease.value(native); });
    return l.core->value_at(native, l.location, bytes);
  });
}

PyObject *lease_require_active(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<0> parameters("_require_active", {}, 0, 0);
    parameters.parse(args, nargs, kwnames);
    require_active(lease_of(self));
    return py::none();
  });
}

PyObject *lease_add_consumer_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<1> parameters("add_consumer_stream", {"stream"}, 1, 1);
    const auto [stream_argument] = parameters.parse(args, nargs, kwnames);
    PyLease &l = lease_of(self);
    require_active(l);
    if (!l.location.is_cuda()) throw py::value_error("CPU residency leases do not use CUDA streams");
    py::object stream = py::reinterpret_borrow<py::object>(stream_argument);
    const Stream native = to_stream(stream, l.core->cuda_backend());
    without_gil([&] { l.lease.add_consumer_stream(native); });
    for (const py::object &s : l.streams)
      if (same_stream(s, stream)) return py::none();
    l.streams.push_back(std::move(stream));
    return py::none();
  });
}

/// A property getter for CPython (a new reference, or null with the error set).
template <py::object (*Get)(PyObject *self, PyLease &lease)>
PyObject *lease_getter(PyObject *self, void *) {
  return guarded([&] { return Get(self, lease_of(self)); });
}

py::object lease_active(PyObject *, PyLease &l) {
  return py::bool_(without_gil([&] { return l.lease.active(); }));
}
py::object lease_handles(PyObject *, PyLease &l) { return l.handles; }
py::object lease_location(PyObject *, PyLease &l) { return location_object(l.location); }
py::object lease_values(PyObject *self, PyLease &l) {
  require_active(l);
  return borrowed_values(self);
}

/// The ResidencyLease type (a heap type of this module).
py::object make_lease_type() {
  // The calls of every lease (docs/python.md, "What a call costs").
  static PyMethodDef methods[] = {
      fast_method("release", lease_release, "release($self, *, wait=False)\n--\n\nEnds the read (§7.2)."),
      fast_method("close", lease_close, "close($self, *, wait=False)\n--\n\nThe same as release."),
      fast_method("__enter__", lease_enter, "__enter__($self)\n--\n\n"),
      fast_method("__exit__", lease_exit, "__exit__($self, *args)\n--\n\n"),
      fast_method("_value", lease_value,
                  "_value($self, handle)\n--\n\nThe value of `handle` the lease lends."),
      fast_method("_require_active", lease_require_active,
                  "_require_active($self)\n--\n\nResidencyLifetimeClosedError once released."),
      fast_method("add_consumer_stream", lease_add_consumer_stream,
                  "add_consumer_stream($self, stream)\n--\n\nAnother stream that reads the values."),
      PyMethodDef{nullptr, nullptr, 0, nullptr},
  };
  static PyGetSetDef properties[] = {
      {"active", lease_getter<lease_active>, nullptr, "Is the lease still held?", nullptr},
      {"handles", lease_getter<lease_handles>, nullptr, "The leased handles, each once.", nullptr},
      {"location", lease_getter<lease_location>, nullptr, "Where the values are read.", nullptr},
      {"values", lease_getter<lease_values>, nullptr, "The values by handle, while the lease is held.",
       nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr},
  };
  // Weak references, as pybind11's instances had them (weakref.finalize on a lease).
  static PyMemberDef members[] = {
      {"__weaklistoffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(LeaseHeader, weak_references)),
       READONLY, nullptr},
      {nullptr, 0, 0, 0, nullptr},
  };
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void *>(lease_dealloc)},
      {Py_tp_methods, methods},
      {Py_tp_getset, properties},
      {Py_tp_members, members},
      {Py_tp_doc, const_cast<char *>("A read of ready replicas (§7.2); a CUDA lease protects them until its "
                                     "consumer streams have passed the events its release records.")},
      {0, nullptr},
  };
  // Immutable too: a type whose __new__ could be set would let Python make
  // an instance that holds no lease.
  static PyType_Spec spec = {
      "fhr._fhr.ResidencyLease", static_cast<int>(sizeof(LeaseObject)), 0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE, slots};
  vectorcall_detail::rethrow_function(); // made now, not while an exception is handled
  PyObject *type = PyType_FromSpec(&spec);
  if (!type) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(type);
}

} // namespace

py::object lease_object(py::object owner, PyManager &owner_core, Lease lease, py::tuple unique, Location at,
                        py::object stream) {
  std::vector<py::object> streams;
  PyObject *object = nullptr;
  try {
    if (!stream.is_none()) streams.push_back(std::move(stream));
    object = lease_type->tp_alloc(lease_type, 0);
    if (!object) throw py::error_already_set();
  } catch (...) {
    // The lease goes without the GIL, as an abandoned one does.
    destroy_without_gil(lease);
    throw;
  }
  new (&reinterpret_cast<LeaseObject *>(object)->lease)
      PyLease(std::move(owner), owner_core, std::move(lease), std::move(unique), at, std::move(streams));
  return py::reinterpret_steal<py::object>(object);
}

PyLease::PyLease(py::object owner, PyManager &owner_core, Lease taken, py::tuple unique, Location at,
                 std::vector<py::object> consumer_streams) noexcept
    : manager(std::move(owner)), core(&owner_core), lease(std::move(taken)), handles(std::move(unique)),
      location(at), streams(std::move(consumer_streams)) {}
PyLease::~PyLease() {
  // A released lease is destroyed without asking the manager (no lock, so
  // no GIL to drop); an active one releases itself, without the GIL.
  if (!lease.released()) destroy_without_gil(lease);
}

void PyLease::release(bool wait) {
  without_gil([&] { lease.release(wait); });
}

PyHold::PyHold(py::object owner, Hold taken, py::tuple unique, Location at)
    : manager(std::move(owner)), hold(std::move(taken)), handles(std::move(unique)), location(at) {}
PyHold::~PyHold() { destroy_without_gil(hold); }

PyReservation::PyReservation(py::object owner, ActiveReservation taken, Location at, std::uint64_t size,
                             std::string text)
    : manager(std::move(owner)), reservation(std::move(taken)), location(at), nbytes(size),
      label(std::move(text)) {}
PyReservation::~PyReservation() { destroy_without_gil(reservation); }

PyScope::PyScope(py::object owner, Scope taken, py::object source_plan, std::vector<py::object> actions)
    : manager(std::move(owner)), plan(std::move(source_plan)), sequence(std::move(actions)) {
  scope.emplace(std::move(taken));
}
PyScope::~PyScope() {
  {
    py::gil_scoped_release release;
    scope.reset();
  }
  drain_deferred();
}

void bind_lifetimes(py::module_ &m) {
  py::object lease = make_lease_type();
  lease_type = reinterpret_cast<PyTypeObject *>(lease.ptr());
  m.add_object("ResidencyLease", lease);

  py::class_<PyHold>(m, "ResidencyHold", "Protection of ready replicas without access to them (§7.3).")
      .def_property_readonly("active", [](PyHold &h) { return without_gil([&] { return h.hold.active(); }); })
      .def_property_readonly("handles", [](PyHold &h) { return h.handles; })
      .def_property_readonly("location", [](PyHold &h) { return location_object(h.location); })
      .def("release", [](PyHold &h) { without_gil([&] { h.hold.release(); }); })
      .def("close", [](PyHold &h) { without_gil([&] { h.hold.release(); }); })
      .def("__enter__",
           [](py::object self) {
             PyHold &h = self.cast<PyHold &>();
             if (!without_gil([&] { return h.hold.active(); }))
               raise_error("ResidencyLifetimeClosedError", "ResidencyHold cannot be entered after release");
             if (h.entered) throw std::logic_error("ResidencyHold cannot be entered twice");
             h.entered = true;
             return self;
           })
      .def("__exit__", [](PyHold &h, py::args) { without_gil([&] { h.hold.release(); }); });

  py::class_<PyReservation>(m, "ResidencyReservation", "Headroom counted against a location's budget (§8).")
      .def_property_readonly(
          "active", [](PyReservation &r) { return without_gil([&] { return r.reservation.active(); }); })
      .def_property_readonly("location", [](PyReservation &r) { return location_object(r.location); })
      .def_property_readonly("nbytes", [](PyReservation &r) { return r.nbytes; })
      .def_property_readonly("label", [](PyReservation &r) { return r.label; })
      .def("release", [](PyReservation &r) { without_gil([&] { r.reservation.release(); }); })
      .def("close", [](PyReservation &r) { without_gil([&] { r.reservation.release(); }); })
      .def("__enter__",
           [](py::object self) {
             PyReservation &r = self.cast<PyReservation &>();
             if (!without_gil([&] { return r.reservation.active(); }))
               raise_error("ResidencyLifetimeClosedError",
                           "ResidencyReservation cannot be entered after release");
             if (r.entered) throw std::logic_error("ResidencyReservation cannot be entered twice");
             r.entered = true;
             return self;
           })
      .def("__exit__", [](PyReservation &r, py::args) { without_gil([&] { r.reservation.release(); }); });

  py::class_<PyScope>(m, "_Scope", "The runtime's side of a ResidencyScope.")
      .def("enter",
           [](PyScope &s) {
             PyManager &manager = s.manager.cast<PyManager &>();
             try {
               without_gil([&] { s.scope->enter(); });
             } catch (const ResidencyPlanExecutionError &error) {
               raise_with_cause(make_execution_error(manager, error, s.sequence, s.plan, 0), error);
             }
           })
      .def("close", [](PyScope &s) -> py::object {
        PyManager &manager = s.manager.cast<PyManager &>();
        try {
          without_gil([&] { s.scope->close(); });
        } catch (const ResidencyPlanExecutionError &error) {
          raise_with_cause(make_execution_error(manager, error, s.sequence, s.plan, 0), error);
        }
        const std::optional<PlanReport> &report = s.scope->report();
        return report ? make_plan_report(manager, *report, s.sequence) : py::none();
      });
}

} // namespace fhr::python

// ResidencyLease, ResidencyHold, ResidencyReservation and the runtime half
// of ResidencyScope (§7, §8, §12).
#include "lifetimes.hpp"

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

} // namespace

PyLease::PyLease(py::object owner, Lease taken, py::tuple unique, Location at, py::object stream)
    : manager(std::move(owner)), core(bound_object<PyManager>(manager)), lease(std::move(taken)),
      handles(std::move(unique)), location(at) {
  if (!stream.is_none()) streams.push_back(std::move(stream));
}
PyLease::~PyLease() { destroy_without_gil(lease); }

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
  py::class_<PyLease>(
      m, "ResidencyLease",
      "A read of ready replicas (§7.2); a CUDA lease protects them until its consumer streams "
      "have passed the events its release records.")
      .def_property_readonly("active",
                             [](PyLease &l) { return without_gil([&] { return l.lease.active(); }); })
      .def_property_readonly("handles", [](PyLease &l) { return l.handles; })
      .def_property_readonly("location", [](PyLease &l) { return location_object(l.location); })
      .def_property_readonly("values",
                             [](py::object self) {
                               PyLease &l = self.cast<PyLease &>();
                               if (!without_gil([&] { return l.lease.active(); })) released("the lease");
                               return python_class("fhr._lifetimes", "BorrowedValues")(self);
                             })
      .def("_value",
           [](PyLease &l, py::handle handle) {
             bool held = false;
             for (py::handle h : l.handles)
               held = held || h.equal(handle);
             if (!held) {
               if (!without_gil([&] { return l.lease.active(); })) released("the lease");
               throw py::key_error(py::repr(handle).cast<std::string>());
             }
             const Handle native = as_handle(handle).handle;
             const std::span<const std::byte> bytes = without_gil([&] { return l.lease.value(native); });
             return l.core->value_at(native, l.location, bytes);
           })
      .def("_require_active",
           [](PyLease &l) {
             if (!without_gil([&] { return l.lease.active(); })) released("the lease");
           })
      .def(
          "add_consumer_stream",
          [](PyLease &l, py::object stream) {
            if (!without_gil([&] { return l.lease.active(); })) released("the lease");
            if (!l.location.is_cuda()) throw py::value_error("CPU residency leases do not use CUDA streams");
            const Stream native = to_stream(stream, l.core->cuda_backend());
            without_gil([&] { l.lease.add_consumer_stream(native); });
            for (const py::object &s : l.streams)
              if (same_stream(s, stream)) return;
            l.streams.push_back(std::move(stream));
          },
          py::arg("stream"))
      .def(
          "release", [](PyLease &l, bool wait) { without_gil([&] { l.lease.release(wait); }); },
          py::kw_only(), py::arg("wait") = false)
      .def(
          "close", [](PyLease &l, bool wait) { without_gil([&] { l.lease.release(wait); }); }, py::kw_only(),
          py::arg("wait") = false)
      .def("__enter__",
           [](py::object self) {
             PyLease &l = self.cast<PyLease &>();
             if (!without_gil([&] { return l.lease.active(); }))
               raise_error("ResidencyLifetimeClosedError", "ResidencyLease cannot be entered after release");
             if (l.entered) throw std::logic_error("ResidencyLease cannot be entered twice");
             l.entered = true;
             return python_class("fhr._lifetimes", "BorrowedValues")(self);
           })
      .def("__exit__", [](PyLease &l, py::args) { without_gil([&] { l.lease.release(false); }); });

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

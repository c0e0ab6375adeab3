// Transition reports (a C++ class: every transition returns one), and the
// conversions of the runtime's plan reports, explanations, execution
// errors and snapshots into the records of fhr/_records.py.
#include "binding.hpp"

namespace fhr::python {

namespace {

py::object action_for(const PyReport &r) {
  if (!r.action.is_none() && r.action) return r.action;
  const TransitionReport &t = r.report;
  switch (t.action) {
  case ActionKind::Ensure:
  case ActionKind::Copy:
    return python_class("fhr._plan", "EnsureResident")(r.handle, optional_location(t.destination));
  case ActionKind::Move:
    return python_class("fhr._plan", "MoveResident")(r.handle, optional_location(t.destination),
                                                     optional_location(r.requested_from));
  case ActionKind::Drop:
    return python_class("fhr._plan", "DropResident")(r.handle, optional_location(t.source));
  case ActionKind::Discard: break;
  }
  return python_class("fhr._plan", "DiscardValue")(r.handle);
}

py::object reason_of(const TransitionReport &t) {
  return t.reason.empty() ? py::object(py::none()) : py::object(py::str(t.reason.data(), t.reason.size()));
}

/// The report pairs with `actions[i]` (plans), or rebuilds its action.
py::tuple transitions(PyManager &manager, const PlanReport &report, const std::vector<py::object> &actions) {
  py::tuple out(report.transitions.size());
  for (std::size_t i = 0; i < report.transitions.size(); ++i)
    out[i] = make_report(manager, report.transitions[i], i < actions.size() ? actions[i] : py::none());
  return out;
}

std::string value_name(const Handle &handle) { return "#" + std::to_string(handle.handle_id); }

} // namespace

py::object make_report(PyManager &manager, const TransitionReport &report, py::object action) {
  PyReport r;
  r.report = report;
  const ValueMeta *meta = manager.meta_of_value(report.value);
  r.handle = meta ? meta->handle : py::none();
  r.action = std::move(action);
  for (const std::optional<Location> &l : {report.destination, report.source})
    if (l && l->is_cuda() && !r.allocator_device) r.allocator_device = l;
  return py::cast(std::move(r));
}

py::object make_plan_report(PyManager &manager, const PlanReport &report,
                            const std::vector<py::object> &actions) {
  return python_class("fhr._records", "ResidencyPlanReport")(
      report.plan_name, transitions(manager, report, actions), report.started_at_ns, report.completed_at_ns);
}

py::object make_execution_error(PyManager &manager, const ResidencyPlanExecutionError &error,
                                const std::vector<py::object> &sequence, py::handle plan, std::size_t) {
  const auto &d = error.details();
  std::size_t offset = 0;
  py::object failed_reservation = py::none();
  if (!plan.is_none()) {
    const std::size_t reclaim = py::len(plan.attr("reclaim")), enter = py::len(plan.attr("enter"));
    if (d.phase == ExecutionPhase::Enter) offset = reclaim;
    if (d.phase == ExecutionPhase::Exit) offset = reclaim + enter;
    if (d.phase == ExecutionPhase::Reserve && d.failed_reservation_index)
      failed_reservation = py::tuple(plan.attr("reservations"))[*d.failed_reservation_index];
  }
  py::object failed_action = py::none();
  if (d.failed_action_index && offset + *d.failed_action_index < sequence.size())
    failed_action = sequence[offset + *d.failed_action_index];
  py::object report = make_plan_report(manager, d.partial_report, sequence);
  return error_class("ResidencyPlanExecutionError")(
      py::arg("plan_name") = d.plan_name, py::arg("phase") = std::string(execution_phase_name(d.phase)),
      py::arg("partial_report") = report, py::arg("failed_action") = failed_action,
      py::arg("failed_action_index") = d.failed_action_index, py::arg("detail") = d.detail,
      py::arg("failed_reservation") = failed_reservation,
      py::arg("failed_reservation_index") = d.failed_reservation_index, py::arg("message") = error.what());
}

void raise_with_cause(py::object error, const ResidencyPlanExecutionError &cpp) {
  py::object cause = take_stashed_exception();
  if (cause.is_none()) {
    const auto &d = cpp.details();
    switch (d.cause) {
    case ErrorClass::None: cause = error_class("BackendError")(d.detail); break;
    case ErrorClass::InvalidArgument:
      cause = py::reinterpret_borrow<py::object>(PyExc_ValueError)(d.detail);
      break;
    default: cause = python_exception(std::make_exception_ptr(ResidencyError(d.cause, d.detail)));
    }
  }
  PyException_SetCause(error.ptr(), cause.release().ptr()); // steals the cause
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

py::object make_explanation(PyManager &manager, py::handle plan, const Explanation &explanation,
                            const PlanSpec &spec, const std::vector<py::object> &sequence) {
  py::object action_explanation = python_class("fhr._records", "ResidencyActionExplanation");
  py::list actions;
  std::string reason;
  for (const SimulatedStep &step : explanation.steps) {
    const Outcome &o = step.outcome;
    if (step.phase == Phase::Reserve) {
      if (o.failed())
        reason = describe(o, {{}, spec.reservations[step.index].label}, &explanation.failure_detail);
      continue;
    }
    const std::size_t offset = step.phase == Phase::Reclaim ? 0
                               : step.phase == Phase::Enter ? spec.reclaim.size()
                                                            : spec.reclaim.size() + spec.enter.size();
    const std::vector<ActionSpec> &phase = step.phase == Phase::Reclaim ? spec.reclaim
                                           : step.phase == Phase::Enter ? spec.enter
                                                                        : spec.exit;
    const Handle &handle = phase[step.index].handle;
    const std::string name = value_name(handle);
    const bool handle_failure = o.reason == Reason::HandleUnknown || o.reason == Reason::HandleDiscarded ||
                                o.reason == Reason::ValueDiscardedInPlan;
    std::uint64_t logical = 0, storage = 0;
    const std::ptrdiff_t index = manager.index_of(handle);
    if (!handle_failure && index >= 0) {
      logical = manager.values_[static_cast<std::size_t>(index)].spec.logical_nbytes;
      storage = manager.values_[static_cast<std::size_t>(index)].spec.storage_nbytes;
    }
    const std::string text = describe(o, {name, {}}, o.failed() ? &explanation.failure_detail : nullptr);
    if (o.failed()) reason = text;
    actions.append(action_explanation(sequence[offset + step.index], o.executable(),
                                      o.verdict == Verdict::NoOp, optional_location(o.source),
                                      optional_location(o.destination), logical, storage,
                                      text.empty() ? py::object(py::none()) : py::object(py::str(text))));
  }
  py::list peaks;
  for (const LocationPrediction &p : explanation.locations)
    peaks.append(py::make_tuple(location_object(p.location), p.peak_charged));
  return python_class("fhr._records", "ResidencyPlanExplanation")(
      spec.name, py::tuple(actions), py::tuple(plan.attr("reservations")), py::tuple(peaks),
      explanation.feasible, explanation.feasible ? py::object(py::none()) : py::object(py::str(reason)));
}

py::object snapshot_raw(PyManager &manager, const Snapshot &snapshot) {
  py::list values;
  for (const SnapshotValue &v : snapshot.values) {
    const ValueMeta *meta = manager.meta_of_value(static_cast<ValueId>(v.handle_id - 1));
    py::list materializations;
    for (const SnapshotMaterialization &m : v.materializations)
      materializations.append(py::make_tuple(location_object(m.location), m.logical_nbytes, m.storage_nbytes,
                                             m.charged_nbytes, m.use_count, m.hold_count,
                                             m.pending_event_count));
    values.append(py::make_tuple(meta ? meta->handle : py::none(), v.spec.logical_nbytes,
                                 v.spec.storage_nbytes, v.spec.replica_mode == ReplicaMode::Replicable,
                                 v.spec.recoverability == Recoverability::Reconstructible, v.has_source,
                                 optional_location(v.source_location), v.discarded, materializations));
  }
  py::list locations;
  for (const SnapshotLocation &l : snapshot.locations)
    locations.append(py::make_tuple(
        location_object(l.location), l.budget_bytes, l.used_bytes, l.reserved_bytes, l.remaining_budget_bytes,
        l.peak_used_bytes, l.peak_charged_bytes, l.value_count, l.reservation_count, l.use_count,
        l.hold_count, l.pending_event_count, l.pool_in_use_bytes, l.pool_idle_bytes, l.driver_free_bytes));
  py::list reservations;
  for (const SnapshotReservation &r : snapshot.reservations)
    reservations.append(py::make_tuple(location_object(r.location), r.nbytes, r.label));
  return py::make_tuple(manager.id_text(), snapshot.state_version, snapshot.captured_at_ns, values, locations,
                        reservations);
}

void bind_records(py::module_ &m) {
  auto none_int = [](const PyReport &) { return py::none(); };
  py::class_<PyReport>(m, "ResidencyTransitionReport",
                       "What one completed transition did (§6.5); failed transitions have none.")
      .def_property_readonly("action", &action_for)
      .def_property_readonly("no_op", [](const PyReport &r) { return r.report.no_op; })
      .def_property_readonly("source", [](const PyReport &r) { return optional_location(r.report.source); })
      .def_property_readonly("destination",
                             [](const PyReport &r) { return optional_location(r.report.destination); })
      .def_property_readonly("logical_nbytes", [](const PyReport &r) { return r.report.logical_nbytes; })
      .def_property_readonly("storage_nbytes", [](const PyReport &r) { return r.report.storage_nbytes; })
      .def_property_readonly("started_at_ns", [](const PyReport &r) { return r.report.started_at_ns; })
      .def_property_readonly("completed_at_ns", [](const PyReport &r) { return r.report.completed_at_ns; })
      // fhr's own: the time inside the value's Source.load, and when the
      // copy into the destination was issued (None: no copy, or a small
      // one stamped on the time-stamp counter).
      .def_property_readonly("source_load_ns", [](const PyReport &r) { return r.report.source_load_ns; })
      .def_property_readonly("copy_issued_at_ns",
                             [](const PyReport &r) -> py::object {
                               return r.report.copy_issued_at_ns
                                          ? py::object(py::int_(r.report.copy_issued_at_ns))
                                          : py::object(py::none());
                             })
      .def_property_readonly("allocator_device",
                             [](const PyReport &r) -> py::object {
                               return r.allocator_device ? py::object(py::str(r.allocator_device->name()))
                                                         : py::object(py::none());
                             })
      .def_property_readonly("allocator_allocated_bytes_before", none_int)
      .def_property_readonly("allocator_reserved_bytes_before", none_int)
      .def_property_readonly("allocator_allocated_bytes_after", none_int)
      .def_property_readonly("allocator_reserved_bytes_after", none_int)
      .def_property_readonly("reason", [](const PyReport &r) { return reason_of(r.report); })
      .def("__eq__",
           [](const PyReport &a, py::handle other) {
             if (!py::isinstance<PyReport>(other)) return false;
             const PyReport &b = other.cast<const PyReport &>();
             const TransitionReport &x = a.report, &y = b.report;
             return x.no_op == y.no_op && x.source == y.source && x.destination == y.destination &&
                    x.logical_nbytes == y.logical_nbytes && x.storage_nbytes == y.storage_nbytes &&
                    x.started_at_ns == y.started_at_ns && x.completed_at_ns == y.completed_at_ns &&
                    x.reason == y.reason && action_for(a).equal(action_for(b));
           })
      .def("__repr__", [](const PyReport &r) {
        return "ResidencyTransitionReport(action=" + py::repr(action_for(r)).cast<std::string>() +
               ", no_op=" + (r.report.no_op ? "True" : "False") +
               ", source=" + py::repr(optional_location(r.report.source)).cast<std::string>() +
               ", destination=" + py::repr(optional_location(r.report.destination)).cast<std::string>() +
               ", logical_nbytes=" + std::to_string(r.report.logical_nbytes) + ")";
      });
}

} // namespace fhr::python

#include "fhr/executor/manager_target.hpp"

#include <algorithm>
#include <stdexcept>

namespace fhr {

std::string DeclaredValue::display_name() const {
  return index ? name + "[" + std::to_string(*index) + "]" : name;
}

namespace {

/// Ends a lifetime at once: a lease as with wait = true (the model releases
/// its tokens immediately).
void release_now(Lifetime &lifetime) {
  if (auto *lease = dynamic_cast<Lease *>(&lifetime))
    lease->release(/*wait=*/true);
  else
    lifetime.release();
}

/// The class a caller catches for `error`.
ErrorClass class_of(const std::exception &error) {
  if (const auto *residency = dynamic_cast<const ResidencyError *>(&error)) return residency->error_class();
  if (dynamic_cast<const std::invalid_argument *>(&error)) return ErrorClass::InvalidArgument;
  return ErrorClass::None;
}

} // namespace

ManagerTarget::ManagerTarget(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
                             RunnerOptions options)
    : manager_(manager), module_(module), binder_(binder), options_(std::move(options)) {
  values_.resize(module.value_count);
  handles_.resize(module.value_count);
  for (const bytecode::Declaration &d : module.declarations)
    for (std::uint32_t i = 0; i < d.value_count(); ++i) {
      DeclaredValue &value = values_[d.first_value + i];
      value.value_id = d.first_value + i;
      value.name = module.strings[d.name];
      if (d.family_size != 0) value.index = i;
      value.spec = d.spec;
      value.location = d.location;
    }
}

ManagerTarget::~ManagerTarget() {
  scopes_.clear(); // an unfinished run's scopes release their reservations
  for (auto it = lifetimes_.rbegin(); it != lifetimes_.rend(); ++it) {
    if (!*it) continue;
    try {
      release_now(**it);
    } catch (const std::exception &) {
      // Inside a source callback: the lifetime's destructor defers it.
    }
  }
}

Handle ManagerTarget::handle_of(ValueId value) const {
  if (value >= handles_.size()) throw std::out_of_range("no value " + std::to_string(value));
  if (handles_[value].handle_id == 0)
    throw std::logic_error("value " + values_[value].display_name() + " is not bound yet");
  return handles_[value];
}

std::optional<ValueId> ManagerTarget::value_of(const Handle &handle) const {
  if (handle.manager_id != manager_.id()) return std::nullopt;
  auto it = value_of_handle_.find(handle.handle_id);
  if (it == value_of_handle_.end()) return std::nullopt;
  return it->second;
}

std::vector<ActionSpec> ManagerTarget::action_specs(const PhaseActions &phase) const {
  std::vector<ActionSpec> specs;
  specs.reserve(phase.size());
  for (const Action &a : phase.actions)
    specs.push_back(ActionSpec{a.kind, handle_of(a.value), a.location, a.from});
  return specs;
}

PlanSpec ManagerTarget::plan_spec(const PlanSteps &plan) const {
  return PlanSpec{plan.name, action_specs(plan.reclaim), plan.reservations, action_specs(plan.enter),
                  action_specs(plan.exit)};
}

void ManagerTarget::succeeded(StepRecord step) {
  run().steps.push_back(step);
  run().timings.push_back({});
}

void ManagerTarget::committed(StepRecord step, const TransitionReport &report) {
  step.outcome.verdict = report.no_op ? Verdict::NoOp : Verdict::Ok;
  step.outcome.source = report.source;
  step.outcome.destination = report.destination;
  run().steps.push_back(step);
  run().timings.push_back(StepTiming{report.started_at_ns, report.completed_at_ns, report.source_load_ns,
                                     report.copy_issued_at_ns, report.window_position});
  if (options_.after_transition) options_.after_transition(report, handle_of(step.value));
}

bool ManagerTarget::failed(StepRecord step, const std::exception &error, ErrorClass cause) {
  step.outcome = failure(Reason::None, cause);
  step.raised = class_of(error);
  run().steps.push_back(step);
  run().timings.push_back({});
  run().failure_message = error.what();
  return false;
}

bool ManagerTarget::declare(const bytecode::Declaration &, ValueId value, StepRecord step) {
  DeclaredValue &declared = values_[value];
  declared.line = module_.code[step.instruction].line;
  try {
    handles_[value] = binder_.bind(manager_, declared);
    value_of_handle_[handles_[value].handle_id] = value;
  } catch (const std::exception &error) {
    return failed(step, error, class_of(error));
  }
  succeeded(step);
  return true;
}

bool ManagerTarget::apply(const Action &action, StepRecord step) {
  const Handle handle = handle_of(action.value);
  try {
    TransitionReport report;
    switch (action.kind) {
    case ActionKind::Ensure: report = manager_.ensure(handle, action.location); break;
    case ActionKind::Copy: report = manager_.copy(handle, action.location); break;
    case ActionKind::Move: report = manager_.move(handle, action.location, action.from); break;
    case ActionKind::Drop: report = manager_.drop(handle, action.location); break;
    case ActionKind::Discard: report = manager_.discard(handle); break;
    }
    committed(step, report);
    return true;
  } catch (const std::exception &error) {
    return failed(step, error, class_of(error));
  }
}

ManagerTarget::Token ManagerTarget::keep(std::unique_ptr<Lifetime> lifetime) {
  lifetimes_.push_back(std::move(lifetime));
  return lifetimes_.size();
}

bool ManagerTarget::protect(LifetimeKind kind, std::span<const ValueId> values, Location at, bool pending,
                            StepRecord step, Token &token) {
  std::vector<Handle> handles;
  handles.reserve(values.size());
  for (ValueId v : values)
    handles.push_back(handle_of(v));
  try {
    std::unique_ptr<Lifetime> lifetime;
    if (kind == LifetimeKind::Hold) {
      lifetime = std::make_unique<Hold>(manager_.hold(handles, at));
    } else {
      Stream stream;
      if (at.is_cuda()) {
        if (!options_.consumer_stream)
          throw std::invalid_argument("a lease at " + at.name() + " needs a consumer stream");
        stream = options_.consumer_stream(at);
      }
      auto lease = std::make_unique<Lease>(manager_.acquire(handles, at, stream));
      if (pending) { // released while readers still run
        if (stream && options_.submit_reader) options_.submit_reader(stream);
        lease->release(/*wait=*/false);
      }
      lifetime = std::move(lease);
    }
    token = keep(std::move(lifetime));
  } catch (const std::exception &error) {
    return failed(step, error, class_of(error));
  }
  succeeded(step);
  return true;
}

bool ManagerTarget::reserve(const Reservation &reservation, StepRecord step, Token &token) {
  try {
    token = keep(std::make_unique<ActiveReservation>(
        manager_.reserve(reservation.location, reservation.nbytes, reservation.label)));
  } catch (const std::exception &error) {
    return failed(step, error, class_of(error));
  }
  succeeded(step);
  return true;
}

bool ManagerTarget::release(Token token, StepRecord step) {
  end_lifetime(token);
  succeeded(step);
  return true;
}

void ManagerTarget::end_lifetime(Token token) {
  std::unique_ptr<Lifetime> &lifetime = lifetimes_.at(token - 1);
  if (!lifetime) return;
  release_now(*lifetime);
  lifetime.reset();
}

void ManagerTarget::record_phase(StepKind kind, const PlanReport &report, std::size_t from,
                                 const PhaseActions &phase) {
  for (std::size_t i = from; i < report.transitions.size() && i - from < phase.size(); ++i) {
    StepRecord step;
    step.kind = kind;
    step.index = static_cast<std::uint32_t>(i - from);
    step.instruction = phase.instructions[i - from];
    step.value = phase.actions[i - from].value;
    step.container = phase.container;
    committed(step, report.transitions[i]);
  }
}

bool ManagerTarget::preflight_failed(const PlanSpec &spec, const ResidencyPlanError &error,
                                     const std::function<void(StepRecord &)> &where) {
  StepRecord step;
  step.kind = StepKind::Preflight;
  const Explanation why = manager_.explain(spec);
  if (const SimulatedStep *refused = why.first_failure()) {
    step.phase = step_kind(refused->phase);
    step.index = refused->index;
    where(step);
    failed(step, error, refused->outcome.error);
    run().failure_detail = why.failure_detail;
    return false;
  }
  return failed(step, error, error.error_class());
}

bool ManagerTarget::enter_scope(const PlanSteps &plan) {
  PlanSpec spec = plan_spec(plan);
  scopes_.push_back(std::make_unique<Scope>(manager_.scope(spec)));
  Scope &scope = *scopes_.back();
  const auto reservations = static_cast<std::uint32_t>(plan.reservations.size());
  // The entry's steps: the reclaim transitions, the reservations admitted,
  // then the enter transitions.
  auto record_entry = [&](const PlanReport &report, std::uint32_t admitted) {
    const std::size_t reclaimed = std::min(report.transitions.size(), plan.reclaim.size());
    PlanReport reclaim_part;
    reclaim_part.transitions.assign(report.transitions.begin(), report.transitions.begin() + reclaimed);
    record_phase(StepKind::Reclaim, reclaim_part, 0, plan.reclaim);
    for (std::uint32_t i = 0; i < admitted; ++i) {
      StepRecord step;
      step.kind = StepKind::Reserve;
      step.index = i;
      step.instruction = plan.reservation_instructions[i];
      step.container = plan.index;
      succeeded(step);
    }
    record_phase(StepKind::Enter, report, reclaimed, plan.enter);
  };
  try {
    scope.enter();
  } catch (const ResidencyPlanExecutionError &error) {
    const auto &d = error.details();
    const bool reserve = d.phase == StepKind::Reserve;
    const auto index = static_cast<std::uint32_t>(reserve ? d.failed_reservation_index.value_or(0)
                                                          : d.failed_action_index.value_or(0));
    record_entry(d.partial_report, d.phase == StepKind::Reclaim ? 0 : reserve ? index : reservations);
    StepRecord step;
    step.kind = d.phase;
    step.index = index;
    step.container = plan.index;
    step.instruction = plan.instruction_of(d.phase, index);
    if (!reserve) step.value = plan.phase(d.phase).actions[index].value;
    scopes_.pop_back();
    return failed(step, error, d.cause);
  } catch (const ResidencyPlanError &error) {
    scopes_.pop_back();
    return preflight_failed(spec, error, [&](StepRecord &step) {
      step.container = plan.index;
      step.instruction = plan.instruction_of(step.phase, step.index);
      if (step.phase != StepKind::Reserve) step.value = plan.phase(step.phase).actions[step.index].value;
    });
  }
  record_entry(scope.progress(), reservations);
  return true;
}

bool ManagerTarget::exit_scope(const PlanSteps &plan) {
  Scope &scope = *scopes_.back();
  const std::size_t before_exit = scope.progress().transitions.size();
  try {
    scope.close();
  } catch (const ResidencyPlanExecutionError &error) {
    const auto &d = error.details();
    record_phase(StepKind::Exit, d.partial_report, before_exit, plan.exit);
    StepRecord step;
    step.kind = StepKind::Exit;
    step.container = plan.index;
    step.index = static_cast<std::uint32_t>(d.failed_action_index.value_or(0));
    step.instruction = plan.exit.instructions[step.index];
    step.value = plan.exit.actions[step.index].value;
    scopes_.pop_back();
    return failed(step, error, d.cause);
  }
  record_phase(StepKind::Exit, scope.progress(), before_exit, plan.exit);
  scopes_.pop_back();
  return true;
}

void ManagerTarget::abandon_scope() {
  // Destroying an entered scope releases its reservations (with a warning)
  // and runs no exit action (§12.3).
  scopes_.pop_back();
}

bool ManagerTarget::execute_actions(const ActionListSteps &list) {
  const std::vector<ActionSpec> specs = action_specs(list.actions);
  try {
    const PlanReport report = manager_.execute_actions(specs, list.name);
    record_phase(StepKind::Execute, report, 0, list.actions);
    return true;
  } catch (const ResidencyPlanExecutionError &error) {
    const auto &d = error.details();
    record_phase(StepKind::Execute, d.partial_report, 0, list.actions);
    StepRecord step;
    step.kind = StepKind::Execute;
    step.container = list.instruction;
    step.index = static_cast<std::uint32_t>(d.failed_action_index.value_or(0));
    step.instruction = list.actions.instructions[step.index];
    step.value = list.actions.actions[step.index].value;
    return failed(step, error, d.cause);
  } catch (const ResidencyPlanError &error) {
    return preflight_failed(PlanSpec{list.name, {}, {}, specs, {}}, error, [&](StepRecord &step) {
      step.container = list.instruction;
      step.instruction = list.actions.instructions[step.index];
      step.value = list.actions.actions[step.index].value;
    });
  }
}

} // namespace fhr

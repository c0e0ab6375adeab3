#include "fhr/executor/model_target.hpp"

#include "fhr/model/scope_sequence.hpp"

#include <algorithm>

namespace fhr {

DeviceConfig device_config(const bytecode::Module &module) {
  DeviceConfig config;
  config.device_count = module.device_count.value_or(Location::kMaxCudaDevices);
  config.cuda_available = config.device_count > 0;
  return config;
}

State initial_state(const bytecode::Module &module, std::span<const BudgetOverride> overrides,
                    std::optional<DeviceConfig> devices) {
  State state(devices.value_or(device_config(module)));
  for (const auto &[location, budget] : module.budgets) {
    std::optional<std::uint64_t> effective = budget;
    for (const BudgetOverride &o : overrides)
      if (o.location == location) effective = o.budget_bytes;
    state.set_budget(location, effective);
  }
  for (const BudgetOverride &o : overrides)
    if (!state.is_registered(o.location)) state.set_budget(o.location, o.budget_bytes);
  return state;
}

ChargeWindow::ChargeWindow(State &state) {
  state.reset_peaks();
  for (Location location : state.registry()) {
    const LocationAccount &account = state.account(location);
    before_[location.index()] =
        Charge{account.used_bytes, account.reserved_bytes, state.resident_logical_bytes(location)};
  }
}

std::vector<LocationPrediction> ChargeWindow::predictions(const State &state) const {
  std::vector<LocationPrediction> out;
  for (Location location : state.registry()) {
    const LocationAccount &now = state.account(location);
    const Charge &then = before_[location.index()];
    out.push_back(LocationPrediction{location, now.budget_bytes, then.used, then.reserved,
                                     now.peak_charged_bytes, now.peak_used_bytes, then.resident_logical});
  }
  return out;
}

std::vector<std::uint32_t> ModelTarget::protecting_instructions(ValueId value, LocationSet at) const {
  std::vector<std::uint32_t> instructions;
  for (LifetimeId id : state_.live_lifetimes()) { // in creation order
    const LifetimeRecord *lifetime = state_.find_lifetime(id);
    if (lifetime->kind == LifetimeKind::Reservation || !at.contains(lifetime->location)) continue;
    if (std::find(lifetime->values.begin(), lifetime->values.end(), value) == lifetime->values.end())
      continue;
    if (auto origin = origins_.find(id); origin != origins_.end()) instructions.push_back(origin->second);
  }
  return instructions;
}

bool ModelTarget::record(const StepRecord &step, const Outcome &outcome, ErrorClass raised) {
  return finish(run().steps.emplace_back(step), outcome, raised);
}

bool ModelTarget::finish(StepRecord &step, const Outcome &outcome, ErrorClass raised) {
  step.outcome = outcome;
  if (outcome.failed()) {
    step.raised = raised == ErrorClass::None ? outcome.error : raised;
    run().failure_detail = detail_;
    if (outcome.error == ErrorClass::InUse)
      run().protected_by = protecting_instructions(step.value, detail_.protected_locations);
  }
  return !outcome.failed();
}

bool ModelTarget::declare(const bytecode::Declaration &declaration, ValueId value, StepRecord step) {
  const Outcome outcome = declaration.spec.recoverability == Recoverability::MustPreserve
                              ? state_.adopt(value, declaration.spec, declaration.location, &detail_)
                              : state_.register_source(value, declaration.spec, declaration.location);
  return record(step, outcome, ErrorClass::None);
}

bool ModelTarget::apply(const Action &action, StepRecord step) {
  std::optional<LocationSet> discarded;
  const Outcome outcome = apply_action(action, step.transfer, discarded);
  const bool ok = record(step, outcome, ErrorClass::None);
  note_discard(discarded);
  return ok;
}

Outcome ModelTarget::apply_action(const Action &action, StepTransfer &transfer,
                                  std::optional<LocationSet> &discarded) {
  if (action.kind != ActionKind::Discard) return state_.apply(action, &detail_, transfer);
  LocationSet removed;
  const Outcome outcome = state_.apply(action, &detail_, transfer, &removed);
  if (!outcome.failed()) discarded = removed;
  return outcome;
}

void ModelTarget::note_discard(const std::optional<LocationSet> &discarded) {
  if (discarded)
    run().discarded.push_back(
        DiscardedReplicas{static_cast<std::uint32_t>(run().steps.size() - 1), *discarded});
}

bool ModelTarget::protect(LifetimeKind kind, std::span<const ValueId> values, Location at, bool pending,
                          StepRecord step, Token &token) {
  LifetimeId id = 0;
  ValueId failed_value = 0;
  const Outcome outcome = state_.protect(kind, values, at, &id, &failed_value);
  if (outcome.failed())
    step.value = failed_value;
  else
    origins_[id] = step.instruction;
  // `lease ... pending`: released while its CUDA events are still pending.
  if (!outcome.failed() && pending) state_.release(id, /*events_pending=*/true);
  token = id;
  return record(step, outcome, ErrorClass::None);
}

bool ModelTarget::reserve(const Reservation &reservation, StepRecord step, Token &token) {
  LifetimeId id = 0;
  const Outcome outcome =
      state_.reserve(reservation.location, reservation.nbytes, reservation.label, &id, &detail_);
  token = id;
  return record(step, outcome, ErrorClass::None);
}

bool ModelTarget::release(Token token, StepRecord step) {
  return record(step, state_.release(token), ErrorClass::None);
}

void ModelTarget::end_lifetime(Token token) { state_.release(token); }

template <typename Where>
bool ModelTarget::preflight(const PlanView &view, Where &&where) {
  // The explainer's overlay is reset over the state as it is now, and keeps
  // its index of values from one scope's preflight to the next.
  const Explanation explanation = explainer_.explain(view);
  if (explanation.feasible) return true;
  const SimulatedStep &failed = *explanation.first_failure();
  StepRecord step;
  step.kind = StepKind::Preflight;
  step.phase = step_kind(failed.phase);
  step.index = failed.index;
  where(step);
  step.outcome = failed.outcome;
  step.raised = ErrorClass::Plan;
  run().failure_detail = explanation.failure_detail;
  if (failed.outcome.error == ErrorClass::InUse)
    run().protected_by = protecting_instructions(step.value, explanation.failure_detail.protected_locations);
  run().steps.push_back(step);
  return false;
}

bool ModelTarget::run_phase(StepKind kind, const PhaseActions &phase) {
  for (std::uint32_t i = 0; i < phase.size(); ++i) {
    // Written in place: a step assembled on the stack and copied whole was
    // read back wider than it was written (a store-forwarding stall per step).
    StepRecord &step = run().steps.emplace_back();
    step.kind = kind;
    step.index = i;
    step.instruction = phase.instructions[i];
    step.value = phase.actions[i].value;
    step.container = phase.container;
    std::optional<LocationSet> discarded;
    const Outcome outcome = apply_action(phase.actions[i], step.transfer, discarded);
    const bool ok = finish(step, outcome, ErrorClass::PlanExecution);
    note_discard(discarded);
    if (!ok) return false;
  }
  return true;
}

/// A scope's steps on the model, for the shared sequence.
struct ModelTarget::ScopeSteps {
  ModelTarget &target;
  const PlanSteps &plan;
  std::vector<LifetimeId> &reservations;

  bool preflight() {
    return target.preflight(plan.view(), [&](StepRecord &step) {
      step.container = plan.index;
      step.instruction = plan.instruction_of(step.phase, step.index);
      if (step.phase != StepKind::Reserve) step.value = plan.phase(step.phase).actions[step.index].value;
    });
  }
  bool run_phase(StepKind phase) { return target.run_phase(phase, plan.phase(phase)); }
  std::size_t reservation_count() const { return plan.reservations.size(); }
  bool reserve(std::size_t index) {
    const Reservation &r = plan.reservations[index];
    LifetimeId id = 0;
    StepRecord step;
    step.kind = StepKind::Reserve;
    step.index = static_cast<std::uint32_t>(index);
    step.instruction = plan.reservation_instructions[index];
    step.container = plan.index;
    const Outcome outcome = target.state_.reserve(r.location, r.nbytes, r.label, &id, &target.detail_);
    if (!target.record(step, outcome, ErrorClass::PlanExecution)) return false;
    reservations.push_back(id);
    return true;
  }
  void release_reservations() noexcept {
    release_last_first(reservations, [&](LifetimeId id) { target.state_.release(id); });
  }
};

bool ModelTarget::enter_scope(const PlanSteps &plan) {
  scope_reservations_.emplace_back();
  ScopeSteps steps{*this, plan, scope_reservations_.back()};
  if (fhr::enter_scope(steps)) return true;
  scope_reservations_.pop_back();
  return false;
}

bool ModelTarget::exit_scope(const PlanSteps &plan) {
  ScopeSteps steps{*this, plan, scope_reservations_.back()};
  const bool exited = fhr::exit_scope(steps);
  scope_reservations_.pop_back();
  return exited;
}

void ModelTarget::abandon_scope() {
  release_last_first(scope_reservations_.back(), [&](LifetimeId id) { state_.release(id); });
  scope_reservations_.pop_back();
}

/// An action list's steps on the model, for the shared sequence.
struct ModelTarget::ListSteps {
  ModelTarget &target;
  const ActionListSteps &list;

  bool preflight() {
    return target.preflight(list.view(), [&](StepRecord &step) {
      step.container = list.instruction;
      step.instruction = list.actions.instructions[step.index];
      step.value = list.actions.actions[step.index].value;
    });
  }
  bool run_phase(StepKind phase) { return target.run_phase(phase, list.actions); }
};

bool ModelTarget::execute_actions(const ActionListSteps &list) {
  ListSteps steps{*this, list};
  return execute_action_list(steps);
}

} // namespace fhr

// The explanation of a plan as the reference presents it (§10.3): a row per
// simulated action with the action, its bytes and its failure or no-op
// text, beside the shared simulator's prediction.
#include "fhr/runtime/manager.hpp"

namespace fhr {

ExplainedPlan Manager::explained(const PlanSpec &plan, Explanation simulated) const {
  ExplainedPlan out;
  static_cast<Explanation &>(out) = std::move(simulated);
  out.plan_name = plan.name;
  out.reservations = plan.reservations;
  const SimulatedStep *failed = out.first_failure();
  for (const SimulatedStep &step : out.steps) {
    const FailureDetail *detail = &step == failed ? &out.failure_detail : nullptr;
    if (step.phase == Phase::Reserve) {
      if (detail) out.reason = describe(step.outcome, {{}, plan.reservations[step.index].label}, detail);
      continue;
    }
    const std::vector<ActionSpec> &phase = step.phase == Phase::Reclaim ? plan.reclaim
                                           : step.phase == Phase::Exit  ? plan.exit
                                                                        : plan.enter;
    ExplainedAction row;
    row.phase = step.phase;
    row.index = step.index;
    row.action = phase[step.index];
    row.executable = step.outcome.executable();
    row.no_op = step.outcome.verdict == Verdict::NoOp;
    row.source = step.outcome.source;
    row.destination = step.outcome.destination;
    const ValueId value = resolve_for_plan(row.action.handle);
    // A handle that names no live value has no spec to report (§10.3).
    const bool unresolved =
        step.outcome.error == ErrorClass::Handle || step.outcome.reason == Reason::ValueDiscardedInPlan;
    if (!unresolved) {
      const ValueSpec &spec = state_.value(value).spec;
      row.logical_nbytes = spec.logical_nbytes;
      row.storage_nbytes = spec.storage_nbytes;
    }
    if (step.outcome.failed())
      row.reason = step.outcome.reason == Reason::HandleUnknown
                       ? unresolvable_message(row.action.handle) // foreign or unknown, as a call says
                       : describe(step.outcome, {value_name(value), {}}, detail);
    else if (row.no_op)
      row.reason = no_op_reason(step.outcome.reason);
    if (detail) out.reason = row.reason;
    out.actions.push_back(std::move(row));
  }
  return out;
}

} // namespace fhr

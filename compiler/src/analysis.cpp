#include "fhr/compiler/analysis.hpp"

#include "fhr/executor/interpreter.hpp"

#include <algorithm>

namespace fhr {

bool Analysis::feasible() const {
  if (setup.failed_step) return false;
  return std::all_of(plans.begin(), plans.end(),
                     [](const PlanExplanation &p) { return p.explanation.feasible; }) &&
         std::all_of(programs.begin(), programs.end(), [](const ProgramReport &p) { return p.feasible; });
}

Analysis analyze_module(const VerifiedModule &verified, std::span<const BudgetOverride> overrides,
                        std::optional<DeviceConfig> devices) {
  const bytecode::Module &module = *verified.module;
  Analysis analysis;
  PlanTable plans(module);
  State state = initial_state(module, overrides, devices);
  ModelTarget model(state);
  analysis.setup.run = Interpreter(plans, model).run_setup();
  const RunResult &setup = analysis.setup.run;
  analysis.setup.steps = setup.steps.size();
  if (const StepRecord *failed = setup.failure()) {
    analysis.setup.failed_step = setup.steps.size() - 1;
    analysis.setup.failure = failed->outcome;
    analysis.setup.detail = setup.failure_detail;
  }
  analysis.plans.reserve(module.plans.size());
  PlanSteps plan; // each plan is explained once: one buffer for all
  for (std::uint32_t p = 0; p < module.plans.size(); ++p) {
    // `in program`: the plan is explained where programs run it, in their
    // state, never against the setup state alone.
    if (module.plans[p].in_program) {
      analysis.program_only_plans.push_back(module.strings[module.plans[p].name]);
      continue;
    }
    expand_plan(module, p, plan);
    PlanExplanation explained{p, plan.name, model.explain(plan), {}};
    for (LocationPrediction &location : explained.explanation.locations)
      location.resident_logical_before = state.resident_logical_bytes(location.location);
    if (const SimulatedStep *failed = explained.explanation.first_failure();
        failed && failed->outcome.error == ErrorClass::InUse) {
      const ValueId value = plan.phase(step_kind(failed->phase)).actions[failed->index].value;
      explained.protected_by =
          model.protecting_instructions(value, explained.explanation.failure_detail.protected_locations);
    }
    analysis.plans.push_back(std::move(explained));
  }
  for (std::uint32_t p = 0; p < module.programs.size(); ++p) {
    State run_state = state;
    ModelTarget target(run_state, model.lifetime_origins());
    const ChargeWindow window(run_state);
    ProgramReport report;
    report.program = p;
    report.name = module.strings[module.programs[p].name];
    report.run = Interpreter(plans, target).run_program(p);
    report.feasible = report.run.completed;
    report.locations = window.predictions(run_state);
    analysis.programs.push_back(std::move(report));
  }
  return analysis;
}

} // namespace fhr

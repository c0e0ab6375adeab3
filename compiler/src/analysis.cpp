#include "fhr/compiler/analysis.hpp"

#include <algorithm>

namespace fhr {

bool Analysis::feasible() const {
  if (setup.failed_step) return false;
  return std::all_of(plans.begin(), plans.end(),
                     [](const PlanExplanation &p) { return p.explanation.feasible; }) &&
         std::all_of(programs.begin(), programs.end(), [](const ProgramReport &p) { return p.feasible; });
}

DeviceConfig device_config(const ir::Module &module) {
  DeviceConfig config;
  config.device_count = module.device_count.value_or(Location::kMaxCudaDevices);
  config.cuda_available = config.device_count > 0;
  return config;
}

State initial_state(const ir::Module &module, const std::vector<BudgetOverride> &overrides) {
  State state(device_config(module));
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

SetupReport run_setup(const ir::Module &module, State &state) {
  SetupReport report;
  std::vector<LifetimeId> lifetime_of_step(module.setup.size(), 0);
  for (std::size_t i = 0; i < module.setup.size(); ++i) {
    const ir::SetupStep &step = module.setup[i];
    Outcome outcome;
    switch (step.kind) {
    case ir::SetupKind::Adopt:
      outcome = state.adopt(step.value, module.values[step.value].spec, module.values[step.value].location,
                            &report.detail);
      break;
    case ir::SetupKind::RegisterSource:
      outcome = state.register_source(step.value, module.values[step.value].spec,
                                      module.values[step.value].location);
      break;
    case ir::SetupKind::Action: outcome = state.apply(step.action, &report.detail); break;
    case ir::SetupKind::Hold:
    case ir::SetupKind::Lease:
      outcome = state.protect(step.kind == ir::SetupKind::Hold ? LifetimeKind::Hold : LifetimeKind::Lease,
                              step.values, step.location, &lifetime_of_step[i], &report.failed_value);
      if (!outcome.failed() && step.pending) state.release(lifetime_of_step[i], true);
      break;
    case ir::SetupKind::Reserve:
      outcome = state.reserve(step.location, step.nbytes, step.label, &lifetime_of_step[i], &report.detail);
      break;
    case ir::SetupKind::Release: outcome = state.release(lifetime_of_step[step.target]); break;
    }
    report.steps = i + 1;
    if (outcome.failed()) {
      report.failed_step = i;
      report.failure = outcome;
      return report;
    }
  }
  return report;
}

namespace {

class ProgramRunner {
public:
  ProgramRunner(const ir::Module &module, State &state, ProgramReport &report)
      : module_(module), state_(state), report_(report) {}

  bool run_body(const std::vector<ir::ProgramItem> &items) {
    std::vector<LifetimeId> lifetimes;
    for (const ir::ProgramItem &item : items)
      if (!run_item(item, lifetimes)) return false;
    for (auto it = lifetimes.rbegin(); it != lifetimes.rend(); ++it)
      state_.release(*it);
    return true;
  }

private:
  bool record(ProgramPart part, const ir::ProgramItem &item, Phase phase, std::uint32_t index,
              const Outcome &outcome, ErrorClass raised_on_failure, ValueId failed_value = 0) {
    ProgramRow row;
    row.part = part;
    row.item = &item;
    row.phase = phase;
    row.index = index;
    row.outcome = outcome;
    if (outcome.failed())
      row.raised = raised_on_failure == ErrorClass::None ? outcome.error : raised_on_failure;
    row.failed_value = failed_value;
    report_.rows.push_back(row);
    if (outcome.failed()) report_.feasible = false;
    return !outcome.failed();
  }

  /// The shared simulator decides whether the scope or list may start.
  bool preflight(const ir::ProgramItem &item, const PlanView &view) {
    Simulator simulator(state_);
    Explanation explanation = simulator.explain(view);
    if (explanation.feasible) return true;
    const SimulatedStep &failed = *explanation.first_failure();
    report_.detail = explanation.failure_detail;
    return record(ProgramPart::Preflight, item, failed.phase, failed.index, failed.outcome, ErrorClass::Plan);
  }

  bool execute(ProgramPart part, const ir::ProgramItem &item, Phase phase, const std::vector<Action> &actions,
               ErrorClass raised) {
    for (std::uint32_t i = 0; i < actions.size(); ++i)
      if (!record(part, item, phase, i, state_.apply(actions[i], &report_.detail), raised)) return false;
    return true;
  }

  bool run_item(const ir::ProgramItem &item, std::vector<LifetimeId> &lifetimes) {
    switch (item.kind) {
    case ir::ProgramItemKind::Scope:
    case ir::ProgramItemKind::Run: return run_scope(item);
    case ir::ProgramItemKind::Actions: {
      PlanView view;
      view.enter = item.actions.actions;
      return preflight(item, view) && execute(ProgramPart::Execute, item, Phase::Enter, item.actions.actions,
                                              ErrorClass::PlanExecution);
    }
    case ir::ProgramItemKind::Direct:
      // A direct primitive fails with its own class (ErrorClass::None: keep it).
      return execute(ProgramPart::Direct, item, Phase::Enter, item.actions.actions, ErrorClass::None);
    case ir::ProgramItemKind::Acquire:
    case ir::ProgramItemKind::Hold: {
      LifetimeId id = 0;
      ValueId failed_value = 0;
      const bool acquire = item.kind == ir::ProgramItemKind::Acquire;
      Outcome outcome = state_.protect(acquire ? LifetimeKind::Lease : LifetimeKind::Hold, item.values,
                                       item.location, &id, &failed_value);
      if (!record(acquire ? ProgramPart::Acquire : ProgramPart::Hold, item, Phase::Enter, 0, outcome,
                  outcome.error, failed_value))
        return false;
      lifetimes.push_back(id);
      return true;
    }
    case ir::ProgramItemKind::Reserve: {
      LifetimeId id = 0;
      Outcome outcome = state_.reserve(item.location, item.reservation.nbytes, item.reservation.label, &id,
                                       &report_.detail);
      if (!record(ProgramPart::BodyReserve, item, Phase::Reserve, 0, outcome, outcome.error)) return false;
      lifetimes.push_back(id);
      return true;
    }
    }
    return true;
  }

  bool run_scope(const ir::ProgramItem &item) {
    const ir::Plan &plan = module_.plans[item.plan];
    if (!preflight(item, plan.view())) return false;
    if (!execute(ProgramPart::Reclaim, item, Phase::Reclaim, plan.reclaim.actions, ErrorClass::PlanExecution))
      return false;
    std::vector<LifetimeId> reservations;
    for (std::uint32_t i = 0; i < plan.reservations.size(); ++i) {
      const Reservation &r = plan.reservations[i];
      LifetimeId id = 0;
      if (!record(ProgramPart::Reserve, item, Phase::Reserve, i,
                  state_.reserve(r.location, r.nbytes, r.label, &id, &report_.detail),
                  ErrorClass::PlanExecution))
        return false;
      reservations.push_back(id);
    }
    if (!execute(ProgramPart::Enter, item, Phase::Enter, plan.enter.actions, ErrorClass::PlanExecution))
      return false;
    if (item.kind == ir::ProgramItemKind::Scope && !run_body(item.body)) return false;
    // Exit actions run without a new preflight (§12.3): the body may have
    // changed the state the entry preflight saw.
    const bool exited =
        execute(ProgramPart::Exit, item, Phase::Exit, plan.exit.actions, ErrorClass::PlanExecution);
    for (auto it = reservations.rbegin(); it != reservations.rend(); ++it)
      state_.release(*it);
    return exited;
  }

  const ir::Module &module_;
  State &state_;
  ProgramReport &report_;
};

} // namespace

ProgramReport run_program(const ir::Module &module, const ir::Program &program, State &state) {
  ProgramReport report;
  report.program = &program;
  state.reset_peaks();
  const State before = state;
  ProgramRunner(module, state, report).run_body(program.items);
  for (Location location : state.registry()) {
    const LocationAccount &now = state.account(location);
    const LocationAccount &then = before.account(location);
    report.locations.push_back(LocationPrediction{location, now.budget_bytes, then.used_bytes,
                                                  then.reserved_bytes, now.peak_charged_bytes,
                                                  now.peak_used_bytes});
  }
  return report;
}

Analysis analyze_module(const ir::Module &module, const std::vector<BudgetOverride> &overrides) {
  Analysis analysis;
  State state = initial_state(module, overrides);
  analysis.setup = run_setup(module, state);
  Simulator simulator(state);
  analysis.plans.reserve(module.plans.size());
  for (const ir::Plan &plan : module.plans)
    analysis.plans.push_back(PlanExplanation{&plan, simulator.explain(plan.view())});
  for (const ir::Program &program : module.programs) {
    State copy = state;
    analysis.programs.push_back(run_program(module, program, copy));
  }
  return analysis;
}

} // namespace fhr

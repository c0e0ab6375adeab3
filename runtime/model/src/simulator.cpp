#include "fhr/model/simulator.hpp"

namespace fhr {

std::string_view phase_name(Phase phase) {
  switch (phase) {
  case Phase::Reclaim: return "reclaim";
  case Phase::Reserve: return "reserve";
  case Phase::Enter: return "enter";
  case Phase::Exit: return "exit";
  }
  return "?";
}

Explanation Simulator::explain(const PlanView &plan) {
  overlay_.reset();
  Explanation out;
  out.steps.reserve(plan.reclaim.size() + plan.reservations.size() + plan.enter.size() + plan.exit.size());
  // Each phase stops at its first failure, and no later phase runs (§10.2).
  auto run_actions = [&](Phase phase, std::span<const Action> actions) {
    for (std::uint32_t i = 0; i < actions.size(); ++i) {
      StepTransfer transfer = StepTransfer::None;
      const Outcome outcome = overlay_.apply(actions[i], &out.failure_detail, transfer);
      out.steps.push_back(SimulatedStep{phase, i, outcome, transfer});
      if (outcome.failed()) return false;
    }
    return true;
  };
  auto run_reservations = [&] {
    for (std::uint32_t i = 0; i < plan.reservations.size(); ++i) {
      const Reservation &reservation = plan.reservations[i];
      const Outcome outcome = overlay_.reserve(reservation.location, reservation.nbytes, &out.failure_detail);
      out.steps.push_back(SimulatedStep{Phase::Reserve, i, outcome});
      if (outcome.failed()) return false;
    }
    return true;
  };
  out.feasible = run_actions(Phase::Reclaim, plan.reclaim) && run_reservations() &&
                 run_actions(Phase::Enter, plan.enter) && run_actions(Phase::Exit, plan.exit);

  auto predict = [&](Location location) {
    const LocationAccount &live = state_.account(location);
    const LocationAccount simulated = overlay_.account(location);
    out.locations.push_back(LocationPrediction{location, live.budget_bytes, live.used_bytes,
                                               live.reserved_bytes, simulated.peak_charged_bytes,
                                               simulated.peak_used_bytes});
  };
  for (Location location : state_.registry())
    predict(location);
  for (Location location : overlay_.first_referenced())
    predict(location);
  return out;
}

} // namespace fhr

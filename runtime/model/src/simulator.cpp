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
  // Room for every step, written in place and cut to the steps taken.
  out.steps.resize(plan.reclaim.size() + plan.reservations.size() + plan.enter.size() + plan.exit.size());
  std::size_t taken = 0;
  // Each phase stops at its first failure, and no later phase runs (§10.2).
  auto run_actions = [&](Phase phase, std::span<const Action> actions) {
    const std::size_t discards = out.discarded.size();
    const std::size_t applied =
        overlay_.apply_each(phase, actions, &out.failure_detail, out.steps.data() + taken, &out.discarded);
    for (std::size_t d = discards; d < out.discarded.size(); ++d)
      out.discarded[d].step += static_cast<std::uint32_t>(taken); // from the phase's position
    taken += applied;
    return applied == 0 || !out.steps[taken - 1].outcome.failed();
  };
  auto run_reservations = [&] {
    for (std::uint32_t i = 0; i < plan.reservations.size(); ++i) {
      const Reservation &reservation = plan.reservations[i];
      const Outcome outcome = overlay_.reserve(reservation.location, reservation.nbytes, &out.failure_detail);
      out.steps[taken++] = SimulatedStep{Phase::Reserve, i, outcome};
      if (outcome.failed()) return false;
    }
    return true;
  };
  out.feasible = run_actions(Phase::Reclaim, plan.reclaim) && run_reservations() &&
                 run_actions(Phase::Enter, plan.enter) && run_actions(Phase::Exit, plan.exit);
  out.steps.resize(taken);

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

#pragma once
/// \file
/// The budget/protection simulator behind `explain` (docs/semantics.md §10.2):
/// dry-runs a whole plan against a State without changing it and predicts,
/// step by step, what is feasible, what is a no-op and the peak charge per
/// location. `fhr-plan explain`, the runtime's `explain`, `execute_actions`
/// preflight and scope entry all call this one implementation.

#include "fhr/model/overlay.hpp"
#include "fhr/model/plan.hpp"
#include "fhr/model/simulated_step.hpp"
#include "fhr/model/state.hpp"
#include "fhr/model/step_transfer.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fhr {

/// Per-location prediction; locations the plan touches that the registry
/// does not know yet appear after the registered ones.
struct LocationPrediction {
  Location location;
  std::optional<std::uint64_t> budget_bytes;
  std::uint64_t used_before = 0;
  std::uint64_t reserved_before = 0;
  /// Max of used + reserved (+ incoming) seen, starting from the current
  /// charge; exceeds the budget for an infeasible plan.
  std::uint64_t peak_charged = 0;
  /// Max of used alone.
  std::uint64_t peak_used = 0;
  /// The logical bytes of the replicas there before (State::resident_logical_bytes):
  /// what the backend's pool at the location holds when the plan starts.
  /// Filled where explanations go to the time predictor (fhr-plan's
  /// analysis, ChargeWindow), not by explain() itself: the runtime's
  /// preflight and scope entry explain too and have no use for it, and the
  /// sum walks every value.
  std::uint64_t resident_logical_before = 0;

  /// What the location could still take at the peak: its limit (the
  /// budget, never more than kMaxChargedBytes: budget_limit) less the peak,
  /// negative where the peak went over it; none without a budget.
  std::optional<std::int64_t> headroom_at_peak() const {
    if (!budget_bytes) return std::nullopt;
    const std::uint64_t limit = budget_limit(budget_bytes);
    if (peak_charged <= limit) return static_cast<std::int64_t>(limit - peak_charged);
    const std::uint64_t over = peak_charged - limit;
    return over >= kMaxChargedBytes ? -static_cast<std::int64_t>(kMaxChargedBytes)
                                    : -static_cast<std::int64_t>(over);
  }
};

struct Explanation {
  bool feasible = true;
  /// Up to and including the first failing step.
  std::vector<SimulatedStep> steps;
  std::vector<LocationPrediction> locations;
  /// Figures of the failing step, when it has any.
  FailureDetail failure_detail;
  /// Where each discard among `steps` removed replicas.
  std::vector<DiscardedReplicas> discarded;

  const SimulatedStep *first_failure() const { return feasible || steps.empty() ? nullptr : &steps.back(); }
};

/// Phase sequencing and the prediction; the rules themselves run on a
/// StateOverlay (overlay.hpp lists what explain sees differently).
class Simulator {
public:
  /// `completed_pending`: pending CUDA leases whose events have all
  /// completed but which were not reaped yet; their tokens protect nothing
  /// in the simulation (§7.4: explain does not reap, but sees through them).
  explicit Simulator(const State &state, std::span<const LifetimeId> completed_pending = {})
      : state_(state), overlay_(state, completed_pending) {}

  /// Simulates reclaim, then the reservations, then enter and exit.
  Explanation explain(const PlanView &plan);

private:
  const State &state_;
  StateOverlay overlay_;
};

} // namespace fhr

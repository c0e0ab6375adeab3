#pragma once
/// \file
/// The budget/protection simulator behind `explain` (docs/semantics.md §10.2):
/// dry-runs a whole plan against a State without changing it and predicts,
/// step by step, what is feasible, what is a no-op and the peak charge per
/// location. `fhr-plan explain`, the runtime's `explain`, `execute_actions`
/// preflight and scope entry all call this one implementation.

#include "fhr/model/plan.hpp"
#include "fhr/model/state.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fhr {

/// One simulated reservation or action. `index` is its position within its
/// phase's list.
struct SimulatedStep {
  Phase phase = Phase::Enter;
  std::uint32_t index = 0;
  Outcome outcome;
};

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
};

struct Explanation {
  bool feasible = true;
  /// Up to and including the first failing step.
  std::vector<SimulatedStep> steps;
  std::vector<LocationPrediction> locations;
  /// Figures of the failing step, when it has any.
  FailureDetail failure_detail;

  const SimulatedStep *first_failure() const { return feasible || steps.empty() ? nullptr : &steps.back(); }
};

class Simulator {
public:
  /// `completed_pending`: pending CUDA leases whose events have all
  /// completed but which were not reaped yet; their tokens protect nothing
  /// in the simulation (§7.4: explain does not reap, but sees through them).
  explicit Simulator(const State &state, std::span<const LifetimeId> completed_pending = {})
      : state_(state), completed_pending_(completed_pending.begin(), completed_pending.end()) {}

  /// Simulates reclaim, then the reservations, then enter and exit.
  Explanation explain(const PlanView &plan);

private:
  struct SimulatedValue {
    LocationSet resident;
    LocationSet protected_at;
    bool discarded = false;
  };
  struct SimulatedAccount {
    std::uint64_t used = 0;
    std::uint64_t reserved = 0;
    std::uint64_t peak_charged = 0;
    std::uint64_t peak_used = 0;
  };

  void reset();
  SimulatedValue &value(ValueId id);
  Outcome prepare(Location location);
  Outcome add(Location location, std::uint64_t nbytes, bool temporary, Explanation &out);
  Outcome simulate(const Action &action, Explanation &out);
  Outcome simulate_ensure(const Action &action, SimulatedValue &value, const ValueRecord &record,
                          Explanation &out);
  Outcome simulate_move(const Action &action, SimulatedValue &value, const ValueRecord &record,
                        Explanation &out);
  Outcome simulate_drop(const Action &action, SimulatedValue &value, const ValueRecord &record);
  Outcome simulate_discard(SimulatedValue &value, const ValueRecord &record, Explanation &out);
  void remove(SimulatedValue &value, Location location, std::uint64_t nbytes);
  LocationSet effective_protection(ValueId id) const;

  const State &state_;
  std::vector<LifetimeId> completed_pending_;
  std::vector<std::uint32_t> value_slot_;
  std::vector<ValueId> touched_values_;
  std::vector<SimulatedValue> simulated_values_;
  std::array<SimulatedAccount, Location::kCount> accounts_{};
  LocationSet referenced_;
  std::vector<Location> first_referenced_;
};

} // namespace fhr

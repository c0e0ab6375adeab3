#pragma once
/// \file
/// The whole planner, as `fhr-plan solve` and the benchmark run it: model,
/// heuristic (and, on request, the exact solver), bound, realisation,
/// prefetch, verification on the model State and timing with a link model.

#include "fhr/model/link_model.hpp"
#include "fhr/planner/gap_model.hpp"
#include "fhr/planner/optimizers.hpp"
#include "fhr/planner/schedule.hpp"
#include "fhr/planner/workload.hpp"

#include <optional>
#include <string>

namespace fhr::planner {

struct SolveOptions {
  /// Also run the exact solver; its plan is used when it moves fewer bytes.
  bool exact = false;
  ExactOptions exact_options;
  /// Issue loads during earlier steps' compute (no effect without compute times).
  bool prefetch = true;
  HeuristicOptions heuristic;
  /// Compute the bound, verify the schedule and time it (off: only choose
  /// the schedule, for timing the planner itself).
  bool verify = true;
  const LinkModel *links = nullptr; ///< LinkModel::h200() when null
};

struct SolveResult {
  std::string policy; ///< "planner" or "lru"
  /// The workload cannot fit: the first step that does not, where, by how much.
  std::optional<Infeasibility> infeasible;
  /// Set when a schedule was made but did not verify (a planner bug) or the
  /// reference policy gave up (its search failed).
  std::string failure;
  Schedule schedule;
  Verification verification;
  Timeline timeline;
  std::uint64_t bytes_moved = 0;
  /// Swaps that stop on a spill tier (pinned memory, another device) in
  /// the schedule kept; 0 where sending them through pageable memory
  /// timed faster (docs/planner.md, "Realising a choice").
  std::size_t swap_stops_on_tiers = 0;
  std::optional<Bound> bound;
  std::optional<ExactResult> exact;
  HeuristicStats heuristic;
  /// Seconds spent choosing the schedule (model, heuristic, realisation,
  /// prefetch), and apart from it the exact solver, the bound, the checks
  /// and the timing (time_schedule).
  double solve_seconds = 0, bound_seconds = 0, check_seconds = 0, timing_seconds = 0;
  std::size_t gap_count = 0;
  bool ok() const { return !infeasible && failure.empty(); }
};

SolveResult solve_planner(const Workload &workload, const SolveOptions &options = {});

/// The model's bound and infeasibility only (for reports of other policies).
struct BoundOnly {
  std::optional<Infeasibility> infeasible;
  Bound bound;
};
BoundOnly bound_workload(const Workload &workload);

} // namespace fhr::planner

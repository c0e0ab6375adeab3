#pragma once
/// \file
/// What chooses the gaps to keep (docs/planner.md, "Algorithms"):
///
///  - solve_heuristic: Belady's furthest-next-use rule generalised to sizes
///    (gaps by earliest end, each kept if it fits: the value whose next use
///    is furthest is the one left out), a second greedy by saving density,
///    then local improvement (fill, and exchanges of one kept gap for a
///    better rejected one) on the better of the two;
///  - lower_bound: the LP relaxation of the model, solved exactly by a
///    fractional greedy where every gap saves its own size, by Clp
///    otherwise (a weaker separable bound without CBC);
///  - solve_exact: the ILP through COIN-OR CBC, warm-started with the
///    heuristic's choice, under a time limit.

#include "fhr/planner/gap_model.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace fhr::planner {

struct HeuristicOptions {
  /// Exchange attempts of the local improvement, as a multiple of the
  /// number of gaps (it stops earlier when a pass improves nothing).
  double improvement_effort = 4.0;
};

struct HeuristicStats {
  std::uint64_t belady_saving = 0, density_saving = 0, improved_saving = 0;
  std::uint64_t exchanges = 0;
};

Selection solve_heuristic(const GapModel &model, const HeuristicOptions &options = {},
                          HeuristicStats *stats = nullptr);

struct Bound {
  /// A lower bound on bytes moved by any schedule (see docs/planner.md for
  /// which schedules: every schedule of the workload, or, when `model_only`,
  /// every schedule the model can express).
  std::uint64_t bytes = 0;
  /// "lp-greedy", "lp-clp", "separable", or "ilp" (an exact solve's bound).
  std::string method;
  bool model_only = false;
};

Bound lower_bound(const GapModel &model);

/// True when every schedule of the workload is one the model can express
/// with no more bytes, so that the model's optimum (and an exact solver's
/// bound on it) bounds every schedule: no room is kept for loads, and every
/// decision with two options has one at a location whose capacity the
/// gaps there never reach (a schedule that splits the stretch between the
/// two saves no more than taking that option).
bool model_is_exact(const GapModel &model);

/// Whether this build has COIN-OR CBC.
bool exact_solver_available();

struct ExactOptions {
  double time_limit_seconds = 60;
  /// Stop when within this fraction of the best bound.
  double relative_gap = 1e-4;
  /// A starting solution (e.g. the heuristic's).
  const Selection *start = nullptr;
};

struct ExactResult {
  enum class Status { Optimal, TimeLimit, Unavailable, Failed } status = Status::Unavailable;
  /// The best selection found (when there is one).
  std::optional<Selection> selection;
  /// The solver's lower bound on bytes moved (within the model).
  std::uint64_t bound_bytes = 0;
  double seconds = 0;
  std::string detail;
};

ExactResult solve_exact(const GapModel &model, const ExactOptions &options = {});

} // namespace fhr::planner

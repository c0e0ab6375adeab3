// The exact solver: the model's ILP through COIN-OR CBC (docs/planner.md,
// "Exact solver"). Built only where CMake finds CBC; elsewhere it reports
// itself unavailable.
#include "fhr/planner/optimizers.hpp"

#include "ilp_matrix.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>

#ifdef FHR_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

namespace fhr::planner {

bool exact_solver_available() {
#ifdef FHR_HAVE_CBC
  return true;
#else
  return false;
#endif
}

ExactResult solve_exact(const GapModel &model, const ExactOptions &options) {
  ExactResult result;
#ifndef FHR_HAVE_CBC
  (void)model;
  (void)options;
  result.status = ExactResult::Status::Unavailable;
  result.detail = "this build has no COIN-OR CBC (install coinor-libcbc-dev and reconfigure)";
  return result;
#else
  const auto started = std::chrono::steady_clock::now();
  if (model.infeasible) {
    result.status = ExactResult::Status::Failed;
    result.detail = "the workload is infeasible";
    return result;
  }
  const IlpMatrix m = build_ilp_matrix(model, std::vector<bool>(model.gaps.size(), true), true);
  // CBC's solver entry keeps its state in statics: two solves at once (two
  // Python threads in fhr.solve, which runs without the GIL) gave each
  // other's bounds and statuses, found by a review. One at a time.
  static std::mutex cbc;
  const std::lock_guard<std::mutex> one_at_a_time(cbc);
  Cbc_Model *solver = Cbc_newModel();
  Cbc_loadProblem(solver, m.columns, m.rows, m.start.data(), m.index.data(), m.value.data(),
                  m.column_lower.data(), m.column_upper.data(), m.objective.data(), m.row_lower.data(),
                  m.row_upper.data());
  for (int c = 0; c < m.columns; ++c)
    Cbc_setInteger(solver, c);
  Cbc_setObjSense(solver, -1);
  Cbc_setLogLevel(solver, 0);
  Cbc_setMaximumSeconds(solver, options.time_limit_seconds);
  Cbc_setAllowableFractionGap(solver, options.relative_gap);
  Cbc_setParameter(solver, "threads", "1");
  if (options.start) {
    std::vector<int> columns;
    std::vector<double> values;
    for (int c = 0; c < m.columns; ++c)
      if (options.start->kept[m.gaps[static_cast<std::size_t>(c)]]) {
        columns.push_back(c);
        values.push_back(1.0);
      }
    Cbc_setMIPStartI(solver, static_cast<int>(columns.size()), columns.data(), values.data());
  }
  Cbc_solve(solver);
  const double *x = Cbc_getColSolution(solver);
  if (x != nullptr && m.columns > 0) {
    Selection s{std::vector<bool>(model.gaps.size(), false), 0};
    for (int c = 0; c < m.columns; ++c)
      if (x[c] > 0.5) {
        const std::uint32_t g = m.gaps[static_cast<std::size_t>(c)];
        s.kept[g] = true;
        s.saving += model.gaps[g].saving;
      }
    if (selection_fits(model, s)) result.selection = std::move(s);
  } else if (m.columns == 0) {
    result.selection = Selection{{}, 0};
  }
  const bool optimal = Cbc_isProvenOptimal(solver) != 0 || m.columns == 0;
  const double best_possible = m.columns == 0 ? 0.0 : Cbc_getBestPossibleObjValue(solver) * m.scale;
  Cbc_deleteModel(solver);
  if (!result.selection) {
    result.status = ExactResult::Status::Failed;
    result.detail = "CBC returned no solution that fits";
  } else {
    result.status = optimal ? ExactResult::Status::Optimal : ExactResult::Status::TimeLimit;
    // The solver's proven bound (a relative gap is allowed), never above
    // the solution it returns.
    const long double bound = static_cast<long double>(model.baseline_bytes) - best_possible - 1.0L;
    result.bound_bytes = bound <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(bound));
    result.bound_bytes = std::min(result.bound_bytes, bytes_moved(model, *result.selection));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
#endif
}

} // namespace fhr::planner

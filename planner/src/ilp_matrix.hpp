#pragma once
// The model as a column-major matrix for COIN-OR's solvers: one column per
// gap (saving in the objective), one capacity row per stretch of steps
// where the set of gaps covering it is the same (the tightest capacity of
// the stretch), dropped when another row dominates it or when it can never
// bind, and one row per decision with two options. Bytes are scaled by a
// power of two, so the scaled numbers are exact in doubles.
#include "fhr/planner/gap_model.hpp"

#include <cstdint>
#include <vector>

namespace fhr::planner {

struct IlpMatrix {
  int columns = 0, rows = 0;
  std::vector<int> start; ///< CoinBigIndex is int in Debian's COIN-OR builds
  std::vector<int> index;
  std::vector<double> value;
  std::vector<double> column_lower, column_upper, objective, row_lower, row_upper;
  /// Column c is gap gaps[c].
  std::vector<std::uint32_t> gaps;
  /// Bytes per unit of the scaled numbers.
  double scale = 1;
};

/// The matrix over the gaps with include[g]; `group_rows`: add the
/// at-most-one rows of decisions with two included options.
IlpMatrix build_ilp_matrix(const GapModel &model, const std::vector<bool> &include, bool group_rows);

} // namespace fhr::planner

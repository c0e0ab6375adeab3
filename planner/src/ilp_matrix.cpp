#include "ilp_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace fhr::planner {

IlpMatrix build_ilp_matrix(const GapModel &model, const std::vector<bool> &include, bool group_rows) {
  IlpMatrix m;
  std::vector<std::int32_t> column_of(model.gaps.size(), -1);
  for (std::uint32_t g = 0; g < model.gaps.size(); ++g)
    if (include[g]) {
      column_of[g] = static_cast<std::int32_t>(m.gaps.size());
      m.gaps.push_back(g);
    }
  m.columns = static_cast<int>(m.gaps.size());
  // A power-of-two unit near the typical size keeps coefficients small and exact.
  std::uint64_t largest = 1;
  for (std::uint32_t g : m.gaps)
    largest = std::max(largest, model.gaps[g].bytes);
  m.scale = std::ldexp(1.0, std::max(0, static_cast<int>(std::log2(static_cast<double>(largest))) - 10));

  std::vector<std::vector<int>> rows_of_column(m.gaps.size());
  std::vector<bool> counts_options; // per row: a decision's row (coefficients 1) or a capacity row (bytes)
  const auto add_row = [&](const std::vector<int> &columns, double upper, bool options) {
    for (int c : columns)
      rows_of_column[static_cast<std::size_t>(c)].push_back(m.rows);
    m.row_lower.push_back(-1e30);
    m.row_upper.push_back(upper);
    counts_options.push_back(options);
    ++m.rows;
  };

  for (std::uint32_t l = 0; l < model.locations.size(); ++l) {
    // Events at gap boundaries; between two events the covering set is fixed.
    std::vector<std::uint32_t> points{0, model.step_count};
    std::vector<std::uint32_t> here;
    for (std::uint32_t g : m.gaps)
      if (model.gaps[g].location == l) {
        here.push_back(g);
        points.push_back(model.gaps[g].begin);
        points.push_back(model.gaps[g].end);
      }
    if (here.empty()) continue;
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    // Segment k is [points[k], points[k+1]).
    const std::size_t segments = points.size() - 1;
    std::vector<std::vector<int>> covering(segments);
    std::vector<std::uint64_t> covered_bytes(segments, 0);
    for (std::uint32_t g : here) {
      const Gap &gap = model.gaps[g];
      auto k = static_cast<std::size_t>(std::lower_bound(points.begin(), points.end(), gap.begin) -
                                        points.begin());
      for (; k < segments && points[k] < gap.end; ++k) {
        covering[k].push_back(column_of[g]);
        covered_bytes[k] += gap.bytes;
      }
    }
    std::vector<std::int64_t> tightest(segments);
    for (std::size_t k = 0; k < segments; ++k)
      tightest[k] =
          *std::min_element(model.capacity[l].begin() + points[k], model.capacity[l].begin() + points[k + 1]);
    const auto subset = [&](std::size_t a, std::size_t b) {
      return std::includes(covering[b].begin(), covering[b].end(), covering[a].begin(), covering[a].end());
    };
    for (std::vector<int> &c : covering)
      std::sort(c.begin(), c.end());
    for (std::size_t k = 0; k < segments; ++k) {
      if (covering[k].empty()) continue;
      if (static_cast<std::int64_t>(covered_bytes[k]) <= tightest[k]) continue; // can never bind
      // Dominated by a neighbour that covers more with less room.
      if (k + 1 < segments && tightest[k + 1] <= tightest[k] && subset(k, k + 1)) continue;
      if (k > 0 && tightest[k - 1] < tightest[k] && subset(k, k - 1)) continue;
      add_row(covering[k], static_cast<double>(tightest[k]) / m.scale, false);
    }
  }
  if (group_rows) {
    std::map<std::uint32_t, std::vector<int>> groups;
    for (int c = 0; c < m.columns; ++c)
      groups[model.gaps[m.gaps[static_cast<std::size_t>(c)]].group].push_back(c);
    for (const auto &[group, columns] : groups)
      if (columns.size() > 1) add_row(columns, 1.0, true);
  }
  m.start.push_back(0);
  for (int c = 0; c < m.columns; ++c) {
    const Gap &gap = model.gaps[m.gaps[static_cast<std::size_t>(c)]];
    for (int r : rows_of_column[static_cast<std::size_t>(c)]) {
      m.index.push_back(r);
      m.value.push_back(
          counts_options[static_cast<std::size_t>(r)] ? 1.0 : static_cast<double>(gap.bytes) / m.scale);
    }
    m.start.push_back(static_cast<int>(m.index.size()));
    m.column_lower.push_back(0);
    m.column_upper.push_back(1);
    m.objective.push_back(static_cast<double>(gap.saving) / m.scale);
  }
  return m;
}

} // namespace fhr::planner

// The lower bound (docs/planner.md, "Lower bound", with the proof).
#include "fhr/planner/optimizers.hpp"

#include "ilp_matrix.hpp"
#include "range_tree.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#ifdef FHR_HAVE_CBC
#include <coin/Clp_C_Interface.h>
#endif

namespace fhr::planner {

namespace {

/// The LP optimum of the gaps in `gaps` when each saves per byte the same
/// (`per_byte`), every other gap left out: greedy by earliest end, each
/// taking as much of its size as the room on its steps allows.
long double fractional_greedy(const GapModel &model, const std::vector<std::uint32_t> &gaps,
                              std::uint64_t per_byte) {
  std::vector<std::uint32_t> order = gaps;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return model.gaps[a].end < model.gaps[b].end; });
  std::vector<RangeTree> room;
  for (const std::vector<std::int64_t> &capacity : model.capacity)
    room.emplace_back(capacity);
  long double saving = 0;
  for (std::uint32_t g : order) {
    const Gap &gap = model.gaps[g];
    const std::int64_t fits = std::min<std::int64_t>(static_cast<std::int64_t>(gap.bytes),
                                                     room[gap.location].min(gap.begin, gap.end));
    if (fits <= 0) continue;
    room[gap.location].add(gap.begin, gap.end, -fits);
    saving += static_cast<long double>(fits) * static_cast<long double>(per_byte);
  }
  return saving;
}

/// The model with every capacity lowered to the largest sum of gap sizes
/// at its location that fits in it: the gaps an integral schedule keeps at
/// a step add up to such a sum, so the LP over the lowered capacities
/// still bounds every schedule, and it is tighter (exact for gaps of one
/// size). Skipped where the sizes have no common unit small enough.
GapModel with_reachable_capacities(const GapModel &model) {
  GapModel out = model;
  for (std::uint32_t l = 0; l < model.locations.size(); ++l) {
    std::vector<std::uint64_t> sizes;
    for (const Gap &g : model.gaps)
      if (g.location == l && std::find(sizes.begin(), sizes.end(), g.bytes) == sizes.end())
        sizes.push_back(g.bytes);
    if (sizes.empty() || sizes.size() > 32) continue;
    std::uint64_t unit = 0;
    for (std::uint64_t s : sizes)
      unit = std::gcd(unit, s);
    const std::int64_t largest = *std::max_element(model.capacity[l].begin(), model.capacity[l].end());
    if (unit == 0 || largest <= 0 || static_cast<std::uint64_t>(largest) / unit > (1u << 22)) continue;
    // Sums of the sizes (each any number of times: a relaxation), in units.
    const std::size_t slots = static_cast<std::size_t>(static_cast<std::uint64_t>(largest) / unit) + 1;
    std::vector<char> reachable(slots, 0);
    reachable[0] = 1;
    for (std::uint64_t s : sizes)
      for (std::size_t k = static_cast<std::size_t>(s / unit); k < slots; ++k)
        reachable[k] = static_cast<char>(reachable[k] || reachable[k - s / unit]);
    std::vector<std::size_t> below(slots, 0); // largest reachable <= k
    for (std::size_t k = 0; k < slots; ++k)
      below[k] = reachable[k] ? k : (k == 0 ? 0 : below[k - 1]);
    for (std::int64_t &c : out.capacity[l])
      if (c > 0)
        c = static_cast<std::int64_t>(below[static_cast<std::size_t>(static_cast<std::uint64_t>(c) / unit)] *
                                      unit);
  }
  return out;
}

std::uint64_t bytes_from_saving(const GapModel &model, long double saving) {
  // Bytes are whole: the bound is the ceiling of baseline - saving, less a
  // byte for rounding in the solver's arithmetic.
  const long double bound = static_cast<long double>(model.baseline_bytes) - saving - 1.0L;
  return bound <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(bound));
}

} // namespace

bool model_is_exact(const GapModel &model) {
  for (std::uint64_t room : model.load_room)
    if (room > 0) return false;
  std::vector<std::size_t> options(model.group_count, 0);
  for (const Gap &g : model.gaps)
    ++options[g.group];
  // A location is slack when all its gaps together fit at every step.
  std::vector<bool> slack(model.locations.size(), true);
  for (std::size_t l = 0; l < model.locations.size(); ++l) {
    std::vector<std::int64_t> covered(model.step_count + 1, 0);
    for (const Gap &g : model.gaps)
      if (g.location == l) {
        covered[g.begin] += static_cast<std::int64_t>(g.bytes);
        covered[g.end] -= static_cast<std::int64_t>(g.bytes);
      }
    std::int64_t running = 0;
    for (std::uint32_t t = 0; t < model.step_count && slack[l]; ++t) {
      running += covered[t];
      slack[l] = running <= model.capacity[l][t];
    }
  }
  std::vector<bool> has_slack_option(model.group_count, false);
  for (const Gap &g : model.gaps)
    if (slack[g.location]) has_slack_option[g.group] = true;
  for (std::uint32_t group = 0; group < model.group_count; ++group)
    if (options[group] > 1 && !has_slack_option[group]) return false;
  return true;
}

Bound lower_bound(const GapModel &unrounded) {
  if (unrounded.infeasible) return Bound{0, "infeasible", false};
  const GapModel model = with_reachable_capacities(unrounded);
  for (std::uint64_t room : model.load_room)
    if (room > 0) return Bound{0, "needs a model without load room", true};
  // A decision with two options (stay, or move early) is relaxed to its
  // saving at no occupancy: no schedule saves more on it (see the proof).
  std::vector<std::size_t> options(model.group_count, 0);
  for (const Gap &g : model.gaps)
    ++options[g.group];
  long double relaxed = 0;
  std::vector<bool> seen_group(model.group_count, false);
  std::vector<std::uint32_t> single, unit, double_saving;
  bool uniform = true;
  for (std::uint32_t g = 0; g < model.gaps.size(); ++g) {
    const Gap &gap = model.gaps[g];
    if (options[gap.group] > 1) {
      if (!seen_group[gap.group]) relaxed += static_cast<long double>(gap.saving);
      seen_group[gap.group] = true;
      continue;
    }
    single.push_back(g);
    if (gap.saving == gap.bytes)
      unit.push_back(g);
    else if (gap.saving == 2 * gap.bytes)
      double_saving.push_back(g);
    uniform = uniform && gap.saving == gap.bytes;
  }
  if (uniform)
    return Bound{bytes_from_saving(model, relaxed + fractional_greedy(model, unit, 1)), "lp-greedy", false};
#ifdef FHR_HAVE_CBC
  {
    std::vector<bool> include(model.gaps.size(), false);
    for (std::uint32_t g : single)
      include[g] = true;
    const IlpMatrix m = build_ilp_matrix(model, include, false);
    Clp_Simplex *lp = Clp_newModel();
    Clp_setLogLevel(lp, 0);
    Clp_loadProblem(lp, m.columns, m.rows, m.start.data(), m.index.data(), m.value.data(),
                    m.column_lower.data(), m.column_upper.data(), m.objective.data(), m.row_lower.data(),
                    m.row_upper.data());
    Clp_setOptimizationDirection(lp, -1);
    Clp_dual(lp, 0);
    const bool optimal = Clp_isProvenOptimal(lp) != 0;
    const long double saving = static_cast<long double>(Clp_objectiveValue(lp)) * m.scale;
    Clp_deleteModel(lp);
    if (optimal) return Bound{bytes_from_saving(model, relaxed + saving), "lp-clp", false};
  }
#endif
  // Separable: each class of gaps alone with all the room, savings added.
  long double saving =
      relaxed + fractional_greedy(model, unit, 1) + fractional_greedy(model, double_saving, 2);
  for (std::uint32_t g : single) {
    const Gap &gap = model.gaps[g];
    if (gap.saving != gap.bytes && gap.saving != 2 * gap.bytes)
      saving += static_cast<long double>(gap.saving);
  }
  return Bound{bytes_from_saving(model, saving), "separable", false};
}

} // namespace fhr::planner

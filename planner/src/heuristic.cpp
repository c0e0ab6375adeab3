// The heuristic (docs/planner.md, "Heuristic"): two greedy packings of
// the gaps, then local improvement on the better one.
#include "fhr/planner/optimizers.hpp"

#include "range_tree.hpp"

#include <algorithm>
#include <numeric>

namespace fhr::planner {

namespace {

constexpr std::int32_t kNone = -1;

/// The room left for kept gaps at every location and step, and what is kept.
class Packing {
public:
  explicit Packing(const GapModel &model) : model_(model), kept_(model.gaps.size(), false) {
    room_.reserve(model.locations.size());
    for (const std::vector<std::int64_t> &capacity : model.capacity)
      room_.emplace_back(capacity);
    group_owner_.assign(model.group_count, kNone);
  }

  bool is_kept(std::size_t g) const { return kept_[g]; }
  std::uint64_t saving() const { return saving_; }
  const Gap &gap(std::size_t g) const { return model_.gaps[g]; }
  const RangeTree &room(std::uint32_t location) const { return room_[location]; }

  bool group_free(std::size_t g) const { return group_owner_[gap(g).group] == kNone; }
  bool fits(std::size_t g) const {
    const Gap &x = gap(g);
    return group_free(g) && room_[x.location].min(x.begin, x.end) >= static_cast<std::int64_t>(x.bytes);
  }
  void keep(std::size_t g) {
    const Gap &x = gap(g);
    room_[x.location].add(x.begin, x.end, -static_cast<std::int64_t>(x.bytes));
    kept_[g] = true;
    group_owner_[x.group] = static_cast<std::int32_t>(g);
    saving_ += x.saving;
  }
  void release(std::size_t g) {
    const Gap &x = gap(g);
    room_[x.location].add(x.begin, x.end, static_cast<std::int64_t>(x.bytes));
    kept_[g] = false;
    group_owner_[x.group] = kNone;
    saving_ -= x.saving;
  }
  void greedy(const std::vector<std::uint32_t> &order) {
    for (std::uint32_t g : order)
      if (!kept_[g] && fits(g)) keep(g);
  }

  Selection selection() const { return Selection{kept_, saving_}; }

private:
  const GapModel &model_;
  std::vector<RangeTree> room_;
  std::vector<bool> kept_;
  std::vector<std::int32_t> group_owner_;
  std::uint64_t saving_ = 0;
};

double density(const Gap &g) {
  return static_cast<double>(g.saving) /
         (static_cast<double>(g.bytes) * static_cast<double>(g.end - g.begin) + 1.0);
}

std::vector<std::uint32_t> all_gaps(const GapModel &model) {
  std::vector<std::uint32_t> order(model.gaps.size());
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

/// Belady generalised to sizes: by end, shorter (later-starting) first on
/// ties, then larger savings. A gap left out is the one whose next use is
/// furthest among those competing for the same room.
std::vector<std::uint32_t> belady_order(const GapModel &model) {
  std::vector<std::uint32_t> order = all_gaps(model);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Gap &x = model.gaps[a], &y = model.gaps[b];
    if (x.end != y.end) return x.end < y.end;
    if (x.begin != y.begin) return x.begin > y.begin;
    return x.saving * y.bytes > y.saving * x.bytes;
  });
  return order;
}

std::vector<std::uint32_t> density_order(const GapModel &model) {
  std::vector<std::uint32_t> order = all_gaps(model);
  std::vector<double> d(model.gaps.size());
  for (std::size_t g = 0; g < d.size(); ++g)
    d[g] = density(model.gaps[g]);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (d[a] != d[b]) return d[a] > d[b];
    return model.gaps[a].end < model.gaps[b].end;
  });
  return order;
}

/// Every gap per location, by where it begins.
std::vector<std::vector<std::uint32_t>> gaps_by_begin(const GapModel &model) {
  std::vector<std::vector<std::uint32_t>> out(model.locations.size());
  for (std::uint32_t g = 0; g < model.gaps.size(); ++g)
    out[model.gaps[g].location].push_back(g);
  for (auto &list : out)
    std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      return model.gaps[a].begin < model.gaps[b].begin;
    });
  return out;
}

/// Local improvement (ruin and recreate): for a rejected gap, release the
/// kept gaps in its way (cheapest saving per byte first, a few at most),
/// keep it, refill the freed room from the rejected gaps nearby in density
/// order, and keep the result only if the total saving grew.
class Improver {
public:
  Improver(const GapModel &model, Packing &packing, const std::vector<std::uint32_t> &fill_order,
           const std::vector<std::vector<std::uint32_t>> &by_begin, std::uint64_t budget)
      : model_(model), packing_(packing), all_at_(by_begin), budget_(budget), rank_(model.gaps.size()) {
    for (std::uint32_t i = 0; i < fill_order.size(); ++i)
      rank_[fill_order[i]] = i;
  }

  std::uint64_t run() {
    std::vector<std::uint32_t> rejected;
    for (std::uint32_t g = 0; g < model_.gaps.size(); ++g)
      if (!packing_.is_kept(g)) rejected.push_back(g);
    // Larger savings first: they are where an exchange can gain most.
    std::stable_sort(rejected.begin(), rejected.end(), [&](std::uint32_t a, std::uint32_t b) {
      return model_.gaps[a].saving > model_.gaps[b].saving;
    });
    for (int pass = 0; pass < 8 && spent_ < budget_; ++pass) {
      bool improved = false;
      for (std::uint32_t g : rejected) {
        if (spent_ >= budget_) break;
        if (packing_.is_kept(g)) continue;
        if (packing_.fits(g)) {
          keep(g);
          improved = true;
        } else if (exchange(g)) {
          improved = true;
        }
      }
      if (!improved) break;
    }
    return exchanges_;
  }

private:
  void keep(std::uint32_t g) { packing_.keep(g); }
  void release(std::uint32_t g) { packing_.release(g); }

  /// Gaps of `list` (sorted by begin) that overlap [begin, end), looking
  /// back a bounded number of starts (a heuristic, not a search).
  template <typename Keep>
  std::vector<std::uint32_t> overlapping(const std::vector<std::uint32_t> &list, std::uint32_t begin,
                                         std::uint32_t end, Keep keep_it) {
    std::vector<std::uint32_t> out;
    auto it = std::lower_bound(list.begin(), list.end(), end,
                               [&](std::uint32_t g, std::uint32_t e) { return model_.gaps[g].begin < e; });
    for (int looked = 0; it != list.begin() && looked < 128; ++looked) {
      --it;
      const Gap &h = model_.gaps[*it];
      if (h.end > begin && keep_it(*it)) out.push_back(*it);
    }
    spent_ += out.size() + 1;
    return out;
  }

  /// Which kept gap in the way goes first.
  enum class Victim { CheapestPerByte, Longest, Cheapest };

  bool exchange(std::uint32_t g) {
    if (!packing_.group_free(g)) return false; // the other option of its decision saves the same
    for (Victim rule : {Victim::CheapestPerByte, Victim::Longest, Victim::Cheapest})
      if (exchange(g, rule)) return true;
    return false;
  }

  bool exchange(std::uint32_t g, Victim rule) {
    const Gap &x = model_.gaps[g];
    const std::uint64_t before = packing_.saving();
    std::vector<std::uint32_t> removed;
    std::uint32_t span_begin = x.begin, span_end = x.end;
    const RangeTree &room = packing_.room(x.location);
    while (removed.size() < 8) {
      const std::size_t blocked = room.first_below(x.begin, x.end, static_cast<std::int64_t>(x.bytes));
      if (blocked == x.end) break; // it fits now
      std::vector<std::uint32_t> in_way = overlapping(
          all_at_[x.location], static_cast<std::uint32_t>(blocked), static_cast<std::uint32_t>(blocked) + 1,
          [&](std::uint32_t h) { return packing_.is_kept(h); });
      if (in_way.empty()) break;
      const std::uint32_t victim =
          *std::min_element(in_way.begin(), in_way.end(), [&](std::uint32_t a, std::uint32_t b) {
            const Gap &p = model_.gaps[a], &q = model_.gaps[b];
            switch (rule) {
            case Victim::CheapestPerByte: return p.saving * q.bytes < q.saving * p.bytes;
            case Victim::Longest: return p.end - p.begin > q.end - q.begin;
            case Victim::Cheapest: return p.saving < q.saving;
            }
            return false;
          });
      release(victim);
      removed.push_back(victim);
      span_begin = std::min(span_begin, model_.gaps[victim].begin);
      span_end = std::max(span_end, model_.gaps[victim].end);
    }
    std::vector<std::uint32_t> added;
    if (packing_.fits(g)) {
      keep(g);
      added.push_back(g);
      // Recreate: the rejected gaps nearby, best density first.
      std::vector<std::uint32_t> nearby = overlapping(all_at_[x.location], span_begin, span_end,
                                                      [&](std::uint32_t h) { return !packing_.is_kept(h); });
      std::sort(nearby.begin(), nearby.end(),
                [&](std::uint32_t a, std::uint32_t b) { return rank_[a] < rank_[b]; });
      for (std::uint32_t h : nearby)
        if (!packing_.is_kept(h) && packing_.fits(h)) {
          keep(h);
          added.push_back(h);
        }
    }
    if (packing_.saving() > before) {
      ++exchanges_;
      return true;
    }
    for (auto it = added.rbegin(); it != added.rend(); ++it)
      release(*it);
    for (auto it = removed.rbegin(); it != removed.rend(); ++it)
      keep(*it);
    return false;
  }

  const GapModel &model_;
  Packing &packing_;
  const std::vector<std::vector<std::uint32_t>> &all_at_; ///< every gap per location, by begin
  std::uint64_t budget_;
  std::vector<std::uint32_t> rank_; ///< position in the fill (density) order
  std::uint64_t spent_ = 0;
  std::uint64_t exchanges_ = 0;
};

} // namespace

Selection solve_heuristic(const GapModel &model, const HeuristicOptions &options, HeuristicStats *stats) {
  if (model.infeasible) return Selection{std::vector<bool>(model.gaps.size(), false), 0};
  const std::vector<std::uint32_t> by_end = belady_order(model);
  const std::vector<std::uint32_t> by_density = density_order(model);
  Packing belady(model), dense(model);
  belady.greedy(by_end);
  dense.greedy(by_density);
  HeuristicStats local;
  local.belady_saving = belady.saving();
  local.density_saving = dense.saving();
  // Both starts are improved (the better start does not always improve to
  // the better end); the effort is shared between them.
  // Effort counts gaps looked at; small workloads get a floor of it.
  const auto effort = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(options.improvement_effort * static_cast<double>(model.gaps.size())),
      200'000);
  // (No fill pass first: a greedy pass leaves no rejected gap that fits,
  // room only shrinks as it goes.)
  const std::vector<std::vector<std::uint32_t>> by_begin = gaps_by_begin(model);
  for (Packing *start : {&belady, &dense}) {
    Improver improver(model, *start, by_density, by_begin, effort);
    local.exchanges += improver.run();
  }
  Packing &best = belady.saving() >= dense.saving() ? belady : dense;
  local.improved_saving = best.saving();
  if (stats) *stats = local;
  return best.selection();
}

} // namespace fhr::planner

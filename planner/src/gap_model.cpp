#include "fhr/planner/gap_model.hpp"

#include "fhr/model/state.hpp"

#include <algorithm>
#include <array>

namespace fhr::planner {

std::string Infeasibility::text(const Workload &workload) const {
  std::string what = std::to_string(needed_bytes) + " bytes there (its values and workspace";
  if (load_room_bytes > 0)
    what += ", and " + std::to_string(load_room_bytes) + " to load a value from a source there";
  return "step " + std::to_string(step) + " '" + workload.steps[step].name + "' cannot fit at " + at.name() +
         ": it needs " + what + "), the budget is " + std::to_string(budget_bytes) + ": short by " +
         std::to_string(short_bytes()) + " bytes";
}

std::optional<std::uint32_t> GapModel::index_of(Location at) const {
  for (std::uint32_t i = 0; i < locations.size(); ++i)
    if (locations[i] == at) return i;
  return std::nullopt;
}

bool is_movable(const Workload &workload, const Value &value) {
  if (!value.adopted) return false;
  return value.mode == ReplicaMode::Exclusive || workload.budget(value.home).has_value();
}

namespace {

class Builder {
public:
  Builder(const Workload &w, GapModel &m, bool load_room) : w_(w), m_(m), load_room_(load_room) {}

  void run() {
    m_.step_count = static_cast<std::uint32_t>(w_.steps.size());
    for (const auto &[at, bytes] : w_.budgets)
      m_.locations.push_back(at);
    // A budget above what a location can account (kMaxChargedBytes) is
    // that limit: the model's accounts admit no more, and the room below
    // stays within 64-bit signed figures.
    std::vector<std::uint64_t> budget;
    for (const auto &[at, bytes] : w_.budgets)
      budget.push_back(budget_limit(bytes));
    m_.capacity.assign(m_.locations.size(), std::vector<std::int64_t>(m_.step_count, 0));
    m_.load_room.assign(m_.locations.size(), 0);
    if (load_room_)
      for (const Value &v : w_.values)
        if (const auto l = m_.index_of(v.home); l && !v.adopted)
          m_.load_room[*l] = std::max(m_.load_room[*l], v.storage_bytes);
    // One pass in step order: the first step that cannot fit is the answer,
    // and nothing after it is looked at.
    std::array<std::int16_t, Location::kCount> slot;
    slot.fill(-1);
    for (std::uint32_t l = 0; l < m_.locations.size(); ++l)
      slot[m_.locations[l].index()] = static_cast<std::int16_t>(l);
    std::vector<std::uint64_t> needed(m_.locations.size());
    for (std::uint32_t t = 0; t < m_.step_count; ++t) {
      std::fill(needed.begin(), needed.end(), 0);
      const Step &step = w_.steps[t];
      for (const Need &n : step.needs)
        if (const std::int16_t l = slot[n.at.index()]; l >= 0)
          needed[static_cast<std::size_t>(l)] += w_.values[n.value].storage_bytes;
      for (const Workspace &ws : step.workspace)
        if (const std::int16_t l = slot[ws.at.index()]; l >= 0)
          needed[static_cast<std::size_t>(l)] += ws.bytes;
      for (std::uint32_t l = 0; l < m_.locations.size(); ++l) {
        // Each at most kMaxChargedBytes (check_workload); beyond the budget
        // by more than it, a step is as infeasible as by that much, and
        // the difference stays a 64-bit signed figure.
        const std::uint64_t with_room = std::min(needed[l] + m_.load_room[l], kMaxChargedBytes + 1);
        m_.capacity[l][t] = static_cast<std::int64_t>(budget[l]) - static_cast<std::int64_t>(with_room);
        if (with_room > budget[l] && !m_.infeasible)
          m_.infeasible = Infeasibility{t, m_.locations[l], needed[l], m_.load_room[l], budget[l]};
      }
      if (m_.infeasible) return; // nothing else is built
    }
    collect_uses();
    for (UseChain &chain : m_.droppable)
      droppable(chain);
    for (UseChain &chain : m_.movable)
      movable(chain);
  }

private:
  void collect_uses() {
    // One pass over the steps; chains are built per value (and location).
    std::vector<std::vector<std::pair<std::uint32_t, Location>>> uses(w_.values.size());
    for (std::uint32_t t = 0; t < m_.step_count; ++t)
      for (const Need &n : w_.steps[t].needs)
        uses[n.value].emplace_back(t, n.at);
    for (ValueId v = 0; v < w_.values.size(); ++v) {
      const Value &value = w_.values[v];
      const auto chain_of = [&](std::optional<Location> only) {
        UseChain chain{v, {}, {}, {}};
        for (const auto &[t, at] : uses[v])
          if (!only || at == *only) {
            chain.steps.push_back(t);
            chain.locations.push_back(at);
          }
        return chain;
      };
      if (is_movable(w_, value)) {
        m_.movable.push_back(chain_of(std::nullopt));
      } else if (value.mode == ReplicaMode::Exclusive) {
        // One replica at a time, rebuilt from its source: a single chain
        // over every location (a change of location is forced).
        m_.droppable.push_back(chain_of(std::nullopt));
      } else {
        // Replicable: every location keeps its own copy.
        std::vector<Location> order;
        for (const auto &[t, at] : uses[v])
          if (std::find(order.begin(), order.end(), at) == order.end()) order.push_back(at);
        for (Location at : order)
          m_.droppable.push_back(chain_of(at));
      }
    }
  }

  std::uint32_t new_group() { return m_.group_count++; }
  bool budgeted(Location at) const { return m_.index_of(at).has_value(); }

  void add(Stretch &stretch, ValueId v, Location at, std::uint64_t saving, std::uint32_t group,
           GapKind kind) {
    if (stretch.gap_count == 0) stretch.first_gap = static_cast<std::uint32_t>(m_.gaps.size());
    ++stretch.gap_count;
    m_.gaps.push_back(Gap{v, *m_.index_of(at), stretch.begin, stretch.end, w_.values[v].storage_bytes, saving,
                          group, kind});
  }

  void droppable(UseChain &chain) {
    const Value &value = w_.values[chain.value];
    const std::uint64_t s = value.storage_bytes;
    for (std::size_t i = 0; i < chain.steps.size(); ++i) {
      const Location at = chain.locations[i];
      Stretch stretch;
      stretch.begin = i == 0 ? 0 : chain.steps[i - 1] + 1;
      stretch.end = chain.steps[i];
      stretch.where = i == 0 ? at : chain.locations[i - 1];
      stretch.next = at;
      // The home replica of a replicable adopted value is never moved.
      const bool home = value.adopted && at == value.home;
      if (i == 0 || chain.locations[i - 1] != at) {
        // The first use here: a load (absent until then), except at home.
        if (home)
          stretch.free_position = at;
        else
          m_.forced_bytes += s;
      } else {
        stretch.free_position = at; // resident across, unless a gap decides otherwise
        if (!home && stretch.begin < stretch.end && budgeted(at)) {
          // Keep across the gap, or drop and reload.
          add(stretch, chain.value, at, s, new_group(), GapKind::Reuse);
          m_.baseline_bytes += s;
        }
      }
      chain.stretches.push_back(stretch);
    }
  }

  void movable(UseChain &chain) {
    const Value &value = w_.values[chain.value];
    const std::uint64_t s = value.storage_bytes;
    Location where = value.home;
    std::uint32_t since = 0;
    for (std::size_t i = 0; i <= chain.steps.size(); ++i) {
      const bool last = i == chain.steps.size();
      Stretch stretch;
      stretch.begin = since;
      stretch.end = last ? m_.step_count : chain.steps[i];
      stretch.where = where;
      if (!last) stretch.next = chain.locations[i];
      stretch.free_position = where;
      const bool empty = stretch.begin >= stretch.end;
      if (last) {
        // After the last use (or never used): stay, or spill once.
        if (!empty && budgeted(where)) {
          add(stretch, chain.value, where, s, new_group(), GapKind::Trailing);
          m_.baseline_bytes += s;
        }
      } else if (*stretch.next == where) {
        // Stay, or spill and come back: two transfers.
        if (!empty && budgeted(where)) {
          add(stretch, chain.value, where, 2 * s, new_group(), GapKind::Stay);
          m_.baseline_bytes += 2 * s;
        }
      } else {
        m_.forced_bytes += s; // it changes location: one move at least
        if (!budgeted(where)) {
          stretch.free_position = where; // waits where it is, for free
        } else if (!budgeted(*stretch.next)) {
          stretch.free_position = *stretch.next; // goes ahead at once, for free
        } else if (!empty) {
          // Spill and move in later (one more transfer), or stay, or go early.
          const std::uint32_t group = new_group();
          add(stretch, chain.value, where, s, group, GapKind::StayBefore);
          add(stretch, chain.value, *stretch.next, s, group, GapKind::MoveEarly);
          m_.baseline_bytes += s;
        }
      }
      chain.stretches.push_back(stretch);
      if (!last) {
        where = chain.locations[i];
        since = chain.steps[i] + 1;
      }
    }
  }

  const Workload &w_;
  GapModel &m_;
  bool load_room_;
};

} // namespace

GapModel build_gap_model(const Workload &workload, bool load_room) {
  GapModel model;
  Builder(workload, model, load_room).run();
  model.baseline_bytes += model.forced_bytes;
  return model;
}

bool selection_fits(const GapModel &model, const Selection &selection) {
  if (selection.kept.size() != model.gaps.size()) return false;
  std::vector<std::vector<std::int64_t>> used(model.locations.size(),
                                              std::vector<std::int64_t>(model.step_count + 1, 0));
  std::vector<int> taken(model.group_count, 0);
  std::uint64_t saving = 0;
  for (std::size_t g = 0; g < model.gaps.size(); ++g) {
    if (!selection.kept[g]) continue;
    const Gap &gap = model.gaps[g];
    used[gap.location][gap.begin] += static_cast<std::int64_t>(gap.bytes);
    used[gap.location][gap.end] -= static_cast<std::int64_t>(gap.bytes);
    if (++taken[gap.group] > 1) return false;
    saving += gap.saving;
  }
  for (std::size_t l = 0; l < model.locations.size(); ++l) {
    std::int64_t running = 0;
    for (std::uint32_t t = 0; t < model.step_count; ++t) {
      running += used[l][t];
      if (running > model.capacity[l][t]) return false;
    }
  }
  return saving == selection.saving;
}

} // namespace fhr::planner

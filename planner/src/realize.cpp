// From kept gaps to actions (docs/planner.md, "Realising a choice").
#include "fhr/planner/schedule.hpp"

#include "fhr/model/location_set.hpp"
#include "fhr/model/state.hpp"

#include <algorithm>
#include <array>

namespace fhr::planner {

namespace {

/// Where a transition's actions go, in the order every budget admits:
/// reclaim drops, then moves out to spill tiers, then the moves across
/// whose room the step's reservations need; enter moves across (out of a
/// budgeted location, a budgeted spill tier included, to where the value is
/// needed or kept next, or ahead from an unbudgeted one), then moves in
/// from unbudgeted places, then loads.
enum class Slot : std::uint8_t { Drop, SpillOut, MoveOutFirst, MoveAcross, MoveIn, Load };

struct Placed {
  std::uint32_t step;
  Slot slot;
  Action action;
};

class Realizer {
public:
  Realizer(const Workload &w, const GapModel &m, const Selection &s, SwapStop swap_stop)
      : w_(w), m_(m), s_(s), swap_stop_(swap_stop) {
    // Room left at every budgeted location and step, for spills to tiers.
    room_.assign(m.locations.size(), std::vector<std::int64_t>(m.step_count + 1, 0));
    for (std::size_t l = 0; l < m.locations.size(); ++l)
      for (std::uint32_t t = 0; t < m.step_count; ++t)
        room_[l][t] = m.capacity[l][t];
    for (std::size_t g = 0; g < m.gaps.size(); ++g)
      if (s.kept[g]) {
        const Gap &gap = m.gaps[g];
        for (std::uint32_t t = gap.begin; t < gap.end; ++t)
          room_[gap.location][t] -= static_cast<std::int64_t>(gap.bytes);
      }
    for (const auto &[at, bytes] : w.budgets) {
      std::uint64_t adopted = 0;
      for (const Value &v : w.values)
        if (v.adopted && v.home == at) adopted += v.storage_bytes;
      initial_room_.push_back(static_cast<std::int64_t>(budget_limit(bytes)) -
                              static_cast<std::int64_t>(adopted));
    }
  }

  std::size_t stops_on_tiers() const { return stops_on_tiers_; }

  std::vector<std::vector<std::int64_t>> room() const {
    std::vector<std::vector<std::int64_t>> out = room_;
    for (auto &per_step : out)
      per_step.resize(m_.step_count);
    return out;
  }

  Schedule run() {
    for (const UseChain &chain : m_.droppable)
      droppable(chain);
    for (const UseChain &chain : m_.movable)
      movable(chain);
    sort_placed();
    order_moves_across();
    Schedule schedule;
    schedule.steps.resize(m_.step_count);
    for (std::uint32_t t = 0; t < m_.step_count; ++t)
      for (const Workspace &ws : w_.steps[t].workspace)
        schedule.steps[t].reservations.push_back(Reservation{ws.at, ws.bytes, ws.label});
    for (const Placed &p : placed_) {
      StepPlan &plan = schedule.steps[p.step];
      (p.slot <= Slot::MoveOutFirst ? plan.reclaim : plan.enter).push_back(p.action);
    }
    return schedule;
  }

private:
  bool budgeted(Location at) const { return m_.index_of(at).has_value(); }

  /// By step, then by slot; in the order placed within a slot.
  void sort_placed() {
    std::stable_sort(placed_.begin(), placed_.end(), [](const Placed &a, const Placed &b) {
      return a.step != b.step ? a.step < b.step : a.slot < b.slot;
    });
  }

  /// Orders each step's moves across so that every budget admits them
  /// (found by random workloads of two devices whose schedules did not
  /// verify):
  ///  - a move out of a location where the step reserves workspace goes in
  ///    the reclaim phase, before the reservation that needs its room, and
  ///    so does every move out of a budgeted location such a move goes
  ///    into; the others stay in the enter phase, where prefetch may take
  ///    them earlier;
  ///  - in each phase a move into a budgeted location comes after the moves
  ///    out of it, whose room it may need (the model counts the room at the
  ///    end of the transition), unless the location's room at the step
  ///    holds every value still to leave it: then it may come first, and
  ///    those values' bytes are taken off the step's room, which prefetch
  ///    reads next (a load issued early sits there through the step);
  ///  - moves that wait for each other (a value from cuda:0 to cuda:1 and
  ///    another back, each needing the other's room) are broken by a stop:
  ///    one of them goes to the first of its spill tiers with room through
  ///    the step (another device, pinned memory; pageable memory when none
  ///    has) in the reclaim phase, and on to its destination after the
  ///    others. That moves its bytes twice, which the gap model does not
  ///    count.
  void order_moves_across() {
    std::vector<Placed> ordered;
    ordered.reserve(placed_.size());
    for (std::size_t begin = 0; begin < placed_.size();) {
      std::size_t end = begin;
      while (end < placed_.size() && placed_[end].step == placed_[begin].step &&
             placed_[end].slot == placed_[begin].slot)
        ++end;
      const auto first = placed_.begin() + static_cast<std::ptrdiff_t>(begin);
      const auto last = placed_.begin() + static_cast<std::ptrdiff_t>(end);
      if (placed_[begin].slot != Slot::MoveAcross) {
        ordered.insert(ordered.end(), first, last);
      } else {
        std::vector<Placed> moves(first, last);
        reclaim_first(moves);
        LocationSet left; // a broken move's stop must hold still through the step
        for (const Placed &p : moves)
          if (p.action.from) left.insert(*p.action.from);
        // The most bytes a location held beyond the step's room while a
        // move in went before moves out (each phase's moment is its own).
        std::array<std::uint64_t, Location::kCount> beyond{};
        for (const Slot slot : {Slot::MoveOutFirst, Slot::MoveAcross}) {
          std::vector<Placed> group;
          for (const Placed &p : moves)
            if (p.slot == slot) group.push_back(p);
          in_dependency_order(std::move(group), left, ordered, beyond);
        }
        for (std::uint32_t l = 0; l < m_.locations.size(); ++l)
          room_[l][placed_[begin].step] -= static_cast<std::int64_t>(beyond[m_.locations[l].index()]);
      }
      begin = end;
    }
    placed_ = std::move(ordered);
    sort_placed(); // the moves out first, and the broken moves' halves, into their slots
  }

  /// Marks MoveOutFirst the moves of one step's `moves` (all MoveAcross)
  /// that free room the step's reservations need, and those that free room
  /// for them.
  void reclaim_first(std::vector<Placed> &moves) const {
    LocationSet first;
    for (const Workspace &ws : w_.steps[moves.front().step].workspace)
      if (budgeted(ws.at)) first.insert(ws.at);
    for (bool grew = true; grew;) {
      grew = false;
      for (Placed &p : moves)
        if (p.slot == Slot::MoveAcross && p.action.from && first.contains(*p.action.from)) {
          p.slot = Slot::MoveOutFirst;
          if (budgeted(p.action.location) && !first.contains(p.action.location)) {
            first.insert(p.action.location);
            grew = true;
          }
        }
    }
  }

  /// Appends `pending` (moves of one phase) to `ordered` so that each move
  /// into a budgeted location follows the moves out of it, or finds room
  /// there beside them (the most such bytes per location raise `beyond`);
  /// where every move left waits for another, the first goes round through
  /// a stop (`stop_between`), never one of `left`, the locations the step's
  /// moves across leave.
  void in_dependency_order(std::vector<Placed> pending, const LocationSet &left, std::vector<Placed> &ordered,
                           std::array<std::uint64_t, Location::kCount> &beyond) {
    // How many pending moves still leave each location, and their bytes.
    std::array<std::size_t, Location::kCount> leaving{};
    std::array<std::uint64_t, Location::kCount> leaving_bytes{};
    for (const Placed &p : pending)
      if (p.action.from) {
        ++leaving[p.action.from->index()];
        leaving_bytes[p.action.from->index()] += w_.values[p.action.value].storage_bytes;
      }
    const auto take = [&](std::vector<Placed>::iterator p) {
      if (p->action.from) {
        --leaving[p->action.from->index()];
        leaving_bytes[p->action.from->index()] -= w_.values[p->action.value].storage_bytes;
      }
      pending.erase(p);
    };
    // Until the last value leaves a location, it holds at most what it
    // holds at the step (the step's needs, workspace and kept gaps, all of
    // them there or on their way) and the values still to leave: where
    // the step's room holds those, a move in fits now.
    const auto fits_now = [&](const Placed &p) {
      const std::size_t to = p.action.location.index();
      if (leaving[to] == 0) return true;
      const std::int64_t room = room_[*m_.index_of(p.action.location)][p.step];
      if (room < 0 || static_cast<std::uint64_t>(room) < leaving_bytes[to]) return false;
      beyond[to] = std::max(beyond[to], leaving_bytes[to]);
      return true;
    };
    while (!pending.empty()) {
      // The first move whose destination no pending move still has to
      // leave, or has room for them all beside what the step holds there.
      auto next = std::find_if(pending.begin(), pending.end(),
                               [&](const Placed &p) { return !budgeted(p.action.location) || fits_now(p); });
      if (next != pending.end()) {
        ordered.push_back(*next);
        take(next);
        continue;
      }
      const Action &round = pending.front().action;
      const std::uint32_t step = pending.front().step;
      const Location stop =
          stop_between(*round.from, round.location, step, w_.values[round.value].storage_bytes, left);
      ordered.push_back({step, Slot::SpillOut, {ActionKind::Move, round.value, stop, round.from}});
      ordered.push_back({step, Slot::MoveIn, {ActionKind::Move, round.value, round.location, stop}});
      take(pending.begin());
    }
  }

  bool kept_any(const Stretch &stretch, std::optional<GapKind> *kind = nullptr,
                Location *at = nullptr) const {
    for (std::uint32_t g = stretch.first_gap; g < stretch.first_gap + stretch.gap_count; ++g)
      if (s_.kept[g]) {
        if (kind) *kind = m_.gaps[g].kind;
        if (at) *at = m_.locations[m_.gaps[g].location];
        return true;
      }
    return false;
  }
  void place(std::uint32_t step, Slot slot, Action action) {
    if (step < m_.step_count) placed_.push_back(Placed{step, slot, action});
  }

  void droppable(const UseChain &chain) {
    const Value &value = w_.values[chain.value];
    const bool exclusive = value.mode == ReplicaMode::Exclusive;
    for (std::size_t i = 0; i < chain.steps.size(); ++i) {
      const Stretch &stretch = chain.stretches[i];
      const Location at = chain.locations[i];
      const bool resident = stretch.free_position && (stretch.gap_count == 0 || kept_any(stretch));
      if (resident) continue;
      // Absent before this use: drop the last replica (if any), load now.
      if (i > 0) {
        const Location previous = chain.locations[i - 1];
        if (exclusive || budgeted(previous))
          place(chain.steps[i - 1] + 1, Slot::Drop, {ActionKind::Drop, chain.value, previous, {}});
      }
      place(chain.steps[i], Slot::Load,
            exclusive ? Action{ActionKind::Move, chain.value, at, std::nullopt}
                      : Action{ActionKind::Ensure, chain.value, at, std::nullopt});
    }
    // After the last use: drop (evicted at once), unless it is free to stay.
    if (!chain.steps.empty()) {
      const Location last = chain.locations.back();
      const bool home = value.adopted && last == value.home;
      if (!home && budgeted(last))
        place(chain.steps.back() + 1, Slot::Drop, {ActionKind::Drop, chain.value, last, {}});
    }
  }

  /// Where a move from `from` to `to` that waits for another's room stops
  /// on its way at `step`: arriving in the reclaim phase and leaving after
  /// the step's other moves in, it needs room at the step before and at
  /// the step. The first of `from`'s spill tiers with that room (another
  /// device is a peer copy each way, pinned memory a DMA each way), except
  /// `to` and the locations the step's moves across leave, whose room is
  /// counted only once they have gone; pageable memory when none has.
  Location stop_between(Location from, Location to, std::uint32_t step, std::uint64_t bytes,
                        const LocationSet &left) {
    if (swap_stop_ == SwapStop::Pageable) return Location::pageable();
    LocationSet skip = left;
    skip.insert(to);
    const Location stop = spill_tier(from, step, step + 1, bytes, skip);
    stops_on_tiers_ += stop != Location::pageable();
    return stop;
  }

  /// The first spill tier of `from` with room over the steps [begin, end),
  /// counted from the step before (a replica arriving in a reclaim phase
  /// meets the previous step's residents), `skip` aside; pageable when
  /// none has.
  Location spill_tier(Location from, std::uint32_t begin, std::uint32_t end, std::uint64_t bytes,
                      const LocationSet &skip = {}) {
    const auto s = static_cast<std::int64_t>(bytes);
    for (Location tier : w_.tiers_of(from)) {
      if (skip.contains(tier)) continue;
      const std::optional<std::uint32_t> l = m_.index_of(tier);
      if (!l) return tier;
      const std::uint32_t first = begin == 0 ? 0 : begin - 1;
      bool fits = begin > 0 || initial_room_[*l] >= s;
      for (std::uint32_t t = first; fits && t < end && t < m_.step_count; ++t)
        fits = room_[*l][t] >= s;
      if (!fits) continue;
      for (std::uint32_t t = first; t < end && t < m_.step_count; ++t)
        room_[*l][t] -= s;
      if (begin == 0) initial_room_[*l] -= s;
      return tier;
    }
    return Location::pageable();
  }

  void movable(const UseChain &chain) {
    const Value &value = w_.values[chain.value];
    Location here = value.home;
    const auto move = [&](std::uint32_t step, Location to, Slot slot) {
      if (to == here) return;
      place(step, slot, {ActionKind::Move, chain.value, to, here});
      here = to;
    };
    for (std::size_t i = 0; i < chain.stretches.size(); ++i) {
      const Stretch &stretch = chain.stretches[i];
      std::optional<GapKind> kind;
      Location kept_at;
      if (stretch.begin < stretch.end) {
        if (stretch.gap_count > 0 && kept_any(stretch, &kind, &kept_at)) {
          move(stretch.begin, kept_at, Slot::MoveAcross); // stays, or moves ahead at once
        } else if (stretch.gap_count > 0) {
          // Leaves in the reclaim phase, so the step's reservations find its room.
          move(stretch.begin, spill_tier(here, stretch.begin, stretch.end, value.storage_bytes),
               Slot::SpillOut);
        } else if (stretch.free_position && *stretch.free_position != here) {
          move(stretch.begin, *stretch.free_position, Slot::SpillOut); // ahead to unbudgeted memory
        }
      }
      if (stretch.next) {
        // Arrivals from an unbudgeted place come after the moves that make
        // room. A return from a budgeted spill tier is a move across: the
        // tier's room is counted only up to the step before it leaves, so
        // a reservation or another move there may need it gone first
        // (found by a review's random workloads).
        move(stretch.end, *stretch.next, !budgeted(here) ? Slot::MoveIn : Slot::MoveAcross);
      }
    }
  }

  const Workload &w_;
  const GapModel &m_;
  const Selection &s_;
  const SwapStop swap_stop_;
  std::size_t stops_on_tiers_ = 0;
  std::vector<std::vector<std::int64_t>> room_;
  std::vector<std::int64_t> initial_room_;
  std::vector<Placed> placed_;
};

} // namespace

Realized realize(const Workload &workload, const GapModel &model, const Selection &selection,
                 SwapStop swap_stop) {
  Realizer realizer(workload, model, selection, swap_stop);
  Realized out;
  out.schedule = realizer.run();
  out.room_left = realizer.room();
  out.stops_on_tiers = realizer.stops_on_tiers();
  return out;
}

} // namespace fhr::planner

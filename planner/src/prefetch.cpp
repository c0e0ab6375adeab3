// Prefetch (docs/planner.md, "Prefetch"): loads issued during an earlier
// step's compute, where the room at every step in between admits them and
// the copy engine has time while those steps compute.
#include "fhr/planner/schedule.hpp"

#include "queue_key.hpp"
#include "range_tree.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace fhr::planner {

namespace {

/// How far back a load may be issued (steps); bounds the planner's work.
constexpr std::uint32_t kLookback = 4096;

} // namespace

void schedule_prefetch(const Workload &workload, const GapModel &model,
                       std::vector<std::vector<std::int64_t>> room_left, Schedule &schedule,
                       const LinkModel &links) {
  const auto steps = static_cast<std::uint32_t>(workload.steps.size());
  bool timed = false;
  for (const Step &s : workload.steps)
    timed = timed || s.compute_seconds.value_or(0.0) > 0;
  if (!timed || steps < 2) return;
  // The room left at every step as the schedule stands.
  std::vector<RangeTree> room;
  for (const std::vector<std::int64_t> &left : room_left)
    room.emplace_back(left);
  // Engine time free while each step computes, per engine.
  std::map<int, std::vector<double>> idle;
  const auto idle_of = [&](int engine) -> std::vector<double> & {
    auto [it, fresh] = idle.try_emplace(engine);
    if (fresh) {
      it->second.resize(steps);
      for (std::uint32_t t = 0; t < steps; ++t)
        it->second[t] = workload.steps[t].compute_seconds.value_or(0.0);
    }
    return it->second;
  };
  // The last step at which a value was touched or used (a load may not
  // move before it): for replicable values per location, else anywhere.
  std::unordered_map<std::uint64_t, std::uint32_t> last_here;
  std::vector<std::int64_t> last_anywhere(workload.values.size(), -1);
  const auto key = [](ValueId v, Location at) { return (std::uint64_t{v} << 8) | at.index(); };
  const auto touch = [&](ValueId v, Location at, std::uint32_t t) {
    last_here[key(v, at)] = t;
    last_anywhere[v] = std::max<std::int64_t>(last_anywhere[v], t);
  };
  const auto release_of = [&](ValueId v, Location at) -> std::uint32_t {
    const Value &value = workload.values[v];
    std::int64_t last = -1;
    if (value.mode == ReplicaMode::Replicable && !is_movable(workload, value)) {
      if (const auto it = last_here.find(key(v, at)); it != last_here.end()) last = it->second;
    } else {
      last = last_anywhere[v];
    }
    return static_cast<std::uint32_t>(last + 1);
  };

  for (std::uint32_t u = 0; u < steps; ++u) {
    StepPlan &plan = schedule.steps[u];
    for (const Action &a : plan.reclaim) {
      touch(a.value, a.location, u);
      if (a.from) touch(a.value, *a.from, u);
    }
    std::vector<Action> kept;
    for (const Action &a : plan.enter) {
      const std::optional<std::uint32_t> l = model.index_of(a.location);
      const bool load =
          a.kind == ActionKind::Ensure || a.kind == ActionKind::Copy || a.kind == ActionKind::Move;
      std::uint32_t hoist = u;
      if (load && l && u > 0) {
        const Value &value = workload.values[a.value];
        const Location from = a.from ? *a.from : value.home;
        const std::optional<CopyQueue> engine = engine_of(from, a.location);
        // The copy moves the logical bytes (the runtime allocates and copies
        // a value's logical length); the room is charged its storage bytes.
        // A value the workload rebuilds is taken to be loaded from its
        // source here (realize drops it where it leaves a budgeted
        // location; a copy from a replica elsewhere is rarer), at the load's
        // curve, as the schedule's clock times it (its DMA's extras,
        // microseconds, left out).
        const double seconds = value.adopted
                                   ? links.transfer_seconds(from, a.location, value.logical_bytes)
                                   : links.load_transfer_seconds(from, a.location, value.logical_bytes);
        const std::uint32_t release = release_of(a.value, a.location);
        const auto bytes = static_cast<std::int64_t>(value.storage_bytes);
        if (engine && release < u) {
          std::vector<double> &free_time = idle_of(queue_key(*engine));
          // Back from the step before the use while the room admits it,
          // until the engine time found covers the copy.
          double found = 0;
          const std::uint32_t floor = std::max(release, u > kLookback ? u - kLookback : 0u);
          for (std::uint32_t h = u; h > floor && found < seconds;) {
            --h;
            if (room[*l].at(h) < bytes) break;
            hoist = h;
            found += free_time[h];
          }
          if (hoist < u) {
            room[*l].add(hoist, u, -bytes);
            double remaining = seconds;
            for (std::uint32_t h = hoist; h < u && remaining > 0; ++h) {
              const double used = std::min(free_time[h], remaining);
              free_time[h] -= used;
              remaining -= used;
            }
          }
        }
      }
      if (hoist < u) {
        schedule.steps[hoist].during.push_back(a);
      } else {
        kept.push_back(a);
      }
      touch(a.value, a.location, hoist);
      if (a.from) touch(a.value, *a.from, hoist);
    }
    plan.enter = std::move(kept);
    for (const Need &n : workload.steps[u].needs)
      touch(n.value, n.at, u);
  }
}

} // namespace fhr::planner

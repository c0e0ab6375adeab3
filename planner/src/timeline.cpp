// Timing a schedule (docs/planner.md, "Time"): an event simulation of the
// copy engines and the steps.
#include "fhr/planner/schedule.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace fhr::planner {

namespace {

struct Interval {
  double begin, end;
};

/// One copy engine: first come first served; its busy times, for the
/// duplex sharing of the other direction.
struct Engine {
  double free = 0;
  std::vector<Interval> busy;
};

int engine_key(const CopyEngine &e) {
  switch (e.kind) {
  case CopyEngine::Kind::Inbound: return static_cast<int>(2 * e.device);
  case CopyEngine::Kind::Outbound: return static_cast<int>(2 * e.device + 1);
  case CopyEngine::Kind::HostThreads: return -1;
  }
  return -1;
}

/// When a copy of `bytes` at `rate` started at `start` ends, running at
/// `shared` while the opposite engine is busy.
double finish(double start, double bytes, double rate, double shared, const std::vector<Interval> &other) {
  double t = start, remaining = bytes;
  auto it = std::upper_bound(other.begin(), other.end(), start,
                             [](double s, const Interval &i) { return s < i.end; });
  for (; it != other.end() && remaining > 0; ++it) {
    if (it->begin > t) {
      const double alone = (it->begin - t) * rate;
      if (alone >= remaining) return t + remaining / rate;
      remaining -= alone;
      t = it->begin;
    }
    const double together = (it->end - t) * shared;
    if (together >= remaining) return t + remaining / shared;
    remaining -= together;
    t = it->end;
  }
  return t + remaining / rate;
}

class Clock {
public:
  Clock(const LinkModel &links) : links_(links) {}

  /// Runs a copy issued at `issue`; returns when it ends.
  double run(const Transfer &x, double issue) {
    const std::optional<CopyEngine> which = engine_of(x.from, x.to);
    const double nominal = links_.transfer_seconds(x.from, x.to, x.bytes);
    if (!which || nominal <= 0) return issue;
    Engine &engine = engines_[engine_key(*which)];
    const double start = std::max(issue, engine.free);
    double end = start + nominal;
    if (which->kind != CopyEngine::Kind::HostThreads && links_.duplex_bytes_per_second > 0) {
      CopyEngine opposite = *which;
      opposite.kind =
          which->kind == CopyEngine::Kind::Inbound ? CopyEngine::Kind::Outbound : CopyEngine::Kind::Inbound;
      const auto it = engines_.find(engine_key(opposite));
      if (it != engines_.end()) {
        const double rate = static_cast<double>(x.bytes) / nominal;
        const double shared = std::min(rate, links_.duplex_bytes_per_second / 2);
        end = finish(start, static_cast<double>(x.bytes), rate, shared, it->second.busy);
      }
    }
    engine.free = end;
    engine.busy.push_back({start, end});
    copies_.push_back({start, end});
    return end;
  }
  const std::vector<Interval> &copies() const { return copies_; }

private:
  const LinkModel &links_;
  std::map<int, Engine> engines_;
  std::vector<Interval> copies_;
};

std::uint64_t pair_key(ValueId value, Location at) { return (std::uint64_t{value} << 8) | at.index(); }

} // namespace

Timeline time_schedule(const Workload &workload, const Verification &verification, const LinkModel &links) {
  Timeline out;
  Clock clock(links);
  std::unordered_map<std::uint64_t, double> arrival; // (value, location) -> when its copy there ended
  std::vector<Interval> compute;
  compute.reserve(workload.steps.size());
  const std::vector<Transfer> &transfers = verification.transfers;
  std::size_t next = 0;
  double previous_end = 0;
  for (std::uint32_t t = 0; t < workload.steps.size(); ++t) {
    const auto run_phase = [&](Transfer::Phase phase, double issue) {
      double end = issue;
      for (; next < transfers.size() && transfers[next].step == t && transfers[next].phase == phase; ++next) {
        const double done = clock.run(transfers[next], issue);
        arrival[pair_key(transfers[next].value, transfers[next].to)] = done;
        end = std::max(end, done);
      }
      return end;
    };
    // The scope runs reclaim, then (reservations and) enter; the step starts
    // when both have finished and every value it needs has arrived.
    const double reclaimed = run_phase(Transfer::Phase::Reclaim, previous_end);
    double ready = run_phase(Transfer::Phase::Enter, reclaimed);
    for (const Need &n : workload.steps[t].needs)
      if (const auto it = arrival.find(pair_key(n.value, n.at)); it != arrival.end())
        ready = std::max(ready, it->second);
    const double seconds = workload.steps[t].compute_seconds.value_or(0.0);
    out.stall_seconds += ready - previous_end;
    out.compute_seconds += seconds;
    compute.push_back({ready, ready + seconds});
    run_phase(Transfer::Phase::During, ready);
    previous_end = ready + seconds;
  }
  out.total_seconds = previous_end;
  for (const Interval &copy : clock.copies()) {
    out.transfer_seconds += copy.end - copy.begin;
    // The compute intervals are in order and disjoint.
    auto it = std::upper_bound(compute.begin(), compute.end(), copy.begin,
                               [](double s, const Interval &i) { return s < i.end; });
    for (; it != compute.end() && it->begin < copy.end; ++it)
      out.overlapped_seconds += std::max(0.0, std::min(copy.end, it->end) - std::max(copy.begin, it->begin));
  }
  return out;
}

} // namespace fhr::planner

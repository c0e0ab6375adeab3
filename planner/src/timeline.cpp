// Timing a schedule (docs/planner.md, "Time"): an event simulation of the
// copy queues and the steps, with the link model's costs and duplex rule.
#include "fhr/planner/schedule.hpp"

#include "queue_key.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace fhr::planner {

namespace {

/// A copy on a queue: when it streams, and at what rate alone.
struct Interval {
  double begin, end;
  double bytes_per_second = 0;
};

/// One copy queue: first come first served; its busy times, for the
/// duplex sharing of the other direction.
struct Queue {
  double free = 0;
  std::vector<Interval> busy;
};

/// When a copy of `bytes` at `rate` started at `start` ends, its rate
/// shared by the model's duplex rule while the opposite queue streams.
double finish(double start, double bytes, double rate, double duplex, const std::vector<Interval> &other) {
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
    const double shared = duplex_rate(rate, it->bytes_per_second, duplex);
    const double together = (it->end - t) * shared;
    if (together >= remaining) return t + remaining / shared;
    remaining -= together;
    t = it->end;
  }
  return t + remaining / rate;
}

/// The copy queues of a schedule. The model's predictor
/// (fhr/model/timeline.hpp) times the windows of one plan phase; a
/// schedule also issues copies while steps compute (prefetch), which no
/// plan phase expresses, so the planner keeps this clock, on the model's
/// queues (engine_of), link costs (transfer_seconds) and duplex rule.
class Clock {
public:
  Clock(const LinkModel &links) : links_(links) {}

  /// Runs a copy issued at `issue`; returns when it ends.
  double run(const Transfer &x, double issue) {
    const std::optional<CopyQueue> which = engine_of(x.from, x.to);
    const double nominal = links_.transfer_seconds(x.from, x.to, x.logical_bytes);
    if (!which || nominal <= 0) return issue;
    Queue &queue = queues_[queue_key(*which)];
    const double start = std::max(issue, queue.free);
    const double rate = static_cast<double>(x.logical_bytes) / nominal;
    double end = start + nominal;
    if (which->kind != CopyQueue::Kind::HostThreads && links_.duplex_bytes_per_second > 0) {
      CopyQueue opposite = *which;
      opposite.kind =
          which->kind == CopyQueue::Kind::Inbound ? CopyQueue::Kind::Outbound : CopyQueue::Kind::Inbound;
      if (const auto it = queues_.find(queue_key(opposite)); it != queues_.end())
        end = finish(start, static_cast<double>(x.logical_bytes), rate, links_.duplex_bytes_per_second,
                     it->second.busy);
    }
    queue.free = end;
    queue.busy.push_back({start, end, rate});
    copies_.push_back({start, end, rate});
    return end;
  }
  const std::vector<Interval> &copies() const { return copies_; }

private:
  const LinkModel &links_;
  std::map<int, Queue> queues_;
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

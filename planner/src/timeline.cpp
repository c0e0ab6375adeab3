// Timing a schedule (docs/planner.md, "Time"): an event simulation of the
// copy queues and the steps, with the link model's costs, duplex rule and
// host memory rule.
#include "fhr/planner/schedule.hpp"

#include "queue_key.hpp"

#include "fhr/model/dma_history.hpp"
#include "fhr/model/timeline.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>

namespace fhr::planner {

namespace {

/// A copy on a queue: when it streams, at what rate alone, and the bytes
/// of host memory it reads and writes per byte (copy_host_traffic).
struct Interval {
  double begin, end;
  double bytes_per_second = 0;
  unsigned host_traffic = 0;
};

/// One copy queue: first come first served; its busy times, in order, for
/// the sharing of the copies issued after them.
struct Queue {
  double free = 0;
  std::vector<Interval> busy;
};

/// Another queue's copies, from the first one that ends after a given
/// time, and whether that queue is the opposite direction of the same
/// device (the duplex). Its busy times are in order and disjoint, so at any time at
/// most its first copy not yet ended streams; finish() drops the ended
/// ones as its time passes and never looks past the first that has not
/// begun (the same sharing as a walk over every later copy, found faster).
struct OtherQueue {
  std::span<const Interval> busy;
  bool opposite;
};

/// The copy queues of a schedule. The model's predictor
/// (fhr/model/timeline.hpp) times the windows of one plan phase; a
/// schedule also issues copies while steps compute (prefetch), which no
/// plan phase expresses, so the planner keeps this clock, on the model's
/// pieces: its queues (engine_of), a copy's curve (transfer_seconds) or a
/// load's (load_transfer_seconds), what a DMA pays beyond its curve
/// (DmaHistory, fed in plan order as the predictor feeds it), the duplex
/// rule and the host memory rule. A copy's rate is shared with the copies
/// issued before it that are still streaming, counted at their own rates
/// alone; theirs keep the times they were given (the predictor, which
/// times one window at a time, slows both).
class Clock {
public:
  Clock(const LinkModel &links) : links_(links) {}

  /// Runs a copy issued at `issue` on its queue; returns when it ends. A
  /// load is timed from its copy: its source's fill is the client's
  /// loader's, whose speed the workload does not give (as EXPLAIN ANALYZE
  /// compares a load, docs/links.md).
  double run(const Transfer &x, double issue) {
    const DmaExtra extra =
        x.load ? history_.load(x.value, x.from, x.to, links_) : history_.copy(x.value, x.from, x.to, links_);
    const std::optional<CopyQueue> which = engine_of(x.from, x.to);
    const double nominal =
        extra.seconds() + (x.load ? links_.load_transfer_seconds(x.from, x.to, x.logical_bytes)
                                  : links_.transfer_seconds(x.from, x.to, x.logical_bytes));
    if (!which || nominal <= 0) return issue;
    const int key = queue_key(*which);
    Queue &queue = queues_[key];
    const double start = std::max(issue, queue.free);
    const Interval own{start, start, static_cast<double>(x.logical_bytes) / nominal,
                       copy_host_traffic(x.from, x.to, staged(x)).total()};
    // A value of no bytes pays its link's fixed cost alone.
    const double end = x.logical_bytes == 0
                           ? start + nominal
                           : finish(own, static_cast<double>(x.logical_bytes), overlapping(key, start));
    queue.free = end;
    queue.busy.push_back({start, end, own.bytes_per_second, own.host_traffic});
    copies_.push_back(queue.busy.back());
    return end;
  }
  const std::vector<Interval> &copies() const { return copies_; }

  /// Whether the runtime makes the copy inside its start (a staged copy, a
  /// copy between host locations): the copies issued after it wait for it.
  bool runs_in_its_start(const Transfer &x) const {
    return copy_runs_in_its_start(x.from, x.to, x.logical_bytes, options_);
  }

private:
  /// Whether the runtime stages the copy through its bounce buffers (the
  /// CUDA backend's threshold, TimelineOptions::staged_min_bytes): its
  /// host memory traffic is then the DMA's and the memcpy's, both at the
  /// copy's average rate (the predictor times them apart).
  bool staged(const Transfer &x) const { return is_staged_copy(x.from, x.to, x.logical_bytes, options_); }

  /// The other queues, each from its first copy that ends after `start`
  /// (a binary search: each queue's busy times are in order and disjoint).
  std::vector<OtherQueue> overlapping(int key, double start) const {
    std::vector<OtherQueue> out;
    for (const auto &[other_key, other] : queues_) {
      if (other_key == key) continue;
      // Device queues are 2d (inbound) and 2d + 1 (outbound): the duplex
      // pairs them.
      const bool opposite = key >= 0 && other_key >= 0 && (other_key ^ 1) == key;
      const auto first = std::upper_bound(other.busy.begin(), other.busy.end(), start,
                                          [](double s, const Interval &i) { return s < i.end; });
      out.push_back({std::span<const Interval>(first, other.busy.end()), opposite});
    }
    return out;
  }

  /// When a copy of `bytes` starting at `own.begin` ends, its rate at each
  /// moment shared with the copies streaming then: the duplex rule with its
  /// device's opposite direction, then the host memory rule with every
  /// copy that touches the host.
  double finish(const Interval &own, double bytes, std::vector<OtherQueue> others) const {
    double t = own.begin, remaining = bytes;
    std::vector<double> rates;
    std::vector<unsigned> traffic;
    for (;;) {
      double rate = own.bytes_per_second, next = std::numeric_limits<double>::infinity();
      rates.assign(1, 0.0);
      traffic.assign(1, own.host_traffic);
      for (OtherQueue &other : others) {
        while (!other.busy.empty() && other.busy.front().end <= t)
          other.busy = other.busy.subspan(1);
        if (other.busy.empty()) continue;
        // The queue's later copies begin once this one has ended: its
        // beginning or its end is the queue's next event.
        const Interval &copy = other.busy.front();
        if (copy.begin > t) {
          next = std::min(next, copy.begin);
          continue;
        }
        next = std::min(next, copy.end);
        if (other.opposite) rate = duplex_rate(rate, copy.bytes_per_second, links_.duplex_bytes_per_second);
        rates.push_back(copy.bytes_per_second);
        traffic.push_back(copy.host_traffic);
      }
      rates[0] = rate;
      share_host_memory(rates, traffic, links_.host_memory_bytes_per_second);
      rate = rates[0];
      if (next == std::numeric_limits<double>::infinity() || (next - t) * rate >= remaining)
        return t + remaining / rate;
      remaining -= (next - t) * rate;
      t = next;
    }
  }

  const LinkModel &links_;
  /// The CUDA backend's options, as `explain --profile` times a program.
  const TimelineOptions options_;
  /// What came before the first step, as the predictor takes it
  /// (TimelineOptions::host_work_before: the processor wrote the values
  /// the workload adopts).
  DmaHistory history_{options_.host_work_before ? DmaHistory::Before::HostWork : DmaHistory::Before::OwnDmas};
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
    // A phase's copies are issued in order from `issue`, as the runtime's
    // window issues them: a copy made inside its start holds back the ones
    // after it until it ends, and a load runs alone, after every earlier
    // copy of the phase and before the later ones.
    const auto run_phase = [&](Transfer::Phase phase, double issue) {
      double cursor = issue, end = issue;
      for (; next < transfers.size() && transfers[next].step == t && transfers[next].phase == phase; ++next) {
        const Transfer &x = transfers[next];
        const double done = clock.run(x, x.load ? end : cursor);
        arrival[pair_key(x.value, x.to)] = done;
        end = std::max(end, done);
        if (x.load || clock.runs_in_its_start(x)) cursor = done;
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

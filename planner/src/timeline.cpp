// Timing a schedule (docs/planner.md, "Time"): the steps in order, their
// copies on the copy engines of the model (fhr/model/copy_flows.hpp), the
// engine the time predictor of `explain --profile` runs its windows on.
#include "fhr/planner/schedule.hpp"

#include "fhr/model/copy_flows.hpp"
#include "fhr/model/dma_history.hpp"
#include "fhr/model/timeline.hpp"

#include <algorithm>
#include <unordered_map>

namespace fhr::planner {

namespace {

/// A schedule's copies on the model's copy engines. The predictor gives the
/// engines one plan phase's overlap windows at a time; a schedule also
/// issues copies while steps compute (prefetch), which no plan phase
/// expresses, so the clock gives them each phase's copies as the phase
/// starts, while earlier copies may still stream. Each copy is priced as
/// the predictor prices it: its curve, or a load's (timed from its copy:
/// its source's fill is the client's loader's, whose speed the workload
/// does not give, as EXPLAIN ANALYZE compares a load, docs/links.md), a
/// staged copy's host part, and what its DMA pays beyond its curve
/// (DmaHistory, fed in plan order as the predictor feeds it).
class Clock {
public:
  Clock(const LinkModel &links, std::size_t copies)
      : links_(links), flows_(0.0, links.duplex_bytes_per_second, links.host_memory_bytes_per_second) {
    flows_.reserve(copies);
  }

  /// Issues a phase's copies from `issue` (no earlier than the last issue)
  /// as the runtime runs the phase: window by window (Transfer::window),
  /// each once the one before it is done, a load alone; inside a window in
  /// order, a copy made inside its start (a staged copy, a copy between
  /// host locations) holding back the ones after it until it ends. Returns
  /// each copy's index on the engines, or none for a copy that takes no
  /// time (a load in place, a link that costs nothing).
  std::span<const std::optional<std::size_t>> issue(std::span<const Transfer> phase, double issue) {
    std::vector<std::optional<std::size_t>> &indices = indices_;
    indices.clear();
    // Most phases issue nothing: the engines run on until one does (a
    // third of the simulation's events were such stops on the way).
    if (phase.empty()) return indices;
    flows_.run_until(issue);
    // The window whose batch is open; a window with no copy that takes time
    // opens none, so the next one waits for the one before it.
    std::optional<std::uint32_t> open;
    bool first = true;
    for (const Transfer &x : phase) {
      const bool staged = is_staged_copy(x.from, x.to, x.logical_bytes, options_);
      const DmaExtra extra = x.load ? history_.load(x.value, x.from, x.to, links_)
                                    : history_.copy(x.value, x.from, x.to, staged, links_);
      if (!engine_of(x.from, x.to)) {
        indices.emplace_back();
        continue;
      }
      const FlowSpec spec = x.load
                                ? load_flow(x.from, x.to, x.logical_bytes, staged, extra.seconds(), links_)
                                : copy_flow(x.from, x.to, x.logical_bytes, staged, extra.seconds(), links_);
      const double seconds =
          spec.lead_seconds + spec.latency_seconds + spec.bytes / spec.bytes_per_second + spec.tail_seconds;
      // A copy that takes no time (a curve without a fixed cost, no bytes,
      // no DMA extra: no calibrated profile has one) is left off the
      // engines: it neither queues nor holds back the copies after it, as
      // the predictor's would, in no time.
      if (!(seconds > 0)) {
        indices.emplace_back();
        continue;
      }
      if (open != x.window) {
        flows_.begin_batch(!first);
        open = x.window;
        first = false;
      }
      indices.emplace_back(flows_.add(spec));
    }
    return indices;
  }

  /// When copy `index` ends (the engines run until then); `otherwise` for
  /// a copy that took no time.
  double end_of(std::optional<std::size_t> index, double otherwise) {
    return index ? flows_.run_until_done(*index) : otherwise;
  }

  /// Every copy run to its end.
  void finish() { flows_.run_until_all_done(); }

  /// Each copy's time on the engines: from its host part ahead (a staged
  /// copy into a device) or its start on its engine, to its end.
  std::vector<std::pair<double, double>> spans() const {
    std::vector<std::pair<double, double>> out;
    out.reserve(flows_.size());
    for (std::size_t k = 0; k < flows_.size(); ++k) {
      const FlowTimes &t = flows_.times(k);
      const double begin = flows_.spec(k).lead_seconds > 0 ? t.allocated_at.value_or(t.issued_at) : t.start;
      out.emplace_back(begin, t.end);
    }
    return out;
  }

private:
  const LinkModel &links_;
  /// The CUDA backend's options, as `explain --profile` times a program.
  const TimelineOptions options_;
  /// What came before the first step, as the predictor takes it
  /// (TimelineOptions::host_work_before: the processor wrote the values
  /// the workload adopts).
  DmaHistory history_{options_.host_work_before ? DmaHistory::Before::HostWork : DmaHistory::Before::OwnDmas};
  CopyFlows flows_;
  std::vector<std::optional<std::size_t>> indices_; ///< issue()'s answer, kept between phases
};

std::uint64_t pair_key(ValueId value, Location at) { return (std::uint64_t{value} << 8) | at.index(); }

} // namespace

Timeline time_schedule(const Workload &workload, const Verification &verification, const LinkModel &links) {
  Timeline out;
  Clock clock(links, verification.transfers.size());
  /// (value, location) -> the copy that brought it there, or when it arrived.
  struct Arrival {
    std::optional<std::size_t> copy;
    double at = 0;
  };
  std::unordered_map<std::uint64_t, Arrival> arrival;
  std::vector<std::pair<double, double>> compute;
  compute.reserve(workload.steps.size());
  const std::vector<Transfer> &transfers = verification.transfers;
  std::size_t next = 0;
  double previous_end = 0;
  for (std::uint32_t t = 0; t < workload.steps.size(); ++t) {
    // Issues a phase's copies at `issue`; with `wait`, runs them to their
    // ends and returns when the last ended (`issue` when none took time).
    const auto run_phase = [&](Transfer::Phase phase, double issue, bool wait) {
      const std::size_t first = next;
      while (next < transfers.size() && transfers[next].step == t && transfers[next].phase == phase)
        ++next;
      const std::span<const Transfer> copies(transfers.data() + first, next - first);
      const std::span<const std::optional<std::size_t>> indices = clock.issue(copies, issue);
      double end = issue;
      for (std::size_t k = 0; k < copies.size(); ++k) {
        arrival[pair_key(copies[k].value, copies[k].to)] = {indices[k], issue};
        if (wait) end = std::max(end, clock.end_of(indices[k], issue));
      }
      return end;
    };
    // The scope runs reclaim, then (reservations and) enter; the step starts
    // when both have finished and every value it needs has arrived.
    const double reclaimed = run_phase(Transfer::Phase::Reclaim, previous_end, true);
    double ready = run_phase(Transfer::Phase::Enter, reclaimed, true);
    for (const Need &n : workload.steps[t].needs)
      if (const auto it = arrival.find(pair_key(n.value, n.at)); it != arrival.end())
        ready = std::max(ready, clock.end_of(it->second.copy, it->second.at));
    const double seconds = workload.steps[t].compute_seconds.value_or(0.0);
    out.stall_seconds += ready - previous_end;
    out.compute_seconds += seconds;
    compute.emplace_back(ready, ready + seconds);
    run_phase(Transfer::Phase::During, ready, false);
    previous_end = ready + seconds;
  }
  clock.finish();
  out.total_seconds = previous_end;
  for (const auto &[begin, end] : clock.spans()) {
    out.transfer_seconds += end - begin;
    // The compute intervals are in order and disjoint.
    auto it = std::upper_bound(compute.begin(), compute.end(), begin,
                               [](double s, const std::pair<double, double> &i) { return s < i.second; });
    for (; it != compute.end() && it->first < end; ++it)
      out.overlapped_seconds += std::max(0.0, std::min(end, it->second) - std::max(begin, it->first));
  }
  return out;
}

} // namespace fhr::planner

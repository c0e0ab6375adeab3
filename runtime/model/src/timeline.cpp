#include "fhr/model/timeline.hpp"

#include "fhr/model/dma_history.hpp"
#include "fhr/model/overlap_window.hpp"

#include <algorithm>
#include <limits>

namespace fhr {

std::string engine_name(const CopyQueue &engine) {
  switch (engine.kind) {
  case CopyQueue::Kind::Inbound: return Location::cuda(engine.device).name() + " in";
  case CopyQueue::Kind::Outbound: return Location::cuda(engine.device).name() + " out";
  case CopyQueue::Kind::HostThreads: return "host copy threads";
  }
  return "?";
}

TimelineStep copy_step(ValueId value, Location from, Location to, std::uint64_t bytes, bool frees_source,
                       std::uint32_t group) {
  TimelineStep step;
  step.group = group;
  step.transfer = StepTransfer::Copy;
  step.frees_source = frees_source;
  step.value = value;
  step.source = from;
  step.destination = to;
  step.storage_bytes = step.logical_bytes = bytes;
  if (frees_source) step.freed.insert(from);
  return step;
}

namespace {

/// One copy of a window in the fluid simulation: its allocation on the
/// host, a staged copy's host part into a device (lead), its fixed cost
/// and its bytes on its engine at its link's rate (shared while both
/// directions of its device stream at once), a staged copy's host part out
/// of a device (tail). Its bytes and its host part share the host's memory
/// with whatever else moves through it then.
struct Flow {
  std::size_t step = 0;
  CopyQueue engine;
  double host_left = 0;  ///< allocation (and staging) on the host before the copy may start
  double allocation = 0; ///< the destination's allocation in host_left
  double staging = 0;    ///< a first staged copy's bounce buffers in host_left
  /// When it stopped allocating (a device pool's growth waits included):
  /// the runtime issues the copy then, the staging buffers inside it.
  std::optional<double> allocated_at;
  Location to;
  /// Its allocation grows the destination device's pool, which returns
  /// only once the copies out of that device issued before it are done
  /// (allocating()).
  bool growth_waits = false;
  /// A staged copy's host part ahead of its engine (into a device: the
  /// first bounce buffer filled) and after it (out of one: the last
  /// emptied). Its engine is free meanwhile, for the copies queued on it.
  double lead_left = 0;
  double tail_left = 0;
  /// The host part's pace alone: its bytes over its seconds (the staged
  /// copy's calibrated time less its DMA's, not a memcpy curve's rate),
  /// slowed while it shares the host's memory.
  double host_part_bytes_per_second = 0;
  double latency_left = 0;
  /// Of latency_left, what its DMA pays beyond its curve (dma_history.hpp).
  DmaExtra dma_extra;
  double bytes_left = 0;
  double bytes_per_second = 1;
  /// Bytes of host memory its DMA (or memcpy) and its host part read and
  /// write per byte (the link model's copy_host_traffic).
  CopyHostTraffic host_traffic;
  bool synchronous = false; ///< runs inside its start: later copies start after it
  bool issued = false, started = false, done = false;
  double issued_at = 0, start = 0, end = 0;

  /// Whether it holds its engine: started, its fixed cost or bytes left.
  bool on_engine() const { return started && !done && (latency_left > 0 || bytes_left > 0); }
};

/// Every block the step frees goes back to the pools.
void free_replicas(const TimelineStep &step, RuntimePools *pools) {
  if (pools) step.freed.for_each([&](Location at) { pools->free(at, step.logical_bytes); });
}

bool is_staged(const TimelineStep &step, const TimelineOptions &options) {
  return is_staged_copy(step.source, step.destination, step.logical_bytes, options);
}

bool runs_in_its_start(const TimelineStep &step, const TimelineOptions &options) {
  return copy_runs_in_its_start(step.source, step.destination, step.logical_bytes, options);
}

/// Splits a staged copy's calibrated time into the DMA its engine carries
/// (the pinned link's time for its bytes) and the host part around it (the
/// rest of the calibrated time). The DMA keeps the flow's fixed cost and
/// bytes; the host part comes before it into a device and after it out of
/// one, which is when the runtime's staged pipeline leaves the engine idle.
void split_staged(Flow &flow, const TimelineStep &step, const LinkModel &links) {
  const bool into_device = step.destination.is_cuda();
  const LinkKind dma = into_device ? LinkKind::PinnedToDevice : LinkKind::DeviceToPinned;
  const SizeClass &dma_class = links.curve(dma).class_for(step.logical_bytes);
  const double staged_seconds = flow.latency_left + flow.bytes_left / flow.bytes_per_second;
  const double dma_seconds = dma_class.latency_seconds + flow.bytes_left / dma_class.bytes_per_second;
  if (dma_seconds >= staged_seconds) return; // no host part to spare: the engine carries it all
  (into_device ? flow.lead_left : flow.tail_left) = staged_seconds - dma_seconds;
  flow.host_part_bytes_per_second = flow.bytes_left / (staged_seconds - dma_seconds);
  flow.latency_left = dma_class.latency_seconds;
  flow.bytes_per_second = dma_class.bytes_per_second;
}

/// The destination's account when the window began: the explained charge
/// before `step` less what the window's earlier (sequentially applied)
/// actions changed there.
LocationAccount account_at_window_start(const TimelineStep &step, std::span<const TimelineStep> steps,
                                        std::span<const std::size_t> members) {
  LocationAccount account = step.destination_account;
  for (std::size_t member : members) {
    const TimelineStep &earlier = steps[member];
    if (earlier.destination == step.destination)
      account.used_bytes -= std::min(account.used_bytes, earlier.storage_bytes);
    if (earlier.frees_source && earlier.source == step.destination)
      account.used_bytes += earlier.storage_bytes;
  }
  return account;
}

/// Whether `flow` moves bytes now: on its engine, past its fixed cost.
bool streaming(const Flow &flow) { return flow.on_engine() && flow.latency_left <= 0; }

/// Whether `flow` is in its host part after its engine (a staged copy out
/// of a device emptying its last bounce buffer).
bool tailing(const Flow &flow) { return flow.started && !flow.done && !flow.on_engine(); }

/// Rate of a streaming flow: its link's bandwidth, scaled down while its
/// device's other direction streams too and both exceed the duplex figure.
double rate_of(const Flow &flow, std::span<const Flow> flows, double duplex_bytes_per_second) {
  if (flow.engine.kind == CopyQueue::Kind::HostThreads || duplex_bytes_per_second <= 0)
    return flow.bytes_per_second;
  const CopyQueue::Kind other_kind =
      flow.engine.kind == CopyQueue::Kind::Inbound ? CopyQueue::Kind::Outbound : CopyQueue::Kind::Inbound;
  for (const Flow &other : flows) {
    // A staged copy's host part leaves the link to the other direction.
    if (!streaming(other)) continue;
    if (other.engine.kind != other_kind || other.engine.device != flow.engine.device) continue;
    return duplex_rate(flow.bytes_per_second, other.bytes_per_second, duplex_bytes_per_second);
  }
  return flow.bytes_per_second;
}

/// Whether `flow`'s destination is still being allocated: its host time
/// left, or a growth of its device's pool, which returns only once the
/// copies issued before it on that device's outbound engine are done. (On
/// the H200 a prefetch's growth returned when the eviction beside it
/// ended, while the growths behind a prefetch on its own stream did not
/// wait for that prefetch: runtime_pools.hpp.)
bool allocating(const Flow &flow, std::span<const Flow> flows) {
  if (flow.host_left > 0) return true;
  if (!flow.growth_waits) return false;
  const CopyQueue outbound{CopyQueue::Kind::Outbound, flow.to.device()};
  return std::any_of(flows.begin(), flows.begin() + (&flow - flows.data()), [&](const Flow &other) {
    return other.issued && !other.done && other.engine == outbound;
  });
}

/// Whether `flow` is in its host part ahead of its engine: issued, its
/// destination allocated, the host part not yet done.
bool leading(const Flow &flow, std::span<const Flow> flows) {
  return flow.issued && flow.lead_left > 0 && !allocating(flow, flows);
}

/// Runs one window's copies from `begin`; returns when its last action committed.
double simulate_window(std::span<const TimelineStep> steps, std::span<const std::size_t> members,
                       double begin, const LinkModel &links, const TimelineOptions &options,
                       RuntimePools *pools, DmaHistory &history, std::uint32_t window, Timeline &out) {
  std::vector<Flow> flows;
  flows.reserve(members.size());
  for (std::size_t member : members) {
    const TimelineStep &step = steps[member];
    const SizeClass &size_class =
        links.curve(*link_between(step.source, step.destination)).class_for(step.logical_bytes);
    Flow flow;
    flow.step = member;
    flow.to = step.destination;
    flow.engine = *engine_of(step.source, step.destination);
    flow.latency_left = size_class.latency_seconds;
    flow.bytes_left = static_cast<double>(step.logical_bytes);
    flow.bytes_per_second = size_class.bytes_per_second;
    const bool staged = is_staged(step, options);
    flow.host_traffic = copy_host_traffic(step.source, step.destination, staged);
    flow.synchronous = runs_in_its_start(step, options);
    if (staged) split_staged(flow, step, links);
    // In plan order, as the runtime issues the window's copies.
    flow.dma_extra = history.copy(step.value, step.source, step.destination, links);
    flow.latency_left += flow.dma_extra.seconds();
    // The runtime allocates every destination of the window, in plan
    // order, before any of the window commits (and frees a source).
    if (pools) {
      flow.growth_waits = pools->grows_device_pool(step.destination, step.logical_bytes);
      flow.allocation = pools->allocate(step.destination, step.logical_bytes);
      // Made inside the copy, after the runtime issued it.
      if (staged) flow.staging = pools->staging_seconds();
      flow.host_left = flow.allocation + flow.staging;
    }
    flows.push_back(flow);
  }
  double now = begin;
  std::size_t next_issue = 0;
  for (;;) {
    // Copies are started in plan order, each once the one before it has
    // been allocated; a synchronous one holds the rest back until it is done.
    while (next_issue < flows.size() &&
           (next_issue == 0 || (!allocating(flows[next_issue - 1], flows) &&
                                (!flows[next_issue - 1].synchronous || flows[next_issue - 1].done)))) {
      flows[next_issue].issued = true;
      flows[next_issue].issued_at = now;
      ++next_issue;
    }
    for (Flow &flow : flows)
      if (flow.issued && !flow.allocated_at && !allocating(flow, flows)) flow.allocated_at = now;
    // An idle engine takes its oldest allocated copy (a staged one once
    // its host part ahead is done).
    for (Flow &flow : flows) {
      if (!flow.issued || flow.started || allocating(flow, flows) || flow.lead_left > 0) continue;
      const bool busy = std::any_of(flows.begin(), flows.end(), [&](const Flow &other) {
        return other.on_engine() && other.engine == flow.engine;
      });
      const bool queued_before =
          std::any_of(flows.begin(), flows.begin() + (&flow - flows.data()), [&](const Flow &other) {
            return other.issued && !other.started && other.engine == flow.engine;
          });
      if (busy || queued_before) continue;
      flow.started = true;
      flow.start = now;
    }
    // The rates of what moves bytes now: the streaming copies (each link's,
    // the duplex shared) and the staged copies' host parts, then the host
    // memory shared between them all. A host part's seconds pass at its
    // share of its own pace.
    std::vector<double> rates(flows.size(), 0.0), pace(flows.size(), 1.0);
    std::vector<unsigned> host_traffic(flows.size(), 0);
    std::vector<bool> leads(flows.size(), false);
    for (std::size_t k = 0; k < flows.size(); ++k) {
      const Flow &flow = flows[k];
      leads[k] = leading(flow, flows);
      if (streaming(flow)) {
        rates[k] = rate_of(flow, flows, links.duplex_bytes_per_second);
        host_traffic[k] = flow.host_traffic.transfer;
      } else if (leads[k] || tailing(flow)) {
        rates[k] = flow.host_part_bytes_per_second;
        host_traffic[k] = flow.host_traffic.host_part;
      }
    }
    std::vector<double> alone = rates;
    share_host_memory(rates, host_traffic, links.host_memory_bytes_per_second);
    for (std::size_t k = 0; k < flows.size(); ++k)
      if (!streaming(flows[k]) && alone[k] > 0) pace[k] = rates[k] / alone[k];
    // The next event: an allocation, a host part or a fixed cost ends, or
    // a copy's last byte arrives.
    double step_seconds = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < flows.size(); ++k) {
      const Flow &flow = flows[k];
      if (flow.issued && flow.host_left > 0) step_seconds = std::min(step_seconds, flow.host_left);
      if (leads[k]) step_seconds = std::min(step_seconds, flow.lead_left / pace[k]);
      if (tailing(flow))
        step_seconds = std::min(step_seconds, flow.tail_left / pace[k]);
      else if (!flow.started || flow.done)
        continue;
      else if (flow.latency_left > 0)
        step_seconds = std::min(step_seconds, flow.latency_left);
      else
        step_seconds = std::min(step_seconds, flow.bytes_left / rates[k]);
    }
    if (step_seconds == std::numeric_limits<double>::infinity()) break; // every copy done
    now += step_seconds;
    auto count_down = [](double &left, double passed) {
      // Within rounding of what passed: done.
      left = left <= passed * (1 + 1e-12) ? 0 : left - passed;
    };
    for (std::size_t k = 0; k < flows.size(); ++k) {
      Flow &flow = flows[k];
      if (leads[k]) count_down(flow.lead_left, step_seconds * pace[k]);
      if (flow.issued && flow.host_left > 0) count_down(flow.host_left, step_seconds);
      if (!flow.started || flow.done) continue;
      if (tailing(flow)) {
        count_down(flow.tail_left, step_seconds * pace[k]);
      } else if (flow.latency_left > 0) {
        count_down(flow.latency_left, step_seconds);
      } else {
        const double moved = rates[k] * step_seconds;
        // A copy whose remainder is within rounding of what moved is done.
        if (moved >= flow.bytes_left * (1 - 1e-12))
          flow.bytes_left = 0;
        else
          flow.bytes_left -= moved;
      }
      if (!flow.on_engine() && flow.tail_left == 0) {
        flow.done = true;
        flow.end = now;
      }
    }
  }
  // The runtime starts every copy of the window (allocating each
  // destination, a staged copy running to its end) before it commits the
  // first: no step commits before the last one was started.
  const Flow &last = flows.back();
  double committed = std::max(begin, last.synchronous ? last.end : last.issued_at + last.allocation);
  for (const Flow &flow : flows) {
    committed = std::max(committed, flow.end);
    StepTime &time = out.steps[flow.step];
    time.start_seconds = flow.issued_at;
    time.copy_start_seconds = flow.start;
    time.allocation_seconds = flow.allocation + flow.staging;
    time.copy_issue_seconds = flow.allocated_at.value_or(flow.issued_at) - flow.staging;
    time.end_seconds = flow.end;
    time.commit_seconds = committed;
    time.dma_extra = flow.dma_extra;
    time.engine = flow.engine;
    time.window = window;
    free_replicas(steps[flow.step], pools);
  }
  return committed;
}

} // namespace

bool is_staged_copy(Location from, Location to, std::uint64_t logical_bytes, const TimelineOptions &options) {
  const std::optional<LinkKind> link = link_between(from, to);
  return link && (*link == LinkKind::PageableToDevice || *link == LinkKind::DeviceToPageable) &&
         logical_bytes >= options.staged_min_bytes;
}

bool copy_runs_in_its_start(Location from, Location to, std::uint64_t logical_bytes,
                            const TimelineOptions &options) {
  return is_staged_copy(from, to, logical_bytes, options) || (!from.is_cuda() && !to.is_cuda());
}

Timeline predict_timeline(std::span<const TimelineStep> steps, const LinkModel &links,
                          const TimelineOptions &options) {
  Timeline out;
  out.steps.resize(steps.size());
  std::optional<RuntimePools> cold_pools;
  if (options.pools) cold_pools.emplace(links, *options.pools, options.resident_before);
  RuntimePools *pools = cold_pools ? &*cold_pools : nullptr;
  DmaHistory history(options.host_work_before ? DmaHistory::Before::HostWork : DmaHistory::Before::OwnDmas);
  double now = 0;
  OverlapWindow rule;
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < steps.size();) {
    const TimelineStep &step = steps[i];
    if (step.transfer == StepTransfer::Copy && step.source != step.destination) {
      // The window from here: the runtime's rule over the explained steps.
      rule.clear();
      members.clear();
      for (std::size_t j = i; j < steps.size() && steps[j].group == step.group; ++j) {
        const TimelineStep &next = steps[j];
        const OverlapCandidate candidate{next.transfer == StepTransfer::Copy &&
                                                 next.source != next.destination
                                             ? std::optional<Location>(next.source)
                                             : std::nullopt,
                                         next.value, next.destination, next.storage_bytes};
        if (!options.overlap && !members.empty()) break;
        if (!rule.admits(candidate, account_at_window_start(next, steps, members)) && !members.empty()) break;
        rule.add(candidate);
        members.push_back(j);
      }
      now = simulate_window(steps, members, now, links, options, pools, history, out.windows++, out);
      i += members.size();
      continue;
    }
    StepTime &time = out.steps[i];
    time.start_seconds = now;
    if (step.transfer == StepTransfer::Load) {
      // The source fills fresh storage at its location; a copy takes it on
      // to the destination and the temporary replica goes.
      time.source_load_seconds = links.source_fill_seconds(step.logical_bytes);
      double staging = 0; // made inside the copy, after the runtime issued it
      if (pools) {
        // Fresh pageable pages are faulted in by the source's own writes:
        // their cost is part of the fill, where the runtime measures it.
        const double source_block = pools->allocate(step.source, step.logical_bytes);
        (step.source == Location::pageable() ? time.source_load_seconds : time.allocation_seconds) +=
            source_block;
        if (step.destination != step.source) {
          time.allocation_seconds += pools->allocate(step.destination, step.logical_bytes);
          if (is_staged(step, options)) staging = pools->staging_seconds();
          time.allocation_seconds += staging;
          pools->free(step.source, step.logical_bytes);
        }
      }
      now += time.allocation_seconds + time.source_load_seconds;
      time.copy_issue_seconds = now - staging;
      time.copy_start_seconds = now;
      // The fill, then the copy if any (DmaHistory::load says what its DMA pays).
      time.dma_extra = history.load(step.value, step.source, step.destination, links);
      now += time.dma_extra.seconds() +
             links.load_transfer_seconds(step.source, step.destination, step.logical_bytes);
      time.engine = engine_of(step.source, step.destination);
    } else {
      time.copy_issue_seconds = time.copy_start_seconds = now;
    }
    free_replicas(step, pools);
    time.end_seconds = time.commit_seconds = now;
    ++i;
  }
  out.total_seconds = now;
  if (pools) {
    out.cold_allocations = pools->cold_allocations();
    out.allocation_seconds = pools->cold_seconds();
    out.device_peaks = pools->device_peaks();
  }
  return out;
}

} // namespace fhr

#include "fhr/model/timeline.hpp"

#include "fhr/model/copy_flows.hpp"
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

/// Every block the step frees goes back to the pools.
void free_replicas(const TimelineStep &step, RuntimePools *pools) {
  if (pools) step.freed.for_each([&](Location at) { pools->free(at, step.logical_bytes); });
}

bool is_staged(const TimelineStep &step, const TimelineOptions &options) {
  return is_staged_copy(step.source, step.destination, step.logical_bytes, options);
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

/// Runs one window's copies from `begin` on the copy engines
/// (fhr/model/copy_flows.hpp); returns when its last action committed.
double simulate_window(std::span<const TimelineStep> steps, std::span<const std::size_t> members,
                       double begin, const LinkModel &links, const TimelineOptions &options,
                       RuntimePools *pools, DmaHistory &history, std::uint32_t window, Timeline &out) {
  CopyFlows flows(begin, links.duplex_bytes_per_second, links.host_memory_bytes_per_second);
  struct Member {
    double allocation = 0; ///< the destination's allocation, of the copy's host time
    double staging = 0;    ///< a first staged copy's bounce buffers, of the same
    DmaExtra dma_extra;
  };
  std::vector<Member> costs(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    const TimelineStep &step = steps[members[k]];
    const bool staged = is_staged(step, options);
    // In plan order, as the runtime issues the window's copies.
    costs[k].dma_extra = history.copy(step.value, step.source, step.destination, staged, links);
    FlowSpec spec = copy_flow(step.source, step.destination, step.logical_bytes, staged,
                              costs[k].dma_extra.seconds(), links);
    // The runtime allocates every destination of the window, in plan
    // order, before any of the window commits (and frees a source).
    if (pools) {
      spec.growth_waits = pools->grows_device_pool(step.destination, step.logical_bytes);
      costs[k].allocation = pools->allocate(step.destination, step.logical_bytes);
      // Made inside the copy, after the runtime issued it.
      if (staged) costs[k].staging = pools->staging_seconds();
      spec.host_seconds = costs[k].allocation + costs[k].staging;
    }
    flows.add(spec);
  }
  flows.run_until_all_done();
  // The runtime starts every copy of the window (allocating each
  // destination, a staged copy running to its end) before it commits the
  // first: no step commits before the last one was started.
  const FlowTimes &last = flows.times(members.size() - 1);
  double committed =
      std::max(begin, flows.spec(members.size() - 1).synchronous ? last.end
                                                                 : last.issued_at + costs.back().allocation);
  for (std::size_t k = 0; k < members.size(); ++k) {
    const FlowTimes &flow = flows.times(k);
    // Each commits once it is done and the steps before it committed.
    committed = std::max(committed, flow.end);
    StepTime &time = out.steps[members[k]];
    time.start_seconds = flow.issued_at;
    time.copy_start_seconds = flow.start;
    time.allocation_seconds = costs[k].allocation + costs[k].staging;
    time.copy_issue_seconds = flow.allocated_at.value_or(flow.issued_at) - costs[k].staging;
    time.end_seconds = flow.end;
    time.commit_seconds = committed;
    time.dma_extra = costs[k].dma_extra;
    time.engine = flows.spec(k).engine;
    time.window = window;
    free_replicas(steps[members[k]], pools);
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

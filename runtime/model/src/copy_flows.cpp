#include "fhr/model/copy_flows.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace fhr {

FlowSpec copy_flow(Location from, Location to, std::uint64_t logical_bytes, bool staged, double extra_seconds,
                   const LinkModel &links) {
  const SizeClass &size_class = links.curve(*link_between(from, to)).class_for(logical_bytes);
  FlowSpec spec;
  spec.engine = *engine_of(from, to);
  spec.to = to;
  spec.latency_seconds = size_class.latency_seconds;
  spec.bytes = static_cast<double>(logical_bytes);
  spec.bytes_per_second = size_class.bytes_per_second;
  spec.host_traffic = copy_host_traffic(from, to, staged);
  // The runtime makes a staged copy and a copy between host locations
  // inside its start (copy_runs_in_its_start).
  spec.synchronous = staged || (!from.is_cuda() && !to.is_cuda());
  if (staged) {
    // The engine carries the DMA (the pinned link's curve); the rest of the
    // calibrated time is the host part, before the DMA into a device and
    // after it out of one, when the staged pipeline leaves the engine idle.
    const bool into_device = to.is_cuda();
    const LinkKind dma = into_device ? LinkKind::PinnedToDevice : LinkKind::DeviceToPinned;
    const SizeClass &dma_class = links.curve(dma).class_for(logical_bytes);
    const double staged_seconds = spec.latency_seconds + spec.bytes / spec.bytes_per_second;
    const double dma_seconds = dma_class.latency_seconds + spec.bytes / dma_class.bytes_per_second;
    // With no host part to spare the engine carries it all.
    if (dma_seconds < staged_seconds) {
      (into_device ? spec.lead_seconds : spec.tail_seconds) = staged_seconds - dma_seconds;
      spec.host_part_bytes_per_second = spec.bytes / (staged_seconds - dma_seconds);
      spec.latency_seconds = dma_class.latency_seconds;
      spec.bytes_per_second = dma_class.bytes_per_second;
    }
  }
  spec.latency_seconds += extra_seconds;
  return spec;
}

FlowSpec load_flow(Location from, Location to, std::uint64_t logical_bytes, bool staged, double extra_seconds,
                   const LinkModel &links) {
  const bool load_curve =
      from == Location::pageable() && to.is_cuda() && !links.load_pageable_to_device.classes.empty();
  const SizeClass &size_class =
      (load_curve ? links.load_pageable_to_device : links.curve(*link_between(from, to)))
          .class_for(logical_bytes);
  FlowSpec spec;
  spec.engine = *engine_of(from, to);
  spec.to = to;
  spec.latency_seconds = size_class.latency_seconds + extra_seconds;
  spec.bytes = static_cast<double>(logical_bytes);
  spec.bytes_per_second = size_class.bytes_per_second;
  spec.host_traffic = copy_host_traffic(from, to, staged);
  spec.synchronous = true;
  return spec;
}

CopyFlows::CopyFlows(double now, double duplex_bytes_per_second, double host_memory_bytes_per_second)
    : now_(now), duplex_bytes_per_second_(duplex_bytes_per_second),
      host_memory_bytes_per_second_(host_memory_bytes_per_second) {}

void CopyFlows::begin_batch(bool after_previous) {
  waits_from_ = waits_to_ = 0;
  if (after_previous) {
    waits_from_ = batch_start_;
    waits_to_ = flows_.size();
  }
  batch_start_ = flows_.size();
}

std::size_t CopyFlows::add(const FlowSpec &spec) {
  const std::size_t index = flows_.size();
  Flow flow;
  flow.spec = spec;
  if (index > batch_start_) flow.before_in_batch = index - 1; // batches are contiguous
  flow.waits_from = waits_from_;
  flow.waits_to = waits_to_;
  flow.host_left = spec.host_seconds;
  flow.lead_left = spec.lead_seconds;
  flow.tail_left = spec.tail_seconds;
  flow.latency_left = spec.latency_seconds;
  flow.bytes_left = spec.bytes;
  flows_.push_back(flow);
  live_.push_back(index);
  return index;
}

/// Its host time left, or a growth of its device's pool, which returns only
/// once the copies issued before it out of that device are done. (On the
/// H200 a prefetch's growth returned when the eviction beside it ended,
/// while the growths behind a prefetch on its own stream did not wait for
/// that prefetch: runtime_pools.hpp.)
bool CopyFlows::allocating(std::size_t index) const {
  const Flow &flow = flows_[index];
  if (flow.host_left > 0) return true;
  if (!flow.spec.growth_waits) return false;
  const CopyQueue outbound{CopyQueue::Kind::Outbound, flow.spec.to.device()};
  for (std::size_t other : live_) {
    if (other >= index) break;
    const Flow &earlier = flows_[other];
    if (earlier.times.issued && !earlier.times.done && earlier.spec.engine == outbound) return true;
  }
  return false;
}

bool CopyFlows::may_issue(std::size_t index) const {
  const Flow &flow = flows_[index];
  if (flow.before_in_batch) {
    const Flow &before = flows_[*flow.before_in_batch];
    if (!before.times.issued || allocating(*flow.before_in_batch)) return false;
    if (before.spec.synchronous && !before.times.done) return false;
  }
  for (std::size_t k = flow.waits_from; k < flow.waits_to; ++k)
    if (!flows_[k].times.done) return false;
  return true;
}

/// Issued, its destination allocated, its host part ahead not yet done.
bool CopyFlows::leading(std::size_t index) const {
  const Flow &flow = flows_[index];
  return flow.times.issued && flow.lead_left > 0 && !allocating(index);
}

/// Its link's bandwidth, scaled down while its device's other direction
/// streams too and both exceed the duplex figure.
double CopyFlows::rate_of(const Flow &flow) const {
  if (flow.spec.engine.kind == CopyQueue::Kind::HostThreads || duplex_bytes_per_second_ <= 0)
    return flow.spec.bytes_per_second;
  const CopyQueue::Kind other_kind = flow.spec.engine.kind == CopyQueue::Kind::Inbound
                                         ? CopyQueue::Kind::Outbound
                                         : CopyQueue::Kind::Inbound;
  for (std::size_t k : live_) {
    const Flow &other = flows_[k];
    // A staged copy's host part leaves the link to the other direction.
    if (!streaming(other)) continue;
    if (other.spec.engine.kind != other_kind || other.spec.engine.device != flow.spec.engine.device) continue;
    return duplex_rate(flow.spec.bytes_per_second, other.spec.bytes_per_second, duplex_bytes_per_second_);
  }
  return flow.spec.bytes_per_second;
}

bool CopyFlows::advance(double limit) {
  // Copies are issued in the order added, each once the one before it in
  // its batch allows (one pass: a copy issued here may let the next go).
  for (std::size_t k : live_)
    if (!flows_[k].times.issued && may_issue(k)) {
      flows_[k].times.issued = true;
      flows_[k].times.issued_at = now_;
    }
  for (std::size_t k : live_)
    if (flows_[k].times.issued && !flows_[k].times.allocated_at && !allocating(k))
      flows_[k].times.allocated_at = now_;
  // An idle engine takes its oldest allocated copy (a staged one once its
  // host part ahead is done).
  for (std::size_t k : live_) {
    Flow &flow = flows_[k];
    if (!flow.times.issued || flow.times.started || allocating(k) || flow.lead_left > 0) continue;
    const bool taken = std::any_of(live_.begin(), live_.end(), [&](std::size_t other) {
      const Flow &o = flows_[other];
      return (o.on_engine() && o.spec.engine == flow.spec.engine) ||
             (other < k && o.times.issued && !o.times.started && o.spec.engine == flow.spec.engine);
    });
    if (taken) continue;
    flow.times.started = true;
    flow.times.start = now_;
  }
  // The rates of what moves bytes now: the streaming copies (each link's,
  // the duplex shared) and the staged copies' host parts, then the host
  // memory shared between them all. A host part's seconds pass at its
  // share of its own pace.
  const std::size_t n = live_.size();
  std::vector<double> &rates = rates_, &pace = pace_, &alone = alone_;
  std::vector<unsigned> &host_traffic = host_traffic_;
  std::vector<char> &leads = leads_;
  rates.assign(n, 0.0);
  pace.assign(n, 1.0);
  host_traffic.assign(n, 0);
  leads.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Flow &flow = flows_[live_[i]];
    leads[i] = leading(live_[i]);
    if (streaming(flow)) {
      rates[i] = rate_of(flow);
      host_traffic[i] = flow.spec.host_traffic.transfer;
    } else if (leads[i] || tailing(flow)) {
      rates[i] = flow.spec.host_part_bytes_per_second;
      host_traffic[i] = flow.spec.host_traffic.host_part;
    }
  }
  alone = rates;
  share_host_memory(rates, host_traffic, host_memory_bytes_per_second_);
  for (std::size_t i = 0; i < n; ++i)
    if (!streaming(flows_[live_[i]]) && alone[i] > 0) pace[i] = rates[i] / alone[i];
  // The next event: an allocation, a host part or a fixed cost ends, or a
  // copy's last byte arrives.
  double step = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    const Flow &flow = flows_[live_[i]];
    if (flow.times.issued && flow.host_left > 0) step = std::min(step, flow.host_left);
    if (leads[i]) step = std::min(step, flow.lead_left / pace[i]);
    if (tailing(flow))
      step = std::min(step, flow.tail_left / pace[i]);
    else if (!flow.times.started || flow.times.done)
      continue;
    else if (flow.latency_left > 0)
      step = std::min(step, flow.latency_left);
    else
      step = std::min(step, flow.bytes_left / rates[i]);
  }
  const double room = limit - now_;
  if (!(step < room)) {
    if (room == std::numeric_limits<double>::infinity()) return false; // nothing left to happen
    step = room;
  }
  // Never past the limit, where the sum rounds up by an ulp.
  now_ = step == room ? limit : std::min(limit, now_ + step);
  const auto count_down = [](double &left, double passed) {
    // Within rounding of what passed: done.
    left = left <= passed * (1 + 1e-12) ? 0 : left - passed;
  };
  for (std::size_t i = 0; i < n; ++i) {
    Flow &flow = flows_[live_[i]];
    if (leads[i]) count_down(flow.lead_left, step * pace[i]);
    if (flow.times.issued && flow.host_left > 0) count_down(flow.host_left, step);
    if (!flow.times.started || flow.times.done) continue;
    if (tailing(flow)) {
      count_down(flow.tail_left, step * pace[i]);
    } else if (flow.latency_left > 0) {
      count_down(flow.latency_left, step);
    } else {
      const double moved = rates[i] * step;
      // A copy whose remainder is within rounding of what moved is done.
      if (moved >= flow.bytes_left * (1 - 1e-12))
        flow.bytes_left = 0;
      else
        flow.bytes_left -= moved;
    }
    if (!flow.on_engine() && flow.tail_left == 0) {
      flow.times.done = true;
      flow.times.end = now_;
    }
  }
  std::erase_if(live_, [&](std::size_t k) { return flows_[k].times.done; });
  return step < room;
}

void CopyFlows::run_until(double time) {
  if (time < now_) throw std::logic_error("CopyFlows::run_until: a time before now");
  if (live_.empty()) {
    now_ = time; // nothing to run: the engines idle until then
    return;
  }
  while (advance(time)) {
  }
}

double CopyFlows::run_until_done(std::size_t index) {
  while (!flows_[index].times.done)
    if (!advance(std::numeric_limits<double>::infinity()))
      throw std::logic_error("CopyFlows: a copy that never ends");
  return flows_[index].times.end;
}

double CopyFlows::run_until_all_done() {
  while (!live_.empty())
    if (!advance(std::numeric_limits<double>::infinity()))
      throw std::logic_error("CopyFlows: a copy that never ends");
  return now_;
}

} // namespace fhr

#pragma once
/// \file
/// The copy engines in time: a fluid simulation of copies on their queues,
/// the one engine that both time models run on. The predictor of `explain
/// --profile` (fhr/model/timeline.hpp) gives it the copies of one overlap
/// window at a time; the planner's schedule clock (planner/src/timeline.cpp)
/// gives it a whole schedule's, each phase's copies when the phase starts,
/// prefetches still streaming while steps compute. So a copy's fixed cost,
/// its DMA extra, a staged copy's host part and the two sharing rules are
/// one rule for both (docs/links.md describes the model).
///
/// A copy, once issued, allocates its destination on the host (its
/// `host_seconds`; a growth of a device's pool also waits for the copies
/// issued before it out of that device), runs a staged copy's host part
/// into a device (`lead_seconds`), waits for its engine (one copy at a
/// time, first come first served), pays its fixed cost there
/// (`latency_seconds`: the curve's and the DMA extra), streams its bytes
/// at its link's rate and, out of a device, runs a staged copy's host part
/// after it (`tail_seconds`). While an inbound and an outbound copy of one
/// device stream at once they share LinkModel::duplex_bytes_per_second
/// (duplex_rate); what moves through the host's memory at once shares
/// LinkModel::host_memory_bytes_per_second (share_host_memory), a host
/// part's seconds passing at its share of its own pace.
///
/// Copies are added in batches (one overlap window each): each is issued
/// once the one added before it in its batch has been issued and
/// allocated, and, when that one is `synchronous` (the runtime makes it
/// inside its start), done. A batch may wait for the one before it: its
/// copies are issued once every copy of that batch is done (the next
/// window of a phase, a load between two).
#include "fhr/model/link_model.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fhr {

/// One copy: what it costs before its engine, on it and after it.
struct FlowSpec {
  CopyQueue engine;
  /// Host time between its issue and the moment it may start: its
  /// destination's allocation, a first staged copy's bounce buffers.
  double host_seconds = 0;
  /// The allocation grows the pool of device `to`: it returns only once
  /// the copies issued before it out of that device are done.
  bool growth_waits = false;
  Location to;
  /// A staged copy's host part before its DMA (into a device) or after it
  /// (out of one), its seconds alone; its bytes over those seconds are its
  /// pace when it shares the host's memory.
  double lead_seconds = 0;
  double tail_seconds = 0;
  double host_part_bytes_per_second = 0;
  /// On its engine: the fixed cost, then the bytes at the rate alone.
  double latency_seconds = 0;
  double bytes = 0;
  double bytes_per_second = 1;
  /// Host memory per byte its engine's part and its host part move.
  CopyHostTraffic host_traffic;
  bool synchronous = false;
};

/// A copy over the link from `from` to `to` of `logical_bytes`: its curve's
/// fixed cost and rate, the DMA `extra` on its fixed cost, and, `staged`,
/// its calibrated time split into the DMA the engine carries (the pinned
/// link's curve) and the host part around it. Its engine and host traffic
/// are set; allocation and batch flags are the caller's.
FlowSpec copy_flow(Location from, Location to, std::uint64_t logical_bytes, bool staged, double extra_seconds,
                   const LinkModel &links);

/// A load's copy from its source's storage at `from` to `to`: the load's
/// curve (LinkModel::load_transfer_seconds) with the DMA `extra` on its
/// fixed cost, not split: a staged load's curve is measured whole. It runs
/// alone, as its own batch.
FlowSpec load_flow(Location from, Location to, std::uint64_t logical_bytes, bool staged, double extra_seconds,
                   const LinkModel &links);

/// When a copy ran: issued, allocated (its host time done), on its engine
/// (its host part ahead done and the engine free), ended.
struct FlowTimes {
  double issued_at = 0;
  std::optional<double> allocated_at;
  double start = 0;
  double end = 0;
  bool issued = false, started = false, done = false;
};

class CopyFlows {
public:
  /// Engines idle from `now`; the link model's sharing figures (0: none).
  CopyFlows(double now, double duplex_bytes_per_second, double host_memory_bytes_per_second);

  double now() const { return now_; }

  /// Room for `copies` copies in all (a schedule knows how many it issues).
  void reserve(std::size_t copies) { flows_.reserve(copies); }

  /// The next copy added starts a batch; `after_previous`: its copies are
  /// issued once the batch before it is done.
  void begin_batch(bool after_previous = false);
  /// Adds a copy to the current batch, at now() at the earliest; its index.
  std::size_t add(const FlowSpec &spec);

  /// Runs the copies until `time` (no earlier than now()).
  void run_until(double time);
  /// Runs the copies until copy `index` is done; returns its end.
  double run_until_done(std::size_t index);
  /// Runs every copy to its end; returns the time the last one ended (now()
  /// when none was left).
  double run_until_all_done();

  const FlowTimes &times(std::size_t index) const { return flows_[index].times; }
  const FlowSpec &spec(std::size_t index) const { return flows_[index].spec; }
  std::size_t size() const { return flows_.size(); }

private:
  struct Flow {
    FlowSpec spec;
    FlowTimes times;
    std::optional<std::size_t> before_in_batch; ///< the copy added before it in its batch
    std::size_t waits_from = 0, waits_to = 0;   ///< the copies it waits for to be done

    double host_left = 0, lead_left = 0, tail_left = 0, latency_left = 0, bytes_left = 0;
    bool on_engine() const { return times.started && !times.done && (latency_left > 0 || bytes_left > 0); }
  };

  bool allocating(std::size_t index) const;
  bool may_issue(std::size_t index) const;
  bool streaming(const Flow &flow) const { return flow.on_engine() && flow.latency_left <= 0; }
  bool tailing(const Flow &flow) const { return flow.times.started && !flow.times.done && !flow.on_engine(); }
  bool leading(std::size_t index) const;
  double rate_of(const Flow &flow) const;
  /// One event of the simulation, no later than `limit`; false when
  /// nothing was left to happen before it.
  bool advance(double limit);

  double now_;
  double duplex_bytes_per_second_, host_memory_bytes_per_second_;
  std::vector<Flow> flows_;
  /// Copies not yet done, in the order they were added.
  std::vector<std::size_t> live_;
  std::size_t batch_start_ = 0;
  std::size_t waits_from_ = 0, waits_to_ = 0; ///< the current batch's: the batch before it, or none
  /// advance()'s rates and shares of the live copies, kept between events.
  std::vector<double> rates_, pace_, alone_;
  std::vector<unsigned> host_traffic_;
  std::vector<char> leads_;
};

} // namespace fhr

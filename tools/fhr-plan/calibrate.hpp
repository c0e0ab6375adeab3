#pragma once
/// \file
/// `fhr-plan calibrate` (docs/links.md): times the runtime's own copies
/// through the public Manager API — moves between every pair of location
/// kinds by size, an eviction beside a prefetch in one plan phase, loads
/// from a source — and fits a link profile (fhr-links/2) to the medians.
/// On the CUDA backend it also times raw cudaMemcpyAsync copies of the same
/// sizes for comparison and the driver's fixed costs (allocations,
/// pinned registration, events).
///
/// The clock is a parameter: the wall clock for real hardware, or a
/// simulated clock that charges each operation what a stand-in link model
/// predicts, so that the whole pipeline (real manager calls on the
/// simulated device backend, medians, fit, file) runs deterministically in
/// CI and must give back the stand-in's figures at the measured sizes.

#include "fhr/model/link_model.hpp"
#include "fhr/runtime/manager.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fhr::calibrate {

/// What one timed call does, for a clock that predicts instead of measuring.
struct Operation {
  enum class Kind : std::uint8_t {
    Copy,       ///< a move from `from` to `to`
    Duplex,     ///< `bytes` out of `from` (a device) while `bytes` come in
    SourceLoad, ///< a source fills `bytes` at `to`
    /// The same into a block the pool does not keep: its pages faulted in
    /// first (LinkModel::pageable_first_touch_seconds_per_byte).
    ColdSourceLoad,
    /// A load from a source at `from` into `to`: the copy after the fill.
    LoadCopy,
    /// `bytes` from `from` to `to` (cuda:0 and pinned memory) while as many
    /// go between pageable and pinned memory the same way on the host copy
    /// threads (HostMemorySeries).
    BesideHostCopy,
    /// A move between pinned memory and a device in a state that pays one
    /// of the DMAs' extras beyond the curve (`dma_extra`; DmaExtrasSeries:
    /// into the device right after the processor wrote host memory, or
    /// either way after another value's load, its own bytes cold).
    CopyWithDmaExtra,
  } kind = Kind::Copy;
  Location from, to;
  std::uint64_t bytes = 0;
  /// Nanoseconds of the call that are not the operation's (a load's fill,
  /// from its TransitionReport), read once the call returned; a clock that
  /// measures leaves them out.
  const std::uint64_t *untimed_ns = nullptr;
  /// Kind::CopyWithDmaExtra's figure (an entry of kDmaExtraFigures).
  std::optional<double> LinkModel::*dma_extra = nullptr;
};

class Clock {
public:
  virtual ~Clock() = default;
  /// Runs `call` and returns the seconds it took.
  virtual double time(const std::function<void()> &call, const Operation &operation) = 0;
};

/// steady_clock around the call.
class WallClock final : public Clock {
public:
  double time(const std::function<void()> &call, const Operation &operation) override;
};

/// Runs the call, then charges what `stand_in` predicts for it.
class SimulatedClock final : public Clock {
public:
  explicit SimulatedClock(LinkModel stand_in) : stand_in_(std::move(stand_in)) {}
  double time(const std::function<void()> &call, const Operation &operation) override;

private:
  LinkModel stand_in_;
};

/// Raw copies of the same sizes beside the manager's (CUDA only).
class RawCopies {
public:
  virtual ~RawCopies() = default;
  /// Median seconds of `repetitions` copies; std::nullopt where not measured.
  virtual std::optional<double> median_seconds(Location from, Location to, std::uint64_t bytes,
                                               unsigned repetitions) = 0;
};

/// Costs beside copies, measured raw (CUDA) or taken from a stand-in.
struct FixedCosts {
  double device_allocation_seconds = 0;
  double device_growth_seconds_per_byte = 0;
  std::uint64_t device_pool_granule_bytes = 0;
  AllocationCost pinned_allocation; ///< blocks of a huge page or more
  double pinned_registration_seconds_per_byte = 0;
  double event_record_seconds = 0;
  double event_query_seconds = 0;
  std::optional<AllocationCost> small_pinned_allocation;
};

struct Options {
  std::uint64_t min_bytes = 4096;
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  unsigned repetitions = 5; ///< timed per size, after one untimed warm-up
  unsigned devices = 1;     ///< CUDA devices to use (two or more: device-device)
};

/// The bytes each host pool of the calibration's backend must be allowed
/// to keep so that no series finds its blocks gone. Pinned: the moves'
/// replicas, one of every size (below twice `max_bytes`), the duplex
/// window's two values and the two of the DMA beside a host copy (`max_bytes`
/// each) and the value of the DMA after host work (at most `max_bytes`):
/// seven times `max_bytes`. Pageable: the loads' temporaries and the
/// moves' replicas (below twice `max_bytes` each), the host copy's value,
/// the source series' value, the host work's fill and the staged copies'
/// value (`max_bytes` each at most): eight, the most of the two; the source
/// series' fresh blocks are made to miss the pool. Never below the backend's default,
/// which the default `--max-bytes` fits in; beyond it a pool that keeps
/// too little would have re-pinned or re-faulted blocks inside the timed
/// moves.
std::uint64_t host_pool_bytes(const Options &options, std::uint64_t backend_default);

/// One row of the comparison table.
struct Row {
  Location from, to;
  LinkKind link;
  std::uint64_t bytes = 0;
  double manager_seconds = 0; ///< median
  std::optional<double> raw_seconds;
  double predicted_seconds = 0; ///< what the fitted profile gives back
};

/// A DMA beside a host copy (HostMemorySeries): the medians of both
/// windows, and what the fitted profile predicts for them.
struct HostMemoryWindows {
  std::uint64_t bytes = 0;
  double out_seconds = 0, in_seconds = 0;
  double out_predicted_seconds = 0, in_predicted_seconds = 0;
  /// The windows did not share the host's memory at this size, and the
  /// default profile's figure (binding only at larger sizes) was kept.
  bool kept_default = false;
  /// The windows took longer than the rule can predict with any figure:
  /// the profile has the figure of the most sharing it can express.
  bool beyond_rule = false;
};

struct Result {
  LinkModel model;
  std::vector<Row> rows;
  /// Loads from a source in pageable memory into cuda:0, their fill left
  /// out (LinkModel::load_pageable_to_device): link PageableToDevice.
  std::vector<Row> load_rows;
  std::vector<LinkKind> kept_from_default; ///< links this machine could not measure
  /// The eviction beside a prefetch at the largest size: measured and
  /// predicted by the fitted profile (the timeline predictor).
  double duplex_seconds = 0, duplex_predicted_seconds = 0;
  double duplex_fastest_seconds = 0, duplex_slowest_seconds = 0; ///< the samples' range
  std::uint64_t duplex_bytes = 0;
  HostMemoryWindows host_memory;
  /// The moves of DmaExtrasSeries' value between pinned memory and cuda:0,
  /// the medians: into the device straight after its own round trip, after
  /// the processor filled host memory, and after another value's load;
  /// out of it straight after its move in, after another value's load, and
  /// straight after its move in after host work.
  std::uint64_t dma_extras_bytes = 0;
  double own_in_seconds = 0, after_host_work_seconds = 0, cold_in_seconds = 0;
  double own_out_seconds = 0, cold_out_seconds = 0, follow_on_out_seconds = 0;
  /// The second value's staged copies from pageable memory into cuda:0, of
  /// `staged_bytes` (0: not measured, --max-bytes below the staging
  /// threshold): straight after its own move out, and after that and a
  /// fill of other memory.
  std::uint64_t staged_bytes = 0;
  double staged_own_in_seconds = 0, staged_after_host_work_seconds = 0;
  /// The host work before the DMAs: a source's fill of this many bytes of
  /// pageable memory (the other value's load fills as many), and its median.
  std::uint64_t host_work_bytes = 0;
  double host_work_fill_seconds = 0;
};

/// Measures on `manager` (fresh: it adopts and frees its own values).
Result calibrate(Manager &manager, Clock &clock, const Options &options, const FixedCosts &fixed,
                 RawCopies *raw, const LinkModel &defaults);

/// The window of an eviction (device -> pinned) beside a prefetch (pinned
/// -> device) of `bytes` each, as the predictor sees it.
double predict_duplex(const LinkModel &links, Location device, std::uint64_t bytes);

/// The window of a DMA between `device` and pinned memory (out of the
/// device, or into it) beside a host copy of as many bytes between pageable
/// and pinned memory the same way, as the predictor sees it: after the
/// processor's work (other series' host copies before the window out of
/// the device, its own host copy before the window into it).
double predict_beside_host_copy(const LinkModel &links, Location device, std::uint64_t bytes,
                                bool out_of_device);

/// The table `calibrate` prints: per link and size, the manager's median,
/// the raw copy and their ratio, and the fitted profile's figure.
std::string result_text(const Result &result);

} // namespace fhr::calibrate

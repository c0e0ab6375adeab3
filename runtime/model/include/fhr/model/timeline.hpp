#pragma once
/// \file
/// Predicted time: when each step of a plan or program runs, on which copy
/// engine, and how long the whole takes, under a link model
/// (fhr/model/link_model.hpp) and the runtime's overlap rule
/// (fhr/model/overlap_window.hpp). `explain --profile`, its pictures,
/// `run`'s EXPLAIN ANALYZE and `calibrate` use this one predictor. Its
/// windows run on the copy engines of fhr/model/copy_flows.hpp, which the
/// planner's schedule clock (planner/src/timeline.cpp) runs a whole
/// schedule on, with the same windows (the verifier's, by the same rule),
/// so the two give the same total, loads' fills aside, on a printed
/// program whose steps compute for no time.
/// docs/links.md describes the model.
///
/// The runtime overlaps the copies of a window: they start together in
/// plan order (an engine carries one copy at a time, so copies on one
/// engine queue), each waits for its copy and commits in plan order, and
/// the next step starts once the window's last action committed. A staged
/// pageable <-> device copy (TimelineOptions::staged_min_bytes and more)
/// and a copy between host locations run inside their start, so the
/// copies after them start once they finished. A staged copy holds its
/// engine only for its DMA (the pinned link's time for its bytes): the
/// rest of its calibrated time is the host's part, before the DMA into a
/// device and after it out of one.
/// While an inbound and an outbound copy of one device stream at once they
/// share LinkModel::duplex_bytes_per_second in proportion to their own
/// bandwidths. What moves through the host's memory at once shares
/// LinkModel::host_memory_bytes_per_second by the bytes each reads and
/// writes there (share_host_memory): a host copy, a DMA between the host
/// and a device, and a staged copy's host part (docs/links.md). Every other step runs alone: a load fills
/// storage at the value's source location (LinkModel::source_load_bytes_per_second) and copies it to the
/// destination; drops, discards, no-ops, reservations and failures take no time.
///
/// With TimelineOptions::pools the predictor also charges what the CUDA
/// backend's cold pools cost (fhr/model/runtime_pools.hpp): a step's
/// destination is allocated on the host when the step starts, before its
/// copy can start, and the runtime starts the next copy of a window only
/// after that allocation. A step starts when the runtime starts it (its
/// allocation first, then its copy, which may wait for its engine): the
/// span the runtime measures (`TransitionReport::started_at_ns`).

#include "fhr/model/dma_history.hpp"
#include "fhr/model/link_model.hpp"
#include "fhr/model/location_set.hpp"
#include "fhr/model/runtime_pools.hpp"
#include "fhr/model/state.hpp"
#include "fhr/model/step_transfer.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fhr {

/// One explained step, as the predictor needs it.
struct TimelineStep {
  /// Steps of one group (one phase of one plan run, one `actions` list)
  /// may share a window; a window never spans two groups.
  std::uint32_t group = 0;
  StepTransfer transfer = StepTransfer::None;
  /// A move: the copy's source replica is freed when the step commits.
  bool frees_source = false;
  ValueId value = 0;
  Location source;
  Location destination;
  /// What the step charges (the budget rule of its window).
  std::uint64_t storage_bytes = 0;
  /// What the runtime allocates, fills and copies: a replica the manager
  /// makes is the value's logical size (its storage size is a charge only),
  /// so a step's copy time, its pool blocks and the warm-up that reserves
  /// them go by these bytes.
  std::uint64_t logical_bytes = 0;
  /// The destination's account just before this step in plan order (the
  /// explained charge there and its budget): the window's budget rule.
  LocationAccount destination_account;
  /// Where the step frees the value's replicas (a move's source, a drop, a
  /// discard): their blocks go back to the pools (TimelineOptions::pools).
  LocationSet freed;
};

/// A plain copy of `bytes` (charged and copied alike) of `value` from `from`
/// to `to`, in window group `group`: a move when `frees_source` (its source
/// replica freed, and its block back to the pools), else a copy that keeps
/// it. The one way the tools and tests write such a step by hand; the
/// explained steps of a plan come from the explain report instead.
TimelineStep copy_step(ValueId value, Location from, Location to, std::uint64_t bytes,
                       bool frees_source = false, std::uint32_t group = 0);

struct TimelineOptions {
  /// The backend has separate copy engines (the CUDA backend): windows
  /// overlap. Without, every step runs after the previous one finished.
  bool overlap = true;
  /// Pageable <-> device copies of at least this many bytes are staged
  /// through pinned bounce buffers inside their start (the CUDA backend).
  std::uint64_t staged_min_bytes = std::uint64_t{4} << 20;
  /// Charge allocations from the CUDA backend's pools, cold at the first
  /// step (a fresh backend, as `fhr-plan run --backend cuda` has); none
  /// charged without (pools kept warm: the steady state).
  std::optional<PoolOptions> pools;
  /// With `pools`: the logical bytes the backend holds at each location
  /// (by Location::index()) before the first step, the replicas resident
  /// before it (setup's). A device's pool holds them: its growths count
  /// from them (explain JSON's `resident_logical_before_bytes`).
  std::array<std::uint64_t, Location::kCount> resident_before{};
  /// The processor wrote host memory before the first step (`fhr-plan run`
  /// fills the setup's values before each run): each device's first DMA
  /// in pays LinkModel::dma_after_host_work_seconds and every value is cold
  /// (fhr/model/dma_history.hpp). Without: the steps follow their own
  /// values' DMAs alone (the calibration's windows).
  bool host_work_before = true;
};

/// Whether the runtime stages a copy of `logical_bytes` from `from` to `to`
/// through its pinned bounce buffers: pageable <-> device, at least
/// TimelineOptions::staged_min_bytes.
bool is_staged_copy(Location from, Location to, std::uint64_t logical_bytes, const TimelineOptions &options);

/// Whether the runtime does the copy inside its start, before it starts
/// the next copy of its window: a staged copy, and a copy between two host
/// locations (a memcpy, on the copy threads from 4 MiB up). (A
/// device-to-device copy without peer access is one too; the link model
/// has no figure for peer access and times every peer copy as a DMA.)
bool copy_runs_in_its_start(Location from, Location to, std::uint64_t logical_bytes,
                            const TimelineOptions &options);

/// When one step runs. A step that moves nothing starts and ends at once.
struct StepTime {
  /// When the runtime starts the step (allocation first, then its copy).
  double start_seconds = 0;
  /// When its engine starts carrying its copy (after its allocation, a
  /// staged copy's host part into a device, and any copy ahead of it on
  /// the same engine); start_seconds for other steps.
  double copy_start_seconds = 0;
  /// Host time its destination's allocation (and a first staged copy's
  /// staging buffers) cost; 0 without TimelineOptions::pools.
  double allocation_seconds = 0;
  /// When the runtime issues its copy: its destination allocated (a device
  /// pool's growth that waits for the copies out of the device included), a
  /// load's source filled; the staging buffers a first staged copy makes
  /// come after, inside the copy. The counterpart of the runtime's
  /// `TransitionReport::copy_issued_at_ns`.
  double copy_issue_seconds = 0;
  /// A load: the time the value's source takes to fill its storage
  /// (LinkModel::source_load_bytes_per_second), before its copy starts; 0
  /// for other steps. The loader's time, not a link's.
  double source_load_seconds = 0;
  /// Of its copy's time, what its DMA between pinned memory and a device
  /// pays beyond its curve for the state it meets, and that state
  /// (fhr/model/dma_history.hpp): the device's first DMA in after the
  /// processor's work on host memory (LinkModel::dma_after_host_work_seconds),
  /// a value whose bytes have not crossed the device's link since that work
  /// (LinkModel::dma_cold_value_seconds), the value's DMA straight after its
  /// own that met one of those (LinkModel::dma_follow_on_seconds), or a
  /// staged copy into a device after the processor's work on other values'
  /// bytes (LinkModel::staged_after_host_work_seconds); none for other
  /// steps, and zero for profiles without the figure.
  DmaExtra dma_extra;
  /// When its bytes are in place (its copy finished); the step commits at
  /// `commit_seconds`, once the steps before it in its window committed.
  double end_seconds = 0;
  double commit_seconds = 0;
  /// The engine that carries its copy (the device engine for a load's copy).
  std::optional<CopyQueue> engine;
  /// Index of its overlap window (windows of a single copy included), for
  /// steps that copy; std::nullopt otherwise.
  std::optional<std::uint32_t> window;
};

struct Timeline {
  std::vector<StepTime> steps; ///< one per input step
  double total_seconds = 0;    ///< when the last step committed
  std::uint32_t windows = 0;   ///< windows formed (of one copy or more)
  /// With TimelineOptions::pools: the allocations the cold pools could not
  /// serve (what a warm-up reserves ahead), and the host time they cost
  /// (fresh pageable pages included, which a step's fill pays).
  std::vector<ColdAllocation> cold_allocations;
  double allocation_seconds = 0;
  /// With TimelineOptions::pools: the most each device's pool held at once.
  DevicePeaks device_peaks{};
};

/// Predicts the time of `steps`, in plan order, from time 0.
Timeline predict_timeline(std::span<const TimelineStep> steps, const LinkModel &links,
                          const TimelineOptions &options = {});

/// A readable name of an engine: "cuda:0 in", "cuda:0 out", "host copy threads".
std::string engine_name(const CopyQueue &engine);

} // namespace fhr

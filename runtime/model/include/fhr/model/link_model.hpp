#pragma once
/// \file
/// How long a copy between two locations takes, and which engine carries
/// it: the one link model that `explain` time predictions, the planner's
/// prefetch schedule and `fhr-plan calibrate` share. A profile is measured
/// per machine (`fhr-plan calibrate`, JSON schema `fhr-links/2`,
/// docs/links.md); a default measured on an H200 ships with the project.
///
/// A copy of `n` bytes over a link costs `latency + n / bandwidth` of the
/// size class `n` falls in (classes ascend by their upper bound; the last
/// one has none). That is what the runtime does: a copy is one
/// cudaMemcpyAsync (or one staged pipeline, or one host memcpy), and its
/// fixed cost (submission, synchronisation, small-block allocation) does
/// not depend on the size while its streaming part does.

#include "fhr/model/huge_pages.hpp"
#include "fhr/model/location.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fhr {

/// The copy paths of the runtime, by the kinds of their endpoints. The two
/// host directions are apart: a memcpy into fresh pageable pages faults
/// them in, and before the host copier's streaming stores ran at a third of
/// one into the pinned pool at 1 GiB on the H200 machine (docs/benchmarks.md;
/// within 3% of each other in the shipped merge of 2026-12-04).
enum class LinkKind : std::uint8_t {
  PageableToPinned, ///< memcpy on host copy threads into the pinned pool
  PinnedToPageable, ///< memcpy on host copy threads into pageable pages
  PinnedToDevice,   ///< DMA on the device's inbound copy engine
  DeviceToPinned,   ///< DMA on the device's outbound copy engine
  PageableToDevice, ///< staged through pinned bounce buffers (host threads + inbound engine)
  DeviceToPageable, ///< staged the other way (outbound engine + host threads)
  DeviceToDevice,   ///< peer copy between two devices
};
inline constexpr std::size_t kLinkKindCount = 7;

/// The stable name used in profiles and outputs: "pageable-pinned", "pinned-device", ...
std::string_view link_kind_name(LinkKind kind);
std::optional<LinkKind> parse_link_kind(std::string_view name);

/// The link a copy from `from` to `to` takes; std::nullopt for a copy that
/// never happens (a location to itself).
std::optional<LinkKind> link_between(Location from, Location to);

/// The hardware queue a copy occupies while it runs (the model's name for a
/// DMA engine; the runtime's `CopyEngine` is the interface that issues the
/// copies). Copies on different queues run at the same time (the runtime's
/// overlap windows); copies on one queue run one after another.
struct CopyQueue {
  enum class Kind : std::uint8_t {
    Inbound,     ///< into `device` (host -> device and peer copies into it)
    Outbound,    ///< out of `device` to the host
    HostThreads, ///< host memcpy threads (pageable <-> pinned)
  } kind = Kind::HostThreads;
  unsigned device = 0; ///< for Inbound and Outbound
  friend bool operator==(const CopyQueue &, const CopyQueue &) = default;
};
/// The engine that carries a copy; staged pageable copies are counted on
/// their device engine, which carries their DMA (the time predictor leaves
/// it free during their host part).
std::optional<CopyQueue> engine_of(Location from, Location to);

/// One size class of a link: copies of at most `max_bytes` (no bound for the
/// last class) cost `latency_seconds + bytes / bytes_per_second`.
struct SizeClass {
  std::optional<std::uint64_t> max_bytes;
  double latency_seconds = 0;
  double bytes_per_second = 1;
};

/// One measurement behind a curve: the median time of copies of `bytes`.
struct LinkSample {
  std::uint64_t bytes = 0;
  double seconds = 0;
};

struct LinkCurve {
  std::vector<SizeClass> classes; ///< ascending max_bytes, the last unbounded
  /// The class a copy of `bytes` falls in; \pre !classes.empty().
  const SizeClass &class_for(std::uint64_t bytes) const;
  double seconds(std::uint64_t bytes) const;
};

/// A cost per allocated block and per byte of it.
struct AllocationCost {
  double seconds = 0;
  double seconds_per_byte = 0;
  double of(std::uint64_t bytes) const { return seconds + seconds_per_byte * static_cast<double>(bytes); }
};

struct LinkModel {
  /// Where it was measured ("NVIDIA H200 (driver 580.159.04)") and when.
  std::string machine;
  std::string measured;
  std::array<LinkCurve, kLinkKindCount> links;
  /// Per link, the medians its classes were fitted to (empty for a link
  /// not measured, or a profile written by hand): ascending bytes; kept so
  /// that a profile shows how well its fit holds.
  std::array<std::vector<LinkSample>, kLinkKindCount> samples;
  /// Aggregate bandwidth of one device's inbound and outbound engines
  /// running at once (less than twice one direction: they share PCIe, and
  /// the host's memory, which this figure then already counts for them).
  double duplex_bytes_per_second = 0;
  /// The host memory's bandwidth shared by the copies that stream through
  /// it at once (share_host_memory). 0: not shared, as profiles made before
  /// it was measured (`calibrate`: a DMA beside a host copy, out of a
  /// device and into it, docs/links.md).
  double host_memory_bytes_per_second = 0;
  /// Fixed costs the runtime pays beside copies.
  /// A fresh stream-ordered pool block, and per byte the pool grows by:
  /// the allocation and the extra time of the first copy into newly mapped
  /// memory (`calibrate`, docs/links.md).
  double device_allocation_seconds = 0;
  double device_growth_seconds_per_byte = 0;
  /// The unit a device's stream-ordered pool reserves memory in (the
  /// driver's; 32 MiB on the H200's): the pool's reservation is its peak
  /// use rounded up to whole units, and a growth costs the units it adds
  /// (fhr/model/runtime_pools.hpp). 0: by the byte, as profiles made
  /// before it was measured.
  std::uint64_t device_pool_granule_bytes = 0;
  double pageable_first_touch_seconds_per_byte = 0; ///< faulting in fresh pageable pages
  /// A cold pinned block of kHugePageBytes or more as the backend's pinned
  /// pool makes it (huge pages registered with the driver, or cudaHostAlloc
  /// with them off), its first copy's extra included: a fixed part and a
  /// rate. The fixed part is what faulting in on several threads leaves
  /// of a small block's cost (a 32 MiB staging buffer is 16 pages, one
  /// round of faults on the H200's threads, as a 256 MiB block's 128 are
  /// eight). Absent in profiles made before it was measured, whose rate
  /// is a line through the origin.
  std::optional<double> pinned_allocation_fixed_seconds;
  double pinned_allocation_seconds_per_byte = 0;
  /// Cold pinned blocks under kHugePageBytes, which are cudaHostAlloc
  /// blocks whatever the huge-page setting: the mean over blocks kept alive,
  /// as the pinned pool keeps them, a fixed part and a rate (the driver
  /// carves them from pinned memory it maps in larger pieces: most come
  /// cheap, every few pays for a new piece). Absent in profiles made before
  /// they were measured: such blocks then cost
  /// pinned_allocation_seconds_per_byte per byte (the large blocks' rate,
  /// without their fixed part).
  std::optional<AllocationCost> small_pinned_allocation;
  /// What making a cold pinned block of `bytes` costs (the figures above).
  double pinned_allocation_seconds(std::uint64_t bytes) const;
  /// What a DMA into a device takes beyond its link's curve when it is the
  /// device's first DMA in since the processor's own work on host memory
  /// (dma_history.hpp says what counts). The curves are measured on
  /// copies that follow their own round trip; on the H200 machine such a
  /// copy took 25-55 µs more in the copy at 8 to 120 MiB alike after a
  /// source's fill, a host copy or the setup (docs/links.md). Absent in
  /// profiles made before it was measured: no extra.
  std::optional<double> dma_after_host_work_seconds;
  /// What a DMA between pinned memory and a device takes beyond its link's
  /// curve when its value's bytes have not crossed the link between the
  /// host and that device since the processor last worked on host memory
  /// (dma_history.hpp says what counts). The curves are measured on values
  /// that have: on the H200 machine a 10 MiB ciphertext's move either way
  /// after 120 MiB key loads took 9-33 µs more, straight after another
  /// value's round trip nothing (docs/links.md). The first DMA into a device after such work pays
  /// dma_after_host_work_seconds instead, which is measured on a value the
  /// work left cold. Absent in profiles made before it was measured: no
  /// extra.
  std::optional<double> dma_cold_value_seconds;
  /// What a DMA between pinned memory and a device takes beyond its link's
  /// curve when it follows, with no other DMA of that device between, its
  /// own value's DMA that met the state of one of the two extras above
  /// (dma_history.hpp): on the H200 machine a value's move out straight
  /// after such a move in took 4-11 µs more in the median of each of four
  /// calls, its later round trips nothing (docs/links.md). Absent in
  /// profiles made before it was measured: no extra.
  std::optional<double> dma_follow_on_seconds;
  /// What a staged copy from pageable memory into a device takes beyond
  /// its link's curve when it is the device's first DMA in since the
  /// processor's work on host memory other than its own value's
  /// (dma_history.hpp says what counts). Its curve is measured after the
  /// value's own host copy; on the H200 machine the first staged copy after
  /// a run's setup took 51-155 µs more at 8-15 MiB in two calls and 4-21%
  /// more from 16 MiB, and `inference`'s 15 MiB weight +88.8 µs
  /// (docs/benchmarks.md, thirtieth wave). Absent in profiles made before
  /// it was measured: no extra.
  std::optional<double> staged_after_host_work_seconds;
  double event_record_seconds = 0;
  double event_query_seconds = 0;
  /// How fast a value's source fills fresh host storage when the runtime
  /// reconstructs it (the synthetic sources of `fhr-plan run`; a real
  /// evaluator's loader may be slower).
  double source_load_bytes_per_second = 10e9;
  /// Cost of registering existing host memory as pinned (cudaHostRegister).
  double pinned_registration_seconds_per_byte = 0;
  /// A load's copy from pageable memory to a device: its source has just
  /// filled the storage (on one thread, the copy threads idle), and the
  /// staged copy that follows ran 4-20% slower than the calibrated copy of
  /// resident bytes on the H200 machine. Measured by `calibrate` (loads,
  /// their fill left out); empty: the pageable-device curve.
  LinkCurve load_pageable_to_device;
  std::vector<LinkSample> load_samples; ///< what it was fitted to

  /// Seconds a load's copy from `from` to `to` takes once its source has
  /// filled the storage at `from` (transfer_seconds but for the curve above).
  double load_transfer_seconds(Location from, Location to, std::uint64_t bytes) const;
  /// Seconds a value's source takes to fill `bytes` of fresh host storage
  /// (a load's first part, on the processor).
  double source_fill_seconds(std::uint64_t bytes) const {
    return static_cast<double>(bytes) / source_load_bytes_per_second;
  }

  const LinkCurve &curve(LinkKind kind) const { return links[static_cast<std::size_t>(kind)]; }
  /// Seconds a copy of `bytes` from `from` to `to` takes alone; 0 for a
  /// location to itself.
  double transfer_seconds(Location from, Location to, std::uint64_t bytes) const;

  /// The profile measured on the project's H200 machine (docs/links.md).
  static const LinkModel &h200();
};

/// A profile's figure in microseconds that profiles made before it was
/// measured lack: absent, not measured (0 is a measurement).
struct OptionalMicroseconds {
  const char *key;
  std::optional<double> LinkModel::*field;
};

/// The DMAs' extras beyond their curves (fhr/model/dma_history.hpp):
/// written, read and merged alike.
inline constexpr OptionalMicroseconds kDmaExtraFigures[] = {
    {"dma_after_host_work_us", &LinkModel::dma_after_host_work_seconds},
    {"dma_cold_value_us", &LinkModel::dma_cold_value_seconds},
    {"dma_follow_on_us", &LinkModel::dma_follow_on_seconds},
    {"staged_after_host_work_us", &LinkModel::staged_after_host_work_seconds},
};

/// The rate of a copy streaming at `own_bytes_per_second` while its
/// device's opposite direction streams at `other_bytes_per_second`: the
/// two share `duplex_bytes_per_second` in proportion to their own rates
/// when together they would exceed it (no limit when it is 0). The one
/// duplex rule of the time predictor and the planner's schedule clock.
double duplex_rate(double own_bytes_per_second, double other_bytes_per_second,
                   double duplex_bytes_per_second);

/// Bytes of host memory a copy from `from` to `to` reads and writes per byte
/// it copies: 2 between two host locations (a memcpy), 1 between the host
/// and a device (a DMA; of a staged copy, its DMA part: copy_host_traffic
/// adds its host part), 0 between two devices.
unsigned host_memory_traffic(Location from, Location to);

/// The phases of a copy that move bytes through the host's memory, as bytes
/// of it read and written per byte copied: the one description the time
/// predictor and the planner's schedule clock count a copy's host memory by.
struct CopyHostTraffic {
  /// The copy its engine carries: its DMA, or its memcpy between two host
  /// locations (host_memory_traffic).
  unsigned transfer = 0;
  /// A staged copy's host part: the memcpy between pageable memory and a
  /// pinned bounce buffer, before its DMA into a device or after it out of
  /// one; 0 for a copy that is not staged.
  unsigned host_part = 0;
  /// Both phases, for a clock that runs the copy at one average rate.
  unsigned total() const { return transfer + host_part; }
};

/// The host memory traffic of a copy from `from` to `to`. `staged`: whether
/// the runtime stages a pageable <-> device copy of its size through pinned
/// bounce buffers (the CUDA backend, from TimelineOptions::staged_min_bytes
/// up); a copy over any other link has no host part whatever it says.
CopyHostTraffic copy_host_traffic(Location from, Location to, bool staged);

/// The rates of copies streaming at once, `rates[k]` at `traffic[k]` bytes
/// of host memory per byte (a phase of copy_host_traffic), once they share
/// `host_memory_bytes_per_second`: while two or more of them
/// touch the host and together would move more through its memory, each
/// is scaled down in proportion. A figure below the largest single demand
/// counts as that demand, so that a copy alone is never slowed; no limit
/// applies when the figure is 0. The one host memory rule of the time
/// predictor and the planner's schedule clock. \pre the spans' sizes agree.
void share_host_memory(std::span<double> rates, std::span<const unsigned> traffic,
                       double host_memory_bytes_per_second);

/// The JSON profile (schema "fhr-links/2"), and back. Parsing checks every
/// field and throws std::invalid_argument naming the offending JSON path.
/// A profile of the older schema "fhr-links/1" (one `host-host` link for
/// both host directions) still loads: its curve and samples serve both.
std::string link_model_to_json(const LinkModel &model);
LinkModel link_model_from_json(std::string_view text);

} // namespace fhr

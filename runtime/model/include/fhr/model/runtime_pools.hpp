#pragma once
/// \file
/// What allocating a step's destination costs on the CUDA backend, as the
/// time predictor (fhr/model/timeline.hpp) sees it: the runtime's pools
/// from cold (a fresh backend, as every run of `fhr-plan run` has). The
/// figures are the calibrated ones of the link profile (LinkModel):
///
/// - pinned: the backend keeps freed pinned blocks by size, up to
///   `pinned_pool_bytes` (runtime/manager/.../block_pool.hpp), sizes of
///   kHugePageBytes and more rounded up to whole huge pages when it makes
///   them of huge pages (PoolOptions::pinned_huge_pages); a block of a
///   size it keeps costs nothing, any other is a fresh block:
///   `LinkModel::pinned_allocation_seconds` (huge pages registered with the
///   driver from kHugePageBytes up, a `cudaHostAlloc` below);
/// - a device: the stream-ordered pool keeps what it ever reserved (release
///   threshold: everything), and reserves by whole units of the profile's
///   `device_pool_granule_bytes`: its reservation is its peak use rounded
///   up to them (bench/pool_growth.cpp on the H200: 32 MiB units; a 2 MiB
///   block reserves 32 MiB, 124 MiB beside nothing else 128 MiB, 10 MiB
///   more 160 MiB), and the backend's start (kDevicePoolStartBytes)
///   reserves the first. An allocation that fits in what it reserved and
///   is not in use costs nothing, one that makes it grow costs
///   `device_allocation_seconds` and `device_growth_seconds_per_byte` per
///   byte of the units it adds, and
///   does not return before the copies in flight on the device's outbound
///   copy engine are done (measured on the H200: in three runs of
///   `evict-while-prefetch.fhr` from cold pools, the first prefetch's
///   growth returned when the eviction beside it ended, 2.3 ms later, and
///   the next prefetches' growths did not wait for the first prefetch,
///   whose copy ran on their own stream);
/// - the first staged pageable <-> device copy makes the two pinned bounce
///   buffers of `staging_chunk_bytes` each.
///
/// - pageable: the backend keeps freed blocks of 2 MiB and more by size,
///   their pages faulted in, up to `pageable_pool_bytes`, by size rounded up
///   to whole 2 MiB pages; a block of a size it keeps costs nothing, any other
///   `pageable_first_touch_seconds_per_byte` per byte (the kernel faulting and zeroing its pages at first
///   use); smaller pageable storage costs nothing.
///
/// Every allocation the cold pools could not serve is recorded
/// (cold_allocations()), and the most each device's pool held
/// (device_peaks()): what a warm-up must reserve ahead for the same
/// steps to find the pools warm (`fhr-plan run --warm-up`, through warm_up_blocks()). A device's pool
/// starts holding the replicas resident there before the steps (setup's device values come from the same
/// pool: `RuntimePools`' `resident`). Not modelled: the pool's fragmentation, the small-block cache's size
/// classes (it allocates from the same pool). The cost is host
/// time before the copy starts: the runtime allocates a window's destinations one after another before it
/// starts each copy.

#include "fhr/model/huge_pages.hpp"
#include "fhr/model/link_model.hpp"
#include "fhr/model/location.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace fhr {

/// The block the CUDA backend allocates from each device's pool, and frees,
/// when it starts (the first allocation from a pool in a process costs
/// about 10 ms on the H200; the backend pays it up front). The pool keeps
/// the memory that reserved.
inline constexpr std::uint64_t kDevicePoolStartBytes = std::uint64_t{2} << 20;

/// Device blocks up to this size come from the CUDA backend's small-block
/// cache (slabs it carves from the pool), larger ones from the pool itself.
inline constexpr std::uint64_t kDeviceSmallBlockMaxBytes = std::uint64_t{1} << 20;

/// The CUDA backend's pool settings (its defaults, fhr/cuda/cuda_backend.hpp).
struct PoolOptions {
  std::uint64_t pinned_pool_bytes = std::uint64_t{4} << 30;
  std::uint64_t pageable_pool_bytes = std::uint64_t{4} << 30;
  std::uint64_t pageable_pool_min_bytes = kHugePageBytes;
  std::uint64_t staging_chunk_bytes = std::uint64_t{32} << 20;
  /// Pinned blocks of kHugePageBytes and more on huge pages (the backend's
  /// default where its devices can register host memory): the pinned pool
  /// keeps them, and counts them, by whole huge pages.
  bool pinned_huge_pages = true;
};

/// An allocation a cold pool could not serve: a fresh block of `bytes` at
/// `location`, or (`staging`) the staged transfers' bounce buffers.
struct ColdAllocation {
  Location location;
  std::uint64_t bytes = 0;
  bool staging = false;
};

/// The most each device's pool held at once, by device (setup's replicas
/// included).
using DevicePeaks = std::array<std::uint64_t, Location::kMaxCudaDevices>;

/// A block a warm-up allocates ahead (and frees into its pool).
struct WarmUpBlock {
  Location location;
  std::uint64_t bytes = 0;
  friend bool operator==(const WarmUpBlock &, const WarmUpBlock &) = default;
};

/// What a warm-up reserves so that the steps behind `cold` (a cold
/// timeline's misses) find the pools warm: every missed pinned and
/// pageable block, the bounce buffers as one pageable block of
/// `staging_block` bytes (a staged transfer's size, which makes them), and
/// per device one block of the most its pool held (`peaks`) beyond the
/// bytes `resident` there before the steps (at least a block the pool
/// serves itself: over kDeviceSmallBlockMaxBytes), whether or not the pool
/// grew for it. (The missed device blocks alone would leave out the
/// blocks the pool served beside them: on the H200 `inference`'s query
/// move still grew the pool after such a warm-up. And a pool that held
/// its steps inside the backend's start granule still took 18-49 µs to
/// hand out its first block beyond the 2 MiB start block, 2-4 µs after a
/// warm-up of this block: docs/benchmarks.md, twenty-first and
/// twenty-second waves.) Devices after the host locations, by index.
std::vector<WarmUpBlock> warm_up_blocks(std::span<const ColdAllocation> cold,
                                        const std::array<std::uint64_t, Location::kCount> &resident,
                                        const DevicePeaks &peaks, std::uint64_t staging_block);

class RuntimePools {
public:
  /// `resident` (by Location::index()): the logical bytes the backend
  /// holds at each location before the first step (setup's replicas); a
  /// device's pool holds them, reserved by whole granules.
  RuntimePools(const LinkModel &links, PoolOptions options,
               const std::array<std::uint64_t, Location::kCount> &resident = {});

  /// Seconds to allocate `bytes` at `location` now; takes them.
  double allocate(Location location, std::uint64_t bytes);
  /// Whether allocating `bytes` at `location` now would grow a device's
  /// pool (allocate() would then charge device_allocation_seconds and the
  /// growth). Inside an overlap window a growth also waits for the copies
  /// out of that device issued before it (timeline.cpp, `allocating`): the
  /// wait shows in the copy's start, not in its allocation time.
  bool grows_device_pool(Location location, std::uint64_t bytes) const;
  /// `bytes` at `location` freed: a pinned block goes back to the pool (as
  /// far as its bound allows), a device block back to the device's pool.
  void free(Location location, std::uint64_t bytes);
  /// Seconds the staging buffers cost the first staged copy; 0 after.
  double staging_seconds();
  /// The allocations so far that found no warm block, in order, and what
  /// they cost.
  const std::vector<ColdAllocation> &cold_allocations() const { return cold_; }
  /// The most each device's pool has held at once so far.
  DevicePeaks device_peaks() const;
  double cold_seconds() const { return cold_seconds_; }

private:
  /// Blocks kept by their size up to a bound in bytes (the pinned and the
  /// pageable pools).
  struct SizedPool {
    std::map<std::uint64_t, std::uint64_t> blocks; ///< block size -> blocks kept
    std::uint64_t bytes = 0;
    bool take(std::uint64_t size);
    void give_back(std::uint64_t size, std::uint64_t bound);
  };
  struct DevicePool {
    std::uint64_t reserved = 0, in_use = 0, peak = 0;
  };
  /// What a device's pool reserves to hold `in_use` bytes: whole granules.
  std::uint64_t device_reservation(std::uint64_t in_use) const;
  const LinkModel &links_;
  PoolOptions options_;
  SizedPool pinned_, pageable_;
  std::array<DevicePool, Location::kMaxCudaDevices> devices_{};
  bool staging_ready_ = false;
  std::vector<ColdAllocation> cold_;
  double cold_seconds_ = 0;
  /// Records a cold allocation and returns its cost.
  double cold(ColdAllocation allocation, double seconds);
  /// The pageable pool's block for `bytes`: whole huge pages, as the
  /// backend keeps them.
  std::uint64_t pageable_block(std::uint64_t bytes) const;
  /// The pinned pool's: whole huge pages when its blocks are made of them.
  std::uint64_t pinned_block(std::uint64_t bytes) const;
};

} // namespace fhr

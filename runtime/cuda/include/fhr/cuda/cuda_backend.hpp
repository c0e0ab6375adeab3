#pragma once
/// \file
/// The CUDA backend (issue #5): pinned host storage (huge pages registered
/// with the driver, fhr/cuda/host_blocks.hpp) kept in a bounded pool, device storage
/// from each device's stream-ordered memory pool (cudaMallocAsync) with a
/// release threshold so freed memory stays in the pool, copies with
/// cudaMemcpyAsync on the destination's stream (the caller's, or a
/// per-device transfer stream) synchronised before the manager installs the
/// replica, and CUDA events for leases. CUDA errors become BackendError with
/// the CUDA error's name in the message.
///
/// Pageable <-> device copies of 4 MiB or more are staged through two
/// pinned bounce buffers, in turn or (staging_slot_bytes) as a ring of
/// slots, the host side on worker threads;
/// device <-> device copies use peer access where the devices have it.
///
/// Copies into a device run on its inbound stream (or the caller's), copies
/// out of it on its outbound stream: the two copy engines of a device work
/// at once when a plan evicts while it prefetches (Backend::begin_copy, the
/// manager's overlap windows). pool_figures() reports what the pinned pool
/// and each device's pool hold, and what the driver reports free.

#include "fhr/runtime/backend.hpp"

#include <cstdint>
#include <memory>
#include <span>

namespace fhr {

struct CudaBackendOptions {
  /// Page-locked host blocks kept for reuse after their replica goes.
  std::uint64_t pinned_pool_bytes = std::uint64_t{4} << 30;
  /// Pageable host blocks of 2 MiB or more kept for reuse after their
  /// replica goes, their pages still faulted in (fresh pages cost a fault
  /// and the kernel's zeroing each: a copy into them runs at a third of the
  /// speed). 0: every block goes back to the system at once.
  std::uint64_t pageable_pool_bytes = std::uint64_t{4} << 30;
  /// What each device's memory pool keeps after frees instead of returning
  /// it to the driver.
  std::uint64_t device_pool_release_threshold = ~std::uint64_t{0};
  /// Freed device blocks of up to 1 MiB the backend keeps per device for
  /// the next value of the same size (0: every block goes back to the
  /// device's pool at once).
  std::uint64_t device_small_block_cache_bytes = std::uint64_t{64} << 20;
  /// Where those blocks come from: carved from 2 MiB cudaMalloc slabs (as
  /// many as the cache's bytes allow; beyond, the device's pool), into
  /// which the driver issues a small copy faster than into its
  /// stream-ordered pool; false: every one from the pool (as the backend
  /// before the tenth wave took them; kept for bench/cuda_bench's
  /// comparison).
  bool device_small_blocks_in_slabs = true;
  /// Worker threads of the host side of staged pageable transfers, beside
  /// the calling thread; 0: one fewer than the machine's cores, at most 15
  /// (so one worker is the fewest). The environment variable
  /// FHR_HOST_COPY_THREADS overrides it, a value set here included: it is
  /// for measuring a program without changing it.
  unsigned host_copy_threads = 0;
  /// Each of the two pinned buffers of staged pageable transfers; 0:
  /// 32 MiB. FHR_STAGING_CHUNK_MIB overrides it.
  std::size_t staging_chunk_bytes = 0;
  /// 0: the two buffers are used in turn, a chunk each (the host copy of
  /// one chunk overlaps the DMA of the other). Otherwise they are a ring
  /// of slots of this size (runtime/cuda/src/staging_ring.hpp): the
  /// workers copy slot after slot while each slot's DMA starts as soon as
  /// its bytes are in, so a transfer of one chunk overlaps too; a power of
  /// two of at least 512 KiB (a copier piece) that divides the chunk
  /// (resolved() rounds it so; a chunk of more than a piece that is not
  /// whole pieces keeps the buffers in turn). Not the default yet: the
  /// shipped H200 profile's staged curves were measured with the turn, and
  /// the ring's present form has not been measured on an H200
  /// (docs/runtime.md). FHR_STAGING_SLOT_MIB overrides it.
  std::size_t staging_slot_bytes = 0;
  /// Whether the host side of staged transfers (and of large host-to-host
  /// copies) writes with non-temporal stores, which neither read the
  /// destination's lines first nor leave them in the cache
  /// (runtime/cuda/src/streaming_copy.hpp); false: memcpy.
  /// FHR_HOST_COPY_STREAMING (0 or 1) overrides it.
  bool host_copy_streaming_stores = true;
  /// Whether the backend's pinned blocks of 2 MiB and more (the pinned
  /// pool's and the staging buffers) are pageable memory on huge pages,
  /// faulted in on as many threads as the copier has and the caller
  /// (pinned_fault_threads) and registered with the driver
  /// (cudaHostRegister), instead of cudaHostAlloc's: on the
  /// H200 machine a 120 MiB block took 5.5-6.6 ms instead of 45-47 and
  /// copies ran at the same rate (docs/benchmarks.md, "Thirteenth wave",
  /// "Twentieth wave"). A block is rounded up to whole huge pages, and the
  /// pool keeps and counts it so. FHR_PINNED_HUGE_PAGES (0 or
  /// 1) overrides it. Where a device cannot register host memory
  /// (cudaDevAttrHostRegisterSupported) the backend uses cudaHostAlloc.
  /// fhr/cuda/host_blocks.hpp makes the blocks.
  bool pinned_huge_pages = true;
};

/// `options` with the tuning overrides of the environment applied
/// (FHR_HOST_COPY_THREADS, FHR_STAGING_CHUNK_MIB, FHR_STAGING_SLOT_MIB:
/// whole numbers; FHR_HOST_COPY_STREAMING, FHR_PINNED_HUGE_PAGES: 0 or 1;
/// anything else there is ignored) and the automatic choices made.
CudaBackendOptions resolved(CudaBackendOptions options);

/// How many threads fault a fresh pinned block's huge pages in
/// (make_pinned_block) under resolved `options`: the copy threads and the
/// caller, who has nothing else to do meanwhile. `calibrate` makes its
/// blocks with the same count.
unsigned pinned_fault_threads(const CudaBackendOptions &options);

/// A backend over the CUDA devices of this process. Throws BackendError
/// when the CUDA runtime finds no device (no CUDA call is made before).
std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions options = {});

/// Number of CUDA devices, 0 when there is no driver or no device.
unsigned cuda_device_count();

/// A new non-blocking stream on a CUDA device (a consumer stream for
/// leases, say); release it with destroy_cuda_stream.
Stream create_cuda_stream(Location device);
void destroy_cuda_stream(Stream stream) noexcept;

} // namespace fhr

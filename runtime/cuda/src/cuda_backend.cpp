#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/cuda/cuda_calls.hpp"
#include "fhr/cuda/host_blocks.hpp"

#include "host_copier.hpp"
#include "small_block_slabs.hpp"
#include "staging_ring.hpp"

#include "fhr/model/runtime_pools.hpp"
#include "fhr/runtime/block_pool.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace fhr {

namespace {

cudaStream_t native(Stream stream) { return reinterpret_cast<cudaStream_t>(stream.native); }
/// The tag of a CopyInFlight that is a stream (begin_lone_copy), not a
/// pooled event (whose address is aligned). Streams are aligned addresses
/// too, but for the runtime's special handles: cudaStreamPerThread (2)
/// keeps its value, cudaStreamLegacy (1) comes back as 0 (finish_copy).
constexpr std::uintptr_t kLoneCopy = 1;
/// A pooled event and the device it belongs to (events can only be
/// recorded on their device's streams). Event and CopyInFlight carry its
/// address, so that giving one back needs no lookup.
struct PooledEvent {
  cudaEvent_t event = nullptr;
  unsigned device = 0;
};
PooledEvent *pooled(std::uintptr_t native) { return reinterpret_cast<PooledEvent *>(native); }

/// Pinned blocks kept by size (fhr/cuda/host_blocks.hpp makes them):
/// making one of 120 MiB costs 25-60 ms, reusing a kept block nothing.
using PinnedPool = BlockPool<std::byte *>;

/// Freed large pageable blocks (whole huge pages, map_huge_pages: a
/// transfer into fresh pageable memory is bound by its page faults, 512
/// times fewer this way), kept with their pages faulted in: the faults
/// (and the kernel's zeroing of each fresh page) are most of what a copy
/// into fresh pageable memory costs, 9–12 GB/s on the H200's host against
/// 25+ GB/s into pages already there.
using PageablePool = BlockPool<std::byte *>;

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(CudaBackendOptions options)
      : chunk_(options.staging_chunk_bytes), slot_(options.staging_slot_bytes),
        copy_threads_(options.host_copy_threads), streaming_stores_(options.host_copy_streaming_stores),
        pinned_huge_pages_(pinned_on_huge_pages(options.pinned_huge_pages)),
        fault_threads_(pinned_fault_threads(options)),
        pinned_(PinnedPool::make(
            options.pinned_pool_bytes,
            [huge = pinned_huge_pages_, threads = fault_threads_](std::size_t n) {
              return make_pinned_block(n, huge, threads);
            },
            [huge = pinned_huge_pages_](std::byte *block, std::size_t n) {
              free_pinned_block(block, n, huge);
            })),
        pageable_(PageablePool::make(options.pageable_pool_bytes, map_huge_pages, unmap_huge_pages)) {
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw BackendError("no CUDA device");
    spare_events_.resize(static_cast<std::size_t>(count));
    for (int device = 0; device < count; ++device) {
      DeviceGuard guard(device);
      cudaMemPool_t pool = nullptr;
      check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
      std::uint64_t threshold = options.device_pool_release_threshold;
      check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                 "cudaMemPoolSetAttribute");
      cudaStream_t stream = nullptr;
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      transfer_streams_.push_back(stream);
      // The first allocation from a device's pool in a process costs about
      // 10 ms on the H200 (later growth 0.2 ms per 124 MiB): started here,
      // not by the first transfer to the device. Only a head start: a
      // device without room for it still makes a backend.
      void *first = nullptr;
      if (cudaMallocAsync(&first, kDevicePoolStartBytes, stream) == cudaSuccess) cudaFreeAsync(first, stream);
      cudaGetLastError();
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      outbound_streams_.push_back(stream);
    }
    // Memory from a device's pool is visible to the other devices only once
    // the pool grants them access: done for every peer that can reach it, so
    // device-to-device copies go directly; the others are staged (copy()).
    peer_access_.assign(static_cast<std::size_t>(count) * count, false);
    for (int owner = 0; owner < count; ++owner) {
      cudaMemPool_t pool = nullptr;
      check_cuda(cudaDeviceGetDefaultMemPool(&pool, owner), "cudaDeviceGetDefaultMemPool");
      for (int peer = 0; peer < count; ++peer) {
        int can = 0;
        if (peer == owner || cudaDeviceCanAccessPeer(&can, peer, owner) != cudaSuccess || !can) continue;
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = peer;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        check_cuda(cudaMemPoolSetAccess(pool, &access, 1), "cudaMemPoolSetAccess");
        peer_access_[static_cast<std::size_t>(owner) * count + peer] = true;
      }
    }
    if (options.device_small_block_cache_bytes > 0)
      for (int device = 0; device < count; ++device) {
        // Carved from cudaMalloc slabs up to the cache's bound, from the
        // device's pool beyond (small_block_slabs.hpp); the pool holds the
        // slabs until its last block is back.
        auto slabs = std::make_shared<SmallBlockSlabs>(
            device, transfer_streams_[static_cast<std::size_t>(device)],
            options.device_small_blocks_in_slabs ? options.device_small_block_cache_bytes : 0);
        small_slabs_.push_back(slabs);
        small_blocks_.push_back(DevicePool::make(
            options.device_small_block_cache_bytes,
            [slabs](std::size_t nbytes) { return slabs->take(nbytes); },
            [slabs](std::byte *block, std::size_t nbytes) { slabs->release(block, nbytes); }));
      }
  }

  ~CudaBackend() override {
    // Nothing of the backend's may still be copying when its memory goes:
    // unregistering a staging buffer does not wait for a DMA into it as
    // cudaFreeHost does.
    for (const auto *streams : {&transfer_streams_, &outbound_streams_})
      for (cudaStream_t stream : *streams)
        cudaStreamSynchronize(stream);
    // Retired: their kept blocks are freed now, blocks still in use when
    // they come back (block_pool.hpp).
    small_blocks_.clear();
    for (std::byte *bounce : bounce_)
      if (bounce) free_pinned_block(bounce, chunk_, pinned_huge_pages_);
    for (const auto &events : bounce_ready_)
      for (cudaEvent_t event : events)
        if (event) cudaEventDestroy(event);
    for (const PooledEvent &pooled_event : events_)
      cudaEventDestroy(pooled_event.event); // every event the backend made, spare or not
    for (const auto *streams : {&transfer_streams_, &outbound_streams_})
      for (cudaStream_t stream : *streams) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
      }
    // The device memory this backend's pools kept goes back to the driver:
    // the default pools are the process's, so a later backend would
    // otherwise find them grown (as a second `run --repeat` repetition
    // did on the H200, its pool growths gone from its steps).
    for (std::size_t device = 0; device < transfer_streams_.size(); ++device) {
      DeviceGuard guard(static_cast<int>(device));
      cudaMemPool_t pool = nullptr;
      if (cudaDeviceGetDefaultMemPool(&pool, static_cast<int>(device)) == cudaSuccess)
        cudaMemPoolTrimTo(pool, 0);
      cudaGetLastError();
    }
  }

  DeviceConfig devices() const override {
    return DeviceConfig{true, static_cast<unsigned>(transfer_streams_.size())};
  }

  Storage allocate(Location location, std::size_t nbytes) override {
    if (location == Location::pageable()) {
      if (nbytes < kHugePageBytes) {
        void *memory = std::aligned_alloc(64, (nbytes + 64) / 64 * 64);
        if (!memory) throw std::bad_alloc();
        return Storage(static_cast<std::byte *>(memory), nbytes, location,
                       [](std::byte *data) { std::free(data); });
      }
      const std::size_t rounded = huge_page_multiple(nbytes);
      return Storage(pageable_->take(rounded), nbytes, location, pageable_->releaser(rounded));
    }
    if (location == Location::pinned()) {
      const std::size_t block = pinned_block(nbytes);
      return Storage(pinned_->take(block), nbytes, location, pinned_->releaser(block));
    }
    const unsigned device = location.device();
    if (device >= transfer_streams_.size()) throw BackendError("no CUDA device " + location.name());
    if (nbytes <= kSmallBlock && !small_blocks_.empty()) {
      // Small values come back and go again all the time (ciphertexts of a
      // level, scratch): a kept block saves the pool's bookkeeping on both
      // ends, which is most of what a 4 KiB transfer costs beyond the copy.
      // Blocks are kept by size class, so that a size the cache has not
      // seen still finds a block freed by a value of a neighbouring size.
      DevicePool &cache = *small_blocks_[device];
      const std::size_t block_bytes = small_block_class(nbytes);
      return Storage(cache.take(block_bytes), nbytes, location, cache.releaser(block_bytes), block_bytes);
    }
    DeviceGuard guard(device);
    void *memory = nullptr;
    cudaStream_t stream = transfer_streams_[device];
    // Stream-ordered on the device's transfer stream: copies on that stream
    // follow it; copy() synchronises it first for any other stream.
    check_cuda(cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream), "cudaMallocAsync");
    return Storage(static_cast<std::byte *>(memory), nbytes, location, [stream, device](std::byte *data) {
      // Freed only once nothing reads it (the manager's protection rules),
      // back into the device's pool.
      DeviceGuard on_owner(device);
      cudaFreeAsync(data, stream);
    });
  }

  /// Warm-up: pinned blocks made and kept; at a device, small blocks made
  /// for the cache and the pool grown by the larger blocks (allocated and
  /// freed again: the pool keeps the memory, its release threshold being
  /// everything by default); for pageable transfers the staging buffers,
  /// their events and the copier threads.
  std::uint64_t prepare(Location location, std::span<const std::size_t> block_sizes) override {
    if (block_sizes.empty()) return 0;
    if (location == Location::pinned()) {
      std::vector<std::size_t> blocks(block_sizes.begin(), block_sizes.end());
      for (std::size_t &nbytes : blocks)
        nbytes = pinned_block(nbytes);
      return pinned_->reserve(blocks);
    }
    if (location == Location::pageable()) {
      std::uint64_t made = 0;
      if (std::any_of(block_sizes.begin(), block_sizes.end(),
                      [](std::size_t n) { return n >= kHugePageBytes; })) {
        std::lock_guard lock(staging_mutex_);
        const bool fresh = !bounce_[0];
        prepare_staging(); // the copier threads fault the blocks in; staged transfers need them too
        for (unsigned device = 0; device < transfer_streams_.size(); ++device)
          bounce_events(device);
        if (fresh) made += 2 * chunk_;
        // The plan's large pageable blocks, their pages faulted in by all
        // the copier threads, kept in the pool (as far as its bound allows).
        std::vector<std::pair<std::byte *, std::size_t>> blocks;
        for (std::size_t n : block_sizes) {
          if (n < kHugePageBytes) continue;
          const std::size_t rounded = huge_page_multiple(n);
          blocks.emplace_back(pageable_->take(rounded), rounded);
          copier_->touch(blocks.back().first, rounded);
          made += rounded;
        }
        for (const auto &[block, rounded] : blocks)
          pageable_->give_back(block, rounded);
      }
      return made;
    }
    const unsigned device = location.device();
    if (!location.is_cuda() || device >= transfer_streams_.size())
      throw BackendError("no CUDA device " + location.name());
    std::uint64_t reserved = 0;
    std::vector<std::size_t> small, large;
    for (std::size_t nbytes : block_sizes)
      (nbytes <= kSmallBlock && !small_blocks_.empty() ? small : large).push_back(nbytes);
    for (std::size_t &nbytes : small)
      nbytes = small_block_class(nbytes);
    if (!small.empty()) reserved += small_blocks_[device]->reserve(small);
    // A few events for copy windows and leases, made once.
    PooledEvent *events[4] = {};
    cudaError_t made = cudaSuccess;
    for (PooledEvent *&event : events)
      if (made == cudaSuccess) made = take_event(device, &event);
    for (PooledEvent *event : events)
      if (event) put_event(event);
    check_cuda(made, "cudaEventCreate");
    if (large.empty()) return reserved;
    DeviceGuard guard(device);
    cudaMemPool_t pool = nullptr;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, static_cast<int>(device)), "cudaDeviceGetDefaultMemPool");
    std::uint64_t before = 0, after = 0;
    check_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &before),
               "cudaMemPoolGetAttribute");
    cudaStream_t stream = transfer_streams_[device];
    std::vector<void *> blocks;
    cudaError_t error = cudaSuccess;
    for (std::size_t nbytes : large) {
      void *memory = nullptr;
      error = cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream);
      if (error != cudaSuccess) break;
      blocks.push_back(memory);
    }
    for (void *memory : blocks)
      cudaFreeAsync(memory, stream);
    check_cuda(error, "cudaMallocAsync");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &after),
               "cudaMemPoolGetAttribute");
    return reserved + (after > before ? after - before : 0);
  }

  void copy(const Storage &from, Storage &to, Stream stream) override {
    if (std::optional<StartedCopy> started = start_copy(from, to, stream))
      // §17: materialization is synchronous; the destination is installed
      // only once its bytes are there.
      check_cuda(cudaStreamSynchronize(started->stream), "cudaStreamSynchronize");
  }

  bool overlaps_copies() const override { return true; }

  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override {
    const std::optional<StartedCopy> started = start_copy(from, to, stream);
    if (!started) return {};
    PooledEvent *done = nullptr;
    cudaError_t error = take_event(started->device, &done);
    if (error == cudaSuccess) error = cudaEventRecord(done->event, started->stream);
    if (error != cudaSuccess) {
      cudaStreamSynchronize(started->stream); // the copy must not outlive its storages
      if (done) put_event(done);
      check_cuda(error, "cudaEventRecord");
    }
    return CopyInFlight{reinterpret_cast<std::uintptr_t>(done)};
  }

  /// The copy's stream stands for it, tagged in the lowest bit (events'
  /// addresses are aligned): finishing it synchronises the stream, the
  /// way copy() does, with no event to take, record and give back.
  CopyInFlight begin_lone_copy(const Storage &from, Storage &to, Stream stream) override {
    const std::optional<StartedCopy> started = start_copy(from, to, stream);
    if (!started) return {};
    return CopyInFlight{reinterpret_cast<std::uintptr_t>(started->stream) | kLoneCopy};
  }

  void finish_copy(CopyInFlight copy) override {
    if (copy.native == 0) return;
    if (copy.native & kLoneCopy) {
      // 0 once untagged is the stream handle 1, cudaStreamLegacy (no copy
      // runs on handle 0: that is "no stream" to the manager), named as
      // such so that a build with per-thread default streams waits for it.
      const std::uintptr_t handle = copy.native & ~kLoneCopy;
      check_cuda(
          cudaStreamSynchronize(handle == 0 ? cudaStreamLegacy : reinterpret_cast<cudaStream_t>(handle)),
          "cudaStreamSynchronize");
      return;
    }
    PooledEvent *done = pooled(copy.native);
    const cudaError_t error = cudaEventSynchronize(done->event);
    put_event(done);
    check_cuda(error, "cudaEventSynchronize");
  }

  std::optional<PoolFigures> pool_figures(Location location) const override {
    if (location == Location::pinned()) return pinned_->figures();
    if (location == Location::pageable()) return pageable_->figures();
    if (!location.is_cuda() || location.device() >= transfer_streams_.size()) return std::nullopt;
    const int device = static_cast<int>(location.device());
    cudaMemPool_t pool = nullptr;
    std::uint64_t used = 0, reserved = 0;
    std::size_t free = 0, total = 0;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    check_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used),
               "cudaMemPoolGetAttribute");
    check_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
               "cudaMemPoolGetAttribute");
    DeviceGuard guard(device);
    check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    const std::uint64_t pool_idle = reserved > used ? reserved - used : 0;
    if (small_blocks_.empty()) return PoolFigures{used, pool_idle, free};
    // The small-block cache's blocks: carved from slabs (outside the
    // driver's pool) or, beyond its bound, the pool's; the ones it keeps
    // are idle for the runtime, whichever memory they are.
    const PoolFigures small = small_blocks_[location.device()]->figures();
    const SmallBlockSlabs::Figures slabs = small_slabs_[location.device()]->figures();
    const std::uint64_t large_in_use = used - std::min(used, slabs.pool_live);
    return PoolFigures{large_in_use + small.in_use_bytes,
                       pool_idle + small.idle_bytes + (slabs.slab_bytes - slabs.carved_live), free};
  }

  /// What the driver says about the first and the last byte: both must be
  /// of one kind (cudaPointerGetAttributes: unregistered host memory is
  /// pageable, page-locked host memory pinned, device memory its device's;
  /// managed memory is none of these).
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const override {
    const std::optional<Location> first = memory_kind(data);
    if (!first || nbytes <= 1) return first;
    const std::optional<Location> last = memory_kind(data + nbytes - 1);
    return first == last ? first : std::nullopt;
  }

  static std::optional<Location> memory_kind(const void *address) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, address) != cudaSuccess) {
      cudaGetLastError(); // drivers before CUDA 11 refuse unregistered host memory
      return Location::pageable();
    }
    switch (attributes.type) {
    case cudaMemoryTypeUnregistered: return Location::pageable();
    case cudaMemoryTypeHost: return Location::pinned();
    case cudaMemoryTypeDevice:
      if (attributes.device < 0 || static_cast<unsigned>(attributes.device) >= Location::kMaxCudaDevices)
        return std::nullopt;
      return Location::cuda(static_cast<unsigned>(attributes.device));
    case cudaMemoryTypeManaged: return std::nullopt;
    }
    return std::nullopt;
  }

  struct StartedCopy {
    cudaStream_t stream;
    unsigned device;
  };
  /// Starts the copy on the stream of its direction and returns that
  /// stream and its device, or std::nullopt when the copy was done
  /// synchronously (host to host, staged pageable transfers, device to
  /// device without peer access).
  std::optional<StartedCopy> start_copy(const Storage &from, Storage &to, Stream stream) {
    if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
    if (from.size() == 0) return std::nullopt;
    if (!from.location().is_cuda() && !to.location().is_cuda()) {
      // Host to host: large copies on the copier threads too (one thread
      // faulting fresh pageable pages in reached 2.8 GB/s at 1 GiB).
      if (from.size() < kStagedMinimum) {
        std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
      } else {
        std::lock_guard lock(staging_mutex_);
        prepare_copier();
        copier_->copy(to.bytes().data(), from.bytes().data(), from.size());
      }
      return std::nullopt;
    }
    if (from.location().is_cuda() && to.location().is_cuda() && from.location() != to.location() &&
        !peer_access_[from.location().device() * transfer_streams_.size() + to.location().device()]) {
      // No peer access: through a pinned block.
      const std::size_t block = pinned_block(from.size());
      std::byte *staging = pinned_->take(block);
      try {
        Storage bounce(staging, from.size(), Location::pinned(), [](std::byte *) {});
        copy(from, bounce, Stream{});
        copy(bounce, to, stream);
      } catch (...) {
        pinned_->give_back(staging, block);
        throw;
      }
      pinned_->give_back(staging, block);
      return std::nullopt;
    }
    // Into a device: the caller's stream or the device's inbound transfer
    // stream; out of a device to the host: the device's outbound stream, so
    // that an eviction and a prefetch use both copy engines at once.
    const bool inbound = to.location().is_cuda();
    const Location device = inbound ? to.location() : from.location();
    cudaStream_t transfer = transfer_streams_[device.device()];
    cudaStream_t s = !inbound ? outbound_streams_[device.device()] : stream ? native(stream) : transfer;
    // No device is made current: copies, event records and waits run on
    // their stream's device whichever is current (the CUDA programming
    // guide, "Stream and Event Behavior"), and the cudaGetDevice of a
    // DeviceGuard was 0.05 µs of a 4 KiB ensure's 0.4 µs above a raw copy
    // on the H200 (bench/cuda_phases.cpp).
    // A fresh device block was allocated on the transfer stream.
    if (inbound && s != transfer) check_cuda(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
    const bool pageable_side =
        from.location() == Location::pageable() || to.location() == Location::pageable();
    if (pageable_side && from.size() >= kStagedMinimum) {
      staged_copy(from, to, s, device.device());
      return std::nullopt;
    }
    check_cuda(cudaMemcpyAsync(to.bytes().data(), from.bytes().data(), from.size(), cudaMemcpyDefault, s),
               "cudaMemcpyAsync");
    return StartedCopy{s, device.device()};
  }

  void read(const Storage &from, std::span<std::byte> out) override {
    if (!from.location().is_cuda()) return CopyEngine::read(from, out);
    DeviceGuard guard(from.location().device());
    check_cuda(cudaMemcpy(out.data(), from.bytes().data(), out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  /// Pageable <-> device through the staging buffers, on the copier's
  /// threads, instead of the driver's synchronous staging: the buffers in
  /// turn, or with a slot size set, as a ring of slots.
  void staged_copy(const Storage &from, Storage &to, cudaStream_t s, unsigned device) {
    std::lock_guard lock(staging_mutex_);
    prepare_staging();
    try {
      if (slot_ == 0)
        staged_copy_in_turn(from, to, s, bounce_events(device));
      else
        staged_copy_through_ring(from, to, s, bounce_events(device));
    } catch (...) {
      // DMAs a failed transfer started may still run into (out of) the
      // staging buffers, which the next transfer, on another stream
      // perhaps, takes as free: they finish first.
      cudaStreamSynchronize(s);
      cudaGetLastError();
      throw;
    }
  }

  /// The two buffers in turn, a chunk each: the host copy of one chunk
  /// (split over the caller and the workers) overlaps the DMA of the other.
  void staged_copy_in_turn(const Storage &from, Storage &to, cudaStream_t s, cudaEvent_t *bounce_ready) {
    const bool to_device = to.location().is_cuda();
    const std::size_t n = from.size();
    const std::size_t chunks = (n + chunk_ - 1) / chunk_;
    auto chunk_size = [&](std::size_t k) { return std::min(chunk_, n - k * chunk_); };
    if (to_device) {
      for (std::size_t k = 0; k < chunks; ++k) {
        const std::size_t b = k % 2;
        if (k >= 2) check_cuda(cudaEventSynchronize(bounce_ready[b]), "cudaEventSynchronize");
        copier_->copy(bounce_[b], from.bytes().data() + k * chunk_, chunk_size(k));
        check_cuda(cudaMemcpyAsync(to.bytes().data() + k * chunk_, bounce_[b], chunk_size(k),
                                   cudaMemcpyHostToDevice, s),
                   "cudaMemcpyAsync");
        check_cuda(cudaEventRecord(bounce_ready[b], s), "cudaEventRecord");
      }
      check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      return;
    }
    auto fetch = [&](std::size_t k) {
      const std::size_t b = k % 2;
      check_cuda(cudaMemcpyAsync(bounce_[b], from.bytes().data() + k * chunk_, chunk_size(k),
                                 cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
      check_cuda(cudaEventRecord(bounce_ready[b], s), "cudaEventRecord");
    };
    fetch(0);
    // Until the first chunk arrives the threads would wait: they fault in
    // the pages it goes to instead (fresh pageable storage is bound by its
    // page faults), so that its copy runs at the speed of the later ones.
    if (to.location() == Location::pageable()) copier_->touch(to.bytes().data(), chunk_size(0));
    for (std::size_t k = 0; k < chunks; ++k) {
      if (k + 1 < chunks) fetch(k + 1);
      check_cuda(cudaEventSynchronize(bounce_ready[k % 2]), "cudaEventSynchronize");
      copier_->copy(to.bytes().data() + k * chunk_, bounce_[k % 2], chunk_size(k));
    }
  }

  /// The ring of slots (staging_ring.hpp): the workers copy the host side
  /// slot by slot while this thread starts each slot's DMA on `s`.
  void staged_copy_through_ring(const Storage &from, Storage &to, cudaStream_t s, cudaEvent_t *slot_done) {
    const bool to_device = to.location().is_cuda();
    // Out of the device, its bytes are only read: the link takes them as
    // the address both directions share.
    std::byte *device_bytes = to_device ? to.bytes().data() : const_cast<std::byte *>(from.bytes().data());
    SlotLink link{s, slot_done, device_bytes, to_device};
    const StagingRing ring{std::span<std::byte *const>(bounce_), chunk_, slot_};
    if (to_device) {
      stage_to_device(*copier_, ring, from.bytes().data(), from.size(), link);
    } else {
      stage_from_device(*copier_, ring, to.bytes().data(), from.size(), link);
    }
  }

  /// The DMA side of the ring for one staged transfer: a slot's DMA on the
  /// transfer's stream, then its event recorded; done() asks that event.
  struct SlotLink {
    cudaStream_t stream;
    cudaEvent_t *slot_done; ///< per slot (bounce_events)
    std::byte *device_bytes;
    bool to_device;
    void start(std::size_t slot, std::byte *slot_bytes, std::size_t offset, std::size_t n) {
      if (to_device)
        check_cuda(cudaMemcpyAsync(device_bytes + offset, slot_bytes, n, cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync");
      else
        check_cuda(cudaMemcpyAsync(slot_bytes, device_bytes + offset, n, cudaMemcpyDeviceToHost, stream),
                   "cudaMemcpyAsync");
      check_cuda(cudaEventRecord(slot_done[slot], stream), "cudaEventRecord");
    }
    bool done(std::size_t slot) {
      const cudaError_t status = cudaEventQuery(slot_done[slot]);
      if (status == cudaErrorNotReady) return false;
      check_cuda(status, "cudaEventQuery");
      return true;
    }
  };

  /// The events of `device`'s staged transfers, one per buffer or per
  /// slot of the ring (events belong to a device: each has its own), made
  /// on first use. Under staging_mutex_.
  cudaEvent_t *bounce_events(unsigned device) {
    std::vector<cudaEvent_t> &slot_done = bounce_ready_[device];
    if (slot_done.empty()) {
      DeviceGuard guard(device);
      std::vector<cudaEvent_t> made(slot_ == 0 ? 2 : 2 * (chunk_ / slot_), nullptr);
      try {
        for (cudaEvent_t &event : made)
          check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
      } catch (...) {
        for (cudaEvent_t event : made)
          if (event) cudaEventDestroy(event);
        throw;
      }
      slot_done = std::move(made);
    }
    return slot_done.data();
  }

  /// The copier threads, for host copies and staged transfers. Under
  /// staging_mutex_.
  void prepare_copier() {
    if (!copier_) copier_ = std::make_unique<HostCopier>(copy_threads_, streaming_stores_);
  }

  /// The copier and the two bounce buffers of staged transfers, made by the
  /// first staged transfer (or a warm-up; a host copy makes the threads
  /// alone, as the time model charges them). All or nothing: what was made
  /// before a failure is freed, and the next one tries again. Under
  /// staging_mutex_.
  void prepare_staging() {
    prepare_copier();
    if (bounce_[0]) return;
    std::byte *first = make_pinned_block(chunk_, pinned_huge_pages_, fault_threads_);
    try {
      bounce_[1] = make_pinned_block(chunk_, pinned_huge_pages_, fault_threads_);
    } catch (...) {
      free_pinned_block(first, chunk_, pinned_huge_pages_);
      throw;
    }
    bounce_[0] = first;
    bounce_ready_.assign(transfer_streams_.size(), {});
  }

  std::optional<Location> stream_location(Stream stream) const override {
    int device = -1;
    if (!stream || cudaStreamGetDevice(native(stream), &device) != cudaSuccess || device < 0) {
      cudaGetLastError();
      return std::nullopt;
    }
    return Location::cuda(static_cast<unsigned>(device));
  }

  /// Events are kept for reuse (creating one costs more than the rest of a
  /// lease): a recorded event is simply recorded again. An event belongs to
  /// the device it was made on and can only be recorded on its streams, so
  /// each device keeps its own.
  cudaError_t take_event(unsigned device, PooledEvent **event) {
    {
      std::lock_guard lock(events_mutex_);
      std::vector<PooledEvent *> &spare = spare_events_[device];
      if (!spare.empty()) {
        *event = spare.back();
        spare.pop_back();
        return cudaSuccess;
      }
    }
    DeviceGuard guard(device);
    cudaEvent_t made = nullptr;
    const cudaError_t error = cudaEventCreateWithFlags(&made, cudaEventDisableTiming);
    if (error != cudaSuccess) return error;
    std::lock_guard lock(events_mutex_);
    *event = &events_.emplace_back(PooledEvent{made, device});
    return cudaSuccess;
  }
  void put_event(PooledEvent *event) noexcept {
    std::lock_guard lock(events_mutex_);
    spare_events_[event->device].push_back(event);
  }

  Event record_event(Stream stream) override {
    int device = -1;
    check_cuda(cudaStreamGetDevice(native(stream), &device), "cudaStreamGetDevice");
    PooledEvent *event = nullptr;
    cudaError_t error = take_event(static_cast<unsigned>(device), &event);
    if (error == cudaSuccess) error = cudaEventRecord(event->event, native(stream));
    if (error != cudaSuccess) {
      if (event) put_event(event);
      check_cuda(error, "cudaEventRecord");
    }
    return Event{reinterpret_cast<std::uintptr_t>(event)};
  }

  bool event_complete(Event event) override {
    const cudaError_t state = cudaEventQuery(pooled(event.native)->event);
    if (state == cudaErrorNotReady) return false;
    check_cuda(state, "cudaEventQuery");
    return true;
  }

  void synchronize(Event event) override {
    check_cuda(cudaEventSynchronize(pooled(event.native)->event), "cudaEventSynchronize");
  }
  void destroy_event(Event event) noexcept override { put_event(pooled(event.native)); }
  /// A reap's events back to the spares under one lock.
  void destroy_events(std::span<const Event> events) noexcept override {
    std::lock_guard lock(events_mutex_);
    for (Event event : events)
      spare_events_[pooled(event.native)->device].push_back(pooled(event.native));
  }
  void synchronize_stream(Stream stream) override {
    check_cuda(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
  }
  void synchronize_device(Location device) override {
    DeviceGuard guard(device.device());
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

private:
  /// Staged pageable transfers: the size of each bounce buffer, and the
  /// copier's worker threads (resolved options).
  const std::size_t chunk_;
  const std::size_t slot_; ///< the ring's slot (divides chunk_); 0: the buffers in turn
  const unsigned copy_threads_;
  const bool streaming_stores_;  ///< the copier's stores bypass the cache
  const bool pinned_huge_pages_; ///< how its pinned blocks are made (make_pinned_block)
  const unsigned fault_threads_; ///< and on how many threads their pages are faulted in
  /// The pinned pool's block for `nbytes`: on huge pages, whole ones (what
  /// the block takes, so the pool's bound counts what it holds, and sizes
  /// that round to the same pages share blocks: at N = 2^16 a ciphertext
  /// of 9 MiB takes the 10 MiB block of one a level larger); else the size
  /// itself. The time model's pools keep them alike
  /// (fhr/model/runtime_pools.hpp).
  std::size_t pinned_block(std::size_t nbytes) const {
    return pinned_block_bytes(nbytes, pinned_huge_pages_);
  }
  PinnedPool::Owner pinned_;
  PageablePool::Owner pageable_;
  /// Per device: copies into it (and its allocations), copies out of it.
  std::vector<cudaStream_t> transfer_streams_;
  std::vector<cudaStream_t> outbound_streams_;
  std::mutex events_mutex_;
  std::deque<PooledEvent> events_;                       ///< every event made (addresses stay)
  std::vector<std::vector<PooledEvent *>> spare_events_; ///< per device
  /// [owner * count + peer]: may `peer` read `owner`'s pool memory?
  std::vector<bool> peer_access_;
  /// Staged pageable transfers: the smallest transfer staged.
  static constexpr std::size_t kStagedMinimum = std::size_t{4} << 20;
  /// Device blocks up to this size are kept by the backend for reuse.
  static constexpr std::size_t kSmallBlock = kDeviceSmallBlockMaxBytes;
  /// The size class of a small block: sizes rounded up to a sixteenth of
  /// the power of two above them (at least 256 bytes, the driver's
  /// alignment), so at most 12.5% is wasted and neighbouring sizes share
  /// kept blocks.
  static std::size_t small_block_class(std::size_t nbytes) {
    constexpr std::size_t kMinimum = 256;
    if (nbytes <= kMinimum) return kMinimum;
    std::size_t power = kMinimum;
    while (power < nbytes)
      power <<= 1;
    const std::size_t step = std::max(kMinimum, power / 16);
    return (nbytes + step - 1) / step * step;
  }
  using DevicePool = BlockPool<std::byte *>;
  /// Per device; empty when the options turn the cache off.
  std::vector<DevicePool::Owner> small_blocks_;
  std::vector<std::shared_ptr<SmallBlockSlabs>> small_slabs_; ///< where they come from, per device
  std::mutex staging_mutex_;
  std::byte *bounce_[2] = {nullptr, nullptr};
  std::vector<std::vector<cudaEvent_t>> bounce_ready_; ///< per device, per slot of the ring

  std::unique_ptr<HostCopier> copier_;
};

} // namespace

unsigned cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return static_cast<unsigned>(count);
}

Stream create_cuda_stream(Location device) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  DeviceGuard guard(device.device());
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return Stream{reinterpret_cast<std::uintptr_t>(stream)};
}

void destroy_cuda_stream(Stream stream) noexcept {
  cudaStreamSynchronize(native(stream));
  cudaStreamDestroy(native(stream));
}

namespace {

/// A whole number from the environment (decimal digits alone, within
/// unsigned long), or nothing.
std::optional<unsigned long> environment_number(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  for (const char *c = text; *c; ++c)
    if (*c < '0' || *c > '9') return std::nullopt;
  errno = 0;
  const unsigned long number = std::strtoul(text, nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return number;
}

} // namespace

CudaBackendOptions resolved(CudaBackendOptions options) {
  if (const auto threads = environment_number("FHR_HOST_COPY_THREADS"))
    options.host_copy_threads = static_cast<unsigned>(std::min(*threads, 256ul));
  if (const auto mib = environment_number("FHR_STAGING_CHUNK_MIB"); mib && *mib > 0)
    options.staging_chunk_bytes = static_cast<std::size_t>(std::min(*mib, 1024ul)) << 20;
  if (const auto streaming = environment_number("FHR_HOST_COPY_STREAMING"); streaming && *streaming <= 1)
    options.host_copy_streaming_stores = *streaming == 1;
  if (const auto huge = environment_number("FHR_PINNED_HUGE_PAGES"); huge && *huge <= 1)
    options.pinned_huge_pages = *huge == 1;
  if (options.host_copy_threads == 0) {
    // The calling thread copies too: one worker fewer than the cores.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    options.host_copy_threads = std::min(15u, cores - 1);
  }
  if (options.staging_chunk_bytes == 0) options.staging_chunk_bytes = std::size_t{32} << 20;
  if (const auto mib = environment_number("FHR_STAGING_SLOT_MIB"); mib && *mib > 0)
    options.staging_slot_bytes = static_cast<std::size_t>(std::min(*mib, 1024ul)) << 20;
  if (options.staging_slot_bytes == 0) return options; // the buffers in turn
  // A slot is whole copier pieces: a power of two of at least one piece
  // that divides the chunk, the largest such up to the one asked for. A
  // chunk under a piece is one slot; a larger chunk that is not whole
  // pieces has no such slot, and its buffers are used in turn.
  constexpr std::size_t kPiece = HostCopier::kCopyPiece;
  const std::size_t chunk = options.staging_chunk_bytes;
  if (chunk < kPiece) {
    options.staging_slot_bytes = chunk;
    return options;
  }
  if (chunk % kPiece != 0) {
    options.staging_slot_bytes = 0;
    return options;
  }
  std::size_t slot = kPiece;
  while (slot * 2 <= options.staging_slot_bytes && chunk % (slot * 2) == 0)
    slot *= 2;
  options.staging_slot_bytes = slot;
  return options;
}

unsigned pinned_fault_threads(const CudaBackendOptions &options) { return options.host_copy_threads + 1; }

std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions options) {
  return std::make_unique<CudaBackend>(resolved(options));
}

} // namespace fhr

#include "fhr/cuda/cuda_backend.hpp"

#include "host_copier.hpp"

#include "fhr/runtime/block_pool.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fhr {

namespace {

void check(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  cudaGetLastError(); // clear a sticky non-fatal error so later calls report their own
  throw BackendError(std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                     ")");
}

cudaStream_t native(Stream stream) { return reinterpret_cast<cudaStream_t>(stream.native); }
cudaEvent_t native(Event event) { return reinterpret_cast<cudaEvent_t>(event.native); }

/// Makes `device` the calling thread's current device for its lifetime and
/// then gives the thread its own device back: the backend never changes
/// which device the application's own CUDA calls go to. Never throws (a
/// failure shows in the CUDA call that follows).
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ == device) {
      previous_ = -1;
      return;
    }
    cudaGetLastError();
    cudaSetDevice(device);
  }
  explicit DeviceGuard(unsigned device) : DeviceGuard(static_cast<int>(device)) {}
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous_ = -1;
};

/// Page-locked, portable host memory from the driver.
std::byte *pin(std::size_t nbytes) {
  void *block = nullptr;
  check(cudaHostAlloc(&block, nbytes == 0 ? 1 : nbytes, cudaHostAllocPortable), "cudaHostAlloc");
  return static_cast<std::byte *>(block);
}

void unpin(std::byte *block, std::size_t) { cudaFreeHost(block); }

/// Pinning 256 MiB costs about 100 ms, reusing a kept block nothing.
using PinnedPool = BlockPool<std::byte *>;

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(CudaBackendOptions options)
      : pinned_(std::make_shared<PinnedPool>(options.pinned_pool_bytes, pin, unpin)) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw BackendError("no CUDA device");
    spare_events_.resize(static_cast<std::size_t>(count));
    for (int device = 0; device < count; ++device) {
      DeviceGuard guard(device);
      cudaMemPool_t pool = nullptr;
      check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
      std::uint64_t threshold = options.device_pool_release_threshold;
      check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
            "cudaMemPoolSetAttribute");
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      transfer_streams_.push_back(stream);
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      outbound_streams_.push_back(stream);
    }
    // Memory from a device's pool is visible to the other devices only once
    // the pool grants them access: done for every peer that can reach it, so
    // device-to-device copies go directly; the others are staged (copy()).
    peer_access_.assign(static_cast<std::size_t>(count) * count, false);
    for (int owner = 0; owner < count; ++owner) {
      cudaMemPool_t pool = nullptr;
      check(cudaDeviceGetDefaultMemPool(&pool, owner), "cudaDeviceGetDefaultMemPool");
      for (int peer = 0; peer < count; ++peer) {
        int can = 0;
        if (peer == owner || cudaDeviceCanAccessPeer(&can, peer, owner) != cudaSuccess || !can) continue;
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = peer;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        check(cudaMemPoolSetAccess(pool, &access, 1), "cudaMemPoolSetAccess");
        peer_access_[static_cast<std::size_t>(owner) * count + peer] = true;
      }
    }
    if (options.device_small_block_cache_bytes > 0)
      for (int device = 0; device < count; ++device) {
        // Taken from the device's pool on its transfer stream, so copies on
        // that stream follow the allocation; freed blocks carry no pending
        // work (the manager frees a replica only once nothing reads it).
        cudaStream_t stream = transfer_streams_[static_cast<std::size_t>(device)];
        small_blocks_.push_back(std::make_shared<DevicePool>(
            options.device_small_block_cache_bytes,
            [device, stream](std::size_t nbytes) {
              DeviceGuard guard(device);
              void *memory = nullptr;
              check(cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream), "cudaMallocAsync");
              return static_cast<std::byte *>(memory);
            },
            [device](std::byte *block, std::size_t) {
              DeviceGuard guard(device);
              cudaFree(block); // synchronous: the backend's streams may be gone
            }));
      }
  }

  ~CudaBackend() override {
    for (const auto &cache : small_blocks_)
      cache->trim(); // blocks still in use come back to a cache that frees them
    for (std::byte *bounce : bounce_)
      if (bounce) cudaFreeHost(bounce);
    for (const auto &events : bounce_ready_)
      for (cudaEvent_t event : events)
        if (event) cudaEventDestroy(event);
    for (const auto &[event, device] : event_device_)
      cudaEventDestroy(event); // every event the backend made, spare or not
    for (const auto *streams : {&transfer_streams_, &outbound_streams_})
      for (cudaStream_t stream : *streams) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
      }
  }

  DeviceConfig devices() const override {
    return DeviceConfig{true, static_cast<unsigned>(transfer_streams_.size())};
  }

  Storage allocate(Location location, std::size_t nbytes) override {
    if (location == Location::pageable()) {
      // Large values on transparent huge pages: a transfer into fresh
      // pageable memory is bound by page faults, 512 times fewer this way.
      const std::size_t alignment = nbytes >= kHugePage ? kHugePage : 64;
      const std::size_t rounded = ((nbytes == 0 ? 1 : nbytes) + alignment - 1) / alignment * alignment;
      void *memory = std::aligned_alloc(alignment, rounded);
      if (!memory) throw std::bad_alloc();
      if (alignment == kHugePage) ::madvise(memory, rounded, MADV_HUGEPAGE);
      return Storage(static_cast<std::byte *>(memory), nbytes, location,
                     [](std::byte *data) { std::free(data); });
    }
    if (location == Location::pinned()) {
      std::byte *block = pinned_->take(nbytes);
      return Storage(block, nbytes, location,
                     [pool = pinned_, nbytes](std::byte *data) { pool->give_back(data, nbytes); });
    }
    const unsigned device = location.device();
    if (device >= transfer_streams_.size()) throw BackendError("no CUDA device " + location.name());
    if (nbytes <= kSmallBlock && !small_blocks_.empty()) {
      // Small values come back and go again all the time (ciphertexts of a
      // level, scratch): a kept block saves the pool's bookkeeping on both
      // ends, which is most of what a 4 KiB transfer costs beyond the copy.
      const std::shared_ptr<DevicePool> &cache = small_blocks_[device];
      std::byte *block = cache->take(nbytes);
      return Storage(block, nbytes, location,
                     [cache, nbytes](std::byte *data) { cache->give_back(data, nbytes); });
    }
    DeviceGuard guard(device);
    void *memory = nullptr;
    cudaStream_t stream = transfer_streams_[device];
    // Stream-ordered on the device's transfer stream: copies on that stream
    // follow it; copy() synchronises it first for any other stream.
    check(cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream), "cudaMallocAsync");
    return Storage(static_cast<std::byte *>(memory), nbytes, location, [stream, device](std::byte *data) {
      // Freed only once nothing reads it (the manager's protection rules),
      // back into the device's pool.
      DeviceGuard on_owner(device);
      cudaFreeAsync(data, stream);
    });
  }

  void copy(const Storage &from, Storage &to, Stream stream) override {
    if (std::optional<StartedCopy> started = start_copy(from, to, stream))
      // §17: materialization is synchronous; the destination is installed
      // only once its bytes are there.
      check(cudaStreamSynchronize(started->stream), "cudaStreamSynchronize");
  }

  bool overlaps_copies() const override { return true; }

  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override {
    const std::optional<StartedCopy> started = start_copy(from, to, stream);
    if (!started) return {};
    cudaEvent_t done = nullptr;
    cudaError_t error = take_event(started->device, &done);
    if (error == cudaSuccess) error = cudaEventRecord(done, started->stream);
    if (error != cudaSuccess) {
      cudaStreamSynchronize(started->stream); // the copy must not outlive its storages
      if (done) put_event(done);
      check(error, "cudaEventRecord");
    }
    return CopyInFlight{reinterpret_cast<std::uintptr_t>(done)};
  }

  void finish_copy(CopyInFlight copy) override {
    if (copy.native == 0) return;
    const auto done = reinterpret_cast<cudaEvent_t>(copy.native);
    const cudaError_t error = cudaEventSynchronize(done);
    put_event(done);
    check(error, "cudaEventSynchronize");
  }

  std::optional<PoolFigures> pool_figures(Location location) const override {
    if (location == Location::pinned()) return pinned_->figures();
    if (!location.is_cuda() || location.device() >= transfer_streams_.size()) return std::nullopt;
    const int device = static_cast<int>(location.device());
    cudaMemPool_t pool = nullptr;
    std::uint64_t used = 0, reserved = 0;
    std::size_t free = 0, total = 0;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute");
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
          "cudaMemPoolGetAttribute");
    DeviceGuard guard(device);
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    // Blocks the small-block cache keeps are in use for the driver's pool,
    // idle for the runtime.
    const std::uint64_t cached =
        small_blocks_.empty() ? 0 : small_blocks_[location.device()]->figures().idle_bytes;
    return PoolFigures{used - std::min(used, cached), (reserved > used ? reserved - used : 0) + cached, free};
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
      std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
      return std::nullopt;
    }
    if (from.location().is_cuda() && to.location().is_cuda() && from.location() != to.location() &&
        !peer_access_[from.location().device() * transfer_streams_.size() + to.location().device()]) {
      // No peer access: through a pinned block.
      std::byte *staging = pinned_->take(from.size());
      try {
        Storage bounce(staging, from.size(), Location::pinned(), [](std::byte *) {});
        copy(from, bounce, Stream{});
        copy(bounce, to, stream);
      } catch (...) {
        pinned_->give_back(staging, from.size());
        throw;
      }
      pinned_->give_back(staging, from.size());
      return std::nullopt;
    }
    // Into a device: the caller's stream or the device's inbound transfer
    // stream; out of a device to the host: the device's outbound stream, so
    // that an eviction and a prefetch use both copy engines at once.
    const bool inbound = to.location().is_cuda();
    const Location device = inbound ? to.location() : from.location();
    cudaStream_t transfer = transfer_streams_[device.device()];
    cudaStream_t s = !inbound ? outbound_streams_[device.device()] : stream ? native(stream) : transfer;
    DeviceGuard guard(device.device());
    // A fresh device block was allocated on the transfer stream.
    if (inbound && s != transfer) check(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
    const bool pageable_side =
        from.location() == Location::pageable() || to.location() == Location::pageable();
    if (pageable_side && from.size() >= kStagedMinimum) {
      staged_copy(from, to, s, device.device());
      return std::nullopt;
    }
    check(cudaMemcpyAsync(to.bytes().data(), from.bytes().data(), from.size(), cudaMemcpyDefault, s),
          "cudaMemcpyAsync");
    return StartedCopy{s, device.device()};
  }

  void read(const Storage &from, std::span<std::byte> out) override {
    if (!from.location().is_cuda()) return CopyEngine::read(from, out);
    DeviceGuard guard(from.location().device());
    check(cudaMemcpy(out.data(), from.bytes().data(), out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  /// Pageable <-> device through two pinned bounce buffers: the host copy
  /// of one chunk (split over worker threads) overlaps the DMA of the other,
  /// instead of the driver's synchronous staging.
  void staged_copy(const Storage &from, Storage &to, cudaStream_t s, unsigned device) {
    std::lock_guard lock(staging_mutex_);
    prepare_staging();
    // Events belong to a device: each device has its own pair.
    cudaEvent_t *bounce_ready = bounce_ready_[device].data();
    if (!bounce_ready[0])
      for (int b = 0; b < 2; ++b)
        check(cudaEventCreateWithFlags(&bounce_ready[b], cudaEventDisableTiming), "cudaEventCreate");
    const bool to_device = to.location().is_cuda();
    const std::size_t n = from.size();
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    auto chunk_size = [&](std::size_t k) { return std::min(kChunk, n - k * kChunk); };
    if (to_device) {
      for (std::size_t k = 0; k < chunks; ++k) {
        const std::size_t b = k % 2;
        if (k >= 2) check(cudaEventSynchronize(bounce_ready[b]), "cudaEventSynchronize");
        copier_->copy(bounce_[b], from.bytes().data() + k * kChunk, chunk_size(k));
        check(cudaMemcpyAsync(to.bytes().data() + k * kChunk, bounce_[b], chunk_size(k),
                              cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync");
        check(cudaEventRecord(bounce_ready[b], s), "cudaEventRecord");
      }
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      return;
    }
    auto fetch = [&](std::size_t k) {
      const std::size_t b = k % 2;
      check(cudaMemcpyAsync(bounce_[b], from.bytes().data() + k * kChunk, chunk_size(k),
                            cudaMemcpyDeviceToHost, s),
            "cudaMemcpyAsync");
      check(cudaEventRecord(bounce_ready[b], s), "cudaEventRecord");
    };
    fetch(0);
    for (std::size_t k = 0; k < chunks; ++k) {
      if (k + 1 < chunks) fetch(k + 1);
      check(cudaEventSynchronize(bounce_ready[k % 2]), "cudaEventSynchronize");
      copier_->copy(to.bytes().data() + k * kChunk, bounce_[k % 2], chunk_size(k));
    }
  }

  void prepare_staging() {
    if (copier_) return;
    for (int b = 0; b < 2; ++b) {
      void *block = nullptr;
      check(cudaHostAlloc(&block, kChunk, cudaHostAllocPortable), "cudaHostAlloc");
      bounce_[b] = static_cast<std::byte *>(block);
    }
    bounce_ready_.assign(transfer_streams_.size(), {nullptr, nullptr});
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    copier_ = std::make_unique<HostCopier>(std::min(15u, cores > 1 ? cores - 1 : 0u));
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
  cudaError_t take_event(unsigned device, cudaEvent_t *event) {
    {
      std::lock_guard lock(events_mutex_);
      std::vector<cudaEvent_t> &spare = spare_events_[device];
      if (!spare.empty()) {
        *event = spare.back();
        spare.pop_back();
        return cudaSuccess;
      }
    }
    DeviceGuard guard(device);
    const cudaError_t error = cudaEventCreateWithFlags(event, cudaEventDisableTiming);
    if (error != cudaSuccess) return error;
    std::lock_guard lock(events_mutex_);
    event_device_.emplace(*event, device);
    return cudaSuccess;
  }
  void put_event(cudaEvent_t event) noexcept {
    std::lock_guard lock(events_mutex_);
    spare_events_[event_device_.at(event)].push_back(event);
  }

  Event record_event(Stream stream) override {
    int device = -1;
    check(cudaStreamGetDevice(native(stream), &device), "cudaStreamGetDevice");
    cudaEvent_t event = nullptr;
    cudaError_t error = take_event(static_cast<unsigned>(device), &event);
    if (error == cudaSuccess) error = cudaEventRecord(event, native(stream));
    if (error != cudaSuccess) {
      if (event) put_event(event);
      check(error, "cudaEventRecord");
    }
    return Event{reinterpret_cast<std::uintptr_t>(event)};
  }

  bool event_complete(Event event) override {
    const cudaError_t state = cudaEventQuery(native(event));
    if (state == cudaErrorNotReady) return false;
    check(state, "cudaEventQuery");
    return true;
  }

  void synchronize(Event event) override {
    check(cudaEventSynchronize(native(event)), "cudaEventSynchronize");
  }
  void destroy_event(Event event) noexcept override { put_event(native(event)); }
  void synchronize_stream(Stream stream) override {
    check(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
  }
  void synchronize_device(Location device) override {
    DeviceGuard guard(device.device());
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

private:
  std::shared_ptr<PinnedPool> pinned_;
  /// Per device: copies into it (and its allocations), copies out of it.
  std::vector<cudaStream_t> transfer_streams_;
  std::vector<cudaStream_t> outbound_streams_;
  std::mutex events_mutex_;
  std::vector<std::vector<cudaEvent_t>> spare_events_; ///< per device
  std::unordered_map<cudaEvent_t, unsigned> event_device_;
  /// [owner * count + peer]: may `peer` read `owner`'s pool memory?
  std::vector<bool> peer_access_;
  /// Staged pageable transfers: chunk size, and the smallest transfer staged.
  static constexpr std::size_t kChunk = std::size_t{32} << 20;
  static constexpr std::size_t kStagedMinimum = std::size_t{4} << 20;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  /// Device blocks up to this size are kept by the backend for reuse.
  static constexpr std::size_t kSmallBlock = std::size_t{1} << 20;
  using DevicePool = BlockPool<std::byte *>;
  /// Per device; empty when the options turn the cache off.
  std::vector<std::shared_ptr<DevicePool>> small_blocks_;
  std::mutex staging_mutex_;
  std::byte *bounce_[2] = {nullptr, nullptr};
  std::vector<std::array<cudaEvent_t, 2>> bounce_ready_; ///< per device

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
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return Stream{reinterpret_cast<std::uintptr_t>(stream)};
}

void destroy_cuda_stream(Stream stream) noexcept {
  cudaStreamSynchronize(native(stream));
  cudaStreamDestroy(native(stream));
}

std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions options) {
  return std::make_unique<CudaBackend>(options);
}

} // namespace fhr

#include "fhr/cuda/cuda_backend.hpp"

#include "host_copier.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace fhr {

namespace {

void check(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  cudaGetLastError(); // clear a sticky non-fatal error so later calls report their own
  throw BackendError(std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

cudaStream_t native(Stream stream) { return reinterpret_cast<cudaStream_t>(stream.native); }
cudaEvent_t native(Event event) { return reinterpret_cast<cudaEvent_t>(event.native); }

/// Page-locked blocks by exact size, kept after their replica goes:
/// pinning 256 MiB costs about 100 ms, reusing a block nothing.
class PinnedPool {
public:
  explicit PinnedPool(std::uint64_t limit) : limit_(limit) {}
  ~PinnedPool() {
    for (auto &[size, block] : free_)
      cudaFreeHost(block);
  }

  std::byte *take(std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = free_.find(nbytes); it != free_.end()) {
        std::byte *block = it->second;
        free_.erase(it);
        kept_ -= nbytes;
        return block;
      }
    }
    void *block = nullptr;
    check(cudaHostAlloc(&block, nbytes == 0 ? 1 : nbytes, cudaHostAllocPortable), "cudaHostAlloc");
    return static_cast<std::byte *>(block);
  }

  void give_back(std::byte *block, std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      if (kept_ + nbytes <= limit_) {
        free_.emplace(nbytes, block);
        kept_ += nbytes;
        return;
      }
    }
    cudaFreeHost(block);
  }

private:
  std::mutex mutex_;
  std::multimap<std::size_t, std::byte *> free_;
  std::uint64_t kept_ = 0;
  std::uint64_t limit_;
};

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(CudaBackendOptions options)
      : pinned_(std::make_shared<PinnedPool>(options.pinned_pool_bytes)) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw BackendError("no CUDA device");
    for (int device = 0; device < count; ++device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      cudaMemPool_t pool = nullptr;
      check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
      std::uint64_t threshold = options.device_pool_release_threshold;
      check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
            "cudaMemPoolSetAttribute");
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      transfer_streams_.push_back(stream);
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
  }

  ~CudaBackend() override {
    for (std::byte *bounce : bounce_)
      if (bounce) cudaFreeHost(bounce);
    for (const auto &events : bounce_ready_)
      for (cudaEvent_t event : events)
        if (event) cudaEventDestroy(event);
    for (cudaEvent_t event : spare_events_)
      cudaEventDestroy(event);
    for (cudaStream_t stream : transfer_streams_) {
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
      return Storage(static_cast<std::byte *>(memory), nbytes, location, [](std::byte *data) { std::free(data); });
    }
    if (location == Location::pinned()) {
      std::byte *block = pinned_->take(nbytes);
      return Storage(block, nbytes, location,
                     [pool = pinned_, nbytes](std::byte *data) { pool->give_back(data, nbytes); });
    }
    const unsigned device = location.device();
    if (device >= transfer_streams_.size()) throw BackendError("no CUDA device " + location.name());
    check(cudaSetDevice(static_cast<int>(device)), "cudaSetDevice");
    void *memory = nullptr;
    cudaStream_t stream = transfer_streams_[device];
    // Stream-ordered on the device's transfer stream: copies on that stream
    // follow it; copy() synchronises it first for any other stream.
    check(cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream), "cudaMallocAsync");
    return Storage(static_cast<std::byte *>(memory), nbytes, location, [stream, device](std::byte *data) {
      // Freed only once nothing reads it (the manager's protection rules),
      // back into the device's pool.
      cudaSetDevice(static_cast<int>(device));
      cudaFreeAsync(data, stream);
    });
  }

  void copy(const Storage &from, Storage &to, Stream stream) override {
    if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
    if (from.size() == 0) return;
    if (!from.location().is_cuda() && !to.location().is_cuda()) {
      std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
      return;
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
      return;
    }
    const Location device = to.location().is_cuda() ? to.location() : from.location();
    cudaStream_t transfer = transfer_streams_[device.device()];
    cudaStream_t s = stream ? native(stream) : transfer;
    check(cudaSetDevice(static_cast<int>(device.device())), "cudaSetDevice");
    // A fresh device block was allocated on the transfer stream.
    if (s != transfer) check(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
    const bool pageable_side = from.location() == Location::pageable() || to.location() == Location::pageable();
    if (pageable_side && from.size() >= kStagedMinimum) {
      staged_copy(from, to, s, device.device());
      return;
    }
    check(cudaMemcpyAsync(to.bytes().data(), from.bytes().data(), from.size(), cudaMemcpyDefault, s),
          "cudaMemcpyAsync");
    // §17: materialization is synchronous; the destination is installed
    // only once its bytes are there.
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  void read(const Storage &from, std::span<std::byte> out) override {
    if (!from.location().is_cuda()) return Backend::read(from, out);
    check(cudaSetDevice(static_cast<int>(from.location().device())), "cudaSetDevice");
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
        check(cudaMemcpyAsync(to.bytes().data() + k * kChunk, bounce_[b], chunk_size(k), cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync");
        check(cudaEventRecord(bounce_ready[b], s), "cudaEventRecord");
      }
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      return;
    }
    auto fetch = [&](std::size_t k) {
      const std::size_t b = k % 2;
      check(cudaMemcpyAsync(bounce_[b], from.bytes().data() + k * kChunk, chunk_size(k), cudaMemcpyDeviceToHost, s),
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

  Event record_event(Stream stream) override {
    cudaEvent_t event = nullptr;
    {
      std::lock_guard lock(events_mutex_);
      if (!spare_events_.empty()) {
        event = spare_events_.back();
        spare_events_.pop_back();
      }
    }
    if (!event) check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    if (cudaError_t error = cudaEventRecord(event, native(stream)); error != cudaSuccess) {
      cudaEventDestroy(event);
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

  void synchronize(Event event) override { check(cudaEventSynchronize(native(event)), "cudaEventSynchronize"); }
  /// Events are kept for reuse (creating one costs more than the rest of a
  /// lease): a recorded event is re-recorded by the next lease.
  void destroy_event(Event event) noexcept override {
    std::lock_guard lock(events_mutex_);
    spare_events_.push_back(native(event));
  }
  void synchronize_stream(Stream stream) override {
    check(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize");
  }
  void synchronize_device(Location device) override {
    check(cudaSetDevice(static_cast<int>(device.device())), "cudaSetDevice");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

private:
  std::shared_ptr<PinnedPool> pinned_;
  std::vector<cudaStream_t> transfer_streams_;
  std::mutex events_mutex_;
  std::vector<cudaEvent_t> spare_events_;
  /// [owner * count + peer]: may `peer` read `owner`'s pool memory?
  std::vector<bool> peer_access_;
  /// Staged pageable transfers: chunk size, and the smallest transfer staged.
  static constexpr std::size_t kChunk = std::size_t{32} << 20;
  static constexpr std::size_t kStagedMinimum = std::size_t{4} << 20;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
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

DeviceBuffer copy_to_device(Location device, std::span<const std::byte> bytes) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  check(cudaSetDevice(static_cast<int>(device.device())), "cudaSetDevice");
  void *memory = nullptr;
  check(cudaMalloc(&memory, bytes.empty() ? 1 : bytes.size()), "cudaMalloc");
  if (cudaError_t error = cudaMemcpy(memory, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
      error != cudaSuccess) {
    cudaFree(memory);
    check(error, "cudaMemcpy");
  }
  return DeviceBuffer{static_cast<std::byte *>(memory), [](std::byte *data) { cudaFree(data); }};
}

void submit_waiting_reader(Stream stream, const std::atomic<bool> *done) {
  check(cudaLaunchHostFunc(
            native(stream),
            [](void *flag) {
              while (!static_cast<const std::atomic<bool> *>(flag)->load())
                std::this_thread::yield();
            },
            const_cast<std::atomic<bool> *>(done)),
        "cudaLaunchHostFunc");
}

Stream create_cuda_stream(Location device) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  check(cudaSetDevice(static_cast<int>(device.device())), "cudaSetDevice");
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

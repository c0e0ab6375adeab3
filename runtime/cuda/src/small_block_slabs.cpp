#include "small_block_slabs.hpp"

#include "fhr/cuda/cuda_calls.hpp"

#include <algorithm>

namespace fhr {

SmallBlockSlabs::SmallBlockSlabs(int device, cudaStream_t stream, std::uint64_t limit_bytes)
    : device_(device), stream_(stream), limit_(limit_bytes) {
  DeviceGuard guard(device_);
  check_cuda(cudaStreamCreateWithFlags(&free_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

SmallBlockSlabs::~SmallBlockSlabs() {
  DeviceGuard guard(device_);
  cudaStreamSynchronize(free_stream_);
  cudaStreamDestroy(free_stream_);
  for (std::byte *slab : slabs_)
    cudaFree(slab);
}

bool SmallBlockSlabs::carved(const std::byte *block) const {
  return std::any_of(slabs_.begin(), slabs_.end(),
                     [&](const std::byte *slab) { return block >= slab && block < slab + kSlabBytes; });
}

std::byte *SmallBlockSlabs::take(std::size_t nbytes) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = spare_.find(nbytes); it != spare_.end() && !it->second.empty()) {
      std::byte *block = it->second.back();
      it->second.pop_back();
      figures_.carved_live += nbytes;
      return block;
    }
    if (nbytes <= kSlabBytes) {
      if (carved_in_last_ + nbytes > kSlabBytes && figures_.slab_bytes + kSlabBytes <= limit_) {
        DeviceGuard guard(device_);
        void *slab = nullptr;
        if (cudaMalloc(&slab, kSlabBytes) == cudaSuccess) {
          slabs_.push_back(static_cast<std::byte *>(slab));
          figures_.slab_bytes += kSlabBytes;
          carved_in_last_ = 0;
        } else {
          cudaGetLastError(); // out of memory for a slab: the pool may still have room
        }
      }
      if (carved_in_last_ + nbytes <= kSlabBytes) {
        std::byte *block = slabs_.back() + carved_in_last_;
        carved_in_last_ += nbytes;
        figures_.carved_live += nbytes;
        return block;
      }
    }
  }
  DeviceGuard guard(device_);
  void *memory = nullptr;
  check_cuda(cudaMallocAsync(&memory, nbytes == 0 ? 1 : nbytes, stream_), "cudaMallocAsync");
  std::lock_guard lock(mutex_);
  figures_.pool_live += nbytes;
  return static_cast<std::byte *>(memory);
}

void SmallBlockSlabs::release(std::byte *block, std::size_t nbytes) {
  {
    std::lock_guard lock(mutex_);
    if (carved(block)) {
      spare_[nbytes].push_back(block);
      figures_.carved_live -= nbytes;
      return;
    }
    figures_.pool_live -= nbytes;
  }
  // Back to the device's pool, stream-ordered on a stream of this object's
  // own, which lives as long as any block (the backend's may be gone) and
  // carries nothing else: nothing reads the block any more (the manager
  // frees a replica only then), and an allocation that reuses the memory
  // waits for no one's work. (cudaFree left such blocks counted as used by
  // the pool on the H200's driver, and the legacy default stream would tie
  // the reuse to the application's blocking streams.)
  DeviceGuard guard(device_);
  cudaFreeAsync(block, free_stream_);
}

SmallBlockSlabs::Figures SmallBlockSlabs::figures() const {
  std::lock_guard lock(mutex_);
  return figures_;
}

} // namespace fhr

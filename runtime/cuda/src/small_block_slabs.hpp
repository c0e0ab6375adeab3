#pragma once
/// \file
/// Where the CUDA backend's small-block cache gets device memory: blocks
/// carved from 2 MiB slabs of cudaMalloc memory, up to the cache's bound,
/// and from the device's stream-ordered pool beyond it.
///
/// Why not the pool for all of them: the driver takes 0.11 µs longer to
/// issue a 4 KiB copy into a block of the stream-ordered pool than into
/// cudaMalloc memory (bench/cuda_phases.cpp, third table: 2.68 against
/// 2.57 µs on the H200), a fifth of what a small ensure costs beyond a raw
/// copy (issue #15). A carved block never goes back to the driver on its
/// own: one the cache lets go of is kept here for the next block of its
/// size, and the slabs are freed with this object, which the cache's pool
/// holds until its last block is back (block_pool.hpp).
///
/// Device-to-device copies out of a carved block reach another device the
/// way cudaMemcpyAsync copies cudaMalloc memory without peer access
/// enabled (staged by the driver); small blocks only, so little is lost.
///
/// Carved blocks never serve another size, and the tail of a slab too short
/// for the next block stays unused (counted idle in the pool figures): the
/// slabs' idle memory is at most the cache's bound.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace fhr {

class SmallBlockSlabs {
public:
  /// `limit_bytes`: the slabs' total (the cache's bound); `stream`: the
  /// device's transfer stream, which orders the pool's blocks beyond it.
  SmallBlockSlabs(int device, cudaStream_t stream, std::uint64_t limit_bytes);
  ~SmallBlockSlabs();
  SmallBlockSlabs(const SmallBlockSlabs &) = delete;
  SmallBlockSlabs &operator=(const SmallBlockSlabs &) = delete;

  /// A block of `nbytes` (a size class, a multiple of 256): one let go of
  /// before, else carved, else from the pool. Throws BackendError.
  std::byte *take(std::size_t nbytes);
  /// A block take() made, with its size: kept when carved, back to the
  /// pool otherwise.
  void release(std::byte *block, std::size_t nbytes);

  struct Figures {
    std::uint64_t slab_bytes = 0;  ///< cudaMalloc'd
    std::uint64_t carved_live = 0; ///< of those, in blocks out of this object (used or kept by the cache)
    std::uint64_t pool_live = 0;   ///< blocks from the pool not yet released
  };
  Figures figures() const;

private:
  bool carved(const std::byte *block) const;

  static constexpr std::size_t kSlabBytes = std::size_t{2} << 20;
  const int device_;
  const cudaStream_t stream_; ///< the backend's transfer stream: take() only, which needs the backend
  cudaStream_t free_stream_ = nullptr; ///< where release() frees the pool's blocks
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::vector<std::byte *> slabs_;
  std::size_t carved_in_last_ = kSlabBytes; ///< bytes of the last slab handed out (full: none yet)
  std::map<std::size_t, std::vector<std::byte *>> spare_; ///< carved blocks let go of, by size
  Figures figures_;
};

} // namespace fhr

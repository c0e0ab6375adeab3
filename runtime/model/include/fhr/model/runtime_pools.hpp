#pragma once
/// \file
/// What allocating a step's destination costs on the CUDA backend, as the
/// time predictor (fhr/model/timeline.hpp) sees it: the runtime's pools
/// from cold (a fresh backend, as every run of `fhr-plan run` has). The
/// figures are the calibrated ones of the link profile (LinkModel):
///
/// - pinned: the backend keeps freed pinned blocks by exact size, up to
///   `pinned_pool_bytes` (runtime/manager/.../block_pool.hpp); a block of a
///   size it keeps costs nothing, any other is a fresh `cudaHostAlloc`:
///   `pinned_allocation_seconds_per_byte` per byte;
/// - a device: the stream-ordered pool keeps what it ever reserved (release
///   threshold: everything); an allocation that fits in what it reserved
///   and is not in use costs nothing, one that makes it grow costs
///   `device_allocation_seconds`;
/// - the first staged pageable <-> device copy makes the two pinned bounce
///   buffers of `staging_chunk_bytes` each.
///
/// Pageable destinations cost nothing here (their first touch is part of the
/// copy's bandwidth). Not modelled: memory resident before the steps (setup
/// places device values outside the pool, and their frees are counted as
/// the pool's), the pool's fragmentation, the small-block cache's size
/// classes (it allocates from the same pool). The cost is host time before the copy starts: the
/// runtime allocates a window's destinations one after another before it
/// starts each copy.

#include "fhr/model/link_model.hpp"
#include "fhr/model/location.hpp"

#include <array>
#include <cstdint>
#include <map>

namespace fhr {

/// The CUDA backend's pool settings (its defaults, fhr/cuda/cuda_backend.hpp).
struct PoolOptions {
  std::uint64_t pinned_pool_bytes = std::uint64_t{4} << 30;
  std::uint64_t staging_chunk_bytes = std::uint64_t{32} << 20;
};

class RuntimePools {
public:
  RuntimePools(const LinkModel &links, PoolOptions options) : links_(links), options_(options) {}

  /// Seconds to allocate `bytes` at `location` now; takes them.
  double allocate(Location location, std::uint64_t bytes);
  /// `bytes` at `location` freed: a pinned block goes back to the pool (as
  /// far as its bound allows), a device block back to the device's pool.
  void free(Location location, std::uint64_t bytes);
  /// Seconds the staging buffers cost the first staged copy; 0 after.
  double staging_seconds();

private:
  struct DevicePool {
    std::uint64_t reserved = 0, in_use = 0;
  };
  const LinkModel &links_;
  PoolOptions options_;
  std::map<std::uint64_t, std::uint64_t> pinned_kept_; ///< block size -> blocks kept
  std::uint64_t pinned_kept_bytes_ = 0;
  std::array<DevicePool, Location::kMaxCudaDevices> devices_{};
  bool staging_ready_ = false;
};

} // namespace fhr

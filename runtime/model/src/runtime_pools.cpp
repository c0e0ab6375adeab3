#include "fhr/model/runtime_pools.hpp"

#include <algorithm>

namespace fhr {

double RuntimePools::allocate(Location location, std::uint64_t bytes) {
  if (location == Location::pinned()) {
    if (auto kept = pinned_kept_.find(bytes); kept != pinned_kept_.end() && kept->second > 0) {
      --kept->second;
      pinned_kept_bytes_ -= bytes;
      return 0;
    }
    return static_cast<double>(bytes) * links_.pinned_allocation_seconds_per_byte;
  }
  if (!location.is_cuda()) return 0;
  DevicePool &pool = devices_[location.device()];
  pool.in_use += bytes;
  if (pool.in_use <= pool.reserved) return 0;
  pool.reserved = pool.in_use;
  return links_.device_allocation_seconds;
}

void RuntimePools::free(Location location, std::uint64_t bytes) {
  if (location == Location::pinned()) {
    if (pinned_kept_bytes_ + bytes > options_.pinned_pool_bytes) return; // back to the system
    ++pinned_kept_[bytes];
    pinned_kept_bytes_ += bytes;
    return;
  }
  if (!location.is_cuda()) return;
  DevicePool &pool = devices_[location.device()];
  pool.in_use -= std::min(pool.in_use, bytes);
}

double RuntimePools::staging_seconds() {
  if (staging_ready_) return 0;
  staging_ready_ = true;
  return 2 * static_cast<double>(options_.staging_chunk_bytes) * links_.pinned_allocation_seconds_per_byte;
}

} // namespace fhr

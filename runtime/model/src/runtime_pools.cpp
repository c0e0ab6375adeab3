#include "fhr/model/runtime_pools.hpp"

#include <algorithm>

namespace fhr {

bool RuntimePools::SizedPool::take(std::uint64_t size) {
  const auto kept = blocks.find(size);
  if (kept == blocks.end() || kept->second == 0) return false;
  --kept->second;
  bytes -= size;
  return true;
}

void RuntimePools::SizedPool::give_back(std::uint64_t size, std::uint64_t bound) {
  if (bytes + size > bound) return; // back to the system
  ++blocks[size];
  bytes += size;
}

double RuntimePools::allocate(Location location, std::uint64_t bytes) {
  if (location == Location::pinned()) {
    if (pinned_.take(bytes)) return 0;
    cold_.push_back(ColdAllocation{location, bytes});
    return static_cast<double>(bytes) * links_.pinned_allocation_seconds_per_byte;
  }
  if (location == Location::pageable()) {
    if (bytes < options_.pageable_pool_min_bytes || pageable_.take(bytes)) return 0;
    cold_.push_back(ColdAllocation{location, bytes});
    return static_cast<double>(bytes) * links_.pageable_first_touch_seconds_per_byte;
  }
  if (!location.is_cuda()) return 0;
  DevicePool &pool = devices_[location.device()];
  pool.in_use += bytes;
  if (pool.in_use <= pool.reserved) return 0;
  cold_.push_back(ColdAllocation{location, bytes});
  const double growth = static_cast<double>(pool.in_use - pool.reserved);
  pool.reserved = pool.in_use;
  return links_.device_allocation_seconds + growth * links_.device_growth_seconds_per_byte;
}

void RuntimePools::free(Location location, std::uint64_t bytes) {
  if (location == Location::pinned()) return pinned_.give_back(bytes, options_.pinned_pool_bytes);
  if (location == Location::pageable()) {
    if (bytes >= options_.pageable_pool_min_bytes) pageable_.give_back(bytes, options_.pageable_pool_bytes);
    return;
  }
  if (!location.is_cuda()) return;
  DevicePool &pool = devices_[location.device()];
  pool.in_use -= std::min(pool.in_use, bytes);
}

double RuntimePools::staging_seconds() {
  if (staging_ready_) return 0;
  staging_ready_ = true;
  cold_.push_back(ColdAllocation{Location::pageable(), 2 * options_.staging_chunk_bytes, true});
  return 2 * static_cast<double>(options_.staging_chunk_bytes) * links_.pinned_allocation_seconds_per_byte;
}

} // namespace fhr

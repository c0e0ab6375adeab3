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

std::vector<WarmUpBlock> warm_up_blocks(std::span<const ColdAllocation> cold,
                                        const std::array<std::uint64_t, Location::kCount> &resident,
                                        const DevicePeaks &peaks, std::uint64_t staging_block) {
  std::vector<WarmUpBlock> blocks;
  for (const ColdAllocation &allocation : cold)
    if (!allocation.location.is_cuda())
      blocks.push_back({allocation.location, allocation.staging ? staging_block : allocation.bytes});
  for (unsigned device = 0; device < peaks.size(); ++device) {
    const Location location = Location::cuda(device);
    const std::uint64_t before = resident[location.index()];
    if (peaks[device] <= before) continue;
    // A smaller block would go to the small-block cache and leave the pool as it is.
    blocks.push_back({location, std::max(peaks[device] - before, kDeviceSmallBlockMaxBytes + 1)});
  }
  return blocks;
}

DevicePeaks RuntimePools::device_peaks() const {
  DevicePeaks peaks{};
  for (unsigned device = 0; device < devices_.size(); ++device)
    peaks[device] = devices_[device].peak;
  return peaks;
}

double RuntimePools::cold(ColdAllocation allocation, double seconds) {
  cold_.push_back(allocation);
  cold_seconds_ += seconds;
  return seconds;
}

std::uint64_t RuntimePools::pageable_block(std::uint64_t bytes) const {
  const std::uint64_t unit = options_.pageable_pool_min_bytes;
  return (bytes + unit - 1) / unit * unit;
}

std::uint64_t RuntimePools::pinned_block(std::uint64_t bytes) const {
  return pinned_block_bytes(bytes, options_.pinned_huge_pages);
}

RuntimePools::RuntimePools(const LinkModel &links, PoolOptions options,
                           const std::array<std::uint64_t, Location::kCount> &resident)
    : links_(links), options_(options) {
  for (unsigned device = 0; device < devices_.size(); ++device) {
    DevicePool &pool = devices_[device];
    // The backend's start block, then setup's replicas from the same pool.
    pool.in_use = pool.peak = resident[Location::cuda(device).index()];
    pool.reserved = links_.device_pool_granule_bytes > 0
                        ? device_reservation(std::max(kDevicePoolStartBytes, pool.in_use))
                        : pool.in_use;
  }
}

std::uint64_t RuntimePools::device_reservation(std::uint64_t in_use) const {
  const std::uint64_t unit = links_.device_pool_granule_bytes;
  return unit == 0 ? in_use : (in_use + unit - 1) / unit * unit;
}

double RuntimePools::allocate(Location location, std::uint64_t bytes) {
  if (location == Location::pinned()) {
    const std::uint64_t block = pinned_block(bytes);
    if (pinned_.take(block)) return 0;
    return cold({location, bytes}, links_.pinned_allocation_seconds(block));
  }
  if (location == Location::pageable()) {
    if (bytes < options_.pageable_pool_min_bytes || pageable_.take(pageable_block(bytes))) return 0;
    return cold({location, bytes}, static_cast<double>(bytes) * links_.pageable_first_touch_seconds_per_byte);
  }
  if (!location.is_cuda()) return 0;
  DevicePool &pool = devices_[location.device()];
  pool.in_use += bytes;
  pool.peak = std::max(pool.peak, pool.in_use);
  if (pool.in_use <= pool.reserved) return 0;
  const std::uint64_t reserved = device_reservation(pool.in_use);
  const double growth = static_cast<double>(reserved - pool.reserved);
  pool.reserved = reserved;
  return cold({location, bytes},
              links_.device_allocation_seconds + growth * links_.device_growth_seconds_per_byte);
}

bool RuntimePools::grows_device_pool(Location location, std::uint64_t bytes) const {
  if (!location.is_cuda()) return false;
  const DevicePool &pool = devices_[location.device()];
  return pool.in_use + bytes > pool.reserved;
}

void RuntimePools::free(Location location, std::uint64_t bytes) {
  if (location == Location::pinned())
    return pinned_.give_back(pinned_block(bytes), options_.pinned_pool_bytes);
  if (location == Location::pageable()) {
    if (bytes >= options_.pageable_pool_min_bytes)
      pageable_.give_back(pageable_block(bytes), options_.pageable_pool_bytes);
    return;
  }
  if (!location.is_cuda()) return;
  DevicePool &pool = devices_[location.device()];
  pool.in_use -= std::min(pool.in_use, bytes);
}

double RuntimePools::staging_seconds() {
  if (staging_ready_) return 0;
  staging_ready_ = true;
  return cold({Location::pageable(), 2 * options_.staging_chunk_bytes, true},
              2 * links_.pinned_allocation_seconds(pinned_block(options_.staging_chunk_bytes)));
}

} // namespace fhr

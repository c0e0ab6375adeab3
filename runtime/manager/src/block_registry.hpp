#pragma once
// The blocks of non-pageable memory a backend without CUDA handed out
// (pinned blocks of the host backend; pinned and device blocks of the
// simulated one), so that MemoryResource::locate can tell them from
// pageable memory when a caller adopts a buffer. Shared with the storages'
// release functions, which may outlive the backend. Thread-safe.
#include "fhr/runtime/address_ranges.hpp"

#include "fhr/model/location.hpp"

#include <mutex>
#include <optional>

namespace fhr {

class BlockRegistry {
public:
  void add(const std::byte *start, std::size_t nbytes, Location location) {
    std::lock_guard lock(mutex_);
    blocks_.add(start, nbytes, location);
  }
  void remove(const std::byte *start) {
    std::lock_guard lock(mutex_);
    blocks_.remove(start);
  }
  /// A block's location when [data, data + nbytes) lies inside it, pageable
  /// when it touches no block, std::nullopt when it lies partly in one.
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const {
    std::lock_guard lock(mutex_);
    const auto found = blocks_.overlapping(data, nbytes);
    if (!found) return Location::pageable();
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    if (found->start <= begin && begin + nbytes <= found->end) return *found->payload;
    return std::nullopt;
  }

private:
  mutable std::mutex mutex_;
  AddressRanges<Location> blocks_;
};

} // namespace fhr

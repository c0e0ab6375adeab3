#pragma once
/// \file
/// Disjoint byte ranges of memory, by address, each with what it stands
/// for: the manager's index of the storage of every installed replica
/// (§2.7: an adopted buffer must not overlap one), and the blocks of pinned
/// or simulated device memory a backend handed out (MemoryResource::locate).
/// Empty ranges are never kept: they cannot overlap anything. Not
/// thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace fhr {

template <typename Payload>
class AddressRanges {
public:
  /// A kept range.
  struct Found {
    std::uintptr_t start = 0, end = 0;
    const Payload *payload = nullptr;
  };

  /// Adds [start, start + nbytes). \pre it overlaps no range already kept.
  void add(const void *start, std::size_t nbytes, Payload payload) {
    if (nbytes == 0 || !start) return;
    ranges_.emplace(address(start), Range{address(start) + nbytes, std::move(payload)});
  }
  /// Forgets the range that starts at `start` (nothing if none does).
  void remove(const void *start) { ranges_.erase(address(start)); }
  void clear() { ranges_.clear(); }
  std::size_t size() const { return ranges_.size(); }

  /// A kept range that shares a byte with [start, start + nbytes), if any.
  std::optional<Found> overlapping(const void *start, std::size_t nbytes) const {
    if (nbytes == 0 || !start || ranges_.empty()) return std::nullopt;
    const std::uintptr_t begin = address(start), end = begin + nbytes;
    // The last range starting before `end` is the only candidate: ranges
    // are disjoint and sorted, so an earlier one ends before it starts.
    auto it = ranges_.lower_bound(end);
    if (it == ranges_.begin()) return std::nullopt;
    --it;
    if (it->second.end <= begin) return std::nullopt;
    return Found{it->first, it->second.end, &it->second.payload};
  }

private:
  struct Range {
    std::uintptr_t end = 0;
    Payload payload;
  };
  static std::uintptr_t address(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }
  std::map<std::uintptr_t, Range> ranges_;
};

} // namespace fhr

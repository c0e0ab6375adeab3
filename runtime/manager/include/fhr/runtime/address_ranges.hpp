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
    if (spare_.empty()) {
      ranges_.emplace(address(start), Range{address(start) + nbytes, std::move(payload)});
      return;
    }
    spare_.key() = address(start);
    spare_.mapped() = Range{address(start) + nbytes, std::move(payload)};
    spare_ = std::move(ranges_.insert(std::move(spare_)).node); // empty once inserted
  }
  /// Forgets the range that starts at `start` (nothing if none does). Its
  /// node is kept for the next add(): a replica removed and another
  /// installed, every transition's pattern, then allocate nothing.
  void remove(const void *start) {
    if (auto node = ranges_.extract(address(start))) spare_ = std::move(node);
  }
  /// remove(), keeping the node as `other`'s spare when this one keeps one
  /// already: with two indexes a move adds to one and removes from the
  /// other, and a stream of moves one way would otherwise allocate a node
  /// in one and free one in the other every time.
  void remove(const void *start, AddressRanges &other) {
    auto node = ranges_.extract(address(start));
    if (!node) return;
    if (spare_.empty())
      spare_ = std::move(node);
    else if (other.spare_.empty())
      other.spare_ = std::move(node);
  }
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
  // No default member initializers: spare_'s node type asks whether Range
  // is default-constructible while the class is still incomplete.
  struct Range {
    std::uintptr_t end;
    Payload payload;
  };
  static std::uintptr_t address(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }
  std::map<std::uintptr_t, Range> ranges_;
  typename std::map<std::uintptr_t, Range>::node_type spare_;
};

} // namespace fhr

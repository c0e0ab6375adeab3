#pragma once
// A segment tree over steps: add a number to a range of steps, and the
// minimum over a range, both in O(log steps). The optimisers keep one per
// budgeted location holding the room left for kept gaps.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace fhr::planner {

class RangeTree {
public:
  explicit RangeTree(const std::vector<std::int64_t> &values) : size_(values.size()) {
    leaves_ = 1;
    while (leaves_ < size_)
      leaves_ *= 2;
    min_.assign(2 * leaves_, std::numeric_limits<std::int64_t>::max() / 4);
    add_.assign(2 * leaves_, 0);
    for (std::size_t i = 0; i < size_; ++i)
      min_[leaves_ + i] = values[i];
    for (std::size_t i = leaves_ - 1; i >= 1; --i)
      min_[i] = std::min(min_[2 * i], min_[2 * i + 1]);
  }
  /// Adds `delta` to every step in [begin, end).
  void add(std::size_t begin, std::size_t end, std::int64_t delta) {
    if (begin < end) add(1, 0, leaves_, begin, end, delta);
  }
  /// The minimum over [begin, end); a huge number for an empty range.
  std::int64_t min(std::size_t begin, std::size_t end) const {
    return begin < end ? min(1, 0, leaves_, begin, end) : std::numeric_limits<std::int64_t>::max() / 4;
  }
  std::int64_t at(std::size_t step) const { return min(step, step + 1); }
  /// The first step in [begin, end) whose value is below `threshold`, or `end`.
  std::size_t first_below(std::size_t begin, std::size_t end, std::int64_t threshold) const {
    if (begin >= end) return end;
    const std::size_t found = first_below(1, 0, leaves_, begin, end, threshold, 0);
    return std::min(found, end);
  }
  /// The last step in [begin, end) whose value is below `threshold`, or `end`.
  std::size_t last_below(std::size_t begin, std::size_t end, std::int64_t threshold) const {
    if (begin >= end) return end;
    const std::size_t found = last_below(1, 0, leaves_, begin, end, threshold, 0);
    return found == kNone ? end : found;
  }

private:
  void add(std::size_t node, std::size_t lo, std::size_t hi, std::size_t begin, std::size_t end,
           std::int64_t delta) {
    if (end <= lo || hi <= begin) return;
    if (begin <= lo && hi <= end) {
      min_[node] += delta;
      add_[node] += delta;
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    add(2 * node, lo, mid, begin, end, delta);
    add(2 * node + 1, mid, hi, begin, end, delta);
    min_[node] = std::min(min_[2 * node], min_[2 * node + 1]) + add_[node];
  }
  std::int64_t min(std::size_t node, std::size_t lo, std::size_t hi, std::size_t begin,
                   std::size_t end) const {
    if (end <= lo || hi <= begin) return std::numeric_limits<std::int64_t>::max() / 4;
    if (begin <= lo && hi <= end) return min_[node];
    const std::size_t mid = (lo + hi) / 2;
    return std::min(min(2 * node, lo, mid, begin, end), min(2 * node + 1, mid, hi, begin, end)) + add_[node];
  }

  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  /// `above`: the pending additions of the ancestors.
  std::size_t first_below(std::size_t node, std::size_t lo, std::size_t hi, std::size_t begin,
                          std::size_t end, std::int64_t threshold, std::int64_t above) const {
    if (end <= lo || hi <= begin || min_[node] + above >= threshold) return end;
    if (hi - lo == 1) return lo;
    const std::size_t mid = (lo + hi) / 2;
    const std::int64_t inner = above + add_[node];
    const std::size_t left = first_below(2 * node, lo, mid, begin, end, threshold, inner);
    return left != end ? left : first_below(2 * node + 1, mid, hi, begin, end, threshold, inner);
  }
  std::size_t last_below(std::size_t node, std::size_t lo, std::size_t hi, std::size_t begin, std::size_t end,
                         std::int64_t threshold, std::int64_t above) const {
    if (end <= lo || hi <= begin || min_[node] + above >= threshold) return kNone;
    if (hi - lo == 1) return lo;
    const std::size_t mid = (lo + hi) / 2;
    const std::int64_t inner = above + add_[node];
    const std::size_t right = last_below(2 * node + 1, mid, hi, begin, end, threshold, inner);
    return right != kNone ? right : last_below(2 * node, lo, mid, begin, end, threshold, inner);
  }

  std::size_t size_, leaves_;
  std::vector<std::int64_t> min_, add_;
};

} // namespace fhr::planner

#pragma once
// A segment tree over steps: add a number to a range of steps, the minimum
// over a range, and the first or last step below a threshold, each in
// O(log steps). The optimisers keep one per budgeted location holding the
// room left for kept gaps.
//
// Bottom-up layout (leaves at [leaves_, 2 leaves_)): min_[p] is the minimum
// of p's range less the additions still pending at p's ancestors, and for
// an inner node min_[p] = min(min_[2p], min_[2p+1]) + add_[p].
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace fhr::planner {

class RangeTree {
public:
  explicit RangeTree(const std::vector<std::int64_t> &values) : size_(values.size()) {
    while (leaves_ < size_) {
      leaves_ *= 2;
      ++height_;
    }
    min_.assign(2 * leaves_, kHuge);
    add_.assign(leaves_, 0);
    for (std::size_t i = 0; i < size_; ++i)
      min_[leaves_ + i] = values[i];
    for (std::size_t i = leaves_ - 1; i >= 1; --i)
      min_[i] = std::min(min_[2 * i], min_[2 * i + 1]);
  }

  /// Adds `delta` to every step in [begin, end).
  void add(std::size_t begin, std::size_t end, std::int64_t delta) {
    if (begin >= end) return;
    std::size_t l = begin + leaves_, r = end + leaves_;
    const std::size_t first = l, last = r - 1;
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) apply(l++, delta);
      if (r & 1) apply(--r, delta);
    }
    rebuild(first);
    rebuild(last);
  }

  /// The minimum over [begin, end); a huge number for an empty range.
  std::int64_t min(std::size_t begin, std::size_t end) const {
    if (begin >= end) return kHuge;
    std::size_t l = begin + leaves_, r = end + leaves_;
    // Hand the pending additions down the two boundary paths first.
    push(l);
    push(r - 1);
    std::int64_t best = kHuge;
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) best = std::min(best, min_[l++]);
      if (r & 1) best = std::min(best, min_[--r]);
    }
    return best;
  }
  std::int64_t at(std::size_t step) const { return min(step, step + 1); }

  /// The first step in [begin, end) whose value is below `threshold`, or `end`.
  std::size_t first_below(std::size_t begin, std::size_t end, std::int64_t threshold) const {
    if (begin >= end) return end;
    const std::size_t found = first_below(1, 0, leaves_, begin, end, threshold, 0);
    return std::min(found, end);
  }

private:
  /// Above every room: a location accounts at most kMaxChargedBytes (2^62).
  static constexpr std::int64_t kHuge = std::int64_t{1} << 62;

  void apply(std::size_t p, std::int64_t delta) const {
    min_[p] += delta;
    if (p < leaves_) add_[p] += delta;
  }
  void rebuild(std::size_t p) {
    while (p > 1) {
      p >>= 1;
      min_[p] = std::min(min_[2 * p], min_[2 * p + 1]) + add_[p];
    }
  }
  /// Moves the additions pending at p's ancestors down to p's level; the
  /// values every range reads stay the same (so it is const).
  void push(std::size_t p) const {
    for (int s = height_; s > 0; --s) {
      const std::size_t i = p >> s;
      if (add_[i] != 0) {
        apply(2 * i, add_[i]);
        apply(2 * i + 1, add_[i]);
        add_[i] = 0;
      }
    }
  }
  /// `above`: the pending additions of the node's ancestors.
  std::size_t first_below(std::size_t node, std::size_t lo, std::size_t hi, std::size_t begin,
                          std::size_t end, std::int64_t threshold, std::int64_t above) const {
    if (end <= lo || hi <= begin || min_[node] + above >= threshold) return end;
    if (hi - lo == 1) return lo;
    const std::size_t mid = (lo + hi) / 2;
    const std::int64_t inner = above + add_[node];
    const std::size_t left = first_below(2 * node, lo, mid, begin, end, threshold, inner);
    return left != end ? left : first_below(2 * node + 1, mid, hi, begin, end, threshold, inner);
  }

  std::size_t size_;
  std::size_t leaves_ = 1;
  int height_ = 0;
  mutable std::vector<std::int64_t> min_, add_;
};

} // namespace fhr::planner

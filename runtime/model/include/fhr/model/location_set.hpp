#pragma once
/// \file
/// A set of locations as a fixed bitset: membership, insertion and "first in
/// deterministic order" are a few instructions, which keeps the simulator's
/// per-action cost flat however many devices a plan names.

#include "fhr/model/location.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <optional>

namespace fhr {

class LocationSet {
public:
  /// The set of one location.
  static LocationSet of(Location l) {
    LocationSet set;
    for (unsigned w = 0; w < kWords; ++w)
      set.words_[w] = word_mask(l, w);
    return set;
  }
  bool contains(Location l) const { return (words_[l.index() / 64] >> (l.index() % 64)) & 1u; }
  void insert(Location l) { words_[l.index() / 64] |= std::uint64_t{1} << (l.index() % 64); }
  void erase(Location l) { words_[l.index() / 64] &= ~(std::uint64_t{1} << (l.index() % 64)); }
  bool empty() const { return (words_[0] | words_[1] | words_[2]) == 0; }
  unsigned size() const {
    return std::popcount(words_[0]) + std::popcount(words_[1]) + std::popcount(words_[2]);
  }
  /// The first member in §1.3 order, if any.
  std::optional<Location> first() const { return first_at_or_after(0); }
  /// The first member other than `excluded`, in §1.3 order.
  std::optional<Location> first_except(Location excluded) const {
    for (unsigned w = 0; w < kWords; ++w)
      if (const std::uint64_t bits = words_[w] & ~word_mask(excluded, w); bits != 0)
        return Location::from_index(w * 64 + static_cast<unsigned>(std::countr_zero(bits)));
    return std::nullopt;
  }
  /// Calls f(Location) for each member in §1.3 order.
  template <typename F>
  void for_each(F &&f) const {
    for (unsigned w = 0; w < kWords; ++w)
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        f(Location::from_index(w * 64 + static_cast<unsigned>(std::countr_zero(bits))));
  }
  /// The members of both.
  friend LocationSet operator&(LocationSet a, const LocationSet &b) {
    for (unsigned w = 0; w < kWords; ++w)
      a.words_[w] &= b.words_[w];
    return a;
  }
  friend bool operator==(const LocationSet &, const LocationSet &) = default;

private:
  static constexpr unsigned kWords = (Location::kCount + 63) / 64;
  /// `l`'s bit within word `w` (zero when it lives in another word). Sets
  /// built or filtered through it stay in registers: a set assembled in
  /// memory by one indexed word store and read back whole stalled explain's
  /// per-action path on store forwarding.
  static std::uint64_t word_mask(Location l, unsigned w) {
    return l.index() / 64 == w ? std::uint64_t{1} << (l.index() % 64) : 0;
  }
  std::optional<Location> first_at_or_after(unsigned word) const {
    for (unsigned w = word; w < kWords; ++w)
      if (words_[w] != 0)
        return Location::from_index(w * 64 + static_cast<unsigned>(std::countr_zero(words_[w])));
    return std::nullopt;
  }
  std::array<std::uint64_t, kWords> words_{};
};

} // namespace fhr

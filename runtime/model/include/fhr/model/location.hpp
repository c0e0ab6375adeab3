#pragma once
/// \file
/// Residency locations: pageable host, pinned host and cuda:N (docs/semantics.md §1).
///
/// A location is stored as one small integer whose natural order is the
/// deterministic location order of §1.3 (pageable < pinned < cuda:0 < ...), so
/// "the first resident location in order" is the lowest set bit of a set.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fhr {

enum class LocationKind : std::uint8_t { Pageable, Pinned, Cuda };

class Location {
public:
  /// Highest valid CUDA device index plus one.
  static constexpr unsigned kMaxCudaDevices = 128;
  /// Number of distinct locations (two host kinds plus every cuda:N).
  static constexpr unsigned kCount = 2 + kMaxCudaDevices;

  constexpr Location() = default;
  static constexpr Location pageable() { return Location(0); }
  static constexpr Location pinned() { return Location(1); }
  /// \pre device < kMaxCudaDevices
  static constexpr Location cuda(unsigned device) { return Location(static_cast<std::uint8_t>(2 + device)); }
  /// Inverse of index(); \pre index < kCount.
  static constexpr Location from_index(unsigned index) { return Location(static_cast<std::uint8_t>(index)); }

  constexpr unsigned index() const { return index_; }
  constexpr LocationKind kind() const {
    return index_ == 0 ? LocationKind::Pageable : index_ == 1 ? LocationKind::Pinned : LocationKind::Cuda;
  }
  constexpr bool is_cuda() const { return index_ >= 2; }
  /// The CUDA device index; \pre is_cuda().
  constexpr unsigned device() const { return index_ - 2u; }

  /// The one spelling used in every output: `pageable`, `pinned`, `cuda:N`.
  std::string name() const;

  friend constexpr bool operator==(Location, Location) = default;
  friend constexpr auto operator<=>(Location a, Location b) { return a.index_ <=> b.index_; }

private:
  constexpr explicit Location(std::uint8_t index) : index_(index) {}
  std::uint8_t index_ = 0;
};

/// Why a location spelling was rejected; the message is user-facing.
struct LocationParseError {
  enum class Kind { Unknown, MissingIndex, NotCanonical, OutOfRange } kind;
  std::string message;
};

/// Parses `pageable`, `pinned`, `pageable-host`, `pinned-host` or the exact
/// canonical `cuda:N` with N in 0..127 (§1.1). On failure fills `error`.
std::optional<Location> parse_location(std::string_view text, LocationParseError *error = nullptr);

} // namespace fhr

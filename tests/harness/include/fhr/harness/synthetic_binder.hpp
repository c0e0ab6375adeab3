#pragma once
/// \file
/// Synthetic payloads for running modules without an evaluator: a
/// must-preserve value is adopted from a buffer of its storage size filled
/// with a pattern of its value id; a reconstructible one gets a source that
/// writes the same pattern. expected_checksum() is what every replica must
/// hold, so tests and `fhr-plan run` check content after every transition.

#include "fhr/executor/value_binder.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace fhr {

class SyntheticBinder final : public ValueBinder {
public:
  /// Where an adopted value's buffer comes from when it is declared at a
  /// CUDA location: device memory holding the given bytes, with its
  /// deleter. Without it, buffers are host memory (right for the host and
  /// simulated backends).
  using DevicePlacer =
      std::function<std::pair<std::byte *, Storage::Release>(Location, std::span<const std::byte>)>;
  SyntheticBinder() = default;
  explicit SyntheticBinder(DevicePlacer place_on_device) : place_on_device_(std::move(place_on_device)) {}

  Handle bind(Manager &manager, const DeclaredValue &value) override;
  /// XXH64 of the value's pattern: known for adopted values, computed on
  /// first request for sourced ones (which may never be loaded).
  std::uint64_t expected_checksum(std::uint32_t value_id);

private:
  struct Expected {
    std::uint64_t nbytes = 0;
    std::optional<std::uint64_t> checksum;
  };
  std::vector<Expected> checksums_; ///< by value id
  DevicePlacer place_on_device_;
};

/// Fills `bytes` with the synthetic pattern of `value_id`, as the bytes at
/// `offset` (a multiple of 8) of the value.
void fill_synthetic(std::span<std::byte> bytes, std::uint32_t value_id, std::uint64_t offset);

} // namespace fhr

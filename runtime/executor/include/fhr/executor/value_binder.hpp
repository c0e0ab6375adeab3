#pragma once
/// \file
/// How the values a module declares become live values of a manager: a
/// ValueBinder is asked once per declared value (each family member on its
/// own) for the handle that stands for it. An evaluator binds its own
/// ciphertexts and key sources; `fhr-plan run` and the tests bind synthetic
/// payloads of the declared sizes whose content is known.

#include "fhr/bytecode/module.hpp"
#include "fhr/runtime/manager.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace fhr {

/// One value of a module, as its declaration describes it.
struct DeclaredValue {
  std::uint32_t value_id = 0;
  std::string name;                   ///< the value's or family's name
  std::optional<std::uint32_t> index; ///< the member index for a family
  ValueSpec spec;
  /// Where it is adopted (must-preserve) or where its source loads (reconstructible).
  Location location;
  std::uint32_t line = 0; ///< the declaration's line

  /// "name" or "name[index]".
  std::string display_name() const;
};

class ValueBinder {
public:
  virtual ~ValueBinder() = default;
  /// The handle for `value` on `manager`: adopt or register it there, or
  /// return one the caller registered before. May throw (a budget error of
  /// the adopt, say); the runner reports it as the failing setup step.
  virtual Handle bind(Manager &manager, const DeclaredValue &value) = 0;
};

/// Synthetic payloads: a must-preserve value is adopted from a buffer of its
/// logical size filled with a pattern of its value id; a reconstructible one
/// gets a source that writes the same pattern. expected_checksum() is what
/// every replica must hold.
class SyntheticBinder final : public ValueBinder {
public:
  /// Where an adopted value's buffer comes from when it is declared at a
  /// CUDA location: device memory holding the given bytes, with its
  /// deleter. Without it, a buffer at a location other than pageable is a
  /// block of the manager's memory resource there, written directly (right
  /// for the host and simulated backends, and for pinned memory on CUDA).
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

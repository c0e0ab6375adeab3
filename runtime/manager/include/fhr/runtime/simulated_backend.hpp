#pragma once
/// \file
/// A backend that stands in for CUDA on machines without a GPU: `cuda:N` for
/// N below a configured device count is host memory tagged with its device,
/// so every runtime path that involves device locations runs and is tested in
/// CI. Deterministic fault injection makes the k-th allocation, copy or source
/// load fail, to test that failures in the middle of a plan leave exact
/// partial reports and consistent accounting.

#include "fhr/runtime/backend.hpp"

#include <cstdint>
#include <memory>

namespace fhr {

class SimulatedBackend final : public Backend {
public:
  enum class Operation : std::uint8_t { Allocate, Copy, Load };

  explicit SimulatedBackend(unsigned device_count);

  DeviceConfig devices() const override;
  Storage allocate(Location location, std::size_t nbytes) override;
  void copy(const Storage &from, Storage &to) override;

  /// Makes the `nth` (1-based) next operation of that kind fail with
  /// BackendError; 0 disarms it. Counting starts when it is armed.
  void fail_on(Operation operation, std::uint64_t nth);
  /// Called by the manager before a source load (loads are the sources' own
  /// code; this is where the simulation can refuse one).
  void before_load() override;

  /// Operations performed so far, by kind.
  std::uint64_t count(Operation operation) const;
  /// Bytes currently allocated at a location.
  std::uint64_t allocated_bytes(Location location) const;

private:
  void step(Operation operation);

  unsigned device_count_;
  std::uint64_t performed_[3] = {0, 0, 0};
  std::uint64_t armed_at_[3] = {0, 0, 0}; ///< the count at which the failure fires (0 = none)
  std::shared_ptr<std::uint64_t[]> allocated_;
};

} // namespace fhr

#pragma once
/// \file
/// Deterministic fault injection at the runtime's backend hooks: the k-th
/// allocation, copy, copy completion, source load or event recording fails
/// with BackendError, so that tests can fail every step of a plan in turn
/// and check the partial report, the books and the bytes.
/// FaultInjectingBackend puts it in front of any backend (the CUDA
/// backend on a GPU); the simulated backend has it built in.

#include "fhr/runtime/backend.hpp"

#include <cstdint>
#include <memory>
#include <mutex>

namespace fhr {

enum class BackendOperation : std::uint8_t { Allocate, Copy, Load, RecordEvent, CopyCompletion };

/// Counts operations by kind and fails the armed one. Thread-safe.
class FaultPlan {
public:
  /// Makes the `nth` (1-based) next operation of that kind fail; 0 disarms
  /// it. Counting starts when it is armed.
  void fail_on(BackendOperation operation, std::uint64_t nth);
  /// Counts one operation; throws BackendError when it is the armed one.
  void step(BackendOperation operation);
  /// Operations counted so far, by kind.
  std::uint64_t count(BackendOperation operation) const;

private:
  static constexpr unsigned kKinds = 5;
  mutable std::mutex mutex_;
  std::uint64_t performed_[kKinds] = {};
  std::uint64_t armed_at_[kKinds] = {}; ///< the count at which the failure fires (0 = none)
};

/// Forwards everything to `inner`, counting and failing operations first
/// (a copy's completion after the copy finished: its destination is then
/// complete but refused, as a late error would leave it).
class FaultInjectingBackend final : public Backend {
public:
  explicit FaultInjectingBackend(std::shared_ptr<Backend> inner) : inner_(std::move(inner)) {}

  FaultPlan &faults() { return faults_; }

  DeviceConfig devices() const override { return inner_->devices(); }
  Storage allocate(Location location, std::size_t nbytes) override;
  void copy(const Storage &from, Storage &to, Stream stream) override;
  bool overlaps_copies() const override { return inner_->overlaps_copies(); }
  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override;
  void finish_copy(CopyInFlight copy) override;
  std::optional<PoolFigures> pool_figures(Location location) const override {
    return inner_->pool_figures(location);
  }
  void read(const Storage &from, std::span<std::byte> out) override { inner_->read(from, out); }
  void before_load() override;
  std::optional<Location> stream_location(Stream stream) const override {
    return inner_->stream_location(stream);
  }
  Event record_event(Stream stream) override;
  bool event_complete(Event event) override { return inner_->event_complete(event); }
  void synchronize(Event event) override { inner_->synchronize(event); }
  void destroy_event(Event event) noexcept override { inner_->destroy_event(event); }
  void synchronize_stream(Stream stream) override { inner_->synchronize_stream(stream); }
  void synchronize_device(Location device) override { inner_->synchronize_device(device); }

private:
  std::shared_ptr<Backend> inner_;
  FaultPlan faults_;
};

} // namespace fhr

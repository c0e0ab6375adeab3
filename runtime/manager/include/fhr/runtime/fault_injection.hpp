#pragma once
/// \file
/// Deterministic fault injection: the k-th allocation, copy, copy
/// completion, source load or event recording fails with BackendError, so
/// that tests can fail every step of a plan in turn and check the partial
/// report, the books and the bytes.
///
/// One adaptor per interface, each wrapping only the interface it faults
/// (RMM's adaptor pattern): FaultInjectingMemory (allocations),
/// FaultInjectingCopies (copies and copy completions),
/// FaultInjectingStreams (event recordings) and FaultInjectingSource
/// (loads). They count and fail through one shared FaultPlan, which is how
/// a test arms "the third copy" or "the second load" wherever it happens.
/// inject_faults() puts the first three in front of any backend (the
/// simulated one in CI, the CUDA backend on a GPU).

#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/source.hpp"

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
  /// Counts one operation; throws BackendError ("injected failure of copy
  /// 3") when it is the armed one, which disarms it.
  void step(BackendOperation operation);
  /// Operations counted so far, by kind.
  std::uint64_t count(BackendOperation operation) const;

private:
  static constexpr unsigned kKinds = 5;
  mutable std::mutex mutex_;
  std::uint64_t performed_[kKinds] = {};
  std::uint64_t armed_at_[kKinds] = {}; ///< the count at which the failure fires (0 = none)
};

/// Fails the armed allocation; everything else goes to `inner` as it is.
class FaultInjectingMemory final : public MemoryResource {
public:
  FaultInjectingMemory(std::shared_ptr<MemoryResource> inner, std::shared_ptr<FaultPlan> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  DeviceConfig devices() const override { return inner_->devices(); }
  Storage allocate(Location location, std::size_t nbytes) override;
  std::optional<PoolFigures> pool_figures(Location location) const override {
    return inner_->pool_figures(location);
  }
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const override {
    return inner_->locate(data, nbytes);
  }
  std::uint64_t prepare(Location location, std::span<const std::size_t> block_sizes) override {
    return inner_->prepare(location, block_sizes);
  }

private:
  std::shared_ptr<MemoryResource> inner_;
  std::shared_ptr<FaultPlan> faults_;
};

/// Fails the armed copy before it starts, and the armed copy completion
/// after the copy finished (its destination is then complete but refused,
/// as a late error would leave it).
class FaultInjectingCopies final : public CopyEngine {
public:
  FaultInjectingCopies(std::shared_ptr<CopyEngine> inner, std::shared_ptr<FaultPlan> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  void copy(const Storage &from, Storage &to, Stream stream) override;
  bool overlaps_copies() const override { return inner_->overlaps_copies(); }
  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override;
  CopyInFlight begin_lone_copy(const Storage &from, Storage &to, Stream stream) override;
  void finish_copy(CopyInFlight copy) override;
  void read(const Storage &from, std::span<std::byte> out) override { inner_->read(from, out); }

private:
  std::shared_ptr<CopyEngine> inner_;
  std::shared_ptr<FaultPlan> faults_;
};

/// Fails the armed event recording (a CUDA lease's release then falls back
/// to synchronising its streams, §7.2).
class FaultInjectingStreams final : public StreamSupport {
public:
  FaultInjectingStreams(std::shared_ptr<StreamSupport> inner, std::shared_ptr<FaultPlan> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  std::optional<Location> stream_location(Stream stream) const override {
    return inner_->stream_location(stream);
  }
  Event record_event(Stream stream) override;
  bool event_complete(Event event) override { return inner_->event_complete(event); }
  void synchronize(Event event) override { inner_->synchronize(event); }
  void destroy_event(Event event) noexcept override { inner_->destroy_event(event); }
  void destroy_events(std::span<const Event> events) noexcept override { inner_->destroy_events(events); }
  void synchronize_stream(Stream stream) override { inner_->synchronize_stream(stream); }
  void synchronize_device(Location device) override { inner_->synchronize_device(device); }

private:
  std::shared_ptr<StreamSupport> inner_;
  std::shared_ptr<FaultPlan> faults_;
};

/// A source whose armed load fails before `inner` writes anything.
class FaultInjectingSource final : public Source {
public:
  FaultInjectingSource(std::shared_ptr<Source> inner, std::shared_ptr<FaultPlan> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  void load(std::span<std::byte> destination) override;

private:
  std::shared_ptr<Source> inner_;
  std::shared_ptr<FaultPlan> faults_;
};

/// `inner` with a fault adaptor in front of each of its three interfaces,
/// all counting through `faults`.
BackendInterfaces inject_faults(const BackendInterfaces &inner, std::shared_ptr<FaultPlan> faults);

} // namespace fhr

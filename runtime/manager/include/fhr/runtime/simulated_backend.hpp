#pragma once
/// \file
/// A backend that stands in for CUDA on machines without a GPU: `cuda:N` for
/// N below a configured device count is host memory tagged with its device,
/// so every runtime path that involves device locations runs and is tested in
/// CI. Streams and events follow the model of SEMANTICS.md §17: a stream
/// counts the work submitted to it and the work completed; an event marks
/// the submitted count when it is recorded and has completed once the
/// stream's completed count reaches the mark. Tests "launch" work on a
/// consumer stream and "finish" it later, which is what keeps a released
/// CUDA lease pending.
///
/// Deterministic fault injection makes the k-th allocation, copy, source
/// load or event recording fail, to test that failures in the middle of a
/// plan leave exact partial reports and consistent accounting.
///
/// Thread safety: every member may be called from any thread.

#include "fhr/runtime/backend.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fhr {

class SimulatedBackend final : public Backend {
public:
  enum class Operation : std::uint8_t { Allocate, Copy, Load, RecordEvent };

  explicit SimulatedBackend(unsigned device_count);

  DeviceConfig devices() const override;
  Storage allocate(Location location, std::size_t nbytes) override;
  /// A copy into a device waits for the work already submitted to its
  /// stream, as a stream-ordered copy followed by a synchronize does.
  void copy(const Storage &from, Storage &to, Stream stream) override;

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

  // ---- streams under test control --------------------------------------
  /// A new stream on `device` (a CUDA location below the device count).
  Stream create_stream(Location device);
  /// Submits `kernels` units of work (e.g. a kernel reading a leased value).
  void launch(Stream stream, std::uint64_t kernels = 1);
  /// Completes everything submitted to the stream so far.
  void finish(Stream stream);
  /// Events recorded and not yet destroyed (the manager must not leak them).
  std::size_t live_events() const;
  /// synchronize_device calls so far (close with force, fallbacks).
  std::uint64_t device_synchronizations() const;

  std::optional<Location> stream_location(Stream stream) const override;
  Event record_event(Stream stream) override;
  bool event_complete(Event event) override;
  void synchronize(Event event) override;
  void destroy_event(Event event) noexcept override;
  void synchronize_stream(Stream stream) override;
  void synchronize_device(Location device) override;

private:
  struct SimulatedStream {
    Location device;
    std::uint64_t submitted = 0;
    std::uint64_t completed = 0;
  };
  struct SimulatedEvent {
    std::size_t stream = 0;
    std::uint64_t mark = 0;
    bool live = false;
  };
  void step(Operation operation);
  /// The stream's slot; BackendError for one this backend did not create.
  std::size_t slot(Stream stream) const;
  SimulatedEvent &event(Event event);

  unsigned device_count_;
  mutable std::mutex mutex_;
  std::uint64_t performed_[4] = {0, 0, 0, 0};
  std::uint64_t armed_at_[4] = {0, 0, 0, 0}; ///< the count at which the failure fires (0 = none)
  std::shared_ptr<std::uint64_t[]> allocated_;
  std::vector<SimulatedStream> streams_;
  std::vector<SimulatedEvent> events_;
  std::uint64_t device_synchronizations_ = 0;
};

} // namespace fhr

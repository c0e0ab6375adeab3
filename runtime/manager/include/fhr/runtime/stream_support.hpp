#pragma once
/// \file
/// Streams and events of CUDA locations, for leases (§7.2, §7.4, §17):
/// which device a stream belongs to, events recorded on consumer streams,
/// their completion, and the synchronisations close and the fallbacks
/// need. One of the three interfaces a manager works through
/// (fhr/runtime/backend.hpp). The defaults are those of a backend without
/// devices: it has no streams.

#include "fhr/model/location.hpp"
#include "fhr/runtime/backend_error.hpp"

#include <cstdint>
#include <optional>

namespace fhr {

/// A backend's stream, opaque to the manager: a cudaStream_t for the CUDA
/// backend, a simulated stream otherwise. The empty stream (0) means "the
/// backend's default stream of the device"; pass cudaStreamLegacy (0x1) for
/// CUDA's legacy default stream.
struct Stream {
  std::uintptr_t native = 0;
  explicit operator bool() const { return native != 0; }
  friend bool operator==(Stream, Stream) = default;
};

/// A backend's completion marker on a stream (cudaEvent_t for CUDA).
struct Event {
  std::uintptr_t native = 0;
};

class StreamSupport {
public:
  virtual ~StreamSupport() = default;
  /// The CUDA location a stream belongs to; std::nullopt when it is not a
  /// stream of this backend.
  virtual std::optional<Location> stream_location(Stream) const { return std::nullopt; }
  /// Records an event after everything submitted to `stream` so far.
  virtual Event record_event(Stream) { throw BackendError("this backend has no streams"); }
  /// Has all the work before the event finished? Never blocks.
  virtual bool event_complete(Event) { return true; }
  /// Blocks until the event has completed.
  virtual void synchronize(Event) {}
  virtual void destroy_event(Event) noexcept {}
  /// Blocks until all work submitted to `stream` so far has finished (the
  /// fallback when an event cannot be recorded).
  virtual void synchronize_stream(Stream) {}
  /// Blocks until all work on the device has finished (close with force).
  virtual void synchronize_device(Location) {}
};

} // namespace fhr

#pragma once
/// \file
/// Where bytes live and how they move: the manager asks its backend for
/// storage at a location, for copies between storages, and (for CUDA
/// locations) for streams and events. Backends may throw (std::bad_alloc,
/// BackendError); the manager then leaves its state exactly as the rules say
/// (nothing installed, temporary charges released).

#include "fhr/model/state.hpp"
#include "fhr/runtime/storage.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>

namespace fhr {

/// A failure of the memory or copy machinery (not a residency rule).
class BackendError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

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

/// A copy started by Backend::begin_copy and not yet finished; 0 means the
/// copy was already complete when begin_copy returned.
struct CopyInFlight {
  std::uintptr_t native = 0;
};

/// What a backend's memory pools hold at one location, beside the
/// manager's own accounting (snapshots show both).
struct PoolFigures {
  /// Bytes of replicas the backend has handed out and not yet got back.
  std::uint64_t in_use_bytes = 0;
  /// Bytes the pool keeps for reuse on top of those in use.
  std::uint64_t idle_bytes = 0;
  /// What the driver reports free at a device (std::nullopt for host memory).
  std::optional<std::uint64_t> driver_free_bytes;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// Which CUDA locations exist (location validation, §1.2).
  virtual DeviceConfig devices() const = 0;
  /// Fresh storage of `nbytes` at `location`.
  virtual Storage allocate(Location location, std::size_t nbytes) = 0;
  /// Copies `from` into `to` (same size) and returns once the bytes are
  /// there (§17: materialization is synchronous). A copy into a CUDA location
  /// is ordered on `stream` when one is given (after the work already
  /// submitted to it), else on the backend's stream for that device.
  virtual void copy(const Storage &from, Storage &to, Stream stream) = 0;
  /// Can copies run concurrently (separate copy engines)? Then the manager
  /// starts the copies of independent actions of a plan phase together and
  /// commits them in plan order (docs/runtime.md, "Overlap inside a plan").
  virtual bool overlaps_copies() const { return false; }
  /// Starts copying `from` into `to` on the engine of the copy's direction;
  /// finish_copy waits for it. Both storages must stay alive until then.
  /// The default copies synchronously and returns a completed copy.
  virtual CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) {
    copy(from, to, stream);
    return {};
  }
  /// Waits for a copy of begin_copy; throws (BackendError) if it failed.
  /// Called exactly once for every copy begin_copy returned.
  virtual void finish_copy(CopyInFlight) {}
  /// The backend's pool figures at `location`; std::nullopt when it keeps
  /// none there.
  virtual std::optional<PoolFigures> pool_figures(Location) const { return std::nullopt; }

  /// Copies a replica's bytes into host memory (`out` has its size): how
  /// content checks read device replicas. The default reads host storage.
  virtual void read(const Storage &from, std::span<std::byte> out) {
    if (!out.empty()) std::memcpy(out.data(), from.bytes().data(), out.size());
  }
  /// Called before a source fills new storage; may throw to refuse the load
  /// (fault injection). The default does nothing.
  virtual void before_load() {}

  // ---- streams and events (CUDA leases, §7.2) ---------------------------
  /// The CUDA location a stream belongs to; std::nullopt when it is not a
  /// stream of this backend. Backends without devices have no streams.
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

/// Host memory only: pageable storage is 64-byte aligned heap memory; pinned
/// storage is page-aligned memory locked with mlock where the process may
/// (page-locked as CUDA's pinned memory is, without a GPU), and freed pinned
/// blocks are kept for reuse, up to 64 MiB, so that repeated transitions
/// do not lock pages again. No CUDA devices.
std::unique_ptr<Backend> make_host_backend();

} // namespace fhr

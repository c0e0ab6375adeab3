#pragma once
/// \file
/// How bytes move between storages: synchronous copies, copies started on
/// the engine of their direction and waited for later (overlap inside a
/// plan), and reads of a replica into host memory (content checks). One of
/// the three interfaces a manager works through (fhr/runtime/backend.hpp).

#include "fhr/runtime/backend_error.hpp"
#include "fhr/runtime/storage.hpp"
#include "fhr/runtime/stream_support.hpp"

#include <cstdint>
#include <cstring>
#include <span>

namespace fhr {

/// A copy started by CopyEngine::begin_copy and not yet finished; 0 means
/// the copy was already complete when begin_copy returned.
struct CopyInFlight {
  std::uintptr_t native = 0;
};

class CopyEngine {
public:
  virtual ~CopyEngine() = default;
  /// Copies `from` into `to` (same size) and returns once the bytes are
  /// there (§17: materialization is synchronous). A copy into a CUDA location
  /// is ordered on `stream` when one is given (after the work already
  /// submitted to it), else on the engine's stream for that device.
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
  /// begin_copy for a copy its caller finishes before it starts or waits
  /// for any other (a single transition's copy, finished once the manager
  /// has booked it): finishing it may wait for everything on its stream,
  /// which spares the CUDA backend an event. The default is begin_copy.
  virtual CopyInFlight begin_lone_copy(const Storage &from, Storage &to, Stream stream) {
    return begin_copy(from, to, stream);
  }
  /// Waits for a copy of begin_copy or begin_lone_copy; throws
  /// (BackendError) if it failed. Called exactly once for every copy they
  /// returned.
  virtual void finish_copy(CopyInFlight) {}
  /// Copies a replica's bytes into host memory (`out` has its size): how
  /// content checks read device replicas. The default reads host storage.
  virtual void read(const Storage &from, std::span<std::byte> out) {
    if (!out.empty()) std::memcpy(out.data(), from.bytes().data(), out.size());
  }
};

} // namespace fhr

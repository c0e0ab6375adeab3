#pragma once
/// \file
/// Where bytes live and how they move: the manager asks its backend for
/// storage at a location and for copies between storages. Backends may throw
/// (std::bad_alloc, BackendError); the manager then leaves its state exactly
/// as the rules say (nothing installed, temporary charges released).

#include "fhr/model/state.hpp"
#include "fhr/runtime/storage.hpp"

#include <memory>
#include <stdexcept>

namespace fhr {

/// A failure of the memory or copy machinery (not a residency rule).
class BackendError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// Which CUDA locations exist (location validation, §1.2).
  virtual DeviceConfig devices() const = 0;
  /// Fresh storage of `nbytes` at `location`.
  virtual Storage allocate(Location location, std::size_t nbytes) = 0;
  /// Copies `from` into `to` (same size), synchronously.
  virtual void copy(const Storage &from, Storage &to) = 0;
  /// Called before a source fills new storage; may throw to refuse the load
  /// (fault injection). The default does nothing.
  virtual void before_load() {}
};

/// Host memory only: pageable storage is 64-byte aligned heap memory; pinned
/// storage is page-aligned memory locked with mlock where the process may
/// (page-locked as CUDA's pinned memory is, without a GPU). No CUDA devices.
std::unique_ptr<Backend> make_host_backend();

} // namespace fhr

#pragma once
/// \file
/// Where bytes live (RMM's memory resource, for residency locations): fresh
/// storage at a location, the pools behind it, which CUDA locations exist,
/// and which kind of memory a caller's buffer is. One of the three
/// interfaces a manager works through (fhr/runtime/backend.hpp).

#include "fhr/model/state.hpp"
#include "fhr/runtime/backend_error.hpp"
#include "fhr/runtime/storage.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace fhr {

/// What a memory resource's pools hold at one location, beside the
/// manager's own accounting (snapshots show both).
struct PoolFigures {
  /// Bytes of replicas the resource has handed out and not yet got back.
  std::uint64_t in_use_bytes = 0;
  /// Bytes the pool keeps for reuse on top of those in use.
  std::uint64_t idle_bytes = 0;
  /// What the driver reports free at a device (std::nullopt for host memory).
  std::optional<std::uint64_t> driver_free_bytes;
};

class MemoryResource {
public:
  virtual ~MemoryResource() = default;
  /// Which CUDA locations exist (location validation, §1.2).
  virtual DeviceConfig devices() const = 0;
  /// Fresh storage of `nbytes` at `location`; the storage frees itself
  /// (deallocation is its release function, which may outlive the
  /// resource). Throws BackendError or std::bad_alloc.
  virtual Storage allocate(Location location, std::size_t nbytes) = 0;
  /// The pool figures at `location`; std::nullopt when no pool is kept there.
  virtual std::optional<PoolFigures> pool_figures(Location) const { return std::nullopt; }
  /// The kind of memory the `nbytes` at `data` are (adopt, §2.6, §3.1):
  /// pageable host memory, pinned host memory or a device's memory; a
  /// buffer the resource knows nothing about is pageable. std::nullopt when
  /// the bytes are not all of one kind (part of a pinned block and part
  /// outside it, managed memory).
  virtual std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const = 0;
};

} // namespace fhr

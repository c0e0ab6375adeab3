#pragma once
// Staged transfers between pageable memory and a device as one stream of
// slots through a ring of pinned memory. The copier's workers copy pieces
// into (out of) the ring's slots while the calling thread hands each slot
// to the DMA engine as soon as all its pieces are in (starts each slot's
// DMA as soon as the slot is free), so the host copy and the DMA overlap
// from the second slot on and no barrier stops the workers between slots.
//
// Why not two halves in turn: with two bounce buffers of one chunk each,
// the host copy of a chunk overlaps only the DMA of the one before. A copy
// of a single chunk (up to 32 MiB) ran its host copy and its DMA one after
// the other, and every chunk ended with all workers waiting for its last
// piece; smaller chunks paid a wake of every worker each (8 MiB chunks
// were 43% slower than 32 MiB on the H200, docs/benchmarks.md, eighth
// wave).
//
// Host code only: the DMA side is a Link (the CUDA backend's, or a test's
// stand-in), so the ring's ordering is tested without a GPU
// (tests/unit/staging_ring_test.cpp). A Link provides
//   void start(std::size_t slot, std::byte *slot_bytes, std::size_t offset, std::size_t n);
//     starts the DMA of the slot's first `n` bytes to (from) the device
//     bytes at `offset` and marks the slot busy until it is done;
//   void wait(std::size_t slot);
//     returns once the slot's last started DMA is done (called by several
//     workers at once).
// Either may throw; the transfer then stops, every worker is released,
// and the first exception is thrown from the call once no worker holds a
// piece.
#include "host_copier.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>

namespace fhr {

/// The pinned memory of the ring: `buffers` blocks of `buffer_bytes` each,
/// cut into slots of `slot_bytes` (which divides `buffer_bytes`).
struct StagingRing {
  std::span<std::byte *const> buffers;
  std::size_t buffer_bytes = 0;
  std::size_t slot_bytes = 0;

  std::size_t slots() const { return buffers.size() * (buffer_bytes / slot_bytes); }
  std::byte *slot(std::size_t s) const {
    const std::size_t per_buffer = buffer_bytes / slot_bytes;
    return buffers[s / per_buffer] + s % per_buffer * slot_bytes;
  }
};

namespace staging_detail {

/// How far a transfer has come, shared by the caller and the workers.
class Progress {
public:
  explicit Progress(std::size_t units) : done_(std::make_unique<std::atomic<std::uint32_t>[]>(units)) {}

  /// A piece of `unit` is done (copied, or skipped after a failure).
  void piece_done(std::size_t unit, std::uint32_t pieces_of_unit) {
    if (done_[unit].fetch_add(1) + 1 == pieces_of_unit) done_[unit].notify_all();
  }
  /// Returns once every piece of `unit` is done.
  void wait_done(std::size_t unit, std::uint32_t pieces_of_unit) const {
    for (std::uint32_t seen = done_[unit].load(); seen < pieces_of_unit; seen = done_[unit].load())
      done_[unit].wait(seen);
  }

  /// The DMAs of units 0 to `count` - 1 have been started. The count never
  /// goes down: a failure's release (the largest count) must survive the
  /// caller's report of a DMA it started meanwhile, or a worker waiting for
  /// a later unit would wait for ever.
  void started(std::uint64_t count) {
    for (std::uint64_t seen = started_.load();
         seen < count && !started_.compare_exchange_weak(seen, count);) {
    }
    started_.notify_all();
  }
  /// Returns once the DMA of `unit` has been started (or the transfer failed).
  void wait_started(std::size_t unit) const {
    for (std::uint64_t seen = started_.load(); seen <= unit; seen = started_.load())
      started_.wait(seen);
  }

  /// Records the first failure and releases everyone waiting for a start.
  void fail(std::exception_ptr error) {
    {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::move(error);
    }
    failed_.store(true);
    started(std::numeric_limits<std::uint64_t>::max());
  }
  bool failed() const { return failed_.load(); }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

private:
  std::unique_ptr<std::atomic<std::uint32_t>[]> done_; ///< per unit: pieces done
  std::atomic<std::uint64_t> started_{0};              ///< units whose DMA has started
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

/// A transfer of `n` bytes cut into units of one slot, each cut into
/// pieces for the copier's workers.
struct Cut {
  std::size_t n, unit, piece, pieces_per_unit;
  std::size_t units() const { return (n + unit - 1) / unit; }
  std::size_t pieces() const { return (n + piece - 1) / piece; }
  std::size_t unit_bytes(std::size_t u) const { return std::min(unit, n - u * unit); }
  std::uint32_t pieces_of(std::size_t u) const {
    return static_cast<std::uint32_t>((unit_bytes(u) + piece - 1) / piece);
  }
};

inline Cut cut(const StagingRing &ring, std::size_t n) {
  if (ring.slot_bytes == 0 || ring.buffer_bytes % ring.slot_bytes != 0 || ring.slots() == 0)
    throw std::invalid_argument("staging ring: slots must divide its buffers");
  const std::size_t piece = std::min(HostCopier::kCopyPiece, ring.slot_bytes);
  if (ring.slot_bytes % piece != 0) throw std::invalid_argument("staging ring: a slot is whole pieces");
  return Cut{n, ring.slot_bytes, piece, ring.slot_bytes / piece};
}

/// Copies part of unit `u` between the host and the slot at `slot_bytes`:
/// `count` bytes from `offset` into the unit, the way the transfer goes.
struct HostSide {
  const std::byte *from_host; ///< into the device: the source; else null
  std::byte *to_host;         ///< out of the device: the destination; else null
  bool to_device() const { return from_host != nullptr; }
  void copy(const HostCopier &copier, const Cut &c, std::size_t u, std::byte *slot_bytes, std::size_t offset,
            std::size_t count) const {
    if (to_device())
      copier.copy_piece(slot_bytes + offset, from_host + u * c.unit + offset, count);
    else
      copier.copy_piece(to_host + u * c.unit + offset, slot_bytes + offset, count);
  }
};

/// Without workers the caller copies every unit itself, one after another.
template <class Link>
void stage_alone(const HostCopier &copier, const StagingRing &ring, const Cut &c, Link &link, HostSide host) {
  const std::size_t slots = ring.slots();
  for (std::size_t u = 0; u < c.units(); ++u) {
    const std::size_t slot = u % slots;
    if (host.to_device()) {
      if (u >= slots) link.wait(slot);
      host.copy(copier, c, u, ring.slot(slot), 0, c.unit_bytes(u));
      link.start(slot, ring.slot(slot), u * c.unit, c.unit_bytes(u));
    } else {
      link.start(slot, ring.slot(slot), u * c.unit, c.unit_bytes(u));
      link.wait(slot);
      host.copy(copier, c, u, ring.slot(slot), 0, c.unit_bytes(u));
    }
  }
}

/// The transfer, either way. Into the device a piece of unit u goes into
/// slot u % slots once the DMA that last read the slot (unit u - slots) is
/// done, and the caller starts a unit's DMA once all its pieces are in. Out
/// of the device the caller starts a unit's DMA once the slot's previous
/// unit is out of it, and a piece is copied out once its unit's DMA is done.
template <class Link>
void stage(HostCopier &copier, const StagingRing &ring, HostSide host, std::size_t n, Link &link) {
  const Cut c = cut(ring, n);
  if (n == 0) return;
  if (copier.workers() == 0) return stage_alone(copier, ring, c, link, host);
  const std::size_t slots = ring.slots();
  const bool in = host.to_device();
  Progress progress(c.units());
  const HostCopier::Task piece = [&](std::size_t i) {
    const std::size_t u = i / c.pieces_per_unit;
    const std::size_t slot = u % slots;
    try {
      if (!in || u >= slots) { // the DMA this piece waits for
        progress.wait_started(in ? u - slots : u);
        if (!progress.failed()) link.wait(slot);
      }
      if (!progress.failed()) {
        const std::size_t in_unit = (i % c.pieces_per_unit) * c.piece;
        host.copy(copier, c, u, ring.slot(slot), in_unit, std::min(c.piece, c.unit_bytes(u) - in_unit));
      }
    } catch (...) {
      progress.fail(std::current_exception());
    }
    progress.piece_done(u, c.pieces_of(u));
  };
  copier.start(c.pieces(), piece);
  try {
    for (std::size_t u = 0; u < c.units() && !progress.failed(); ++u) {
      if (in)
        progress.wait_done(u, c.pieces_of(u)); // its bytes are in the slot
      else if (u >= slots)
        progress.wait_done(u - slots, c.pieces_of(u - slots)); // the slot's last bytes are out
      if (progress.failed()) break;
      const std::size_t slot = u % slots;
      link.start(slot, ring.slot(slot), u * c.unit, c.unit_bytes(u));
      progress.started(u + 1);
    }
  } catch (...) {
    progress.fail(std::current_exception());
  }
  copier.finish();
  progress.rethrow();
}

} // namespace staging_detail

/// Copies `n` bytes at `from` (pageable) to the device through the ring:
/// the workers copy slot-sized units into the ring's slots, the caller
/// starts each slot's DMA once all its pieces are in. Returns once every
/// DMA has been started (the caller waits for the last ones on its
/// stream).
template <class Link>
void stage_to_device(HostCopier &copier, const StagingRing &ring, const std::byte *from, std::size_t n,
                     Link &link) {
  staging_detail::stage(copier, ring, staging_detail::HostSide{from, nullptr}, n, link);
}

/// Copies `n` bytes from the device to `to` (pageable) through the ring:
/// the caller starts each slot's DMA as soon as the slot's last unit has
/// been copied out of it, the workers copy each unit out once its DMA is
/// done. Returns once every byte is at `to`.
template <class Link>
void stage_from_device(HostCopier &copier, const StagingRing &ring, std::byte *to, std::size_t n,
                       Link &link) {
  staging_detail::stage(copier, ring, staging_detail::HostSide{nullptr, to}, n, link);
}

} // namespace fhr

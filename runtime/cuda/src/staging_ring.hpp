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
//   bool done(std::size_t slot);
//     whether the slot's last started DMA is done, without waiting (only
//     the calling thread asks; the workers wait on what it reports).
// Either may throw; the transfer then stops, every worker is released,
// and the first exception is thrown from the call once no worker holds a
// piece. DMAs started before a failure may still run.
#include "host_copier.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>

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

/// One turn of a spin loop: the core's hint that it waits.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// How far a transfer has come, shared by the caller and the workers.
/// Nobody sleeps on a slot: the caller polls the pieces and the DMAs, and
/// a worker spins on the DMA its piece waits for. A slot's DMA takes tens
/// of microseconds, and on the GPU machines (virtual machines) a blocked
/// thread's wake-up seemed to cost as much: with blocking events the ring
/// was up to twice as slow as the buffers in turn out of a device, polling
/// it was faster (docs/benchmarks.md, thirty-first and thirty-second
/// waves).
class Progress {
public:
  /// `touches`: the parts of the destination the workers fault in first.
  Progress(std::size_t units, std::size_t touches)
      : done_(std::make_unique<std::atomic<std::uint32_t>[]>(units)),
        touched_(std::make_unique<std::atomic<std::uint32_t>[]>(touches)) {}

  /// A piece of `unit` is done (copied, or skipped after a failure).
  void piece_done(std::size_t unit) { done_[unit].fetch_add(1, std::memory_order_release); }
  /// Whether every piece of `unit` is done.
  bool unit_done(std::size_t unit, std::uint32_t pieces_of_unit) const {
    return done_[unit].load(std::memory_order_acquire) == pieces_of_unit;
  }

  /// The DMAs of units 0 to `count` - 1 are done. The count never goes
  /// down: a failure's release (the largest count) must survive a report
  /// the caller makes after it, or a worker waiting for a later unit would
  /// wait for ever.
  void completed(std::uint64_t count) {
    for (std::uint64_t seen = completed_.load();
         seen < count && !completed_.compare_exchange_weak(seen, count, std::memory_order_acq_rel);) {
    }
    completed_.notify_all(); // a system call only where a worker sleeps
  }
  /// Returns once the DMA of `unit` is done (or the transfer failed).
  void wait_completed(std::size_t unit) const { await<std::uint64_t>(completed_, std::uint64_t{unit} + 1); }

  /// Part `part` of the destination has been faulted in.
  void touch_done(std::size_t part) {
    touched_[part].store(1, std::memory_order_release);
    touched_[part].notify_all();
  }
  /// Returns once parts `first` to `last` have been faulted in.
  void wait_touched(std::size_t first, std::size_t last) const {
    for (std::size_t part = first; part <= last; ++part)
      await<std::uint32_t>(touched_[part], 1u);
  }

  /// Records the first failure and releases everyone waiting for a DMA.
  void fail(std::exception_ptr error) {
    {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::move(error);
    }
    failed_.store(true);
    completed(std::numeric_limits<std::uint64_t>::max());
  }
  bool failed() const { return failed_.load(); }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

  /// A waiting worker spins for kSpin, then yields its core between looks
  /// (to any thread that is ready to run, should threads outnumber cores)
  /// until kSleepAfter, then sleeps: a slot's DMA takes 40-170 µs.
  static constexpr std::chrono::microseconds kSpin{50}, kSleepAfter{1000};

private:
  /// Returns once `count` is at least `target`.
  template <class Count>
  static void await(const std::atomic<Count> &count, Count target) {
    const auto start = std::chrono::steady_clock::now();
    for (unsigned turn = 1; count.load(std::memory_order_acquire) < target; ++turn) {
      relax();
      if (turn % 64 != 0) continue;
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited >= kSleepAfter) {
        for (Count seen = count.load(); seen < target; seen = count.load())
          count.wait(seen);
        return;
      }
      if (waited >= kSpin) std::this_thread::yield();
    }
  }

  std::unique_ptr<std::atomic<std::uint32_t>[]> done_;    ///< per unit: pieces done
  std::atomic<std::uint64_t> completed_{0};               ///< units whose DMA is done
  std::unique_ptr<std::atomic<std::uint32_t>[]> touched_; ///< per part of the destination: 1 once faulted in
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

/// The calling thread's pause between two looks at the DMAs, which it
/// polls rather than sleeps on: a few spin turns, and every 256th pause
/// the core yielded, should the threads outnumber the cores. (A loop of
/// questions without a pause slowed the copies on a neighbouring core.)
class Backoff {
public:
  void pause() {
    if (++pauses_ % 256 == 0) return std::this_thread::yield();
    for (int turn = 0; turn < 16; ++turn)
      relax();
  }
  /// Something moved: the next pause is a short one again.
  void reset() { pauses_ = 0; }

private:
  unsigned pauses_ = 0;
};

/// Polls until the slot's last started DMA is done.
template <class Link>
void spin_until_done(Link &link, std::size_t slot) {
  for (Backoff backoff; !link.done(slot);)
    backoff.pause();
}

/// Without workers the caller copies every unit itself, one after another.
template <class Link>
void stage_alone(const HostCopier &copier, const StagingRing &ring, const Cut &c, Link &link, HostSide host) {
  const std::size_t slots = ring.slots();
  for (std::size_t u = 0; u < c.units(); ++u) {
    const std::size_t slot = u % slots;
    if (host.to_device()) {
      if (u >= slots) spin_until_done(link, slot);
      host.copy(copier, c, u, ring.slot(slot), 0, c.unit_bytes(u));
      link.start(slot, ring.slot(slot), u * c.unit, c.unit_bytes(u));
    } else {
      link.start(slot, ring.slot(slot), u * c.unit, c.unit_bytes(u));
      spin_until_done(link, slot);
      host.copy(copier, c, u, ring.slot(slot), 0, c.unit_bytes(u));
    }
  }
  if (host.to_device() && c.units() > 0) spin_until_done(link, (c.units() - 1) % slots);
}

/// The caller's side of a transfer with workers: one loop that starts each
/// unit's DMA as soon as it may and reports each DMA done, in order, until
/// every DMA is done (the link's errors come out of it). Into the device unit u may
/// start once its pieces are in its slot; out of it, once the slot's
/// previous unit (u - slots) has been copied out. A started unit's slot is
/// reused only after its DMA is reported done, so the slot's event always
/// stands for the oldest unit not yet reported.
template <class Link>
void drive(const StagingRing &ring, const Cut &c, bool in, Progress &progress, Link &link) {
  const std::size_t units = c.units(), slots = ring.slots();
  std::size_t started = 0, completed = 0;
  auto may_start = [&](std::size_t u) {
    if (u >= completed + slots) return false; // the slot's event still stands for an earlier unit
    if (in) return progress.unit_done(u, c.pieces_of(u));
    return u < slots || progress.unit_done(u - slots, c.pieces_of(u - slots));
  };
  Backoff backoff;
  while (completed < units) {
    bool moved = false;
    if (started < units && may_start(started)) {
      link.start(started % slots, ring.slot(started % slots), started * c.unit, c.unit_bytes(started));
      ++started;
      moved = true;
    }
    if (completed < started && link.done(completed % slots)) {
      progress.completed(++completed);
      moved = true;
    }
    if (moved)
      backoff.reset();
    else
      backoff.pause();
  }
}

/// The transfer, either way. Into the device a piece of unit u goes into
/// slot u % slots once the DMA that last read the slot (unit u - slots) is
/// done; out of the device a piece is copied out once its unit's DMA is
/// done. The caller drives the DMAs (drive above).
template <class Link>
void stage(HostCopier &copier, const StagingRing &ring, HostSide host, std::size_t n, Link &link) {
  const Cut c = cut(ring, n);
  if (n == 0) return;
  if (copier.workers() == 0) return stage_alone(copier, ring, c, link, host);
  const std::size_t slots = ring.slots();
  const bool in = host.to_device();
  // Out of the device the workers first fault in the whole destination
  // while the first slots' DMAs run, as the buffers in turn fault in their
  // first chunk: fresh pageable storage is bound by its page faults, and a
  // copy that met them took twice as long (docs/benchmarks.md,
  // thirty-second wave). Where the pages are in, a touch costs a walk of
  // their page table.
  constexpr std::size_t kPart = HostCopier::kTouchPiece;
  const std::size_t touches = in ? 0 : (n + kPart - 1) / kPart;
  Progress progress(c.units(), touches);
  const HostCopier::Task piece = [&](std::size_t i) {
    if (i < touches) { // out of the device, first: fault in a part of the destination
      copier.touch_piece(host.to_host + i * kPart, std::min(kPart, n - i * kPart));
      progress.touch_done(i);
      return;
    }
    i -= touches;
    const std::size_t u = i / c.pieces_per_unit;
    const std::size_t slot = u % slots;
    const std::size_t in_unit = (i % c.pieces_per_unit) * c.piece;
    const std::size_t count = std::min(c.piece, c.unit_bytes(u) - in_unit);
    // No copy writes a page that a touch (claimed before it) may still
    // write: the fallback's writes would undo the copy's.
    if (touches > 0) {
      const std::size_t begin = u * c.unit + in_unit;
      progress.wait_touched(begin / kPart, (begin + count - 1) / kPart);
    }
    if (!in || u >= slots) progress.wait_completed(in ? u - slots : u); // the DMA this piece waits for
    if (!progress.failed()) host.copy(copier, c, u, ring.slot(slot), in_unit, count);
    progress.piece_done(u);
  };
  copier.start(touches + c.pieces(), piece);
  try {
    drive(ring, c, in, progress, link);
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
/// DMA is done.
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

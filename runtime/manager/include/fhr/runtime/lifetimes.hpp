#pragma once
/// \file
/// Leases, holds and reservations (§7, §8): what a manager hands out to
/// protect replicas or headroom, released explicitly or when destroyed.

#include "fhr/model/state.hpp"
#include "fhr/runtime/handle.hpp"
#include "fhr/runtime/stream_support.hpp"

#include <atomic>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace fhr {

class Manager;

/// A lease, hold or reservation (§7, §8). Releasing is idempotent and
/// allowed from any thread; like every call that needs the manager's state
/// it fails with ResidencyReentrancyError while a source callback runs
/// (§13), and may be retried. An object destroyed while active is
/// abandoned: it releases itself (a CUDA lease as with release(wait = true))
/// and the manager reports a warning; destroyed while a source callback
/// runs, it is released at the manager's next operation instead. It must
/// not outlive its manager.
class Lifetime {
public:
  Lifetime() = default;
  Lifetime(Lifetime &&other) noexcept;
  Lifetime &operator=(Lifetime &&other) noexcept;
  Lifetime(const Lifetime &) = delete;
  Lifetime &operator=(const Lifetime &) = delete;
  virtual ~Lifetime();

  void release();
  /// Still protecting (or reserving)? A released CUDA lease whose events are
  /// pending is no longer active.
  bool active() const;
  /// Did a release of this object succeed? Then destroying it asks the
  /// manager nothing (takes no lock): a binding may destroy it holding its
  /// own interpreter lock.
  bool released() const noexcept { return released_.load(std::memory_order_relaxed); }

protected:
  Lifetime(Manager *manager, LifetimeId id) : manager_(manager), id_(id) {}
  Manager *manager_ = nullptr;
  LifetimeId id_ = 0;
  std::atomic<bool> released_{false}; ///< releases may come from several threads
  friend class Manager;
};

/// An active read of ready replicas: protects them and exposes their bytes.
/// A CUDA lease knows the streams that read the values; its release records
/// an event on each and keeps the protection pending until they complete.
class Lease : public Lifetime {
public:
  Lease() = default;
  /// Registers another stream that reads the leased values (same device;
  /// each stream once). ResidencyLifetimeClosedError after release;
  /// std::invalid_argument for a host lease, a foreign or wrong-device stream.
  void add_consumer_stream(Stream stream);
  /// Ends the read. A CUDA lease records an event on every consumer stream:
  /// with `wait` they are synchronised and the protection goes at once,
  /// otherwise it stays pending until a later operation sees them complete.
  void release(bool wait = false);
  const std::vector<Handle> &handles() const { return handles_; }
  Location location() const { return location_; }
  /// The bytes of one leased value, read-only, while the lease is active:
  /// ResidencyLifetimeClosedError after release, std::out_of_range for a
  /// handle the lease does not hold.
  std::span<const std::byte> value(const Handle &handle) const;

private:
  Lease(Manager *manager, LifetimeId id, std::vector<Handle> handles, Location location)
      : Lifetime(manager, id), handles_(std::move(handles)), location_(location) {}
  std::vector<Handle> handles_;
  Location location_;
  friend class Manager;
};

/// Retained replicas outside an active read: protection without access.
class Hold : public Lifetime {
  using Lifetime::Lifetime;
  friend class Manager;

public:
  Hold() = default;
};

/// Headroom recorded at a location (§8), counted against its budget.
class ActiveReservation : public Lifetime {
  using Lifetime::Lifetime;
  friend class Manager;

public:
  ActiveReservation() = default;
};

} // namespace fhr

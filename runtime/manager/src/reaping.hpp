#pragma once
// CUDA leases of one manager (§7.2, §7.4): the consumer streams of each
// while it is active, the events its release recorded on them, and the
// pending protection those events keep until a reap sees them complete.
// Not thread-safe: the manager's lock guards it.
#include "fhr/model/state.hpp"
#include "fhr/runtime/stream_support.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace fhr {

class LeaseReaper {
public:
  LeaseReaper(State &state, StreamSupport &streams) : state_(state), streams_(streams) {}

  /// Is `id` a CUDA lease (active, or released with events pending)?
  bool tracks(LifetimeId id) const { return find(id) != nullptr; }
  /// A new CUDA lease whose values `stream` reads.
  void track(LifetimeId id, Stream stream);
  /// Another consumer stream of an active CUDA lease (each stream once).
  void add_stream(LifetimeId id, Stream stream);

  /// Releases a tracked lease: records an event on every consumer stream
  /// and turns its use tokens into pending protection; `wait` synchronises
  /// the events and removes it at once. If an event cannot be recorded the
  /// streams are synchronised and the lease released at once; the returned
  /// warning says so (empty otherwise). If even that fails the lease stays
  /// active and the error propagates.
  std::string release(LifetimeId id, bool wait);

  /// §7.4: removes the pending protection of every lease whose events have
  /// all completed.
  void reap();
  /// reap(), but only once kBacklog leases are pending (or twice what the
  /// last reap left): a backlog is reaped with a few event queries per
  /// stream instead of one per lease.
  void reap_backlog() {
    if (pending_.size() >= backlog_reap_at_) reap();
  }
  /// Pending leases whose events have all completed (explain sees through
  /// them without reaping).
  std::vector<LifetimeId> completed_pending() const;
  /// close(wait): synchronises the events of every pending lease and
  /// removes their protection.
  void wait_for_pending();
  /// close: destroys every event and forgets every lease (the state forgets
  /// the lifetimes itself).
  void clear();

  static constexpr std::size_t kBacklog = 32;

private:
  /// The consumer streams of a CUDA lease, and the events its release
  /// recorded on them.
  struct LeaseStreams {
    LifetimeId lease = 0; ///< 0: the slot is free
    std::vector<Stream> streams;
    std::vector<Event> events;
  };

  /// By lifetime slot (the low half of a LifetimeId). A slot's vectors keep
  /// their capacity when its lease goes, so that a lease allocates nothing
  /// here once the table has warmed up.
  LeaseStreams *find(LifetimeId id) {
    const std::size_t slot = id & 0xffffffffu;
    return slot < slots_.size() && slots_[slot].lease == id ? &slots_[slot] : nullptr;
  }
  const LeaseStreams *find(LifetimeId id) const { return const_cast<LeaseReaper *>(this)->find(id); }
  void forget(LeaseStreams &entry);
  /// Destroys the lease's events, forgets it and removes its pending tokens.
  void complete(LifetimeId id);
  /// For each pending lease (pending_ order): have all its events completed?
  std::vector<bool> pending_completion() const;

  State &state_;
  StreamSupport &streams_;
  std::vector<LeaseStreams> slots_;
  /// Released CUDA leases whose events have not all been seen complete, in
  /// release order.
  std::vector<LifetimeId> pending_;
  /// The backlog at which reap_backlog reaps.
  std::size_t backlog_reap_at_ = kBacklog;
};

} // namespace fhr

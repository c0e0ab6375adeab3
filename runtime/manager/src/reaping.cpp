// CUDA leases and reaping (§7.2, §7.4): consumer streams, the events of a
// release, pending protection, and the queries that find completed events.
#include "reaping.hpp"

#include <algorithm>
#include <exception>

namespace fhr {

void LeaseReaper::track(LifetimeId id, Stream stream) {
  const std::size_t slot = id & 0xffffffffu;
  if (slot >= slots_.size()) slots_.resize(slot + 1);
  slots_[slot].lease = id;
  slots_[slot].streams.push_back(stream);
}

void LeaseReaper::add_stream(LifetimeId id, Stream stream) {
  std::vector<Stream> &streams = find(id)->streams;
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) streams.push_back(stream);
}

void LeaseReaper::forget(LeaseStreams &entry) {
  entry.lease = 0;
  entry.streams.clear();
  entry.events.clear();
}

std::string LeaseReaper::release(LifetimeId id, bool wait) {
  // §7.2: an event on every consumer stream marks the end of the reads.
  LeaseStreams &lease = *find(id);
  try {
    for (Stream stream : lease.streams)
      lease.events.push_back(streams_.record_event(stream));
  } catch (const std::exception &error) {
    for (Event event : lease.events)
      streams_.destroy_event(event);
    lease.events.clear();
    // Without events the only safe release is after the readers finished;
    // if even that fails the lease stays active and the error propagates.
    for (Stream stream : lease.streams)
      streams_.synchronize_stream(stream);
    forget(lease);
    state_.release(id);
    return std::string("could not record a completion event (") + error.what() +
           "); synchronised the consumer streams and released the lease";
  }
  state_.release(id, /*events_pending=*/true);
  if (wait) {
    for (Event event : lease.events)
      streams_.synchronize(event);
    complete(id);
  } else {
    pending_.push_back(id);
  }
  return {};
}

void LeaseReaper::complete(LifetimeId id) {
  if (LeaseStreams *lease = find(id)) {
    for (Event event : lease->events)
      streams_.destroy_event(event);
    forget(*lease);
  }
  state_.complete_pending(id);
}

std::vector<bool> LeaseReaper::pending_completion() const {
  // The events of every pending lease, per stream, in the order they were
  // recorded (pending_ is in release order).
  struct StreamEvents {
    Stream stream;
    std::vector<std::pair<std::size_t, Event>> events; ///< (index in pending_, event)
  };
  std::vector<StreamEvents> streams;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const LeaseStreams &lease = *find(pending_[i]);
    for (std::size_t k = 0; k < lease.events.size(); ++k) {
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const StreamEvents &s) { return s.stream == lease.streams[k]; });
      if (it == streams.end()) it = streams.insert(streams.end(), StreamEvents{lease.streams[k], {}});
      it->events.emplace_back(i, lease.events[k]);
    }
  }
  std::vector<bool> complete(pending_.size(), true);
  for (const StreamEvents &s : streams) {
    // Events of one stream complete in recording order: the completed ones
    // are a prefix, found with a few queries (the newest first: usually
    // all are done) instead of one query per lease.
    const std::size_t n = s.events.size();
    std::size_t done = n;
    if (!streams_.event_complete(s.events[n - 1].second)) {
      std::size_t low = 0, high = n - 1; // [0, low) complete, [high, n) not
      while (low < high) {
        const std::size_t middle = low + (high - low) / 2;
        if (streams_.event_complete(s.events[middle].second))
          low = middle + 1;
        else
          high = middle;
      }
      done = low;
    }
    for (std::size_t j = done; j < n; ++j)
      complete[s.events[j].first] = false;
  }
  return complete;
}

void LeaseReaper::reap() {
  if (pending_.empty()) return;
  const std::vector<bool> done = pending_completion();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (done[i])
      complete(pending_[i]);
    else
      pending_[kept++] = pending_[i];
  }
  pending_.resize(kept);
  // Readers that run long keep a backlog: the next backlog reap waits until
  // it has doubled, so that each lease costs a bounded share of queries.
  backlog_reap_at_ = std::max(kBacklog, 2 * kept);
}

std::vector<LifetimeId> LeaseReaper::completed_pending() const {
  std::vector<LifetimeId> completed;
  if (pending_.empty()) return completed;
  const std::vector<bool> done = pending_completion();
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (done[i]) completed.push_back(pending_[i]);
  return completed;
}

void LeaseReaper::wait_for_pending() {
  for (LifetimeId id : pending_) {
    for (Event event : find(id)->events)
      streams_.synchronize(event);
    complete(id);
  }
  pending_.clear();
}

void LeaseReaper::clear() {
  for (LeaseStreams &lease : slots_)
    if (lease.lease != 0)
      for (Event event : lease.events)
        streams_.destroy_event(event);
  slots_.clear();
  pending_.clear();
}

} // namespace fhr

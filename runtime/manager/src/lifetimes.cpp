// Leases, holds and reservations (§7, §8): protection, CUDA consumer
// streams and their events, reaping (§7.4), abandoned lifetimes.
#include "fhr/runtime/manager.hpp"

#include <algorithm>

namespace fhr {

namespace {

std::string_view kind_name(LifetimeKind kind) {
  switch (kind) {
  case LifetimeKind::Lease: return "lease";
  case LifetimeKind::Hold: return "hold";
  case LifetimeKind::Reservation: return "reservation";
  }
  return "lifetime";
}

} // namespace

std::vector<ValueId> Manager::protect_values(std::span<const Handle> handles) const {
  std::vector<ValueId> values;
  values.reserve(handles.size());
  for (const Handle &handle : handles)
    values.push_back(resolve(handle));
  return values;
}

Lease Manager::acquire(std::span<const Handle> handles, Location at, Stream consumer_stream) {
  if (handles.empty()) throw std::invalid_argument("a lease needs at least one handle");
  auto lock = open_lock();
  validate(at);
  if (at.is_cuda() && !consumer_stream)
    throw std::invalid_argument("a lease at " + at.name() + " needs a consumer stream");
  reap_unless_unobservable();
  if (consumer_stream && !at.is_cuda())
    throw std::invalid_argument("a lease at " + at.name() + " takes no consumer stream");
  validate_stream(consumer_stream, at);
  const std::vector<ValueId> values = protect_values(handles);
  LifetimeId id = 0;
  ValueId failed = 0;
  if (Outcome outcome = state_.protect(LifetimeKind::Lease, values, at, &id, &failed); outcome.failed())
    throw_failure(outcome, MessageContext{value_name(failed), {}}, FailureDetail{});
  if (at.is_cuda()) lease_streams_.add(id).streams.push_back(consumer_stream);
  std::vector<Handle> unique;
  unique.reserve(handles.size());
  for (const Handle &handle : handles)
    if (std::find(unique.begin(), unique.end(), handle) == unique.end()) unique.push_back(handle);
  return Lease(this, id, std::move(unique), at);
}

Hold Manager::hold(std::span<const Handle> handles, Location at) {
  if (handles.empty()) throw std::invalid_argument("a hold needs at least one handle");
  auto lock = open_lock();
  validate(at);
  reap_unless_unobservable();
  const std::vector<ValueId> values = protect_values(handles);
  LifetimeId id = 0;
  ValueId failed = 0;
  if (Outcome outcome = state_.protect(LifetimeKind::Hold, values, at, &id, &failed); outcome.failed())
    throw_failure(outcome, MessageContext{value_name(failed), {}}, FailureDetail{});
  return Hold(this, id);
}

ActiveReservation Manager::reserve(Location at, std::uint64_t nbytes, const std::string &label) {
  if (label.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("a reservation needs a non-blank label");
  auto lock = open_lock();
  reap_unless_unobservable();
  validate(at);
  LifetimeId id = 0;
  FailureDetail detail;
  if (Outcome outcome = state_.reserve(at, nbytes, label, &id, &detail); outcome.failed())
    throw_failure(outcome, MessageContext{{}, label}, detail);
  return ActiveReservation(this, id);
}

void Manager::release_all(std::vector<LifetimeId> &lifetimes) {
  for (auto it = lifetimes.rbegin(); it != lifetimes.rend(); ++it)
    state_.release(*it);
  lifetimes.clear();
}

void Manager::add_consumer_stream(LifetimeId id, Stream stream) {
  auto lock = open_lock();
  const LifetimeRecord *lease = state_.find_lifetime(id);
  if (!lease || lease->state != LifetimeState::Active)
    throw ResidencyLifetimeClosedError("the lease was released");
  if (!lease->location.is_cuda())
    throw std::invalid_argument("a lease at " + lease->location.name() + " has no consumer streams");
  if (!stream) throw std::invalid_argument("a consumer stream cannot be empty");
  validate_stream(stream, lease->location);
  std::vector<Stream> &streams = lease_streams_.find(id)->streams; // every CUDA lease has an entry
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) streams.push_back(stream);
}

std::string Manager::release_locked(LifetimeId id, bool wait) {
  const LifetimeRecord *lifetime = state_.find_lifetime(id);
  if (!lifetime || lifetime->state != LifetimeState::Active) return {}; // idempotent
  LeaseStreams *streams = lease_streams_.find(id);
  if (!streams) {
    state_.release(id); // host lease, hold, reservation: tokens go at once
    return {};
  }
  // §7.2: an event on every consumer stream marks the end of the reads.
  LeaseStreams &lease = *streams;
  try {
    for (Stream stream : lease.streams)
      lease.events.push_back(backend_->record_event(stream));
  } catch (const std::exception &error) {
    for (Event event : lease.events)
      backend_->destroy_event(event);
    lease.events.clear();
    // Without events the only safe release is after the readers finished;
    // if even that fails the lease stays active and the error propagates.
    for (Stream stream : lease.streams)
      backend_->synchronize_stream(stream);
    lease_streams_.erase(lease);
    state_.release(id);
    return std::string("could not record a completion event (") + error.what() +
           "); synchronised the consumer streams and released the lease";
  }
  state_.release(id, /*events_pending=*/true);
  if (wait) {
    for (Event event : lease.events)
      backend_->synchronize(event);
    complete_lease(id);
  } else {
    pending_leases_.push_back(id);
  }
  return {};
}

void Manager::complete_lease(LifetimeId id) {
  if (LeaseStreams *streams = lease_streams_.find(id)) {
    for (Event event : streams->events)
      backend_->destroy_event(event);
    lease_streams_.erase(*streams);
  }
  state_.complete_pending(id);
}

void Manager::defer_release(LifetimeId id) {
  std::lock_guard lock(deferred_mutex_);
  deferred_releases_.push_back(id);
  has_deferred_releases_.store(true, std::memory_order_release);
}

void Manager::apply_deferred_releases() {
  if (!has_deferred_releases_.load(std::memory_order_acquire)) return;
  std::vector<LifetimeId> ids;
  {
    std::lock_guard lock(deferred_mutex_);
    ids.swap(deferred_releases_);
    has_deferred_releases_.store(false, std::memory_order_release);
  }
  for (LifetimeId id : ids)
    (void)release_locked(id, /*wait=*/true);
}

std::vector<bool> Manager::pending_completion() const {
  // The events of every pending lease, per stream, in the order they were
  // recorded (pending_leases_ is in release order).
  struct StreamEvents {
    Stream stream;
    std::vector<std::pair<std::size_t, Event>> events; ///< (index in pending_leases_, event)
  };
  std::vector<StreamEvents> streams;
  for (std::size_t i = 0; i < pending_leases_.size(); ++i) {
    const LeaseStreams &lease = *lease_streams_.find(pending_leases_[i]);
    for (std::size_t k = 0; k < lease.events.size(); ++k) {
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const StreamEvents &s) { return s.stream == lease.streams[k]; });
      if (it == streams.end()) it = streams.insert(streams.end(), StreamEvents{lease.streams[k], {}});
      it->events.emplace_back(i, lease.events[k]);
    }
  }
  std::vector<bool> complete(pending_leases_.size(), true);
  for (const StreamEvents &s : streams) {
    // Events of one stream complete in recording order: the completed ones
    // are a prefix, found with a few queries (the newest first: usually
    // all are done) instead of one query per lease.
    const std::size_t n = s.events.size();
    std::size_t done = n;
    if (!backend_->event_complete(s.events[n - 1].second)) {
      std::size_t low = 0, high = n - 1; // [0, low) complete, [high, n) not
      while (low < high) {
        const std::size_t middle = low + (high - low) / 2;
        if (backend_->event_complete(s.events[middle].second))
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

void Manager::reap() {
  apply_deferred_releases();
  if (pending_leases_.empty()) return;
  const std::vector<bool> complete = pending_completion();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_leases_.size(); ++i) {
    if (complete[i])
      complete_lease(pending_leases_[i]);
    else
      pending_leases_[kept++] = pending_leases_[i];
  }
  pending_leases_.resize(kept);
  // Readers that run long keep a backlog: the next backlog reap waits until
  // it has doubled, so that each lease costs a bounded share of queries.
  backlog_reap_at_ = std::max(kReapBacklog, 2 * kept);
}

void Manager::reap_unless_unobservable() {
  apply_deferred_releases();
  // Reaping here could not change what this operation does or returns, and
  // every operation that can observe pending protection reaps in full
  // first; so only a backlog is reaped, many leases per query.
  if (pending_leases_.size() >= backlog_reap_at_) reap();
}

std::vector<LifetimeId> Manager::completed_pending() const {
  std::vector<LifetimeId> completed;
  if (pending_leases_.empty()) return completed;
  const std::vector<bool> complete = pending_completion();
  for (std::size_t i = 0; i < pending_leases_.size(); ++i)
    if (complete[i]) completed.push_back(pending_leases_[i]);
  return completed;
}

void Manager::release(LifetimeId id, bool wait) {
  std::string warning;
  {
    auto lock = lock_state();
    if (closed_) return; // close() already let go of everything
    warning = release_locked(id, wait);
  }
  warn(warning);
}

void Manager::abandon(LifetimeId id) noexcept {
  std::string warning;
  try {
    auto lock = lock_state();
    const LifetimeRecord *lifetime = closed_ ? nullptr : state_.find_lifetime(id);
    if (!lifetime || lifetime->state != LifetimeState::Active) return;
    warning = std::string(kind_name(lifetime->kind)) + " at " + lifetime->location.name() +
              " destroyed while active: released";
    if (const std::string more = release_locked(id, /*wait=*/true); !more.empty()) warning += "; " + more;
  } catch (const ResidencyReentrancyError &) {
    // A source callback runs (on this thread or another): the state cannot
    // be touched now, so the release waits for the manager's next operation.
    defer_release(id);
    warning = "a lifetime destroyed while a source callback ran is released at the manager's next operation";
  } catch (const std::exception &error) {
    // The backend failed: keep the protection rather than free storage that
    // a reader may still use (§7.2).
    warning = std::string("an abandoned lifetime could not be released (") + error.what() +
              "); its protection stays until close(force)";
  }
  try {
    warn(warning);
  } catch (...) { // a throwing warning handler must not escape a destructor
  }
}

bool Manager::lifetime_active(LifetimeId id) const {
  auto lock = lock_state();
  return !closed_ && state_.lifetime_state(id) == LifetimeState::Active;
}

Lifetime::Lifetime(Lifetime &&other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)), id_(other.id_) {}

Lifetime &Lifetime::operator=(Lifetime &&other) noexcept {
  if (this != &other) {
    if (manager_) manager_->abandon(id_);
    manager_ = std::exchange(other.manager_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Lifetime::~Lifetime() {
  if (manager_) manager_->abandon(id_);
}

void Lifetime::release() {
  if (manager_) manager_->release(id_, /*wait=*/false);
}

bool Lifetime::active() const { return manager_ && manager_->lifetime_active(id_); }

void Lease::add_consumer_stream(Stream stream) {
  if (!manager_) throw ResidencyLifetimeClosedError("the lease was released");
  manager_->add_consumer_stream(id_, stream);
}

void Lease::release(bool wait) {
  if (manager_) manager_->release(id_, wait);
}

std::span<const std::byte> Lease::value(const Handle &handle) const {
  if (!manager_) throw ResidencyLifetimeClosedError("the lease was released");
  if (std::find(handles_.begin(), handles_.end(), handle) == handles_.end())
    throw std::out_of_range("the lease does not hold this handle");
  auto lock = manager_->lock_state();
  if (manager_->closed_ || manager_->state_.lifetime_state(id_) != LifetimeState::Active)
    throw ResidencyLifetimeClosedError("the lease was released");
  return manager_->replica(manager_->resolve(handle), location_)->bytes();
}

} // namespace fhr

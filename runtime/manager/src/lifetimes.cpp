// Leases, holds and reservations (§7, §8): protection, releases, abandoned
// lifetimes. CUDA leases' streams, events and reaping: reaping.cpp.
#include "fhr/runtime/manager.hpp"

#include "fhr/model/first_occurrences.hpp"
#include "fhr/model/scope_sequence.hpp"
#include "reaping.hpp"

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

LifetimeId Manager::protect(LifetimeKind kind, std::span<const Handle> handles, Location at) {
  // Handles that name no value of this manager stand for a value that is
  // never registered: the model then checks every handle in order, each
  // for its value and its residency, and the first that fails decides.
  std::vector<ValueId> values;
  values.reserve(handles.size());
  for (const Handle &handle : handles)
    values.push_back(resolve_for_plan(handle));
  LifetimeId id = 0;
  ValueId failed = 0;
  if (Outcome outcome = state_.protect(kind, values, at, &id, &failed); outcome.failed()) {
    if (outcome.reason == Reason::HandleUnknown) // foreign or unknown: say which
      for (std::size_t i = 0; i < handles.size(); ++i)
        if (values[i] == failed) throw ResidencyHandleError(unresolvable_message(handles[i]));
    throw_failure(outcome, MessageContext{value_name(failed), {}}, FailureDetail{});
  }
  return id;
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
  const LifetimeId id = protect(LifetimeKind::Lease, handles, at);
  if (at.is_cuda()) reaper_->track(id, consumer_stream);
  return Lease(
      this, id,
      first_occurrences(handles, [](const Handle &h) { return std::pair(h.manager_id, h.handle_id); }), at);
}

Hold Manager::hold(std::span<const Handle> handles, Location at) {
  if (handles.empty()) throw std::invalid_argument("a hold needs at least one handle");
  auto lock = open_lock();
  validate(at);
  reap_unless_unobservable();
  return Hold(this, protect(LifetimeKind::Hold, handles, at));
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
  release_last_first(lifetimes, [&](LifetimeId id) { state_.release(id); });
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
  reaper_->add_stream(id, stream); // every active CUDA lease is tracked
}

std::string Manager::release_locked(LifetimeId id, bool wait) {
  const LifetimeRecord *lifetime = state_.find_lifetime(id);
  if (!lifetime || lifetime->state != LifetimeState::Active) return {}; // idempotent
  if (reaper_->tracks(id)) return reaper_->release(id, wait);           // a CUDA lease: events first
  state_.release(id); // host lease, hold, reservation: tokens go at once
  return {};
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

void Manager::reap() {
  apply_deferred_releases();
  reaper_->reap();
}

std::vector<LifetimeId> Manager::completed_pending() const { return reaper_->completed_pending(); }

void Manager::reap_unless_unobservable() {
  apply_deferred_releases();
  // Reaping here could not change what this operation does or returns, and
  // every operation that can observe pending protection reaps in full
  // first; so only a backlog is reaped, many leases per query.
  reaper_->reap_backlog();
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
    : manager_(std::exchange(other.manager_, nullptr)), id_(other.id_), released_(other.released_.load()) {}

Lifetime &Lifetime::operator=(Lifetime &&other) noexcept {
  if (this != &other) {
    if (manager_ && !released()) manager_->abandon(id_);
    manager_ = std::exchange(other.manager_, nullptr);
    id_ = other.id_;
    released_ = other.released_.load();
  }
  return *this;
}

Lifetime::~Lifetime() {
  // Released: the manager has nothing left to do for it.
  if (manager_ && !released()) manager_->abandon(id_);
}

void Lifetime::release() {
  if (!manager_) return;
  manager_->release(id_, /*wait=*/false);
  released_ = true;
}

bool Lifetime::active() const { return manager_ && manager_->lifetime_active(id_); }

void Lease::add_consumer_stream(Stream stream) {
  if (!manager_) throw ResidencyLifetimeClosedError("the lease was released");
  manager_->add_consumer_stream(id_, stream);
}

void Lease::release(bool wait) {
  if (!manager_) return;
  manager_->release(id_, wait);
  released_ = true;
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

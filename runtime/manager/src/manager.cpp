// The manager's values and primitive transitions (§3, §6), content checks,
// accounting queries, the trace and close (§15).
#include "fhr/runtime/manager.hpp"

#include "clock.hpp"
#include "reaping.hpp"
#include "tick_stamps.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fhr {

namespace {

std::uint64_t next_manager_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1);
}

/// The value id that no manager ever registers: what a foreign or unknown
/// handle maps to inside a plan, so that the simulator reports a handle error
/// at its step (§10.2) instead of refusing the whole plan up front.
constexpr ValueId kUnresolvable = ~ValueId{0};

/// Marks a source callback as running for its duration (§13).
class CallbackScope {
public:
  explicit CallbackScope(CallbackGuardedMutex &mutex) : mutex_(mutex) { mutex_.begin_callback(); }
  ~CallbackScope() { mutex_.end_callback(); }
  CallbackScope(const CallbackScope &) = delete;
  CallbackScope &operator=(const CallbackScope &) = delete;

private:
  CallbackGuardedMutex &mutex_;
};

} // namespace

/// The physical side of one transition. Storage that is loaded or copied
/// waits here until the model installs it; whatever is still here when a
/// transition fails is freed with this object.
///
/// The copy into the transition's destination may still be running when
/// the model installs its storage: with a backend whose copies run beside
/// the host (overlap_transfers), the manager books the replica, the
/// charge and the report while the bytes cross the link, and waits for
/// them only then (finish_copy(), before the transition returns and before
/// anything else happens to the value). A 4 KiB copy takes about 8 µs on
/// the H200, the booking a fraction of a microsecond that it no longer adds.
class Manager::Hooks final : public TransitionHooks {
public:
  /// `defer`: the destination's copy may finish after the model has
  /// booked it (an ensure or copy, which remove nothing afterwards).
  Hooks(Manager &manager, Location destination, Stream stream, PreparedCopy *prepared,
        TransitionReport *report, bool defer = false)
      : manager_(manager), destination_(destination), stream_(stream), prepared_(prepared), report_(report),
        defer_(defer && manager.overlap_transfers_) {}
  ~Hooks() override {
    // A transition that fails with its copy running: the copy must be over
    // before its storages go (the members, after this body).
    if (in_flight_.native != 0) try {
        finish_copy();
      } catch (...) { // the failure being reported is the transition's own
      }
  }
  Hooks(const Hooks &) = delete;
  Hooks &operator=(const Hooks &) = delete;

  /// Waits for the copy still running, if any; throws what the backend
  /// throws when it failed.
  void finish_copy() {
    if (in_flight_.native != 0)
      manager_.backend_.copies->finish_copy(std::exchange(in_flight_, CopyInFlight{}));
  }

  void load(ValueId value, Location location) override {
    stamp_start();
    finish_copy();
    Record &record = manager_.records_[value];
    Storage storage = manager_.backend_.memory->allocate(location, logical_bytes(value));
    {
      CallbackScope callback(manager_.mutex_);
      // The source's own time, apart from the transfer's (EXPLAIN ANALYZE
      // compares the link model with the rest).
      const std::uint64_t loading = now_ns();
      record.source->load(storage.bytes());
      report_->source_load_ns += now_ns() - loading;
    }
    add_pending(location, std::move(storage));
  }

  void copy(ValueId value, Location from, Location to) override {
    if (to == destination_ && defer_)
      stamp_lone_copy_start(value);
    else
      stamp_start();
    finish_copy(); // one copy at a time: a copy may read what the last one wrote
    if (prepared_ && prepared_->from == from && prepared_->to == to) {
      add_pending(to, std::move(prepared_->storage)); // copied ahead (overlap.cpp)
      prepared_ = nullptr;
      return;
    }
    const Storage *source = pending(from);
    if (!source) source = manager_.replica(value, from);
    // Pending before the copy starts: from here on only this object frees
    // it, after the copy (the destructor).
    Storage &destination = add_pending(to, manager_.backend_.memory->allocate(to, logical_bytes(value)));
    if (to == destination_ && !ticks_.started()) report_->copy_issued_at_ns = now_ns();
    // The caller's stream orders copies into the transition's destination only.
    if (to != destination_) {
      manager_.backend_.copies->copy(*source, destination, Stream{});
    } else if (defer_) {
      in_flight_ = manager_.backend_.copies->begin_lone_copy(*source, destination, stream_);
    } else {
      manager_.backend_.copies->copy(*source, destination, stream_);
    }
  }

  void install(ValueId value, Location location) override {
    stamp_start();
    for (std::optional<Pending> &pending : pending_)
      if (pending && pending->location == location) {
        manager_.install_replica(value, location, std::move(pending->storage));
        pending.reset();
        return;
      }
    throw std::logic_error("installing at " + location.name() + ", where no storage was filled");
  }

  void remove(ValueId value, Location location) override {
    stamp_start();
    finish_copy(); // never one running here (only ensure and copy defer): kept safe all the same
    manager_.remove_replica(value, location);
  }

  /// While the copy into the destination runs: a lone copy's start, so
  /// far on the time-stamp counter, in steady-clock nanoseconds (never
  /// before the manager's last stamp, so that reports stay in order).
  void anchor_start() {
    if (ticks_.started()) report_->started_at_ns = std::max(ticks_.anchor(), manager_.last_stamp_ns_);
  }
  /// After the last piece of work: the transition's completion.
  std::uint64_t completion_ns() const { return ticks_.started() ? ticks_.end_ns() : now_ns(); }

private:
  /// A transition starts when its first piece of work does.
  void stamp_start() {
    if (report_->started_at_ns == 0 && !ticks_.started()) report_->started_at_ns = now_ns();
  }
  /// The same for the copy into the destination: on the time-stamp
  /// counter when it is small and the first work (tick_stamps.hpp), since
  /// a fine read would sit on the path before the copy is issued; its size
  /// is looked up only then.
  void stamp_lone_copy_start(ValueId value) {
    if (report_->started_at_ns != 0 || ticks_.started()) return;
    if (manager_.tick_stamps_ && logical_bytes(value) <= kTickStampedMaxBytes)
      ticks_.start();
    else
      report_->started_at_ns = now_ns();
  }
  std::size_t logical_bytes(ValueId value) const {
    return static_cast<std::size_t>(manager_.state_.value(value).spec.logical_nbytes);
  }
  const Storage *pending(Location location) const {
    for (const std::optional<Pending> &pending : pending_)
      if (pending && pending->location == location) return &pending->storage;
    return nullptr;
  }
  Storage &add_pending(Location location, Storage storage) {
    for (std::optional<Pending> &pending : pending_)
      if (!pending) return pending.emplace(Pending{location, std::move(storage)}).storage;
    throw std::logic_error("a transition fills at most two storages");
  }

  Manager &manager_;
  Location destination_;
  Stream stream_;
  PreparedCopy *prepared_;
  TransitionReport *report_;
  bool defer_;
  CopyInFlight in_flight_; ///< the copy into the destination, until finish_copy()
  TickStamps ticks_;       ///< a lone copy's start and end, when it was the first work
  /// At most two storages wait at once (§4.5: a reload's storage at the
  /// source location, then its copy at the destination); held inline, so a
  /// transition allocates nothing for them, and empty until filled, so a
  /// no-op constructs none.
  struct Pending {
    Location location;
    Storage storage;
  };
  std::array<std::optional<Pending>, 2> pending_;
};

namespace {

BackendInterfaces complete(BackendInterfaces backend) {
  if (backend.empty()) return make_host_backend();
  if (!backend.memory || !backend.copies || !backend.streams)
    throw std::invalid_argument("a manager needs a memory resource, a copy engine and stream support");
  return backend;
}

} // namespace

Manager::Manager(ManagerOptions options)
    : id_(next_manager_id()), backend_(complete(std::move(options.backend))),
      warning_handler_(std::move(options.warning_handler)), state_(backend_.memory->devices()),
      trace_capacity_(options.trace_capacity),
      reaper_(std::make_unique<LeaseReaper>(state_, *backend_.streams)),
      overlap_transfers_(options.overlap_transfers && backend_.copies->overlaps_copies()),
      tick_stamps_(overlap_transfers_ && TickStamps::available()) {
  for (const auto &[location, budget] : options.budgets) {
    validate(location);
    state_.set_budget(location, budget);
  }
  if (!options.warm_up.empty()) startup_warm_up_ = warm_up(options.warm_up);
}

Manager::~Manager() = default;

std::uint64_t Manager::state_version() const {
  auto lock = open_lock();
  // §7.4: reading the version reaps. Reaping only records what completed
  // events already decided, so the accessor stays const for callers.
  const_cast<Manager *>(this)->reap();
  return state_.version();
}

std::vector<Location> Manager::locations() const {
  auto lock = lock_state();
  return state_.registry();
}

void Manager::validate(Location location) const {
  if (Outcome valid = state_.validate(location); valid.failed()) throw_failure(valid, {}, FailureDetail{});
}

void Manager::validate_stream(Stream stream, Location destination) const {
  if (!stream) return;
  if (!destination.is_cuda())
    throw std::invalid_argument("a transfer to " + destination.name() + " takes no stream");
  const std::optional<Location> device = backend_.streams->stream_location(stream);
  if (!device) throw std::invalid_argument("not a stream of this manager's backend");
  if (*device != destination)
    throw std::invalid_argument("a stream of " + device->name() + " cannot copy to " + destination.name());
}

ValueId Manager::resolve(const Handle &handle) const {
  const ValueId value = resolve_for_plan(handle);
  if (value == kUnresolvable) throw ResidencyHandleError(unresolvable_message(handle));
  return value;
}

std::string Manager::unresolvable_message(const Handle &handle) const {
  if (handle.manager_id != id_)
    return "handle belongs to manager " + std::to_string(handle.manager_id) + ", not to manager " +
           std::to_string(id_);
  return "unknown handle " + std::to_string(handle.handle_id);
}

ValueId Manager::resolve_for_plan(const Handle &handle) const {
  // Handle ids are given out in registration order from 1, one per record.
  if (handle.manager_id != id_ || handle.handle_id == 0 || handle.handle_id > records_.size())
    return kUnresolvable;
  return static_cast<ValueId>(handle.handle_id - 1);
}

std::string Manager::value_name(ValueId value) const {
  return value < records_.size() ? "#" + std::to_string(records_[value].handle_id) : "?";
}

Storage *Manager::replica(ValueId value, Location at) {
  for (auto &[location, storage] : records_[value].replicas)
    if (location == at) return &storage;
  return nullptr;
}

const Storage *Manager::replica(ValueId value, Location at) const {
  return const_cast<Manager *>(this)->replica(value, at);
}

void Manager::install_replica(ValueId value, Location location, Storage &&storage) {
  // `storage` is taken only once nothing can fail: a transition's copy may
  // still be writing it, and its Hooks free it only after the copy.
  std::byte *block = storage.bytes().data();
  storage_index(location).add(block, storage.block_size(), ReplicaOf{value, location});
  try {
    records_[value].replicas.emplace_back(location, std::move(storage));
  } catch (...) {
    storage_index(location).remove(block);
    throw;
  }
}

void Manager::remove_replica(ValueId value, Location location) {
  auto &replicas = records_[value].replicas;
  const auto it =
      std::find_if(replicas.begin(), replicas.end(), [&](const auto &r) { return r.first == location; });
  storage_index(location).remove(it->second.bytes().data(), other_storage_index(location));
  replicas.erase(it); // frees the storage
}

namespace {

void check_enums(ReplicaMode mode, Recoverability recoverability) {
  if (mode != ReplicaMode::Exclusive && mode != ReplicaMode::Replicable)
    throw std::invalid_argument("replica mode " + std::to_string(static_cast<unsigned>(mode)) +
                                " is neither EXCLUSIVE nor REPLICABLE");
  if (recoverability != Recoverability::MustPreserve && recoverability != Recoverability::Reconstructible)
    throw std::invalid_argument("recoverability " + std::to_string(static_cast<unsigned>(recoverability)) +
                                " is neither MUST_PRESERVE nor RECONSTRUCTIBLE");
}

/// The memory of a location's kind, in words.
std::string memory_of(Location location) {
  return location.is_cuda() ? "memory of " + location.name() : location.name() + " host memory";
}

} // namespace

Location Manager::adopted_location(const std::byte *data, std::size_t storage_nbytes,
                                   std::optional<Location> at) const {
  // An empty buffer has no memory to be of a kind: it goes where it is told,
  // pageable host memory by default.
  if (storage_nbytes == 0) {
    const Location location = at.value_or(Location::pageable());
    validate(location);
    return location;
  }
  const std::optional<Location> memory = backend_.memory->locate(data, storage_nbytes);
  if (!at && !memory)
    throw ResidencyMaterializationError(
        "Cannot infer location: the buffer mixes pageable and pinned memory (or is managed memory)");
  const Location location = at.value_or(*memory);
  validate(location);
  // §2.6 steps 2-3: the memory must be of the location's kind.
  if (!memory)
    throw ResidencyMaterializationError(
        "adopt at " + location.name() +
        ": the buffer mixes pageable and pinned memory (or is managed memory)");
  if (*memory == location) return location;
  if (location == Location::pinned() && *memory == Location::pageable())
    throw ResidencyMaterializationError(
        "adopt at pinned: the buffer is not fully pinned (it is pageable host memory)");
  if (location == Location::pageable() && *memory == Location::pinned())
    throw ResidencyMaterializationError("adopt at pageable: the buffer unexpectedly uses pinned storage");
  throw ResidencyMaterializationError("adopt at " + location.name() + ": the buffer is " +
                                      memory_of(*memory) + ", not " + memory_of(location));
}

Handle Manager::adopt(std::byte *data, std::size_t logical_nbytes, std::size_t storage_nbytes,
                      std::optional<Location> at, Storage::Release deleter, ReplicaMode mode) {
  if (storage_nbytes < logical_nbytes)
    throw std::invalid_argument("adopt: storage_nbytes (" + std::to_string(storage_nbytes) +
                                ") must be at least logical_nbytes (" + std::to_string(logical_nbytes) + ")");
  auto lock = open_lock();
  reap_unless_unobservable();
  // §16.1: location (inferred or validated), value against location, spec,
  // budget, alias, install.
  const Location location = adopted_location(data, storage_nbytes, at);
  check_enums(mode, Recoverability::MustPreserve);
  const ValueSpec spec{logical_nbytes, storage_nbytes, mode, Recoverability::MustPreserve};
  const auto value = static_cast<ValueId>(records_.size());
  // §2.7, after the budget (the model's admission below decides that one):
  // a block that overlaps a replica the manager owns would be freed twice.
  if (state_.account(location).admits(spec.storage_nbytes))
    for (const AddressRanges<ReplicaOf> &index : storage_index_)
      if (const auto owned = index.overlapping(data, storage_nbytes))
        throw ResidencyOwnershipError(
            "an adopted value must own independent backing storage: the buffer overlaps "
            "the replica of value " +
            value_name(owned->payload->value) + " at " + owned->payload->location.name());
  // Room for a second replica before anything changes: most values get
  // one, and their first transition then allocates nothing here.
  Record record;
  record.replicas.reserve(2);
  FailureDetail detail;
  // The caller keeps the buffer if adopt fails: the Storage that frees it is
  // made only once the model has admitted and installed the value.
  if (Outcome outcome = state_.adopt(value, spec, location, &detail); outcome.failed())
    throw_failure(outcome, {}, detail);
  record.handle_id = next_handle_id_++;
  records_.push_back(std::move(record));
  install_replica(value, location,
                  Storage(data, logical_nbytes, location, std::move(deleter), storage_nbytes));
  return Handle{id_, records_.back().handle_id};
}

void Manager::check_adoptable(Location at, std::uint64_t storage_nbytes) {
  auto lock = open_lock();
  // As adopt: releases deferred until now free their charges first.
  reap_unless_unobservable();
  FailureDetail detail;
  if (Outcome outcome = state_.admits_adoption(at, storage_nbytes, &detail); outcome.failed())
    throw_failure(outcome, {}, detail);
}

Handle Manager::register_source(const ValueSpec &spec, std::shared_ptr<Source> source,
                                Location source_location) {
  if (!source) throw std::invalid_argument("register_source needs a source");
  if (spec.storage_nbytes < spec.logical_nbytes)
    throw std::invalid_argument("storage_nbytes must be at least logical_nbytes");
  check_enums(spec.replica_mode, spec.recoverability);
  auto lock = open_lock();
  reap_unless_unobservable();
  validate(source_location);
  if (spec.recoverability != Recoverability::Reconstructible)
    throw std::invalid_argument("register_source needs a RECONSTRUCTIBLE value spec");
  const auto value = static_cast<ValueId>(records_.size());
  state_.register_source(value, spec, source_location);
  Record record;
  record.handle_id = next_handle_id_++;
  record.source = std::move(source);
  records_.push_back(std::move(record));
  return Handle{id_, records_.back().handle_id};
}

TransitionReport Manager::run_transition(const Action &action, Stream stream, PreparedCopy *prepared) {
  TransitionReport report;
  // Stamped by the first piece of work (Hooks); a no-op does none.
  report.started_at_ns = prepared ? prepared->started_at_ns : 0;
  report.copy_issued_at_ns = prepared ? prepared->issued_at_ns : 0;
  FailureDetail detail;
  Hooks hooks(*this, action.location, stream, prepared, &report,
              action.kind == ActionKind::Ensure || action.kind == ActionKind::Copy);
  const Outcome outcome = state_.apply(action, &detail, &hooks);
  if (outcome.failed()) {
    if (outcome.error == ErrorClass::InUse) {
      // §7.1: the message reports the tokens that protect the replica.
      const std::string name = value_name(action.value);
      for (const Protection &p : state_.value(action.value).protections)
        if (p.location == outcome.where)
          throw ResidencyInUseError(describe(outcome, {name, {}}, &detail) + " (active_reads=" +
                                    std::to_string(p.use_count) + ", holds=" + std::to_string(p.hold_count) +
                                    ", pending_events=" + std::to_string(p.pending_count) + ")");
    }
    throw_failure(outcome, MessageContext{value_name(action.value), {}}, detail);
  }
  const ValueSpec &spec = state_.value(action.value).spec;
  report.action = action.kind == ActionKind::Copy ? ActionKind::Ensure : action.kind;
  report.value = action.value;
  report.no_op = outcome.verdict == Verdict::NoOp;
  report.source = outcome.source;
  report.destination = outcome.destination;
  report.logical_nbytes = spec.logical_nbytes;
  report.storage_nbytes = spec.storage_nbytes;
  if (report.no_op) report.reason = no_op_reason(outcome.reason);
  hooks.anchor_start(); // the copy is running: the host has time to spare
  // The bytes of the copy booked above must be there before anyone sees
  // the replica (the lock is still held).
  try {
    hooks.finish_copy();
  } catch (...) {
    // The replica was booked and its copy failed: it goes again, through
    // the rules' drop (the version moves on by two; the peak keeps it).
    // Nothing protects a replica just made, and it has a sibling or a
    // source, so the rules always allow it; if they ever did not, a replica
    // without its bytes would stay booked, which must not pass silently.
    bool dropped = false;
    try {
      Hooks undo(*this, action.location, Stream{}, nullptr, &report);
      dropped =
          !state_.apply(Action{ActionKind::Drop, action.value, action.location, std::nullopt}, nullptr, &undo)
               .failed();
    } catch (...) {
    }
    if (!dropped)
      throw std::logic_error("the replica of " + value_name(action.value) + " at " + action.location.name() +
                             ", whose copy failed, could not be dropped again");
    throw;
  }
  if (report.started_at_ns == 0) {
    // A no-op does no work: it is stamped with the coarse clock (a fine
    // read costs as much as the rest of the no-op on a VM), never before
    // the manager's last stamp, so reports stay in order.
    report.started_at_ns = std::max(coarse_now_ns(), last_stamp_ns_);
    report.completed_at_ns = report.started_at_ns;
  } else {
    // Never before the start: the two may come from different clocks.
    report.completed_at_ns = std::max(hooks.completion_ns(), report.started_at_ns);
    last_stamp_ns_ = report.completed_at_ns;
  }
  record_trace(report);
  return report;
}

TransitionReport Manager::transition_to(ActionKind kind, const Handle &handle, Location to,
                                        std::optional<Location> from, Stream stream) {
  auto lock = open_lock();
  // Pending protection can refuse a move's source, never an ensure or copy.
  if (kind == ActionKind::Move)
    reap();
  else
    reap_unless_unobservable();
  const ValueId value = resolve(handle);
  validate(to);
  if (from) validate(*from);
  validate_stream(stream, to);
  return run_transition(Action{kind, value, to, from}, stream);
}

TransitionReport Manager::ensure(const Handle &handle, Location at, Stream stream) {
  return transition_to(ActionKind::Ensure, handle, at, std::nullopt, stream);
}

TransitionReport Manager::copy(const Handle &handle, Location to, Stream stream) {
  return transition_to(ActionKind::Copy, handle, to, std::nullopt, stream);
}

TransitionReport Manager::move(const Handle &handle, Location to, std::optional<Location> from,
                               Stream stream) {
  return transition_to(ActionKind::Move, handle, to, from, stream);
}

TransitionReport Manager::drop(const Handle &handle, Location at) {
  auto lock = open_lock();
  reap();
  return run_transition(Action{ActionKind::Drop, resolve(handle), at, std::nullopt}, Stream{});
}

TransitionReport Manager::discard(const Handle &handle) {
  auto lock = open_lock();
  reap();
  return run_transition(Action{ActionKind::Discard, resolve(handle), Location{}, std::nullopt}, Stream{});
}

std::uint64_t Manager::content_checksum(const Handle &handle, Location at) const {
  auto lock = open_lock();
  const ValueId value = resolve(handle);
  const Storage *storage = replica(value, at);
  if (!storage)
    throw ResidencyUnavailableError("value " + value_name(value) + " is not resident at " + at.name());
  if (!at.is_cuda()) return XXH64(storage->bytes().data(), storage->size(), 0);
  std::vector<std::byte> bytes(storage->size()); // device bytes are read through the copy engine
  backend_.copies->read(*storage, bytes);
  return XXH64(bytes.data(), bytes.size(), 0);
}

LocationAccount Manager::account(Location location) const {
  auto lock = open_lock();
  return state_.account(location);
}

void Manager::reset_peaks() {
  auto lock = open_lock();
  state_.reset_peaks();
}

std::vector<Location> Manager::replicas(const Handle &handle) const {
  auto lock = open_lock();
  std::vector<Location> out;
  for (const auto &[location, storage] : records_[resolve(handle)].replicas)
    out.push_back(location);
  return out;
}

void Manager::record_trace(const TransitionReport &report) {
  if (trace_capacity_ == 0) return;
  if (trace_.size() < trace_capacity_)
    trace_.push_back(report);
  else
    trace_[trace_next_] = report;
  if (++trace_next_ == trace_capacity_) trace_next_ = 0;
}

std::vector<TransitionReport> Manager::trace() const {
  auto lock = lock_state(); // still readable after close (§15, quirk)
  // Oldest first: once the ring is full the oldest is where the next goes.
  std::vector<TransitionReport> out;
  out.reserve(trace_.size());
  const std::size_t oldest = trace_.size() < trace_capacity_ ? 0 : trace_next_;
  for (std::size_t i = 0; i < trace_.size(); ++i)
    out.push_back(trace_[(oldest + i) % trace_.size()]);
  return out;
}

void Manager::clear_trace() {
  auto lock = lock_state();
  trace_.clear();
  trace_next_ = 0;
}

void Manager::close(bool wait, bool force) {
  auto lock = lock_state();
  if (closed_) return;
  apply_deferred_releases();
  if (wait)
    reaper_->wait_for_pending();
  else
    reap();
  std::size_t leases = 0, pending = 0, holds = 0, reservations = 0;
  for (LifetimeId id : state_.live_lifetimes()) {
    const LifetimeRecord &lifetime = *state_.find_lifetime(id);
    switch (lifetime.kind) {
    case LifetimeKind::Lease: ++(lifetime.state == LifetimeState::Pending ? pending : leases); break;
    case LifetimeKind::Hold: ++holds; break;
    case LifetimeKind::Reservation: ++reservations; break;
    }
  }
  if (!force && leases + pending + holds + reservations > 0)
    throw ResidencyInUseError(
        "cannot close manager " + std::to_string(id_) + ": active_leases=" + std::to_string(leases) +
        ", pending_leases=" + std::to_string(pending) + ", holds=" + std::to_string(holds) +
        ", reservations=" + std::to_string(reservations));
  if (force)
    for (Location location : state_.registry())
      if (location.is_cuda()) backend_.streams->synchronize_device(location);
  reaper_->clear();
  for (AddressRanges<ReplicaOf> &index : storage_index_)
    index.clear();
  records_.clear(); // frees every replica
  state_.close();
  closed_ = true;
}

} // namespace fhr

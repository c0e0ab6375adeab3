#pragma once
/// \file
/// fhr::Manager: the residency manager of docs/semantics.md, in C++. Each
/// transition applies the rules of the shared model (fhr::State), which
/// calls back into the manager for the physical work (allocate, load, copy,
/// free) between the admission check and the install; explain and the
/// preflight of execute_actions and scope entry run the shared Simulator.
/// No rule is implemented twice.
///
/// Thread safety (§13): one manager lock serialises all state access; every
/// public member may be called from any thread. While a Source::load runs,
/// every call that needs the state fails with ResidencyReentrancyError from
/// any thread (threads already waiting for the lock give up too), and a
/// thread that re-enters the manager from inside a transition (a deleter, a
/// source) gets the same error instead of a deadlock. Leases, holds and
/// reservations may be released from any thread.

#include "fhr/model/plan.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"
#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/callback_guarded_mutex.hpp"
#include "fhr/runtime/errors.hpp"
#include "fhr/runtime/reports.hpp"
#include "fhr/runtime/snapshot.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fhr {

/// Names one managed value of one manager. Copying or moving the value never
/// changes its handle.
struct Handle {
  std::uint64_t manager_id = 0;
  std::uint64_t handle_id = 0;
  friend bool operator==(const Handle &, const Handle &) = default;
};

/// A trusted loader: fills manager-provided storage at the source location
/// with the exact bytes of the value it stands for.
class Source {
public:
  virtual ~Source() = default;
  virtual void load(std::span<std::byte> destination) = 0;
};

/// A Source that reads `destination.size()` bytes of `path` from `offset`;
/// a short or failed read throws BackendError.
std::shared_ptr<Source> make_file_source(std::string path, std::uint64_t offset = 0);

/// One action of a plan or action list.
struct ActionSpec {
  ActionKind kind = ActionKind::Ensure;
  Handle handle;
  Location location;
  std::optional<Location> from;
};

/// Copy streams per CUDA destination for the actions of a plan (the seed's
/// transfer_streams); destinations not listed use the backend's default
/// stream of their device.
using TransferStreams = std::vector<std::pair<Location, Stream>>;

/// The stream listed for `destination`, or the empty stream.
inline Stream stream_for(const TransferStreams &streams, Location destination) {
  for (const auto &[location, stream] : streams)
    if (location == destination) return stream;
  return {};
}

struct PlanSpec {
  std::string name;
  std::vector<ActionSpec> reclaim;
  std::vector<Reservation> reservations;
  std::vector<ActionSpec> enter;
  std::vector<ActionSpec> exit;
};

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

protected:
  Lifetime(Manager *manager, LifetimeId id) : manager_(manager), id_(id) {}
  Manager *manager_ = nullptr;
  LifetimeId id_ = 0;
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

/// A single-use scope over one plan (§12): enter() runs the whole-plan
/// preflight, then reclaim, the reservations and enter; close() runs exit
/// and releases the reservations. Completed transitions are never rolled
/// back. Destroying an entered scope without close() releases its
/// reservations but runs no exit action.
class Scope {
public:
  Scope(Scope &&) noexcept;
  Scope &operator=(Scope &&) = delete;
  Scope(const Scope &) = delete;
  ~Scope();

  /// Throws std::logic_error on a second entry; ResidencyStaleStateError,
  /// ResidencyPlanError (nothing ran) or ResidencyPlanExecutionError (phase
  /// reclaim, reserve or enter; entry failures consume the scope).
  void enter();
  /// Idempotent; std::logic_error before enter(). An exit failure throws
  /// ResidencyPlanExecutionError (phase exit) after releasing the reservations.
  void close();
  /// enter(), body(), close(). If the body throws and close() fails too, the
  /// body's exception propagates and exit_error() keeps the close failure.
  template <typename Body>
  void run(Body &&body);

  /// All transitions (reclaim, enter, exit) once closed successfully.
  const std::optional<PlanReport> &report() const { return report_; }
  /// The transitions committed so far: reclaim and enter once entered,
  /// exit too once closed.
  const PlanReport &progress() const { return report_ ? *report_ : entered_; }
  const std::optional<ResidencyPlanExecutionError> &exit_error() const { return exit_error_; }

private:
  friend class Manager;
  Scope(Manager &manager, PlanSpec plan, std::optional<std::uint64_t> expected_state_version,
        TransferStreams transfer_streams)
      : manager_(&manager), plan_(std::move(plan)), expected_state_version_(expected_state_version),
        transfer_streams_(std::move(transfer_streams)) {}

  enum class Stage { Created, Entered, Closed };
  Manager *manager_;
  PlanSpec plan_;
  std::optional<std::uint64_t> expected_state_version_;
  TransferStreams transfer_streams_;
  Stage stage_ = Stage::Created;
  PlanReport entered_;
  std::vector<LifetimeId> reservations_;
  std::optional<PlanReport> report_;
  std::optional<ResidencyPlanExecutionError> exit_error_;
};

template <typename Body>
void Scope::run(Body &&body) {
  enter();
  try {
    body();
  } catch (...) {
    try {
      close();
    } catch (const ResidencyPlanExecutionError &error) {
      exit_error_ = error;
    }
    throw;
  }
  close();
}

struct ManagerOptions {
  /// Constructor budgets, registered in order (std::nullopt: unbudgeted).
  std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets;
  /// Completed transitions kept by trace(); 0 disables it.
  std::size_t trace_capacity = 4096;
  /// Where bytes live; the host backend when empty.
  std::shared_ptr<Backend> backend;
  /// Receives warnings (an abandoned lifetime, an event that could not be
  /// recorded); called without the manager lock held, from whichever thread
  /// caused them, so it must be thread-safe. Empty: print them to stderr as
  /// "fhr: warning: ...".
  std::function<void(std::string_view)> warning_handler;
  /// Start the copies of independent actions of a plan phase together when
  /// the backend has separate copy engines (Backend::overlaps_copies);
  /// false runs every action after the previous one finished.
  bool overlap_transfers = true;
};

class Manager {
public:
  explicit Manager(ManagerOptions options = {});
  ~Manager();
  Manager(const Manager &) = delete;
  Manager &operator=(const Manager &) = delete;

  /// Process-unique identity carried by every handle of this manager.
  std::uint64_t id() const { return id_; }
  std::uint64_t state_version() const;
  /// Budgeted or used locations in registration order.
  std::vector<Location> locations() const;

  /// Takes ownership of `nbytes` at `data`, which live at `at`; `deleter`
  /// frees them when the replica goes. The value must be preserved.
  Handle adopt(std::byte *data, std::size_t nbytes, Location at, Storage::Release deleter,
               ReplicaMode mode = ReplicaMode::Exclusive);
  /// Registers a reconstructible value without loading it.
  Handle register_source(const ValueSpec &spec, std::shared_ptr<Source> source,
                         Location source_location = Location::pageable());

  /// `stream`: the copy stream for a CUDA destination (std::invalid_argument
  /// for a host destination, a foreign stream or one of another device).
  TransitionReport ensure(const Handle &handle, Location at, Stream stream = {});
  TransitionReport copy(const Handle &handle, Location to, Stream stream = {});
  TransitionReport move(const Handle &handle, Location to, std::optional<Location> from = std::nullopt,
                        Stream stream = {});
  TransitionReport drop(const Handle &handle, Location at);
  TransitionReport discard(const Handle &handle);

  /// Dry-runs a whole plan (§10.2) without changing anything.
  Explanation explain(const PlanSpec &plan,
                      std::optional<std::uint64_t> expected_state_version = std::nullopt);
  /// Preflights, then executes the actions in order (§11). Throws
  /// ResidencyPlanError before anything runs, ResidencyPlanExecutionError
  /// with the partial report when a step fails at run time.
  PlanReport execute_actions(std::span<const ActionSpec> actions,
                             const std::string &name = "residency-actions",
                             std::optional<std::uint64_t> expected_state_version = std::nullopt,
                             const TransferStreams &transfer_streams = {});

  /// Borrows ready replicas for reads (§7.2): atomic over the handles,
  /// duplicates collapse, nothing is ever materialized. A CUDA location
  /// needs the stream that will read the values (`consumer_stream`); a host
  /// location takes none.
  Lease acquire(std::span<const Handle> handles, Location at, Stream consumer_stream = {});
  /// Protects ready replicas without exposing them (§7.3).
  Hold hold(std::span<const Handle> handles, Location at);
  /// Records `nbytes` of headroom at `at` (§8); a blank label is an argument error.
  ActiveReservation reserve(Location at, std::uint64_t nbytes, const std::string &label);

  /// A scope over `plan`; nothing happens until Scope::enter().
  Scope scope(PlanSpec plan, std::optional<std::uint64_t> expected_state_version = std::nullopt,
              TransferStreams transfer_streams = {});

  /// XXH64 of the replica's bytes at `at` (throws if not resident): the
  /// content check of `fhr-plan run` and the tests.
  std::uint64_t content_checksum(const Handle &handle, Location at) const;
  /// The accounting of one location (zeroes if it was never registered);
  /// the per-location part of what snapshot() will return.
  LocationAccount account(Location location) const;
  /// Starts a new reporting window: every location's peak used and peak
  /// charged become its current figures (to measure one stage's peak).
  void reset_peaks();
  /// Locations of the value's replicas, in installation order.
  std::vector<Location> replicas(const Handle &handle) const;

  /// §15: `wait` first synchronises the events of every pending CUDA lease
  /// (otherwise only completed ones are reaped); then refuses
  /// (ResidencyInUseError, nothing changes) while leases (active or
  /// pending), holds or reservations remain, unless `force`, which first
  /// synchronises every CUDA device in use. Then frees every replica and
  /// forgets every value. Afterwards every call but id(), locations(),
  /// trace() and clear_trace() throws ResidencyClosedError, and releasing a
  /// lifetime is a silent no-op. Idempotent.
  void close(bool wait = true, bool force = false);
  bool closed() const;

  /// One atomic view of every value, location and reservation (§14).
  Snapshot snapshot() const;
  /// Calls `read(state)` with the model state under the manager lock, after
  /// reaping completed leases as snapshot() does, and returns its result:
  /// the same view without a copy (the controller plans on it, §18.3).
  /// ValueId v is the value of Handle{id(), v + 1}. `read` must not call the
  /// manager (ResidencyReentrancyError).
  template <typename Read>
  decltype(auto) read_state(Read &&read) const;

  std::vector<TransitionReport> trace() const;
  void clear_trace();

private:
  friend class Lifetime;
  friend class Lease;
  friend class Scope;
  class Hooks;
  class StateLock;

  /// A copy started before its action is applied (overlap inside a plan):
  /// the storage at `to` receives the replica at `from`.
  struct PreparedCopy {
    Location from, to;
    Storage storage;
    CopyInFlight copy;
    std::uint64_t started_at_ns = 0;
  };

  struct Record {
    std::uint64_t handle_id = 0;
    std::shared_ptr<Source> source;
    /// Replicas in installation order.
    std::vector<std::pair<Location, Storage>> replicas;
  };
  /// The consumer streams of a CUDA lease, and the events its release
  /// recorded on them.
  struct LeaseStreams {
    LifetimeId lease = 0; ///< 0: the slot is free
    std::vector<Stream> streams;
    std::vector<Event> events;
  };
  /// LeaseStreams by lifetime slot (the low half of a LifetimeId). A slot's
  /// vectors keep their capacity when its lease goes, so that a lease
  /// allocates nothing here once the table has warmed up.
  class LeaseStreamTable {
  public:
    LeaseStreams *find(LifetimeId id) {
      const std::size_t slot = id & 0xffffffffu;
      return slot < slots_.size() && slots_[slot].lease == id ? &slots_[slot] : nullptr;
    }
    const LeaseStreams *find(LifetimeId id) const { return const_cast<LeaseStreamTable *>(this)->find(id); }
    LeaseStreams &add(LifetimeId id) {
      const std::size_t slot = id & 0xffffffffu;
      if (slot >= slots_.size()) slots_.resize(slot + 1);
      slots_[slot].lease = id;
      return slots_[slot];
    }
    void erase(LeaseStreams &entry) {
      entry.lease = 0;
      entry.streams.clear();
      entry.events.clear();
    }
    /// Every live entry.
    template <typename Visit>
    void for_each(Visit visit) {
      for (LeaseStreams &entry : slots_)
        if (entry.lease != 0) visit(entry);
    }
    void clear() { slots_.clear(); }

  private:
    std::vector<LeaseStreams> slots_;
  };

  // ---- locking (manager_lock.cpp) ----------------------------------------
  /// The manager lock, after the reentrancy checks of §13.
  StateLock lock_state() const;
  /// lock_state(), then ResidencyClosedError after close().
  StateLock open_lock() const;
  void warn(const std::string &message) const;

  // ---- values and transitions (manager.cpp) -----------------------------
  ValueId resolve(const Handle &handle) const;
  ValueId resolve_for_plan(const Handle &handle) const;
  void validate(Location location) const;
  /// std::invalid_argument unless `stream` may copy into `destination`.
  void validate_stream(Stream stream, Location destination) const;
  /// Applies one action; `prepared` is its copy, already done.
  TransitionReport run_transition(const Action &action, Stream stream, PreparedCopy *prepared = nullptr);
  /// ensure, copy and move: the checks of §16.1 in order, then the transition.
  TransitionReport transition_to(ActionKind kind, const Handle &handle, Location to,
                                 std::optional<Location> from, Stream stream);
  std::string value_name(ValueId value) const;
  void record_trace(const TransitionReport &report);
  Storage *replica(ValueId value, Location at);
  const Storage *replica(ValueId value, Location at) const;

  // ---- plans (plans.cpp) --------------------------------------------------
  std::vector<Action> to_actions(std::span<const ActionSpec> specs) const;
  void validate_transfer_streams(const TransferStreams &streams) const;
  /// Runs `actions` as phase `phase` of `plan_name`, appending to `report`;
  /// a failure becomes ResidencyPlanExecutionError with the partial report.
  void run_phase(const std::string &plan_name, ExecutionPhase phase, std::span<const ActionSpec> actions,
                 const TransferStreams &streams, PlanReport &report);
  /// Throws ResidencyPlanExecutionError for `error`, raised by action `index`.
  [[noreturn]] void fail_phase(const std::string &plan_name, ExecutionPhase phase, std::size_t index,
                               std::exception_ptr error, PlanReport &report);
  /// Overlap (overlap.cpp): starts the copies of the independent actions
  /// from `first` on (the caller has just reaped), then applies them in
  /// plan order. Returns the index
  /// after the last one applied; `first` when action `first` must run alone.
  std::size_t run_overlapped(const std::string &plan_name, ExecutionPhase phase,
                             std::span<const ActionSpec> actions, std::size_t first,
                             const TransferStreams &streams, PlanReport &report);
  /// Throws ResidencyPlanError (with the failing step) for an infeasible plan.
  void preflight(const std::string &plan_name, const PlanSpec *plan, std::span<const Action> actions) const;

  // ---- lifetimes (lifetimes.cpp) -----------------------------------------
  std::vector<ValueId> protect_values(std::span<const Handle> handles) const;
  void release_all(std::vector<LifetimeId> &lifetimes);
  /// Releases any lifetime under the lock; returns a warning, if any.
  std::string release_locked(LifetimeId id, bool wait);
  void release(LifetimeId id, bool wait);
  void abandon(LifetimeId id) noexcept;
  bool lifetime_active(LifetimeId id) const;
  void add_consumer_stream(LifetimeId id, Stream stream);
  /// Removes the pending protection of a CUDA lease whose events completed.
  void complete_lease(LifetimeId id);
  /// §7.4: converts every pending lease whose events have all completed
  /// (after applying the deferred releases).
  void reap();
  /// At the §7.4 points whose outcome pending protection cannot change
  /// (acquire, hold, reserve, adopt, register_source, ensure, copy): applies
  /// the deferred releases, and reaps only once kReapBacklog leases are
  /// pending (or twice what the last reap left). What any caller can observe is what a full reap gives: every
  /// operation that reads protection or the version (drop, move, discard,
  /// plans, scopes, snapshot, state_version, close) reaps in full first, and
  /// reaping later only sees more events completed. A backlog is reaped with
  /// a few event queries per stream instead of one per lease.
  void reap_unless_unobservable();
  static constexpr std::size_t kReapBacklog = 32;
  /// For each pending lease (pending_leases_ order): have all its events completed?
  std::vector<bool> pending_completion() const;
  /// A lifetime abandoned while the state could not be touched is released
  /// at the next reap.
  void defer_release(LifetimeId id);
  void apply_deferred_releases();
  /// Pending leases whose events have all completed (explain sees through them).
  std::vector<LifetimeId> completed_pending() const;

  mutable CallbackGuardedMutex mutex_;
  /// The thread holding mutex_, to turn same-thread re-entry into an error.
  mutable std::atomic<std::thread::id> lock_owner_{};
  std::uint64_t id_;
  std::shared_ptr<Backend> backend_;
  std::function<void(std::string_view)> warning_handler_;
  State state_;
  std::vector<Record> records_;
  std::uint64_t next_handle_id_ = 1;
  std::size_t trace_capacity_;
  /// A ring of the last trace_capacity_ reports: recording never allocates
  /// once it is full. trace_next_ is where the next report goes.
  std::vector<TransitionReport> trace_;
  std::size_t trace_next_ = 0;
  LeaseStreamTable lease_streams_;
  /// Released CUDA leases whose events have not all been seen complete.
  std::vector<LifetimeId> pending_leases_;
  /// The backlog at which reap_unless_unobservable reaps.
  std::size_t backlog_reap_at_ = kReapBacklog;
  std::mutex deferred_mutex_;
  std::vector<LifetimeId> deferred_releases_;
  std::atomic<bool> has_deferred_releases_{false};
  bool closed_ = false;
  bool overlap_transfers_;
};

/// Holds a manager's lock (see Manager::lock_state).
class Manager::StateLock {
public:
  explicit StateLock(const Manager &manager);
  StateLock(StateLock &&other) noexcept : manager_(std::exchange(other.manager_, nullptr)) {}
  StateLock(const StateLock &) = delete;
  StateLock &operator=(const StateLock &) = delete;
  StateLock &operator=(StateLock &&) = delete;
  ~StateLock() { unlock(); }
  void unlock();

private:
  const Manager *manager_;
};

template <typename Read>
decltype(auto) Manager::read_state(Read &&read) const {
  auto lock = open_lock();
  const_cast<Manager *>(this)->reap();
  return read(static_cast<const State &>(state_));
}

} // namespace fhr

#pragma once
/// \file
/// fhr::Manager: the residency manager of docs/semantics.md, in C++. Each
/// transition applies the rules of the shared model (fhr::State), which
/// calls back into the manager for the physical work (allocate, load, copy,
/// free) between the admission check and the install; explain and the
/// preflight of execute_actions and scope entry run the shared Simulator.
/// No rule is implemented twice.
///
/// The manager works through three interfaces (fhr/runtime/backend.hpp): a
/// memory resource, a copy engine and stream support.
///
/// Thread safety (§13): one manager lock serialises all state access; every
/// public member may be called from any thread. While a Source::load runs,
/// every call that needs the state fails with ResidencyReentrancyError from
/// any thread (threads already waiting for the lock give up too), and a
/// thread that re-enters the manager from inside a transition (a deleter, a
/// source) gets the same error instead of a deadlock. Leases, holds and
/// reservations may be released from any thread.
///
/// This header includes every header of the manager's API: handles,
/// sources, plans, lifetimes, scopes, backends, errors, reports, snapshots.

#include "fhr/model/plan.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"
#include "fhr/runtime/address_ranges.hpp"
#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/callback_guarded_mutex.hpp"
#include "fhr/runtime/errors.hpp"
#include "fhr/runtime/handle.hpp"
#include "fhr/runtime/lifetimes.hpp"
#include "fhr/runtime/plan.hpp"
#include "fhr/runtime/reports.hpp"
#include "fhr/runtime/scope.hpp"
#include "fhr/runtime/snapshot.hpp"
#include "fhr/runtime/source.hpp"

#include <array>
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
#include <vector>

namespace fhr {

class LeaseReaper;

/// Blocks a backend's pool at one location should hold before the first
/// transfer needs them (warm-up): the byte sizes of the values that will go
/// there, one entry per value (a size may repeat).
struct PoolRequest {
  Location location;
  std::vector<std::size_t> block_bytes;
};

/// Adds a block of `bytes` to the request for `location` in `requests`
/// (one request per location, in the order they first appear).
void request_block(std::vector<PoolRequest> &requests, Location location, std::size_t bytes);

/// What a warm-up reserved and what it took: the cold cost that the first
/// transfers of a plan would otherwise pay inside their own time.
struct WarmUpReport {
  struct Pool {
    Location location;
    std::uint64_t blocks = 0;         ///< blocks asked for
    std::uint64_t reserved_bytes = 0; ///< newly reserved by the backend
  };
  std::vector<Pool> pools;
  std::uint64_t duration_ns = 0;
  std::uint64_t reserved_bytes() const {
    std::uint64_t total = 0;
    for (const Pool &pool : pools)
      total += pool.reserved_bytes;
    return total;
  }
};

struct ManagerOptions {
  /// Constructor budgets, registered in order (std::nullopt: unbudgeted).
  std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets;
  /// Completed transitions kept by trace(); 0 disables it.
  std::size_t trace_capacity = 4096;
  /// The memory resource, copy engine and stream support; one Backend
  /// converts to all three (`options.backend = make_cuda_backend()`). The
  /// host backend when all are empty; some but not all empty is an argument
  /// error.
  BackendInterfaces backend;
  /// Receives warnings (an abandoned lifetime, an event that could not be
  /// recorded); called without the manager lock held, from whichever thread
  /// caused them, so it must be thread-safe. Empty: print them to stderr as
  /// "fhr: warning: ...".
  std::function<void(std::string_view)> warning_handler;
  /// Start the copies of independent actions of a plan phase together when
  /// the copy engine has separate engines (CopyEngine::overlaps_copies);
  /// false runs every action after the previous one finished.
  bool overlap_transfers = true;
  /// Pool blocks reserved while the manager is made (docs/runtime.md,
  /// "Warm-up"); Manager::startup_warm_up() reports what it took. Empty:
  /// the pools fill on first use. Manager::warm_up(plan) derives the blocks
  /// from a plan instead.
  std::vector<PoolRequest> warm_up;
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
  /// The interfaces the manager works through: a caller that adopts
  /// buffers can take pinned or device memory from `memory` (§3.1 step 4
  /// refuses a buffer whose memory is not of the location's kind).
  const BackendInterfaces &backend() const { return backend_; }

  /// Takes ownership of a caller's buffer (§3.1): the value is the first
  /// `logical_nbytes` of the `storage_nbytes` block at `data` (a view may be
  /// smaller than its block; the block is what the location is charged).
  /// `at`: where the buffer lives; std::nullopt infers it from the memory
  /// (a device's memory, pinned or pageable host memory). `deleter(data)`
  /// frees the block when its replica goes; a failed adopt leaves the
  /// buffer with the caller. Throws std::invalid_argument (storage smaller
  /// than logical, an invalid location, a replica mode out of range),
  /// ResidencyMaterializationError (memory of another kind than `at`, a
  /// buffer that mixes pageable and pinned memory), ResidencyBudgetError,
  /// ResidencyOwnershipError (the block overlaps a replica the manager
  /// owns, §2.7).
  Handle adopt(std::byte *data, std::size_t logical_nbytes, std::size_t storage_nbytes,
               std::optional<Location> at, Storage::Release deleter,
               ReplicaMode mode = ReplicaMode::Exclusive);
  /// Throws what adopt would throw, before any buffer exists, for a block
  /// of `storage_nbytes` at `at` that the location or its budget refuses
  /// (std::invalid_argument for a location the manager lacks,
  /// ResidencyBudgetError): the model's admission of adopt, the same
  /// check. For callers that make a buffer only to adopt it, so that a
  /// value too large to allocate is refused as the plan's explanation
  /// says rather than by the allocator.
  void check_adoptable(Location at, std::uint64_t storage_nbytes);
  /// A buffer of exactly `nbytes` of value at `at`.
  Handle adopt(std::byte *data, std::size_t nbytes, Location at, Storage::Release deleter,
               ReplicaMode mode = ReplicaMode::Exclusive) {
    return adopt(data, nbytes, nbytes, at, std::move(deleter), mode);
  }
  /// Registers a reconstructible value without loading it (§3.2);
  /// std::invalid_argument for a spec whose mode or recoverability is out
  /// of range or not RECONSTRUCTIBLE.
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

  /// Dry-runs a whole plan (§10.2, §10.3) without changing anything.
  ExplainedPlan explain(const PlanSpec &plan,
                        std::optional<std::uint64_t> expected_state_version = std::nullopt);
  /// Preflights, then executes the actions in order (§11). Throws
  /// ResidencyPlanError before anything runs, ResidencyPlanExecutionError
  /// with the partial report when a step fails at run time.
  PlanReport execute_actions(std::span<const ActionSpec> actions,
                             const std::string &name = "residency-actions",
                             std::optional<std::uint64_t> expected_state_version = std::nullopt,
                             const TransferStreams &transfer_streams = {});

  /// Borrows ready replicas for reads (§7.2): atomic over the handles,
  /// duplicates collapse, nothing is ever materialized; the first handle in
  /// order that fails decides the error. A CUDA location needs the stream
  /// that will read the values (`consumer_stream`); a host location takes
  /// none.
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

  /// Warm-up: asks the backend to reserve pool blocks ahead of the
  /// transfers (MemoryResource::prepare). Changes no residency state, no
  /// budget and not the version; the blocks show as pool idle bytes in
  /// snapshots. Throws what the backend throws (BackendError, std::bad_alloc).
  WarmUpReport warm_up(std::span<const PoolRequest> requests);
  /// Warm-up for a plan: one block per transfer the plan would perform from
  /// the current state (its explanation: every executable ensure, copy and
  /// move that is not a no-op, at its destination; a reload also fills
  /// storage at its source location, freed once copied on: one block of
  /// each such size there), then warm_up(requests).
  WarmUpReport warm_up(const PlanSpec &plan);
  /// The pool blocks warm_up(plan) would ask for.
  std::vector<PoolRequest> pool_requests(const PlanSpec &plan);
  /// What ManagerOptions::warm_up reserved in the constructor (empty
  /// report when it asked for nothing).
  const WarmUpReport &startup_warm_up() const { return startup_warm_up_; }

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
    std::uint64_t issued_at_ns = 0; ///< its destination allocated, the copy issued
  };

  struct Record {
    std::uint64_t handle_id = 0;
    std::shared_ptr<Source> source;
    /// Replicas in installation order.
    std::vector<std::pair<Location, Storage>> replicas;
  };
  /// Which replica a range of the storage index belongs to.
  /// (No default member initializers: the index's spare node asks whether
  /// it is default-constructible while Manager is still incomplete.)
  struct ReplicaOf {
    ValueId value;
    Location location;
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
  /// The message of the ResidencyHandleError for a handle that names no
  /// value of this manager (foreign or unknown).
  std::string unresolvable_message(const Handle &handle) const;
  void validate(Location location) const;
  /// std::invalid_argument unless `stream` may copy into `destination`.
  void validate_stream(Stream stream, Location destination) const;
  /// §3.1 steps 3–4: the location of an adopted buffer (inferred from its
  /// memory when `at` is empty), checked against the kind of its memory.
  Location adopted_location(const std::byte *data, std::size_t storage_nbytes,
                            std::optional<Location> at) const;
  /// Applies one action; `prepared` is its copy, already done.
  TransitionReport run_transition(const Action &action, Stream stream, PreparedCopy *prepared = nullptr);
  /// ensure, copy and move: the checks of §16.1 in order, then the transition.
  TransitionReport transition_to(ActionKind kind, const Handle &handle, Location to,
                                 std::optional<Location> from, Stream stream);
  std::string value_name(ValueId value) const;
  void record_trace(const TransitionReport &report);
  Storage *replica(ValueId value, Location at);
  const Storage *replica(ValueId value, Location at) const;
  /// Installs `storage` as the replica of `value` at `location`, and indexes
  /// its block (§2.7). `storage` is moved from only if this succeeds.
  void install_replica(ValueId value, Location location, Storage &&storage);
  /// Removes (frees) the replica of `value` at `location`.
  void remove_replica(ValueId value, Location location);

  // ---- plans (plans.cpp, explain.cpp) -------------------------------------
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
  void preflight(const std::string &plan_name, const PlanSpec *plan,
                 std::span<const ActionSpec> action_specs) const;
  /// §10.3 (explain.cpp): the simulator's explanation of `plan` with the
  /// plan's name, a row per simulated action and the failure's message.
  ExplainedPlan explained(const PlanSpec &plan, Explanation simulated) const;

  // ---- lifetimes (lifetimes.cpp; CUDA leases and reaping: reaping.cpp) ---
  /// acquire and hold: the first handle in order that names no value, or
  /// whose value is not resident at `at`, decides the error (§7.2, §16.1).
  LifetimeId protect(LifetimeKind kind, std::span<const Handle> handles, Location at);
  void release_all(std::vector<LifetimeId> &lifetimes);
  /// Releases any lifetime under the lock; returns a warning, if any.
  std::string release_locked(LifetimeId id, bool wait);
  void release(LifetimeId id, bool wait);
  void abandon(LifetimeId id) noexcept;
  bool lifetime_active(LifetimeId id) const;
  void add_consumer_stream(LifetimeId id, Stream stream);
  /// §7.4: converts every pending lease whose events have all completed
  /// (after applying the deferred releases).
  void reap();
  /// At the §7.4 points whose outcome pending protection cannot change
  /// (acquire, hold, reserve, adopt, register_source, ensure, copy): applies
  /// the deferred releases, and reaps only a backlog (LeaseReaper). What
  /// any caller can observe is what a full reap gives: every operation that
  /// reads protection or the version (drop, move, discard, plans, scopes,
  /// snapshot, state_version, close) reaps in full first, and reaping later
  /// only sees more events completed.
  void reap_unless_unobservable();
  /// Pending leases whose events have all completed (explain sees through them).
  std::vector<LifetimeId> completed_pending() const;
  /// A lifetime abandoned while the state could not be touched is released
  /// at the next reap.
  void defer_release(LifetimeId id);
  void apply_deferred_releases();

  mutable CallbackGuardedMutex mutex_;
  /// The thread holding mutex_, to turn same-thread re-entry into an error.
  mutable std::atomic<std::thread::id> lock_owner_{};
  std::uint64_t id_;
  BackendInterfaces backend_;
  std::function<void(std::string_view)> warning_handler_;
  State state_;
  std::vector<Record> records_;
  /// §2.7: the block of every installed replica, by address, in two
  /// indexes: host replicas (pageable, pinned) and device replicas. A
  /// transition walks the one of its location only: a small ensure to a
  /// device no longer walks a tree of every value's host buffer (10,000
  /// values touched once each cost 3.5 data-cache misses an ensure and drop
  /// there, runtime_bench's `ops many` under cachegrind). An adopted
  /// buffer is checked against both.
  std::array<AddressRanges<ReplicaOf>, 2> storage_index_;
  AddressRanges<ReplicaOf> &storage_index(Location location) {
    return storage_index_[location.is_cuda() ? 1 : 0];
  }
  /// The index of the other kind of location: where a removed replica's
  /// node is kept when its own index keeps one (AddressRanges::remove).
  AddressRanges<ReplicaOf> &other_storage_index(Location location) {
    return storage_index_[location.is_cuda() ? 0 : 1];
  }
  std::uint64_t next_handle_id_ = 1;
  /// The completion stamp of the latest transition that did work: no-ops,
  /// stamped with the coarse clock, are never stamped before it.
  std::uint64_t last_stamp_ns_ = 0;
  std::size_t trace_capacity_;
  /// A ring of the last trace_capacity_ reports: recording never allocates
  /// once it is full. trace_next_ is where the next report goes.
  std::vector<TransitionReport> trace_;
  std::size_t trace_next_ = 0;
  /// CUDA leases: consumer streams, release events, pending protection.
  std::unique_ptr<LeaseReaper> reaper_;
  std::mutex deferred_mutex_;
  std::vector<LifetimeId> deferred_releases_;
  std::atomic<bool> has_deferred_releases_{false};
  bool closed_ = false;
  bool overlap_transfers_;
  /// A lone copy's start and end are read on the time-stamp counter
  /// (runtime/manager/src/tick_stamps.hpp): copies overlap the host and the
  /// counter is invariant here.
  bool tick_stamps_;
  WarmUpReport startup_warm_up_;
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

#pragma once
/// \file
/// fhr::Manager: the residency manager of ../shared/seed, in C++. Each
/// transition applies the rules of the shared model (fhr::State), which
/// calls back into the manager for the physical work (allocate, load, copy,
/// free) between the admission check and the install; explain and the
/// preflight of execute_actions run the shared Simulator. No rule is
/// implemented twice.
///
/// This is the first part of the runtime (issue #4): registration, the
/// primitive transitions with exact reports, explain, execute_actions with
/// partial reports, host leases, holds and reservations, scopes, snapshots,
/// content checksums, the trace, close. CUDA leases, the callback guard and
/// the simulated device backend are still to come (docs/runtime.md).

#include "fhr/model/plan.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"
#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/errors.hpp"
#include "fhr/runtime/reports.hpp"
#include "fhr/runtime/snapshot.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
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

struct PlanSpec {
  std::string name;
  std::vector<ActionSpec> reclaim;
  std::vector<Reservation> reservations;
  std::vector<ActionSpec> enter;
  std::vector<ActionSpec> exit;
};

class Manager;

/// A lease, hold or reservation (§7, §8). Releasing is idempotent; an object
/// destroyed while active releases itself. It must not outlive its manager.
class Lifetime {
public:
  Lifetime() = default;
  Lifetime(Lifetime &&other) noexcept;
  Lifetime &operator=(Lifetime &&other) noexcept;
  Lifetime(const Lifetime &) = delete;
  Lifetime &operator=(const Lifetime &) = delete;
  ~Lifetime();

  void release();
  bool active() const;

protected:
  Lifetime(Manager *manager, LifetimeId id) : manager_(manager), id_(id) {}
  Manager *manager_ = nullptr;
  LifetimeId id_ = 0;
  friend class Manager;
};

/// An active read of ready replicas: protects them and exposes their bytes.
class Lease : public Lifetime {
public:
  Lease() = default;
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
  const std::optional<ResidencyPlanExecutionError> &exit_error() const { return exit_error_; }

private:
  friend class Manager;
  Scope(Manager &manager, PlanSpec plan, std::optional<std::uint64_t> expected_state_version)
      : manager_(&manager), plan_(std::move(plan)), expected_state_version_(expected_state_version) {}

  enum class Stage { Created, Entered, Closed };
  Manager *manager_;
  PlanSpec plan_;
  std::optional<std::uint64_t> expected_state_version_;
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

  TransitionReport ensure(const Handle &handle, Location at);
  TransitionReport copy(const Handle &handle, Location to);
  TransitionReport move(const Handle &handle, Location to, std::optional<Location> from = std::nullopt);
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
                             std::optional<std::uint64_t> expected_state_version = std::nullopt);

  /// Borrows ready replicas for reads (§7.2): atomic over the handles,
  /// duplicates collapse, nothing is ever materialized. Host locations only
  /// so far (CUDA leases need a consumer stream and the CUDA backend).
  Lease acquire(std::span<const Handle> handles, Location at);
  /// Protects ready replicas without exposing them (§7.3).
  Hold hold(std::span<const Handle> handles, Location at);
  /// Records `nbytes` of headroom at `at` (§8); a blank label is an argument error.
  ActiveReservation reserve(Location at, std::uint64_t nbytes, const std::string &label);

  /// A scope over `plan`; nothing happens until Scope::enter().
  Scope scope(PlanSpec plan, std::optional<std::uint64_t> expected_state_version = std::nullopt);

  /// XXH64 of the replica's bytes at `at` (throws if not resident): the
  /// content check of `fhr-plan run` and the tests.
  std::uint64_t content_checksum(const Handle &handle, Location at) const;
  /// The accounting of one location (zeroes if it was never registered);
  /// the per-location part of what snapshot() will return.
  LocationAccount account(Location location) const;
  /// Locations of the value's replicas, in installation order.
  std::vector<Location> replicas(const Handle &handle) const;

  /// §15: refuses (ResidencyInUseError, nothing changes) while leases, holds
  /// or reservations remain, unless `force`; then frees every replica and
  /// forgets every value. Afterwards every call but id(), locations(),
  /// trace() and clear_trace() throws ResidencyClosedError, and releasing a
  /// lifetime is a silent no-op. Idempotent. Host leases never have pending
  /// events, so `wait` has nothing to wait for yet.
  void close(bool wait = true, bool force = false);
  bool closed() const;

  /// One atomic view of every value, location and reservation (§14).
  Snapshot snapshot() const;

  std::vector<TransitionReport> trace() const;
  void clear_trace();

private:
  friend class Lifetime;
  friend class Scope;
  /// Runs `actions` as phase `phase` of `plan_name`, appending to `report`;
  /// a failure becomes ResidencyPlanExecutionError with the partial report.
  void run_phase(const std::string &plan_name, ExecutionPhase phase, std::span<const ActionSpec> actions,
                 PlanReport &report);
  void release_all(std::vector<LifetimeId> &lifetimes);
  /// The manager lock, or ResidencyClosedError after close().
  std::unique_lock<std::mutex> open_lock() const;
  friend class Lease;
  class Hooks;
  std::vector<ValueId> protect_values(std::span<const Handle> handles) const;
  void release(LifetimeId id);
  bool lifetime_active(LifetimeId id) const;
  struct Record {
    std::uint64_t handle_id = 0;
    std::shared_ptr<Source> source;
    /// Replicas in installation order.
    std::vector<std::pair<Location, Storage>> replicas;
  };

  ValueId resolve(const Handle &handle) const;
  ValueId resolve_for_plan(const Handle &handle) const;
  void validate(Location location) const;
  TransitionReport run_transition(const Action &action);
  std::string value_name(ValueId value) const;
  void record_trace(const TransitionReport &report);
  Storage *replica(ValueId value, Location at);
  const Storage *replica(ValueId value, Location at) const;
  std::vector<Action> to_actions(std::span<const ActionSpec> specs) const;

  mutable std::mutex mutex_;
  std::uint64_t id_;
  std::shared_ptr<Backend> backend_;
  State state_;
  std::vector<Record> records_;
  std::uint64_t next_handle_id_ = 1;
  std::size_t trace_capacity_;
  std::deque<TransitionReport> trace_;
  bool closed_ = false;
};

} // namespace fhr

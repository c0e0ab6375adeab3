#pragma once
/// \file
/// The manager's residency state without any storage: the location registry
/// and its accounting (§1.4, §4), value records with their resident
/// locations and protections (§2, §7), lifetimes (leases, holds,
/// reservations) and the state version (§9).
///
/// Its transition functions apply the rules of §4–§8 (runtime/model/src/rules.hpp,
/// the one copy that explain also runs) exactly as a manager does and report
/// an Outcome instead of throwing. The compiler runs programs on it; the
/// runtime keeps one beside its storage and performs the physical copy
/// between the admission check and the install through TransitionHooks.

#include "fhr/model/action.hpp"
#include "fhr/model/location_set.hpp"
#include "fhr/model/outcome.hpp"
#include "fhr/model/value_spec.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fhr {

/// The most one location accounts, budgeted or not (§4.2): 4 EiB. Every
/// charge at a location is admitted against it, so that its figures and
/// their sums stay exact in 64 bits (a value or reservation of more, or
/// several that add up to more, once wrapped an unbudgeted location's
/// account and overflowed the controller's search: found by fuzz_workload).
inline constexpr std::uint64_t kMaxChargedBytes = std::uint64_t{1} << 62;

/// What a budget admits up to (§4.2): itself, never more than
/// kMaxChargedBytes; no budget, kMaxChargedBytes. The one spelling of the
/// limit, for the model's accounts and the planner's room alike.
inline std::uint64_t budget_limit(std::optional<std::uint64_t> budget) {
  return budget ? std::min(*budget, kMaxChargedBytes) : kMaxChargedBytes;
}

struct LocationAccount {
  std::optional<std::uint64_t> budget_bytes;
  std::uint64_t used_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t peak_charged_bytes = 0;

  std::uint64_t charged_bytes() const { return used_bytes + reserved_bytes; }
  /// What the location admits up to: its budget, and never more than
  /// kMaxChargedBytes (§4.2).
  std::uint64_t limit_bytes() const { return budget_limit(budget_bytes); }
  /// used + reserved + x <= limit: the one spelling of the budget
  /// inequality (§4.2). The controller's capacity check (§18.3) asks it
  /// for every request, a zero-byte one too.
  bool fits(std::uint64_t request) const {
    return charged_bytes() <= limit_bytes() && request <= limit_bytes() - charged_bytes();
  }
  /// §4.2: fits(x), zero-byte requests always admitted. Execution, explain
  /// and the runtime's overlap windows all ask this.
  bool admits(std::uint64_t request) const { return request == 0 || fits(request); }

  // The bookkeeping of §4.3–§4.5 and §8; callers check admits() first.
  /// §4.3 step 7: an installed replica.
  void add_used(std::uint64_t nbytes) {
    used_bytes += nbytes;
    peak_used_bytes = std::max(peak_used_bytes, used_bytes);
    peak_charged_bytes = std::max(peak_charged_bytes, charged_bytes());
  }
  /// §4.4: a removed replica (peaks untouched).
  void remove_used(std::uint64_t nbytes) { used_bytes -= nbytes; }
  /// §4.5, §8: a temporary charge or a named reservation.
  void add_reserved(std::uint64_t nbytes) {
    reserved_bytes += nbytes;
    peak_charged_bytes = std::max(peak_charged_bytes, charged_bytes());
  }
  void remove_reserved(std::uint64_t nbytes) { reserved_bytes -= nbytes; }
  /// §10.2: explain counts a request in the peak before its admission test,
  /// so an infeasible plan's peak shows the request that failed.
  void count_request_in_peak(std::uint64_t request) {
    const std::uint64_t charged = charged_bytes();
    const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - charged;
    peak_charged_bytes = std::max(peak_charged_bytes, charged + std::min(request, room));
  }
};

/// The process a manager runs in, as far as location validation cares (§1.2).
struct DeviceConfig {
  bool cuda_available = true;
  unsigned device_count = Location::kMaxCudaDevices;
};

/// Protection tokens of one materialization (§2.5, §7.1).
struct Protection {
  Location location;
  std::uint32_t use_count = 0;
  std::uint32_t hold_count = 0;
  /// Released CUDA leases whose consumer events have not all completed.
  std::uint32_t pending_count = 0;

  bool protects() const { return use_count + hold_count + pending_count > 0; }
};

enum class ValueStatus : std::uint8_t { Unregistered, Live, Discarded };

struct ValueRecord {
  ValueStatus status = ValueStatus::Unregistered;
  ValueSpec spec;
  std::optional<Location> source_location; ///< set iff a source is registered
  LocationSet resident;
  LocationSet protected_at;
  std::vector<Protection> protections; ///< only locations with tokens
};

enum class LifetimeKind : std::uint8_t { Lease, Hold, Reservation };
enum class LifetimeState : std::uint8_t { Active, Pending, Released };

/// Names one lease, hold or reservation: a slot in the lifetime table in the
/// low 32 bits and that slot's generation in the high 32 bits. A slot is
/// reused once its lifetime is fully released, so the table does not grow
/// with the number of leases ever taken; a stale id (a released lifetime
/// whose slot now holds another) is recognised by its generation and
/// behaves as released. 0 is never an id.
using LifetimeId = std::uint64_t;

struct LifetimeRecord {
  LifetimeKind kind = LifetimeKind::Hold;
  LifetimeState state = LifetimeState::Released;
  std::uint32_t generation = 0;
  /// Creation order across all lifetimes (the snapshot lists reservations so).
  std::uint64_t sequence = 0;
  Location location;
  std::vector<ValueId> values; ///< leases and holds
  std::uint64_t nbytes = 0;    ///< reservations
  std::string label;           ///< reservations
};

enum class StepTransfer : std::uint8_t; // fhr/model/step_transfer.hpp

/// Physical work a runtime performs inside a transition. Each hook may throw;
/// the state is then left exactly as the rules of §6 say (temporary charges
/// released, nothing installed).
class TransitionHooks {
public:
  virtual ~TransitionHooks() = default;
  /// Fill fresh storage for `value` at `location` from its source (§4.5).
  virtual void load(ValueId value, Location location) = 0;
  /// Copy the replica at `from` into fresh storage at `to`.
  virtual void copy(ValueId value, Location from, Location to) = 0;
  /// Make the freshly loaded or copied storage at `location` the replica.
  virtual void install(ValueId value, Location location) = 0;
  /// Free the replica at `location`.
  virtual void remove(ValueId value, Location location) = 0;
};

class State {
public:
  explicit State(DeviceConfig devices = {});

  // ---- locations -------------------------------------------------------
  /// Registers a constructor budget (or an explicit unbudgeted location).
  /// A second call for the same location replaces its budget.
  void set_budget(Location location, std::optional<std::uint64_t> budget_bytes);
  /// §1.2: ok, or a failure with Reason::LocationUnavailable.
  Outcome validate(Location location) const;
  bool is_registered(Location location) const { return slot_[location.index()] >= 0; }
  /// Registered locations in registration order.
  const std::vector<Location> &registry() const { return registry_; }
  /// The account of any location (zeroes for an unregistered one).
  const LocationAccount &account(Location location) const { return accounts_[location.index()]; }
  /// The logical bytes of the replicas at `location`: what a backend holds
  /// there (its storage bytes are the charge, used_bytes).
  std::uint64_t resident_logical_bytes(Location location) const;
  const DeviceConfig &devices() const { return devices_; }
  /// Starts a reporting window: every peak becomes the current charge.
  void reset_peaks();

  // ---- values ----------------------------------------------------------
  /// §3.1 adopt: the value gets id `value` (ids are assigned by the caller in
  /// declaration order; a failed adopt leaves the id unregistered).
  Outcome adopt(ValueId value, const ValueSpec &spec, Location at, FailureDetail *detail = nullptr);
  /// Whether adopt would admit a block of `storage_nbytes` at `at` (the
  /// location known, its budget): adopt's own check, changing nothing but
  /// the peak a refused request counts in.
  Outcome admits_adoption(Location at, std::uint64_t storage_nbytes, FailureDetail *detail = nullptr);
  /// §3.2 register_source (spec must be reconstructible).
  Outcome register_source(ValueId value, const ValueSpec &spec, Location source_location);
  /// The value's record (an unregistered one's for an id never adopted).
  const ValueRecord &value(ValueId value) const {
    return value < values_.size() ? values_[value] : kUnregistered;
  }
  std::size_t value_count() const { return values_.size(); }
  /// §2.4: ok for a live value, else the handle error (unknown, discarded).
  Outcome resolve(ValueId value) const { return resolve(this->value(value)); }
  /// The same, for a record value() returned.
  static Outcome resolve(const ValueRecord &record) {
    if (record.status == ValueStatus::Unregistered) return failure(Reason::HandleUnknown, ErrorClass::Handle);
    if (record.status == ValueStatus::Discarded) return failure(Reason::HandleDiscarded, ErrorClass::Handle);
    return {};
  }

  // ---- transitions (§6) ------------------------------------------------
  Outcome apply(const Action &action, FailureDetail *detail = nullptr, TransitionHooks *hooks = nullptr);
  /// The same, keeping what moved the step's bytes in `transfer` and, given
  /// `removed`, where it removed replicas (its hook calls inline: the model
  /// target's per-step path).
  Outcome apply(const Action &action, FailureDetail *detail, StepTransfer &transfer,
                LocationSet *removed = nullptr);

  /// The replica that `action` would copy from, when applying it now would
  /// be an admitted plain copy of a resident replica; std::nullopt for
  /// anything else (no-op, reconstruction, drop, discard, a failure, a
  /// budget that refuses the destination). A dry run of apply() on a
  /// StateOverlay with a TransferRecorder; kept for its callers, new code
  /// runs that dry run itself (it can also hold memory of copies in flight).
  std::optional<Location> plain_copy_source(const Action &action) const;

  // ---- lifetimes (§7, §8) ----------------------------------------------
  /// acquire (a lease) or hold: every value must be resident at `at`.
  /// `failed_value` receives the value that decided a failure.
  Outcome protect(LifetimeKind kind, std::span<const ValueId> values, Location at, LifetimeId *id,
                  ValueId *failed_value = nullptr);
  Outcome reserve(Location at, std::uint64_t nbytes, std::string label, LifetimeId *id,
                  FailureDetail *detail = nullptr);
  /// Releases a lease, hold or reservation. A CUDA lease released with
  /// `events_pending` keeps its tokens as pending protection (§7.2).
  Outcome release(LifetimeId id, bool events_pending = false);
  /// Pending protection of a lease whose events have completed is removed.
  void complete_pending(LifetimeId id);
  /// Active or Pending for a live lifetime; Released for a released or
  /// unknown id.
  LifetimeState lifetime_state(LifetimeId id) const;
  /// The record of a live (active or pending) lifetime; nullptr otherwise.
  const LifetimeRecord *find_lifetime(LifetimeId id) const;
  /// Every live lifetime in creation order.
  std::vector<LifetimeId> live_lifetimes() const;
  /// Does any protection token protect `value` at `at`?
  bool is_protected(ValueId value, Location at) const;

  std::uint64_t version() const { return version_; }

  /// §15 step 5: forgets every value and lifetime and zeroes used and
  /// reserved bytes; the registry, budgets and peaks stay. Version +1.
  void close();

private:
  static const ValueRecord kUnregistered;
  /// The rules' view of this State (runtime/model/src/rules.hpp): what they
  /// change, they change here.
  class Store;

  void ensure_registered(Location location);
  void install(ValueId value, Location location);
  void remove(ValueId value, Location location);
  void add_tokens(ValueId value, Location at, LifetimeKind kind, int delta_use_hold, int delta_pending);
  LifetimeId add_lifetime(LifetimeRecord lifetime);
  LifetimeRecord *live(LifetimeId id);
  void retire(LifetimeId id);

  DeviceConfig devices_;
  std::array<std::int16_t, Location::kCount> slot_{};
  std::vector<Location> registry_;
  std::array<LocationAccount, Location::kCount> accounts_{};
  std::vector<ValueRecord> values_;
  std::vector<LifetimeRecord> lifetimes_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t version_ = 0;
};

} // namespace fhr

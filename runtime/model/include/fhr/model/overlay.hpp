#pragma once
/// \file
/// An overlay over a const State: the rules of §4–§8 run on it exactly as
/// on the State (runtime/model/src/rules.hpp), but every change lands in the
/// overlay. A value's record is copied on its first touch; the accounts of
/// the base's locations are copied when the overlay starts and on reset(),
/// which forgets every change at the cost of what was touched and the
/// registry's size. The Simulator explains plans on one (§10.2); the runtime
/// dry-runs the actions of an overlap window on one.
///
/// What the overlay sees differently from its base is what §10.2 says
/// explain sees:
/// * a location's peaks start at its current charge, not its history, and a
///   request counts in the peak before its admission test (an infeasible
///   plan's peak includes the request that failed);
/// * a pending lease whose events have all completed protects nothing
///   (`completed_pending`: explain does not reap, but sees through it, §7.4);
/// * a value discarded in the overlay is refused with
///   Reason::ValueDiscardedInPlan, one discarded before with HandleDiscarded;
/// * nothing is registered: a location the base does not know is listed in
///   first_referenced() when an action or reservation first names it;
/// * a refused action keeps the endpoints it had resolved (§10.3).

#include "fhr/model/plan.hpp"
#include "fhr/model/simulated_step.hpp"
#include "fhr/model/state.hpp"
#include "fhr/model/transfer_recorder.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace fhr {

class StateOverlay {
public:
  /// `base` must outlive the overlay and not change from its construction or
  /// last reset() to its last use (reset() after it changed).
  explicit StateOverlay(const State &base, std::span<const LifetimeId> completed_pending = {});

  /// Forgets every change: the overlay equals its base again.
  void reset();

  /// State::apply's rules, on the overlay.
  Outcome apply(const Action &action, FailureDetail *detail = nullptr, TransitionHooks *hooks = nullptr);
  /// The same, writing down the transition's physical work in `transfer`
  /// (its hook calls inline: the dry runs of overlap windows and sources).
  Outcome apply(const Action &action, FailureDetail *detail, TransferRecorder &transfer);
  /// apply() for each of `actions` in order, up to and including the first
  /// that fails, writing each step (tagged `phase`, its position in
  /// `actions`) with what moved its bytes to `out`, which has room for
  /// them all. Returns how many steps it wrote. The Simulator's per-phase
  /// path: the loop runs inside the rules' flattened code, so an action
  /// costs no call and the transfer flags stay in registers.
  /// Each discard that succeeds is appended to `discards` with its
  /// position in `actions`.
  std::size_t apply_each(Phase phase, std::span<const Action> actions, FailureDetail *detail,
                         SimulatedStep *out, std::vector<DiscardedReplicas> *discards = nullptr);
  /// State::reserve's admission and charge, on the overlay (no lifetime is
  /// recorded: nothing can release it but reset()).
  Outcome reserve(Location at, std::uint64_t nbytes, FailureDetail *detail = nullptr);

  /// The account as the overlay sees it (peaks from the current charge).
  LocationAccount account(Location location) const;
  /// The value's replicas as the overlay sees them.
  LocationSet resident(ValueId value) const;
  /// Where protection blocks removing the value's replicas, as the rules see it.
  LocationSet protected_at(ValueId value) const;
  /// Discarded in the overlay (a value discarded in the base is not).
  bool discarded(ValueId value) const;
  /// Locations the base does not know, in the order the overlay first met them.
  const std::vector<Location> &first_referenced() const { return first_referenced_; }
  const State &base() const { return base_; }

private:
  class Store;
  static constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};

  /// A value as the rules see it (the members of ValueRecord they read).
  struct Value {
    /// The base's record as the overlay first sees it, constructed in
    /// place: a Value assembled on the stack and copied whole was read back
    /// wider than it was written (a store-forwarding stall per first touch).
    Value(const ValueRecord &record, LocationSet protected_seen)
        : spec(record.spec), source_location(record.source_location), resident(record.resident),
          protected_at(protected_seen) {}

    ValueSpec spec;
    std::optional<Location> source_location;
    LocationSet resident;
    LocationSet protected_at;
    bool discarded = false;
  };

  /// The touched value `id`, or null.
  const Value *find(ValueId id) const {
    if (!slot_.empty()) return id < slot_.size() && slot_[id] != kNoSlot ? &values_[slot_[id]] : nullptr;
    return find_by_scan(id);
  }
  Value *find(ValueId id) { return const_cast<Value *>(static_cast<const StateOverlay *>(this)->find(id)); }
  const Value *find_by_scan(ValueId id) const;
  /// Copies a value the overlay has not touched yet (`record`: its base record).
  Value &add(ValueId id, const ValueRecord &record);
  /// Where the base's record protects the value, as explain sees it (§7.4).
  LocationSet protected_seen(ValueId id, const ValueRecord &record) const {
    return completed_pending_.empty() ? record.protected_at : seen_through_completed(id, record);
  }
  /// The same where some pending leases have completed: their tokens protect nothing.
  LocationSet seen_through_completed(ValueId id, const ValueRecord &record) const;
  /// The overlay's account of `location`: every account is the overlay's
  /// own copy (see accounts_), so this is an index.
  LocationAccount &touch(Location location) { return accounts_[location.index()]; }
  LocationAccount copy_of_base(Location location) const;
  /// Makes accounts_ equal the base's again (peaks from the current charge).
  void copy_accounts_of_base();

  const State &base_;
  std::vector<LifetimeId> completed_pending_;
  /// Touched values, in touch order, and their ids. Found by scanning while
  /// few (a dry run touches one), through `slot_` by id once many.
  std::vector<Value> values_;
  std::vector<ValueId> touched_ids_;
  std::vector<std::uint32_t> slot_;
  /// Every location's account as the overlay sees it. Copied from the base
  /// for its registered locations when the overlay starts (the others are
  /// zero there and here); the rules change only registered locations and
  /// those an action validated first (referenced_), which is what reset()
  /// copies back.
  std::array<LocationAccount, Location::kCount> accounts_{};
  /// Locations that passed validation in this overlay (checked once).
  LocationSet validated_;
  LocationSet referenced_;
  std::vector<Location> first_referenced_;
};

} // namespace fhr

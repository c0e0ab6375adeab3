#pragma once
/// \file
/// A copy-on-touch overlay over a const State: the rules of §4–§8 run on it
/// exactly as on the State (runtime/model/src/rules.hpp), but every change
/// lands in the overlay. A value's record is copied on its first touch, a
/// location's account likewise; reset() forgets both at the cost of what was
/// touched. The Simulator explains plans on one (§10.2); the runtime dry-runs
/// the actions of an overlap window on one.
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

#include "fhr/model/state.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace fhr {

class StateOverlay {
public:
  /// `base` must outlive the overlay and not change while it is in use
  /// (reset() after it changed).
  explicit StateOverlay(const State &base, std::span<const LifetimeId> completed_pending = {});

  /// Forgets every change: the overlay equals its base again.
  void reset();

  /// State::apply's rules, on the overlay.
  Outcome apply(const Action &action, FailureDetail *detail = nullptr, TransitionHooks *hooks = nullptr);
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

  /// A value as the rules see it (the members of ValueRecord they read).
  struct Value {
    ValueSpec spec;
    std::optional<Location> source_location;
    LocationSet resident;
    LocationSet protected_at;
    bool discarded = false;
  };

  const Value *find(ValueId id) const;
  Value *find(ValueId id);
  /// Copies a value the overlay has not touched yet.
  Value &add(ValueId id);
  Value copy_of_base(ValueId id) const;
  LocationAccount &touch(Location location);
  LocationAccount copy_of_base(Location location) const;

  const State &base_;
  std::vector<LifetimeId> completed_pending_;
  /// Touched values, in touch order, and their ids. Found by scanning while
  /// few (a dry run touches one), through `slot_` by id once many.
  std::vector<Value> values_;
  std::vector<ValueId> touched_ids_;
  std::vector<std::uint32_t> slot_;
  LocationSet touched_locations_;
  std::array<LocationAccount, Location::kCount> accounts_{};
  LocationSet referenced_;
  std::vector<Location> first_referenced_;
};

} // namespace fhr

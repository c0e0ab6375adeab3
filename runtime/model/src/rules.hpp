#pragma once
/// \file
/// The transition rules of docs/semantics.md §4–§8, written once: admission,
/// install and removal, the temporary reconstruction charge, source
/// resolution, ensure/copy/move/drop/discard, the protection checks and
/// reservations. They run on a store (the concept below) and call
/// TransitionHooks for the physical work between admission and install.
/// The hooks' type is a template parameter: execution passes the virtual
/// TransitionHooks; explain and the model target pass StepTransferHooks
/// (two flags) and dry runs a final TransferRecorder, whose calls then
/// inline (a virtual call per hook was a tenth of explain's cost).
///
/// Two stores exist: State::Store (execution: state.cpp) changes the State
/// itself; StateOverlay::Store (explain and dry runs: overlay.cpp) changes an
/// overlay and never its base. Where explain and execution
/// differ (§10.2), the store says so through its own primitives (what
/// resolve, validate and record see) or through one of its two policy
/// constants; no rule is written twice.

#include "fhr/model/state.hpp"
#include "fhr/model/step_transfer.hpp"

#include <concepts>

namespace fhr::rules {

/// What the rules read and change. `record(value)` returns something with
/// the members of ValueRecord the rules use: spec, source_location, resident
/// and protected_at; the rules ask it, and install, remove and discard, only
/// for the value of the action they are applying, after resolve(value)
/// succeeded.
template <typename S>
concept Store = requires(S &store, ValueId value, Location location) {
  /// §2.4 handle resolution (explain also refuses a value the plan discarded).
  { store.resolve(value) } -> std::same_as<Outcome>;
  /// §1.2 for each location an action names (explain also notes the
  /// locations a plan references first).
  { store.validate(location) } -> std::same_as<Outcome>;
  { store.record(value).spec } -> std::convertible_to<ValueSpec>;
  { store.record(value).source_location } -> std::convertible_to<std::optional<Location>>;
  { store.record(value).resident } -> std::convertible_to<LocationSet>;
  { store.record(value).protected_at } -> std::convertible_to<LocationSet>;
  { store.account(location) } -> std::same_as<LocationAccount &>;
  /// §4.3 steps 5–7 (registration, version and accounting are the store's).
  store.install(value, location);
  /// §4.4.
  store.remove(value, location);
  /// §6.4 step 2: the value ends (after its replicas were removed).
  store.mark_discarded(value);
  /// §10.2: the peak counts a request before its admission test.
  { S::kPeakIncludesRefusedRequest } -> std::convertible_to<bool>;
  /// §10.3: a refused action names the endpoints it had resolved. Execution
  /// makes no report of a failed transition (§6 step 4) and names none.
  { S::kFailureNamesEndpoints } -> std::convertible_to<bool>;
};

namespace detail {

// Outcomes are built in one aggregate initialisation: assigned field by field,
// an eight-byte Outcome compiles to a dozen byte inserts on every no-op.
inline Outcome resolved(std::optional<Location> source, std::optional<Location> destination,
                        Verdict verdict = Verdict::Ok, Reason reason = Reason::None) {
  return Outcome{verdict, reason, ErrorClass::None, Location{}, source, destination};
}

/// A refusal, with the endpoints resolved so far where the store's reports
/// name them (§10.3).
template <Store S>
Outcome refuse(Reason reason, ErrorClass error, Location where, std::optional<Location> source,
               std::optional<Location> destination) {
  if constexpr (!S::kFailureNamesEndpoints) return failure(reason, error, where);
  return Outcome{Verdict::Failed, reason, error, where, source, destination};
}

/// `refused` (a refusal without endpoints) with the endpoints resolved so far.
template <Store S>
Outcome refused_at(Outcome refused, std::optional<Location> source, std::optional<Location> destination) {
  return refuse<S>(refused.reason, refused.error, refused.where, source, destination);
}

/// §4.5: holds a temporary reconstruction charge and releases it however the
/// transition ends (a hook may throw).
class TemporaryCharge {
public:
  TemporaryCharge(LocationAccount &account, std::uint64_t nbytes) : account_(&account), nbytes_(nbytes) {
    account.add_reserved(nbytes);
  }
  TemporaryCharge(const TemporaryCharge &) = delete;
  TemporaryCharge &operator=(const TemporaryCharge &) = delete;
  ~TemporaryCharge() { release(); }
  void release() {
    if (account_) account_->remove_reserved(nbytes_);
    account_ = nullptr;
  }

private:
  LocationAccount *account_;
  std::uint64_t nbytes_;
};

} // namespace detail

/// §4.2: may `nbytes` be charged at `location`? The failure carries the
/// figures of the check (`reason`: a transition's or a reservation's).
template <Store S>
Outcome admit(S &store, Location location, std::uint64_t nbytes, FailureDetail *detail,
              Reason reason = Reason::TransitionExceedsBudget) {
  LocationAccount &account = store.account(location);
  if constexpr (S::kPeakIncludesRefusedRequest) account.count_request_in_peak(nbytes);
  if (account.admits(nbytes)) return {};
  if (detail) {
    detail->budget_bytes = account.limit_bytes();
    detail->used_bytes = account.used_bytes;
    detail->reserved_bytes = account.reserved_bytes;
    detail->requested_bytes = nbytes;
  }
  return failure(reason, ErrorClass::Budget, location);
}

/// §7.1: protection blocks exactly the removal of a materialization (a drop,
/// a move's source, a discard). Refuses removing any protected one among
/// `removed`, naming the first in §1.3 order; the detail lists them all.
template <typename Record>
Outcome refuse_protected_removal(const Record &record, LocationSet removed, Reason reason,
                                 FailureDetail *detail) {
  const LocationSet protected_removed = record.protected_at & removed;
  if (protected_removed.empty()) return {};
  if (detail) detail->protected_locations = protected_removed;
  return failure(reason, ErrorClass::InUse, *protected_removed.first());
}

/// §4.4: frees the replica, then books it.
template <Store S, typename Hooks>
void remove_replica(S &store, ValueId value, Location at, Hooks *hooks) {
  if (hooks) hooks->remove(value, at);
  store.remove(value, at);
}

/// §4.3: a copy of the resident replica `from` installed at `to`. Flattened:
/// the copy path of execution inlines its admission and install (callgrind:
/// a program run's transitions as short as before the rules were shared),
/// while apply() stays small for the no-op path.
template <Store S, typename Hooks>
[[gnu::flatten]] Outcome copy_in(S &store, ValueId value, Location from, Location to, FailureDetail *detail,
                                 Hooks *hooks) {
  if (Outcome admitted = admit(store, to, store.record(value).spec.storage_nbytes, detail); admitted.failed())
    return detail::refused_at<S>(admitted, from, to);
  if (hooks) {
    hooks->copy(value, from, to);
    hooks->install(value, to);
  }
  store.install(value, to);
  return detail::resolved(from, to);
}

/// §4.5, §6.1 steps 3–5: `value` reloaded from its source into `to`, with the
/// temporary charge at the source location for as long as the load lives.
template <Store S, typename Hooks>
Outcome reconstruct_into(S &store, ValueId value, Location to, FailureDetail *detail, Hooks *hooks) {
  const auto &record = store.record(value);
  const Location source = *record.source_location;
  const std::uint64_t nbytes = record.spec.storage_nbytes;
  if (Outcome admitted = admit(store, source, nbytes, detail); admitted.failed())
    return detail::refused_at<S>(admitted, source, to);
  detail::TemporaryCharge charge(store.account(source), nbytes);
  if (hooks) hooks->load(value, source);
  // Loaded straight into its destination: charged once there, never twice.
  if (source == to) charge.release();
  if (Outcome admitted = admit(store, to, nbytes, detail); admitted.failed())
    return detail::refused_at<S>(admitted, source, to);
  if (hooks) {
    if (source != to) hooks->copy(value, source, to);
    hooks->install(value, to);
  }
  store.install(value, to);
  return detail::resolved(source, to);
}

/// A replica at `to` from the resident replica `source` (§5) if there is
/// one, else reconstructed from the value's source (§4.5), else nothing.
template <Store S, typename Hooks>
Outcome fill(S &store, ValueId value, std::optional<Location> source, Location to, FailureDetail *detail,
             Hooks *hooks) {
  if (source) return copy_in(store, value, *source, to, detail, hooks);
  if (store.record(value).source_location) return reconstruct_into(store, value, to, detail, hooks);
  return detail::refuse<S>(Reason::NoMaterializationOrSource, ErrorClass::Unavailable, to, std::nullopt, to);
}

/// §6.1 (ensure and copy).
template <Store S, typename Hooks>
Outcome ensure(S &store, const Action &action, FailureDetail *detail, Hooks *hooks) {
  const auto &record = store.record(action.value);
  const Location to = action.location;
  if (record.resident.contains(to))
    return detail::resolved(std::nullopt, to, Verdict::NoOp, Reason::DestinationAlreadyResident);
  if (record.spec.replica_mode == ReplicaMode::Exclusive && !record.resident.empty())
    return detail::refuse<S>(Reason::WouldReplicateExclusive, ErrorClass::Ownership, to, std::nullopt, to);
  // §5: the first resident location in §1.3 order.
  return fill(store, action.value, record.resident.first(), to, detail, hooks);
}

/// §6.2.
template <Store S, typename Hooks>
Outcome move(S &store, const Action &action, FailureDetail *detail, Hooks *hooks) {
  const auto &record = store.record(action.value);
  const Location to = action.location;
  // §5: the explicit source, which must be resident, or the first replica
  // other than the destination. Protection plays no part in the choice.
  std::optional<Location> selected;
  if (action.from) {
    if (!record.resident.contains(*action.from))
      return detail::refuse<S>(Reason::ExplicitSourceNotResident, ErrorClass::Unavailable, *action.from,
                               action.from, to);
    selected = action.from;
  } else {
    selected = record.resident.first_except(to);
  }
  const bool destination_resident = record.resident.contains(to);
  if (destination_resident && (!selected || *selected == to))
    return detail::resolved(selected, to, Verdict::NoOp, Reason::DestinationOwnsSelectedReplica);
  if (!selected)
    return fill(store, action.value, std::nullopt, to, detail, hooks); // reloads, removes nothing
  // The selected replica goes in both cases left: its protection first, and
  // nothing else happens when it is held.
  if (Outcome refused =
          refuse_protected_removal(record, LocationSet::of(*selected), Reason::SourceProtected, detail);
      refused.failed())
    return detail::refused_at<S>(refused, selected, to);
  if (destination_resident) { // a pure removal: nothing is copied or charged
    remove_replica(store, action.value, *selected, hooks);
    return detail::resolved(selected, to);
  }
  Outcome moved = copy_in(store, action.value, *selected, to, detail, hooks);
  // The transient double charge: the source is freed only once the
  // destination is installed.
  if (!moved.failed()) remove_replica(store, action.value, *selected, hooks);
  return moved;
}

/// §6.3.
template <Store S, typename Hooks>
Outcome drop(S &store, const Action &action, FailureDetail *detail, Hooks *hooks) {
  const auto &record = store.record(action.value);
  const Location at = action.location;
  if (!record.resident.contains(at))
    return detail::resolved(at, std::nullopt, Verdict::NoOp, Reason::MaterializationAlreadyAbsent);
  // Protection before the final-copy rule.
  if (Outcome refused =
          refuse_protected_removal(record, LocationSet::of(at), Reason::MaterializationProtected, detail);
      refused.failed())
    return detail::refused_at<S>(refused, at, std::nullopt);
  if (!record.resident.first_except(at) && !record.source_location) // the only replica
    return detail::refuse<S>(Reason::FinalMustPreserve, ErrorClass::Ownership, at, at, std::nullopt);
  remove_replica(store, action.value, at, hooks);
  return detail::resolved(at, std::nullopt);
}

/// §6.4: all or nothing.
template <Store S, typename Hooks>
Outcome discard(S &store, const Action &action, FailureDetail *detail, Hooks *hooks) {
  const LocationSet replicas = store.record(action.value).resident;
  if (Outcome refused = refuse_protected_removal(store.record(action.value), replicas,
                                                 Reason::DiscardedValueProtected, detail);
      refused.failed())
    return refused;
  replicas.for_each([&](Location l) { remove_replica(store, action.value, l, hooks); });
  store.mark_discarded(action.value);
  return {};
}

/// §6 step 3 and §6.1–§6.4: one action, start to end.
template <Store S, typename Hooks>
Outcome apply(S &store, const Action &action, FailureDetail *detail, Hooks *hooks) {
  if (Outcome resolved = store.resolve(action.value); resolved.failed()) return resolved;
  if (action.kind != ActionKind::Discard) {
    if (Outcome valid = store.validate(action.location); valid.failed()) return valid;
    if (action.from)
      if (Outcome valid = store.validate(*action.from); valid.failed()) return valid;
  }
  switch (action.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy: return ensure(store, action, detail, hooks);
  case ActionKind::Move: return move(store, action, detail, hooks);
  case ActionKind::Drop: return drop(store, action, detail, hooks);
  case ActionKind::Discard: return discard(store, action, detail, hooks);
  }
  return {};
}

/// apply(), keeping only what moved the step's bytes (and, given
/// `removed`, where it removed replicas): explain's and the model target's
/// per-step path.
template <Store S>
Outcome apply(S &store, const Action &action, FailureDetail *detail, StepTransfer &transfer,
              LocationSet *removed = nullptr) {
  if (removed) {
    StepRemovalHooks hooks;
    const Outcome outcome = apply(store, action, detail, &hooks);
    transfer = hooks.transfer(outcome);
    *removed = hooks.removed;
    return outcome;
  }
  StepTransferHooks hooks;
  const Outcome outcome = apply(store, action, detail, &hooks);
  transfer = hooks.transfer(outcome);
  return outcome;
}

/// §8 steps 2 (validation and admission) and the charge; the lifetime record
/// is the caller's.
template <Store S>
Outcome reserve(S &store, Location at, std::uint64_t nbytes, FailureDetail *detail) {
  Outcome outcome = store.validate(at);
  if (!outcome.failed()) outcome = admit(store, at, nbytes, detail, Reason::ReservationExceedsBudget);
  if (!outcome.failed()) store.account(at).add_reserved(nbytes);
  if (S::kFailureNamesEndpoints || !outcome.failed()) outcome.destination = at;
  return outcome;
}

} // namespace fhr::rules

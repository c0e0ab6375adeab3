#include "fhr/model/simulator.hpp"

#include <algorithm>

namespace fhr {

std::string_view phase_name(Phase phase) {
  switch (phase) {
  case Phase::Reclaim: return "reclaim";
  case Phase::Reserve: return "reserve";
  case Phase::Enter: return "enter";
  case Phase::Exit: return "exit";
  }
  return "?";
}

namespace {
constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};

Outcome resolved(std::optional<Location> source, std::optional<Location> destination,
                 Verdict verdict = Verdict::Ok, Reason reason = Reason::None) {
  Outcome outcome;
  outcome.verdict = verdict;
  outcome.reason = reason;
  outcome.source = source;
  outcome.destination = destination;
  return outcome;
}

Outcome with_endpoints(Outcome outcome, std::optional<Location> source, std::optional<Location> destination) {
  outcome.source = source;
  outcome.destination = destination;
  return outcome;
}
} // namespace

void Simulator::reset() {
  for (ValueId id : touched_values_)
    value_slot_[id] = kNoSlot;
  touched_values_.clear();
  simulated_values_.clear();
  referenced_ = LocationSet{};
  first_referenced_.clear();
  for (Location location : state_.registry()) {
    const LocationAccount &account = state_.account(location);
    accounts_[location.index()] = SimulatedAccount{account.used_bytes, account.reserved_bytes,
                                                   account.charged_bytes(), account.used_bytes};
    referenced_.insert(location);
  }
}

LocationSet Simulator::effective_protection(ValueId id) const {
  const ValueRecord &record = state_.value(id);
  LocationSet protected_at = record.protected_at;
  for (const Protection &p : record.protections) {
    if (p.use_count + p.hold_count > 0 || p.pending_count == 0) continue;
    std::uint32_t completed = 0;
    for (LifetimeId lease : completed_pending_)
      if (const LifetimeRecord *r = state_.find_lifetime(lease);
          r && r->location == p.location &&
          std::find(r->values.begin(), r->values.end(), id) != r->values.end())
        ++completed;
    if (completed >= p.pending_count) protected_at.erase(p.location);
  }
  return protected_at;
}

Simulator::SimulatedValue &Simulator::value(ValueId id) {
  if (value_slot_.size() < state_.value_count()) value_slot_.resize(state_.value_count(), kNoSlot);
  std::uint32_t &slot = value_slot_[id];
  if (slot == kNoSlot) {
    slot = static_cast<std::uint32_t>(simulated_values_.size());
    simulated_values_.push_back(SimulatedValue{state_.value(id).resident, effective_protection(id), false});
    touched_values_.push_back(id);
  }
  return simulated_values_[slot];
}

Outcome Simulator::prepare(Location location) {
  if (Outcome valid = state_.validate(location); valid.failed()) return valid;
  if (!referenced_.contains(location)) {
    referenced_.insert(location);
    first_referenced_.push_back(location);
    accounts_[location.index()] = SimulatedAccount{};
  }
  return {};
}

Outcome Simulator::add(Location location, std::uint64_t nbytes, bool temporary, Explanation &out) {
  SimulatedAccount &account = accounts_[location.index()];
  const std::uint64_t charged = account.used + account.reserved;
  const std::uint64_t total = charged + nbytes; // bounded by the sum of declared sizes
  account.peak_charged = std::max(account.peak_charged, total);
  const std::optional<std::uint64_t> &budget = state_.account(location).budget_bytes;
  if (budget && total > *budget) {
    out.failure_detail.budget_bytes = *budget;
    out.failure_detail.used_bytes = account.used;
    out.failure_detail.reserved_bytes = account.reserved;
    out.failure_detail.requested_bytes = nbytes;
    return failure(Reason::TransitionExceedsBudget, ErrorClass::Budget, location);
  }
  if (!temporary) {
    account.used += nbytes;
    account.peak_used = std::max(account.peak_used, account.used);
  }
  return {};
}

void Simulator::remove(SimulatedValue &value, Location location, std::uint64_t nbytes) {
  accounts_[location.index()].used -= nbytes;
  value.resident.erase(location);
}

Outcome Simulator::simulate_ensure(const Action &action, SimulatedValue &value, const ValueRecord &record,
                                   Explanation &out) {
  const Location to = action.location;
  if (value.resident.contains(to))
    return resolved(std::nullopt, to, Verdict::NoOp, Reason::DestinationAlreadyResident);
  if (record.spec.replica_mode == ReplicaMode::Exclusive && !value.resident.empty())
    return with_endpoints(failure(Reason::WouldReplicateExclusive, ErrorClass::Ownership, to), std::nullopt,
                          to);
  std::optional<Location> source = value.resident.first();
  const bool reconstruct = !source;
  if (reconstruct) source = record.source_location;
  if (!source)
    return with_endpoints(failure(Reason::NoMaterializationOrSource, ErrorClass::Unavailable, to),
                          std::nullopt, to);
  const std::uint64_t nbytes = record.spec.storage_nbytes;
  if (reconstruct)
    if (Outcome temp = add(*source, nbytes, true, out); temp.failed())
      return with_endpoints(temp, source, to);
  if (Outcome added = add(to, nbytes, false, out); added.failed()) return with_endpoints(added, source, to);
  value.resident.insert(to);
  return resolved(source, to);
}

Outcome Simulator::simulate_move(const Action &action, SimulatedValue &value, const ValueRecord &record,
                                 Explanation &out) {
  const Location to = action.location;
  std::optional<Location> source;
  if (action.from) {
    if (!value.resident.contains(*action.from))
      return with_endpoints(failure(Reason::ExplicitSourceNotResident, ErrorClass::Unavailable, *action.from),
                            action.from, to);
    source = action.from;
  } else if (!value.resident.empty()) {
    source = value.resident.first_except(to);
  } else {
    source = record.source_location;
  }
  const std::uint64_t nbytes = record.spec.storage_nbytes;
  if (value.resident.contains(to)) {
    if (!source || *source == to)
      return resolved(source, to, Verdict::NoOp, Reason::DestinationOwnsSelectedReplica);
    if (value.protected_at.contains(*source))
      return with_endpoints(failure(Reason::SourceProtected, ErrorClass::InUse, *source), source, to);
    remove(value, *source, nbytes);
    return resolved(source, to);
  }
  if (!source)
    return with_endpoints(failure(Reason::NoMaterializationOrSource, ErrorClass::Unavailable, to),
                          std::nullopt, to);
  const bool source_resident = value.resident.contains(*source);
  if (source_resident && value.protected_at.contains(*source))
    return with_endpoints(failure(Reason::SourceProtected, ErrorClass::InUse, *source), source, to);
  if (!source_resident)
    if (Outcome temp = add(*source, nbytes, true, out); temp.failed())
      return with_endpoints(temp, source, to);
  if (Outcome added = add(to, nbytes, false, out); added.failed()) return with_endpoints(added, source, to);
  value.resident.insert(to);
  if (source_resident) remove(value, *source, nbytes);
  return resolved(source, to);
}

Outcome Simulator::simulate_drop(const Action &action, SimulatedValue &value, const ValueRecord &record) {
  const Location at = action.location;
  if (!value.resident.contains(at))
    return resolved(at, std::nullopt, Verdict::NoOp, Reason::MaterializationAlreadyAbsent);
  if (value.protected_at.contains(at))
    return with_endpoints(failure(Reason::MaterializationProtected, ErrorClass::InUse, at), at, std::nullopt);
  if (value.resident.size() == 1 && !record.source_location)
    return with_endpoints(failure(Reason::FinalMustPreserve, ErrorClass::Ownership, at), at, std::nullopt);
  remove(value, at, record.spec.storage_nbytes);
  return resolved(at, std::nullopt);
}

Outcome Simulator::simulate_discard(SimulatedValue &value, const ValueRecord &record, Explanation &out) {
  LocationSet protected_resident;
  value.resident.for_each([&](Location l) {
    if (value.protected_at.contains(l)) protected_resident.insert(l);
  });
  if (!protected_resident.empty()) {
    out.failure_detail.protected_locations = protected_resident;
    return failure(Reason::DiscardedValueProtected, ErrorClass::InUse, *protected_resident.first());
  }
  value.resident.for_each([&](Location l) { remove(value, l, record.spec.storage_nbytes); });
  value.discarded = true;
  return {};
}

Outcome Simulator::simulate(const Action &action, Explanation &out) {
  const ValueRecord &record = state_.value(action.value);
  if (record.status == ValueStatus::Unregistered) return failure(Reason::HandleUnknown, ErrorClass::Handle);
  if (record.status == ValueStatus::Discarded) return failure(Reason::HandleDiscarded, ErrorClass::Handle);
  SimulatedValue &value = this->value(action.value);
  if (value.discarded) return failure(Reason::ValueDiscardedInPlan, ErrorClass::Handle);
  if (action.kind != ActionKind::Discard) {
    if (Outcome prepared = prepare(action.location); prepared.failed()) return prepared;
    if (action.from)
      if (Outcome prepared = prepare(*action.from); prepared.failed()) return prepared;
  }
  switch (action.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy: return simulate_ensure(action, value, record, out);
  case ActionKind::Move: return simulate_move(action, value, record, out);
  case ActionKind::Drop: return simulate_drop(action, value, record);
  case ActionKind::Discard: return simulate_discard(value, record, out);
  }
  return {};
}

Explanation Simulator::explain(const PlanView &plan) {
  reset();
  Explanation out;
  out.steps.reserve(plan.reclaim.size() + plan.reservations.size() + plan.enter.size() + plan.exit.size());
  auto run_actions = [&](Phase phase, std::span<const Action> actions) {
    for (std::uint32_t i = 0; i < actions.size(); ++i) {
      Outcome outcome = simulate(actions[i], out);
      out.steps.push_back(SimulatedStep{phase, i, outcome});
      if (outcome.failed()) return false;
    }
    return true;
  };
  auto run_reservations = [&] {
    for (std::uint32_t i = 0; i < plan.reservations.size(); ++i) {
      const Reservation &reservation = plan.reservations[i];
      Outcome outcome = prepare(reservation.location);
      if (!outcome.failed()) {
        SimulatedAccount &account = accounts_[reservation.location.index()];
        const std::uint64_t used = account.used, reserved = account.reserved;
        account.reserved += reservation.nbytes;
        account.peak_charged = std::max(account.peak_charged, account.used + account.reserved);
        const auto &budget = state_.account(reservation.location).budget_bytes;
        if (budget && account.used + account.reserved > *budget) {
          outcome = failure(Reason::ReservationExceedsBudget, ErrorClass::Budget, reservation.location);
          out.failure_detail.budget_bytes = *budget;
          out.failure_detail.used_bytes = used;
          out.failure_detail.reserved_bytes = reserved;
          out.failure_detail.requested_bytes = reservation.nbytes;
        }
      }
      outcome.destination = reservation.location;
      out.steps.push_back(SimulatedStep{Phase::Reserve, i, outcome});
      if (outcome.failed()) return false;
    }
    return true;
  };
  out.feasible = run_actions(Phase::Reclaim, plan.reclaim) && run_reservations() &&
                 run_actions(Phase::Enter, plan.enter) && run_actions(Phase::Exit, plan.exit);

  auto predict = [&](Location location) {
    const LocationAccount &live = state_.account(location);
    const SimulatedAccount &simulated = accounts_[location.index()];
    out.locations.push_back(LocationPrediction{location, live.budget_bytes, live.used_bytes,
                                               live.reserved_bytes, simulated.peak_charged,
                                               simulated.peak_used});
  };
  for (Location location : state_.registry())
    predict(location);
  for (Location location : first_referenced_)
    predict(location);
  return out;
}

} // namespace fhr

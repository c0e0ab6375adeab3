#include "fhr/model/state.hpp"

#include <algorithm>
#include <cassert>

namespace fhr {

namespace {
Outcome success(std::optional<Location> source, std::optional<Location> destination) {
  Outcome outcome;
  outcome.source = source;
  outcome.destination = destination;
  return outcome;
}

Outcome no_op(Reason reason, std::optional<Location> source, std::optional<Location> destination) {
  Outcome outcome = success(source, destination);
  outcome.verdict = Verdict::NoOp;
  outcome.reason = reason;
  return outcome;
}

/// Releases a temporary reconstruction charge however the transition ends.
class TemporaryCharge {
public:
  TemporaryCharge(LocationAccount &account, std::uint64_t nbytes) : account_(&account), nbytes_(nbytes) {}
  TemporaryCharge(const TemporaryCharge &) = delete;
  TemporaryCharge &operator=(const TemporaryCharge &) = delete;
  ~TemporaryCharge() { release(); }
  void release() {
    if (account_) account_->reserved_bytes -= nbytes_;
    account_ = nullptr;
  }

private:
  LocationAccount *account_;
  std::uint64_t nbytes_;
};
} // namespace

State::State(DeviceConfig devices) : devices_(devices) { slot_.fill(-1); }

void State::set_budget(Location location, std::optional<std::uint64_t> budget_bytes) {
  if (!is_registered(location)) {
    slot_[location.index()] = static_cast<std::int16_t>(registry_.size());
    registry_.push_back(location);
  }
  accounts_[location.index()].budget_bytes = budget_bytes;
}

Outcome State::validate(Location location) const {
  if (location.is_cuda() && (!devices_.cuda_available || location.device() >= devices_.device_count))
    return failure(Reason::LocationUnavailable, ErrorClass::InvalidArgument, location);
  return {};
}

void State::reset_peaks() {
  for (LocationAccount &account : accounts_) {
    account.peak_used_bytes = account.used_bytes;
    account.peak_charged_bytes = account.charged_bytes();
  }
}

void State::ensure_registered(Location location) {
  if (is_registered(location)) return;
  slot_[location.index()] = static_cast<std::int16_t>(registry_.size());
  registry_.push_back(location);
  ++version_;
}

const ValueRecord &State::value(ValueId value) const {
  static const ValueRecord unregistered;
  return value < values_.size() ? values_[value] : unregistered;
}

Outcome State::resolve(ValueId value) const {
  const ValueRecord &record = this->value(value);
  if (record.status == ValueStatus::Unregistered) return failure(Reason::HandleUnknown, ErrorClass::Handle);
  if (record.status == ValueStatus::Discarded) return failure(Reason::HandleDiscarded, ErrorClass::Handle);
  return {};
}

Outcome State::admit(Location location, std::uint64_t nbytes, bool temporary, FailureDetail *detail) {
  LocationAccount &account = accounts_[location.index()];
  if (!account.admits(nbytes)) {
    if (detail) {
      detail->budget_bytes = *account.budget_bytes;
      detail->used_bytes = account.used_bytes;
      detail->reserved_bytes = account.reserved_bytes;
      detail->requested_bytes = nbytes;
    }
    return failure(Reason::TransitionExceedsBudget, ErrorClass::Budget, location);
  }
  if (temporary) {
    account.reserved_bytes += nbytes;
    account.peak_charged_bytes = std::max(account.peak_charged_bytes, account.charged_bytes());
  }
  return {};
}

void State::install(ValueId value, Location location) {
  ensure_registered(location);
  ValueRecord &record = values_[value];
  record.resident.insert(location);
  LocationAccount &account = accounts_[location.index()];
  account.used_bytes += record.spec.storage_nbytes;
  account.peak_used_bytes = std::max(account.peak_used_bytes, account.used_bytes);
  account.peak_charged_bytes = std::max(account.peak_charged_bytes, account.charged_bytes());
  ++version_;
}

void State::remove(ValueId value, Location location) {
  ValueRecord &record = values_[value];
  record.resident.erase(location);
  accounts_[location.index()].used_bytes -= record.spec.storage_nbytes;
  ++version_;
}

Outcome State::adopt(ValueId value, const ValueSpec &spec, Location at, FailureDetail *detail) {
  if (Outcome valid = validate(at); valid.failed()) return valid;
  if (Outcome admitted = admit(at, spec.storage_nbytes, false, detail); admitted.failed()) return admitted;
  if (values_.size() <= value) values_.resize(value + 1);
  values_[value] = ValueRecord{};
  values_[value].status = ValueStatus::Live;
  values_[value].spec = spec;
  install(value, at);
  return success(std::nullopt, at);
}

Outcome State::register_source(ValueId value, const ValueSpec &spec, Location source_location) {
  if (Outcome valid = validate(source_location); valid.failed()) return valid;
  assert(spec.recoverability == Recoverability::Reconstructible);
  ensure_registered(source_location);
  if (values_.size() <= value) values_.resize(value + 1);
  values_[value] = ValueRecord{};
  values_[value].status = ValueStatus::Live;
  values_[value].spec = spec;
  values_[value].source_location = source_location;
  ++version_;
  return success(source_location, std::nullopt);
}

Outcome State::apply(const Action &action, FailureDetail *detail, TransitionHooks *hooks) {
  if (Outcome resolved = resolve(action.value); resolved.failed()) return resolved;
  if (action.kind != ActionKind::Discard) {
    if (Outcome valid = validate(action.location); valid.failed()) return valid;
    if (action.from)
      if (Outcome valid = validate(*action.from); valid.failed()) return valid;
  }
  switch (action.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy: return ensure(action, detail, hooks);
  case ActionKind::Move: return move(action, detail, hooks);
  case ActionKind::Drop: return drop(action, hooks);
  case ActionKind::Discard: return discard(action, detail, hooks);
  }
  return {};
}

/// Reconstructs `value` from its source into `to` (§4.5, §6.1 steps 3–5).
Outcome State::reconstruct_into(ValueId value, Location to, Outcome result, FailureDetail *detail,
                                TransitionHooks *hooks) {
  const ValueRecord &record = values_[value];
  const Location source = *record.source_location;
  const std::uint64_t nbytes = record.spec.storage_nbytes;
  if (Outcome admitted = admit(source, nbytes, true, detail); admitted.failed()) return admitted;
  TemporaryCharge charge(accounts_[source.index()], nbytes);
  if (hooks) hooks->load(value, source);
  if (source == to) {
    charge.release();
    if (Outcome admitted = admit(to, nbytes, false, detail); admitted.failed()) return admitted;
  } else {
    if (Outcome admitted = admit(to, nbytes, false, detail); admitted.failed()) return admitted;
    if (hooks) hooks->copy(value, source, to);
  }
  if (hooks) hooks->install(value, to);
  install(value, to);
  result.source = source;
  result.destination = to;
  return result;
}

Outcome State::ensure(const Action &action, FailureDetail *detail, TransitionHooks *hooks) {
  const ValueRecord &record = values_[action.value];
  const Location to = action.location;
  if (record.resident.contains(to)) return no_op(Reason::DestinationAlreadyResident, std::nullopt, to);
  if (record.spec.replica_mode == ReplicaMode::Exclusive && !record.resident.empty())
    return failure(Reason::WouldReplicateExclusive, ErrorClass::Ownership, to);
  if (std::optional<Location> source = record.resident.first()) {
    if (Outcome admitted = admit(to, record.spec.storage_nbytes, false, detail); admitted.failed())
      return admitted;
    if (hooks) {
      hooks->copy(action.value, *source, to);
      hooks->install(action.value, to);
    }
    install(action.value, to);
    return success(source, to);
  }
  if (!record.source_location) return failure(Reason::NoMaterializationOrSource, ErrorClass::Unavailable, to);
  return reconstruct_into(action.value, to, Outcome{}, detail, hooks);
}

std::optional<Location> State::plain_copy_source(const Action &action) const {
  if (resolve(action.value).failed() || validate(action.location).failed()) return std::nullopt;
  const ValueRecord &record = values_[action.value];
  const Location to = action.location;
  if (record.resident.contains(to)) return std::nullopt;
  switch (action.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy: // the choice of ensure()
    if (record.spec.replica_mode == ReplicaMode::Exclusive && !record.resident.empty()) return std::nullopt;
    return record.resident.first();
  case ActionKind::Move: { // the choice of move()
    std::optional<Location> selected = action.from ? action.from : record.resident.first_except(to);
    if (!selected || !record.resident.contains(*selected) || record.protected_at.contains(*selected))
      return std::nullopt;
    if (action.from && validate(*action.from).failed()) return std::nullopt;
    return selected;
  }
  case ActionKind::Drop:
  case ActionKind::Discard: return std::nullopt;
  }
  return std::nullopt;
}

Outcome State::move(const Action &action, FailureDetail *detail, TransitionHooks *hooks) {
  const ValueRecord &record = values_[action.value];
  const Location to = action.location;
  std::optional<Location> selected;
  if (action.from) {
    if (!record.resident.contains(*action.from))
      return failure(Reason::ExplicitSourceNotResident, ErrorClass::Unavailable, *action.from);
    selected = action.from;
  } else {
    selected = record.resident.first_except(to);
  }
  if (record.resident.contains(to)) {
    if (!selected || *selected == to) return no_op(Reason::DestinationOwnsSelectedReplica, selected, to);
    if (record.protected_at.contains(*selected))
      return failure(Reason::SourceProtected, ErrorClass::InUse, *selected);
    if (hooks) hooks->remove(action.value, *selected);
    remove(action.value, *selected);
    return success(selected, to);
  }
  if (selected) {
    if (record.protected_at.contains(*selected))
      return failure(Reason::SourceProtected, ErrorClass::InUse, *selected);
    if (Outcome admitted = admit(to, record.spec.storage_nbytes, false, detail); admitted.failed())
      return admitted;
    if (hooks) {
      hooks->copy(action.value, *selected, to);
      hooks->install(action.value, to);
    }
    install(action.value, to); // transient double charge: the source is still counted
    if (hooks) hooks->remove(action.value, *selected);
    remove(action.value, *selected);
    return success(selected, to);
  }
  if (!record.source_location) return failure(Reason::NoMaterializationOrSource, ErrorClass::Unavailable, to);
  return reconstruct_into(action.value, to, Outcome{}, detail, hooks);
}

Outcome State::drop(const Action &action, TransitionHooks *hooks) {
  const ValueRecord &record = values_[action.value];
  const Location at = action.location;
  if (!record.resident.contains(at)) return no_op(Reason::MaterializationAlreadyAbsent, at, std::nullopt);
  if (record.protected_at.contains(at))
    return failure(Reason::MaterializationProtected, ErrorClass::InUse, at);
  if (record.resident.size() == 1 && !record.source_location)
    return failure(Reason::FinalMustPreserve, ErrorClass::Ownership, at);
  if (hooks) hooks->remove(action.value, at);
  remove(action.value, at);
  return success(at, std::nullopt);
}

Outcome State::discard(const Action &action, FailureDetail *detail, TransitionHooks *hooks) {
  ValueRecord &record = values_[action.value];
  LocationSet protected_resident;
  record.resident.for_each([&](Location l) {
    if (record.protected_at.contains(l)) protected_resident.insert(l);
  });
  if (!protected_resident.empty()) {
    if (detail) detail->protected_locations = protected_resident;
    return failure(Reason::DiscardedValueProtected, ErrorClass::InUse, *protected_resident.first());
  }
  record.resident.for_each([&](Location l) {
    if (hooks) hooks->remove(action.value, l);
    remove(action.value, l);
  });
  record.source_location.reset();
  record.status = ValueStatus::Discarded;
  ++version_;
  return success(std::nullopt, std::nullopt);
}

bool State::is_protected(ValueId value, Location at) const {
  return this->value(value).protected_at.contains(at);
}

void State::add_tokens(ValueId value, Location at, LifetimeKind kind, int delta_use_hold, int delta_pending) {
  ValueRecord &record = values_[value];
  auto entry = std::find_if(record.protections.begin(), record.protections.end(),
                            [&](const Protection &p) { return p.location == at; });
  if (entry == record.protections.end()) {
    record.protections.push_back(Protection{at});
    entry = record.protections.end() - 1;
  }
  if (kind == LifetimeKind::Hold)
    entry->hold_count += static_cast<std::uint32_t>(delta_use_hold);
  else
    entry->use_count += static_cast<std::uint32_t>(delta_use_hold);
  entry->pending_count += static_cast<std::uint32_t>(delta_pending);
  if (entry->protects()) {
    record.protected_at.insert(at);
  } else {
    record.protected_at.erase(at);
    record.protections.erase(entry);
  }
}

Outcome State::protect(LifetimeKind kind, std::span<const ValueId> values, Location at, LifetimeId *id,
                       ValueId *failed_value) {
  assert(kind != LifetimeKind::Reservation);
  if (Outcome valid = validate(at); valid.failed()) return valid;
  for (ValueId value : values) {
    Outcome resolved = resolve(value);
    if (!resolved.failed() && !values_[value].resident.contains(at))
      resolved = failure(Reason::NotResident, ErrorClass::Unavailable, at);
    if (resolved.failed()) {
      if (failed_value) *failed_value = value;
      return resolved;
    }
  }
  LifetimeRecord lifetime;
  lifetime.kind = kind;
  lifetime.location = at;
  for (ValueId value : values) {
    if (std::find(lifetime.values.begin(), lifetime.values.end(), value) != lifetime.values.end())
      continue; // duplicates collapse
    lifetime.values.push_back(value);
    add_tokens(value, at, kind, 1, 0);
  }
  const LifetimeId added = add_lifetime(std::move(lifetime));
  if (id) *id = added;
  ++version_;
  return success(std::nullopt, at);
}

Outcome State::reserve(Location at, std::uint64_t nbytes, std::string label, LifetimeId *id,
                       FailureDetail *detail) {
  if (Outcome valid = validate(at); valid.failed()) return valid;
  if (Outcome admitted = admit(at, nbytes, false, detail); admitted.failed()) {
    admitted.reason = Reason::ReservationExceedsBudget;
    return admitted;
  }
  ensure_registered(at);
  LocationAccount &account = accounts_[at.index()];
  account.reserved_bytes += nbytes;
  account.peak_charged_bytes = std::max(account.peak_charged_bytes, account.charged_bytes());
  LifetimeRecord lifetime;
  lifetime.kind = LifetimeKind::Reservation;
  lifetime.location = at;
  lifetime.nbytes = nbytes;
  lifetime.label = std::move(label);
  const LifetimeId added = add_lifetime(std::move(lifetime));
  if (id) *id = added;
  ++version_;
  return success(std::nullopt, at);
}

LifetimeId State::add_lifetime(LifetimeRecord lifetime) {
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(lifetimes_.size());
    lifetimes_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  LifetimeRecord &record = lifetimes_[slot];
  lifetime.generation = record.generation + 1;
  lifetime.state = LifetimeState::Active;
  lifetime.sequence = next_sequence_++;
  record = std::move(lifetime);
  return (static_cast<LifetimeId>(record.generation) << 32) | slot;
}

LifetimeRecord *State::live(LifetimeId id) {
  const auto slot = static_cast<std::uint32_t>(id);
  if (slot >= lifetimes_.size()) return nullptr;
  LifetimeRecord &record = lifetimes_[slot];
  if (record.generation != static_cast<std::uint32_t>(id >> 32) || record.state == LifetimeState::Released)
    return nullptr;
  return &record;
}

const LifetimeRecord *State::find_lifetime(LifetimeId id) const {
  return const_cast<State *>(this)->live(id);
}

LifetimeState State::lifetime_state(LifetimeId id) const {
  const LifetimeRecord *record = find_lifetime(id);
  return record ? record->state : LifetimeState::Released;
}

std::vector<LifetimeId> State::live_lifetimes() const {
  std::vector<LifetimeId> ids;
  for (std::uint32_t slot = 0; slot < lifetimes_.size(); ++slot)
    if (lifetimes_[slot].state != LifetimeState::Released)
      ids.push_back((static_cast<LifetimeId>(lifetimes_[slot].generation) << 32) | slot);
  std::sort(ids.begin(), ids.end(), [&](LifetimeId a, LifetimeId b) {
    return lifetimes_[static_cast<std::uint32_t>(a)].sequence <
           lifetimes_[static_cast<std::uint32_t>(b)].sequence;
  });
  return ids;
}

void State::retire(LifetimeId id) {
  LifetimeRecord &record = lifetimes_[static_cast<std::uint32_t>(id)];
  record.state = LifetimeState::Released;
  record.values.clear();
  record.values.shrink_to_fit();
  record.label.clear();
  free_slots_.push_back(static_cast<std::uint32_t>(id));
}

Outcome State::release(LifetimeId id, bool events_pending) {
  LifetimeRecord *lifetime = live(id);
  if (!lifetime || lifetime->state != LifetimeState::Active) return {}; // release is idempotent
  bool pending = false;
  switch (lifetime->kind) {
  case LifetimeKind::Reservation:
    accounts_[lifetime->location.index()].reserved_bytes -= lifetime->nbytes;
    break;
  case LifetimeKind::Hold:
    for (ValueId value : lifetime->values)
      add_tokens(value, lifetime->location, lifetime->kind, -1, 0);
    break;
  case LifetimeKind::Lease:
    pending = events_pending && lifetime->location.is_cuda();
    for (ValueId value : lifetime->values)
      add_tokens(value, lifetime->location, lifetime->kind, -1, pending ? 1 : 0);
    break;
  }
  if (pending)
    lifetime->state = LifetimeState::Pending;
  else
    retire(id);
  ++version_;
  return {};
}

void State::close() {
  values_.clear();
  // Slots keep their generations, so ids from before the close stay stale.
  for (LifetimeId id : live_lifetimes())
    retire(id);
  for (LocationAccount &account : accounts_) {
    account.used_bytes = 0;
    account.reserved_bytes = 0;
  }
  ++version_;
}

void State::complete_pending(LifetimeId id) {
  LifetimeRecord *lifetime = live(id);
  if (!lifetime || lifetime->state != LifetimeState::Pending) return;
  for (ValueId value : lifetime->values)
    add_tokens(value, lifetime->location, lifetime->kind, 0, -1);
  retire(id);
  ++version_;
}

} // namespace fhr

#include "fhr/model/state.hpp"

#include "fhr/model/first_occurrences.hpp"
#include "fhr/model/overlay.hpp"
#include "fhr/model/step_transfer.hpp"
#include "fhr/model/transfer_recorder.hpp"
#include "rules.hpp"

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
} // namespace

/// Execution: the rules change this State; registration, the version and the
/// value's status are bookkept in its primitives.
class State::Store {
public:
  static constexpr bool kPeakIncludesRefusedRequest = false;
  static constexpr bool kFailureNamesEndpoints = false;

  explicit Store(State &state) : state_(state) {}
  Outcome resolve(ValueId value) const { return state_.resolve(value); }
  Outcome validate(Location location) const { return state_.validate(location); }
  ValueRecord &record(ValueId value) { return state_.values_[value]; }
  LocationAccount &account(Location location) { return state_.accounts_[location.index()]; }
  void install(ValueId value, Location location) { state_.install(value, location); }
  void remove(ValueId value, Location location) { state_.remove(value, location); }
  void mark_discarded(ValueId value) {
    ValueRecord &record = state_.values_[value];
    record.source_location.reset();
    record.status = ValueStatus::Discarded;
    ++state_.version_;
  }

private:
  State &state_;
};

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

// A member, not a static in value(): a function's static is guarded on
// every call, and value() is on explain's per-action path.
const ValueRecord State::kUnregistered;

void State::install(ValueId value, Location location) {
  ensure_registered(location);
  ValueRecord &record = values_[value];
  record.resident.insert(location);
  accounts_[location.index()].add_used(record.spec.storage_nbytes);
  ++version_;
}

void State::remove(ValueId value, Location location) {
  ValueRecord &record = values_[value];
  record.resident.erase(location);
  accounts_[location.index()].remove_used(record.spec.storage_nbytes);
  ++version_;
}

std::uint64_t State::resident_logical_bytes(Location location) const {
  std::uint64_t bytes = 0;
  for (const ValueRecord &record : values_)
    if (record.resident.contains(location)) bytes += record.spec.logical_nbytes;
  return bytes;
}

Outcome State::admits_adoption(Location at, std::uint64_t storage_nbytes, FailureDetail *detail) {
  if (Outcome valid = validate(at); valid.failed()) return valid;
  Store store(*this);
  return rules::admit(store, at, storage_nbytes, detail);
}

Outcome State::adopt(ValueId value, const ValueSpec &spec, Location at, FailureDetail *detail) {
  if (Outcome admitted = admits_adoption(at, spec.storage_nbytes, detail); admitted.failed()) return admitted;
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
  static_assert(rules::Store<Store>);
  Store store(*this);
  return rules::apply(store, action, detail, hooks);
}

Outcome State::apply(const Action &action, FailureDetail *detail, StepTransfer &transfer,
                     LocationSet *removed) {
  Store store(*this);
  return rules::apply(store, action, detail, transfer, removed);
}

std::optional<Location> State::plain_copy_source(const Action &action) const {
  StateOverlay dry_run(*this);
  TransferRecorder transfer;
  if (dry_run.apply(action, nullptr, transfer).failed() || !transfer.record.plain_copy()) return std::nullopt;
  return transfer.record.copied_from;
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
  lifetime.values = first_occurrences(values, [](ValueId v) { return v; }); // duplicates collapse
  for (ValueId value : lifetime.values)
    add_tokens(value, at, kind, 1, 0);
  const LifetimeId added = add_lifetime(std::move(lifetime));
  if (id) *id = added;
  ++version_;
  return success(std::nullopt, at);
}

Outcome State::reserve(Location at, std::uint64_t nbytes, std::string label, LifetimeId *id,
                       FailureDetail *detail) {
  Store store(*this);
  if (Outcome admitted = rules::reserve(store, at, nbytes, detail); admitted.failed()) return admitted;
  ensure_registered(at);
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
    accounts_[lifetime->location.index()].remove_reserved(lifetime->nbytes);
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

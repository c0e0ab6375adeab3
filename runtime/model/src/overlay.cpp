#include "fhr/model/overlay.hpp"

#include "fhr/model/step_transfer.hpp"
#include "rules.hpp"

#include <algorithm>

namespace fhr {

namespace {
/// Touched values found by a scan up to this many; by index beyond.
constexpr std::size_t kScannedValues = 8;
} // namespace

/// Explain and dry runs: the rules change the overlay, never the base. The
/// differences from execution listed in overlay.hpp live here.
class StateOverlay::Store {
public:
  static constexpr bool kPeakIncludesRefusedRequest = true;
  static constexpr bool kFailureNamesEndpoints = true;

  explicit Store(StateOverlay &overlay) : overlay_(overlay) {}

  Outcome resolve(ValueId id) {
    current_ = overlay_.find(id);
    if (!current_) { // first touch: the base decides
      const ValueRecord &record = overlay_.base_.value(id);
      if (Outcome resolved = State::resolve(record); resolved.failed()) return resolved;
      current_ = &overlay_.add(id, record);
    }
    if (current_->discarded) return failure(Reason::ValueDiscardedInPlan, ErrorClass::Handle);
    return {};
  }
  Outcome validate(Location location) {
    if (overlay_.validated_.contains(location)) return {};
    if (Outcome valid = overlay_.base_.validate(location); valid.failed()) return valid;
    overlay_.validated_.insert(location);
    if (!overlay_.base_.is_registered(location) && !overlay_.referenced_.contains(location)) {
      overlay_.referenced_.insert(location);
      overlay_.first_referenced_.push_back(location);
    }
    return {};
  }
  // The rules ask only for the value they resolved (rules.hpp).
  Value &record(ValueId) { return *current_; }
  LocationAccount &account(Location location) { return overlay_.touch(location); }
  void install(ValueId, Location location) {
    current_->resident.insert(location);
    account(location).add_used(current_->spec.storage_nbytes);
  }
  void remove(ValueId, Location location) {
    current_->resident.erase(location);
    account(location).remove_used(current_->spec.storage_nbytes);
  }
  void mark_discarded(ValueId) { current_->discarded = true; }

private:
  StateOverlay &overlay_;
  Value *current_ = nullptr;
};

StateOverlay::StateOverlay(const State &base, std::span<const LifetimeId> completed_pending)
    : base_(base), completed_pending_(completed_pending.begin(), completed_pending.end()) {
  copy_accounts_of_base();
}

void StateOverlay::reset() {
  if (!slot_.empty())
    for (ValueId id : touched_ids_)
      slot_[id] = kNoSlot;
  touched_ids_.clear();
  values_.clear();
  copy_accounts_of_base();
  validated_ = LocationSet{};
  referenced_ = LocationSet{};
  first_referenced_.clear();
}

void StateOverlay::copy_accounts_of_base() {
  // A location the base does not know has no charge in the base: the rules
  // reach one only through an action that validated it (its destination, a
  // move's source, a reservation), so referenced_ lists every one changed.
  for (Location location : base_.registry())
    accounts_[location.index()] = copy_of_base(location);
  referenced_.for_each([&](Location location) { accounts_[location.index()] = copy_of_base(location); });
}

// Flattened: explain's cost per action is this one function with every rule
// inlined (docs/benchmarks.md).
[[gnu::flatten]] Outcome StateOverlay::apply(const Action &action, FailureDetail *detail,
                                             TransitionHooks *hooks) {
  static_assert(rules::Store<Store>);
  Store store(*this);
  return rules::apply(store, action, detail, hooks);
}

[[gnu::flatten]] Outcome StateOverlay::apply(const Action &action, FailureDetail *detail,
                                             TransferRecorder &transfer) {
  Store store(*this);
  return rules::apply(store, action, detail, &transfer);
}

namespace {
/// A discard at `index` of its phase, with the replicas it removed noted.
/// Not inlined: apply_each's loop keeps the rules' two-flag path.
template <typename S>
[[gnu::noinline]] Outcome apply_discard(S &store, const Action &action, FailureDetail *detail,
                                        StepTransfer &transfer, std::uint32_t index,
                                        std::vector<DiscardedReplicas> &discards) {
  LocationSet removed;
  const Outcome outcome = rules::apply(store, action, detail, transfer, &removed);
  if (!outcome.failed()) discards.push_back(DiscardedReplicas{index, removed});
  return outcome;
}
} // namespace

[[gnu::flatten]] std::size_t StateOverlay::apply_each(Phase phase, std::span<const Action> actions,
                                                      FailureDetail *detail, SimulatedStep *out,
                                                      std::vector<DiscardedReplicas> *discards) {
  Store store(*this);
  for (std::uint32_t i = 0; i < actions.size(); ++i) {
    // Field by field: a step assembled on the stack and copied whole was
    // read back wider than it was written (a store-forwarding stall per
    // action).
    SimulatedStep &step = out[i];
    // Where replicas went is kept for discards alone (DiscardedReplicas),
    // off the loop's path.
    const Outcome outcome = discards && actions[i].kind == ActionKind::Discard
                                ? apply_discard(store, actions[i], detail, step.transfer, i, *discards)
                                : rules::apply(store, actions[i], detail, step.transfer);
    step.phase = phase;
    step.index = i;
    step.outcome = outcome;
    if (outcome.failed()) return i + 1;
  }
  return actions.size();
}

Outcome StateOverlay::reserve(Location at, std::uint64_t nbytes, FailureDetail *detail) {
  Store store(*this);
  return rules::reserve(store, at, nbytes, detail);
}

LocationSet StateOverlay::seen_through_completed(ValueId id, const ValueRecord &record) const {
  LocationSet protected_at = record.protected_at;
  // §7.4: a pending token protects nothing once every event of its lease
  // has completed.
  for (const Protection &p : record.protections) {
    if (p.use_count + p.hold_count > 0 || p.pending_count == 0) continue;
    std::uint32_t completed = 0;
    for (LifetimeId lease : completed_pending_)
      if (const LifetimeRecord *r = base_.find_lifetime(lease);
          r && r->location == p.location &&
          std::find(r->values.begin(), r->values.end(), id) != r->values.end())
        ++completed;
    if (completed >= p.pending_count) protected_at.erase(p.location);
  }
  return protected_at;
}

const StateOverlay::Value *StateOverlay::find_by_scan(ValueId id) const {
  for (std::size_t i = 0; i < touched_ids_.size(); ++i)
    if (touched_ids_[i] == id) return &values_[i];
  return nullptr;
}

StateOverlay::Value &StateOverlay::add(ValueId id, const ValueRecord &record) {
  const auto slot = static_cast<std::uint32_t>(values_.size());
  values_.emplace_back(record, protected_seen(id, record));
  touched_ids_.push_back(id);
  if (slot_.empty() && touched_ids_.size() > kScannedValues) {
    // Many values: index them by id from now on (reset() keeps the index).
    slot_.assign(base_.value_count(), kNoSlot);
    for (std::uint32_t i = 0; i < touched_ids_.size(); ++i)
      slot_[touched_ids_[i]] = i;
  } else if (!slot_.empty()) {
    if (id >= slot_.size()) slot_.resize(base_.value_count(), kNoSlot);
    slot_[id] = slot;
  }
  return values_.back();
}

LocationAccount StateOverlay::copy_of_base(Location location) const {
  LocationAccount account = base_.account(location);
  // §10.2: peaks are measured from the current charge.
  account.peak_used_bytes = account.used_bytes;
  account.peak_charged_bytes = account.charged_bytes();
  return account;
}

LocationAccount StateOverlay::account(Location location) const { return accounts_[location.index()]; }

LocationSet StateOverlay::resident(ValueId id) const {
  const Value *value = find(id);
  return value ? value->resident : base_.value(id).resident;
}

LocationSet StateOverlay::protected_at(ValueId id) const {
  const Value *value = find(id);
  return value ? value->protected_at : protected_seen(id, base_.value(id));
}

bool StateOverlay::discarded(ValueId id) const {
  const Value *value = find(id);
  return value && value->discarded;
}

} // namespace fhr

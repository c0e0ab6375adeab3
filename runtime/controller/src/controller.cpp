// The controller (§18.3): requests checked against the live state, the
// search run on it, the plan checked by the manager's explain at the
// version the search saw.
#include "fhr/controller/controller.hpp"

#include <algorithm>

namespace fhr {

namespace {

bool blank(const std::string &text) { return text.find_first_not_of(" \t\n\r") == std::string::npos; }

ActionSpec to_spec(const Action &action, std::uint64_t manager_id) {
  return ActionSpec{action.kind, Handle{manager_id, std::uint64_t{action.value} + 1}, action.location,
                    action.from};
}

/// The value a handle names in `state`, or the handle error §18.3 step 1 raises.
ValueId resolve_requirement(const State &state, std::uint64_t manager_id, const Handle &handle) {
  if (handle.manager_id != manager_id)
    throw ResidencyHandleError("the request names a handle of manager " + std::to_string(handle.manager_id) +
                               ", not of manager " + std::to_string(manager_id));
  if (handle.handle_id == 0 || handle.handle_id > state.value_count() ||
      state.value(static_cast<ValueId>(handle.handle_id - 1)).status == ValueStatus::Unregistered)
    throw ResidencyHandleError("the request names an unknown handle " + std::to_string(handle.handle_id));
  const auto value = static_cast<ValueId>(handle.handle_id - 1);
  if (state.value(value).status == ValueStatus::Discarded)
    throw ResidencyHandleError("the request names handle " + std::to_string(handle.handle_id) +
                               ", which has been discarded");
  return value;
}

} // namespace

Controller::Controller(Manager &manager, std::shared_ptr<const Policy> policy,
                       std::uint64_t search_state_limit)
    : manager_(&manager), policy_(policy ? std::move(policy) : std::make_shared<DeterministicTieredLRU>()),
      policy_name_(policy_->name()), policy_config_(policy_->config_identity()),
      search_state_limit_(search_state_limit) {
  if (search_state_limit_ == 0)
    throw std::invalid_argument("a controller's search_state_limit must be positive");
  if (blank(policy_name_)) throw std::invalid_argument("a residency policy needs a non-blank name");
}

void Controller::set_policy_metadata(const Handle &handle, std::int64_t priority,
                                     std::optional<std::string> stable_key) {
  if (stable_key && blank(*stable_key)) throw std::invalid_argument("a policy stable_key must not be blank");
  std::lock_guard guard(mutex_);
  const ValueId value = manager_->read_state([&](const State &state) {
    if (handle.manager_id != manager_->id() || handle.handle_id == 0 ||
        handle.handle_id > state.value_count() ||
        state.value(static_cast<ValueId>(handle.handle_id - 1)).status != ValueStatus::Live)
      throw ResidencyHandleError("policy metadata needs a live handle of this manager, not handle " +
                                 std::to_string(handle.handle_id) + " of manager " +
                                 std::to_string(handle.manager_id));
    return static_cast<ValueId>(handle.handle_id - 1);
  });
  if (stable_key)
    for (std::size_t other = 0; other < metadata_.size(); ++other)
      if (other != value && metadata_[other].stable_key == stable_key)
        throw std::invalid_argument("stable_key '" + *stable_key + "' already belongs to handle " +
                                    std::to_string(other + 1));
  if (metadata_.size() <= value) metadata_.resize(value + 1);
  metadata_[value] = PolicyMetadata{priority, std::move(stable_key)};
  tie_order_stale_ = true;
}

Decision Controller::decide(const Request &request) {
  std::lock_guard guard(mutex_);
  const std::uint64_t manager_id = manager_->id();
  std::vector<std::pair<ValueId, Location>> requirements;
  requirements.reserve(request.requirements().size());
  std::uint64_t version = 0;
  if (tie_order_stale_) {
    tie_order_ = tiered_lru_tie_order(metadata_);
    tie_order_stale_ = false;
  }
  SearchResult result = manager_->read_state([&](const State &state) {
    version = state.version();
    for (const Requirement &r : request.requirements())
      requirements.emplace_back(resolve_requirement(state, manager_id, r.handle), r.location);
    for (std::size_t i = 0; i < requirements.size(); ++i) {
      const ValueId value = requirements[i].first;
      if (state.value(value).spec.replica_mode != ReplicaMode::Exclusive) continue;
      for (std::size_t j = i + 1; j < requirements.size(); ++j)
        if (requirements[j].first == value)
          throw ResidencyOwnershipError("request '" + request.name() + "' requires EXCLUSIVE value " +
                                        std::to_string(value + 1) + " at " + requirements[i].second.name() +
                                        " and " + requirements[j].second.name() + " at once");
    }
    const PolicyInputs inputs{manager_id, metadata_, last_access_, tie_order_};
    return search_request(state, SearchRequest{request.name(), requirements, request.reservations()},
                          *policy_, inputs, search_state_limit_);
  });

  PlanSpec plan;
  plan.name = request.name();
  plan.reservations = request.reservations();
  plan.reclaim.reserve(result.reclaim.size());
  for (const Action &a : result.reclaim)
    plan.reclaim.push_back(to_spec(a, manager_id));
  plan.enter.reserve(result.enter.size());
  for (const Action &a : result.enter)
    plan.enter.push_back(to_spec(a, manager_id));

  // §18.3 step 5: the manager's own preflight at the version planned on.
  Explanation explanation = manager_->explain(plan, version);
  if (const std::uint64_t actual = manager_->state_version(); actual != version)
    throw ResidencyStaleStateError(version, actual);
  if (!explanation.feasible) {
    const SimulatedStep &failed = *explanation.first_failure();
    throw ResidencyPlanError("automatic residency request '" + request.name() +
                             "' failed its explain in phase " + std::string(phase_name(failed.phase)) +
                             " at step " + std::to_string(failed.index) + ": " +
                             describe(failed.outcome, {}, &explanation.failure_detail));
  }

  std::vector<Eviction> evictions;
  evictions.reserve(result.evictions.size());
  for (const PlannedEviction &e : result.evictions)
    evictions.push_back(Eviction{to_spec(e.action, manager_id), e.rank, e.released_location,
                                 e.released_nbytes, e.reason,
                                 eviction_reason_text(e.reason, e.action.location)});
  return Decision{manager_id,
                  version,
                  result.explored_states,
                  request,
                  std::move(plan),
                  policy_name_,
                  policy_config_,
                  std::move(evictions),
                  std::move(explanation)};
}

void Controller::validate_decision(const Decision &decision) const {
  if (decision.manager_id != manager_->id())
    throw ResidencyHandleError("the decision belongs to manager " + std::to_string(decision.manager_id) +
                               ", not to manager " + std::to_string(manager_->id()));
  if (decision.policy_name != policy_name_ || decision.policy_config != policy_config_)
    throw ResidencyPlanError("the decision for '" + decision.request.name() + "' was made under policy '" +
                             decision.policy_name + "' " + decision.policy_config.dump() + ", not '" +
                             policy_name_ + "' " + policy_config_.dump());
}

Scope Controller::scope(const Decision &decision, TransferStreams transfer_streams) {
  validate_decision(decision);
  return manager_->scope(decision.plan, decision.expected_state_version, std::move(transfer_streams));
}

Use Controller::use(Request request, ConsumerStreams consumer_streams, TransferStreams transfer_streams) {
  LocationSet required_cuda, supplied;
  for (const Requirement &r : request.requirements())
    if (r.location.is_cuda()) required_cuda.insert(r.location);
  for (const auto &[location, stream] : consumer_streams) {
    if (!location.is_cuda())
      throw std::invalid_argument("a consumer stream can only be given for a CUDA location, not " +
                                  location.name());
    if (!stream) throw std::invalid_argument("the consumer stream for " + location.name() + " is empty");
    if (supplied.contains(location))
      throw std::invalid_argument("two consumer streams for " + location.name());
    supplied.insert(location);
  }
  if (supplied != required_cuda) {
    std::string missing, unexpected;
    required_cuda.for_each([&](Location l) {
      if (!supplied.contains(l)) missing += (missing.empty() ? "" : ", ") + l.name();
    });
    supplied.for_each([&](Location l) {
      if (!required_cuda.contains(l)) unexpected += (unexpected.empty() ? "" : ", ") + l.name();
    });
    throw std::invalid_argument(
        "the consumer streams of use '" + request.name() +
        "' must cover exactly its CUDA locations (missing: " + (missing.empty() ? "none" : missing) +
        "; unexpected: " + (unexpected.empty() ? "none" : unexpected) + ")");
  }
  return Use(*this, std::move(request), std::move(consumer_streams), std::move(transfer_streams));
}

std::uint64_t Controller::last_access_epoch(const Handle &handle) const {
  std::lock_guard guard(mutex_);
  if (handle.manager_id != manager_->id() || handle.handle_id == 0 || handle.handle_id > last_access_.size())
    return 0;
  return last_access_[handle.handle_id - 1];
}

void Controller::record_access(const std::vector<Handle> &handles) {
  std::lock_guard guard(mutex_);
  ++access_epoch_;
  for (const Handle &h : handles) {
    const std::size_t value = h.handle_id - 1;
    if (last_access_.size() <= value) last_access_.resize(value + 1, 0);
    last_access_[value] = access_epoch_;
  }
}

} // namespace fhr

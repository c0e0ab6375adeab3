#pragma once
/// \file
/// The controller's planning search (docs/semantics.md §18.3 steps 2–4) on
/// a model State, without a manager: Controller::decide runs it on the
/// manager's live state, and the planner's reference baseline
/// (`fhr-plan solve --policy lru`) on the state of its own simulation, so
/// both follow the same rules.

#include "fhr/controller/policy.hpp"
#include "fhr/model/plan.hpp"
#include "fhr/model/state.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fhr {

/// Why a reclaim action is legal (§18.3 step 3).
enum class EvictionReason : std::uint8_t {
  OtherReplica,     ///< dropped: another replica keeps the value
  SourceRebuilds,   ///< dropped: its registered source can rebuild it
  SoleReplicaMoved, ///< its only replica moved to another location
};
/// The reason as a sentence; `destination` is where a moved replica went.
std::string eviction_reason_text(EvictionReason reason, Location destination);

/// One reclaim action the search chose, with the policy's evidence.
struct PlannedEviction {
  Action action;
  /// The candidate's position in the policy's order at the time it was chosen.
  std::size_t rank = 0;
  Location released_location;
  std::uint64_t released_nbytes = 0;
  EvictionReason reason = EvictionReason::OtherReplica;
};

/// What the policy is told about each value, indexed by ValueId; values
/// past the end of a span have the defaults (priority 0, no stable key,
/// never accessed).
struct PolicyInputs {
  /// Candidates name their value as Handle{manager_id, value + 1}.
  std::uint64_t manager_id = 0;
  std::span<const PolicyMetadata> metadata;
  /// Access epochs; 0 means never accessed (epochs start at 1).
  std::span<const std::uint64_t> last_access;
  /// Each value's position in the order of the tiered-LRU tie breaks
  /// (values with a stable key first, by key text, then registration),
  /// so that ranking compares numbers instead of keys; values past the end
  /// come after every value in it, by registration. Empty when no value has
  /// a stable key. Only policies that order_by_tiered_lru_key use it.
  std::span<const std::uint32_t> tie_order;
};

/// PolicyInputs::tie_order for `metadata`.
std::vector<std::uint32_t> tiered_lru_tie_order(std::span<const PolicyMetadata> metadata);

struct SearchRequest {
  std::string_view name;
  /// (value, location) pairs in request order; every value live, an
  /// EXCLUSIVE value at most once (the caller validated the request).
  std::span<const std::pair<ValueId, Location>> requirements;
  std::span<const Reservation> reservations;
};

struct SearchResult {
  std::vector<Action> reclaim;
  std::vector<PlannedEviction> evictions;
  /// The request's own actions: ensure (REPLICABLE) or move (EXCLUSIVE).
  std::vector<Action> enter;
  /// Search states counted against the limit (at least 1).
  std::uint64_t explored_states = 0;
};

/// The first plan of the deterministic depth-first search that meets the
/// request from `state`. Throws ResidencyPlanError when the search is
/// exhausted and ResidencySearchLimitError when it reached `state_limit`
/// states first, or nested as deep as the thread's stack allows
/// (std::invalid_argument for a limit of 0).
SearchResult search_request(const State &state, const SearchRequest &request, const Policy &policy,
                            const PolicyInputs &inputs, std::uint64_t state_limit);

} // namespace fhr

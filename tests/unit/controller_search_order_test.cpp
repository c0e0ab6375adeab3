// The search's walk of the tiered-LRU order (runtime/controller/src/search.cpp):
// the tiered-LRU policy is ranked as the search walks, with no list of
// candidates. Here it must decide exactly as the same policy ranked by
// its own order_candidates, the list every other policy is ranked by.
#include "runtime_support.hpp"

#include "fhr/controller/search.hpp"
#include "fhr/runtime/errors.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace fhr;
using namespace fhr::test;

namespace {

/// DeterministicTieredLRU ranked through its order_candidates.
class ListedTieredLru final : public Policy {
public:
  explicit ListedTieredLru(DeterministicTieredLRU::Tiers tiers) : lru_(std::move(tiers)) {}
  std::string name() const override { return lru_.name(); }
  nlohmann::ordered_json config_identity() const override { return lru_.config_identity(); }
  std::vector<Location> fallback_locations(Location at) const override { return lru_.fallback_locations(at); }
  std::vector<EvictionCandidate> order_candidates(std::vector<EvictionCandidate> c) const override {
    return lru_.order_candidates(std::move(c));
  }

private:
  DeterministicTieredLRU lru_;
};

/// A search's whole outcome as text: its plan, the ranks, or its error.
std::string outcome(const State &state, const SearchRequest &request, const Policy &policy,
                    const PolicyInputs &inputs) {
  try {
    const SearchResult result = search_request(state, request, policy, inputs, 2000);
    std::string out = "states " + std::to_string(result.explored_states) + ";";
    for (const PlannedEviction &e : result.evictions)
      out += " " + std::string(action_keyword(e.action.kind)) + " " + std::to_string(e.action.value) + " " +
             e.action.location.name() + (e.action.from ? " from " + e.action.from->name() : "") + " rank " +
             std::to_string(e.rank) + ";";
    for (const Action &a : result.enter)
      out += " enter " + std::string(action_keyword(a.kind)) + " " + std::to_string(a.value) + ";";
    return out;
  } catch (const ResidencySearchLimitError &e) {
    return std::string("limit: ") + e.what();
  } catch (const ResidencyPlanError &e) {
    return std::string("infeasible: ") + e.what();
  }
}

} // namespace

TEST_CASE("search: the walk of the tiered-LRU order decides as the policy's own ordered list") {
  constexpr std::uint64_t kUnit = 100;
  constexpr ValueId kValues = 24;
  // With pageable memory as a last tier every victim has a way out; with
  // pinned memory alone the search passes over victims that have none.
  const DeterministicTieredLRU::Tiers open = {{gpu0, {pinned, pageable}}, {pinned, {pageable}}},
                                      narrow = {{gpu0, {pinned}}};
  const DeterministicTieredLRU walked_open(open), walked_narrow(narrow);
  const ListedTieredLru listed_open(open), listed_narrow(narrow);
  std::mt19937 rng(20261205);
  int planned = 0, refused = 0, searched_deeper = 0;
  for (int trial = 0; trial < 400; ++trial) {
    CAPTURE(trial);
    State state(DeviceConfig{true, 1});
    state.set_budget(gpu0, (6 + rng() % 10) * kUnit);
    state.set_budget(pinned, (4 + rng() % 10) * kUnit);
    for (ValueId v = 0; v < kValues; ++v) {
      const std::uint64_t size = (1 + rng() % 3) * kUnit;
      const ReplicaMode mode = rng() % 2 ? ReplicaMode::Replicable : ReplicaMode::Exclusive;
      if (rng() % 2)
        REQUIRE_FALSE(
            state.register_source(v, ValueSpec{size, size, mode, Recoverability::Reconstructible}, pageable)
                .failed());
      else
        REQUIRE_FALSE(
            state.adopt(v, ValueSpec{size, size, mode, Recoverability::MustPreserve}, pageable).failed());
    }
    // Fill the budgeted locations as far as they go.
    for (int i = 0; i < 40; ++i) {
      const Location at = rng() % 3 ? gpu0 : pinned;
      state.apply(Action{rng() % 2 ? ActionKind::Ensure : ActionKind::Move,
                         static_cast<ValueId>(rng() % kValues), at, std::nullopt});
    }
    // Priorities, access epochs (0: never) and stable keys that tie often.
    std::vector<PolicyMetadata> metadata(kValues);
    std::vector<std::uint64_t> last_access(kValues);
    for (ValueId v = 0; v < kValues; ++v) {
      metadata[v].priority = static_cast<std::int64_t>(rng() % 3) - 1;
      if (rng() % 3 == 0) metadata[v].stable_key = "k" + std::to_string(v * 7 % 11) + "-" + std::to_string(v);
      last_access[v] = rng() % 4;
    }
    const std::vector<std::uint32_t> tie_order = tiered_lru_tie_order(metadata);
    const PolicyInputs inputs{1, metadata, last_access, tie_order};
    std::vector<std::pair<ValueId, Location>> requirements;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
      const ValueId v = static_cast<ValueId>(rng() % kValues);
      const Location at = rng() % 4 ? gpu0 : pinned;
      bool named = false;
      for (const auto &[value, location] : requirements)
        named = named || value == v;
      if (!named) requirements.emplace_back(v, at);
    }
    std::vector<Reservation> reservations;
    if (rng() % 3 == 0) reservations.push_back(Reservation{gpu0, (rng() % 3) * kUnit, "workspace"});
    const SearchRequest request{"r", requirements, reservations};
    const bool narrowed = trial % 2 == 1;
    const std::string by_walk = outcome(state, request, narrowed ? walked_narrow : walked_open, inputs);
    CHECK(by_walk == outcome(state, request, narrowed ? listed_narrow : listed_open, inputs));
    planned += by_walk.starts_with("states");
    refused += by_walk.starts_with("infeasible");
    searched_deeper +=
        by_walk.find("rank 1") != std::string::npos || by_walk.find("rank 2") != std::string::npos;
  }
  // The trials reach every kind of outcome, and victims past the first.
  CHECK(planned > 100);
  CHECK(refused > 10);
  CHECK(searched_deeper > 10);
}

TEST_CASE("search: a level walks past its first few victims into the sorted order") {
  // Nine values on cuda:0, its spill tier pinned memory full: the eight
  // adopted ones (the earliest keys) have no way out, the ninth has a
  // source and is dropped. The level passes over eight victims, the last
  // four from the search's sorted order, and drops the ninth at rank 8;
  // a tie_order that is no permutation (all zero) still orders every value.
  constexpr std::uint64_t kUnit = 100;
  State state(DeviceConfig{true, 1});
  state.set_budget(gpu0, 9 * kUnit);
  state.set_budget(pinned, kUnit);
  const ValueSpec kept{kUnit, kUnit, ReplicaMode::Exclusive, Recoverability::MustPreserve};
  for (ValueId v = 0; v < 8; ++v)
    REQUIRE_FALSE(state.adopt(v, kept, gpu0).failed());
  REQUIRE_FALSE(state
                    .register_source(
                        8, {kUnit, kUnit, ReplicaMode::Replicable, Recoverability::Reconstructible}, pageable)
                    .failed());
  REQUIRE_FALSE(state.apply(Action{ActionKind::Ensure, 8, gpu0, std::nullopt}).failed());
  REQUIRE_FALSE(state.adopt(9, kept, pinned).failed());
  REQUIRE_FALSE(state.adopt(10, kept, pageable).failed());
  const std::vector<std::pair<ValueId, Location>> requirements = {{10, gpu0}};
  const SearchRequest request{"r", requirements, {}};
  const DeterministicTieredLRU walked({{gpu0, {pinned}}});
  const ListedTieredLru listed({{gpu0, {pinned}}});
  // The eight never accessed, value 8 lately: under the all-zero
  // tie_order the eight keys differ only in their value.
  std::vector<std::uint64_t> last_access(11, 0);
  last_access[8] = 30;
  const std::vector<PolicyMetadata> metadata(11);
  const std::vector<std::uint32_t> no_permutation(11, 0);
  for (const std::vector<std::uint32_t> &tie_order : {std::vector<std::uint32_t>{}, no_permutation}) {
    const PolicyInputs inputs{1, metadata, last_access, tie_order};
    const std::string by_walk = outcome(state, request, walked, inputs);
    CHECK(by_walk == outcome(state, request, listed, inputs));
    CHECK(by_walk.find(" drop 8 cuda:0 rank 8; enter move 10;") != std::string::npos);
  }
}

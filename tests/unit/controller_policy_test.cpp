// Requests (§18.1) and the tiered-LRU policy (§18.2).
#include "controller_support.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

namespace {

EvictionCandidate candidate(std::uint64_t index, std::int64_t priority, std::optional<std::uint64_t> epoch,
                            std::optional<std::string> key) {
  EvictionCandidate c;
  c.handle = Handle{1, index + 1};
  c.location = gpu0;
  c.charged_nbytes = 100;
  c.registration_index = index;
  c.last_access_epoch = epoch;
  c.metadata = PolicyMetadata{priority, std::move(key)};
  return c;
}

std::vector<std::uint64_t> order_of(const std::vector<EvictionCandidate> &ordered) {
  std::vector<std::uint64_t> out;
  for (const EvictionCandidate &c : ordered)
    out.push_back(c.registration_index);
  return out;
}

} // namespace

TEST_CASE("request: a name, at least one requirement, each (handle, location) once") {
  const Handle a{1, 1}, b{1, 2};
  CHECK_THROWS_AS(Request(" ", {{a, gpu0}}), std::invalid_argument);
  CHECK_THROWS_AS(Request("r", {}), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Request("r", {{a, gpu0}, {b, gpu0}, {a, gpu0}}),
                       "residency request 'r' names value 1 at cuda:0 twice", std::invalid_argument);
  CHECK_THROWS_AS(Request("r", {{a, gpu0}}, {{gpu0, 10, "  "}}), std::invalid_argument);
  // The same handle at two locations is a request; the replica mode decides later.
  const Request r("r", {{a, gpu0}, {a, gpu1}, {b, gpu0}}, {{gpu0, 10, "workspace"}});
  CHECK(r.name() == "r");
  CHECK(r.requirements().size() == 3);
  CHECK(r.reservations().at(0).nbytes == 10);
}

TEST_CASE("tiered LRU: tiers are checked, named by location and never inferred") {
  CHECK_THROWS_WITH_AS(DeterministicTieredLRU({{gpu0, {pinned, gpu0}}}),
                       "the fallback tiers of cuda:0 cannot include cuda:0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DeterministicTieredLRU({{gpu0, {pinned, pinned}}}),
                       "the fallback tiers of cuda:0 list pinned twice", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DeterministicTieredLRU({{gpu0, {pinned}}, {gpu0, {pageable}}}),
                       "fallback tiers list cuda:0 twice", std::invalid_argument);
  const DeterministicTieredLRU policy({{gpu0, {pinned, pageable}}, {pinned, {pageable}}});
  CHECK(policy.name() == "deterministic-tiered-lru");
  CHECK(policy.config_identity().dump() ==
        R"([["fallback_tiers",[["cuda:0",["pinned","pageable"]],["pinned",["pageable"]]]]])");
  CHECK(policy.fallback_locations(gpu0) == std::vector<Location>{pinned, pageable});
  CHECK(policy.fallback_locations(gpu1).empty());
  CHECK(DeterministicTieredLRU().config_identity().dump() == R"([["fallback_tiers",[]]])");
}

TEST_CASE("tiered LRU: priority, then access (never = -1), then keyed first, key text, registration") {
  const DeterministicTieredLRU policy;
  // Priority dominates everything else.
  CHECK(order_of(policy.order_candidates({candidate(0, 2, std::nullopt, std::nullopt),
                                          candidate(1, -1, 50, "z"), candidate(2, 0, 1, std::nullopt)})) ==
        std::vector<std::uint64_t>{1, 2, 0});
  // Never accessed sorts before epoch 1; older epochs first.
  CHECK(order_of(policy.order_candidates({candidate(0, 0, 3, std::nullopt), candidate(1, 0, 1, std::nullopt),
                                          candidate(2, 0, std::nullopt, std::nullopt)})) ==
        std::vector<std::uint64_t>{2, 1, 0});
  // Equal priority and epoch: candidates with a stable key first, by key text, then registration order.
  CHECK(order_of(policy.order_candidates({candidate(0, 0, 4, std::nullopt), candidate(1, 0, 4, "b"),
                                          candidate(2, 0, 4, "a"), candidate(3, 0, 4, std::nullopt)})) ==
        std::vector<std::uint64_t>{2, 1, 0, 3});
  // The comparison is the one the controller's lazy ranking uses.
  CHECK(tiered_lru_less(candidate(5, 0, std::nullopt, std::nullopt), candidate(1, 0, 1, std::nullopt)));
  CHECK_FALSE(tiered_lru_less(candidate(1, 0, 1, std::nullopt), candidate(1, 0, 1, std::nullopt)));
  CHECK(policy.orders_by_tiered_lru_key());
}

TEST_CASE("controller: a positive search limit and a named policy; metadata for live handles only") {
  ControllerFixture f;
  CHECK_THROWS_AS(Controller(*f.manager, nullptr, 0), std::invalid_argument);
  Controller controller(*f.manager);
  CHECK(controller.policy().name() == "deterministic-tiered-lru");
  CHECK(controller.search_state_limit() == 100000);
  const Handle a = f.source(100), b = f.source(100);
  controller.set_policy_metadata(a, 3, "key-a");
  controller.set_policy_metadata(a, 4, "key-a"); // the same handle may keep its key
  CHECK_THROWS_WITH_AS(controller.set_policy_metadata(b, 0, "key-a"),
                       "stable_key 'key-a' already belongs to handle 1", std::invalid_argument);
  CHECK_THROWS_AS(controller.set_policy_metadata(b, 0, " "), std::invalid_argument);
  CHECK_THROWS_AS(controller.set_policy_metadata(Handle{f.manager->id() + 1, 1}), ResidencyHandleError);
  CHECK_THROWS_AS(controller.set_policy_metadata(Handle{f.manager->id(), 9}), ResidencyHandleError);
  f.manager->discard(b);
  CHECK_THROWS_AS(controller.set_policy_metadata(b), ResidencyHandleError);
  f.manager->close();
  CHECK_THROWS_AS(controller.set_policy_metadata(a), ResidencyClosedError);
}

// Controller::scope and Controller::use (§18.3): decisions commit only at
// the state they were made for, uses lease what they required, record the
// access epochs the policy ranks by, and leave the values cached.
#include "controller_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace fhr;
using namespace fhr::test;

TEST_CASE("scope: a decision commits at its state version and goes stale after any change") {
  ControllerFixture f({{gpu0, 200}});
  const Handle k1 = f.source(100), k2 = f.source(100), k3 = f.source(100);
  f.manager->ensure(k1, gpu0);
  f.manager->ensure(k2, gpu0);
  Controller controller(*f.manager);
  const Decision stale = controller.decide(need("s", {{k3, gpu0}}));
  f.manager->ensure(k1, pinned); // any change of state
  Scope scope = controller.scope(stale);
  try {
    scope.enter();
    FAIL("a stale decision must not enter");
  } catch (const ResidencyStaleStateError &e) {
    CHECK(e.expected_version() == stale.expected_state_version);
    CHECK(e.actual_version() == f.manager->state_version());
  }
  // Nothing of the stale plan ran, not even its reclaim.
  CHECK(f.manager->replicas(k1) == std::vector<Location>{gpu0, pinned});
  CHECK(f.manager->replicas(k2) == std::vector<Location>{gpu0});
  const Decision fresh = controller.decide(need("s", {{k3, gpu0}}));
  Scope commit = controller.scope(fresh);
  commit.enter();
  commit.close();
  CHECK(f.manager->replicas(k1) == std::vector<Location>{pinned});
  CHECK(f.manager->replicas(k3) == std::vector<Location>{gpu0});
  REQUIRE(commit.report());
  CHECK(commit.report()->transitions.size() == 2);
}

TEST_CASE("scope: only decisions of this manager and this policy configuration") {
  ControllerFixture f, other;
  const Handle k = f.source(100);
  other.source(100);
  Controller controller(*f.manager), elsewhere(*other.manager);
  Controller tiered(
      *f.manager, std::make_shared<DeterministicTieredLRU>(DeterministicTieredLRU::Tiers{{gpu0, {pinned}}}));
  const Decision d = controller.decide(need("s", {{k, gpu0}}));
  CHECK_THROWS_AS(elsewhere.scope(d), ResidencyHandleError);
  CHECK_THROWS_AS(tiered.scope(d), ResidencyPlanError);
  Controller same(*f.manager); // another controller with the same policy may commit it
  Scope scope = same.scope(d);
  scope.enter();
  scope.close();
  CHECK(f.manager->replicas(k) == std::vector<Location>{gpu0});
}

TEST_CASE("use: decides, commits, leases by location, records the access, keeps the values cached") {
  ControllerFixture f({{gpu0, 300}});
  const Handle k = f.source(100), w = f.adopt(100, pageable, ReplicaMode::Replicable);
  Controller controller(*f.manager);
  const Stream stream = f.backend->create_stream(gpu0);
  Use use = controller.use(need("u", {{k, gpu0}, {w, pageable}, {w, gpu0}}, {{gpu0, 50, "workspace"}}),
                           {{gpu0, stream}});
  CHECK_THROWS_AS(use.decision(), std::logic_error);
  CHECK_THROWS_AS(use.value(k, gpu0), std::logic_error);
  CHECK_THROWS_AS(use.close(), std::logic_error);
  use.enter();
  CHECK(actions_text(use.decision().plan.enter) == "ensure #1 at cuda:0; ensure #2 at cuda:0");
  const std::span<const std::byte> bytes = use.value(k, gpu0);
  CHECK(bytes.size() == 100);
  CHECK(checksum_of(bytes) == f.manager->content_checksum(k, gpu0));
  CHECK(use.value(w, pageable).size() == 100);
  CHECK_THROWS_AS(use.value(k, pageable), std::out_of_range);
  const Snapshot during = f.manager->snapshot();
  CHECK(during.reservations.size() == 1);
  CHECK(during.locations[0].use_count == 2); // one lease at cuda:0 for k and w
  CHECK(controller.last_access_epoch(k) == 1);
  CHECK(controller.last_access_epoch(w) == 1);
  CHECK_THROWS_AS(use.enter(), std::logic_error);
  use.close();
  use.close(); // idempotent
  CHECK_THROWS_AS(use.value(k, gpu0), std::logic_error);
  CHECK(use.decision().request.name() == "u"); // the decision stays readable
  REQUIRE(use.report());
  CHECK(use.report()->transitions.size() == 2);
  const Snapshot after = f.manager->snapshot();
  CHECK(after.reservations.empty());
  CHECK(after.locations[0].use_count == 0);
  CHECK(after.locations[0].used_bytes == 200); // cached, no exit actions
  // The next use needs no transition.
  Use again = controller.use(need("u", {{k, gpu0}}), {{gpu0, stream}});
  again.enter();
  CHECK(again.decision().plan.enter.empty());
  again.close();
  CHECK(controller.last_access_epoch(k) == 2);
  CHECK(controller.last_access_epoch(w) == 1);
}

TEST_CASE("use: consumer streams must name exactly the CUDA locations, before anything is decided") {
  ControllerFixture f;
  const Handle k = f.source(100);
  Controller controller(*f.manager);
  const Stream s0 = f.backend->create_stream(gpu0), s1 = f.backend->create_stream(gpu1);
  const std::uint64_t version = f.manager->state_version();
  CHECK_THROWS_WITH_AS(
      controller.use(need("u", {{k, gpu0}})),
      "the consumer streams of use 'u' must cover exactly its CUDA locations (missing: cuda:0; "
      "unexpected: none)",
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      controller.use(need("u", {{k, gpu0}}), {{gpu0, s0}, {gpu1, s1}}),
      "the consumer streams of use 'u' must cover exactly its CUDA locations (missing: none; "
      "unexpected: cuda:1)",
      std::invalid_argument);
  CHECK_THROWS_AS(controller.use(need("u", {{k, pinned}}), {{pinned, s0}}), std::invalid_argument);
  CHECK_THROWS_AS(controller.use(need("u", {{k, gpu0}}), {{gpu0, Stream{}}}), std::invalid_argument);
  CHECK_THROWS_AS(controller.use(need("u", {{k, gpu0}}), {{gpu0, s0}, {gpu0, s0}}), std::invalid_argument);
  CHECK(f.manager->state_version() == version);
}

TEST_CASE("use: a lease that cannot be taken unwinds the entry; the scope closes, nothing stays protected") {
  ControllerFixture f({{gpu0, 300}});
  const Handle k = f.source(100);
  Controller controller(*f.manager);
  const Stream wrong_device = f.backend->create_stream(gpu1);
  Use use = controller.use(need("u", {{k, gpu0}}, {{gpu0, 50, "workspace"}}), {{gpu0, wrong_device}});
  CHECK_THROWS_AS(use.enter(), std::invalid_argument);
  CHECK(actions_text(use.decision().plan.enter) == "ensure #1 at cuda:0");
  REQUIRE(use.report()); // the scope closed normally
  const Snapshot s = f.manager->snapshot();
  CHECK(s.reservations.empty());
  CHECK(s.locations[0].use_count == 0);
  CHECK(f.manager->replicas(k) == std::vector<Location>{gpu0}); // committed transitions stay
  CHECK(controller.last_access_epoch(k) == 0);                  // no access recorded
  CHECK_THROWS_AS(use.enter(), std::logic_error);
  use.close(); // a consumed use closes as a no-op
}

TEST_CASE("use: a failed decision consumes the use; run closes after a throwing body") {
  ControllerFixture f({{gpu0, 100}});
  const Handle big = f.source(200), k = f.source(100);
  Controller controller(*f.manager);
  const Stream s0 = f.backend->create_stream(gpu0);
  Use refused = controller.use(need("u", {{big, gpu0}}), {{gpu0, s0}});
  CHECK_THROWS_AS(refused.enter(), ResidencyPlanError);
  CHECK_THROWS_AS(refused.decision(), std::logic_error);
  Use use = controller.use(need("u", {{k, gpu0}}), {{gpu0, s0}});
  CHECK_THROWS_AS(use.run([&] {
    CHECK(use.value(k, gpu0).size() == 100);
    throw std::runtime_error("body failed");
  }),
                  std::runtime_error);
  CHECK_THROWS_AS(use.value(k, gpu0), std::logic_error);
  CHECK(f.manager->snapshot().locations[0].use_count == 0);
}

TEST_CASE("use: access epochs order the next eviction (least recently used first)") {
  ControllerFixture f({{gpu0, 200}});
  const Handle a = f.source(100), b = f.source(100), c = f.source(100);
  Controller controller(*f.manager);
  const Stream s0 = f.backend->create_stream(gpu0);
  for (const Handle &h : {b, a}) { // b first: b is the older one
    Use use = controller.use(need("u", {{h, gpu0}}), {{gpu0, s0}});
    use.enter();
    use.close();
  }
  CHECK(controller.last_access_epoch(b) == 1);
  CHECK(controller.last_access_epoch(a) == 2);
  Use use = controller.use(need("u", {{c, gpu0}}), {{gpu0, s0}});
  use.enter();
  CHECK(actions_text(use.decision().plan.reclaim) == "drop #2 at cuda:0");
  use.close();
  CHECK(f.manager->replicas(a) == std::vector<Location>{gpu0});
  CHECK(f.manager->replicas(b).empty());
}

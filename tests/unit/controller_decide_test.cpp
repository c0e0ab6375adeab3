// Controller::decide (§18.3 steps 1–6): every rule of the search, with the
// exact plan, evictions, ranks, bytes, explored states and errors.
#include "controller_support.hpp"

#include <doctest/doctest.h>

#include <pthread.h>

#include <functional>

using namespace fhr;
using namespace fhr::test;

namespace {

using Tiers = DeterministicTieredLRU::Tiers;

std::shared_ptr<const Policy> tiers(Tiers t) {
  return std::make_shared<DeterministicTieredLRU>(std::move(t));
}

std::uint64_t predicted_peak(const Explanation &e, Location at) {
  for (const LocationPrediction &p : e.locations)
    if (p.location == at) return p.peak_charged;
  return 0;
}

std::string message_of(const std::function<void()> &call) {
  try {
    call();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "no error";
}

/// Evicts larger values first and spills cuda:0 to pinned.
class LargestFirst final : public Policy {
public:
  std::string name() const override { return "largest-first"; }
  nlohmann::ordered_json config_identity() const override {
    return nlohmann::ordered_json::array({nlohmann::ordered_json::array({"order", "largest"})});
  }
  std::vector<Location> fallback_locations(Location at) const override {
    return at == gpu0 ? std::vector<Location>{pinned} : std::vector<Location>{};
  }
  std::vector<EvictionCandidate> order_candidates(std::vector<EvictionCandidate> c) const override {
    std::stable_sort(c.begin(), c.end(),
                     [](const auto &a, const auto &b) { return a.charged_nbytes > b.charged_nbytes; });
    return c;
  }
};

/// Loses candidates: the controller must refuse its order.
class Broken final : public Policy {
public:
  std::string name() const override { return "broken"; }
  nlohmann::ordered_json config_identity() const override { return nlohmann::ordered_json::array(); }
  std::vector<Location> fallback_locations(Location) const override { return {}; }
  std::vector<EvictionCandidate> order_candidates(std::vector<EvictionCandidate> c) const override {
    c.resize(1);
    return c;
  }
};

} // namespace

TEST_CASE("decide: a request that fits needs no reclaim and changes nothing") {
  ControllerFixture f({{gpu0, 300}});
  const Handle k1 = f.source(100), k2 = f.source(100);
  Controller controller(*f.manager);
  const std::uint64_t version = f.manager->state_version();
  const Decision d = controller.decide(need("step", {{k1, gpu0}, {k2, gpu0}}));
  CHECK(d.plan.name == "step");
  CHECK(d.plan.reclaim.empty());
  CHECK(d.plan.exit.empty());
  CHECK(actions_text(d.plan.enter) == "ensure #1 at cuda:0; ensure #2 at cuda:0");
  CHECK(d.evictions.empty());
  CHECK(d.explored_states == 1);
  CHECK(d.manager_id == f.manager->id());
  CHECK(d.expected_state_version == version);
  CHECK(d.policy_name == "deterministic-tiered-lru");
  CHECK(d.policy_config.dump() == R"([["fallback_tiers",[]]])");
  CHECK(d.explanation.feasible);
  CHECK(d.explanation.steps.size() == 2);
  CHECK(predicted_peak(d.explanation, gpu0) == 200);
  // Deciding never loads, moves or registers anything.
  CHECK(f.manager->state_version() == version);
  CHECK(f.manager->replicas(k1).empty());
  CHECK(f.loads() == 0);
  CHECK(f.manager->trace().empty());
}

TEST_CASE("decide: no location takes more than 4 EiB, budgeted or not") {
  // Found by fuzz_workload: values of 5.3 EB on an unbudgeted device
  // overflowed the search's accounting. Three of 2 EiB fit in pinned
  // memory two at a time; the search finds no room for the third (its only
  // candidates are required there) and says what it found.
  ControllerFixture f;
  const std::uint64_t two_eib = kMaxChargedBytes / 2;
  const Handle a = f.source(two_eib), b = f.source(two_eib), c = f.source(two_eib);
  Controller controller(*f.manager);
  CHECK(actions_text(controller.decide(need("two", {{a, pinned}, {b, pinned}})).plan.enter) ==
        "ensure #1 at pinned; ensure #2 at pinned");
  const std::string message = message_of([&] {
    controller.decide(need("three", {{a, pinned}, {b, pinned}, {c, pinned}}));
  });
  CHECK(message.find(
            "pinned cannot admit 2305843009213693952 bytes for materializing value 3 at pinned (budget "
            "4611686018427387904, used 0, reserved 0)") != std::string::npos);
}

TEST_CASE("decide: EXCLUSIVE values move (from their replica, or loaded), resident ones are skipped") {
  ControllerFixture f;
  const Handle ct = f.adopt(100, pinned);
  const Handle relin = f.source(100, pageable, ReplicaMode::Exclusive);
  const Handle w = f.adopt(100, gpu0, ReplicaMode::Replicable);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("s", {{ct, gpu0}, {relin, gpu0}, {w, gpu0}}));
  CHECK(actions_text(d.plan.enter) == "move #1 to cuda:0 from pinned; move #2 to cuda:0");
  controller.scope(d).enter();
  CHECK(f.manager->replicas(ct) == std::vector<Location>{gpu0});
  CHECK(f.manager->replicas(relin) == std::vector<Location>{gpu0});
}

TEST_CASE("decide: victims in policy order (priority, access, stable key, registration)") {
  ControllerFixture f({{gpu0, 300}});
  const Handle k1 = f.source(100), k2 = f.source(100), k3 = f.source(100), k4 = f.source(100);
  for (const Handle &h : {k1, k2, k3})
    f.manager->ensure(h, gpu0);
  Controller controller(*f.manager);
  const Request next = need("next", {{k4, gpu0}});
  Decision d = controller.decide(next);
  CHECK(actions_text(d.plan.reclaim) == "drop #1 at cuda:0");
  CHECK(evictions_text(d.evictions) ==
        "drop #1 at cuda:0 [rank 0, 100 B from cuda:0: its registered source can rebuild the value]");
  CHECK(d.evictions[0].reason_kind == EvictionReason::SourceRebuilds);
  CHECK(actions_text(d.plan.enter) == "ensure #4 at cuda:0");
  CHECK(d.explored_states == 2);
  controller.set_policy_metadata(k1, 1);
  CHECK(actions_text(controller.decide(next).plan.reclaim) == "drop #2 at cuda:0");
  controller.set_policy_metadata(k3, -1);
  CHECK(actions_text(controller.decide(next).plan.reclaim) == "drop #3 at cuda:0");
  controller.set_policy_metadata(k2, -1, "b");
  controller.set_policy_metadata(k3, -1, "c");
  CHECK(actions_text(controller.decide(next).plan.reclaim) == "drop #2 at cuda:0");
}

TEST_CASE("decide: a replica with another copy elsewhere is only ever dropped") {
  ControllerFixture f({{gpu0, 200}});
  const Handle w = f.adopt(100, pageable, ReplicaMode::Replicable);
  f.manager->ensure(w, gpu0);
  f.adopt(100, gpu0);
  const Handle k = f.source(100);
  Controller controller(*f.manager, tiers({{gpu0, {pinned}}}));
  const Decision d = controller.decide(need("s", {{k, gpu0}}));
  CHECK(evictions_text(d.evictions) ==
        "drop #1 at cuda:0 [rank 0, 100 B from cuda:0: another replica keeps the value]");
  CHECK(d.evictions[0].reason_kind == EvictionReason::OtherReplica);
}

TEST_CASE("decide: a sole must-preserve replica moves to a fallback tier, made room for recursively") {
  ControllerFixture f({{gpu0, 200}, {pinned, 100}});
  const Handle ct1 = f.adopt(100, gpu0);
  f.adopt(100, gpu0);
  const Handle w = f.adopt(100, pageable, ReplicaMode::Replicable);
  f.manager->ensure(w, pinned);
  const Handle k = f.source(100);
  Controller controller(*f.manager, tiers({{gpu0, {pinned}}}));
  const Decision d = controller.decide(need("s", {{k, gpu0}}));
  CHECK(actions_text(d.plan.reclaim) == "drop #3 at pinned; move #1 to pinned from cuda:0");
  CHECK(evictions_text(d.evictions) ==
        "drop #3 at pinned [rank 0, 100 B from pinned: another replica keeps the value]; "
        "move #1 to pinned from cuda:0 [rank 0, 100 B from cuda:0: its only replica moves to pinned]");
  CHECK(d.evictions[1].reason_kind == EvictionReason::SoleReplicaMoved);
  CHECK(actions_text(d.plan.enter) == "ensure #4 at cuda:0");
  CHECK(d.explored_states == 3); // the request twice, room at pinned once
  CHECK(d.explanation.steps.size() == 3);
  CHECK(predicted_peak(d.explanation, pinned) == 100);
  Scope scope = controller.scope(d);
  scope.enter();
  scope.close();
  CHECK(f.manager->replicas(ct1) == std::vector<Location>{pinned});
  CHECK(f.manager->replicas(w) == std::vector<Location>{pageable});
  CHECK(f.manager->replicas(k) == std::vector<Location>{gpu0});
  CHECK(f.manager->account(gpu0).used_bytes == 200);
}

TEST_CASE("decide: victims without a drop or a tier make the request infeasible") {
  ControllerFixture f({{gpu0, 200}});
  f.adopt(100, gpu0);
  f.adopt(100, gpu0);
  const Handle k = f.source(100);
  Controller controller(*f.manager);
  const std::string message = message_of([&] { controller.decide(need("s", {{k, gpu0}})); });
  CHECK(message ==
        "Automatic residency request 's' is infeasible: cuda:0 cannot admit 100 bytes for materializing "
        "value 3 at "
        "cuda:0 (budget 200, used 200, reserved 0) and no invariant-valid victim sequence satisfies the "
        "whole request "
        "(value 1: no legal drop or fallback transition; value 2: no legal drop or fallback transition)");
  CHECK_THROWS_AS(controller.decide(need("s", {{k, gpu0}})), ResidencyPlanError);
}

TEST_CASE("decide: the first candidate without options is passed over for the next (backtracking)") {
  ControllerFixture f({{gpu0, 200}});
  f.adopt(100, gpu0);
  const Handle k1 = f.source(100), k2 = f.source(100);
  f.manager->ensure(k1, gpu0);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("s", {{k2, gpu0}}));
  CHECK(evictions_text(d.evictions) ==
        "drop #2 at cuda:0 [rank 1, 100 B from cuda:0: its registered source can rebuild the value]");
  CHECK(d.explored_states == 2);
}

TEST_CASE("decide: protected replicas (leases, holds, pending events) are never candidates") {
  ControllerFixture f({{gpu0, 200}});
  const Handle k1 = f.source(100), k2 = f.source(100), k3 = f.source(100);
  f.manager->ensure(k1, gpu0);
  f.manager->ensure(k2, gpu0);
  Controller controller(*f.manager);
  const Request request = need("s", {{k3, gpu0}});
  {
    Hold hold = f.manager->hold(std::vector<Handle>{k1}, gpu0);
    CHECK(actions_text(controller.decide(request).plan.reclaim) == "drop #2 at cuda:0");
    Hold both = f.manager->hold(std::vector<Handle>{k2}, gpu0);
    CHECK(message_of([&] { controller.decide(request); }) ==
          "Automatic residency request 's' is infeasible: cuda:0 cannot admit 100 bytes for materializing "
          "value 3 "
          "at cuda:0 (budget 200, used 200, reserved 0) and no invariant-valid victim sequence satisfies the "
          "whole "
          "request");
    both.release();
    hold.release();
  }
  // A released CUDA lease protects until its consumer's work completes.
  const Stream stream = f.backend->create_stream(gpu0);
  Lease lease = f.manager->acquire(std::vector<Handle>{k1}, gpu0, stream);
  f.backend->launch(stream);
  lease.release();
  CHECK(actions_text(controller.decide(request).plan.reclaim) == "drop #2 at cuda:0");
  f.backend->finish(stream);
  CHECK(actions_text(controller.decide(request).plan.reclaim) == "drop #1 at cuda:0");
}

TEST_CASE("decide: replicas the request needs are ranked after every other candidate") {
  ControllerFixture f({{gpu0, 200}});
  const Handle k1 = f.source(100), k2 = f.source(100), k3 = f.source(100);
  f.manager->ensure(k1, gpu0);
  f.manager->ensure(k2, gpu0);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("s", {{k1, gpu0}, {k3, gpu0}}));
  CHECK(evictions_text(d.evictions) ==
        "drop #2 at cuda:0 [rank 0, 100 B from cuda:0: its registered source can rebuild the value]");
  CHECK(actions_text(d.plan.enter) == "ensure #3 at cuda:0");
}

TEST_CASE("decide: an exhausted search is infeasible, and the state limit makes it inconclusive") {
  ControllerFixture f({{gpu0, 200}});
  const Handle k1 = f.source(100), k2 = f.source(100), k3 = f.source(100);
  f.manager->ensure(k1, gpu0);
  f.manager->ensure(k2, gpu0);
  // 300 bytes of requirements in 200: explored {k1,k2}, {k2}, {}, {k1}; the
  // second way to {} is remembered as exhausted and not counted.
  const Request all = need("all", {{k1, gpu0}, {k2, gpu0}, {k3, gpu0}});
  Controller exhaustive(*f.manager, nullptr, 4);
  CHECK_THROWS_AS(exhaustive.decide(all), ResidencyPlanError);
  try {
    exhaustive.decide(all);
  } catch (const ResidencySearchLimitError &) {
    FAIL("four states suffice to exhaust the search");
  } catch (const ResidencyPlanError &) {
  }
  for (std::uint64_t limit : {2u, 3u}) {
    Controller limited(*f.manager, nullptr, limit);
    try {
      limited.decide(all);
      FAIL("the search must stop at its limit");
    } catch (const ResidencySearchLimitError &e) {
      CHECK(e.request_name() == "all");
      CHECK(e.state_limit() == limit);
      CHECK(e.explored_states() == limit);
      CHECK(e.detail() == "it was still looking for a plan for the whole request");
      CHECK(e.error_class() == ErrorClass::Plan);
    }
  }
  CHECK_THROWS_AS(Controller(*f.manager, nullptr, 1).decide(all),
                  ResidencyPlanError); // a SearchLimitError is one
}

TEST_CASE("decide: a sole replica moves to a location the request names for it") {
  ControllerFixture f({{gpu0, 100}, {gpu1, 100}});
  const Handle ct = f.adopt(100, gpu0);
  const Handle y = f.source(100);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("swap", {{y, gpu0}, {ct, gpu1}}));
  CHECK(evictions_text(d.evictions) ==
        "move #1 to cuda:1 from cuda:0 [rank 0, 100 B from cuda:0: its only replica moves to cuda:1]");
  CHECK(actions_text(d.plan.enter) == "ensure #2 at cuda:0");
}

TEST_CASE("decide: loading from a source charges the source location, once when it is the destination") {
  ControllerFixture f({{pinned, 100}});
  const Handle w = f.adopt(100, pageable, ReplicaMode::Replicable);
  f.manager->ensure(w, pinned);
  const Handle k = f.source(100, pinned);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("s", {{k, gpu0}}));
  CHECK(actions_text(d.plan.reclaim) == "drop #1 at pinned");
  CHECK(actions_text(d.plan.enter) == "ensure #2 at cuda:0");

  ControllerFixture g({{pinned, 100}});
  const Handle here = g.source(100, pinned);
  Controller other(*g.manager);
  const Decision e = other.decide(need("s", {{here, pinned}}));
  CHECK(e.plan.reclaim.empty());
  CHECK(actions_text(e.plan.enter) == "ensure #1 at pinned");
  CHECK(predicted_peak(e.explanation, pinned) == 100);
}

TEST_CASE("decide: reservations need room too, and the plan carries them") {
  ControllerFixture f({{gpu0, 200}});
  const Handle k1 = f.source(100), k2 = f.source(100);
  f.manager->ensure(k1, gpu0);
  f.manager->ensure(k2, gpu0);
  Controller controller(*f.manager);
  const Decision d = controller.decide(need("s", {{k1, gpu0}}, {{gpu0, 100, "workspace"}}));
  CHECK(actions_text(d.plan.reclaim) == "drop #2 at cuda:0");
  CHECK(d.plan.enter.empty());
  REQUIRE(d.plan.reservations.size() == 1);
  CHECK(d.plan.reservations[0].label == "workspace");
  CHECK(predicted_peak(d.explanation, gpu0) == 200);
  CHECK_THROWS_AS(controller.decide(need("s", {{k1, gpu0}}, {{gpu0, 300, "too big"}})), ResidencyPlanError);
}

TEST_CASE("decide: handle errors first, then EXCLUSIVE values at two locations") {
  ControllerFixture f;
  const Handle ct = f.adopt(100, pinned);
  const Handle w = f.adopt(100, pageable, ReplicaMode::Replicable);
  const Handle gone = f.source(100);
  f.manager->discard(gone);
  ControllerFixture other;
  const Handle foreign = other.source(100);
  Controller controller(*f.manager);
  CHECK_THROWS_AS(controller.decide(need("s", {{foreign, gpu0}})), ResidencyHandleError);
  CHECK_THROWS_AS(controller.decide(need("s", {{Handle{f.manager->id(), 99}, gpu0}})), ResidencyHandleError);
  CHECK_THROWS_WITH_AS(controller.decide(need("s", {{gone, gpu0}})),
                       "the request names handle 3, which has been discarded", ResidencyHandleError);
  CHECK_THROWS_AS(controller.decide(need("s", {{ct, gpu0}, {ct, gpu1}})), ResidencyOwnershipError);
  CHECK_THROWS_AS(controller.decide(need("s", {{ct, gpu0}, {ct, gpu1}, {gone, gpu0}})), ResidencyHandleError);
  CHECK(actions_text(controller.decide(need("s", {{w, gpu0}, {w, gpu1}})).plan.enter) ==
        "ensure #2 at cuda:0; ensure #2 at cuda:1");
  f.manager->close();
  CHECK_THROWS_AS(controller.decide(need("s", {{w, gpu0}})), ResidencyClosedError);
}

TEST_CASE("decide: a location the process lacks fails the explain check") {
  ControllerFixture f;
  const Handle k = f.source(100);
  Controller controller(*f.manager);
  CHECK_THROWS_AS(controller.decide(need("s", {{k, Location::cuda(5)}})), ResidencyPlanError);
}

TEST_CASE("decide: a user policy decides the order and the tiers; one that loses candidates is refused") {
  ControllerFixture f({{gpu0, 300}});
  const Handle a = f.source(100), b = f.source(200), c = f.source(200);
  f.manager->ensure(a, gpu0);
  f.manager->ensure(b, gpu0);
  const Request request = need("s", {{c, gpu0}});
  Controller lru(*f.manager);
  CHECK(evictions_text(lru.decide(request).evictions) ==
        "drop #1 at cuda:0 [rank 0, 100 B from cuda:0: its registered source can rebuild the value]; "
        "drop #2 at cuda:0 [rank 0, 200 B from cuda:0: its registered source can rebuild the value]");
  Controller largest(*f.manager, std::make_shared<LargestFirst>());
  const Decision d = largest.decide(request);
  CHECK(evictions_text(d.evictions) ==
        "drop #2 at cuda:0 [rank 0, 200 B from cuda:0: its registered source can rebuild the value]");
  CHECK(d.policy_name == "largest-first");
  CHECK(d.policy_config.dump() == R"([["order","largest"]])");
  Controller broken(*f.manager, std::make_shared<Broken>());
  CHECK_THROWS_WITH_AS(broken.decide(request),
                       "policy 'broken' must return every eviction candidate exactly once",
                       std::runtime_error);
}

namespace {

/// Runs `body` on a thread of `stack_bytes` of stack and waits for it.
void on_small_stack(std::size_t stack_bytes, const std::function<void()> &body) {
  pthread_attr_t attributes;
  REQUIRE(pthread_attr_init(&attributes) == 0);
  REQUIRE(pthread_attr_setstacksize(&attributes, stack_bytes) == 0);
  pthread_t thread;
  const auto run = [](void *argument) -> void * {
    (*static_cast<const std::function<void()> *>(argument))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attributes, run, const_cast<std::function<void()> *>(&body)) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

} // namespace

TEST_CASE("decide: a search nested as deep as its thread's stack allows stops, inconclusive") {
  // Each reclaim the search tries nests a level deeper: to fit one value
  // of 5,000 bytes it drops 5,000 values of one byte, one level each. On a
  // 4 MiB stack that is deeper than any build can go (it crashed at 3,000
  // to 3,500 levels of an 8 MiB stack, optimised); the search stops before
  // the stack's end with the search-limit error. A request that evicts 20
  // goes through on the same stack.
  constexpr std::size_t kSmall = 5000;
  ControllerFixture f({{gpu0, kSmall}});
  std::vector<Handle> small;
  for (std::size_t i = 0; i < kSmall; ++i) {
    small.push_back(f.source(1));
    f.manager->ensure(small.back(), gpu0);
  }
  const Handle big = f.source(kSmall), twenty = f.source(20);
  Controller controller(*f.manager);
  std::string outcome;
  std::uint64_t explored = 0;
  on_small_stack(std::size_t{4} << 20, [&] {
    try {
      controller.decide(need("big", {{big, gpu0}}));
      outcome = "decided";
    } catch (const ResidencySearchLimitError &e) {
      outcome = e.detail();
      explored = e.explored_states();
    } catch (const std::exception &e) {
      outcome = std::string("other error: ") + e.what();
    }
  });
  CHECK(outcome.starts_with("it nested reclaims as deep as its thread's stack allows ("));
  CHECK(explored > 20);
  CHECK(explored < kSmall);
  std::size_t evictions = 0;
  on_small_stack(std::size_t{4} << 20, [&] {
    try {
      evictions = controller.decide(need("twenty", {{twenty, gpu0}})).evictions.size();
    } catch (const std::exception &e) {
      outcome = std::string("other error: ") + e.what();
    }
  });
  CHECK(evictions == 20);
}

TEST_CASE("decide: room-making that leads back to its own state goes on to the next victim") {
  // From a review: x (50) and y (40) on cuda:0 (100), w (40) on pinned (80);
  // the request needs w and y on cuda:0. Making room at pinned for a value
  // leaving cuda:0 moves w to cuda:0, its requested destination, which
  // needs room there, which moves a value to pinned: the same room-making
  // state again, one level deeper, until the stack ran out (now: the
  // stack guard, inconclusive). Going round is cut, and the search goes on
  // to its first plan, depth first: a detour (y and w go round once) that
  // ends with x in pinned memory, y on cuda:0 and w in pageable memory, to
  // be moved to cuda:0 by the plan's enter.
  ControllerFixture f({{gpu0, 100}, {pinned, 80}});
  const Handle x = f.adopt(50, gpu0), y = f.adopt(40, gpu0), w = f.adopt(40, pinned);
  Controller controller(*f.manager, tiers({{gpu0, {pinned, pageable}}}));
  Decision decision = controller.decide(need("n", {{w, gpu0}, {y, gpu0}}));
  const std::vector<ActionSpec> &reclaim = decision.plan.reclaim;
  const std::vector<std::tuple<Handle, Location, Location>> expected = {
      {y, pinned, gpu0}, {w, gpu0, pinned}, {w, pageable, gpu0}, {y, gpu0, pinned}, {x, pinned, gpu0}};
  REQUIRE(reclaim.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(reclaim[i].kind == ActionKind::Move);
    CHECK(reclaim[i].handle.handle_id == std::get<0>(expected[i]).handle_id);
    CHECK(reclaim[i].location == std::get<1>(expected[i]));
    CHECK(reclaim[i].from == std::get<2>(expected[i]));
  }
  CHECK(decision.explanation.feasible);
}

// Overlap inside a plan (issue #5) on the simulated backend with copy
// engines: copies of independent actions of one phase are in flight together,
// the state still changes in plan order, and a failure anywhere leaves the
// exact partial report of what committed with nothing of the rest.
#include "simulated_fixture.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

namespace {

/// Three values: a ciphertext on device 0 (to evict), a key in pinned
/// memory (to prefetch to device 0) and one in pageable memory (to device 1).
struct Stage {
  Fixture f;
  Handle evicted, prefetched, other;
  std::vector<ActionSpec> actions;

  explicit Stage(bool overlap, std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets = {})
      : f(std::move(budgets), overlap) {
    evicted = f.adopt(64 * KiB, 1, gpu0, ReplicaMode::Exclusive);
    prefetched = f.adopt(64 * KiB, 2, pinned, ReplicaMode::Replicable);
    other = f.adopt(32 * KiB, 3, pageable, ReplicaMode::Replicable);
    actions = {ActionSpec{ActionKind::Move, evicted, pinned, std::nullopt},
               ActionSpec{ActionKind::Ensure, prefetched, gpu0, std::nullopt},
               ActionSpec{ActionKind::Ensure, other, gpu1, std::nullopt}};
  }

  ResidencyPlanExecutionError::Details failed_run() {
    try {
      f.manager->execute_actions(actions, "stage");
    } catch (const ResidencyPlanExecutionError &error) {
      return error.details();
    }
    FAIL("the plan did not fail");
    return {};
  }
};

/// What a report says, without its times.
std::vector<std::string> outline(const PlanReport &report) {
  std::vector<std::string> lines;
  for (const TransitionReport &t : report.transitions)
    lines.push_back(std::string(action_keyword(t.action)) + " #" + std::to_string(t.value) + " " +
                    (t.source ? t.source->name() : "-") + " -> " +
                    (t.destination ? t.destination->name() : "-") + (t.no_op ? " no-op" : ""));
  return lines;
}

} // namespace

TEST_CASE("overlap: independent actions copy together and commit in plan order, as sequentially") {
  Stage sequential(false), overlapped(true);
  const PlanReport expected = sequential.f.manager->execute_actions(sequential.actions, "stage");
  const PlanReport report = overlapped.f.manager->execute_actions(overlapped.actions, "stage");
  CHECK(outline(report) == outline(expected));
  CHECK(outline(report) == std::vector<std::string>{"move #0 cuda:0 -> pinned", "ensure #1 pinned -> cuda:0",
                                                    "ensure #2 pageable -> cuda:1"});
  CHECK(overlapped.f.backend->max_copies_in_flight() == 3);
  CHECK(sequential.f.backend->max_copies_in_flight() == 0);
  // Committed in plan order: each transition completes after the previous.
  for (std::size_t i = 1; i < report.transitions.size(); ++i)
    CHECK(report.transitions[i].completed_at_ns >= report.transitions[i - 1].completed_at_ns);
  for (Location l : {pageable, pinned, gpu0, gpu1}) {
    CAPTURE(l.name());
    CHECK(overlapped.f.manager->account(l).used_bytes == sequential.f.manager->account(l).used_bytes);
    CHECK(overlapped.f.manager->account(l).peak_charged_bytes ==
          sequential.f.manager->account(l).peak_charged_bytes);
  }
  for (Location l : {gpu0, gpu1}) // all allocated by the backend (the evicted value went)
    CHECK(overlapped.f.backend->allocated_bytes(l) == overlapped.f.manager->account(l).used_bytes);
  CHECK(overlapped.f.manager->trace().size() == 3);
  overlapped.f.check_invariants();
}

TEST_CASE("overlap: a copy that fails on completion leaves the exact partial report and undoes the rest") {
  Stage stage(true);
  stage.f.faults->fail_on(Op::CopyCompletion, 2); // the prefetch's copy
  const auto details = stage.failed_run();
  CHECK(details.failed_action_index == 1);
  CHECK(details.detail == "injected failure of copy completion 2");
  CHECK(details.cause == ErrorClass::None);
  CHECK(outline(details.partial_report) == std::vector<std::string>{"move #0 cuda:0 -> pinned"});
  CHECK(stage.f.backend->max_copies_in_flight() == 3); // the third copy had started
  // The eviction committed; the prefetch and the third action left no trace.
  CHECK(stage.f.manager->replicas(stage.evicted) == std::vector<Location>{pinned});
  CHECK(stage.f.manager->replicas(stage.prefetched) == std::vector<Location>{pinned});
  CHECK(stage.f.manager->replicas(stage.other) == std::vector<Location>{pageable});
  CHECK(stage.f.backend->allocated_bytes(gpu0) == 0);
  CHECK(stage.f.backend->allocated_bytes(gpu1) == 0);
  CHECK(stage.f.manager->account(gpu1).used_bytes == 0);
  CHECK(stage.f.manager->trace().size() == 1);
  stage.f.check_invariants();
}

TEST_CASE("overlap: a copy that cannot start stops the plan there; the copies before it commit") {
  Stage stage(true);
  stage.f.faults->fail_on(Op::Copy, 2);
  const auto details = stage.failed_run();
  CHECK(details.failed_action_index == 1);
  CHECK(details.detail == "injected failure of copy 2");
  CHECK(outline(details.partial_report) == std::vector<std::string>{"move #0 cuda:0 -> pinned"});
  CHECK(stage.f.faults->count(Op::Copy) == 2); // the third action never started
  CHECK(stage.f.backend->allocated_bytes(gpu0) == 0);
  stage.f.check_invariants();
}

TEST_CASE("overlap: an allocation that fails while copies are in flight is retried once they commit") {
  SUBCASE("not the first of its window: the plan completes") {
    Stage stage(true);
    stage.f.faults->fail_on(Op::Allocate, 2);
    const PlanReport report = stage.f.manager->execute_actions(stage.actions, "stage");
    CHECK(report.transitions.size() == 3);
    CHECK(stage.f.faults->count(Op::Allocate) == 4);     // three, and the one refused
    CHECK(stage.f.backend->max_copies_in_flight() == 2); // the retry opened a new window
    stage.f.check_invariants();
  }
  SUBCASE("the first of its window: the failure is its own") {
    Stage stage(true);
    stage.f.faults->fail_on(Op::Allocate, 1);
    const auto details = stage.failed_run();
    CHECK(details.failed_action_index == 0);
    CHECK(details.partial_report.transitions.empty());
    CHECK(stage.f.manager->replicas(stage.evicted) == std::vector<Location>{gpu0});
    stage.f.check_invariants();
  }
}

TEST_CASE("overlap: an action that fits only once an earlier one freed its source waits for it") {
  // Device 0 holds one 64 KiB value: the prefetch fits only after the
  // eviction, so the memory in use never exceeds the budget.
  Stage stage(true, {{gpu0, 64 * KiB}});
  stage.actions.pop_back();
  const PlanReport report = stage.f.manager->execute_actions(stage.actions, "stage");
  CHECK(outline(report) ==
        std::vector<std::string>{"move #0 cuda:0 -> pinned", "ensure #1 pinned -> cuda:0"});
  CHECK(stage.f.backend->max_copies_in_flight() == 1);
  CHECK(stage.f.manager->account(gpu0).peak_charged_bytes == 64 * KiB);
  stage.f.check_invariants();
}

TEST_CASE("overlap: dependent actions, no-ops, drops and loads run alone in plan order") {
  Stage stage(true);
  struct Key final : Source {
    void load(std::span<std::byte> out) override { fill_pattern(out, 9); }
  };
  const Handle key = stage.f.manager->register_source(
      ValueSpec{16 * KiB, 16 * KiB, ReplicaMode::Replicable, Recoverability::Reconstructible},
      std::make_shared<Key>());
  const std::vector<ActionSpec> actions = {
      ActionSpec{ActionKind::Ensure, stage.prefetched, gpu0, std::nullopt},
      ActionSpec{ActionKind::Move, stage.prefetched, gpu1, std::nullopt},   // same value: after the ensure
      ActionSpec{ActionKind::Ensure, stage.prefetched, gpu1, std::nullopt}, // a no-op
      ActionSpec{ActionKind::Ensure, key, gpu0, std::nullopt},              // a load
      ActionSpec{ActionKind::Drop, stage.other, pageable, std::nullopt},    // refused: the last replica
  };
  try {
    stage.f.manager->execute_actions(actions, "mixed");
    FAIL("the drop of the last replica must fail");
  } catch (const ResidencyPlanError &error) {
    CHECK(std::string(error.what()).find("at action 4") != std::string::npos); // preflight
  }
  const PlanReport report = stage.f.manager->execute_actions(std::span(actions).first(4), "mixed");
  CHECK(outline(report) == std::vector<std::string>{"ensure #1 pinned -> cuda:0", "move #1 pinned -> cuda:1",
                                                    "ensure #1 - -> cuda:1 no-op",
                                                    "ensure #3 pageable -> cuda:0"});
  CHECK(stage.f.backend->max_copies_in_flight() == 1);
  stage.f.check_invariants();
}

TEST_CASE("overlap: scope phases overlap too, and the option turns it off") {
  for (bool option : {true, false}) {
    CAPTURE(option);
    Fixture f({}, true);
    ManagerOptions options;
    options.backend = f.backend;
    options.overlap_transfers = option;
    Manager manager(std::move(options));
    std::vector<Handle> keys;
    for (unsigned i = 0; i < 4; ++i) {
      auto [data, release] = f.buffer(16 * KiB, i, pinned);
      keys.push_back(manager.adopt(data, 16 * KiB, pinned, std::move(release), ReplicaMode::Replicable));
    }
    PlanSpec plan;
    plan.name = "keys";
    for (unsigned i = 0; i < 4; ++i)
      plan.enter.push_back(ActionSpec{ActionKind::Ensure, keys[i], i % 2 ? gpu1 : gpu0, std::nullopt});
    for (unsigned i = 0; i < 4; ++i)
      plan.exit.push_back(ActionSpec{ActionKind::Drop, keys[i], i % 2 ? gpu1 : gpu0, std::nullopt});
    Scope scope = manager.scope(plan);
    scope.enter();
    CHECK(f.backend->max_copies_in_flight() == (option ? 4u : 0u));
    for (unsigned i = 0; i < 4; ++i)
      CHECK(manager.content_checksum(keys[i], i % 2 ? gpu1 : gpu0) ==
            manager.content_checksum(keys[i], pinned));
    scope.close();
    REQUIRE(scope.report());
    CHECK(scope.report()->transitions.size() == 8);
    // Each ensure's copy was issued inside its span (in a window too: after
    // its own allocation, before the window's next copy starts); a drop
    // issues none.
    for (std::size_t i = 0; i < 8; ++i) {
      const TransitionReport &t = scope.report()->transitions[i];
      CAPTURE(i);
      if (i < 4) {
        CHECK(t.copy_issued_at_ns >= t.started_at_ns);
        CHECK(t.copy_issued_at_ns <= t.completed_at_ns);
      } else {
        CHECK(t.copy_issued_at_ns == 0);
      }
    }
    CHECK(f.backend->allocated_bytes(gpu0) == 0);
  }
}

TEST_CASE("a lone ensure books its replica while the copy runs and returns once the bytes are there") {
  Fixture f({}, /*overlap=*/true), plain;
  const Handle h = f.adopt(64 * KiB, 7, pinned, ReplicaMode::Replicable);
  plain.manager->ensure(plain.adopt(64 * KiB, 7, pinned, ReplicaMode::Replicable), gpu0);
  const TransitionReport report = f.manager->ensure(h, gpu0);
  // The simulated engine copies the bytes only when the copy is finished:
  // had the manager returned before finishing, the replica would not match.
  CHECK(f.backend->max_copies_in_flight() == 1);
  CHECK(f.faults->count(Op::CopyCompletion) == 1);
  CHECK(report.destination == gpu0);
  CHECK(report.completed_at_ns >= report.started_at_ns);
  CHECK(f.manager->state_version() == plain.manager->state_version()); // booked as a synchronous copy is
  CHECK(f.manager->replicas(h) == std::vector<Location>{pinned, gpu0});
  CHECK(f.manager->account(gpu0).used_bytes == 64 * KiB);
  f.check_invariants();
  // A move, whose source goes after its copy, waits before it books.
  f.manager->move(h, gpu1, gpu0);
  CHECK(f.faults->count(Op::CopyCompletion) == 1);
  CHECK(f.manager->replicas(h) == std::vector<Location>{pinned, gpu1});
  f.check_invariants();
}

TEST_CASE("a lone ensure whose copy fails as it completes leaves the value where it was") {
  Fixture f({}, /*overlap=*/true);
  const Handle h = f.adopt(64 * KiB, 8, pinned, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu0); // cuda:0 registered: the version counts the transitions alone
  f.manager->drop(h, gpu0);
  const std::uint64_t before = f.manager->state_version();
  const std::size_t traced = f.manager->trace().size();
  f.faults->fail_on(Op::CopyCompletion, 1);
  try {
    f.manager->ensure(h, gpu0);
    FAIL("the ensure did not fail");
  } catch (const BackendError &error) {
    CHECK(std::string(error.what()) == "injected failure of copy completion 2");
  }
  CHECK(f.manager->replicas(h) == std::vector<Location>{pinned});
  CHECK(f.manager->account(gpu0).used_bytes == 0);
  CHECK(f.backend->allocated_bytes(gpu0) == 0);    // the destination's block went again
  CHECK(f.manager->trace().size() == traced);      // no report of a transition that failed
  CHECK(f.manager->state_version() == before + 2); // booked, then dropped again
  f.check_invariants();
  // The next ensure works.
  f.manager->ensure(h, gpu0);
  CHECK(f.manager->replicas(h) == std::vector<Location>{pinned, gpu0});
  f.check_invariants();
}

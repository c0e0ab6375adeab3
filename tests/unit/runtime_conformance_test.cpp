// Conformance with docs/semantics.md where testing against the reference
// found the runtime apart (issue #10): adopt's alias rule (§2.7), its sizes,
// inferred location and memory-kind check (§2.6, §3.1), the order of
// acquire's and hold's checks (§7.2, §16.1), exit_error on every path
// (§12.3), explain's rows (§10.3) and enum ranges (§2.1). Exact classes,
// messages, bytes and versions.
#include "simulated_fixture.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

using namespace fhr;
using namespace fhr::test;

namespace {

/// A heap buffer of `nbytes` with the pattern of `seed`.
std::byte *heap_pattern(std::size_t nbytes, unsigned seed) {
  auto *data = static_cast<std::byte *>(std::malloc(nbytes));
  fill_pattern({data, nbytes}, seed);
  return data;
}

/// A deleter that must never run (the buffer of a refused adopt stays with
/// its caller).
void never_freed(std::byte *) { FAIL("a refused buffer was freed"); }

/// A block of the manager's memory resource at `at`, with its release.
std::pair<std::byte *, Storage::Release> block_of(Manager &manager, Location at, std::size_t nbytes) {
  return manager.backend().memory->allocate(at, nbytes).detach();
}

template <typename Error, typename Call>
std::string message_of(Call call) {
  try {
    call();
  } catch (const Error &error) {
    return error.what();
  }
  FAIL("no error of the expected class");
  return {};
}

ValueSpec reconstructible(std::uint64_t nbytes) {
  return ValueSpec{nbytes, nbytes, ReplicaMode::Replicable, Recoverability::Reconstructible};
}

class ZeroSource final : public Source {
public:
  void load(std::span<std::byte> out) override { std::memset(out.data(), 0, out.size()); }
};

} // namespace

TEST_CASE("adopt: storage that overlaps a replica the manager owns is refused, nothing charged (§2.7)") {
  // The adopted block sits inside a larger heap block, so that buffers
  // reaching before it are real memory too.
  std::unique_ptr<std::byte, decltype(&std::free)> heap(heap_pattern(16 * KiB, 1), std::free);
  std::byte *a = heap.get() + 4 * KiB;
  ManagerOptions options;
  options.budgets = {{pinned, 12 * KiB}};
  Manager manager(std::move(options));
  const Handle h = manager.adopt(
      a, 8 * KiB, pageable, [](std::byte *) {}, ReplicaMode::Replicable);
  const std::uint64_t version = manager.state_version();
  const std::string expected =
      "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 at "
      "pageable";
  // A view inside the block, one that starts before it and ends inside, and
  // one that covers it: each would be freed twice.
  CHECK(message_of<ResidencyOwnershipError>([&] { manager.adopt(a + 1024, 1024, pageable, never_freed); }) ==
        expected);
  CHECK(message_of<ResidencyOwnershipError>(
            [&] { manager.adopt(a - 64, 128, 128, std::nullopt, never_freed); }) == expected);
  CHECK(message_of<ResidencyOwnershipError>(
            [&] { manager.adopt(a - 64, 64, 12 * KiB, std::nullopt, never_freed); }) == expected);
  CHECK_NOTHROW(manager.adopt(a - 64, 64, pageable, [](std::byte *) {}));  // beside it: its own bytes
  CHECK_NOTHROW(manager.adopt(a + 1024, 0, pageable, [](std::byte *) {})); // an empty buffer owns no bytes
  CHECK(manager.state_version() == version + 2);
  CHECK(manager.account(pageable).used_bytes == 8 * KiB + 64);

  // Manager-made replicas are indexed too: the bytes of a lease, adopted
  // back, would be freed twice.
  manager.ensure(h, pinned);
  const Handle handles[] = {h};
  std::byte *leased = nullptr;
  {
    Lease lease = manager.acquire(handles, pinned);
    leased = const_cast<std::byte *>(lease.value(h).data());
  }
  const std::uint64_t ensured = manager.state_version();
  CHECK(message_of<ResidencyOwnershipError>([&] { manager.adopt(leased, 2 * KiB, pinned, never_freed); }) ==
        "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 "
        "at pinned");
  CHECK(manager.state_version() == ensured);
  CHECK(manager.account(pinned).used_bytes == 8 * KiB);
  // The budget is checked before the alias (§16.1): 8 + 8 KiB exceed 12.
  CHECK_THROWS_AS(manager.adopt(leased, 8 * KiB, pinned, never_freed), ResidencyBudgetError);
  // Once the replica goes, its block is no longer indexed: the pinned
  // pool hands the same block out again, and it may be adopted.
  manager.drop(h, pinned);
  auto [again, release] = block_of(manager, pinned, 8 * KiB);
  CHECK(again == leased);
  const Handle reused = manager.adopt(again, 8 * KiB, pinned, release);
  CHECK(manager.replicas(reused) == std::vector<Location>{pinned});
}

TEST_CASE("adopt: device replicas are indexed apart from host ones, and both are checked (§2.7)") {
  Fixture f;
  Manager &manager = *f.manager;
  const Handle h = f.adopt(8 * KiB, 1, pageable, ReplicaMode::Replicable);
  const Handle other = f.adopt(4 * KiB, 2, pinned, ReplicaMode::Replicable);
  manager.ensure(h, gpu0);
  manager.ensure(other, gpu1);
  const Handle handles[] = {h};
  std::byte *on_device = nullptr, *on_host = nullptr;
  {
    Lease lease = manager.acquire(handles, gpu0, f.backend->create_stream(gpu0));
    on_device = const_cast<std::byte *>(lease.value(h).data());
  }
  on_host = const_cast<std::byte *>(manager.acquire(handles, pageable).value(h).data());
  const std::uint64_t version = manager.state_version();
  CHECK(message_of<ResidencyOwnershipError>(
            [&] { manager.adopt(on_device + 1024, 1024, gpu0, never_freed); }) ==
        "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 "
        "at cuda:0");
  // The host index still answers while device replicas are installed.
  CHECK(message_of<ResidencyOwnershipError>([&] { manager.adopt(on_host, 64, pageable, never_freed); }) ==
        "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 "
        "at pageable");
  CHECK(manager.state_version() == version);
  // Dropping the device replica keeps the host one indexed. (That a drop
  // leaves its own index is address_ranges_test.cpp's and the pinned case
  // above: the simulated backend maps every device block afresh, so a
  // freed device block's address does not come back to adopt.)
  manager.drop(h, gpu0);
  CHECK(message_of<ResidencyOwnershipError>(
            [&] { manager.adopt(on_host + 4 * KiB, 64, pageable, never_freed); }) ==
        "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 "
        "at pageable");
  CHECK(manager.replicas(h) == std::vector<Location>{pageable});
  CHECK(manager.replicas(other) == std::vector<Location>{pinned, gpu1});
  f.check_invariants();
}

TEST_CASE("adopt: a view smaller than its block is charged the block and copies the view (§2.1, §3.1)") {
  Manager manager;
  std::byte *block = heap_pattern(16 * KiB, 7);
  const std::uint64_t view_checksum = checksum_of({block, 4 * KiB});
  const Handle h = manager.adopt(block, 4 * KiB, 16 * KiB, pageable, std::free, ReplicaMode::Replicable);
  CHECK(manager.account(pageable).used_bytes == 16 * KiB);
  Snapshot s = manager.snapshot();
  REQUIRE(s.values.size() == 1);
  CHECK(s.values[0].spec.logical_nbytes == 4 * KiB);
  CHECK(s.values[0].spec.storage_nbytes == 16 * KiB);
  CHECK(s.values[0].materializations[0].storage_nbytes == 16 * KiB);
  CHECK(s.values[0].materializations[0].charged_nbytes == 16 * KiB);
  CHECK(manager.content_checksum(h, pageable) == view_checksum);
  const TransitionReport copied = manager.ensure(h, pinned);
  CHECK(copied.logical_nbytes == 4 * KiB);
  CHECK(copied.storage_nbytes == 16 * KiB);
  CHECK(manager.account(pinned).used_bytes == 16 * KiB);               // the spec's charge
  CHECK(manager.snapshot().locations[1].pool_in_use_bytes == 4 * KiB); // a copy compacts the view
  CHECK(manager.content_checksum(h, pinned) == view_checksum);
  s = manager.snapshot();
  CHECK(s.values[0].materializations[1].storage_nbytes == 4 * KiB);
  CHECK(message_of<std::invalid_argument>([&] { manager.adopt(block, 8, 4, pageable, never_freed); }) ==
        "adopt: storage_nbytes (4) must be at least logical_nbytes (8)");
}

TEST_CASE("check_adoptable: adopt's own refusal before any buffer exists, nothing charged") {
  Fixture f({{pinned, 64 * KiB}});
  Manager &manager = *f.manager;
  // Within the budget: nothing thrown, nothing charged, no value made.
  manager.check_adoptable(pinned, 64 * KiB);
  CHECK(manager.account(pinned).used_bytes == 0);
  CHECK(manager.snapshot().values.empty());
  // Beyond it: the error adopt throws for the same block, word for word.
  const std::string refused =
      message_of<ResidencyBudgetError>([&] { manager.check_adoptable(pinned, 64 * KiB + 1); });
  auto [block, release] = f.buffer(64 * KiB + 1, 3, pinned);
  CHECK(message_of<ResidencyBudgetError>([&, block = block, release = release] {
          manager.adopt(block, 64 * KiB + 1, pinned, release);
        }) == refused);
  release(block);
  CHECK(refused.find("Transition exceeds budget at pinned") == 0);
  // Beyond what any location accounts (4 EiB, §4.2), at an unbudgeted one:
  // a block no allocator could make is refused as a budget error.
  CHECK(message_of<ResidencyBudgetError>([&] {
          manager.check_adoptable(pageable, std::uint64_t{6} << 60);
        }).find("Transition exceeds budget at pageable") == 0);
  CHECK(manager.account(pageable).used_bytes == 0);
  // A location the manager lacks is refused as adopt refuses it.
  CHECK_THROWS_AS(manager.check_adoptable(Location::cuda(7), KiB), std::invalid_argument);
}

TEST_CASE("adopt: the location is inferred from the memory and must agree with `at` (§2.6, §3.1)") {
  Manager manager;
  std::byte *heap = heap_pattern(4 * KiB, 1);
  auto [pinned_block, pinned_release] = block_of(manager, pinned, 4 * KiB);
  const std::uint64_t version = manager.state_version();
  CHECK(message_of<ResidencyMaterializationError>([&] {
          manager.adopt(heap, 4 * KiB, pinned, never_freed);
        }) == "adopt at pinned: the buffer is not fully pinned (it is pageable host memory)");
  CHECK(message_of<ResidencyMaterializationError>([&] {
          manager.adopt(pinned_block, 4 * KiB, pageable, never_freed);
        }) == "adopt at pageable: the buffer unexpectedly uses pinned storage");
  // Half inside the pinned block, half outside it.
  CHECK(message_of<ResidencyMaterializationError>([&] {
          manager.adopt(pinned_block + 2 * KiB, 4 * KiB, 4 * KiB, std::nullopt, never_freed);
        }) == "Cannot infer location: the buffer mixes pageable and pinned memory (or is managed memory)");
  CHECK(message_of<ResidencyMaterializationError>([&] {
          manager.adopt(pinned_block + 2 * KiB, 4 * KiB, pinned, never_freed);
        }) == "adopt at pinned: the buffer mixes pageable and pinned memory (or is managed memory)");
  // A location the process lacks is an argument error before the memory is looked at.
  CHECK_THROWS_AS(manager.adopt(heap, 4 * KiB, Location::cuda(0), never_freed), std::invalid_argument);
  CHECK(manager.state_version() == version);
  CHECK(manager.locations().empty()); // nothing registered
  const Handle in_pinned = manager.adopt(pinned_block, 4 * KiB, 4 * KiB, std::nullopt, pinned_release);
  const Handle in_pageable = manager.adopt(heap, 4 * KiB, 4 * KiB, std::nullopt, std::free);
  CHECK(manager.replicas(in_pinned) == std::vector<Location>{pinned});
  CHECK(manager.replicas(in_pageable) == std::vector<Location>{pageable});
  CHECK(manager.locations() == std::vector<Location>{pinned, pageable});
}

TEST_CASE("adopt on the simulated backend: device blocks are placed by their device") {
  Fixture f;
  auto [device0, release0] = f.buffer(4 * KiB, 1, gpu0);
  auto [device1, release1] = f.buffer(4 * KiB, 2, gpu1);
  std::byte *heap = heap_pattern(4 * KiB, 3);
  CHECK(message_of<ResidencyMaterializationError>([&] {
          f.manager->adopt(device1, 4 * KiB, gpu0, never_freed);
        }) == "adopt at cuda:0: the buffer is memory of cuda:1, not memory of cuda:0");
  CHECK(message_of<ResidencyMaterializationError>([&] {
          f.manager->adopt(heap, 4 * KiB, gpu0, never_freed);
        }) == "adopt at cuda:0: the buffer is pageable host memory, not memory of cuda:0");
  CHECK(message_of<ResidencyMaterializationError>([&] {
          f.manager->adopt(device0, 4 * KiB, pinned, never_freed);
        }) == "adopt at pinned: the buffer is memory of cuda:0, not pinned host memory");
  const Handle a = f.manager->adopt(device0, 4 * KiB, 4 * KiB, std::nullopt, release0);
  const Handle b = f.manager->adopt(device1, 4 * KiB, 4 * KiB, std::nullopt, release1);
  CHECK(f.manager->replicas(a) == std::vector<Location>{gpu0});
  CHECK(f.manager->replicas(b) == std::vector<Location>{gpu1});
  CHECK(f.manager->account(gpu1).used_bytes == 4 * KiB);
  std::free(heap);
}

TEST_CASE("adopt and register_source: enum values out of range are argument errors (§2.1)") {
  Manager manager;
  std::byte *data = heap_pattern(64, 1);
  CHECK(message_of<std::invalid_argument>([&] {
          manager.adopt(data, 64, pageable, never_freed, static_cast<ReplicaMode>(7));
        }) == "replica mode 7 is neither EXCLUSIVE nor REPLICABLE");
  ValueSpec spec = reconstructible(64);
  spec.replica_mode = static_cast<ReplicaMode>(2);
  CHECK(message_of<std::invalid_argument>([&] {
          manager.register_source(spec, std::make_shared<ZeroSource>());
        }) == "replica mode 2 is neither EXCLUSIVE nor REPLICABLE");
  spec = reconstructible(64);
  spec.recoverability = static_cast<Recoverability>(9);
  CHECK(message_of<std::invalid_argument>([&] {
          manager.register_source(spec, std::make_shared<ZeroSource>());
        }) == "recoverability 9 is neither MUST_PRESERVE nor RECONSTRUCTIBLE");
  CHECK(manager.snapshot().values.empty());
  std::free(data);
}

TEST_CASE("acquire and hold: the first failing handle in order decides the error (§7.2, §16.1)") {
  Manager manager, other;
  const Handle resident =
      manager.adopt(heap_pattern(64, 1), 64, pageable, std::free, ReplicaMode::Replicable);
  const Handle elsewhere =
      manager.adopt(heap_pattern(64, 2), 64, pageable, std::free, ReplicaMode::Replicable);
  manager.ensure(resident, pinned);
  const Handle foreign = other.adopt(heap_pattern(64, 3), 64, pageable, std::free);
  const Handle unknown{manager.id(), 99};
  const Handle discarded = manager.adopt(heap_pattern(64, 4), 64, pageable, std::free);
  manager.discard(discarded);
  const std::uint64_t version = manager.state_version();
  const std::string foreign_message = "handle belongs to manager " + std::to_string(other.id()) +
                                      ", not to manager " + std::to_string(manager.id());
  for (const bool lease : {true, false}) {
    CAPTURE(lease);
    auto protect = [&](std::initializer_list<Handle> list) {
      const std::vector<Handle> handles(list);
      if (lease)
        (void)manager.acquire(handles, pinned);
      else
        (void)manager.hold(handles, pinned);
    };
    // Not resident first: unavailable, although a later handle is foreign.
    CHECK(message_of<ResidencyUnavailableError>([&] {
            protect({resident, elsewhere, foreign});
          }) == "value '#2' is not resident at pinned");
    CHECK(message_of<ResidencyHandleError>([&] {
            protect({resident, foreign, elsewhere});
          }) == foreign_message);
    CHECK(message_of<ResidencyHandleError>([&] { protect({unknown, elsewhere}); }) == "unknown handle 99");
    CHECK(message_of<ResidencyUnavailableError>([&] {
            protect({elsewhere, unknown});
          }) == "value '#2' is not resident at pinned");
    CHECK(message_of<ResidencyHandleError>([&] {
            protect({discarded, foreign});
          }) == "value '#3' has been discarded");
    CHECK(manager.state_version() == version); // atomic: nothing protected
  }
  CHECK(manager.snapshot().locations[1].use_count == 0);
}

TEST_CASE("scope: a failing exit action is kept in exit_error() on every path (§12.3)") {
  Manager manager;
  const Handle ct = manager.adopt(heap_pattern(KiB, 1), KiB, pageable, std::free);
  PlanSpec plan;
  plan.name = "exit-fails";
  plan.exit = {{ActionKind::Drop, ct, pinned, {}}};
  auto check_kept = [](const Scope &scope) {
    REQUIRE(scope.exit_error().has_value());
    const auto &details = scope.exit_error()->details();
    CHECK(details.phase == ExecutionPhase::Exit);
    CHECK(details.failed_action_index == 0);
    CHECK(details.cause == ErrorClass::Ownership);
    CHECK(details.detail == "cannot drop final MUST_PRESERVE materialization");
    CHECK_FALSE(scope.report().has_value());
  };
  SUBCASE("close() directly") {
    Scope scope = manager.scope(plan);
    scope.enter();
    manager.move(ct, pinned); // the body makes exit's drop remove the last replica
    CHECK_THROWS_AS(scope.close(), ResidencyPlanExecutionError);
    check_kept(scope);
    CHECK_NOTHROW(scope.close()); // idempotent, and the error stays
    check_kept(scope);
  }
  SUBCASE("run() with a body that returns") {
    Scope scope = manager.scope(plan);
    CHECK_THROWS_AS(scope.run([&] { manager.move(ct, pinned); }), ResidencyPlanExecutionError);
    check_kept(scope);
  }
  SUBCASE("run() with a body that throws: the body's error wins") {
    Scope scope = manager.scope(plan);
    CHECK_THROWS_AS(scope.run([&] {
      manager.move(ct, pinned);
      throw std::out_of_range("body");
    }),
                    std::out_of_range);
    check_kept(scope);
  }
  SUBCASE("a successful close keeps none") {
    plan.exit = {{ActionKind::Drop, ct, pinned, {}}};
    Scope scope = manager.scope(plan);
    scope.run([&] { manager.ensure(ct, pageable); });
    CHECK_FALSE(scope.exit_error().has_value());
    CHECK(scope.report().has_value());
  }
}

TEST_CASE(
    "explain: rows carry the action, the bytes and the failure text; a foreign handle is foreign (§10.3)") {
  ManagerOptions options;
  options.budgets = {{pinned, 10 * KiB}};
  Manager manager(std::move(options)), other;
  const Handle a =
      manager.adopt(heap_pattern(6 * KiB, 1), 6 * KiB, pageable, std::free, ReplicaMode::Replicable);
  const Handle key = manager.register_source(
      ValueSpec{2 * KiB, 4 * KiB, ReplicaMode::Replicable, Recoverability::Reconstructible},
      std::make_shared<ZeroSource>());
  const Handle foreign = other.adopt(heap_pattern(64, 2), 64, pageable, std::free);
  PlanSpec plan;
  plan.name = "rows";
  plan.reservations = {Reservation{pinned, 1 * KiB, "workspace"}};
  plan.enter = {{ActionKind::Ensure, a, pinned, {}},
                {ActionKind::Ensure, a, pinned, {}},
                {ActionKind::Ensure, key, pinned, {}},
                {ActionKind::Ensure, foreign, pinned, {}}};
  const ExplainedPlan x = manager.explain(plan);
  CHECK(x.plan_name == "rows");
  REQUIRE(x.reservations.size() == 1);
  CHECK(x.reservations[0].label == "workspace");
  CHECK_FALSE(x.feasible);
  REQUIRE(x.actions.size() == 3); // up to and including the first failure
  const ExplainedAction &done = x.actions[0];
  CHECK(done.action.handle == a);
  CHECK(done.action.location == pinned);
  CHECK(done.phase == Phase::Enter);
  CHECK(done.index == 0);
  CHECK(done.executable);
  CHECK_FALSE(done.no_op);
  CHECK(done.source == pageable);
  CHECK(done.destination == pinned);
  CHECK(done.logical_nbytes == 6 * KiB);
  CHECK(done.storage_nbytes == 6 * KiB);
  CHECK(done.reason.empty());
  CHECK(x.actions[1].no_op);
  CHECK(x.actions[1].executable);
  CHECK(x.actions[1].reason == "destination already resident");
  const ExplainedAction &refused = x.actions[2];
  CHECK_FALSE(refused.executable);
  CHECK(refused.logical_nbytes == 2 * KiB);
  CHECK(refused.storage_nbytes == 4 * KiB);
  CHECK(
      refused.reason ==
      "Transition exceeds budget at pinned (budget 10240 B, used 6144 B, reserved 1024 B, requested 4096 B)");
  CHECK(x.reason == refused.reason);

  // A foreign handle is reported as foreign, with no bytes.
  plan.enter = {{ActionKind::Ensure, foreign, pinned, {}}};
  const ExplainedPlan f = manager.explain(plan);
  REQUIRE(f.actions.size() == 1);
  CHECK_FALSE(f.actions[0].executable);
  CHECK(f.actions[0].logical_nbytes == 0);
  CHECK(f.actions[0].storage_nbytes == 0);
  const std::string foreign_message = "handle belongs to manager " + std::to_string(other.id()) +
                                      ", not to manager " + std::to_string(manager.id());
  CHECK(f.actions[0].reason == foreign_message);
  CHECK(f.reason == foreign_message);
  CHECK(f.steps.back().outcome.error == ErrorClass::Handle);
  plan.enter = {{ActionKind::Ensure, Handle{manager.id(), 42}, pinned, {}}};
  CHECK(manager.explain(plan).reason == "unknown handle 42");
  // Executing says the same in its preflight, for a plan and for a list.
  const std::uint64_t version = manager.state_version();
  plan.enter = {{ActionKind::Ensure, a, pinned, {}}, {ActionKind::Ensure, foreign, pinned, {}}};
  CHECK(message_of<ResidencyPlanError>([&] { manager.scope(plan).enter(); }) ==
        "plan 'rows' is infeasible in phase enter at step 1: " + foreign_message);
  CHECK(message_of<ResidencyPlanError>([&] { manager.execute_actions(plan.enter, "list"); }) ==
        "plan 'list' is infeasible at action 1: " + foreign_message);
  plan.exit = {{ActionKind::Drop, Handle{manager.id(), 42}, pinned, {}}};
  plan.enter = {};
  CHECK(message_of<ResidencyPlanError>([&] { manager.scope(plan).enter(); }) ==
        "plan 'rows' is infeasible in phase exit at step 0: unknown handle 42");
  CHECK(manager.state_version() == version); // refused before anything ran
  plan.exit = {};
  // Discarded earlier in the plan: no bytes either.
  plan.enter = {{ActionKind::Discard, a, {}, {}}, {ActionKind::Ensure, a, pinned, {}}};
  const ExplainedPlan d = manager.explain(plan);
  REQUIRE(d.actions.size() == 2);
  CHECK(d.actions[1].reason == "Value '#1' is discarded");
  CHECK(d.actions[1].storage_nbytes == 0);
  // A failing reservation gives the plan's reason and no action row after reclaim.
  plan.reservations = {Reservation{pinned, 20 * KiB, "huge"}};
  const ExplainedPlan r = manager.explain(plan);
  CHECK(r.actions.empty());
  CHECK(r.reason == "Reservation 'huge' exceeds budget at pinned (budget 10240 B, used 0 B, reserved 0 B, "
                    "requested 20480 B)");
}

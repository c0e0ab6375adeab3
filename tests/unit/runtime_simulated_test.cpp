// The simulated device backend: cuda:N locations without a GPU, and
// deterministic fault injection that fails the k-th allocation, copy or load
// in the middle of a plan, leaving exact partial reports and consistent books.
#include "simulated_fixture.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

TEST_CASE("simulated backend: cuda:N below the device count are real locations") {
  Fixture f;
  const Handle h = f.adopt(8 * KiB, 1, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu0);
  f.manager->ensure(h, gpu1);
  CHECK(f.backend->allocated_bytes(gpu0) == 8 * KiB);
  CHECK(f.manager->content_checksum(h, gpu1) == f.checksums[0]);
  CHECK(f.manager->move(h, gpu1, gpu0).source == gpu0);
  CHECK(f.backend->allocated_bytes(gpu0) == 0);
  CHECK_THROWS_AS(f.manager->ensure(h, Location::cuda(2)), std::invalid_argument);
  f.check_invariants();
}

TEST_CASE("simulated backend: a failed allocation, copy or load changes nothing") {
  Fixture f({{gpu0, 64 * KiB}});
  const Handle h = f.adopt(8 * KiB, 1, pageable, ReplicaMode::Replicable);
  struct Case {
    Op operation;
    const char *what;
  };
  for (Case c : {Case{Op::Allocate, "allocation"}, Case{Op::Copy, "copy"}}) {
    CAPTURE(c.what);
    const std::uint64_t version = f.manager->state_version();
    f.faults->fail_on(c.operation, 1);
    CHECK_THROWS_AS(f.manager->ensure(h, gpu0), BackendError);
    CHECK(f.manager->state_version() == version);
    CHECK(f.manager->replicas(h) == std::vector<Location>{pageable});
    CHECK(f.backend->allocated_bytes(gpu0) == 0); // the half-made replica was freed
    CHECK(f.manager->account(gpu0).used_bytes == 0);
  }
  struct Key final : Source {
    void load(std::span<std::byte> out) override { std::fill(out.begin(), out.end(), std::byte{1}); }
  };
  const Handle key = f.manager->register_source(
      ValueSpec{4 * KiB, 4 * KiB, ReplicaMode::Replicable, Recoverability::Reconstructible},
      f.faulty(std::make_shared<Key>()));
  f.faults->fail_on(Op::Load, 1);
  CHECK_THROWS_AS(f.manager->ensure(key, gpu0), BackendError);
  CHECK(f.manager->account(pageable).reserved_bytes == 0);
  CHECK(f.backend->allocated_bytes(pageable) == 0);
  CHECK_NOTHROW(f.manager->ensure(key, gpu0)); // disarmed after firing
  f.check_invariants();
}

TEST_CASE("simulated backend: failing each action of a plan in turn gives exact partial reports") {
  // A stage like examples/inference.fhr: prefetch weights and a key, move the
  // ciphertext in, evict the previous ciphertext. Every action copies once.
  constexpr int kActions = 6;
  for (int failing = 1; failing <= kActions; ++failing) {
    CAPTURE(failing);
    Fixture f({{gpu0, 256 * KiB}, {pinned, 128 * KiB}});
    const Handle w0 = f.adopt(16 * KiB, 1, pinned, ReplicaMode::Replicable);
    const Handle w1 = f.adopt(16 * KiB, 2, pinned, ReplicaMode::Replicable);
    const Handle key = f.adopt(32 * KiB, 3, pageable, ReplicaMode::Replicable);
    const Handle query = f.adopt(8 * KiB, 4, pinned, ReplicaMode::Exclusive);
    const Handle previous = f.adopt(8 * KiB, 5, gpu0, ReplicaMode::Exclusive);
    const std::vector<ActionSpec> stage = {
        {ActionKind::Ensure, w0, gpu0, {}},       {ActionKind::Ensure, w1, gpu0, {}},
        {ActionKind::Ensure, key, gpu0, {}},      {ActionKind::Move, query, gpu0, pinned},
        {ActionKind::Move, previous, pinned, {}}, {ActionKind::Ensure, key, gpu1, {}}};
    REQUIRE(stage.size() == kActions);
    f.faults->fail_on(Op::Copy, static_cast<std::uint64_t>(failing));
    try {
      f.manager->execute_actions(stage, "stage");
      FAIL("no failure");
    } catch (const ResidencyPlanExecutionError &error) {
      CHECK(*error.details().failed_action_index == static_cast<std::size_t>(failing - 1));
      CHECK(error.details().partial_report.transitions.size() == static_cast<std::size_t>(failing - 1));
      CHECK(error.details().detail.find("injected failure of copy") == 0);
    }
    f.check_invariants();
    // The actions before the failure committed; the rest did not run.
    CHECK(f.manager->replicas(w0).size() == (failing > 1 ? 2u : 1u));
    CHECK(f.manager->replicas(query) == std::vector<Location>{failing > 4 ? gpu0 : pinned});
  }
}

TEST_CASE("simulated backend: allocation failures inside a scope's entry release its reservations") {
  Fixture f({{gpu0, 64 * KiB}});
  const Handle a = f.adopt(4 * KiB, 1, pageable, ReplicaMode::Replicable);
  const Handle b = f.adopt(4 * KiB, 2, pageable, ReplicaMode::Replicable);
  PlanSpec plan;
  plan.name = "prefetch";
  plan.reservations = {Reservation{gpu0, 16 * KiB, "workspace"}};
  plan.enter = {{ActionKind::Ensure, a, gpu0, {}}, {ActionKind::Ensure, b, gpu0, {}}};
  f.faults->fail_on(Op::Allocate, 2);
  Scope scope = f.manager->scope(plan);
  try {
    scope.enter();
    FAIL("entry succeeded");
  } catch (const ResidencyPlanExecutionError &error) {
    CHECK(error.details().phase == ExecutionPhase::Enter);
    CHECK(*error.details().failed_action_index == 1);
  }
  CHECK(f.manager->account(gpu0).reserved_bytes == 0);
  CHECK(f.manager->account(gpu0).used_bytes == 4 * KiB);
  f.check_invariants();
}

TEST_CASE(
    "fault injection wraps any backend: the host backend fails the armed operation and nothing changes") {
  const BackendInterfaces host = make_host_backend();
  auto faults = std::make_shared<FaultPlan>();
  ManagerOptions options;
  options.backend = inject_faults(host, faults);
  Manager manager(std::move(options));
  auto *data = static_cast<std::byte *>(std::malloc(8 * KiB));
  fill_pattern({data, 8 * KiB}, 4);
  const Handle h = manager.adopt(data, 8 * KiB, pageable, std::free, ReplicaMode::Replicable);
  CHECK_FALSE(
      manager.backend().copies->overlaps_copies()); // forwarded: the host copies on the calling thread
  faults->fail_on(Op::Copy, 2);
  manager.ensure(h, pinned);
  CHECK(manager.replicas(h) == std::vector<Location>{pageable, pinned});
  manager.drop(h, pinned);
  const std::uint64_t version = manager.state_version();
  try {
    manager.ensure(h, pinned);
    FAIL("the second copy must fail");
  } catch (const BackendError &error) {
    CHECK(std::string(error.what()) == "injected failure of copy 2");
  }
  CHECK(manager.state_version() == version);
  CHECK(manager.replicas(h) == std::vector<Location>{pageable});
  CHECK(faults->count(Op::Copy) == 2);
  CHECK(faults->count(Op::Allocate) == 2);
  CHECK(host.memory->pool_figures(pinned)->in_use_bytes == 0); // the half-made replica went back
  CHECK_NOTHROW(manager.ensure(h, pinned));                    // disarmed after firing
}

TEST_CASE("fault adaptors wrap only their interface: an unwrapped interface never fails") {
  // Only the copy engine is wrapped: armed allocations and event
  // recordings are counted nowhere and never fail.
  auto simulated = std::make_shared<SimulatedBackend>(1);
  auto faults = std::make_shared<FaultPlan>();
  BackendInterfaces interfaces = simulated;
  interfaces.copies = std::make_shared<FaultInjectingCopies>(interfaces.copies, faults);
  ManagerOptions options;
  options.backend = interfaces;
  Manager manager(std::move(options));
  auto *data = static_cast<std::byte *>(std::malloc(4 * KiB));
  fill_pattern({data, 4 * KiB}, 1);
  const Handle h = manager.adopt(data, 4 * KiB, pageable, std::free, ReplicaMode::Replicable);
  faults->fail_on(Op::Allocate, 1);
  faults->fail_on(Op::RecordEvent, 1);
  manager.ensure(h, gpu0);
  const Stream stream = simulated->create_stream(gpu0);
  const Handle handles[] = {h};
  Lease lease = manager.acquire(handles, gpu0, stream);
  simulated->launch(stream);
  lease.release();
  CHECK(faults->count(Op::Allocate) == 0);
  CHECK(faults->count(Op::RecordEvent) == 0);
  CHECK(faults->count(Op::Copy) == 1);
  CHECK(simulated->live_events() == 1); // recorded: the release is pending on the reader
  CHECK_THROWS_AS(manager.drop(h, gpu0), ResidencyInUseError);
  simulated->finish(stream);
  CHECK_FALSE(manager.drop(h, gpu0).no_op);
  // Half-wrapped interfaces are refused.
  ManagerOptions partial;
  partial.backend.memory = simulated;
  CHECK_THROWS_AS(Manager(std::move(partial)), std::invalid_argument);
}

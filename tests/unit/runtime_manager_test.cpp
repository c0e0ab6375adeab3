// fhr::Manager on the host backend: registration, every primitive with exact
// bytes, versions and placements, content preserved across transitions,
// reconstruction from sources (and the file source), errors by class,
// explain, execute_actions with its partial report, and the trace.
#include "runtime_support.hpp"

#include "fhr/runtime/manager.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace fhr;
using namespace fhr::test;

namespace {

/// A buffer filled with a pattern, for adopt; adopt() counts its frees.
struct Buffer {
  std::byte *data;
  std::size_t size;
  std::uint64_t checksum;
  Storage::Release release = std::free;
};
int g_freed = 0;

/// Heap (pageable) memory.
Buffer pattern(std::size_t size, unsigned seed) {
  auto *data = static_cast<std::byte *>(std::malloc(size == 0 ? 1 : size));
  fill_pattern({data, size}, seed);
  return Buffer{data, size, checksum_of({data, size})};
}

/// A block of `manager`'s memory resource at `at` (pinned memory must be
/// pinned to be adopted there, §2.6).
Buffer pattern(Manager &manager, Location at, std::size_t size, unsigned seed) {
  auto [data, release] = manager.backend().memory->allocate(at, size).detach();
  fill_pattern({data, size}, seed);
  return Buffer{data, size, checksum_of({data, size}), std::move(release)};
}

Handle adopt(Manager &manager, const Buffer &buffer, Location at, ReplicaMode mode = ReplicaMode::Exclusive) {
  return manager.adopt(
      buffer.data, buffer.size, at,
      [release = buffer.release](std::byte *data) {
        ++g_freed;
        release(data);
      },
      mode);
}

/// A source that writes a pattern, or fails on demand.
class PatternSource final : public Source {
public:
  PatternSource(unsigned seed, bool fail = false) : seed_(seed), fail_(fail) {}
  void load(std::span<std::byte> destination) override {
    ++loads;
    if (fail_) throw BackendError("injected load failure");
    fill_pattern(destination, seed_);
  }
  int loads = 0;

private:
  unsigned seed_;
  bool fail_;
};

ManagerOptions budgeted(Location location, std::uint64_t budget) {
  ManagerOptions options;
  options.budgets = {{location, budget}};
  return options;
}

ManagerOptions tracing(std::size_t capacity) {
  ManagerOptions options;
  options.trace_capacity = capacity;
  return options;
}

ValueSpec reconstructible(std::uint64_t nbytes, ReplicaMode mode = ReplicaMode::Replicable) {
  return ValueSpec{nbytes, nbytes, mode, Recoverability::Reconstructible};
}

} // namespace

TEST_CASE("manager: adopt, ensure, move, drop and discard keep the bytes and the books exact") {
  g_freed = 0;
  Manager manager(budgeted(pinned, 64 * KiB));
  const Buffer weight = pattern(16 * KiB, 7);
  const Handle h = adopt(manager, weight, pageable, ReplicaMode::Replicable);
  CHECK(manager.locations() == std::vector<Location>{pinned, pageable});
  CHECK(manager.state_version() == 2); // registration of pageable + install
  CHECK(manager.account(pageable).used_bytes == 16 * KiB);

  TransitionReport r = manager.ensure(h, pinned);
  CHECK_FALSE(r.no_op);
  CHECK(r.source == pageable);
  CHECK(r.destination == pinned);
  CHECK(r.storage_nbytes == 16 * KiB);
  CHECK(r.started_at_ns <= r.completed_at_ns);
  // Its copy was issued once the destination was allocated, inside the span.
  CHECK(r.copy_issued_at_ns >= r.started_at_ns);
  CHECK(r.copy_issued_at_ns <= r.completed_at_ns);
  CHECK(manager.state_version() == 3);
  CHECK(manager.account(pinned).used_bytes == 16 * KiB);
  CHECK(manager.content_checksum(h, pinned) == weight.checksum);

  TransitionReport again = manager.copy(h, pinned);
  CHECK(again.no_op);
  CHECK(again.reason == "destination already resident");
  // A no-op is stamped once, with the coarse clock, never before the
  // transition that came before it ended; the next real one starts after.
  CHECK(again.started_at_ns == again.completed_at_ns);
  CHECK(again.started_at_ns >= r.completed_at_ns);
  CHECK(again.copy_issued_at_ns == 0); // no copy
  CHECK(r.started_at_ns > 0);
  CHECK(manager.state_version() == 3);

  // pageable → pinned already resident: a move that only removes the source.
  TransitionReport removal = manager.move(h, pinned);
  CHECK_FALSE(removal.no_op);
  CHECK(removal.source == pageable);
  CHECK(removal.started_at_ns >= again.completed_at_ns); // a fine stamp: the coarse one is behind it
  CHECK(removal.started_at_ns <= removal.completed_at_ns);
  CHECK(removal.copy_issued_at_ns == 0); // a removal copies nothing
  CHECK(manager.replicas(h) == std::vector<Location>{pinned});
  CHECK(g_freed == 1); // the adopted buffer went with its replica
  CHECK(manager.account(pageable).used_bytes == 0);
  CHECK(manager.account(pageable).peak_used_bytes == 16 * KiB);

  CHECK(manager.move(h, pageable).source == pinned);
  CHECK(manager.content_checksum(h, pageable) == weight.checksum);
  CHECK_THROWS_AS(manager.drop(h, pageable), ResidencyOwnershipError);
  CHECK(manager.drop(h, pinned).no_op);

  const std::uint64_t before = manager.state_version();
  manager.discard(h);
  CHECK(manager.state_version() == before + 2); // one removal + the mark
  CHECK(manager.account(pageable).used_bytes == 0);
  CHECK_THROWS_AS(manager.ensure(h, pinned), ResidencyHandleError);
  CHECK_THROWS_AS(manager.discard(h), ResidencyHandleError);
  CHECK(manager.trace().size() == 6); // failures are not traced
}

TEST_CASE("manager: exclusive values move, never replicate") {
  Manager manager;
  const Buffer ct = pattern(manager, pinned, 4 * KiB, 1);
  const Handle h = adopt(manager, ct, pinned);
  CHECK_THROWS_AS(manager.ensure(h, pageable), ResidencyOwnershipError);
  CHECK(manager.ensure(h, pinned).no_op);
  const std::uint64_t version = manager.state_version();
  TransitionReport moved = manager.move(h, pageable, pinned);
  CHECK(moved.source == pinned);
  CHECK(manager.state_version() == version + 3); // registration, install, removal
  CHECK(manager.content_checksum(h, pageable) == ct.checksum);
  CHECK_THROWS_AS(manager.move(h, pinned, pinned), ResidencyUnavailableError);
}

TEST_CASE("manager: budgets refuse with the figures and leave everything as it was") {
  g_freed = 0;
  Manager manager(budgeted(pinned, 10 * KiB));
  const Buffer a = pattern(manager, pinned, 6 * KiB, 1), b = pattern(manager, pinned, 6 * KiB, 2);
  const Handle ha = adopt(manager, a, pinned);
  try {
    adopt(manager, b, pinned);
    FAIL("adopt over budget succeeded");
  } catch (const ResidencyBudgetError &error) {
    CHECK(error.location() == pinned);
    CHECK(error.budget_bytes() == 10 * KiB);
    CHECK(error.used_bytes() == 6 * KiB);
    CHECK(error.requested_bytes() == 6 * KiB);
  }
  CHECK(g_freed == 0); // a failed adopt leaves the buffer with the caller
  b.release(b.data);
  const Buffer c = pattern(6 * KiB, 3);
  const Handle hc = adopt(manager, c, pageable, ReplicaMode::Replicable);
  const std::uint64_t version = manager.state_version();
  CHECK_THROWS_AS(manager.ensure(hc, pinned), ResidencyBudgetError);
  CHECK(manager.state_version() == version);
  CHECK(manager.replicas(hc) == std::vector<Location>{pageable});
  CHECK(manager.content_checksum(ha, pinned) == a.checksum);
}

TEST_CASE("manager: sources load into manager storage with a temporary charge at the source location") {
  Manager manager(budgeted(pageable, 8 * KiB));
  auto source = std::make_shared<PatternSource>(9);
  const Handle key = manager.register_source(reconstructible(8 * KiB), source, pageable);
  CHECK(source->loads == 0); // registration never loads
  TransitionReport loaded = manager.ensure(key, pinned);
  CHECK(loaded.source == pageable);
  CHECK(source->loads == 1);
  CHECK(manager.account(pageable).reserved_bytes == 0);
  CHECK(manager.account(pageable).peak_charged_bytes == 8 * KiB);
  CHECK(manager.account(pageable).used_bytes == 0);
  CHECK(manager.account(pinned).used_bytes == 8 * KiB);
  const Buffer expected = pattern(8 * KiB, 9);
  CHECK(manager.content_checksum(key, pinned) == expected.checksum);
  std::free(expected.data);
  // Drop the only replica (allowed: it has a source), then load into the
  // source location itself: charged once, not twice.
  manager.drop(key, pinned);
  CHECK(manager.replicas(key).empty());
  manager.ensure(key, pageable);
  CHECK(manager.account(pageable).used_bytes == 8 * KiB);
  CHECK(manager.account(pageable).peak_charged_bytes == 8 * KiB);
  CHECK(source->loads == 2);
}

TEST_CASE("manager: a failing source leaves nothing behind") {
  Manager manager;
  auto source = std::make_shared<PatternSource>(1, /*fail=*/true);
  const Handle key = manager.register_source(reconstructible(4 * KiB), source);
  const std::uint64_t version = manager.state_version();
  CHECK_THROWS_AS(manager.ensure(key, pinned), BackendError);
  CHECK(manager.state_version() == version);
  CHECK(manager.account(pageable).reserved_bytes == 0);
  CHECK(manager.account(pageable).peak_charged_bytes == 4 * KiB); // the temporary charge was seen
  CHECK(manager.replicas(key).empty());
  CHECK(manager.trace().empty());
}

TEST_CASE("manager: the built-in file source reads the value's bytes from a file") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "fhr-manager-test-key.bin";
  const Buffer bytes = pattern(3000, 5);
  {
    std::ofstream out(path, std::ios::binary);
    out.write("header", 6);
    out.write(reinterpret_cast<const char *>(bytes.data), static_cast<std::streamsize>(bytes.size));
  }
  Manager manager;
  const Handle key = manager.register_source(reconstructible(3000), make_file_source(path.string(), 6));
  manager.ensure(key, pinned);
  CHECK(manager.content_checksum(key, pinned) == bytes.checksum);
  const Handle too_long = manager.register_source(reconstructible(5000), make_file_source(path.string(), 6));
  CHECK_THROWS_AS(manager.ensure(too_long, pinned), BackendError);
  CHECK(manager.replicas(too_long).empty());
  std::free(bytes.data);
  std::filesystem::remove(path);
}

TEST_CASE("manager: handles and locations are checked") {
  Manager one, two;
  const Buffer a = pattern(one, pinned, 64, 1);
  const Handle h = adopt(one, a, pinned);
  CHECK_THROWS_AS(two.ensure(h, pinned), ResidencyHandleError);
  CHECK_THROWS_AS(one.ensure(Handle{one.id(), 999}, pinned), ResidencyHandleError);
  CHECK_THROWS_AS(one.ensure(h, Location::cuda(0)), std::invalid_argument); // no CUDA on the host backend
  const Buffer b = pattern(64, 2);
  CHECK_THROWS_AS(adopt(one, b, Location::cuda(0)), std::invalid_argument);
  std::free(b.data);
  CHECK_THROWS_AS(one.register_source(ValueSpec{8, 8, ReplicaMode::Exclusive, Recoverability::MustPreserve},
                                      std::make_shared<PatternSource>(1)),
                  std::invalid_argument);
  CHECK_THROWS_AS(one.register_source(reconstructible(8), nullptr), std::invalid_argument);
}

TEST_CASE("manager: explain is the shared simulator and changes nothing") {
  Manager manager(budgeted(pinned, 10 * KiB));
  const Buffer a = pattern(6 * KiB, 1), b = pattern(6 * KiB, 2);
  const Handle ha = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle hb = adopt(manager, b, pageable, ReplicaMode::Replicable);
  const std::uint64_t version = manager.state_version();
  PlanSpec plan;
  plan.name = "both-to-pinned";
  plan.enter = {{ActionKind::Ensure, ha, pinned, {}}, {ActionKind::Ensure, hb, pinned, {}}};
  Explanation x = manager.explain(plan, version);
  CHECK_FALSE(x.feasible);
  REQUIRE(x.steps.size() == 2);
  CHECK(x.steps[1].outcome.error == ErrorClass::Budget);
  CHECK(x.failure_detail.requested_bytes == 6 * KiB);
  CHECK(manager.state_version() == version);
  CHECK(manager.account(pinned).peak_charged_bytes == 0);
  CHECK_THROWS_AS(manager.explain(plan, version + 1), ResidencyStaleStateError);
  plan.enter[1].handle = Handle{manager.id() + 1000, 1};
  CHECK(manager.explain(plan).steps[1].outcome.error == ErrorClass::Handle);
}

TEST_CASE("manager: execute_actions refuses infeasible lists before running anything") {
  Manager manager(budgeted(pinned, 10 * KiB));
  const Buffer a = pattern(6 * KiB, 1), b = pattern(6 * KiB, 2);
  const Handle ha = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle hb = adopt(manager, b, pageable, ReplicaMode::Replicable);
  const std::uint64_t version = manager.state_version();
  const std::vector<ActionSpec> both = {{ActionKind::Ensure, ha, pinned, {}},
                                        {ActionKind::Ensure, hb, pinned, {}}};
  CHECK_THROWS_AS(manager.execute_actions(both, "both"), ResidencyPlanError);
  CHECK(manager.state_version() == version);
  CHECK(manager.replicas(ha) == std::vector<Location>{pageable});
  CHECK_THROWS_AS(manager.execute_actions(both, "  "), std::invalid_argument);
  CHECK_THROWS_AS(manager.execute_actions(both, "both", version + 5), ResidencyStaleStateError);

  const std::vector<ActionSpec> swap = {{ActionKind::Ensure, ha, pinned, {}},
                                        {ActionKind::Drop, ha, pinned, {}},
                                        {ActionKind::Ensure, hb, pinned, {}}};
  PlanReport report = manager.execute_actions(swap, "swap", version);
  REQUIRE(report.transitions.size() == 3);
  CHECK(report.plan_name == "swap");
  CHECK(manager.replicas(hb) == std::vector<Location>{pageable, pinned});
  CHECK(manager.account(pinned).used_bytes == 6 * KiB);
  CHECK(manager.account(pinned).peak_used_bytes == 6 * KiB);
}

TEST_CASE("manager: a runtime failure inside execute_actions reports what committed") {
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle ha = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle bad =
      manager.register_source(reconstructible(1 * KiB), std::make_shared<PatternSource>(1, true));
  const std::vector<ActionSpec> actions = {{ActionKind::Ensure, ha, pinned, {}},
                                           {ActionKind::Ensure, ha, pinned, {}},
                                           {ActionKind::Ensure, bad, pinned, {}},
                                           {ActionKind::Drop, ha, pinned, {}}};
  try {
    manager.execute_actions(actions, "with-bad-source");
    FAIL("no error");
  } catch (const ResidencyPlanExecutionError &error) {
    const auto &d = error.details();
    CHECK(d.plan_name == "with-bad-source");
    CHECK(d.phase == ExecutionPhase::Execute);
    REQUIRE(d.failed_action_index.has_value());
    CHECK(*d.failed_action_index == 2);
    REQUIRE(d.partial_report.transitions.size() == 2); // the no-op counts
    CHECK(d.partial_report.transitions[1].no_op);
    CHECK(d.detail == "injected load failure");
    CHECK(d.cause == ErrorClass::None);
  }
  // What committed stays committed.
  CHECK(manager.replicas(ha) == std::vector<Location>{pageable, pinned});
  CHECK(manager.content_checksum(ha, pinned) == a.checksum);
}

TEST_CASE("manager: the trace keeps the last N completed transitions") {
  Manager manager(tracing(2));
  const Buffer a = pattern(64, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  manager.ensure(h, pinned);
  manager.drop(h, pinned);
  manager.drop(h, pinned);
  std::vector<TransitionReport> trace = manager.trace();
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].action == ActionKind::Drop);
  CHECK_FALSE(trace[0].no_op);
  CHECK(trace[1].no_op);
  manager.clear_trace();
  CHECK(manager.trace().empty());
  Manager silent(tracing(0));
  const Buffer b = pattern(64, 2);
  silent.ensure(adopt(silent, b, pageable), pageable);
  CHECK(silent.trace().empty());
}

TEST_CASE("manager: a lease exposes the bytes and protects until released") {
  Manager manager;
  const Buffer a = pattern(4 * KiB, 3), b = pattern(manager, pinned, 4 * KiB, 4);
  const Handle ha = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle hb = adopt(manager, b, pinned);
  const Handle both[] = {ha, ha};
  const std::uint64_t version = manager.state_version();
  {
    Lease lease = manager.acquire(both, pageable);
    CHECK(manager.state_version() == version + 1);
    CHECK(lease.handles().size() == 1); // duplicates collapse
    CHECK(lease.active());
    std::span<const std::byte> bytes = lease.value(ha);
    CHECK(checksum_of(bytes) == a.checksum);
    CHECK_THROWS_AS(lease.value(hb), std::out_of_range);
    manager.ensure(ha, pinned); // adding replicas elsewhere is allowed
    CHECK_THROWS_AS(manager.drop(ha, pageable), ResidencyInUseError);
    CHECK_THROWS_AS(manager.move(ha, Location::pinned()), ResidencyInUseError);
    CHECK_THROWS_AS(manager.discard(ha), ResidencyInUseError);
    lease.release();
    CHECK_FALSE(lease.active());
    CHECK_THROWS_AS(lease.value(ha), ResidencyLifetimeClosedError);
    lease.release(); // idempotent
  }
  CHECK_NOTHROW(manager.drop(ha, pageable));
  // Acquire is atomic and never materializes.
  const Handle mixed[] = {hb, ha};
  const std::uint64_t before = manager.state_version();
  CHECK_THROWS_AS(manager.acquire(mixed, pageable), ResidencyUnavailableError);
  CHECK(manager.state_version() == before);
  CHECK_THROWS_AS(manager.acquire(std::span<const Handle>{}, pinned), std::invalid_argument);
}

TEST_CASE("manager: holds stack, and a destroyed lifetime releases itself") {
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  manager.ensure(h, pinned);
  const Handle one[] = {h};
  Hold first = manager.hold(one, pinned);
  {
    Hold second = manager.hold(one, pinned);
    first.release();
    CHECK_THROWS_AS(manager.drop(h, pinned), ResidencyInUseError); // the second still protects
  }                                                                // released by its destructor
  CHECK_NOTHROW(manager.drop(h, pinned));
  Hold moved_from = manager.hold(one, pageable);
  Hold moved_to = std::move(moved_from);
  CHECK_FALSE(moved_from.active());
  CHECK(moved_to.active());
}

TEST_CASE("manager: reservations count against budgets and release their headroom") {
  Manager manager(budgeted(pinned, 10 * KiB));
  const Buffer a = pattern(6 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  {
    ActiveReservation workspace = manager.reserve(pinned, 6 * KiB, "key-switch workspace");
    CHECK(manager.account(pinned).reserved_bytes == 6 * KiB);
    CHECK(manager.account(pinned).peak_charged_bytes == 6 * KiB);
    try {
      manager.ensure(h, pinned);
      FAIL("admitted past the reservation");
    } catch (const ResidencyBudgetError &error) {
      CHECK(error.reserved_bytes() == 6 * KiB);
    }
    CHECK_THROWS_AS(manager.reserve(pinned, 5 * KiB, "more"), ResidencyBudgetError);
    CHECK_NOTHROW(manager.reserve(pinned, 0, "marker")); // zero bytes always fit
  }
  CHECK(manager.account(pinned).reserved_bytes == 0);
  CHECK_NOTHROW(manager.ensure(h, pinned));
  CHECK(manager.account(pinned).peak_charged_bytes == 6 * KiB);
  CHECK_THROWS_AS(manager.reserve(pinned, 1, "  "), std::invalid_argument);
  // A reservation at a new location registers it.
  ActiveReservation elsewhere = manager.reserve(pageable, 1 * KiB, "staging");
  CHECK(manager.account(pageable).reserved_bytes == 1 * KiB);
}

TEST_CASE("manager: snapshot lists values, replicas, tokens, locations and reservations") {
  Manager manager(budgeted(pinned, 64 * KiB));
  const Buffer a = pattern(4 * KiB, 1), b = pattern(manager, pinned, 2 * KiB, 2);
  const Handle ha = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle hb = adopt(manager, b, pinned);
  const Handle key = manager.register_source(
      ValueSpec{1 * KiB, 3 * KiB, ReplicaMode::Replicable, Recoverability::Reconstructible},
      std::make_shared<PatternSource>(5));
  manager.ensure(ha, pinned);
  manager.ensure(key, pinned);
  const Handle leased[] = {ha};
  Lease lease = manager.acquire(leased, pinned);
  Hold hold = manager.hold(leased, pinned);
  ActiveReservation workspace = manager.reserve(pinned, 8 * KiB, "workspace");
  manager.discard(hb);

  const Snapshot s = manager.snapshot();
  CHECK(s.manager_id == manager.id());
  CHECK(s.state_version == manager.state_version());
  REQUIRE(s.values.size() == 3);
  CHECK(s.values[0].handle_id == ha.handle_id);
  REQUIRE(s.values[0].materializations.size() == 2);
  CHECK(s.values[0].materializations[0].location == pageable); // installation order
  CHECK(s.values[0].materializations[1].location == pinned);
  CHECK(s.values[0].materializations[1].use_count == 1);
  CHECK(s.values[0].materializations[1].hold_count == 1);
  CHECK(s.values[1].discarded);
  CHECK(s.values[1].materializations.empty());
  CHECK(s.values[2].has_source);
  CHECK(s.values[2].source_location == pageable);
  CHECK(s.values[2].materializations[0].storage_nbytes == 1 * KiB); // real bytes
  CHECK(s.values[2].materializations[0].charged_nbytes == 3 * KiB); // the spec's charge
  REQUIRE(s.locations.size() == 2);
  const SnapshotLocation &p = s.locations[0];
  CHECK(p.location == pinned);
  CHECK(p.used_bytes == 7 * KiB);
  CHECK(p.reserved_bytes == 8 * KiB);
  CHECK(*p.remaining_budget_bytes == 64 * KiB - 15 * KiB);
  CHECK(p.peak_used_bytes == 9 * KiB); // a, b and the key before b was discarded
  CHECK(p.value_count == 2);
  CHECK(p.reservation_count == 1);
  CHECK(p.use_count == 1);
  CHECK(p.hold_count == 1);
  REQUIRE(s.reservations.size() == 1);
  CHECK(s.reservations[0].label == "workspace");

  const nlohmann::ordered_json j = s.to_json();
  CHECK(j["values"][0]["materializations"][1]["use_count"] == 1);
  CHECK(j["locations"][0]["remaining_budget_bytes"] == 49 * KiB);
  CHECK(j["locations"][1]["budget_bytes"].is_null());
  CHECK(j["reservations"][0]["label"] == "workspace");
  CHECK(j["values"][2]["recoverability"] == "reconstructible");
}

TEST_CASE("manager: snapshots show the backend's pools beside the manager's books") {
  Manager manager(budgeted(pinned, 64 * KiB));
  const Buffer a = pattern(8 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  manager.ensure(h, pinned);
  Snapshot s = manager.snapshot();
  REQUIRE(s.locations.size() == 2); // pinned (budgeted), then pageable
  CHECK(s.locations[0].used_bytes == 8 * KiB);
  CHECK(s.locations[0].pool_in_use_bytes == 8 * KiB); // whole pages: 8 KiB is two
  CHECK(s.locations[0].pool_idle_bytes == 0);
  CHECK_FALSE(s.locations[0].driver_free_bytes);
  CHECK_FALSE(s.locations[1].pool_in_use_bytes); // no pool for pageable memory
  manager.drop(h, pinned);
  s = manager.snapshot();
  CHECK(s.locations[0].used_bytes == 0);
  CHECK(s.locations[0].pool_in_use_bytes == 0);
  CHECK(s.locations[0].pool_idle_bytes == 8 * KiB); // kept for the next pinned value
  const nlohmann::ordered_json j = s.to_json();
  CHECK(j["locations"][0]["pool_idle_bytes"] == 8 * KiB);
  CHECK(j["locations"][1]["pool_in_use_bytes"].is_null());
  CHECK(j["locations"][0]["driver_free_bytes"].is_null());
}

TEST_CASE("manager: a scope runs reclaim, reservations, enter, then exit on close") {
  Manager manager(budgeted(pinned, 16 * KiB));
  const Buffer old_key = pattern(8 * KiB, 1), ct = pattern(6 * KiB, 2);
  const Handle old = adopt(manager, old_key, pageable, ReplicaMode::Replicable);
  const Handle hc = adopt(manager, ct, pageable);
  manager.ensure(old, pinned);
  auto source = std::make_shared<PatternSource>(3);
  const Handle key = manager.register_source(reconstructible(8 * KiB), source);
  PlanSpec plan;
  plan.name = "level-1";
  plan.reclaim = {{ActionKind::Drop, old, pinned, {}}};
  plan.reservations = {Reservation{pinned, 4 * KiB, "workspace"}};
  plan.enter = {{ActionKind::Ensure, key, pinned, {}}};
  plan.exit = {{ActionKind::Drop, key, pinned, {}}};
  // Without reclaim the plan would not fit: 8 (old) + 4 + 8 > 16.
  Scope scope = manager.scope(plan, manager.state_version());
  CHECK_THROWS_AS(scope.close(), std::logic_error);
  scope.enter();
  CHECK(manager.replicas(old) == std::vector<Location>{pageable});
  CHECK(manager.account(pinned).used_bytes == 8 * KiB);
  CHECK(manager.account(pinned).reserved_bytes == 4 * KiB);
  CHECK(manager.account(pinned).peak_charged_bytes == 12 * KiB);
  CHECK_THROWS_AS(manager.move(hc, pinned), ResidencyBudgetError); // the reservation holds its headroom
  scope.close();
  CHECK(manager.account(pinned).used_bytes == 0);
  CHECK(manager.account(pinned).reserved_bytes == 0);
  REQUIRE(scope.report().has_value());
  CHECK(scope.report()->transitions.size() == 3);
  CHECK(scope.report()->plan_name == "level-1");
  scope.close(); // idempotent
  CHECK_THROWS_AS(scope.enter(), std::logic_error);
}

TEST_CASE("manager: an infeasible scope runs nothing and is consumed") {
  Manager manager(budgeted(pinned, 8 * KiB));
  const Buffer a = pattern(6 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  PlanSpec plan;
  plan.name = "too-big";
  plan.reservations = {Reservation{pinned, 4 * KiB, "tmp"}};
  plan.enter = {{ActionKind::Ensure, h, pinned, {}}};
  const std::uint64_t version = manager.state_version();
  Scope scope = manager.scope(plan);
  CHECK_THROWS_AS(scope.enter(), ResidencyPlanError);
  CHECK(manager.state_version() == version);
  CHECK_NOTHROW(scope.close()); // a failed entry makes close a no-op
  CHECK_FALSE(scope.report().has_value());
  Scope stale = manager.scope(plan, version + 1);
  CHECK_THROWS_AS(stale.enter(), ResidencyStaleStateError);
}

TEST_CASE("manager: failures during entry and exit name their phase and keep what committed") {
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  const Handle bad =
      manager.register_source(reconstructible(1 * KiB), std::make_shared<PatternSource>(1, true));
  PlanSpec plan;
  plan.name = "enter-fails";
  plan.reservations = {Reservation{pinned, 1 * KiB, "tmp"}};
  plan.enter = {{ActionKind::Ensure, h, pinned, {}}, {ActionKind::Ensure, bad, pinned, {}}};
  Scope scope = manager.scope(plan);
  try {
    scope.enter();
    FAIL("entry succeeded");
  } catch (const ResidencyPlanExecutionError &error) {
    CHECK(error.details().phase == ExecutionPhase::Enter);
    CHECK(*error.details().failed_action_index == 1);
    CHECK(error.details().partial_report.transitions.size() == 1);
  }
  CHECK(manager.account(pinned).reserved_bytes == 0);                    // released after the failure
  CHECK(manager.replicas(h) == std::vector<Location>{pageable, pinned}); // not rolled back

  // Exit runs without a new preflight: the body made its drop illegal.
  const Buffer c = pattern(1 * KiB, 2);
  const Handle ct = adopt(manager, c, pageable);
  PlanSpec exit_plan;
  exit_plan.name = "exit-fails";
  exit_plan.reservations = {Reservation{pinned, 1 * KiB, "tmp"}};
  exit_plan.exit = {{ActionKind::Drop, ct, pinned, {}}};
  Scope second = manager.scope(exit_plan);
  CHECK_THROWS_AS(second.run([&] {
    manager.move(ct, pinned); // now the only replica is the one exit drops
    throw std::runtime_error("body failed");
  }),
                  std::runtime_error);
  REQUIRE(second.exit_error().has_value());
  CHECK(second.exit_error()->details().phase == ExecutionPhase::Exit);
  CHECK(second.exit_error()->details().cause == ErrorClass::Ownership);
  CHECK(manager.account(pinned).reserved_bytes == 0);
  CHECK_FALSE(second.report().has_value());
}

TEST_CASE("manager: an entered scope destroyed without close releases reservations, runs no exit") {
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  PlanSpec plan;
  plan.name = "abandoned";
  plan.reservations = {Reservation{pinned, 2 * KiB, "tmp"}};
  plan.enter = {{ActionKind::Ensure, h, pinned, {}}};
  plan.exit = {{ActionKind::Drop, h, pinned, {}}};
  {
    Scope scope = manager.scope(plan);
    scope.enter();
    CHECK(manager.account(pinned).reserved_bytes == 2 * KiB);
  }
  CHECK(manager.account(pinned).reserved_bytes == 0);
  CHECK(manager.replicas(h) == std::vector<Location>{pageable, pinned}); // exit did not run
  CHECK_THROWS_AS(manager.scope(PlanSpec{" ", {}, {}, {}, {}}), std::invalid_argument);
}

TEST_CASE("manager: close refuses while lifetimes remain, force clears them, then calls fail") {
  g_freed = 0;
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  manager.ensure(h, pinned);
  const Handle one[] = {h};
  Lease lease = manager.acquire(one, pinned);
  Hold hold = manager.hold(one, pageable);
  ActiveReservation reservation = manager.reserve(pinned, 1 * KiB, "tmp");
  const std::uint64_t version = manager.state_version();
  try {
    manager.close();
    FAIL("closed with live lifetimes");
  } catch (const ResidencyInUseError &error) {
    CHECK(std::string(error.what()).find("active_leases=1, pending_leases=0, holds=1, reservations=1") !=
          std::string::npos);
  }
  CHECK_FALSE(manager.closed());
  CHECK(manager.state_version() == version); // nothing changed
  lease.release();
  hold.release();
  CHECK_THROWS_AS(manager.close(), ResidencyInUseError); // the reservation still blocks
  manager.close(/*wait=*/true, /*force=*/true);
  CHECK(manager.closed());
  CHECK(g_freed == 1);                  // the adopted buffer was freed with its replica
  CHECK_NOTHROW(reservation.release()); // a silent no-op after close
  CHECK_FALSE(reservation.active());
  CHECK_THROWS_AS(manager.ensure(h, pinned), ResidencyClosedError);
  CHECK_THROWS_AS(manager.state_version(), ResidencyClosedError);
  CHECK_THROWS_AS(manager.snapshot(), ResidencyClosedError);
  CHECK_THROWS_AS(manager.reserve(pinned, 1, "x"), ResidencyClosedError);
  CHECK(manager.locations() == std::vector<Location>{pageable, pinned}); // still readable
  CHECK(manager.trace().size() == 1);
  CHECK_NOTHROW(manager.close()); // idempotent
}

TEST_CASE("manager: a scope whose manager closed cannot close, and runs no exit") {
  Manager manager;
  const Buffer a = pattern(1 * KiB, 1);
  const Handle h = adopt(manager, a, pageable, ReplicaMode::Replicable);
  PlanSpec plan;
  plan.name = "outlived";
  plan.enter = {{ActionKind::Ensure, h, pinned, {}}};
  plan.exit = {{ActionKind::Drop, h, pinned, {}}};
  Scope scope = manager.scope(plan);
  scope.enter();
  manager.close(); // no reservations or other lifetimes: allowed
  CHECK_THROWS_AS(scope.close(), ResidencyClosedError);
  CHECK_FALSE(scope.report().has_value());
  CHECK_NOTHROW(scope.close()); // counts as closed
}

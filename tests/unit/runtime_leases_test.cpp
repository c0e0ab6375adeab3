// CUDA leases on the simulated backend (§7.2, §7.4, §15, §17): consumer
// streams, events recorded at release, pending protection that blocks
// removal until the readers finish, reaping, release(wait), close(wait) and
// close(force), transfer streams, and abandoned lifetimes.
#include "simulated_fixture.hpp"

using namespace fhr;
using namespace fhr::test;

namespace {

SnapshotMaterialization materialization(const Snapshot &s, std::uint64_t handle_id, Location at) {
  for (const SnapshotValue &v : s.values)
    if (v.handle_id == handle_id)
      for (const SnapshotMaterialization &m : v.materializations)
        if (m.location == at) return m;
  FAIL("no materialization");
  return {};
}

/// A value resident on `device` with a consumer stream there.
struct DeviceValue {
  Handle handle;
  Stream stream;
};

DeviceValue device_value(Fixture &f, Location device, unsigned seed = 2) {
  const Handle h = f.adopt(4 * KiB, seed, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, device);
  return DeviceValue{h, f.backend->create_stream(device)};
}

/// Acquires, launches a reader on the stream and releases without waiting.
void read_and_release(Fixture &f, const DeviceValue &v, Location device) {
  const Handle handles[] = {v.handle};
  Lease lease = f.manager->acquire(handles, device, v.stream);
  f.backend->launch(v.stream);
  lease.release();
}

} // namespace

TEST_CASE("CUDA lease: a kernel still reading the value blocks its drop until the event completes") {
  Fixture f;
  const Handle h = f.adopt(8 * KiB, 3, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu0);
  const Stream compute = f.backend->create_stream(gpu0);
  const Handle handles[] = {h};
  Lease lease = f.manager->acquire(handles, gpu0, compute);
  CHECK(lease.location() == gpu0);
  CHECK(materialization(f.manager->snapshot(), h.handle_id, gpu0).use_count == 1);

  f.backend->launch(compute); // a kernel reads the leased value
  const std::uint64_t before = f.manager->state_version();
  lease.release();
  CHECK_FALSE(lease.active());
  CHECK(f.manager->state_version() == before + 1); // use token became a pending token
  Snapshot s = f.manager->snapshot();
  CHECK(materialization(s, h.handle_id, gpu0).use_count == 0);
  CHECK(materialization(s, h.handle_id, gpu0).pending_event_count == 1);
  CHECK(f.backend->live_events() == 1);

  try {
    f.manager->drop(h, gpu0);
    FAIL("drop of a pending replica succeeded");
  } catch (const ResidencyInUseError &error) {
    CHECK(std::string(error.what()) ==
          "materialization at cuda:0 is protected (active_reads=0, holds=0, pending_events=1)");
  }
  CHECK_THROWS_AS(f.manager->move(h, pinned, gpu0), ResidencyInUseError);
  CHECK_THROWS_AS(f.manager->discard(h), ResidencyInUseError);
  CHECK(f.manager->replicas(h) == std::vector<Location>{pageable, gpu0});

  // explain does not reap, but sees through completed events (§7.4).
  PlanSpec plan{"evict", {}, {}, {{ActionKind::Drop, h, gpu0, {}}}, {}};
  CHECK_FALSE(f.manager->explain(plan).feasible);
  f.backend->finish(compute);
  const std::uint64_t finished = f.manager->state_version(); // reading the version reaps
  CHECK(finished == before + 2);
  CHECK(f.backend->live_events() == 0);
  CHECK(f.manager->explain(plan).feasible);
  CHECK_FALSE(f.manager->drop(h, gpu0).no_op);
  f.check_invariants();
}

TEST_CASE("CUDA lease: explain sees through completed events without reaping") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const Handle h = v.handle;
  read_and_release(f, v, gpu0);
  f.backend->finish(v.stream);
  const std::uint64_t version = f.manager->state_version(); // reaps
  read_and_release(f, v, gpu0);
  f.backend->finish(v.stream);
  PlanSpec plan{"evict", {}, {}, {{ActionKind::Drop, h, gpu0, {}}}, {}};
  CHECK(f.manager->explain(plan).feasible);
  // explain changed nothing: the pending token is still there until a reap.
  CHECK(f.manager->explain(plan, version + 2).feasible);
  CHECK(f.manager->state_version() == version + 3);
}

TEST_CASE("CUDA lease: a backlog of pending leases on one stream is reaped with a few event queries") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const std::uint64_t queries_before = f.backend->event_queries();
  for (int i = 0; i < 40; ++i)
    read_and_release(f, v, gpu0); // every reader still runs
  f.backend->finish(v.stream);    // the first 40 are done
  for (int i = 0; i < 10; ++i)
    read_and_release(f, v, gpu0);
  // 50 leases on one stream: the first 40 complete, 10 still read.
  const Snapshot s = f.manager->snapshot(); // reaps in full
  CHECK(materialization(s, v.handle.handle_id, gpu0).pending_event_count == 10);
  CHECK(f.backend->live_events() == 10);
  // One query per lease would be 50 at the snapshot alone, more at the
  // backlog reaps; a binary search over the stream's events needs a few.
  CHECK(f.backend->event_queries() - queries_before <= 20);
  CHECK_THROWS_AS(f.manager->drop(v.handle, gpu0), ResidencyInUseError);
  f.backend->finish(v.stream);
  CHECK_FALSE(f.manager->drop(v.handle, gpu0).no_op);
  CHECK(f.backend->live_events() == 0);
  f.check_invariants();
}

TEST_CASE("CUDA lease: a lease on two streams completes only when both readers have") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const Stream other = f.backend->create_stream(gpu0);
  const Handle handles[] = {v.handle};
  Lease lease = f.manager->acquire(handles, gpu0, v.stream);
  lease.add_consumer_stream(other);
  f.backend->launch(v.stream);
  f.backend->launch(other);
  lease.release();
  read_and_release(f, v, gpu0); // a later lease on the first stream only
  f.backend->finish(v.stream);
  CHECK_THROWS_AS(f.manager->drop(v.handle, gpu0), ResidencyInUseError); // the other stream still reads
  CHECK(materialization(f.manager->snapshot(), v.handle.handle_id, gpu0).pending_event_count == 1);
  f.backend->finish(other);
  CHECK_FALSE(f.manager->drop(v.handle, gpu0).no_op);
}

TEST_CASE("CUDA lease: operations that cannot observe protection leave reaping to those that can") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const Handle other = f.adopt(4 * KiB, 5, pageable, ReplicaMode::Replicable);
  read_and_release(f, v, gpu0);
  const std::uint64_t version = f.manager->state_version();
  f.backend->finish(v.stream);
  // Neither an ensure nor a new lease depends on the pending token: they do
  // not query the event ...
  const std::uint64_t queries = f.backend->event_queries();
  f.manager->ensure(other, gpu0);
  const Handle handles[] = {other};
  Lease lease = f.manager->acquire(handles, gpu0, v.stream);
  CHECK(f.backend->event_queries() == queries);
  CHECK(f.backend->live_events() == 1);
  // ... but everything that reads protection or the version sees exactly
  // what reaping at each step would have given: ensure +1, acquire +1, the
  // reaped lease +1.
  CHECK(f.manager->state_version() == version + 3);
  CHECK(f.backend->live_events() == 0);
  CHECK_FALSE(f.manager->drop(v.handle, gpu0).no_op);
  lease.release();
}

TEST_CASE("CUDA lease: release(wait) synchronises the consumer streams") {
  Fixture f;
  const Handle h = f.adopt(4 * KiB, 2, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu1);
  const Stream a = f.backend->create_stream(gpu1), b = f.backend->create_stream(gpu1);
  const Handle handles[] = {h, h};
  Lease lease = f.manager->acquire(handles, gpu1, a);
  CHECK(lease.handles().size() == 1);
  lease.add_consumer_stream(b);
  lease.add_consumer_stream(b); // recorded once
  f.backend->launch(a);
  f.backend->launch(b, 3);
  const std::uint64_t version = f.manager->state_version();
  lease.release(/*wait=*/true);
  CHECK(f.manager->state_version() == version + 2); // pending, then completed
  CHECK(f.backend->live_events() == 0);
  CHECK(f.faults->count(Op::RecordEvent) == 2);
  CHECK_NOTHROW(f.manager->drop(h, gpu1));
  lease.release(); // idempotent
  CHECK_THROWS_AS(lease.add_consumer_stream(a), ResidencyLifetimeClosedError);
  CHECK_THROWS_AS(lease.value(h), ResidencyLifetimeClosedError);
}

TEST_CASE("CUDA lease: stream rules") {
  Fixture f;
  const Handle h = f.adopt(4 * KiB, 2, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu0);
  f.manager->ensure(h, pinned);
  const Stream s0 = f.backend->create_stream(gpu0), s1 = f.backend->create_stream(gpu1);
  const Handle handles[] = {h};
  CHECK_THROWS_AS(f.manager->acquire(handles, gpu0), std::invalid_argument);              // needs a stream
  CHECK_THROWS_AS(f.manager->acquire(handles, gpu0, s1), std::invalid_argument);          // wrong device
  CHECK_THROWS_AS(f.manager->acquire(handles, pinned, s0), std::invalid_argument);        // host takes none
  CHECK_THROWS_AS(f.manager->acquire(handles, gpu0, Stream{999}), std::invalid_argument); // foreign
  CHECK_THROWS_AS(f.manager->acquire(handles, gpu1, s1), ResidencyUnavailableError);      // not resident
  Lease host = f.manager->acquire(handles, pinned);
  CHECK_THROWS_AS(host.add_consumer_stream(s0), std::invalid_argument);
  Lease device = f.manager->acquire(handles, gpu0, s0);
  CHECK_THROWS_AS(device.add_consumer_stream(s1), std::invalid_argument);
  CHECK_THROWS_AS(device.add_consumer_stream(Stream{}), std::invalid_argument);
  // Transfer streams: CUDA destinations only, of the destination's device.
  CHECK_THROWS_AS(f.manager->ensure(h, gpu1, s0), std::invalid_argument);
  CHECK_THROWS_AS(f.manager->ensure(h, pageable, s0), std::invalid_argument);
  const ActionSpec action{ActionKind::Ensure, h, gpu1, {}};
  CHECK_THROWS_AS(f.manager->execute_actions({&action, 1}, "to-gpu1", std::nullopt, {{gpu1, s0}}),
                  std::invalid_argument);
  CHECK(f.manager->replicas(h) == std::vector<Location>{pageable, gpu0, pinned});
  CHECK(f.backend->live_events() == 0);
}

TEST_CASE("transfer streams order copies after the stream's earlier work") {
  Fixture f;
  const Handle h = f.adopt(4 * KiB, 5, pageable, ReplicaMode::Replicable);
  const DeviceValue other = device_value(f, gpu1, 6);
  const Stream copy_stream = other.stream;
  read_and_release(f, other, gpu1);
  CHECK(f.manager->snapshot().locations.back().pending_event_count == 1);
  // The copy on the same stream runs after the kernel, so its completion
  // also completes the lease's event; the next operation reaps it.
  const ActionSpec action{ActionKind::Ensure, h, gpu1, {}};
  const PlanReport report =
      f.manager->execute_actions({&action, 1}, "to-gpu1", std::nullopt, {{gpu1, copy_stream}});
  CHECK(report.transitions.size() == 1);
  CHECK(f.manager->content_checksum(h, gpu1) == f.checksums[0]);
  CHECK(f.manager->snapshot().locations.back().pending_event_count == 0);
  f.check_invariants();
}

TEST_CASE("close(wait) synchronises pending leases; close(wait=false) refuses while they run") {
  Fixture f;
  read_and_release(f, device_value(f, gpu0), gpu0);
  try {
    f.manager->close(/*wait=*/false);
    FAIL("closed with a pending lease");
  } catch (const ResidencyInUseError &error) {
    CHECK(std::string(error.what()) == "cannot close manager " + std::to_string(f.manager->id()) +
                                           ": active_leases=0, pending_leases=1, holds=0, reservations=0");
  }
  CHECK_FALSE(f.manager->closed());
  f.manager->close(/*wait=*/true);
  CHECK(f.manager->closed());
  CHECK(f.backend->live_events() == 0);
  CHECK(f.backend->allocated_bytes(gpu0) == 0);
}

TEST_CASE("close(force) synchronises every device in use and clears active CUDA leases") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const Handle handles[] = {v.handle};
  Lease lease = f.manager->acquire(handles, gpu0, v.stream);
  CHECK_THROWS_AS(f.manager->close(), ResidencyInUseError);
  f.manager->close(true, /*force=*/true);
  CHECK(f.backend->device_synchronizations() == 1);
  CHECK_NOTHROW(lease.release()); // cleared by the close: silent
  CHECK(f.backend->live_events() == 0);
}

TEST_CASE("an event that cannot be recorded: the streams are synchronised and the lease released") {
  Fixture f;
  const DeviceValue v = device_value(f, gpu0);
  const Handle h = v.handle;
  f.faults->fail_on(Op::RecordEvent, 1);
  read_and_release(f, v, gpu0);
  REQUIRE(f.warnings->size() == 1);
  CHECK(f.warnings->front().find("could not record a completion event") != std::string::npos);
  CHECK(f.backend->live_events() == 0);
  CHECK_NOTHROW(f.manager->drop(h, gpu0)); // nothing pending
}

TEST_CASE("abandoned lifetimes release themselves with a warning") {
  Fixture f({{pinned, 64 * KiB}});
  const Handle h = f.adopt(4 * KiB, 2, pageable, ReplicaMode::Replicable);
  f.manager->ensure(h, gpu0);
  f.manager->ensure(h, pinned);
  const Stream s = f.backend->create_stream(gpu0);
  const Handle handles[] = {h};
  {
    Lease device = f.manager->acquire(handles, gpu0, s);
    f.backend->launch(s);
    Hold hold = f.manager->hold(handles, pinned);
    ActiveReservation headroom = f.manager->reserve(pinned, 8 * KiB, "workspace");
    Lease released = f.manager->acquire(handles, pinned);
    released.release(); // released properly: no warning
  }
  REQUIRE(f.warnings->size() == 3);
  CHECK((*f.warnings)[0] == "reservation at pinned destroyed while active: released");
  CHECK((*f.warnings)[1] == "hold at pinned destroyed while active: released");
  CHECK((*f.warnings)[2] == "lease at cuda:0 destroyed while active: released");
  const Snapshot s1 = f.manager->snapshot();
  CHECK(materialization(s1, h.handle_id, gpu0).pending_event_count == 0); // as if release(wait=true)
  CHECK(f.manager->account(pinned).reserved_bytes == 0);
  CHECK_NOTHROW(f.manager->close(false));
}

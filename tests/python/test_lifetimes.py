"""Leases (host and simulated CUDA with pending events), holds, reservations, scopes."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import fhr
from conftest import CUDA0, CUDA1, array


def test_host_lease_mapping_and_release(manager):
    a, b = manager.adopt(array(16, 1)), manager.adopt(array(16, 2))
    lease = manager.acquire([a, b, a], at=fhr.PAGEABLE_HOST)
    assert lease.handles == (a, b) and lease.location == fhr.PAGEABLE_HOST and lease.active
    values = lease.values
    assert len(values) == 2 and list(values) == [a, b] and int(values[b][0]) == 2
    other = manager.adopt(array(4))
    with pytest.raises(KeyError):
        values[other]
    with pytest.raises(ValueError):
        lease.add_consumer_stream(manager._sim.create_stream(CUDA0))
    version = manager.state_version
    lease.release()
    lease.release()  # idempotent
    assert manager.state_version == version + 1 and not lease.active
    for use in (lambda: values[a], lambda: len(values), lambda: list(values), lambda: lease.values):
        with pytest.raises(fhr.ResidencyLifetimeClosedError):
            use()
    with pytest.raises(fhr.ResidencyLifetimeClosedError):
        lease.__enter__()


@pytest.fixture
def sim_manager(sim):
    m = fhr.ResidencyManager(backend=sim)
    yield m
    m.close(force=True)


def test_cuda_lease_stays_pending_until_its_stream_passes_the_event(sim, sim_manager):
    m = sim_manager
    h = m.adopt(array(64))
    m.move(h, CUDA0)
    stream = sim.create_stream(CUDA0)
    with pytest.raises(ValueError):  # a CUDA lease needs its consumer stream
        m.acquire([h], at=CUDA0)
    with pytest.raises(ValueError):
        m.acquire([h], at=CUDA0, consumer_stream=sim.create_stream(CUDA1))
    with pytest.raises(TypeError):
        m.acquire([h], at=CUDA0, consumer_stream="stream")
    with pytest.raises(ValueError):
        m.acquire([], at=CUDA0, consumer_stream=stream)
    with m.acquire([h], at=CUDA0, consumer_stream=stream) as values:
        assert (values[h] == 7).all()
        sim.launch(stream)  # a kernel still reads the value
    snap = m.snapshot().values[0].materializations[0]
    assert (snap.use_count, snap.pending_event_count) == (0, 1)
    with pytest.raises(fhr.ResidencyInUseError, match="pending_events=1"):
        m.move(h, fhr.PAGEABLE_HOST)
    sim.finish(stream)
    m.move(h, fhr.PAGEABLE_HOST)
    assert sim.live_events == 0


def test_release_wait_and_extra_consumer_streams(sim, sim_manager):
    m = sim_manager
    h = m.adopt(array(64), replica_mode=fhr.ReplicaMode.REPLICABLE)
    m.ensure(h, CUDA0)
    first, second = sim.create_stream(CUDA0), sim.create_stream(CUDA0)
    lease = m.acquire([h], at=CUDA0, consumer_stream=first)
    lease.add_consumer_stream(second)
    lease.add_consumer_stream(second)
    with pytest.raises(ValueError):
        lease.add_consumer_stream(sim.create_stream(CUDA1))
    sim.launch(second)
    version = m.state_version
    lease.release(wait=True)  # synchronises the events: nothing stays pending
    assert m.state_version == version + 2
    assert m.snapshot().values[0].materializations[1].pending_event_count == 0
    with pytest.raises(fhr.ResidencyLifetimeClosedError):
        lease.add_consumer_stream(first)


def test_abandoned_lease_is_released_with_a_resource_warning(sim_manager):
    h = sim_manager.adopt(array(8))
    lease = sim_manager.acquire([h], at=fhr.PAGEABLE_HOST)
    with pytest.warns(ResourceWarning):
        del lease
        gc.collect()
    sim_manager.move(h, fhr.PINNED_HOST)  # no longer protected


def test_holds_and_reservations(sim_manager):
    m = sim_manager
    h = m.adopt(array(8))
    with m.hold([h], at=fhr.PAGEABLE_HOST) as hold:
        assert hold.active and hold.handles == (h,)
        with pytest.raises(RuntimeError):
            hold.__enter__()
        with pytest.raises(fhr.ResidencyInUseError):
            m.move(h, fhr.PINNED_HOST)
    assert not hold.active
    with pytest.raises(fhr.ResidencyLifetimeClosedError):
        hold.__enter__()
    with pytest.raises(fhr.ResidencyUnavailableError):
        m.hold([h], at=fhr.PINNED_HOST)
    with pytest.raises(TypeError):
        m.reserve(fhr.PINNED_HOST, True, label="x")
    with pytest.raises(ValueError):
        m.reserve(fhr.PINNED_HOST, 8, label=" ")
    with m.reserve(CUDA0, 0, label="zero") as r:
        assert (r.location, r.nbytes, r.label, r.active) == (CUDA0, 0, "zero", True)
        assert m.snapshot().locations[-1].reservation_count == 1
    assert not r.active


def plan_for(h, name="stage"):
    return fhr.ResidencyPlan(
        name,
        enter=(fhr.MoveResident(h, CUDA0),),
        exit=(fhr.MoveResident(h, fhr.PAGEABLE_HOST, from_location=CUDA0),),
        reservations=(fhr.MemoryReservation(CUDA0, 100, "workspace"),),
    )


def test_explain_and_scopes(sim):
    m = fhr.ResidencyManager({CUDA0: 200}, backend=sim)
    h = m.adopt(array(64))
    plan = plan_for(h)
    explanation = m.explain(plan)
    assert explanation.feasible and [a.action for a in explanation.actions] == [*plan.enter, *plan.exit]
    assert dict(explanation.predicted_peak_bytes)[CUDA0] == 164
    assert explanation.actions[0].source == fhr.PAGEABLE_HOST
    with pytest.raises(fhr.ResidencyStaleStateError):
        m.explain(plan, expected_state_version=m.state_version + 1)
    scope = m.scope(plan)
    with pytest.raises(RuntimeError):
        scope.close()
    with scope:
        assert m.snapshot().locations[0].reserved_bytes == 100
        with pytest.raises(RuntimeError):
            scope.__enter__()
    assert [t.destination for t in scope.report.transitions] == [CUDA0, fhr.PAGEABLE_HOST]
    assert scope.report.transitions[1].action is plan.exit[0]
    scope.close()  # idempotent
    too_big = fhr.ResidencyPlan("big", reservations=(fhr.MemoryReservation(CUDA0, 500, "huge"),))
    explanation = m.explain(too_big)
    assert not explanation.feasible and "Reservation 'huge' exceeds budget at cuda:0" in explanation.reason
    with pytest.raises(fhr.ResidencyPlanError):
        with m.scope(too_big):
            pass
    m.close()


def test_plan_execution_errors_carry_partial_reports(sim):
    m = fhr.ResidencyManager(backend=sim)
    a, b = m.adopt(array(32)), m.adopt(array(32))
    actions = [fhr.MoveResident(a, fhr.PINNED_HOST), fhr.MoveResident(b, fhr.PINNED_HOST)]
    sim.fail_on("allocate", 2)
    with pytest.raises(fhr.ResidencyPlanExecutionError) as caught:
        m.execute_actions(actions, name="stage-in")
    e = caught.value
    assert (e.plan_name, e.phase, e.failed_action_index, e.failed_action) == ("stage-in", "execute", 1, actions[1])
    assert [t.action for t in e.partial_report.transitions] == actions[:1]
    assert isinstance(e.__cause__, fhr.BackendError)
    with pytest.raises(fhr.ResidencyPlanError):  # the preflight: nothing runs
        m.execute_actions([fhr.DropResident(a, fhr.PINNED_HOST)])
    with pytest.raises(TypeError):
        m.execute_actions([3])
    with pytest.raises(ValueError):
        m.execute_actions([], name=" ")
    assert m.execute_actions([]).transitions == ()
    m.close()


def test_scope_exit_failure_is_noted_on_the_body_error(sim):
    m = fhr.ResidencyManager(backend=sim)
    h = m.adopt(array(16))
    plan = fhr.ResidencyPlan("p", enter=(fhr.MoveResident(h, CUDA0),), exit=(fhr.MoveResident(h, fhr.PINNED_HOST),))
    scope = m.scope(plan)
    with pytest.raises(ZeroDivisionError) as caught:
        with scope:
            sim.fail_on("allocate", 1)
            1 / 0
    assert any("exit failed" in note for note in caught.value.__notes__)
    assert scope.exit_error.phase == "exit" and scope.report is None
    m.close()

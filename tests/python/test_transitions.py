"""Adopt, sources, the primitive transitions, reports, snapshots, trace, close."""

from __future__ import annotations

import numpy as np
import pytest

import fhr
from conftest import CUDA0, CUDA1, array


def test_adopt_is_zero_copy_and_counts_versions(manager):
    value = array(4096)
    h = manager.adopt(value, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert h.value_type is np.ndarray and h.manager_id == manager.manager_id
    assert manager.state_version == 2  # install + the new pageable location (§9)
    with manager.acquire([h], at=fhr.PAGEABLE_HOST) as values:
        assert values[h] is value  # the adopted object itself
    rep = manager.ensure(h, fhr.PINNED_HOST)
    assert (rep.no_op, rep.source, rep.destination) == (False, fhr.PAGEABLE_HOST, fhr.PINNED_HOST)
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        copy = values[h]
        assert copy.dtype == np.uint8 and copy.shape == (4096,) and (copy == 7).all()
        assert copy.__array_interface__["data"][0] != value.__array_interface__["data"][0]
        assert not copy.flags.writeable
    noop = manager.ensure(h, fhr.PINNED_HOST)
    assert noop.no_op and noop.reason == "destination already resident" and noop.source is None


def test_adopt_bad_input_classes(manager, sim):
    with pytest.raises(TypeError):
        manager.adopt(object())
    with pytest.raises(fhr.ResidencyMaterializationError, match="not C-contiguous"):
        manager.adopt(np.zeros((8, 8), np.uint8)[:, ::2])
    with pytest.raises(fhr.ResidencyMaterializationError, match="does not match"):
        manager.adopt(array(), at=CUDA0)  # host memory on a device location
    with pytest.raises(TypeError):
        manager.adopt(array(), replica_mode="exclusive")
    with pytest.raises(ValueError):
        manager.adopt(array(), at=fhr.cuda_location("cuda:9"))
    base = np.zeros(64, np.uint8)
    manager.adopt(base)
    with pytest.raises(fhr.ResidencyOwnershipError, match="independent backing storage"):
        manager.adopt(base[8:16])  # §2.7: aliases managed storage
    assert [v.handle.handle_id for v in manager.snapshot().values] == ["1"]  # the failed adopt left nothing


def test_buffers_of_any_kind(manager):
    data = bytearray(b"residency")
    h = manager.adopt(data, replica_mode=fhr.ReplicaMode.REPLICABLE)
    manager.ensure(h, CUDA1)
    with manager.acquire([h], at=CUDA1, consumer_stream=manager_stream(manager, CUDA1)) as values:
        assert bytes(values[h]) == b"residency"
    with pytest.raises(BufferError):  # the adopted bytearray is the manager's now
        data.extend(b"!")


def manager_stream(manager, device):
    return manager._sim.create_stream(device)


def test_budget_error_fields(sim):
    m = fhr.ResidencyManager({fhr.PINNED_HOST: 1000}, backend=sim)
    h = m.adopt(array(800), replica_mode=fhr.ReplicaMode.REPLICABLE)
    reservation = m.reserve(fhr.PINNED_HOST, 300, label="workspace")
    with pytest.raises(fhr.ResidencyBudgetError) as caught:
        m.ensure(h, fhr.PINNED_HOST)
    e = caught.value
    assert (e.location, e.budget_bytes, e.used_bytes, e.reserved_bytes, e.requested_bytes) == (
        "pinned-host", 1000, 0, 300, 800)
    reservation.release()
    m.close()


def test_moves_drops_discards_and_their_errors(manager):
    h = manager.adopt(array(256))  # EXCLUSIVE
    with pytest.raises(fhr.ResidencyOwnershipError):
        manager.move(h, CUDA0)  # fine
        manager.ensure(h, fhr.PINNED_HOST)
    assert [m.location for m in manager.snapshot().values[0].materializations] == [CUDA0]
    with pytest.raises(fhr.ResidencyUnavailableError):
        manager.move(h, fhr.PINNED_HOST, from_location=fhr.PAGEABLE_HOST)
    with pytest.raises(fhr.ResidencyOwnershipError, match="final MUST_PRESERVE"):
        manager.drop(h, CUDA0)
    absent = manager.drop(h, fhr.PINNED_HOST)
    assert absent.no_op and absent.reason == "materialization already absent"
    hold = manager.hold([h], at=CUDA0)
    with pytest.raises(fhr.ResidencyInUseError):
        manager.discard(h)
    hold.release()
    report = manager.discard(h)
    assert report.source is None and report.destination is None and not report.no_op
    with pytest.raises(fhr.ResidencyHandleError, match="discarded"):
        manager.discard(h)
    with pytest.raises(fhr.ResidencyHandleError):
        manager.ensure("not a handle", CUDA0)
    with pytest.raises(TypeError):
        manager.adopt(array(), at="pinned")


def test_foreign_handles(sim):
    a, b = fhr.ResidencyManager(backend=sim), fhr.ResidencyManager(backend=sim)
    h = a.adopt(array())
    with pytest.raises(fhr.ResidencyHandleError, match="belongs to manager"):
        b.ensure(h, fhr.PINNED_HOST)
    with pytest.raises(fhr.ResidencyHandleError):
        b.acquire([h], at=fhr.PAGEABLE_HOST)
    a.close(force=True)
    b.close()


class Loader:
    def __init__(self, value, manager=None):
        self.value, self.manager, self.calls = value, manager, 0

    def load(self):
        self.calls += 1
        if self.manager is not None:
            self.manager.snapshot()  # §13: refused while the loader runs
        return self.value.copy()


def spec(n, mode=fhr.ReplicaMode.REPLICABLE):
    return fhr.ResidencyValueSpec(np.ndarray, n, n, mode, fhr.Recoverability.RECONSTRUCTIBLE)


def test_reports_time_the_host_before_the_copy_and_the_source(manager):
    h = manager.adopt(array(16 * 1024), replica_mode=fhr.ReplicaMode.REPLICABLE)
    rep = manager.ensure(h, fhr.PINNED_HOST)
    # Issued once its destination was allocated, inside the span.
    assert rep.started_at_ns <= rep.copy_issued_at_ns <= rep.completed_at_ns
    assert rep.source_load_ns == 0
    noop = manager.ensure(h, fhr.PINNED_HOST)
    assert noop.no_op and noop.copy_issued_at_ns is None
    assert manager.drop(h, fhr.PAGEABLE_HOST).copy_issued_at_ns is None  # a removal copies nothing
    key = np.arange(8192, dtype=np.uint16)
    loaded = manager.ensure(manager.register_source(spec(key.nbytes), Loader(key)), fhr.PINNED_HOST)
    assert 0 < loaded.source_load_ns <= loaded.completed_at_ns - loaded.started_at_ns
    assert loaded.started_at_ns + loaded.source_load_ns <= loaded.copy_issued_at_ns <= loaded.completed_at_ns


def test_sources_load_on_demand_and_are_validated(manager):
    key = np.arange(512, dtype=np.uint16)
    loader = Loader(key)
    h = manager.register_source(spec(key.nbytes), loader)
    assert loader.calls == 0
    manager.ensure(h, CUDA0)
    assert loader.calls == 1
    with manager.acquire([h], at=CUDA0, consumer_stream=manager._sim.create_stream(CUDA0)) as values:
        assert (values[h] == key).all() and values[h].dtype == np.uint16
    manager.drop(h, CUDA0)  # reconstructible: may lose its last replica
    with pytest.raises(TypeError):
        manager.register_source(spec(8), object())
    with pytest.raises(ValueError):
        manager.register_source(
            fhr.ResidencyValueSpec(np.ndarray, 8, 8, fhr.ReplicaMode.EXCLUSIVE, fhr.Recoverability.MUST_PRESERVE),
            loader)
    wrong = manager.register_source(spec(16), Loader(np.zeros(8, np.uint8)))
    with pytest.raises(fhr.ResidencyMaterializationError, match="Logical payload size mismatch"):
        manager.ensure(wrong, fhr.PINNED_HOST)


def test_loader_errors_propagate_unchanged_and_reentry_is_refused(manager):
    class Broken:
        def load(self):
            raise KeyError("no such key file")

    h = manager.register_source(spec(8), Broken())
    with pytest.raises(KeyError, match="no such key file"):
        manager.ensure(h, fhr.PINNED_HOST)
    reentrant = manager.register_source(spec(8), Loader(np.zeros(8, np.uint8), manager))
    with pytest.raises(fhr.ResidencyReentrancyError):
        manager.ensure(reentrant, fhr.PINNED_HOST)
    assert manager.snapshot().locations[0].reserved_bytes == 0  # the temporary charge went (§4.5)


def test_snapshot_trace_and_close(sim):
    m = fhr.ResidencyManager({fhr.PINNED_HOST: 4096}, trace_capacity=2, backend=sim)
    h = m.adopt(array(100), replica_mode=fhr.ReplicaMode.REPLICABLE)
    m.ensure(h, fhr.PINNED_HOST)
    m.ensure(h, CUDA0)
    m.ensure(h, CUDA0)
    trace = m.trace()
    assert len(trace) == 2 and trace[-1].no_op and trace[0].destination == CUDA0
    assert trace[0].action == fhr.EnsureResident(h, CUDA0)
    m.clear_trace()
    assert m.trace() == ()
    snap = m.snapshot()
    assert snap.manager_id == m.manager_id and snap.state_version == m.state_version
    value = snap.values[0]
    assert value.spec.logical_nbytes == 100 and not value.has_source and value.source_location is None
    assert [x.location for x in value.materializations] == [fhr.PAGEABLE_HOST, fhr.PINNED_HOST, CUDA0]
    pinned = snap.locations[0]
    assert (pinned.budget_bytes, pinned.used_bytes, pinned.remaining_budget_bytes) == (4096, 100, 3996)
    r = m.reserve(fhr.PINNED_HOST, 10, label="scratch")
    with pytest.raises(fhr.ResidencyInUseError, match="reservations=1"):
        m.close()
    r.release()
    with m:
        pass
    assert m.closed
    with pytest.raises(fhr.ResidencyClosedError):
        m.snapshot()
    with pytest.raises(fhr.ResidencyClosedError):
        m.state_version
    with pytest.raises(fhr.ResidencyClosedError):
        m.adopt(array())
    assert m.locations and m.trace() == ()  # still answer after close (quirk)
    with pytest.raises(fhr.ResidencyClosedError):
        with m:
            pass

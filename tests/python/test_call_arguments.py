"""The arguments of the methods bound as vectorcall methods (acquire, the
transitions, a lease's release, close, __enter__ and __exit__): the same
keywords, defaults and positional rules as the type annotations
(`_fhr.pyi`), with Python's errors."""

from __future__ import annotations

import gc
import inspect
import warnings
import weakref

import numpy as np
import pytest

import fhr
from conftest import CUDA0, CUDA1, array


@pytest.fixture
def setup(sim, manager):
    h = manager.adopt(array(64), replica_mode=fhr.ReplicaMode.REPLICABLE)
    manager.ensure(h, CUDA0)
    return manager, h, sim.create_stream(CUDA0)


def name(text: str) -> str:
    """`text` as a string made at run time, not the interned one a call site passes."""
    return "".join(list(text))


def test_acquire_takes_handles_by_position_or_name_and_the_rest_by_name(setup):
    m, h, stream = setup
    for lease in (
        m.acquire([h], at=CUDA0, consumer_stream=stream),
        m.acquire(handles=(h, h), at=CUDA0, consumer_stream=stream),
        m.acquire(consumer_stream=stream, at=CUDA0, handles=iter([h])),
        m.acquire([h], **{name("at"): CUDA0, name("consumer_stream"): stream}),
    ):
        assert lease.active and lease.handles == (h,) and lease.location == CUDA0
        lease.release()
        assert not lease.active
    host = m.acquire([h], at=fhr.PAGEABLE_HOST)  # consumer_stream defaults to None
    assert host.active and host.location == fhr.PAGEABLE_HOST
    host.release()
    with pytest.raises(ValueError, match="needs a consumer stream"):  # None: no stream, on CUDA
        m.acquire([h], at=CUDA0, consumer_stream=None)
    assert fhr.ResidencyManager.acquire(m, [h], at=fhr.PAGEABLE_HOST).handles == (h,)


def test_acquire_argument_errors(setup):
    m, h, stream = setup
    with pytest.raises(TypeError, match=r"acquire\(\) takes at most 1 positional argument \(2 given\)"):
        m.acquire([h], CUDA0)  # at is keyword-only
    with pytest.raises(TypeError, match="unexpected keyword argument 'stream'"):
        m.acquire([h], at=CUDA0, stream=stream)
    with pytest.raises(TypeError, match="unexpected keyword argument 'At'"):
        m.acquire([h], **{"At": CUDA0})
    with pytest.raises(TypeError, match="multiple values for argument 'handles'"):
        m.acquire([h], handles=[h], at=CUDA0, consumer_stream=stream)
    with pytest.raises(TypeError, match="missing required argument 'at'"):
        m.acquire([h], consumer_stream=stream)
    with pytest.raises(TypeError, match="missing required argument 'handles'"):
        m.acquire(at=CUDA0, consumer_stream=stream)
    # Wrong types: the errors the pybind11 binding raised.
    with pytest.raises(TypeError, match="at must be a ResidencyLocation"):
        m.acquire([h], at="cuda:0", consumer_stream=stream)
    with pytest.raises(TypeError, match="a CUDA stream must be"):
        m.acquire([h], at=CUDA0, consumer_stream="stream")
    with pytest.raises(TypeError, match="an iterable of ResidencyHandle values"):
        m.acquire(3, at=CUDA0, consumer_stream=stream)
    with pytest.raises(TypeError, match="need ResidencyHandle values"):
        m.acquire((h, 3), at=CUDA0, consumer_stream=stream)
    with pytest.raises(fhr.ResidencyUnavailableError):  # a runtime error, translated
        m.acquire([h], at=CUDA1, consumer_stream=m._sim.create_stream(CUDA1))
    with pytest.raises(TypeError, match="doesn't apply"):  # self is checked
        fhr.ResidencyManager.acquire(object(), [h], at=CUDA0)
    assert m.snapshot().values[0].materializations[1].use_count == 0  # no failed call left a lease


def test_lease_release_and_close_take_wait_by_name_only(setup):
    m, h, stream = setup
    for method in ("release", "close"):
        lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
        m._sim.launch(stream)
        getattr(lease, method)(wait=True)  # waits for the stream: nothing stays pending
        snap = m.snapshot().values[0].materializations[1]
        assert (snap.use_count, snap.pending_event_count) == (0, 0)
        lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
        m._sim.launch(stream)
        getattr(lease, method)(**{name("wait"): False})
        assert m.snapshot().values[0].materializations[1].pending_event_count == 1
        m._sim.finish(stream)
        lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
        with pytest.raises(TypeError, match=rf"{method}\(\) takes no positional arguments \(1 given\)"):
            getattr(lease, method)(True)
        with pytest.raises(TypeError, match="unexpected keyword argument 'when'"):
            getattr(lease, method)(when=True)
        with pytest.raises(TypeError, match="wait must be a bool, not str"):
            getattr(lease, method)(wait="yes")
        assert lease.active  # none of these released it
        getattr(lease, method)(wait=np.bool_(True))  # pybind11's conversion to bool, as before
        assert not lease.active
        getattr(lease, method)()  # idempotent
        assert not lease.active


def test_lease_context_manager_arguments(setup):
    m, h, stream = setup
    lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
    with pytest.raises(TypeError, match=r"__enter__\(\) takes no positional arguments"):
        lease.__enter__(1)
    with pytest.raises(TypeError, match=r"__exit__\(\) takes no keyword arguments"):
        lease.__exit__(exc_type=None)
    assert lease.active
    with lease as values:
        assert isinstance(values, fhr.BorrowedValues) and (values[h] == 7).all()
    assert not lease.active
    other = m.acquire([h], at=CUDA0, consumer_stream=stream)
    other.__exit__()  # any number of positional arguments
    assert not other.active
    with pytest.raises(KeyError):  # the body's exception goes through __exit__
        with m.acquire([h], at=CUDA0, consumer_stream=stream):
            raise KeyError("body")
    assert m.snapshot().values[0].materializations[1].use_count == 0


def test_a_released_lease_goes_without_a_warning_and_an_abandoned_one_warns(setup):
    m, h, stream = setup
    lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
    lease.release()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del lease
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    lease = m.acquire([h], at=fhr.PAGEABLE_HOST)
    with pytest.warns(ResourceWarning, match="destroyed while active"):
        del lease
        gc.collect()
    assert m.snapshot().values[0].materializations[0].use_count == 0


def test_transitions_take_their_arguments_by_position_or_name(setup):
    m, h, stream = setup
    report = m.ensure(h, CUDA0)
    assert report.no_op and report.destination == CUDA0
    report = m.ensure(handle=h, at=fhr.PINNED_HOST, stream=None)
    assert not report.no_op and report.destination == fhr.PINNED_HOST
    report = m.copy(h, to=CUDA1, stream=m._sim.create_stream(CUDA1))
    assert report.destination == CUDA1 and report.source is not None
    report = m.move(h, CUDA0, from_location=CUDA1)
    assert (report.source, report.destination) == (CUDA1, CUDA0)
    report = m.drop(handle=h, at=fhr.PINNED_HOST)
    assert report.source == fhr.PINNED_HOST
    report = m.drop(h, **{name("at"): CUDA0})
    assert report.source == CUDA0
    locations = [x.location for x in m.snapshot().values[0].materializations]
    assert locations == [fhr.PAGEABLE_HOST]
    gone = m.adopt(array(8))
    assert m.discard(handle=gone).action == fhr.DiscardValue(gone)
    with pytest.raises(fhr.ResidencyHandleError):
        m.ensure(gone, fhr.PINNED_HOST)


def test_transition_argument_errors(setup):
    m, h, stream = setup
    with pytest.raises(TypeError, match=r"ensure\(\) takes at most 2 positional arguments \(3 given\)"):
        m.ensure(h, CUDA0, stream)  # stream is keyword-only
    with pytest.raises(TypeError, match=r"move\(\) takes at most 2 positional arguments"):
        m.move(h, CUDA0, CUDA1)  # so is from_location
    with pytest.raises(TypeError, match="multiple values for argument 'at'"):
        m.ensure(h, CUDA0, at=CUDA0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'at'"):
        m.copy(h, at=CUDA0)
    with pytest.raises(TypeError, match="missing required argument 'to'"):
        m.move(h)
    with pytest.raises(TypeError, match="missing required argument 'handle'"):
        m.discard()
    with pytest.raises(TypeError, match=r"drop\(\) takes at most 2 positional arguments"):
        m.drop(h, CUDA0, None)
    # Wrong types: the errors the pybind11 binding raised.
    with pytest.raises(TypeError, match="must be ResidencyLocation values"):
        m.ensure(h, "cuda:0")
    with pytest.raises(TypeError, match="from_location must be a ResidencyLocation"):
        m.move(h, CUDA0, from_location="cuda:1")
    with pytest.raises(TypeError, match="a CUDA stream must be"):
        m.ensure(h, fhr.PINNED_HOST, stream="stream")
    with pytest.raises(fhr.ResidencyHandleError, match="expected a ResidencyHandle, not int"):
        m.ensure(3, CUDA0)
    assert [x.location for x in m.snapshot().values[0].materializations] == [fhr.PAGEABLE_HOST, CUDA0]


def test_signatures_match_the_type_annotations():
    signature = inspect.signature
    assert str(signature(fhr.ResidencyManager.acquire)) == "(self, /, handles, *, at, consumer_stream=None)"
    assert str(signature(fhr.ResidencyManager.ensure)) == "(self, /, handle, at, *, stream=None)"
    assert str(signature(fhr.ResidencyManager.copy)) == "(self, /, handle, to, *, stream=None)"
    assert (str(signature(fhr.ResidencyManager.move))
            == "(self, /, handle, to, *, from_location=None, stream=None)")
    assert str(signature(fhr.ResidencyManager.drop)) == "(self, /, handle, at)"
    assert str(signature(fhr.ResidencyManager.discard)) == "(self, /, handle)"
    assert str(signature(fhr.ResidencyLease.release)) == "(self, /, *, wait=False)"
    assert str(signature(fhr.ResidencyLease.close)) == "(self, /, *, wait=False)"
    assert str(signature(fhr.ResidencyLease.__exit__)) == "(self, /, *args)"


def test_an_instance_never_initialised_raises_instead_of_crashing():
    # A lease comes from acquire alone: Python cannot make one.
    with pytest.raises(TypeError):
        fhr.ResidencyLease()
    with pytest.raises(TypeError):
        fhr.ResidencyLease.__new__(fhr.ResidencyLease)
    # Nor by giving the type a __new__ of its own: it cannot be changed.
    with pytest.raises(TypeError):
        fhr.ResidencyLease.__new__ = staticmethod(lambda cls: object.__new__(cls))
    with pytest.raises(TypeError):
        fhr.ResidencyLease.release = lambda self: None
    # __new__ alone makes a manager's Python object without the C++ one
    # behind it: the fast methods check for it, as pybind11's dispatcher does.
    manager = fhr.ResidencyManager.__new__(fhr.ResidencyManager)
    with pytest.raises(TypeError):
        manager.ensure(object(), fhr.PAGEABLE_HOST)


def test_a_lease_can_be_referred_to_weakly(setup):
    # As pybind11's instances could: weakref.finalize tracks a lease's end.
    m, h, stream = setup
    lease = m.acquire([h], at=CUDA0, consumer_stream=stream)
    reference = weakref.ref(lease)
    ended = []
    weakref.finalize(lease, ended.append, "gone")
    assert reference() is lease
    lease.release()
    del lease
    gc.collect()
    assert reference() is None
    assert ended == ["gone"]

"""Reference counts, retained aliases, threads, the GIL."""

from __future__ import annotations

import sys
import threading

import numpy as np

import fhr
from conftest import CUDA0, array


def test_no_leak_after_a_thousand_adopt_discard_cycles(manager):
    value = array(4096)
    before = sys.getrefcount(value)
    for _ in range(1000):
        h = manager.adopt(value)
        manager.move(h, CUDA0)
        manager.move(h, fhr.PAGEABLE_HOST)  # back into manager storage: the adopted object is let go
        manager.discard(h)
    assert sys.getrefcount(value) == before
    for _ in range(1000):
        h = manager.adopt(value)
        manager.discard(h)  # the adopted replica itself goes
    assert sys.getrefcount(value) == before
    assert manager._sim.allocated_bytes(CUDA0) == 0


def test_a_value_kept_past_its_lease_keeps_its_bytes(manager):
    h = manager.adopt(np.arange(256, dtype=np.int32), replica_mode=fhr.ReplicaMode.REPLICABLE)
    manager.ensure(h, fhr.PINNED_HOST)
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        kept = values[h]
    manager.drop(h, fhr.PINNED_HOST)  # the replica (and its accounting) goes, the memory waits for `kept`
    assert manager.snapshot().locations[-1].used_bytes == 0
    assert int(kept.sum()) == sum(range(256))


def test_threads_share_a_manager(sim):
    m = fhr.ResidencyManager(backend=sim)
    handles = [m.adopt(array(1024, i), replica_mode=fhr.ReplicaMode.REPLICABLE) for i in range(8)]
    errors = []

    def work(i):
        try:
            for _ in range(200):
                h = handles[i]
                m.ensure(h, fhr.PINNED_HOST)
                with m.acquire([h], at=fhr.PINNED_HOST) as values:
                    assert int(values[h][0]) == i
                m.drop(h, fhr.PINNED_HOST)
                m.snapshot()
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert m.snapshot().locations[-1].used_bytes == 0
    m.close()

"""Composite values (TensorResident-style: ``_resident_tensors`` and
``_with_resident_tensors``) of several NumPy arrays on the host: one managed
value of one block, adopted and acquired without copies, replicas that keep
every tensor at its offset, and the refusals with their classes."""

from __future__ import annotations

import numpy as np
import pytest

import fhr
from conftest import CUDA0


class Pair:
    """A fake ciphertext: two tensors (c0, c1) and a level that travels
    with the value, rebuilt around new tensors as FHElium's types are."""

    def __init__(self, c0, c1, level: int = 3) -> None:
        self.c0, self.c1, self.level = c0, c1, level

    @property
    def _resident_tensors(self):
        return (self.c0, self.c1)

    def _with_resident_tensors(self, tensors):
        c0, c1 = tensors
        return Pair(c0, c1, self.level)


def one_block_pair() -> tuple[Pair, np.ndarray]:
    block = np.arange(96, dtype=np.uint32)
    return Pair(block[:32].reshape(4, 8), block[32:96].reshape(8, 8)), block


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_composite_of_one_storage_is_one_value_adopted_without_a_copy(manager):
    value, block = one_block_pair()
    h = manager.adopt(value, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert h.value_type is Pair
    snap = manager.snapshot().values[0]
    assert snap.spec.logical_nbytes == 96 * 4  # both tensors, one block
    assert snap.spec.storage_nbytes == 96 * 4
    with manager.acquire([h], at=fhr.PAGEABLE_HOST) as values:
        assert values[h] is value  # the adopted object itself
        assert address(values[h].c0) == address(block)
    manager.ensure(h, fhr.PINNED_HOST)
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        copy = values[h]
        assert isinstance(copy, Pair) and copy.level == 3
        assert copy.c0.shape == (4, 8) and copy.c1.shape == (8, 8) and copy.c0.dtype == np.uint32
        assert (copy.c0 == block[:32].reshape(4, 8)).all() and (copy.c1 == block[32:].reshape(8, 8)).all()
        # both tensors are views of the one replica, at their offsets: no copy per tensor
        assert address(copy.c1) - address(copy.c0) == 32 * 4
        assert address(copy.c0) != address(block) and not copy.c0.flags.writeable
        again = manager.acquire([h], at=fhr.PINNED_HOST)
        assert address(again.values[h].c0) == address(copy.c0)  # rebuilt over the same storage again
        again.release()


def test_a_composite_moves_to_a_device_and_back_with_its_content(manager):
    value, block = one_block_pair()
    expected = block.copy()
    h = manager.adopt(value, replica_mode=fhr.ReplicaMode.REPLICABLE)
    manager.move(h, CUDA0)
    manager.move(h, fhr.PINNED_HOST)
    assert [r.location for r in manager.snapshot().values[0].materializations] == [fhr.PINNED_HOST]
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        back = values[h]
        assert (np.concatenate([back.c0.ravel(), back.c1.ravel()]) == expected).all()


def test_tensors_in_a_gap_of_one_storage_keep_their_offsets(manager):
    block = np.arange(64, dtype=np.uint16)
    value = Pair(block[4:12], block[40:48])  # 56 bytes from c0's first to c1's last
    h = manager.adopt(value, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert manager.snapshot().values[0].spec.logical_nbytes == (48 - 4) * 2
    manager.ensure(h, fhr.PINNED_HOST)
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        copy = values[h]
        assert list(copy.c0) == list(range(4, 12)) and list(copy.c1) == list(range(40, 48))
        assert address(copy.c1) - address(copy.c0) == 36 * 2


def test_separate_storages_are_refused_and_pack_resident_makes_one(manager):
    apart = Pair(np.ones(10, np.float64), np.full(3, 2, np.int32))
    with pytest.raises(fhr.ResidencyMaterializationError, match="2 separate storages.*pack_resident"):
        manager.adopt(apart)
    assert manager.snapshot().values == ()  # nothing registered
    packed = fhr.pack_resident(apart)
    assert isinstance(packed, Pair) and packed.level == 3
    assert address(packed.c1) - address(packed.c0) == 256  # 80 bytes rounded to the 256-byte alignment
    assert (packed.c0 == 1).all() and (packed.c1 == 2).all() and (apart.c0 == 1).all()
    h = manager.adopt(packed, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert manager.snapshot().values[0].spec.logical_nbytes == 256 + 12
    manager.ensure(h, fhr.PINNED_HOST)
    with manager.acquire([h], at=fhr.PINNED_HOST) as values:
        assert values[h].c0.dtype == np.float64 and (values[h].c0 == 1).all() and (values[h].c1 == 2).all()


def test_bad_composites_get_their_classes(manager):
    block = np.zeros((8, 8), np.uint8)
    with pytest.raises(fhr.ResidencyMaterializationError, match="not C-contiguous"):
        manager.adopt(Pair(block[:, ::2], block[:1]))

    class Empty(Pair):
        @property
        def _resident_tensors(self):
            return ()

    with pytest.raises(fhr.ResidencyMaterializationError, match="no resident tensor storage"):
        manager.adopt(Empty(None, None))
    value, block = one_block_pair()
    manager.adopt(value)
    with pytest.raises(fhr.ResidencyOwnershipError, match="independent backing storage"):
        manager.adopt(Pair(block[40:48], block[50:60]))  # §2.7: inside the adopted block


def test_a_discarded_composite_gives_its_object_back(manager):
    import sys

    value, _ = one_block_pair()
    before = sys.getrefcount(value)
    h = manager.adopt(value)
    assert sys.getrefcount(value) == before + 1  # the manager's reference
    manager.discard(h)
    assert sys.getrefcount(value) == before

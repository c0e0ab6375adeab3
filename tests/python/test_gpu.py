"""PyTorch values on the CUDA backend: CPU, pinned and CUDA tensors, zero-copy
by data pointer, streams and pending leases, bad input. Runs on the GPU
machine; skipped with the reason where torch or a GPU is missing."""

from __future__ import annotations

import pytest

import fhr

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available() or not fhr.HAS_CUDA or fhr.cuda_device_count() == 0:
    pytest.skip("no CUDA device (or fhr built without CUDA)", allow_module_level=True)

CUDA0 = fhr.cuda_location("cuda:0")


@pytest.fixture
def m():
    manager = fhr.ResidencyManager(backend="cuda")
    yield manager
    manager.close(force=True)


def test_adopt_and_acquire_are_zero_copy_by_data_pointer(m):
    t = torch.arange(1024, dtype=torch.float32, device="cuda:0")
    pointer = t.data_ptr()
    h = m.adopt(t, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert h.value_type is torch.Tensor
    stream = torch.cuda.Stream()
    with m.acquire([h], at=CUDA0, consumer_stream=stream) as values:
        assert values[h].data_ptr() == pointer  # the adopted tensor itself
    m.ensure(h, fhr.PINNED_HOST)
    with m.acquire([h], at=fhr.PINNED_HOST) as values:
        host = values[h]
        assert host.is_pinned() and host.dtype == torch.float32 and host.shape == (1024,)
        assert torch.equal(host, torch.arange(1024, dtype=torch.float32))
        again = m.acquire([h], at=fhr.PINNED_HOST)
        assert again.values[h].data_ptr() == host.data_ptr()  # both rebuilt over the same storage
        again.release()


def test_cpu_pinned_and_cuda_tensors_round_trip(m):
    for source in (torch.randn(4096), torch.randn(4096).pin_memory(), torch.randn(4096, device="cuda:0")):
        expected = source.cpu().clone()
        h = m.adopt(source, replica_mode=fhr.ReplicaMode.REPLICABLE)
        for location in (fhr.PAGEABLE_HOST, fhr.PINNED_HOST, CUDA0):
            m.ensure(h, location)
            stream = torch.cuda.Stream() if location == CUDA0 else None
            with m.acquire([h], at=location, consumer_stream=stream) as values:
                assert torch.equal(values[h].cpu(), expected)
                assert values[h].device.type == ("cuda" if location == CUDA0 else "cpu")
        m.discard(h)


def test_lease_pending_until_the_consumer_stream_passes(m):
    h = m.adopt(torch.ones(1 << 20, device="cuda:0"))
    stream = torch.cuda.Stream()
    with m.acquire([h], at=CUDA0, consumer_stream=stream) as values:
        with torch.cuda.stream(stream):
            # The read first, then a long kernel: the first launch of a
            # kernel loads its module (CUDA's lazy loading), which waits for
            # the device to be idle, so a read enqueued after the sleep
            # waited for it and the stream was idle again at the release.
            values[h].sum()
            torch.cuda._sleep(200_000_000)
        assert not stream.query()  # the reader still runs at the release
    with pytest.raises(fhr.ResidencyInUseError):
        m.move(h, fhr.PINNED_HOST)
    stream.synchronize()
    m.move(h, fhr.PINNED_HOST)


def test_default_stream_and_raw_integers(m):
    h = m.adopt(torch.ones(16, device="cuda:0"))
    with m.acquire([h], at=CUDA0, consumer_stream=torch.cuda.current_stream()):
        pass
    side = torch.cuda.Stream()
    with m.acquire([h], at=CUDA0, consumer_stream=side.cuda_stream):
        pass


def test_bad_tensors(m):
    with pytest.raises(fhr.ResidencyMaterializationError, match="does not match"):
        m.adopt(torch.ones(4), at=CUDA0)
    with pytest.raises(fhr.ResidencyMaterializationError, match="not contiguous"):
        m.adopt(torch.ones(8, 8, device="cuda:0").t())
    with pytest.raises(fhr.ResidencyMaterializationError, match="not fully pinned"):
        m.adopt(torch.ones(4), at=fhr.PINNED_HOST)
    h = m.adopt(torch.ones(4, device="cuda:0"))
    with pytest.raises(ValueError):
        m.acquire([h], at=CUDA0)  # no consumer stream
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError):
            m.acquire([h], at=CUDA0, consumer_stream=torch.cuda.Stream(device="cuda:1"))


def test_freed_device_memory_goes_back_for_torch(m):
    free_before, _ = torch.cuda.mem_get_info()
    size = min(free_before // 4, 8 << 30)
    h = m.adopt(torch.empty(size, dtype=torch.uint8).pin_memory(), replica_mode=fhr.ReplicaMode.REPLICABLE)
    m.ensure(h, CUDA0)
    m.drop(h, CUDA0)
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    assert free_after >= free_before - (128 << 20)  # only the small-block cache may stay


@pytest.mark.parametrize("huge_pages", [True, False])
def test_pinned_blocks_either_way_keep_the_bytes(huge_pages, monkeypatch):
    monkeypatch.delenv("FHR_PINNED_HUGE_PAGES", raising=False)  # the setting decides
    manager = fhr.ResidencyManager(backend=fhr.CudaBackend(pinned_huge_pages=huge_pages))
    try:
        source = torch.arange(10 << 20).to(torch.uint8)  # 10 MiB: pinned blocks of five huge pages
        h = manager.adopt(source.clone(), replica_mode=fhr.ReplicaMode.REPLICABLE)
        manager.ensure(h, fhr.PINNED_HOST)
        manager.move(h, CUDA0, from_location=fhr.PINNED_HOST)
        manager.move(h, fhr.PINNED_HOST, from_location=CUDA0)
        with manager.acquire([h], at=fhr.PINNED_HOST) as values:
            pinned = values[h]
            assert pinned.is_pinned() and torch.equal(pinned, source)
    finally:
        manager.close(force=True)


class TorchPair:
    """A fake ciphertext of two CUDA tensors, as FHElium's TensorResident types."""

    def __init__(self, c0, c1):
        self.c0, self.c1 = c0, c1

    @property
    def _resident_tensors(self):
        return (self.c0, self.c1)

    def _with_resident_tensors(self, tensors):
        return TorchPair(*tensors)


def test_composite_of_cuda_tensors_is_zero_copy_by_data_pointer(m):
    block = torch.arange(3 * 1024, dtype=torch.int64, device="cuda:0")
    value = TorchPair(block[:1024].view(32, 32), block[1024:].view(64, 32))
    h = m.adopt(value, replica_mode=fhr.ReplicaMode.REPLICABLE)
    assert m.snapshot().values[0].spec.logical_nbytes == 3 * 1024 * 8
    stream = torch.cuda.Stream()
    with m.acquire([h], at=CUDA0, consumer_stream=stream) as values:
        assert values[h] is value and values[h].c0.data_ptr() == block.data_ptr()
    m.ensure(h, fhr.PINNED_HOST)
    with m.acquire([h], at=fhr.PINNED_HOST) as values:
        host = values[h]
        assert host.c0.is_pinned() and host.c1.shape == (64, 32) and host.c1.dtype == torch.int64
        assert host.c1.data_ptr() - host.c0.data_ptr() == 1024 * 8  # views of one replica
        assert torch.equal(torch.cat([host.c0.flatten(), host.c1.flatten()]), block.cpu())
    m.drop(h, CUDA0)
    m.ensure(h, CUDA0)
    with m.acquire([h], at=CUDA0, consumer_stream=stream) as values:
        again = values[h]
        assert again.c0.device == torch.device("cuda:0") and again.c0.data_ptr() != block.data_ptr()
        assert again.c1.data_ptr() - again.c0.data_ptr() == 1024 * 8
        with torch.cuda.stream(stream):
            assert torch.equal(again.c1.flatten(), torch.arange(1024, 3 * 1024, device="cuda:0"))


def test_composite_tensors_apart_are_packed_once_and_on_one_device(m):
    apart = TorchPair(torch.ones(100, device="cuda:0"), torch.zeros(7, dtype=torch.int32, device="cuda:0"))
    with pytest.raises(fhr.ResidencyMaterializationError, match="separate storages"):
        m.adopt(apart)
    packed = fhr.pack_resident(apart)
    assert packed.c1.data_ptr() - packed.c0.data_ptr() == 512 and packed.c0.device == torch.device("cuda:0")
    m.adopt(packed)
    mixed = TorchPair(torch.ones(4, device="cuda:0"), torch.ones(4))
    with pytest.raises(fhr.ResidencyMaterializationError, match="do not share one device"):
        m.adopt(mixed)

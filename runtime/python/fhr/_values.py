"""How Python values become managed bytes and back (docs/python.md, "Values").

``adopt`` takes a value's own memory (no copy): a NumPy array or any
C-contiguous buffer-protocol object on the host, a torch tensor (CPU,
pinned or CUDA), or a composite value: a TensorResident-style value
(``_resident_tensors`` and ``_with_resident_tensors``) of one or several
tensors (torch tensors or NumPy arrays). An *adapter* remembers how to
rebuild the value over a replica's storage, which is what a lease hands
back for replicas the manager made (for the adopted replica itself it hands
back the adopted object).

A composite is one managed value of one block: its tensors must be views
of one storage (``pack_resident`` makes such a value, with one copy, from
tensors allocated apart); the block runs from its first tensor's first
byte to its last tensor's last, and a replica keeps every tensor at the
same offset, so a lease rebuilds the value with a view per tensor and no
copy (docs/python.md, "Composite values").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from fhr._fhr import PAGEABLE_HOST, PINNED_HOST, ResidencyLocation, cuda_location
from fhr.errors import ResidencyMaterializationError


class BytesAdapter:
    """Values the runtime made itself (a plan file's synthetic values): a
    read-only memoryview of host bytes, the storage view on a device."""

    def rebuild(self, view: Any) -> Any:
        return view if view.device_memory else memoryview(view)


BYTES = BytesAdapter()


@dataclass(frozen=True)
class NumpyAdapter:
    dtype: Any
    shape: tuple[int, ...]

    def rebuild(self, view: Any) -> Any:
        if view.device_memory:
            return view  # NumPy cannot address device memory: the raw view (DLPack, CUDA array interface)
        import numpy

        return numpy.frombuffer(view, dtype=self.dtype).reshape(self.shape)


@dataclass(frozen=True)
class BufferAdapter:
    format: str
    shape: tuple[int, ...]

    def rebuild(self, view: Any) -> Any:
        if view.device_memory:
            return view
        raw = memoryview(view)
        try:
            return raw.cast(self.format, self.shape) if self.shape else raw.cast(self.format)
        except (TypeError, ValueError):
            return raw  # a format memoryview cannot cast to: the bytes


def _dlpack_type(dtype: Any) -> tuple[int, int]:
    """DLPack's (type code, bits) of a torch dtype."""
    import torch

    bits = dtype.itemsize * 8
    if dtype is torch.bool:
        return 6, bits
    if dtype is torch.bfloat16:
        return 4, bits
    if dtype.is_complex:
        return 5, bits
    if dtype.is_floating_point:
        return 2, bits
    return (0 if dtype.is_signed else 1), bits


@dataclass(frozen=True)
class TorchAdapter:
    dtype: Any
    shape: tuple[int, ...]

    def rebuild(self, view: Any) -> Any:
        import torch

        code, bits = _dlpack_type(self.dtype)
        return torch.from_dlpack(view.dlpack(code, bits, 1, list(self.shape)))


@dataclass(frozen=True)
class CompositePart:
    """One tensor of a composite: its bytes at ``offset`` of the value's
    block, rebuilt by ``kind`` ("torch" or "numpy") with its dtype and shape."""

    offset: int
    nbytes: int
    kind: str
    dtype: Any
    shape: tuple[int, ...]


@dataclass(frozen=True)
class CompositeAdapter:
    """A TensorResident-style value: ``template`` is the value rebuilt around
    placeholder tensors that hold no memory (torch's meta device, NumPy's
    zero-stride arrays), rebuilt again around views of each replica."""

    template: Any
    parts: tuple[CompositePart, ...]

    def rebuild(self, view: Any) -> Any:
        return self.template._with_resident_tensors(tuple(_part_views(view, self.parts)))


def _part_views(view: Any, parts: tuple[CompositePart, ...]) -> list[Any]:
    if parts[0].kind == "numpy":
        if view.device_memory:
            raise ResidencyMaterializationError("NumPy tensors of a composite cannot address device memory")
        import numpy

        block = numpy.frombuffer(view, dtype=numpy.uint8)
        return [
            block[p.offset : p.offset + p.nbytes].view(p.dtype).reshape(p.shape) for p in parts
        ]
    import torch

    block = torch.from_dlpack(view.dlpack(1, 8, 1, [view.nbytes]))  # the replica as uint8, no copy
    return [block[p.offset : p.offset + p.nbytes].view(p.dtype).reshape(p.shape) for p in parts]


@dataclass
class Adoptable:
    """What adopt needs to know about a value."""

    owner: Any
    use_buffer: bool  # the extension takes the memory through the buffer protocol
    data: int
    nbytes: int
    storage_begin: int
    storage_end: int
    device: str  # "cpu" or "cuda:N"
    pinned: bool | None  # None: not knowable here (host memory without CUDA)
    adapter: Any

    def inferred_location(self) -> ResidencyLocation:
        """§3.1 step 3: a device's location, else pinned or pageable host."""
        if self.device != "cpu":
            return cuda_location(self.device)
        return PINNED_HOST if self.pinned else PAGEABLE_HOST

    def check(self, location: ResidencyLocation) -> None:
        """§2.6 steps 2 and 3: the value lives where ``location`` says."""
        if self.device != location.device:
            raise ResidencyMaterializationError(f"Value device {self.device} does not match {location}")
        if location.kind == "pinned-host" and self.pinned is False:
            raise ResidencyMaterializationError("Pinned-host materialization is not fully pinned")
        if location.kind == "pageable-host" and self.pinned is True:
            raise ResidencyMaterializationError("Pageable-host materialization unexpectedly uses pinned storage")


def _torch_tensor_type() -> Any:
    torch = sys.modules.get("torch")
    return None if torch is None else torch.Tensor


def _from_tensor(tensor: Any, owner: Any, adapter: Any) -> Adoptable:
    if tensor.device.type not in ("cpu", "cuda"):
        raise ResidencyMaterializationError(f"a tensor on {tensor.device} cannot be managed")
    if not tensor.is_contiguous():
        raise ResidencyMaterializationError(
            f"a tensor of shape {tuple(tensor.shape)} and strides {tuple(tensor.stride())} is not contiguous: "
            "adopt takes a value's memory as it is, one dense block (make it contiguous first)"
        )
    storage = tensor.untyped_storage()
    device = "cpu" if tensor.device.type == "cpu" else f"cuda:{tensor.device.index}"
    nbytes = tensor.numel() * tensor.element_size()
    return Adoptable(
        owner=owner,
        use_buffer=False,
        data=tensor.data_ptr() if nbytes else 0,
        nbytes=nbytes,
        storage_begin=storage.data_ptr(),
        storage_end=storage.data_ptr() + storage.nbytes(),
        device=device,
        pinned=tensor.is_pinned() if device == "cpu" else None,
        adapter=adapter,
    )


def _torch_adapter(tensor: Any) -> TorchAdapter:
    return TorchAdapter(tensor.dtype, tuple(tensor.shape))


def _placeholder(tensor: Any) -> Any:
    """A tensor of ``tensor``'s dtype and shape that holds no memory."""
    if _is_numpy(tensor):
        import numpy

        return numpy.broadcast_to(numpy.zeros((), tensor.dtype), tensor.shape)
    import torch

    return torch.empty_like(tensor, device="meta")


def _resident_template(value: Any, tensors: tuple[Any, ...]) -> Any:
    try:
        return value._with_resident_tensors(tuple(_placeholder(t) for t in tensors))
    except Exception:
        # A class that refuses placeholder tensors: rebuild from the value
        # itself (which then stays referenced by its handle).
        return value


def _is_numpy(tensor: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(tensor, numpy.ndarray)


def _numpy_root(array: Any) -> Any:
    """The array that owns ``array``'s memory (the end of its base chain)."""
    numpy = sys.modules["numpy"]
    while isinstance(array.base, numpy.ndarray):
        array = array.base
    return array


@dataclass(frozen=True)
class _Segment:
    data: int
    nbytes: int
    storage_begin: int
    storage_end: int


def _segment(tensor: Any, owner_name: str) -> _Segment:
    """Where one tensor of a composite lives, after its density check."""
    if _is_numpy(tensor):
        if not tensor.flags.c_contiguous:
            raise ResidencyMaterializationError(
                f"a NumPy array of {owner_name} of shape {tensor.shape} and strides {tensor.strides} is not "
                "C-contiguous: adopt takes a value's memory as it is"
            )
        root = _numpy_root(tensor)
        begin = root.__array_interface__["data"][0]
        return _Segment(tensor.__array_interface__["data"][0], tensor.nbytes, begin, begin + root.nbytes)
    if not tensor.is_contiguous():
        raise ResidencyMaterializationError(
            f"a tensor of {owner_name} of shape {tuple(tensor.shape)} and strides {tuple(tensor.stride())} is not "
            "contiguous: adopt takes a value's memory as it is, one dense block (make it contiguous first)"
        )
    storage = tensor.untyped_storage()
    nbytes = tensor.numel() * tensor.element_size()
    return _Segment(tensor.data_ptr(), nbytes, storage.data_ptr(), storage.data_ptr() + storage.nbytes())


def _tensor_device(tensor: Any) -> str:
    if _is_numpy(tensor):
        return "cpu"
    if tensor.device.type not in ("cpu", "cuda"):
        raise ResidencyMaterializationError(f"a tensor on {tensor.device} cannot be managed")
    return "cpu" if tensor.device.type == "cpu" else f"cuda:{tensor.device.index}"


def _from_composite(value: Any, cuda_memory: bool) -> Adoptable:
    """A TensorResident-style value as one block: every tensor a view of
    one storage, the block from the first tensor's first byte to the last
    one's last."""
    name = type(value).__name__
    tensors = tuple(value._resident_tensors)
    if not tensors:
        raise ResidencyMaterializationError(f"{name} has no resident tensor storage")
    kinds = {"numpy" if _is_numpy(t) else "torch" for t in tensors}
    if len(kinds) > 1:
        raise ResidencyMaterializationError(f"{name} mixes NumPy arrays and torch tensors")
    devices = {_tensor_device(t) for t in tensors}
    if len(devices) > 1:
        raise ResidencyMaterializationError(f"{name} tensors do not share one device: {sorted(devices)}")
    segments = [_segment(t, name) for t in tensors]
    storages = {(s.storage_begin, s.storage_end) for s in segments}
    if len(storages) > 1:
        raise ResidencyMaterializationError(
            f"{name} holds {len(tensors)} tensors in {len(storages)} separate storages; a managed value is one "
            "block of memory: make one with fhr.pack_resident(value) (one copy) and adopt that"
        )
    nonempty = [s for s in segments if s.nbytes] or segments
    begin = min(s.data for s in nonempty)
    end = max(s.data + s.nbytes for s in nonempty)
    (storage_begin, storage_end), = storages
    device = devices.pop()
    kind = kinds.pop()
    parts = tuple(
        CompositePart(
            s.data - begin if s.nbytes else 0,
            s.nbytes,
            kind,
            t.dtype,
            tuple(t.shape),
        )
        for s, t in zip(segments, tensors)
    )
    if kind == "numpy":
        pinned = _pinned_buffer(begin, cuda_memory) if end > begin else None
    else:
        pinned = tensors[0].is_pinned() if device == "cpu" else None
    return Adoptable(
        owner=value,
        use_buffer=False,
        data=begin if end > begin else 0,
        nbytes=end - begin,
        storage_begin=storage_begin,
        storage_end=storage_end,
        device=device,
        pinned=pinned,
        adapter=CompositeAdapter(_resident_template(value, tensors), parts),
    )


_PACK_ALIGNMENT = 256  # CUDA's allocation alignment: every packed tensor starts as a fresh one would


def pack_resident(value: Any) -> Any:
    """``value`` rebuilt around views of one new block holding copies of its
    tensors (each at a 256-byte aligned offset, on the same device, pinned
    if the first was): the one copy that makes a composite of separately
    allocated tensors adoptable. The value's own tensors are left as they are."""
    tensors = tuple(value._resident_tensors)
    if not tensors:
        raise ResidencyMaterializationError(f"{type(value).__name__} has no resident tensor storage")
    offsets, total = [], 0
    for t in tensors:
        offsets.append(total)
        nbytes = t.nbytes if _is_numpy(t) else t.numel() * t.element_size()
        total += -(-nbytes // _PACK_ALIGNMENT) * _PACK_ALIGNMENT
    if all(_is_numpy(t) for t in tensors):
        import numpy

        block = numpy.empty(total, numpy.uint8)
        views = []
        for t, offset in zip(tensors, offsets):
            part = block[offset : offset + t.nbytes].view(t.dtype).reshape(t.shape)
            part[...] = t
            views.append(part)
        return value._with_resident_tensors(tuple(views))
    import torch

    first = tensors[0]
    pinned = first.device.type == "cpu" and first.is_pinned()
    block = torch.empty(total, dtype=torch.uint8, device=first.device, pin_memory=pinned)
    views = []
    for t, offset in zip(tensors, offsets):
        part = block[offset : offset + t.numel() * t.element_size()].view(t.dtype).reshape(t.shape)
        part.copy_(t)
        views.append(part)
    return value._with_resident_tensors(tuple(views))


def _pinned_buffer(data: int, cuda_memory: bool) -> bool | None:
    from fhr._fhr import _is_cuda_pinned

    return _is_cuda_pinned(data) if cuda_memory else None


def adoptable(value: Any, cuda_memory: bool) -> Adoptable:
    """The memory of ``value``; TypeError for values that have none to take."""
    tensor_type = _torch_tensor_type()
    if tensor_type is not None and isinstance(value, tensor_type):
        return _from_tensor(value, value, _torch_adapter(value))
    if hasattr(type(value), "_resident_tensors") and callable(getattr(value, "_with_resident_tensors", None)):
        return _from_composite(value, cuda_memory)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        if not value.flags.c_contiguous:
            raise ResidencyMaterializationError(
                f"a NumPy array of shape {value.shape} and strides {value.strides} is not C-contiguous: "
                "adopt takes a value's memory as it is"
            )
        data = value.__array_interface__["data"][0]
        return Adoptable(value, True, data, value.nbytes, data, data + value.nbytes, "cpu",
                         _pinned_buffer(data, cuda_memory), NumpyAdapter(value.dtype, value.shape))
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(
            "adopt needs a NumPy array, a buffer-protocol object, a torch tensor or a TensorResident value, not "
            f"{type(value).__name__}"
        ) from None
    with view:
        if not view.c_contiguous:
            raise ResidencyMaterializationError("a buffer that is not C-contiguous cannot be adopted without a copy")
        return Adoptable(value, True, 0, view.nbytes, 0, 0, "cpu", None, BufferAdapter(view.format, view.shape))


def loaded_replica(spec: Any, location: ResidencyLocation, cuda_memory: bool, value: Any) -> tuple[int, int, Any]:
    """Checks a source's value against its spec and location (§2.6); says
    where its bytes are and how to rebuild it."""
    if not isinstance(value, spec.value_type):
        raise ResidencyMaterializationError(
            f"Expected {spec.value_type.__name__}, got {type(value).__name__}"
        )
    found = adoptable(value, cuda_memory)
    if found.use_buffer and found.data == 0:
        from fhr._fhr import _buffer_address

        found.data = _buffer_address(value)
        found.storage_begin, found.storage_end = found.data, found.data + found.nbytes
    found.check(location)
    if found.nbytes != spec.logical_nbytes:
        raise ResidencyMaterializationError(
            f"Logical payload size mismatch: expected={spec.logical_nbytes}, actual={found.nbytes}"
        )
    actual = max(found.nbytes, found.storage_end - found.storage_begin)
    if actual > spec.storage_nbytes:
        raise ResidencyMaterializationError(
            f"Backing-storage charge mismatch: charge={spec.storage_nbytes}, actual={actual}"
        )
    return found.data, found.nbytes, found.adapter

"""``ResidencyManager``: the seed's manager over fhr's C++ runtime.

The transitions, ``acquire``, ``hold``, ``reserve``, ``explain``,
``execute_actions``, ``trace`` and ``close`` are the extension's own
methods (no Python frame between the caller and the runtime); what is
finished here is the part that inspects Python values or builds records.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Mapping
from types import TracebackType
from typing import Any, TypeVar

from fhr import _values
from fhr._fhr import PAGEABLE_HOST, ResidencyHandle, ResidencyLocation, _Manager
from fhr._model import Recoverability, ReplicaMode, ResidencySource, ResidencyValueSpec, _count
from fhr._plan import ResidencyPlan
from fhr._records import (
    MaterializationSnapshot,
    ResidencyLocationSnapshot,
    ResidencyReservationSnapshot,
    ResidencySnapshot,
    ResidencyValueSnapshot,
)
from fhr._scope import ResidencyScope

ValueT = TypeVar("ValueT")

# Managers by id, so that a plan can find the manager of its handles (to_fhr).
_MANAGERS: weakref.WeakValueDictionary[str, ResidencyManager] = weakref.WeakValueDictionary()


def manager_of(manager_id: str) -> ResidencyManager | None:
    return _MANAGERS.get(manager_id)


def _allocator_figures(location: ResidencyLocation) -> tuple[int | None, int | None]:
    """PyTorch's allocated and reserved bytes on a CUDA location, where torch
    is loaded and has used CUDA (never imports it)."""
    torch = sys.modules.get("torch")
    if location.kind != "cuda" or torch is None:
        return None, None
    try:
        if not torch.cuda.is_initialized():
            return None, None
        return int(torch.cuda.memory_allocated(location.index)), int(torch.cuda.memory_reserved(location.index))
    except Exception:
        return None, None


class ResidencyManager(_Manager):
    """Owns managed values and their replicas in pageable host, pinned host and
    CUDA memory under per-location budgets (docs/semantics.md).

    ``backend`` (fhr's addition, keyword-only) chooses where the bytes live:
    ``None`` (the CUDA backend when this build has it and a GPU is present,
    else host memory), ``"host"``, ``"cuda"``, a :class:`fhr.CudaBackend`
    with pool settings, or a :class:`fhr.SimulatedBackend` (devices
    simulated in host memory, for tests).
    """

    def __init__(
        self,
        budgets: Mapping[ResidencyLocation, int] | None = None,
        *,
        trace_capacity: int = 4096,
        backend: Any = None,
    ) -> None:
        if budgets is not None and not isinstance(budgets, Mapping):
            raise TypeError("ResidencyManager budgets must be a mapping")
        capacity = _count(trace_capacity, "ResidencyManager trace_capacity")
        entries = []
        for location, budget in (budgets or {}).items():
            if not isinstance(location, ResidencyLocation):
                raise TypeError("ResidencyManager budget keys must be ResidencyLocation values")
            entries.append((location, _count(budget, f"Budget for {location}")))
        super().__init__(entries, capacity, backend)
        _MANAGERS[self.manager_id] = self

    def adopt(
        self,
        value: ValueT,
        *,
        at: ResidencyLocation | None = None,
        replica_mode: ReplicaMode = ReplicaMode.EXCLUSIVE,
    ) -> ResidencyHandle:
        """Takes ``value``'s memory without copying it (§3.1): the caller must
        not use or keep the value afterwards. ``at`` defaults to where the value
        lives; the value is preserved (its last replica is never dropped)."""
        adoptable = _values.adoptable(value, self._cuda_memory)
        self._check_open()
        location = adoptable.inferred_location() if at is None else at
        self._validate_location(location)
        adoptable.check(location)
        if not isinstance(replica_mode, ReplicaMode):
            raise TypeError("replica_mode must be a ReplicaMode")
        return self._adopt(
            adoptable.owner,
            adoptable.use_buffer,
            adoptable.data,
            adoptable.nbytes,
            adoptable.storage_begin,
            adoptable.storage_end,
            location,
            replica_mode,
            adoptable.adapter,
            type(value),
        )

    def register_source(
        self,
        spec: ResidencyValueSpec[ValueT],
        source: ResidencySource[ValueT],
        *,
        source_location: ResidencyLocation = PAGEABLE_HOST,
    ) -> ResidencyHandle:
        """Registers a reconstructible value without loading it (§3.2). When a
        transition needs it, ``source.load()`` is called (the manager is then
        closed to every thread, §13), its result checked against ``spec`` and
        ``source_location`` and its bytes copied into the manager's storage."""
        if not isinstance(spec, ResidencyValueSpec):
            raise TypeError("register_source spec must be a ResidencyValueSpec")
        if not callable(getattr(source, "load", None)):
            raise TypeError("a residency source must define load() as a callable")
        check = functools.partial(_values.loaded_replica, spec, source_location, self._cuda_memory)
        return self._register_source(
            source,
            check,
            spec.value_type,
            spec.logical_nbytes,
            spec.storage_nbytes,
            spec.replica_mode,
            spec.recoverability is Recoverability.RECONSTRUCTIBLE,
            source_location,
        )

    def scope(
        self,
        plan: ResidencyPlan,
        *,
        transfer_streams: Mapping[ResidencyLocation, Any] | None = None,
        expected_state_version: int | None = None,
    ) -> ResidencyScope:
        """A single-use scope over ``plan`` (§12); nothing happens before entry."""
        if not isinstance(plan, ResidencyPlan):
            raise TypeError("ResidencyManager scope plan must be a ResidencyPlan")
        return ResidencyScope(
            self, plan, transfer_streams=transfer_streams, expected_state_version=expected_state_version
        )

    def snapshot(self) -> ResidencySnapshot:
        """One atomic view of every value, location and reservation (§14)."""
        manager_id, version, captured, values, locations, reservations = self._snapshot()
        value_records = []
        for handle, logical, storage, replicable, reconstructible, has_source, source_at, discarded, reps in values:
            spec = ResidencyValueSpec(
                handle.value_type,
                logical,
                storage,
                ReplicaMode.REPLICABLE if replicable else ReplicaMode.EXCLUSIVE,
                Recoverability.RECONSTRUCTIBLE if reconstructible else Recoverability.MUST_PRESERVE,
            )
            value_records.append(
                ResidencyValueSnapshot(
                    handle, spec, tuple(MaterializationSnapshot(*r) for r in reps), has_source, source_at, discarded
                )
            )
        location_records = []
        for entry in locations:
            location = entry[0]
            allocated, reserved = _allocator_figures(location)
            pool_in_use, pool_idle, driver_free = entry[12:15]
            location_records.append(
                ResidencyLocationSnapshot(*entry[:12], allocated, reserved, pool_in_use, pool_idle, driver_free)
            )
        return ResidencySnapshot(
            manager_id,
            version,
            tuple(value_records),
            tuple(location_records),
            tuple(ResidencyReservationSnapshot(*r) for r in reservations),
            captured,
        )

    def __enter__(self) -> ResidencyManager:
        self._check_open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResidencyManager(manager_id={self.manager_id!r})"

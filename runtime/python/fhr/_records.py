"""What snapshots, explanations and plan reports return (docs/semantics.md §10.3, §11, §14).

Plain immutable records without tensors; the manager builds them. The
transition report (``ResidencyTransitionReport``) lives in the extension,
because every transition returns one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fhr._fhr import ResidencyHandle, ResidencyLocation, ResidencyTransitionReport
from fhr._model import ResidencyValueSpec
from fhr._plan import MemoryReservation, ResidencyAction


@dataclass(frozen=True, slots=True)
class MaterializationSnapshot:
    """One replica: its bytes (``storage_nbytes`` is what it really has,
    ``charged_nbytes`` what its location is charged) and its protections."""

    location: ResidencyLocation
    logical_nbytes: int
    storage_nbytes: int
    charged_nbytes: int
    use_count: int
    hold_count: int
    pending_event_count: int


@dataclass(frozen=True, slots=True)
class ResidencyValueSnapshot:
    """One registered value (discarded ones included), replicas in installation order."""

    handle: ResidencyHandle
    spec: ResidencyValueSpec[Any]
    materializations: tuple[MaterializationSnapshot, ...]
    has_source: bool
    source_location: ResidencyLocation | None
    discarded: bool


@dataclass(frozen=True, slots=True)
class ResidencyReservationSnapshot:
    """One active named reservation."""

    location: ResidencyLocation
    nbytes: int
    label: str


@dataclass(frozen=True, slots=True)
class ResidencyLocationSnapshot:
    """One location's books (§4.1), token totals and, for CUDA locations,
    PyTorch's allocator figures (when torch is loaded) and the backend's
    pool figures (fhr's own fields, after the seed's)."""

    location: ResidencyLocation
    budget_bytes: int | None
    used_bytes: int
    reserved_bytes: int
    remaining_budget_bytes: int | None
    peak_used_bytes: int
    peak_charged_bytes: int
    value_count: int
    reservation_count: int
    use_count: int
    hold_count: int
    pending_event_count: int
    allocator_allocated_bytes: int | None
    allocator_reserved_bytes: int | None
    pool_in_use_bytes: int | None = None
    pool_idle_bytes: int | None = None
    driver_free_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ResidencySnapshot:
    """One atomic view of a manager (§14). Timestamps are steady-clock
    nanoseconds (``time.monotonic_ns()``'s clock)."""

    manager_id: str
    state_version: int
    values: tuple[ResidencyValueSnapshot, ...]
    locations: tuple[ResidencyLocationSnapshot, ...]
    reservations: tuple[ResidencyReservationSnapshot, ...]
    captured_at_ns: int


@dataclass(frozen=True, slots=True)
class ResidencyActionExplanation:
    """How explain resolved one action (§10.3)."""

    action: ResidencyAction
    executable: bool
    no_op: bool
    source: ResidencyLocation | None
    destination: ResidencyLocation | None
    logical_nbytes: int
    storage_nbytes: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ResidencyPlanExplanation:
    """A plan's dry run: the actions up to the first failing one, the
    reservations, the predicted peak charge per location (registered ones
    first), and whether the plan is feasible."""

    plan_name: str
    actions: tuple[ResidencyActionExplanation, ...]
    reservations: tuple[MemoryReservation, ...]
    predicted_peak_bytes: tuple[tuple[ResidencyLocation, int], ...]
    feasible: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ResidencyPlanReport:
    """The committed transitions of an action list or a scope, in order."""

    plan_name: str
    transitions: tuple[ResidencyTransitionReport, ...]
    started_at_ns: int
    completed_at_ns: int


__all__ = [
    "MaterializationSnapshot",
    "ResidencyActionExplanation",
    "ResidencyLocationSnapshot",
    "ResidencyPlanExplanation",
    "ResidencyPlanReport",
    "ResidencyReservationSnapshot",
    "ResidencySnapshot",
    "ResidencyTransitionReport",
    "ResidencyValueSnapshot",
]

"""Plans: the four actions, reservations and ``ResidencyPlan`` (docs/semantics.md §10.1),
and ``ResidencyPlan.to_fhr()``, which writes a plan as ``.fhr`` text for
``fhr-plan check``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Mapping, TypeAlias, TypeVar

from fhr._fhr import ResidencyHandle, ResidencyLocation
from fhr._model import _count, _text

if TYPE_CHECKING:
    from fhr._manager import ResidencyManager

ValueT_co = TypeVar("ValueT_co", covariant=True)


def _endpoint(handle: object, location: object, what: str) -> None:
    if not isinstance(handle, ResidencyHandle):
        raise TypeError(f"{what} handle must be a ResidencyHandle")
    if not isinstance(location, ResidencyLocation):
        raise TypeError(f"{what} location must be a ResidencyLocation")


@dataclass(frozen=True, slots=True)
class EnsureResident(Generic[ValueT_co]):
    """Make the value resident at ``location``, keeping its other replicas."""

    handle: ResidencyHandle
    location: ResidencyLocation

    def __post_init__(self) -> None:
        _endpoint(self.handle, self.location, "EnsureResident")


@dataclass(frozen=True, slots=True)
class MoveResident(Generic[ValueT_co]):
    """Make the value resident at ``to`` and remove one source replica
    (``from_location``, or the first other replica in location order)."""

    handle: ResidencyHandle
    to: ResidencyLocation
    from_location: ResidencyLocation | None = None

    def __post_init__(self) -> None:
        _endpoint(self.handle, self.to, "MoveResident")
        if self.from_location is not None and not isinstance(self.from_location, ResidencyLocation):
            raise TypeError("MoveResident from_location must be a ResidencyLocation")


@dataclass(frozen=True, slots=True)
class DropResident(Generic[ValueT_co]):
    """Remove the replica at ``location``; the value stays registered."""

    handle: ResidencyHandle
    location: ResidencyLocation

    def __post_init__(self) -> None:
        _endpoint(self.handle, self.location, "DropResident")


@dataclass(frozen=True, slots=True)
class DiscardValue(Generic[ValueT_co]):
    """End the value: remove every replica and forget its source."""

    handle: ResidencyHandle

    def __post_init__(self) -> None:
        if not isinstance(self.handle, ResidencyHandle):
            raise TypeError("DiscardValue handle must be a ResidencyHandle")


ResidencyAction: TypeAlias = EnsureResident[Any] | MoveResident[Any] | DropResident[Any] | DiscardValue[Any]
ACTION_TYPES = (EnsureResident, MoveResident, DropResident, DiscardValue)


@dataclass(frozen=True, slots=True)
class MemoryReservation:
    """Headroom held at ``location`` while a plan's scope is entered (§8)."""

    location: ResidencyLocation
    nbytes: int
    label: str

    def __post_init__(self) -> None:
        if not isinstance(self.location, ResidencyLocation):
            raise TypeError("MemoryReservation location must be a ResidencyLocation")
        _count(self.nbytes, "MemoryReservation nbytes")
        _text(self.label, "MemoryReservation label")


@dataclass(frozen=True, slots=True)
class ResidencyPlan:
    """An immutable plan: ``reclaim`` actions, then the ``reservations``, then
    ``enter``; ``exit`` when the scope closes (§10.1, §12). The tuples are
    copied at construction."""

    name: str
    enter: tuple[ResidencyAction, ...] = ()
    exit: tuple[ResidencyAction, ...] = ()
    reservations: tuple[MemoryReservation, ...] = ()
    reclaim: tuple[ResidencyAction, ...] = ()

    def __post_init__(self) -> None:
        _text(self.name, "ResidencyPlan name")
        phases = {}
        for field in ("reclaim", "enter", "exit", "reservations"):
            try:
                phases[field] = tuple(getattr(self, field))
            except TypeError as error:
                raise TypeError(f"ResidencyPlan {field} must be iterable") from error
        for action in (*phases["reclaim"], *phases["enter"], *phases["exit"]):
            if not isinstance(action, ACTION_TYPES):
                raise TypeError("ResidencyPlan actions must be residency action objects")
        for reservation in phases["reservations"]:
            if not isinstance(reservation, MemoryReservation):
                raise TypeError("ResidencyPlan reservations must be MemoryReservation objects")
        for field, value in phases.items():
            object.__setattr__(self, field, value)

    def to_fhr(
        self,
        manager: ResidencyManager | None = None,
        *,
        names: Mapping[ResidencyHandle, str] | None = None,
    ) -> str:
        """This plan as ``.fhr`` text, with the machine and the state it runs
        against: the manager's budgets and devices, a declaration per value
        (its spec, where it was adopted or its source) and setup statements
        that recreate its replicas, protections and reservations. ``fhr-plan
        check`` and ``fhr-plan explain`` then predict what ``manager.explain``
        does. ``manager`` defaults to the manager of the plan's handles;
        ``names`` gives values their names in the text (``v<id>`` otherwise).
        """
        from fhr._fhr_text import plan_to_fhr

        return plan_to_fhr(self, manager, names)


__all__ = [
    "DiscardValue",
    "DropResident",
    "EnsureResident",
    "MemoryReservation",
    "MoveResident",
    "ResidencyAction",
    "ResidencyPlan",
]

"""Value specifications, replica modes and sources (docs/semantics.md §2, §3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

ValueT_co = TypeVar("ValueT_co", covariant=True)


class ReplicaMode(StrEnum):
    """How many replicas a value may have at once (§2.2)."""

    REPLICABLE = "replicable"
    EXCLUSIVE = "exclusive"


class Recoverability(StrEnum):
    """Whether a value may lose its last replica (§2.3)."""

    RECONSTRUCTIBLE = "reconstructible"
    MUST_PRESERVE = "must-preserve"


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be non-negative")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string")
    if not value.strip():
        raise ValueError(f"{what} must not be blank")
    return value


@dataclass(frozen=True, slots=True)
class ResidencyValueSpec(Generic[ValueT_co]):
    """What a managed value is and what each of its replicas is charged (§2.1).

    ``value_type`` is the class every replica must be an instance of (a NumPy
    array, a torch tensor, a buffer type, a TensorResident class);
    ``storage_nbytes`` is the fixed charge of every replica and at least
    ``logical_nbytes``.
    """

    value_type: type[Any]
    logical_nbytes: int
    storage_nbytes: int
    replica_mode: ReplicaMode
    recoverability: Recoverability

    def __post_init__(self) -> None:
        if not isinstance(self.value_type, type):
            raise TypeError("ResidencyValueSpec value_type must be a class")
        _count(self.logical_nbytes, "ResidencyValueSpec logical_nbytes")
        _count(self.storage_nbytes, "ResidencyValueSpec storage_nbytes")
        if self.storage_nbytes < self.logical_nbytes:
            raise ValueError("ResidencyValueSpec storage_nbytes must be at least logical_nbytes")
        if not isinstance(self.replica_mode, ReplicaMode):
            raise TypeError("ResidencyValueSpec replica_mode must be a ReplicaMode")
        if not isinstance(self.recoverability, Recoverability):
            raise TypeError("ResidencyValueSpec recoverability must be a Recoverability")


class ResidencySource(Protocol[ValueT_co]):
    """A trusted loader: ``load()`` returns a fresh, ready value of the
    registered type, size and location (§3.2). The manager copies its bytes
    into storage of its own; the returned object is then released."""

    def load(self) -> ValueT_co: ...


__all__ = ["Recoverability", "ReplicaMode", "ResidencySource", "ResidencyValueSpec"]

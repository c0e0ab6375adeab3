"""The mapping a lease lends its values through (§7.2)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fhr._fhr import ResidencyHandle, ResidencyLease


class BorrowedValues(Mapping[ResidencyHandle, Any]):
    """The values of an active lease by handle. Every lookup, iteration and
    ``len`` checks the lease: after release they raise
    ``ResidencyLifetimeClosedError``; a handle the lease does not hold is a
    ``KeyError``. Values are the adopted objects themselves or values rebuilt
    over the manager's storage, never copies; they are not to be changed or
    kept past the lease."""

    __slots__ = ("_lease",)

    def __init__(self, lease: ResidencyLease) -> None:
        self._lease = lease

    def __getitem__(self, handle: ResidencyHandle) -> Any:
        return self._lease._value(handle)

    def __iter__(self) -> Iterator[ResidencyHandle]:
        for handle in self._lease.handles:
            self._lease._require_active()
            yield handle

    def __len__(self) -> int:
        self._lease._require_active()
        return len(self._lease.handles)

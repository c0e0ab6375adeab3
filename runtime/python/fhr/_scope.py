"""``ResidencyScope``: a single-use scope over one plan (§12)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fhr._plan import ResidencyPlan
from fhr.errors import ResidencyPlanExecutionError

if TYPE_CHECKING:
    from fhr._manager import ResidencyManager
    from fhr._records import ResidencyPlanReport


def _expected_version(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected_state_version must be an integer")
    if value < 0:
        raise ValueError("expected_state_version must be non-negative")
    return value



def close_at_exit(lifetime: Any, exc_value: BaseException | None, what: str) -> None:
    """Closes a scope-like object at the end of its ``with`` block. A failure
    to close is raised, unless the block itself raised: then that error
    carries it as a note, so neither is lost."""
    try:
        lifetime.close()
    except BaseException as cleanup:
        if exc_value is None:
            raise
        exc_value.add_note(f"{what} exit failed: {cleanup}")

class ResidencyScope:
    """Entering runs the whole-plan preflight, the reclaim actions, the
    reservations and the enter actions; closing runs the exit actions and
    releases the reservations. Completed transitions are never rolled back.
    ``report`` holds every transition after a successful close;
    ``exit_error`` the exit failure when the body's own exception won."""

    def __init__(
        self,
        manager: ResidencyManager,
        plan: ResidencyPlan,
        *,
        transfer_streams: Mapping[Any, Any] | None = None,
        expected_state_version: int | None = None,
    ) -> None:
        from fhr._manager import ResidencyManager

        if not isinstance(manager, ResidencyManager):
            raise TypeError("ResidencyScope manager must be a ResidencyManager")
        if not isinstance(plan, ResidencyPlan):
            raise TypeError("ResidencyScope plan must be a ResidencyPlan")
        if transfer_streams is not None and not isinstance(transfer_streams, Mapping):
            raise TypeError("transfer_streams must be a mapping")
        self._manager = manager
        self._plan = plan
        self._transfer_streams = dict(transfer_streams or {})
        self._expected_state_version = _expected_version(expected_state_version)
        self.report: ResidencyPlanReport | None = None
        self.exit_error: ResidencyPlanExecutionError | None = None
        self._stage = "created"
        self._core: Any = None
        self._lock = threading.RLock()

    @property
    def manager(self) -> ResidencyManager:
        return self._manager

    @property
    def plan(self) -> ResidencyPlan:
        return self._plan

    @property
    def expected_state_version(self) -> int | None:
        return self._expected_state_version

    def __enter__(self) -> ResidencyScope:
        with self._lock:
            if self._stage != "created":
                raise RuntimeError("ResidencyScope cannot be entered twice")
            self._stage = "closed"  # any failure below consumes the scope
            core = self._open()
            core.enter()
            self._core = core
            self._stage = "entered"
        return self

    def _open(self) -> Any:
        """The runtime's scope (a controller's decision scope opens its own)."""
        return self._manager._scope(self._plan, self._transfer_streams, self._expected_state_version)

    def close(self) -> None:
        """Runs the exit actions and releases the reservations; idempotent."""
        with self._lock:
            if self._stage == "created":
                raise RuntimeError("ResidencyScope must be entered before close")
            if self._stage == "closed":
                return
            self._stage = "closed"
            try:
                self.report = self._core.close()
            except ResidencyPlanExecutionError as error:
                self.exit_error = error
                raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stage == "entered":
            close_at_exit(self, exc_value, f"residency plan {self._plan.name!r}")

    def __del__(self) -> None:
        if getattr(self, "_stage", None) == "entered":
            warnings.warn(
                f"a ResidencyScope of plan {self._plan.name!r} was abandoned: its reservations were released, "
                "its exit actions did not run",
                ResourceWarning,
                stacklevel=2,
            )

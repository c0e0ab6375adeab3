"""The exceptions of the package ``fhr`` (docs/semantics.md §16).

Every residency failure is a :class:`ResidencyError`, which is also a
``RuntimeError``; one class per failure category below it. Argument
problems are ``TypeError`` or ``ValueError`` as in the reference API.
:class:`BackendError` (a failure of the memory or copy machinery) and
:class:`PlanFileError` (a plan file that does not compile or verify) and
:class:`WorkloadError` (a workload :func:`fhr.solve` cannot read) are
fhr's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fhr._plan import MemoryReservation, ResidencyAction
    from fhr._records import ResidencyPlanReport


class FhrError(Exception):
    """Base class of every failure fhr raises itself."""


class BackendError(FhrError, RuntimeError):
    """Allocating, copying or synchronising memory failed (not a residency rule)."""


class PlanFileError(FhrError, ValueError):
    """A plan file (.fhr or .fhrb) could not be read, compiled or verified.

    ``diagnostics`` holds the compiler's messages with their locations.
    """

    def __init__(self, message: str, *, path: str = "", diagnostics: str = "") -> None:
        self.path = path
        self.diagnostics = diagnostics
        super().__init__(message if not diagnostics else f"{message}\n{diagnostics}")


class WorkloadError(FhrError, ValueError):
    """A workload given to :func:`fhr.solve` does not parse or breaks its
    rules (docs/planner.md). ``diagnostics`` holds the parser's message
    (with the path of the bad member, ``steps[3].needs[0]: ...``) or the
    compiler's messages with their locations.
    """

    def __init__(self, message: str, *, path: str = "", diagnostics: str = "") -> None:
        self.path = path
        self.diagnostics = diagnostics
        super().__init__(message if not diagnostics else f"{message}\n{diagnostics}")


class ResidencyError(FhrError, RuntimeError):
    """Base class of the residency manager's failures."""


class ResidencyBudgetError(ResidencyError):
    """An admission check failed (§4.2); the figures are as of the check."""

    def __init__(
        self,
        *,
        location: str,
        budget_bytes: int,
        used_bytes: int,
        reserved_bytes: int,
        requested_bytes: int,
        message: str | None = None,
    ) -> None:
        self.location = location
        self.budget_bytes = int(budget_bytes)
        self.used_bytes = int(used_bytes)
        self.reserved_bytes = int(reserved_bytes)
        self.requested_bytes = int(requested_bytes)
        super().__init__(
            message
            or (
                f"{location} cannot admit {self.requested_bytes} bytes: "
                f"budget_bytes={self.budget_bytes}, used_bytes={self.used_bytes}, "
                f"reserved_bytes={self.reserved_bytes}"
            )
        )


class ResidencyHandleError(ResidencyError):
    """Not a handle, a handle of another manager, an unknown or a discarded one."""


class ResidencyUnavailableError(ResidencyError):
    """The value has no replica where one is needed."""


class ResidencyInUseError(ResidencyError):
    """A lease, hold or pending CUDA event protects the replica to remove."""


class ResidencyLifetimeClosedError(ResidencyError):
    """A released lease, hold or reservation was used."""


class ResidencyMaterializationError(ResidencyError):
    """A value does not fit its location or its specification (§2.6)."""


class ResidencyOwnershipError(ResidencyError):
    """Replica-mode, final-copy or storage-ownership rule (§2.7, §6.6)."""


class ResidencyPlanError(ResidencyError):
    """A plan's preflight found it infeasible; nothing ran."""


class ResidencyStaleStateError(ResidencyPlanError):
    """``expected_state_version`` no longer matches the manager (§9)."""

    def __init__(self, *, expected_version: int, actual_version: int, message: str | None = None) -> None:
        self.expected_version = int(expected_version)
        self.actual_version = int(actual_version)
        super().__init__(
            message
            or (
                f"the manager's state changed: expected_version={self.expected_version}, "
                f"actual_version={self.actual_version}"
            )
        )


class ResidencySearchLimitError(ResidencyPlanError):
    """Automatic planning stopped at its state limit, or as deep as its
    thread's stack allows (§18.3); inconclusive."""

    def __init__(
        self,
        *,
        request_name: str,
        state_limit: int,
        explored_states: int,
        detail: str,
        message: str | None = None,
    ) -> None:
        self.request_name = str(request_name)
        self.state_limit = int(state_limit)
        self.explored_states = int(explored_states)
        self.detail = str(detail)
        super().__init__(
            message
            if message is not None
            else f"search for {self.request_name!r} reached its limit of {self.state_limit} states "
            f"(explored_states={self.explored_states}): {self.detail}"
        )


class ResidencyPlanExecutionError(ResidencyError):
    """A preflighted plan failed while it ran (§12.4).

    ``partial_report`` holds the transitions that committed before the
    failure (they stay committed); ``failed_action`` and
    ``failed_action_index`` name the action that failed, or
    ``failed_reservation`` and ``failed_reservation_index`` the reservation;
    ``__cause__`` is the underlying error.
    """

    def __init__(
        self,
        *,
        plan_name: str,
        phase: str,
        partial_report: ResidencyPlanReport,
        failed_action: ResidencyAction | None,
        failed_action_index: int | None,
        detail: str,
        failed_reservation: MemoryReservation | None = None,
        failed_reservation_index: int | None = None,
        message: str | None = None,
    ) -> None:
        self.plan_name = plan_name
        self.phase = phase
        self.partial_report = partial_report
        self.failed_action = failed_action
        self.failed_action_index = failed_action_index
        self.failed_reservation = failed_reservation
        self.failed_reservation_index = failed_reservation_index
        self.detail = detail
        done = len(partial_report.transitions)
        super().__init__(
            message
            or f"plan {plan_name!r} failed in phase {phase} after {done} completed transition(s): {detail}"
        )


class ResidencyClosedError(ResidencyError):
    """The manager was closed."""


class ResidencyReentrancyError(ResidencyError):
    """The manager was used from a source callback or re-entered (§13)."""


def _error_class(name: str) -> Any:
    """The class of a C++ error category name (used by the extension)."""
    return globals()[name]


__all__ = [
    "BackendError",
    "FhrError",
    "PlanFileError",
    "ResidencyBudgetError",
    "ResidencyClosedError",
    "ResidencyError",
    "ResidencyHandleError",
    "ResidencyInUseError",
    "ResidencyLifetimeClosedError",
    "ResidencyMaterializationError",
    "ResidencyOwnershipError",
    "ResidencyPlanError",
    "ResidencyPlanExecutionError",
    "ResidencyReentrancyError",
    "ResidencySearchLimitError",
    "ResidencyStaleStateError",
    "ResidencyUnavailableError",
]

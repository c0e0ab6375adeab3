"""FHElium 0.10's residency names over fhr's manager.

An FHElium program switches managers by changing one import::

    from fhelium.residency import ResidencyManager, ...     # FHElium's manager
    from fhr.compat.fhelium import ResidencyManager, ...    # fhr's

FHElium's values (``Plaintext``, ``Ciphertext``, keys: its TensorResident
types of one tensor) are adopted without a copy and leased back rebuilt
over fhr's storage. What differs is listed in docs/python.md (the automatic controller's
names are FHElium's; its policy interface, ``ResidencyPolicy``, is fhr's).
"""

from __future__ import annotations

from fhr import (
    PAGEABLE_HOST,
    PINNED_HOST,
    BorrowedValues,
    DeterministicTieredLRU,
    DiscardValue,
    DropResident,
    EnsureResident,
    MaterializationSnapshot,
    MemoryReservation,
    MoveResident,
    Recoverability,
    ReplicaMode,
    ResidencyAction,
    ResidencyActionExplanation,
    ResidencyController,
    ResidencyDecision,
    ResidencyHandle,
    ResidencyHold,
    ResidencyLease,
    ResidencyLocation,
    ResidencyLocationSnapshot,
    ResidencyManager,
    ResidencyPlan,
    ResidencyPlanExplanation,
    ResidencyPlanReport,
    ResidencyRequest,
    ResidencyRequirement,
    ResidencyReservation,
    ResidencyReservationSnapshot,
    ResidencyScope,
    ResidencySnapshot,
    ResidencySource,
    ResidencyTransitionReport,
    ResidencyValueSnapshot,
    ResidencyValueSpec,
    cuda_location,
)
from fhr.errors import (
    ResidencyBudgetError,
    ResidencyClosedError,
    ResidencyError,
    ResidencyHandleError,
    ResidencyInUseError,
    ResidencyLifetimeClosedError,
    ResidencyMaterializationError,
    ResidencyOwnershipError,
    ResidencyPlanError,
    ResidencyPlanExecutionError,
    ResidencyReentrancyError,
    ResidencySearchLimitError,
    ResidencyStaleStateError,
    ResidencyUnavailableError,
)

ResidencyLocationKind = str

# Every name imported above (FHElium's residency names), and nothing else.
__all__ = sorted(name for name in globals() if not name.startswith("_") and name != "annotations")

"""fhr: the residency manager of docs/semantics.md for Python evaluators.

The names are those of FHElium 0.10's ``fhelium.residency``; the runtime
underneath is fhr's C++ manager (docs/python.md). ``import fhr`` loads
neither PyTorch nor the plan compiler.
"""

from __future__ import annotations

import types as _types

from fhr import errors
from fhr._fhr import (
    HAS_CUDA,
    PAGEABLE_HOST,
    PINNED_HOST,
    CudaBackend,
    ResidencyHandle,
    ResidencyHold,
    ResidencyLease,
    ResidencyLocation,
    ResidencyReservation,
    ResidencyTransitionReport,
    SimulatedBackend,
    SimulatedStream,
    StorageView,
    cuda_device_count,
    cuda_location,
)
from fhr._controller import (
    DeterministicTieredLRU,
    EvictionCandidate,
    ResidencyController,
    ResidencyDecision,
    ResidencyEviction,
    ResidencyPolicy,
    ResidencyRequest,
    ResidencyRequirement,
    ResidencyUse,
)
from fhr._lifetimes import BorrowedValues
from fhr._manager import ResidencyManager
from fhr._model import Recoverability, ReplicaMode, ResidencySource, ResidencyValueSpec
from fhr._plan import (
    DiscardValue,
    DropResident,
    EnsureResident,
    MemoryReservation,
    MoveResident,
    ResidencyAction,
    ResidencyPlan,
)
from fhr._planfile import BoundPlanFile, DeclaredValue, PlanFile, PlanRun, PlanStep, ProgramSteps, load
from fhr._records import (
    MaterializationSnapshot,
    ResidencyActionExplanation,
    ResidencyLocationSnapshot,
    ResidencyPlanExplanation,
    ResidencyPlanReport,
    ResidencyReservationSnapshot,
    ResidencySnapshot,
    ResidencyValueSnapshot,
)
from fhr._scope import ResidencyScope
from fhr._solve import Solution, solve
from fhr._values import pack_resident
from fhr.errors import (
    BackendError,
    FhrError,
    PlanFileError,
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
    WorkloadError,
)

# Handles are generic in the reference (ResidencyHandle[Ciphertext]).
ResidencyHandle.__class_getitem__ = classmethod(lambda cls, item: _types.GenericAlias(cls, item))  # type: ignore[attr-defined]

# Locations pickle as their constructor call.
ResidencyLocation.__reduce__ = lambda self: (ResidencyLocation, (self.kind, self.device))  # type: ignore[method-assign]

__version__ = "0.1.0"

__all__ = [
    "HAS_CUDA",
    "PAGEABLE_HOST",
    "PINNED_HOST",
    "BackendError",
    "BorrowedValues",
    "BoundPlanFile",
    "CudaBackend",
    "DeclaredValue",
    "DeterministicTieredLRU",
    "DiscardValue",
    "DropResident",
    "EnsureResident",
    "EvictionCandidate",
    "FhrError",
    "MaterializationSnapshot",
    "MemoryReservation",
    "MoveResident",
    "PlanFile",
    "PlanFileError",
    "PlanRun",
    "PlanStep",
    "ProgramSteps",
    "Recoverability",
    "ReplicaMode",
    "ResidencyAction",
    "ResidencyActionExplanation",
    "ResidencyBudgetError",
    "ResidencyClosedError",
    "ResidencyController",
    "ResidencyDecision",
    "ResidencyError",
    "ResidencyEviction",
    "ResidencyHandle",
    "ResidencyHandleError",
    "ResidencyHold",
    "ResidencyInUseError",
    "ResidencyLease",
    "ResidencyLifetimeClosedError",
    "ResidencyLocation",
    "ResidencyLocationSnapshot",
    "ResidencyManager",
    "ResidencyMaterializationError",
    "ResidencyOwnershipError",
    "ResidencyPlan",
    "ResidencyPlanError",
    "ResidencyPlanExecutionError",
    "ResidencyPlanExplanation",
    "ResidencyPlanReport",
    "ResidencyPolicy",
    "ResidencyReentrancyError",
    "ResidencyRequest",
    "ResidencyRequirement",
    "ResidencyReservation",
    "ResidencyReservationSnapshot",
    "ResidencyScope",
    "ResidencySearchLimitError",
    "ResidencySnapshot",
    "ResidencySource",
    "ResidencyStaleStateError",
    "ResidencyTransitionReport",
    "ResidencyUnavailableError",
    "ResidencyUse",
    "ResidencyValueSnapshot",
    "ResidencyValueSpec",
    "SimulatedBackend",
    "SimulatedStream",
    "Solution",
    "StorageView",
    "WorkloadError",
    "cuda_device_count",
    "cuda_location",
    "errors",
    "load",
    "pack_resident",
    "solve",
]

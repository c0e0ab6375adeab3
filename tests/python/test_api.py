"""The seed API's surface: names, locations, handles, specs, plans, errors."""

from __future__ import annotations

import pickle

import pytest

import fhr
import fhr.errors
from fhr.compat import fhelium as compat


SEED_NAMES = [
    "PAGEABLE_HOST", "PINNED_HOST", "BorrowedValues", "DiscardValue", "DropResident", "EnsureResident",
    "MaterializationSnapshot", "MemoryReservation", "MoveResident", "Recoverability", "ReplicaMode",
    "ResidencyAction", "ResidencyActionExplanation", "ResidencyHandle", "ResidencyHold", "ResidencyLease",
    "ResidencyLocation", "ResidencyLocationSnapshot", "ResidencyManager", "ResidencyPlan",
    "ResidencyPlanExplanation", "ResidencyPlanReport", "ResidencyReservation", "ResidencyReservationSnapshot",
    "ResidencyScope", "ResidencySnapshot", "ResidencySource", "ResidencyTransitionReport",
    "ResidencyValueSnapshot", "ResidencyValueSpec", "cuda_location",
    # §18, the controller
    "DeterministicTieredLRU", "ResidencyController", "ResidencyDecision", "ResidencyRequest",
    "ResidencyRequirement",
]
MANAGER_MEMBERS = [
    "manager_id", "state_version", "locations", "adopt", "register_source", "ensure", "copy", "move", "drop",
    "discard", "execute_actions", "explain", "scope", "acquire", "hold", "reserve", "snapshot", "trace",
    "clear_trace", "close", "__enter__", "__exit__",
]
ERRORS = [
    "ResidencyBudgetError", "ResidencyHandleError", "ResidencyUnavailableError", "ResidencyInUseError",
    "ResidencyLifetimeClosedError", "ResidencyMaterializationError", "ResidencyOwnershipError",
    "ResidencyPlanError", "ResidencyStaleStateError", "ResidencySearchLimitError",
    "ResidencyPlanExecutionError", "ResidencyClosedError", "ResidencyReentrancyError",
]


def test_every_seed_name_is_exported_by_fhr_and_the_compat_module():
    for name in SEED_NAMES:
        assert getattr(fhr, name) is getattr(compat, name), name
    for member in MANAGER_MEMBERS:
        assert hasattr(fhr.ResidencyManager, member), member


def test_error_hierarchy():
    for name in ERRORS:
        cls = getattr(fhr.errors, name)
        assert cls is getattr(fhr, name) is getattr(compat, name)
        assert issubclass(cls, fhr.errors.ResidencyError) and issubclass(cls, RuntimeError)
    assert issubclass(fhr.errors.ResidencyStaleStateError, fhr.errors.ResidencyPlanError)
    assert issubclass(fhr.errors.ResidencySearchLimitError, fhr.errors.ResidencyPlanError)
    assert not issubclass(fhr.errors.ResidencyPlanExecutionError, fhr.errors.ResidencyPlanError)
    error = fhr.errors.ResidencyStaleStateError(expected_version=3, actual_version=5)
    assert (error.expected_version, error.actual_version) == (3, 5)


def test_locations_follow_section_1():
    assert fhr.PAGEABLE_HOST.name == "pageable-host" and fhr.PINNED_HOST.kind == "pinned-host"
    assert fhr.ResidencyLocation("pinned-host", "cpu:7") == fhr.PINNED_HOST
    assert str(fhr.cuda_location("cuda:12")) == "cuda:12" and fhr.cuda_location("cuda:3").index == 3
    assert {fhr.cuda_location("cuda:1"), fhr.ResidencyLocation("cuda", "cuda:1")} == {fhr.cuda_location("cuda:1")}
    for bad in ("cuda", "cuda:00", "cuda:01", "cuda:-1", "cpu:0", "cuda:128", "cuda:999"):
        with pytest.raises(ValueError):
            fhr.cuda_location(bad)
    with pytest.raises(ValueError):
        fhr.ResidencyLocation("disk", "cpu")
    with pytest.raises(ValueError):
        fhr.ResidencyLocation("pageable-host", "cuda:0")
    assert pickle.loads(pickle.dumps(fhr.cuda_location("cuda:5"))) == fhr.cuda_location("cuda:5")


def test_handles_are_equal_field_by_field(manager):
    import numpy as np

    h = manager.adopt(np.zeros(8, np.uint8))
    same = fhr.ResidencyHandle(h.manager_id, h.handle_id, np.ndarray)
    assert same == h and hash(same) == hash(h)
    assert fhr.ResidencyHandle(h.manager_id, h.handle_id, bytes) != h
    assert fhr.ResidencyHandle[np.ndarray] is not None
    with pytest.raises(TypeError):
        fhr.ResidencyHandle(h.manager_id, h.handle_id, 3)
    with pytest.raises(ValueError):
        fhr.ResidencyHandle(" ", h.handle_id, bytes)


def test_specs_actions_and_plans_check_their_arguments(manager):
    import numpy as np

    with pytest.raises(TypeError):
        fhr.ResidencyValueSpec(bytes, True, 1, fhr.ReplicaMode.EXCLUSIVE, fhr.Recoverability.RECONSTRUCTIBLE)
    with pytest.raises(ValueError):
        fhr.ResidencyValueSpec(bytes, 2, 1, fhr.ReplicaMode.EXCLUSIVE, fhr.Recoverability.RECONSTRUCTIBLE)
    with pytest.raises(TypeError):
        fhr.ResidencyValueSpec(bytes, 1, 1, "exclusive", fhr.Recoverability.RECONSTRUCTIBLE)
    h = manager.adopt(np.zeros(8, np.uint8))
    with pytest.raises(TypeError):
        fhr.EnsureResident(h, "pinned")
    with pytest.raises(TypeError):
        fhr.DiscardValue("not a handle")
    with pytest.raises(ValueError):
        fhr.MemoryReservation(fhr.PINNED_HOST, 1, "   ")
    with pytest.raises(ValueError):
        fhr.ResidencyPlan(" ")
    plan = fhr.ResidencyPlan("p", enter=[fhr.EnsureResident(h, fhr.PINNED_HOST)])
    assert isinstance(plan.enter, tuple)
    with pytest.raises(TypeError):
        fhr.ResidencyPlan("p", enter=[3])


def test_cuda_backend_settings():
    # Settings only: no backend is made, so this runs without a GPU too.
    defaults = fhr.CudaBackend()
    assert defaults.pinned_pool_bytes == 4 << 30 and defaults.device_pool_release_threshold == 0
    assert defaults.device_small_block_cache_bytes == 64 << 20 and defaults.pinned_huge_pages is True
    chosen = fhr.CudaBackend(pinned_pool_bytes=1 << 30, pinned_huge_pages=False)
    assert chosen.pinned_pool_bytes == 1 << 30 and chosen.pinned_huge_pages is False
    with pytest.raises(TypeError):
        fhr.CudaBackend(1 << 30)  # keyword-only


def test_manager_arguments(sim):
    with pytest.raises(TypeError):
        fhr.ResidencyManager([(fhr.PINNED_HOST, 1)])
    with pytest.raises(TypeError):
        fhr.ResidencyManager(trace_capacity=True)
    with pytest.raises(ValueError):
        fhr.ResidencyManager(trace_capacity=-1)
    with pytest.raises(ValueError):
        fhr.ResidencyManager({fhr.PINNED_HOST: -1})
    with pytest.raises(ValueError):  # §1.2: no CUDA on the host backend
        fhr.ResidencyManager({fhr.cuda_location("cuda:0"): 10}, backend="host")
    with pytest.raises(ValueError):
        fhr.ResidencyManager({fhr.cuda_location("cuda:2"): 10}, backend=sim)
    with pytest.raises(TypeError):
        fhr.ResidencyManager(backend=3)

"""The §18 controller through the package (fhr.ResidencyController): exact
plans, evictions, ranks, bytes, access epochs, stale decisions, Python
policies and errors, on simulated devices (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import fhr
from conftest import CUDA0, array

PINNED = fhr.PINNED_HOST
SPEC = fhr.ResidencyValueSpec(np.ndarray, 100, 100, fhr.ReplicaMode.REPLICABLE, fhr.Recoverability.RECONSTRUCTIBLE)


class Zeros:
    """A source that counts its loads."""

    def __init__(self) -> None:
        self.loads = 0

    def load(self) -> np.ndarray:
        self.loads += 1
        return np.zeros(100, np.uint8)


@pytest.fixture
def gpu(sim):
    m = fhr.ResidencyManager({CUDA0: 300}, backend=sim)
    yield m
    m.close(force=True)


def keys(manager, n, source=None):
    source = source or Zeros()
    return [manager.register_source(SPEC, source) for _ in range(n)], source


def need(name, *pairs, reservations=()):
    return fhr.ResidencyRequest(name, tuple(fhr.ResidencyRequirement(h, at) for h, at in pairs), reservations)


def peak(explanation, at):
    return dict(explanation.predicted_peak_bytes).get(at)


def test_a_request_that_fits_needs_no_reclaim_and_changes_nothing(gpu):
    (k1, k2), source = keys(gpu, 2)
    controller = fhr.ResidencyController(gpu)
    version = gpu.state_version
    d = controller.decide(need("step", (k1, CUDA0), (k2, CUDA0)))
    assert d.plan == fhr.ResidencyPlan("step", enter=(fhr.EnsureResident(k1, CUDA0), fhr.EnsureResident(k2, CUDA0)))
    assert d.evictions == () and d.explored_states == 1
    assert d.manager_id == gpu.manager_id and d.expected_state_version == version
    assert d.policy_name == "deterministic-tiered-lru" and d.policy_config == [["fallback_tiers", []]]
    assert d.explanation.feasible and len(d.explanation.actions) == 2 and peak(d.explanation, CUDA0) == 200
    assert d.request.name == "step"
    # Deciding never loads, moves or registers anything.
    assert gpu.state_version == version and source.loads == 0 and gpu.trace() == ()


def test_victims_in_policy_order_with_their_rank_bytes_and_reason(gpu):
    (k1, k2, k3, k4), _ = keys(gpu, 4)
    for k in (k1, k2, k3):
        gpu.ensure(k, CUDA0)
    controller = fhr.ResidencyController(gpu)
    request = need("next", (k4, CUDA0))
    d = controller.decide(request)
    assert d.plan.reclaim == (fhr.DropResident(k1, CUDA0),)
    assert d.plan.enter == (fhr.EnsureResident(k4, CUDA0),)
    assert d.evictions == (
        fhr.ResidencyEviction(
            fhr.DropResident(k1, CUDA0), 0, CUDA0, 100, "source-rebuilds", "its registered source can rebuild the value"
        ),
    )
    assert d.explored_states == 2
    # Priority first, then the stable key (those with one first, by text).
    controller.set_policy_metadata(k1, priority=1)
    assert controller.decide(request).plan.reclaim == (fhr.DropResident(k2, CUDA0),)
    controller.set_policy_metadata(k3, priority=-1)
    assert controller.decide(request).plan.reclaim == (fhr.DropResident(k3, CUDA0),)
    controller.set_policy_metadata(k3, priority=0, stable_key="b")
    controller.set_policy_metadata(k2, stable_key="c")
    assert controller.decide(request).plan.reclaim == (fhr.DropResident(k3, CUDA0),)
    with pytest.raises(ValueError):
        controller.set_policy_metadata(k1, stable_key="b")  # another handle has it
    with pytest.raises(TypeError):
        controller.set_policy_metadata(k1, priority=True)


def test_use_leases_records_access_and_keeps_values_resident(gpu, sim):
    (k1, k2, k3, k4), source = keys(gpu, 4)
    controller = fhr.ResidencyController(gpu)
    stream = sim.create_stream(CUDA0)
    for k in (k1, k2, k3):
        with controller.use(need("warm", (k, CUDA0)), consumer_streams={CUDA0: stream}) as use:
            assert bytes(use.value(k, at=CUDA0)) == bytes(100)
            assert use.decision.plan.enter == (fhr.EnsureResident(k, CUDA0),)
        assert use.report is not None and [t.action for t in use.report.transitions] == [fhr.EnsureResident(k, CUDA0)]
    assert [controller.last_access_epoch(k) for k in (k1, k2, k3, k4)] == [1, 2, 3, 0]
    # k1 is used again: k2 is now the least recently used.
    with controller.use(need("again", (k1, CUDA0)), consumer_streams={CUDA0: stream}) as use:
        assert use.decision.plan == fhr.ResidencyPlan("again")  # resident: nothing to do
        values = use.values
        assert list(values) == [fhr.ResidencyRequirement(k1, CUDA0)]
    assert controller.decide(need("next", (k4, CUDA0))).plan.reclaim == (fhr.DropResident(k2, CUDA0),)
    resident = [v.handle for v in gpu.snapshot().values if any(r.location == CUDA0 for r in v.materializations)]
    assert resident == [k1, k2, k3] and source.loads == 3
    # Outside its window a use has no values; a use enters once.
    with pytest.raises(RuntimeError):
        use.value(k1, at=CUDA0)
    with pytest.raises(RuntimeError):
        use.__enter__()
    with pytest.raises(ValueError):  # the CUDA requirement has no consumer stream
        controller.use(need("s", (k1, CUDA0)))


def test_a_decision_is_stale_after_any_change_and_bound_to_its_controller(gpu, sim):
    (k1, k2), _ = keys(gpu, 2)
    controller = fhr.ResidencyController(gpu)
    d = controller.decide(need("s", (k1, CUDA0)))
    gpu.ensure(k2, CUDA0)
    scope = controller.scope(d)
    with pytest.raises(fhr.ResidencyStaleStateError) as stale:
        scope.__enter__()
    assert stale.value.expected_version == d.expected_state_version
    assert stale.value.actual_version == gpu.state_version
    assert [v.handle for v in gpu.snapshot().values if v.materializations] == [k2]  # nothing ran
    fresh = controller.decide(need("s", (k1, CUDA0)))
    with controller.scope(fresh) as entered:
        assert entered.plan == fresh.plan
    assert entered.report is not None and [t.action for t in entered.report.transitions] == [fhr.EnsureResident(k1, CUDA0)]
    # A decision belongs to its manager and its policy.
    other = fhr.ResidencyManager({CUDA0: 300}, backend=sim)
    with pytest.raises(fhr.ResidencyHandleError):
        fhr.ResidencyController(other).scope(fresh).__enter__()
    tiered = fhr.ResidencyController(gpu, fhr.DeterministicTieredLRU({CUDA0: [PINNED]}))
    with pytest.raises(fhr.ResidencyPlanError):
        tiered.scope(controller.decide(need("s", (k2, CUDA0)))).__enter__()
    other.close(force=True)


class LargestFirst(fhr.ResidencyPolicy):
    """Evicts larger values first; cuda:0 spills to pinned memory."""

    def __init__(self):
        self.offered = []

    @property
    def name(self):
        return "largest-first"

    def config_identity(self):
        return [["order", "largest"]]

    def fallback_locations(self, location):
        return (PINNED,) if location == CUDA0 else ()

    def order_candidates(self, candidates):
        self.offered.append(tuple(candidates))
        return sorted(candidates, key=lambda c: -c.charged_nbytes)


def test_a_python_policy_ranks_candidates_and_names_spill_tiers(sim):
    m = fhr.ResidencyManager({CUDA0: 400}, backend=sim)
    small = m.adopt(array(100))
    large = m.adopt(array(200))
    for h in (small, large):
        m.move(h, CUDA0)  # their only replicas are at cuda:0
    incoming = m.adopt(array(200, 1))
    policy = LargestFirst()
    controller = fhr.ResidencyController(m, policy)
    d = controller.decide(need("in", (incoming, CUDA0)))
    assert d.policy_name == "largest-first" and d.policy_config == [["order", "largest"]]
    assert d.plan.reclaim == (fhr.MoveResident(large, PINNED, CUDA0),)
    assert d.plan.enter == (fhr.MoveResident(incoming, CUDA0, fhr.PAGEABLE_HOST),)
    (e,) = d.evictions
    assert (e.rank, e.released_location, e.released_nbytes, e.reason_kind) == (0, CUDA0, 200, "sole-replica-moved")
    assert e.reason == "its only replica moves to pinned"
    offered = policy.offered[0]
    assert [(c.handle, c.location, c.charged_nbytes, c.registration_index, c.last_access_epoch) for c in offered] == [
        (small, CUDA0, 100, 0, None),
        (large, CUDA0, 200, 1, None),
    ]
    with controller.scope(d):
        pass
    placement = {v.handle: [r.location for r in v.materializations] for v in m.snapshot().values}
    assert placement == {small: [CUDA0], large: [PINNED], incoming: [CUDA0]}
    m.close(force=True)


def test_a_policy_error_or_a_lost_candidate_reaches_the_caller(gpu):
    (k1, k2, k3, k4), _ = keys(gpu, 4)
    for k in (k1, k2, k3):
        gpu.ensure(k, CUDA0)

    class Failing(LargestFirst):
        def order_candidates(self, candidates):
            raise KeyError("the policy's own failure")

    class Losing(LargestFirst):
        def order_candidates(self, candidates):
            return list(candidates)[:1]

    with pytest.raises(KeyError, match="the policy's own failure"):
        fhr.ResidencyController(gpu, Failing()).decide(need("n", (k4, CUDA0)))
    with pytest.raises(ValueError, match="exactly once|returned 1 of 3"):
        fhr.ResidencyController(gpu, Losing()).decide(need("n", (k4, CUDA0)))
    # The manager is unchanged and usable after both.
    assert fhr.ResidencyController(gpu).decide(need("n", (k4, CUDA0))).plan.reclaim == (fhr.DropResident(k1, CUDA0),)


def test_infeasible_inconclusive_and_invalid_requests(gpu):
    (k1, k2, k3, k4), _ = keys(gpu, 4)
    for k in (k1, k2, k3):
        gpu.ensure(k, CUDA0)
    with gpu.hold([k1, k2, k3], at=CUDA0):
        with pytest.raises(fhr.ResidencyPlanError, match="Automatic residency request 'n' is infeasible"):
            fhr.ResidencyController(gpu).decide(need("n", (k4, CUDA0)))
    with pytest.raises(fhr.ResidencySearchLimitError) as limit:
        fhr.ResidencyController(gpu, search_state_limit=1).decide(need("n", (k4, CUDA0)))
    assert (limit.value.request_name, limit.value.state_limit) == ("n", 1)
    # The runtime's own text, which says which stop the search met.
    assert "is inconclusive: it stopped at its limit of 1 explored states" in str(limit.value)
    assert isinstance(limit.value, fhr.ResidencyPlanError)
    exclusive = gpu.adopt(array(10))
    with pytest.raises(fhr.ResidencyOwnershipError):
        fhr.ResidencyController(gpu).decide(need("two", (exclusive, CUDA0), (exclusive, PINNED)))
    with pytest.raises(ValueError):
        need(" ", (k1, CUDA0))
    with pytest.raises(ValueError):
        need("none")
    with pytest.raises(ValueError):
        need("twice", (k1, CUDA0), (k1, CUDA0))
    with pytest.raises(TypeError):
        fhr.ResidencyRequirement("k1", CUDA0)
    with pytest.raises(ValueError):
        fhr.ResidencyController(gpu, search_state_limit=0)
    with pytest.raises(TypeError):
        fhr.ResidencyController(gpu, search_state_limit=True)
    with pytest.raises(TypeError):
        fhr.ResidencyController(gpu, policy="lru")
    with pytest.raises(TypeError):
        fhr.DeterministicTieredLRU([(CUDA0, [PINNED])])
    with pytest.raises(ValueError):
        fhr.DeterministicTieredLRU({CUDA0: [CUDA0]})
    with pytest.raises(ValueError):
        fhr.DeterministicTieredLRU({CUDA0: [PINNED, PINNED]})
    tiers = fhr.DeterministicTieredLRU({CUDA0: [PINNED, fhr.PAGEABLE_HOST]})
    assert tiers.fallback_locations(CUDA0) == (PINNED, fhr.PAGEABLE_HOST) and tiers.fallback_locations(PINNED) == ()
    assert tiers.config_identity() == [["fallback_tiers", [["cuda:0", ["pinned", "pageable"]]]]]
    discarded = gpu.register_source(SPEC, Zeros())
    gpu.discard(discarded)
    with pytest.raises(fhr.ResidencyHandleError):
        fhr.ResidencyController(gpu).decide(need("gone", (discarded, CUDA0)))


def test_the_reference_order_is_callable_on_its_own(gpu):
    (k1, k2), _ = keys(gpu, 2)
    candidates = [
        fhr.EvictionCandidate(k1, CUDA0, 100, 0, 5, 0, None),
        fhr.EvictionCandidate(k2, CUDA0, 100, 1, None, 0, None),
    ]
    assert fhr.DeterministicTieredLRU().order_candidates(candidates) == (candidates[1], candidates[0])

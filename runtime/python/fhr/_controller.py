"""The §18 controller (docs/semantics.md §18, docs/python.md "The
controller"): requests of what must be resident, pluggable eviction
policies, and ``ResidencyController``, which turns a request into a plan
checked against the manager's state. The search, the decisions and the
reference policy are the C++ runtime's (fhr::Controller); this module
holds the records and the argument checks.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fhr._fhr import ResidencyHandle, ResidencyLocation, _check_request, _Controller, _TieredLRU
from fhr._plan import MemoryReservation, ResidencyAction, ResidencyPlan
from fhr._scope import ResidencyScope, close_at_exit

if TYPE_CHECKING:
    from fhr._manager import ResidencyManager
    from fhr._records import ResidencyPlanExplanation, ResidencyPlanReport


@dataclass(frozen=True, slots=True)
class ResidencyRequirement:
    """One value that must be resident at one location (§18.1)."""

    handle: ResidencyHandle
    location: ResidencyLocation

    def __post_init__(self) -> None:
        if not isinstance(self.handle, ResidencyHandle):
            raise TypeError("ResidencyRequirement handle must be a ResidencyHandle")
        if not isinstance(self.location, ResidencyLocation):
            raise TypeError("ResidencyRequirement location must be a ResidencyLocation")


@dataclass(frozen=True, slots=True)
class ResidencyRequest:
    """What an operation needs (§18.1): a non-blank name, at least one
    requirement, each (handle, location) pair once, and headroom to hold
    while it runs. A handle may be required at several locations; whether
    its replica mode allows that is checked when a controller decides."""

    name: str
    requirements: tuple[ResidencyRequirement, ...]
    reservations: tuple[MemoryReservation, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError("ResidencyRequest name must be a string")
        object.__setattr__(self, "requirements", tuple(self.requirements))
        object.__setattr__(self, "reservations", tuple(self.reservations))
        if any(not isinstance(r, ResidencyRequirement) for r in self.requirements):
            raise TypeError("ResidencyRequest requirements must be ResidencyRequirement values")
        if any(not isinstance(r, MemoryReservation) for r in self.reservations):
            raise TypeError("ResidencyRequest reservations must be MemoryReservation values")
        _check_request(self)  # the runtime's rules (ValueError)


@dataclass(frozen=True, slots=True)
class EvictionCandidate:
    """A replica the controller may evict (§18.3 step 3), as a policy sees
    it: unprotected, at the location short of room. ``last_access_epoch``
    is None for a value never used through the controller."""

    handle: ResidencyHandle
    location: ResidencyLocation
    charged_nbytes: int
    registration_index: int
    last_access_epoch: int | None
    priority: int
    stable_key: str | None


class ResidencyPolicy(abc.ABC):
    """What a user implements to plug an eviction policy into a controller
    (§18.2). The controller calls it while it decides, holding the manager's
    lock: every method must be deterministic and must not call the manager.
    ``name`` and ``config_identity()`` are read once, when a controller is
    made; decisions are bound to them."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """A stable name, recorded in decisions."""

    def config_identity(self) -> Any:
        """The configuration decisions are bound to (JSON-serialisable)."""
        return []

    def fallback_locations(self, location: ResidencyLocation) -> Sequence[ResidencyLocation]:
        """Where a replica evicted from ``location`` may move, in order of
        preference (none: evicted replicas are only dropped)."""
        return ()

    @abc.abstractmethod
    def order_candidates(self, candidates: Sequence[EvictionCandidate]) -> Sequence[EvictionCandidate]:
        """Every candidate given, exactly once, the first to evict first."""


class DeterministicTieredLRU(ResidencyPolicy):
    """The reference policy (§18.2): lower priority first, then older access
    (never used first), then candidates with a stable key, by key text,
    then registration order. ``fallback_tiers`` maps a location to where its
    evicted replicas may move, in order; tiers are never inferred."""

    def __init__(self, fallback_tiers: Mapping[ResidencyLocation, Sequence[ResidencyLocation]] | None = None) -> None:
        if fallback_tiers is None:
            fallback_tiers = {}
        if not isinstance(fallback_tiers, Mapping):
            raise TypeError("DeterministicTieredLRU fallback_tiers must be a mapping")
        tiers = []
        for source, destinations in fallback_tiers.items():
            if not isinstance(source, ResidencyLocation):
                raise TypeError("fallback tier sources must be ResidencyLocation values")
            destinations = tuple(destinations)
            if any(not isinstance(d, ResidencyLocation) for d in destinations):
                raise TypeError("fallback tier destinations must be ResidencyLocation values")
            tiers.append((source, destinations))
        self._native = _TieredLRU(tiers)  # ValueError: a source in its own tier, a repeated destination
        self._tiers = dict(tiers)

    @property
    def name(self) -> str:
        return str(self._native.name)

    @property
    def fallback_tiers(self) -> dict[ResidencyLocation, tuple[ResidencyLocation, ...]]:
        return dict(self._tiers)

    def config_identity(self) -> Any:
        return self._native.config_identity()

    def fallback_locations(self, location: ResidencyLocation) -> tuple[ResidencyLocation, ...]:
        return tuple(self._native.fallback_locations(location))

    def order_candidates(self, candidates: Sequence[EvictionCandidate]) -> tuple[EvictionCandidate, ...]:
        return tuple(self._native.order(tuple(candidates)))

    def __repr__(self) -> str:
        return f"DeterministicTieredLRU(fallback_tiers={self._tiers!r})"


@dataclass(frozen=True, slots=True)
class ResidencyEviction:
    """One reclaim action of a decision: the candidate's rank in the
    policy's order when it was chosen, what it releases and why it is legal
    (``reason_kind``: other-replica, source-rebuilds or sole-replica-moved)."""

    action: ResidencyAction
    rank: int
    released_location: ResidencyLocation
    released_nbytes: int
    reason_kind: str
    reason: str


@dataclass(frozen=True)
class ResidencyDecision:
    """A plan bound to the state it was derived from (§18.3 step 6): its
    reclaim actions, the request's reservations and enter actions (never
    exit actions), and the manager's explanation of it at
    ``expected_state_version``."""

    manager_id: str
    expected_state_version: int
    explored_states: int
    request: ResidencyRequest
    plan: ResidencyPlan
    policy_name: str
    policy_config: Any
    evictions: tuple[ResidencyEviction, ...]
    explanation: ResidencyPlanExplanation
    _native: Any = field(repr=False, compare=False, default=None)


class _DecisionScope(ResidencyScope):
    """The scope of a decision: entry is refused as stale after any change
    of the manager since the decision (the controller checks the rest)."""

    def __init__(self, controller: ResidencyController, decision: ResidencyDecision, transfer_streams: Any) -> None:
        super().__init__(
            controller.manager,
            decision.plan,
            transfer_streams=transfer_streams,
            expected_state_version=decision.expected_state_version,
        )
        self._controller = controller
        self._decision = decision

    def _open(self) -> Any:
        return self._controller._core.scope(self._decision, self._transfer_streams)


class ResidencyUse:
    """Decide, commit and lease in one lifetime (§18.3 ``use``). Entry
    decides, enters the decision's scope, leases every requirement (one
    lease per location, CUDA leases on the given consumer stream) and
    records the access; exit releases the leases and closes the scope (no
    exit actions: the values stay resident)."""

    def __init__(self, core: Any, request: ResidencyRequest) -> None:
        self._core = core
        self._request = request
        self._stage = "created"
        self.report: ResidencyPlanReport | None = None

    @property
    def request(self) -> ResidencyRequest:
        return self._request

    @property
    def decision(self) -> ResidencyDecision:
        if self._stage == "created":
            raise RuntimeError("a ResidencyUse has no decision before it is entered")
        decision = self._core.decision
        if decision is None:
            raise RuntimeError("the ResidencyUse failed before it made a decision")
        return decision

    def value(self, handle: ResidencyHandle, *, at: ResidencyLocation) -> Any:
        """The leased value of a requirement while the use is entered
        (RuntimeError outside that window; KeyError for a pair the request
        does not name)."""
        return self._core.value(handle, at)

    @property
    def values(self) -> dict[ResidencyRequirement, Any]:
        """Every requirement's leased value, while the use is entered."""
        return {r: self._core.value(r.handle, r.location) for r in self._request.requirements}

    def __enter__(self) -> ResidencyUse:
        if self._stage != "created":
            raise RuntimeError("a ResidencyUse cannot be entered twice")
        self._stage = "closed"  # any failure consumes the use
        self._core.enter()
        self._stage = "entered"
        return self

    def close(self) -> None:
        """Releases the leases and closes the scope; idempotent."""
        if self._stage == "created":
            raise RuntimeError("a ResidencyUse must be entered before close")
        if self._stage == "closed":
            return
        self._stage = "closed"
        self.report = self._core.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stage == "entered":
            close_at_exit(self, exc_value, f"residency use {self._request.name!r}")


class ResidencyController:
    """Automatic residency over one manager (§18.3). It owns no values: it
    keeps each handle's policy metadata and access epoch, and ``decide``
    derives a plan from the current state without changing it."""

    def __init__(
        self,
        manager: ResidencyManager,
        policy: ResidencyPolicy | None = None,
        search_state_limit: int = 100000,
    ) -> None:
        from fhr._manager import ResidencyManager

        if not isinstance(manager, ResidencyManager):
            raise TypeError("ResidencyController manager must be a ResidencyManager")
        if policy is None:
            policy = DeterministicTieredLRU()
        if not isinstance(policy, ResidencyPolicy):
            raise TypeError("ResidencyController policy must be a ResidencyPolicy")
        if isinstance(search_state_limit, bool) or not isinstance(search_state_limit, int):
            raise TypeError("search_state_limit must be an integer")
        if search_state_limit <= 0:
            raise ValueError("search_state_limit must be greater than zero")
        native = policy._native if isinstance(policy, DeterministicTieredLRU) else policy
        self._manager = manager
        self._policy = policy
        self._search_state_limit = search_state_limit
        self._core = _Controller(manager, native, search_state_limit)

    @property
    def manager(self) -> ResidencyManager:
        return self._manager

    @property
    def policy(self) -> ResidencyPolicy:
        return self._policy

    @property
    def search_state_limit(self) -> int:
        return self._search_state_limit

    def set_policy_metadata(self, handle: ResidencyHandle, *, priority: int = 0, stable_key: str | None = None) -> None:
        """Eviction hints for a live handle of this manager: a higher
        priority is kept longer; stable keys are unique across handles."""
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError("priority must be an integer")
        if stable_key is not None and not isinstance(stable_key, str):
            raise TypeError("stable_key must be a string or None")
        self._core.set_policy_metadata(handle, priority, stable_key)

    def last_access_epoch(self, handle: ResidencyHandle) -> int:
        """The epoch of the value's last use through this controller (0: never)."""
        return int(self._core.last_access_epoch(handle))

    def decide(self, request: ResidencyRequest) -> ResidencyDecision:
        """A plan for ``request`` from the current state, checked by explain;
        never loads a value and never changes the manager."""
        if not isinstance(request, ResidencyRequest):
            raise TypeError("decide needs a ResidencyRequest")
        decision: ResidencyDecision = self._core.decide(request)
        return decision

    def scope(
        self, decision: ResidencyDecision, *, transfer_streams: Mapping[ResidencyLocation, Any] | None = None
    ) -> ResidencyScope:
        """The decision's scope; entry fails with ResidencyStaleStateError
        after any change of the manager since the decision."""
        if not isinstance(decision, ResidencyDecision):
            raise TypeError("scope needs a ResidencyDecision")
        if transfer_streams is not None and not isinstance(transfer_streams, Mapping):
            raise TypeError("transfer_streams must be a mapping")
        return _DecisionScope(self, decision, transfer_streams)

    def use(
        self,
        request: ResidencyRequest,
        *,
        consumer_streams: Mapping[ResidencyLocation, Any] | None = None,
        transfer_streams: Mapping[ResidencyLocation, Any] | None = None,
    ) -> ResidencyUse:
        """A decide-commit-lease lifetime; ``consumer_streams`` names exactly
        the CUDA locations the request requires (ValueError otherwise)."""
        if not isinstance(request, ResidencyRequest):
            raise TypeError("use needs a ResidencyRequest")
        for name, mapping in (("consumer_streams", consumer_streams), ("transfer_streams", transfer_streams)):
            if mapping is not None and not isinstance(mapping, Mapping):
                raise TypeError(f"{name} must be a mapping")
        return ResidencyUse(self._core.use(request, consumer_streams, transfer_streams), request)

    def __repr__(self) -> str:
        return f"ResidencyController(manager={self._manager!r}, policy={self._policy!r})"


__all__ = [
    "DeterministicTieredLRU",
    "EvictionCandidate",
    "ResidencyController",
    "ResidencyDecision",
    "ResidencyEviction",
    "ResidencyPolicy",
    "ResidencyRequest",
    "ResidencyRequirement",
    "ResidencyUse",
]

"""``ResidencyPlan.to_fhr()``: a plan, with the machine and state it runs
against, as ``.fhr`` text (docs/language.md), so that ``fhr-plan check``
and ``fhr-plan explain`` judge it exactly as the manager's ``explain``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fhr._model import ReplicaMode

if TYPE_CHECKING:
    from fhr._fhr import ResidencyHandle, ResidencyLocation
    from fhr._manager import ResidencyManager
    from fhr._plan import ResidencyPlan


def _location(location: ResidencyLocation) -> str:
    return {"pageable-host": "pageable", "pinned-host": "pinned"}.get(location.kind, location.name)


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("{", "\\{").replace("}", "\\}")
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t") + '"'


def _action(action: Any, names: Mapping[Any, str]) -> str:
    from fhr._plan import DiscardValue, DropResident, EnsureResident

    name = names[action.handle]
    if isinstance(action, EnsureResident):
        return f"ensure {name} at {_location(action.location)}"
    if isinstance(action, DropResident):
        return f"drop {name} at {_location(action.location)}"
    if isinstance(action, DiscardValue):
        return f"discard {name}"
    source = "" if action.from_location is None else f" from {_location(action.from_location)}"
    return f"move {name} to {_location(action.to)}{source}"


def plan_to_fhr(
    plan: ResidencyPlan, manager: ResidencyManager | None, given: Mapping[ResidencyHandle, str] | None
) -> str:
    from fhr._manager import manager_of

    actions = (*plan.reclaim, *plan.enter, *plan.exit)
    if manager is None and actions:
        manager = manager_of(actions[0].handle.manager_id)
    names: dict[Any, str] = dict(given or {})
    lines = [f"# plan {plan.name!r}, written by fhr's ResidencyPlan.to_fhr()"]
    if manager is not None:
        lines += _machine_and_state(manager, names, {a.handle for a in actions})
    for handle in {a.handle for a in actions}:
        if handle not in names:
            raise ValueError(f"{handle!r} is not a value of the manager the plan is written against")
    body = [f"plan {_string(plan.name)} {{"]
    if plan.reclaim:
        body.append("  reclaim { " + "  ".join(_action(a, names) for a in plan.reclaim) + " }")
    for r in plan.reservations:
        body.append(f"  reserve {_location(r.location)} {r.nbytes} {_string(r.label)}")
    if plan.enter:
        body.append("  enter { " + "  ".join(_action(a, names) for a in plan.enter) + " }")
    if plan.exit:
        body.append("  exit { " + "  ".join(_action(a, names) for a in plan.exit) + " }")
    body.append("}")
    return "\n".join(lines + body) + "\n"


def _machine_and_state(manager: ResidencyManager, names: dict[Any, str], referenced: set[Any]) -> list[str]:
    snapshot = manager.snapshot()
    lines = [f"devices {manager._device_count}"]
    for entry in snapshot.locations:
        if entry.budget_bytes is not None:
            lines.append(f"budget {_location(entry.location)} {entry.budget_bytes}")
    for entry in snapshot.locations:
        if entry.budget_bytes is None:
            lines.append(f"location {_location(entry.location)}")
    for value in snapshot.values:
        if value.discarded and value.handle not in referenced:
            continue
        name = names.setdefault(value.handle, f"v{value.handle.handle_id}")
        spec = value.spec
        size = f"{spec.logical_nbytes}" + (
            f" storage {spec.storage_nbytes}" if spec.storage_nbytes != spec.logical_nbytes else ""
        )
        mode = "replicable" if spec.replica_mode is ReplicaMode.REPLICABLE else "exclusive"
        replicas = [m.location for m in value.materializations]
        if value.discarded:
            lines += [f"value {name} {size} {mode} at pageable", f"discard {name}"]
            continue
        if value.has_source:
            lines.append(f"value {name} {size} {mode} source {_location(value.source_location)}")
        else:
            lines.append(f"value {name} {size} {mode} at {_location(replicas[0])}")
            replicas = replicas[1:]
        lines += [f"ensure {name} at {_location(at)}" for at in replicas]
        for m in value.materializations:
            at = _location(m.location)
            lines += [f"hold {name} at {at}"] * m.hold_count
            lines += [f"lease {name} at {at}"] * m.use_count
            lines += [f"lease {name} at {at} pending"] * m.pending_event_count
    for r in snapshot.reservations:
        lines.append(f"reserve {_location(r.location)} {r.nbytes} {_string(r.label)}")
    return lines

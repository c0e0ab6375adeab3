"""fhr.solve: a workload planned in-process (fhr._compiler) or by fhr-plan
solve, the same figures either way; the program it returns loaded and run
a statement at a time, each step's key resident when the step runs."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fhr
from conftest import CUDA0

ROOT = Path(__file__).resolve().parents[2]
KiB = 1024

# Three 32 KiB keys in pinned memory, room for two on cuda:0, used a, b, c,
# a: the planner keeps a through step 2 (it comes back next), the LRU
# policy evicts it (the oldest) and loads it again.
KEYS = {
    "schema": "fhr-workload/1",
    "name": "keys",
    "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 64 * KiB}],
    "values": [{"name": n, "bytes": 32 * KiB, "mode": "replicable", "at": "pinned"} for n in "abc"],
    "steps": [{"name": f"ks-{i}/{n}", "needs": [{"at": "cuda:0", "values": [n]}]} for i, n in enumerate("abca")],
}


def has_compiler() -> bool:
    try:
        from fhr import _compiler  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return False
    return True


def tool() -> str | None:
    return os.environ.get("FHR_PLAN")


def hide_compiler(monkeypatch) -> list[list[str]]:
    """Makes fhr.solve and fhr.load go through the command, as in a
    runtime-only build; returns the list the commands run are added to."""
    monkeypatch.setitem(sys.modules, "fhr._compiler", None)  # importing it fails
    monkeypatch.delattr(fhr, "_compiler", raising=False)
    commands: list[list[str]] = []
    run = subprocess.run

    def counted(command, *args, **kwargs):
        commands.append(list(command))
        return run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    return commands


@pytest.fixture(params=["in-process", "fhr-plan"])
def solver(request, monkeypatch):
    """fhr.solve in-process, and again through the command (the extension
    hidden), where each is available; the second must run the command."""
    if request.param == "in-process" and not has_compiler():
        pytest.skip("this build has no fhr._compiler (a runtime-only build)")
    commands: list[list[str]] = []
    if request.param == "fhr-plan":
        if not tool():
            pytest.skip("FHR_PLAN names no fhr-plan to solve with")
        commands = hide_compiler(monkeypatch)

    def solve(*args, **kwargs):
        ran = len(commands)
        try:
            return fhr.solve(*args, **kwargs)
        finally:
            if request.param == "fhr-plan":
                assert len(commands) > ran and commands[ran][1] == "solve", "fhr.solve did not run fhr-plan solve"

    return solve


def test_the_planner_keeps_the_key_that_comes_back(solver):
    solution = solver(KEYS)
    assert solution.feasible and solution.failure is None
    assert solution.bytes_moved == 96 * KiB  # a, b, c loaded once each
    # The bound keeps a byte for the solver's rounding (bound.cpp).
    assert solution.report["lower_bound"] == {"bytes": 96 * KiB - 1, "method": "lp-greedy"}
    assert solution.lower_bound_bytes == 96 * KiB - 1
    assert solution.report["schema"] == "fhr-solve-report/1"
    assert solution.report["result"]["bytes_per_link"] == {"pinned-device": 96 * KiB}
    assert solution.report["result"]["peaks"] == [{"at": "cuda:0", "peak_bytes": 64 * KiB}]
    assert solution.predicted_seconds > 0
    assert solution.program.startswith("# fhr-plan solve --policy planner: workload 'keys'\n")
    assert 'program "keys" {' in solution.program


def test_the_reference_policy_loads_it_again(solver):
    lru = solver(KEYS, policy="lru")
    assert lru.feasible
    assert lru.bytes_moved == 128 * KiB  # a evicted at step 2, loaded again at step 3
    assert lru.program.startswith("# fhr-plan solve --policy lru: workload 'keys'\n")
    compared = solver(KEYS, compare=True).report["compared"]
    assert compared["policy"] == "lru" and compared["bytes_moved"] == 128 * KiB


def test_the_solved_program_runs_with_each_steps_key_resident(solver, sim):
    file = solver(KEYS).load()
    assert file.plans == ("ks-0/a", "ks-1/b", "ks-2/c", "ks-3/a")
    m = file.manager(backend=sim)
    try:
        bound = file.bind(m, synthetic=True)
        names = {bound.handle(n): n for n in "abc"}
        steps = bound.program_steps("keys")
        seen = []
        for plan in steps:
            steps.wait()
            resident = sorted(
                names[v.handle] for v in m.snapshot().values if CUDA0 in [r.location for r in v.materializations]
            )
            seen.append((plan, resident))
            with m.hold([bound.handle(plan[-1])], at=CUDA0):
                pass
        assert [plan for plan, _ in seen] == ["ks-0/a", "ks-1/b", "ks-2/c", "ks-3/a"]
        assert all(plan[-1] in resident and len(resident) <= 2 for plan, resident in seen)
        assert seen[2] == ("ks-2/c", ["a", "c"])  # a stayed: b made room for c
        assert steps.result.completed
    finally:
        m.close(force=True)


def test_an_infeasible_workload_names_its_step(solver):
    tight = copy.deepcopy(KEYS)
    tight["budgets"][0]["bytes"] = 32 * KiB - 1
    solution = solver(tight)
    assert not solution.feasible and solution.program is None and solution.bytes_moved is None
    assert solution.report == {
        "schema": "fhr-solve-report/1",
        "feasible": False,
        "step": 0,
        "step_name": "ks-0/a",
        "at": "cuda:0",
        "needed_bytes": 32 * KiB,
        "budget_bytes": 32 * KiB - 1,
        "short_bytes": 1,
    }
    assert "short by 1 bytes" in solution.failure
    with pytest.raises(fhr.FhrError, match="no program to use"):
        solution.load()


def test_a_workload_that_breaks_its_rules_is_a_workload_error(solver):
    bad = copy.deepcopy(KEYS)
    bad["steps"][2]["needs"][0]["values"] = ["d"]
    with pytest.raises(fhr.WorkloadError) as raised:
        solver(bad)
    assert isinstance(raised.value, ValueError)
    assert raised.value.diagnostics == "steps[2].needs[0].values[0]: unknown value 'd'"
    with pytest.raises(fhr.WorkloadError, match="missing field 'budgets'"):
        solver({"schema": "fhr-workload/1"})


def test_fhr_files_are_workloads_too(solver, tmp_path):
    solution = solver(ROOT / "tests/golden/inputs/solve-keys.fhr")
    assert solution.bytes_moved == 1541406720  # the golden solve-keys-fhr's figure
    assert solution.program.startswith("# fhr-plan solve --policy planner: workload 'solve-keys'\n")
    errors = ROOT / "tests/golden/inputs/solve-workload-errors.fhr"
    with pytest.raises(fhr.WorkloadError) as raised:
        solver(errors)
    assert raised.value.path == str(errors)
    assert f"{errors}:4:1: error: [E0702] step 'idle' needs no value and no workspace" in raised.value.diagnostics
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KEYS))
    assert solver(path).program == solver(KEYS).program


def test_a_link_profile_changes_the_time_not_the_bytes(solver):
    shipped = json.loads((ROOT / "runtime/model/profiles/h200.json").read_text())
    slower = copy.deepcopy(shipped)
    for curve in slower["links"]["pinned-device"]:
        curve["bandwidth_gbps"] /= 10
    default, same, slow = solver(KEYS), solver(KEYS, links=shipped), solver(KEYS, links=slower)
    assert default.predicted_seconds == same.predicted_seconds
    assert slow.predicted_seconds > default.predicted_seconds
    assert slow.bytes_moved == default.bytes_moved
    with pytest.raises(ValueError, match="the link profile"):
        solver(KEYS, links={"schema": "nope"})


def test_written_and_loaded_as_a_file(solver, tmp_path):
    solution = solver(KEYS)
    solution.write(tmp_path / "keys.fhr")
    assert (tmp_path / "keys.fhr").read_text() == solution.program
    assert fhr.load(tmp_path / "keys.fhr").plans == solution.load().plans


def test_arguments_are_checked_before_solving():
    with pytest.raises(ValueError, match="policy must be one of planner, lru"):
        fhr.solve(KEYS, policy="belady")
    with pytest.raises(ValueError, match="time_limit"):
        fhr.solve(KEYS, time_limit=0)
    with pytest.raises(TypeError, match="prefetch, exact and compare must be bool"):
        fhr.solve(KEYS, prefetch=1)
    with pytest.raises(TypeError, match="workload must be a mapping, JSON text or a path"):
        fhr.solve(42)
    with pytest.raises(fhr.WorkloadError, match="cannot read"):
        fhr.solve("/nonexistent/workload.json")


def test_the_reference_controller_that_gives_up_is_no_program(solver):
    solution = solver(ROOT / "tests/golden/inputs/solve-lru-workspace-only.json", policy="lru")
    assert not solution.feasible and solution.program is None and solution.report is None
    assert solution.failure.startswith("step 1 'second': the reference controller takes no request without a value")
    assert "Reservation 'tmp' exceeds budget at cuda:0" in solution.failure


def test_json_text_is_a_workload(solver):
    assert solver(json.dumps(KEYS)).program == solver(KEYS).program


@pytest.mark.skipif(not tool(), reason="FHR_PLAN names no fhr-plan to compare with")
@pytest.mark.skipif(not has_compiler(), reason="this build has no fhr._compiler to compare")
def test_in_process_and_the_command_give_the_same_program_and_report(monkeypatch):
    cases = [(KEYS, {}), (KEYS, {"policy": "lru", "compare": True}), (ROOT / "tests/golden/inputs/solve-keys.fhr", {})]
    inside = [fhr.solve(w, **k) for w, k in cases]
    commands = hide_compiler(monkeypatch)
    outside = [fhr.solve(w, **k) for w, k in cases]
    assert len(commands) == len(cases)
    for a, b in zip(inside, outside):
        assert a.program == b.program
        for report in (a.report, b.report):  # how long solving took differs
            for result in (report["result"], report.get("compared", {})):
                result.pop("solve_seconds", None)
        assert a.report == b.report

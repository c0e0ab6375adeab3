"""Plans from text (fhr.load of .fhr and .fhrb) and ResidencyPlan.to_fhr() checked by fhr-plan."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fhr
from conftest import CUDA0, array

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = """
budget pinned 64 KiB
devices 1
value weight 16 KiB replicable at pageable
value key 32 KiB replicable source pageable
value query 8 KiB exclusive at pageable
plan "tile" {
  reserve cuda:0 4 KiB "outputs"
  enter { ensure weight at cuda:0  ensure key at cuda:0  move query to cuda:0 }
  exit  { move query to pinned from cuda:0  drop key at cuda:0  drop weight at cuda:0 }
}
program "two tiles" { run "tile"  run "tile" }
"""


def plan_tool():
    return os.environ.get("FHR_PLAN") or shutil.which("fhr-plan")


def can_compile():
    try:
        from fhr import _compiler  # noqa: F401
    except ImportError:
        return plan_tool() is not None
    return True


@pytest.fixture
def plan_file(tmp_path):
    if not can_compile():
        pytest.skip("neither fhr._compiler nor fhr-plan is available to compile .fhr text")
    path = tmp_path / "stage.fhr"
    path.write_text(PLAN)
    return path


def test_load_binds_real_values_and_runs_plans(plan_file, sim):
    file = fhr.load(plan_file)
    assert file.plans == ("tile",) and file.programs == ("two tiles",)
    assert [v.display_name for v in file.values] == ["weight", "key", "query"]
    assert file.budgets == {fhr.PINNED_HOST: 65536}
    m = file.manager(backend=sim)
    weight = m.adopt(np.zeros(16384, np.uint8), replica_mode=fhr.ReplicaMode.REPLICABLE)
    query = m.adopt(np.ones(8192, np.uint8))
    key_spec = fhr.ResidencyValueSpec(np.ndarray, 32768, 32768, fhr.ReplicaMode.REPLICABLE,
                                      fhr.Recoverability.RECONSTRUCTIBLE)

    class Key:
        def load(self):
            return np.full(32768, 3, np.uint8)

    key = m.register_source(key_spec, Key())
    with pytest.raises(ValueError, match="no handle is bound to key"):
        file.bind(m, {"weight": weight, "query": query})
    with pytest.raises(ValueError, match="weight is declared replicable"):
        file.bind(m, {"weight": query, "key": key, "query": weight})
    bound = file.bind(m, {"weight": weight, "key": key, "query": query})
    assert bound.setup.completed and bound.handle("query") == query
    plan = bound.plan("tile")
    assert plan.enter[2] == fhr.MoveResident(query, CUDA0)
    assert bound.explain("tile").feasible
    with bound.scope("tile"):
        with m.acquire([key], at=CUDA0, consumer_stream=sim.create_stream(CUDA0)) as values:
            assert int(values[key][0]) == 3
    run = bound.run_program("two tiles")
    assert run.completed and [s.kind for s in run.steps].count("enter") == 6
    assert run.steps[0].line > 0 and run.steps[1].transition is not None
    m.close(force=True)


def test_load_synthetic_and_compiled_modules(plan_file, tmp_path, sim):
    tool = plan_tool()
    if tool is None:
        pytest.skip("fhr-plan is not built (set FHR_PLAN)")
    module = tmp_path / "stage.fhrb"
    subprocess.run([tool, "compile", str(plan_file), "-o", str(module)], check=True)
    file = fhr.load(module)
    m = file.manager(backend=sim)
    bound = file.bind(m, synthetic=True)
    run = bound.run_plan("tile")
    assert run.completed and run.failure is None
    snapshot = m.snapshot()
    assert [v.handle for v in snapshot.values] == [bound.handle(n) for n in ("weight", "key", "query")]
    m.close(force=True)


def test_bad_plan_files(tmp_path):
    broken = tmp_path / "broken.fhr"
    broken.write_text("value x 8 KiB at nowhere\n")
    with pytest.raises(fhr.PlanFileError) as caught:
        fhr.load(broken)
    assert "broken.fhr" in str(caught.value)
    corrupt = tmp_path / "corrupt.fhrb"
    corrupt.write_bytes(b"FHRB" + b"\0" * 40)
    with pytest.raises(fhr.PlanFileError):
        fhr.load(corrupt)
    with pytest.raises(fhr.PlanFileError, match="cannot read"):
        fhr.load(tmp_path / "missing.fhr")


def test_to_fhr_is_checked_by_fhr_plan_exactly_as_explain(sim, tmp_path):
    tool = plan_tool()
    if tool is None:
        pytest.skip("fhr-plan is not built (set FHR_PLAN)")
    m = fhr.ResidencyManager({fhr.PINNED_HOST: 100_000, CUDA0: 50_000}, backend=sim)
    w = m.adopt(array(20_000), replica_mode=fhr.ReplicaMode.REPLICABLE)
    q = m.adopt(array(10_000))
    m.ensure(w, fhr.PINNED_HOST)
    hold = m.hold([w], at=fhr.PINNED_HOST)
    scratch = m.reserve(CUDA0, 5_000, label='scratch "a" {b}')
    plan = fhr.ResidencyPlan(
        "tile {0}",
        enter=(fhr.EnsureResident(w, CUDA0), fhr.MoveResident(q, CUDA0)),
        exit=(fhr.MoveResident(q, fhr.PINNED_HOST, from_location=CUDA0), fhr.DropResident(w, CUDA0)),
        reservations=(fhr.MemoryReservation(CUDA0, 10_000, "outputs"),),
    )
    text = plan.to_fhr(names={w: "weight"})
    assert "value weight 20000 replicable at pageable" in text and "hold weight at pinned" in text
    path = tmp_path / "plan.fhr"
    path.write_text(text)
    done = subprocess.run([tool, "explain", "--format", "json", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    predicted = m.explain(plan)
    assert predicted.feasible
    report = json.loads(done.stdout)
    plans = [u for f in report["files"] for u in f["units"] if u["kind"] == "plan"]
    assert [(u["name"], u["feasible"]) for u in plans] == [("tile {0}", predicted.feasible)]
    assert subprocess.run([tool, "check", str(path)]).returncode == 0
    # One more reservation than cuda:0 holds: both refuse it.
    tight = fhr.ResidencyPlan("tight", reservations=(fhr.MemoryReservation(CUDA0, 50_000, "all"),))
    path.write_text(tight.to_fhr(m))
    assert not m.explain(tight).feasible
    assert subprocess.run([tool, "check", str(path)], capture_output=True).returncode == 1
    hold.release()
    scratch.release()
    m.close()

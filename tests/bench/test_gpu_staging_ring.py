"""bench/gpu_staging_ring.sh with a stand-in for fhr-plan: a script that
writes the recorded document of test_prediction_error
(tests/bench/inputs/totals.run.json) with its one copy's measured time set
by the FHR_STAGING_SLOT_MIB it was run with, and logs each call. The GPU
script's plumbing is what is tested here: every setting's runs in its
rounds, each with its own environment, and the tables that compare them."""
import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests/bench/inputs/totals.run.json"

STAND_IN = """#!/usr/bin/env python3
import json, os, sys
slot = os.environ.get("FHR_STAGING_SLOT_MIB", "turn")
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(slot + " " + sys.argv[-1].rsplit("/", 1)[-1] + " " + " ".join(sys.argv[1:-1]) + "\\n")
if slot == "8":
    sys.exit(3)  # a failed run: its document is empty
document = json.load(open(os.environ["STAND_IN_RECORDED"]))
for run in document["runs"]:
    for step in run["steps"]:
        if step["transfer"] != "none" and step["measured"].get("duration_us") is not None:
            step["measured"]["duration_us"] = 1000.0 if slot == "turn" else 10.0 * float(slot)
json.dump(document, sys.stdout)
"""


def run_script(tmp_path, *slots, rounds="2"):
    tool = tmp_path / "fhr-plan"
    tool.write_text(STAND_IN)
    tool.chmod(0o755)
    log = tmp_path / "calls.txt"
    # A slot set in the caller's environment must not reach the turn's runs.
    environment = dict(os.environ, STAND_IN_LOG=str(log), STAND_IN_RECORDED=str(RECORDED), ROUNDS=rounds,
                       FHR_STAGING_SLOT_MIB="2")
    environment.pop("FHR_STAGING_CHUNK_MIB", None)
    done = subprocess.run(["bash", str(ROOT / "bench/gpu_staging_ring.sh"), str(tool), str(tmp_path / "out"),
                           *slots], cwd=ROOT, env=environment, capture_output=True, text=True)
    return done, (log.read_text().splitlines() if log.exists() else [])


def test_every_setting_in_every_round_with_its_own_slot(tmp_path):
    done, calls = run_script(tmp_path, "4", "1")
    assert done.returncode == 0, done.stderr
    run = "run --backend cuda --warm-up --repeat 3 --format json"
    assert calls == [f"{slot} staged-both-ways.fhr {run}" for slot in ("turn", "4", "1")] * 2 + [
        f"{slot} between-sampled-sizes.fhr {run}" for slot in ("turn", "4", "1")]
    both_ways = (tmp_path / "out/both-ways.txt").read_text().splitlines()
    # The stand-in's copy: 1000 us under the turn, 40 and 10 us in the rings.
    assert both_ways[2] == ("| totals.fhr | copies | 0 | ensure big from pinned to cuda:0 | 40 MiB | 1000.0 | 40.0 "
                            "| 10.0 | 0.040 | 0.010 |")
    assert both_ways[-1] == "| pinned-device | 16 MiB and more | 1 | 0.040, 0.040 | 0.010, 0.010 |"
    assert (tmp_path / "out/sweep.txt").read_text().splitlines()[0].startswith(
        "| file | unit | step | action | bytes | turn, µs | ring4, µs | ring1, µs |")
    assert sorted(p.name for p in (tmp_path / "out/runs").glob("*.json")) == sorted(
        [f"both-ways.{s}.r{r}.json" for s in ("turn", "ring4", "ring1") for r in (1, 2)]
        + [f"sweep.{s}.json" for s in ("turn", "ring4", "ring1")])


def test_a_failed_run_fails_the_script_and_is_named(tmp_path):
    done, _ = run_script(tmp_path, "8", rounds="1")
    assert done.returncode == 2
    timeline = (tmp_path / "out/timeline.txt").read_text()
    assert "exit 3 (ring8, " in timeline


def test_bad_arguments(tmp_path):
    slot_message = "a slot is a power of two of MiB from 1 to the chunk (32), not "
    for slots, rounds, message in ((("0",), "1", slot_message + "0"), (("x",), "1", slot_message + "x"),
                                   (("04",), "1", slot_message + "04"), (("3",), "1", slot_message + "3"),
                                   (("64",), "1", slot_message + "64"),
                                   (("4",), "0", "ROUNDS must be a whole number from 1 to 999, not 0"),
                                   (("4",), "01", "ROUNDS must be a whole number from 1 to 999, not 01")):
        done, calls = run_script(tmp_path, *slots, rounds=rounds)
        assert done.returncode == 2
        assert done.stdout.strip() == message
        assert calls == []

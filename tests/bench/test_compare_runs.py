"""bench/compare_runs.py on the recorded document of test_prediction_error
(tests/bench/inputs/totals.run.json: a unit predicted to take no time, one
that copies 40 MiB, one its preflight refused) against copies of it whose
measured times are changed here."""
import copy
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests/bench/inputs/totals.run.json"
sys.path.insert(0, str(ROOT / "bench"))  # the script, and prediction_error beside it
import compare_runs as script  # noqa: E402


def scaled(document, factor):
    """The document with every step's measured times times `factor`."""
    changed = copy.deepcopy(document)
    for run in changed["runs"]:
        for step in run["steps"]:
            for key in ("duration_us", "transfer_us"):
                if step["measured"].get(key) is not None:
                    step["measured"][key] *= factor
    return changed


def write(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def test_two_sets_side_by_side_with_their_shares(tmp_path, capsys):
    recorded = json.loads(RECORDED.read_text())
    half = write(tmp_path, "half.json", scaled(recorded, 0.5))
    # Two documents in the third set: each step's time is the median of
    # both (0.5 and 0.7 times the first's).
    other = write(tmp_path, "other.json", scaled(recorded, 0.7))
    assert script.main([f"base={RECORDED}", f"half={half}", f"pooled={half},{other}"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "| file | unit | step | action | bytes | base, µs | half, µs | pooled, µs | half / base | pooled / base |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| totals.fhr | copies | 0 | ensure big from pinned to cuda:0 | 40 MiB | 90518.0 | 45259.0 | 54310.8 "
        "| 0.500 | 0.600 |",
        "",
        "| link | sizes | steps | half / base: median share, total | pooled / base: median share, total |",
        "|---|---|---|---|---|",
        "| pinned-device | 16 MiB and more | 1 | 0.500, 0.500 | 0.600, 0.600 |",
    ]


def test_unmatched_steps_and_unreadable_files(tmp_path, capsys):
    recorded = json.loads(RECORDED.read_text())
    fewer = copy.deepcopy(recorded)
    fewer["runs"] = [run for run in fewer["runs"] if run["name"] != "copies"]
    path = write(tmp_path, "fewer.json", fewer)
    not_run = write(tmp_path, "not-run.json", {"schema": "other"})
    assert script.main([f"base={RECORDED}", f"fewer={path},{not_run}"]) == 2
    captured = capsys.readouterr()
    assert "steps ran in one set and not the other: left out" in captured.out
    assert "not-run.json: not an fhr-run/1 document" in captured.err
    assert script.main(["base-without-files"]) == 2  # usage


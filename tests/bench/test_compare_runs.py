"""bench/compare_runs.py on the recorded document of test_prediction_error
(tests/bench/inputs/totals.run.json: a unit predicted to take no time, one
that copies 40 MiB, one its preflight refused) against copies of it whose
measured times are changed here, and on documents made here: two links and
both size classes, a step whose base time is zero, a step not timed, a
step that differs between the sets, a unit run against two predictions."""
import copy
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests/bench/inputs/totals.run.json"
sys.path.insert(0, str(ROOT / "bench"))  # the script, and prediction_error beside it
import compare_runs as script  # noqa: E402

MIB = 1 << 20


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


def step(action, link, nbytes, measured, predicted=100.0):
    return {"action": action, "link": link, "bytes": nbytes, "transfer": "copy",
            "predicted": {"duration_us": predicted}, "measured": {"duration_us": measured}}


def document(times, predicted=100.0, actions=None):
    """A program `p` of plans.fhr whose steps took `times` (µs; None: not
    timed): an 8 MiB and a 32 MiB copy in, a 32 MiB copy out, a 4 MiB copy in
    that took no time in the first set, an untimed step."""
    shapes = [("move a from pageable to cuda:0", "pageable-device", 8 * MIB),
              ("move b from pageable to cuda:0", "pageable-device", 32 * MIB),
              ("move b from cuda:0 to pageable", "device-pageable", 32 * MIB),
              ("move c from pageable to cuda:0", "pageable-device", 4 * MIB),
              ("move d from pageable to cuda:0", "pageable-device", 4 * MIB)]
    if actions:
        shapes = [(actions.get(k, a), link, n) for k, (a, link, n) in enumerate(shapes)]
    run = {"file": "bench/plans/plans.fhr", "kind": "program", "name": "p", "totals": {},
           "steps": [step(a, link, n, t, predicted) for (a, link, n), t in zip(shapes, times)]}
    return {"schema": "fhr-run/1", "runs": [run]}


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


def test_links_size_classes_and_times_that_cannot_be_shared(tmp_path, capsys):
    base = write(tmp_path, "base.json", document([100.0, 400.0, 1000.0, 0.0, None]))
    new = write(tmp_path, "new.json", document([50.0, 800.0, 900.0, 30.0, 5.0]))
    assert script.main([f"turn={base}", f"ring={new}"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "| file | unit | step | action | bytes | turn, µs | ring, µs | ring / turn |",
        "|---|---|---|---|---|---|---|---|",
        "| plans.fhr | p | 0 | move a from pageable to cuda:0 | 8 MiB | 100.0 | 50.0 | 0.500 |",
        "| plans.fhr | p | 1 | move b from pageable to cuda:0 | 32 MiB | 400.0 | 800.0 | 2.000 |",
        "| plans.fhr | p | 2 | move b from cuda:0 to pageable | 32 MiB | 1000.0 | 900.0 | 0.900 |",
        "| plans.fhr | p | 3 | move c from pageable to cuda:0 | 4 MiB | 0.0 | 30.0 | - |",
        "",
        "| link | sizes | steps | ring / turn: median share, total |",
        "|---|---|---|---|",
        "| device-pageable | 16 MiB and more | 1 | 0.900, 0.900 |",
        # The 4 MiB step's share has no base: out of the median, in the total.
        "| pageable-device | under 16 MiB | 2 | 0.500, 0.800 |",
        "| pageable-device | 16 MiB and more | 1 | 2.000, 2.000 |",
        "",
        "1 steps not in every set, or not the same action and size in all: left out",
    ]


def test_steps_that_differ_and_units_run_twice_are_left_out(tmp_path, capsys):
    base = write(tmp_path, "base.json", document([100.0, 400.0, 1000.0, 10.0, 10.0]))
    # Another build that moved b out before it moved b in: the same
    # positions, other actions.
    swapped = document([100.0, 400.0, 1000.0, 10.0, 10.0],
                       actions={1: "move b from cuda:0 to pageable", 2: "move b from pageable to cuda:0"})
    new = write(tmp_path, "new.json", swapped)
    assert script.main([f"base={base}", f"new={new}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[3] for line in out[2:5]] == ["move a from pageable to cuda:0"] + [
        "move c from pageable to cuda:0", "move d from pageable to cuda:0"]
    assert out[-1] == "2 steps not in every set, or not the same action and size in all: left out"
    # One set ran the unit against two predictions: which is meant is
    # ambiguous, so none of its steps is compared, and the set has none.
    twice = write(tmp_path, "twice.json", document([1.0] * 5, predicted=200.0))
    assert script.main([f"base={base}", f"both={base},{twice}"]) == 2
    captured = capsys.readouterr()
    assert "both: 1 units ran against several predictions: left out" in captured.err
    assert "both: no timed step that moves bytes" in captured.err
    assert captured.out.splitlines()[-1] == (
        "5 steps not in every set, or not the same action and size in all: left out")


def test_unreadable_files_empty_sets_and_the_usage(tmp_path, capsys):
    not_run = write(tmp_path, "not-run.json", {"schema": "other"})
    assert script.main([f"base={RECORDED}", f"new={RECORDED},{not_run}"]) == 2
    assert "not-run.json: not an fhr-run/1 document" in capsys.readouterr().err
    assert script.main([f"base={RECORDED}", "empty="]) == 2
    assert "empty: no timed step that moves bytes" in capsys.readouterr().err
    for arguments in (["base-without-files"], [f"base={RECORDED}"]):
        assert script.main(arguments) == 2
        assert capsys.readouterr().err.strip() == script.USAGE

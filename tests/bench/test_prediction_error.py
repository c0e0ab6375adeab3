"""bench/prediction_error.py on a recorded fhr-run/1 document (issue #14).

tests/bench/inputs/totals.run.json is `fhr-plan run --backend sim --format
json tests/bench/inputs/totals.fhr`, recorded once: a unit predicted to
take no time (its relative error is null), one that copies 40 MiB, one its
preflight refused (no prediction). The script crashed on the first.
"""
import copy
import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests/bench/inputs/totals.run.json"


def load_script():
    spec = importlib.util.spec_from_file_location("prediction_error", ROOT / "bench/prediction_error.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_unit_of_the_recorded_run(capsys):
    script = load_script()
    assert script.main([str(RECORDED)]) == 1  # the 40 MiB copy misses on the simulated backend
    assert capsys.readouterr().out.splitlines() == [
        "file                     unit                             step                                        "
        "       bytes    predicted     measured      error",
        "totals.fhr               copies                           ensure big from pinned to cuda:0            "
        "    41943040      802.5us    90518.0us  +11178.9%  MISS",
        "  total plan drop-only: predicted 0.0 us, measured in steps 43.3 us (+43.3 us); 0.0 us between steps",
        "  total plan copies: predicted 802.5 us, measured in steps 96537.5 us (+11929.0%); "
        "122426.3 us between steps",
        "1 transfers compared, 1 outside the target (10% at 16 MiB and more, 5 us below)",
    ]


def test_totals_a_document_may_lack():
    script = load_script()
    runs = json.loads(RECORDED.read_text())["runs"]
    drop_only, copies, refused = runs
    assert script.total_line(refused) is None  # no prediction
    older = copy.deepcopy(copies)  # written before span_us and between_steps_us
    del older["totals"]["span_us"], older["totals"]["between_steps_us"]
    assert script.total_line(older) == "  total plan copies: predicted 802.5 us, measured in steps 96537.5 us (+11929.0%)"
    unmeasured = copy.deepcopy(drop_only)
    unmeasured["totals"]["measured_us"] = None
    assert script.total_line(unmeasured) == "  total plan drop-only: predicted 0.0 us, not measured"
    no_totals = copy.deepcopy(copies)
    del no_totals["totals"]
    assert script.total_line(no_totals) is None


def test_totals_name_the_windows_of_a_run_with_overlap():
    script = load_script()
    copies = json.loads(RECORDED.read_text())["runs"][1]
    older = copy.deepcopy(copies)
    del older["totals"]["span_us"], older["totals"]["between_steps_us"]
    older["windows"] = {"predicted": 3, "ran": 3, "differing_steps": []}
    assert script.total_line(older).endswith("(+11929.0%); windows 3 predicted, 3 formed")
    older["windows"] = {"predicted": 3, "ran": 2, "differing_steps": [4, 5]}
    assert script.total_line(older).endswith("; windows 3 predicted, 2 formed, steps 4, 5 elsewhere")
    older["windows"] = None  # no overlap (the simulated backend)
    assert script.total_line(older).endswith("(+11929.0%)")


def test_a_document_of_another_schema(tmp_path, capsys):
    other = tmp_path / "explain.json"
    other.write_text(json.dumps({"schema": "fhr-explain/2", "runs": []}))
    assert load_script().main([str(other)]) == 2
    assert "not an fhr-run/1 document" in capsys.readouterr().err


def test_an_empty_document_from_a_failed_run(tmp_path, capsys):
    # gpu_prediction.sh once fed it the empty output of a run that exited
    # before writing JSON; it must say so, not raise.
    empty = tmp_path / "replicated-weights.run.json"
    empty.write_text("")
    assert load_script().main([str(empty)]) == 2
    assert f"{empty}: not a JSON document" in capsys.readouterr().err


def test_a_bad_document_does_not_hide_the_others(tmp_path, capsys):
    empty = tmp_path / "failed.run.json"
    empty.write_text("")
    assert load_script().main([str(empty), str(RECORDED)]) == 2
    captured = capsys.readouterr()
    assert "not a JSON document" in captured.err
    assert "1 transfers compared, 1 outside the target" in captured.out


def test_a_load_is_compared_without_its_source_fill(tmp_path, capsys):
    # A load's step holds its source filling the storage (the loader's
    # speed) and the copy: only the copy is held to the target; the fill is
    # tabled apart.
    step = {
        "action": "ensure rk[0] from pageable to cuda:0",
        "bytes": 130023424,
        "transfer": "load",
        "predicted": {"duration_us": 10000.0, "transfer_us": 4000.0, "source_load_us": 6000.0},
        "measured": {"duration_us": 13000.0, "transfer_us": 4200.0, "source_load_us": 8800.0},
    }
    document = {"schema": "fhr-run/1", "runs": [{"file": "examples/bootstrapping.fhr", "kind": "program",
                                                 "name": "bootstrap", "steps": [step]}]}
    path = tmp_path / "load.run.json"
    path.write_text(json.dumps(document))
    assert load_script().main([str(path)]) == 0  # the copy is within 10%; the whole step would not be
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[-1] == "+5.0%"
    assert "source fill: ensure rk[0]" in out[2] and out[2].split()[-2:] == ["+46.7%", "(loader)"]
    assert out[-2] == "1 transfers compared, 0 outside the target (10% at 16 MiB and more, 5 us below)"
    assert out[-1] == ("1 source fills (the loader's time, outside the target): error +46.7% to +46.7%, "
                       "median +46.7%")


def repeated_step(action, size, predicted, transfers):
    """A copy step of `size` bytes measured over len(transfers) runs
    (`run --repeat`), its median the measured time."""
    median = sorted(transfers)[len(transfers) // 2]
    return {
        "action": action,
        "bytes": size,
        "transfer": "copy",
        "predicted": {"duration_us": predicted, "transfer_us": predicted, "source_load_us": 0.0},
        "measured": {"duration_us": median, "transfer_us": median, "source_load_us": 0.0,
                     "repetitions": {"duration_us": transfers, "source_load_us": [0.0] * len(transfers)}},
    }


def write_rounds(tmp_path, documents):
    """Each document as roundK.run.json; their paths in order."""
    paths = []
    for k, document in enumerate(documents):
        path = tmp_path / f"round{k}.run.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    return paths


def test_misses_whose_runs_spread_wider_than_the_band_are_counted_apart(tmp_path, capsys):
    steps = [
        # 30 MiB, runs within 3% of each other, all 40% over: a steady miss.
        repeated_step("move query from pinned to cuda:0", 31457280, 580.0, [812.0, 823.0, 836.0]),
        # 120 MiB, runs 6.4-21.2 ms (the median 60% over): unsteady.
        repeated_step("ensure bsk[0] from pageable to cuda:0", 125829120, 8000.0, [6400.0, 12800.0, 21200.0]),
        # 10 MiB, runs 230-242 us: 12 us apart, wider than the 10 us band.
        repeated_step("move ct from pinned to cuda:0", 10485760, 200.0, [230.0, 236.0, 242.0]),
        # 10 MiB, within 5 us of the prediction although the runs spread: not a miss.
        repeated_step("move ct from cuda:0 to pinned", 10485760, 200.0, [190.0, 203.0, 215.0]),
        # 120 MiB, runs 19% apart, 12% over: a miss, not unsteady (the band is 20%).
        repeated_step("ensure bsk[1] from pageable to cuda:0", 125829120, 8000.0, [8100.0, 8960.0, 9650.0]),
    ]
    document = {"schema": "fhr-run/1", "runs": [{"file": "examples/x.fhr", "kind": "program", "name": "p",
                                                 "steps": steps}]}
    path = tmp_path / "repeated.run.json"
    path.write_text(json.dumps(document))
    assert load_script().main([str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("+41.9%  MISS  (3 runs: 812.0-836.0 us)")
    assert out[2].endswith("+60.0%  MISS unsteady  (3 runs: 6400.0-21200.0 us)")
    assert out[3].endswith("+36.00 us  MISS unsteady  (3 runs: 230.0-242.0 us)")
    assert out[4].endswith("+3.00 us  (3 runs: 190.0-215.0 us)")
    assert out[5].endswith("+12.0%  MISS  (3 runs: 8100.0-9650.0 us)")
    assert out[-2] == "5 transfers compared, 4 outside the target (10% at 16 MiB and more, 5 us below)"
    assert out[-1] == ("2 of them unsteady (their runs spread wider than the target's band: 20% at 16 MiB "
                       "and more, 10 us below), 2 steady")


def test_one_run_is_never_unsteady():
    script = load_script()
    step = repeated_step("move x from pinned to cuda:0", 31457280, 580.0, [900.0])
    del step["measured"]["repetitions"]
    assert not script.unsteady(step, large=True)
    assert script.spread(step) == ""


def test_rounds_against_one_profile_are_pooled(tmp_path, capsys):
    # gpu_prediction.sh's rounds: one unit run by three documents against
    # the same predictions, in a slow, a fast and a typical stretch. Pooled,
    # the step's measured time is the median of all five runs (within 10%);
    # alone, the slow and the fast document would each miss. A fourth
    # document ran the unit against another profile: it stays apart.
    def document(predicted, transfers):
        step = repeated_step("ensure bsk[0] from pageable to cuda:0", 125829120, predicted, transfers)
        if len(transfers) == 1:
            del step["measured"]["repetitions"]
        run = {"file": "examples/bootstrapping.fhr", "kind": "program", "name": "bootstrap", "steps": [step],
               "totals": {"predicted_us": predicted, "measured_us": step["measured"]["duration_us"],
                          "between_steps_us": 10.0}}
        return {"schema": "fhr-run/1", "runs": [run]}

    rounds = [document(predicted, transfers) for predicted, transfers in
              [(4000.0, [5200.0, 5000.0]), (4000.0, [3000.0, 3100.0]), (4000.0, [4100.0]), (4600.0, [4700.0])]]
    assert load_script().main(write_rounds(tmp_path, rounds)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("4000.0us     4100.0us      +2.5%  (5 runs: 3000.0-5200.0 us)")
    assert out[2].endswith("4600.0us     4700.0us      +2.2%")
    assert out[3] == ("  total program bootstrap: predicted 4000.0 us, measured in steps 4100.0 us (+2.5%); "
                      "10.0 us between steps")
    assert out[-2] == "2 transfers compared, 0 outside the target (10% at 16 MiB and more, 5 us below)"
    assert out[-1] == ("1 units pooled from several documents run against the same predictions "
                       "(each step's measured time the median over all their runs)")


def test_a_document_that_stopped_early_pools_only_what_it_ran(tmp_path, capsys):
    # Three rounds of one unit; the first stopped before its second step
    # (measured null there). That step is the median of the two rounds
    # that ran it, and the total leaves the stopped run out.
    def document(transfers, stopped):
        steps = [repeated_step(f"move {name} from pinned to cuda:0", 31457280, 600.0, [t])
                 for name, t in zip("ab", transfers)]
        for step in steps:
            del step["measured"]["repetitions"]
        if stopped:
            steps[1]["measured"] = {"duration_us": None, "source_load_us": None, "transfer_us": None}
        run = {"file": "examples/x.fhr", "kind": "plan", "name": "p", "steps": steps,
               "stopped": {"step": 1} if stopped else None,
               "totals": {"predicted_us": 1200.0, "measured_us": sum(t for t in transfers if t)}}
        return {"schema": "fhr-run/1", "runs": [run]}

    rounds = [document(transfers, stopped) for transfers, stopped in
              [((610.0, None), True), ((590.0, 640.0), False), ((600.0, 620.0), False)]]
    assert load_script().main(write_rounds(tmp_path, rounds)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("600.0us      600.0us      +0.0%  (3 runs: 590.0-610.0 us)")
    assert out[2].endswith("600.0us      630.0us      +5.0%  (2 runs: 620.0-640.0 us)")
    assert out[3] == "  total plan p: predicted 1200.0 us, measured in steps 1225.0 us (+2.1%)"


def load_step(fill_predicted, fill_measured, copy_predicted, copy_measured, mib=240):
    """A load's step as fhr-run/1 records it: its source's fill and its copy apart."""
    return {"action": "ensure key from pageable to cuda:0", "transfer": "load", "bytes": mib << 20,
            "predicted": {"source_load_us": fill_predicted, "transfer_us": copy_predicted,
                          "duration_us": fill_predicted + copy_predicted},
            "measured": {"source_load_us": fill_measured, "transfer_us": copy_measured,
                         "duration_us": fill_measured + copy_measured}}


def loads_document(steps):
    return {"schema": "fhr-run/1", "runs": [{"file": "loads.fhr", "kind": "plan", "name": "loads",
                                             "steps": steps, "totals": {}}]}


def test_the_host_speed_by_document_shows_a_slow_stretch():
    script = load_script()
    fast = loads_document([load_step(100, 80, 1000, 950), load_step(100, 78, 1000, 930),
                           load_step(100, 82, 1000, 960)])
    slow = loads_document([load_step(100, 120, 1000, 1110), load_step(100, 117, 1000, 1080)])
    small = loads_document([load_step(100, 100, 200, 230, mib=8)])  # no copy of 16 MiB or more
    lines = script.host_speed_lines([("out/a.r1.run.json", fast), ("out/a.r2.run.json", slow),
                                     ("out/b.run.json", small)])
    assert lines[1:] == [
        "  a.r1.run.json: 3 loads, fills -20.0%, copies of 16 MiB and more -5.0%",
        "  a.r2.run.json: 2 loads, fills +18.5%, copies of 16 MiB and more +9.5%",
        "  b.run.json: 1 load, fills +0.0%",
    ]
    assert lines[0].startswith("the host's speed by document")
    # One document has nothing to compare with; documents without loads add no line.
    assert script.host_speed_lines([("a.json", fast)]) == []
    without_loads = json.loads(RECORDED.read_text())
    assert script.host_speed_lines([("a.json", fast), ("totals.run.json", without_loads)]) == []


def test_main_prints_the_host_speed_after_the_fills(tmp_path, capsys):
    script = load_script()
    paths = []
    for name, measured in (("r1", 80), ("r2", 120)):
        path = tmp_path / f"{name}.run.json"
        path.write_text(json.dumps(loads_document([load_step(100, measured, 1000, 1000)])))
        paths.append(str(path))
    assert script.main(paths) == 0  # the copies are on their prediction
    out = capsys.readouterr().out.splitlines()
    assert out[-3].startswith("the host's speed by document")
    assert out[-2:] == ["  r1.run.json: 1 load, fills -20.0%, copies of 16 MiB and more +0.0%",
                        "  r2.run.json: 1 load, fills +20.0%, copies of 16 MiB and more +0.0%"]

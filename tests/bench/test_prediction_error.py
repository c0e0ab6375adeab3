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

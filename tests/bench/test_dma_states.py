"""bench/dma_states.py on a recorded fhr-run/1 document (issue #14).

tests/bench/inputs/dma-states.run.json is `fhr-plan run --backend sim
--format json tests/bench/inputs/dma-states.fhr`, recorded once with the
shipped profile: a 10 MiB ciphertext moved into cuda:0 first (after host
work), out of it after a key's load and a drop (a cold value), back in
straight after that (a follow-on: the shipped profile has no figure for
it), and a 20 MiB move the table leaves out (over 16 MiB).
"""
import copy
import importlib.util
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests/bench/inputs/dma-states.run.json"


def load_script():
    sys.path.insert(0, str(ROOT / "bench"))  # it imports prediction_error beside it
    spec = importlib.util.spec_from_file_location("dma_states", ROOT / "bench/dma_states.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HEADER = [
    "| file | unit | step | action | state, extra charged (us) | error, us | before the copy, us "
    "(measured / predicted) | error in the copy, us | the last copy before it |",
    "|---|---|---|---|---|---|---|---|---|",
]
ROWS = [
    "| dma-states.fhr | states | 0 | move ct from pinned to cuda:0 | after-host-work, 26.7 | +6201.5 "
    "| 24.3 / 0.0 | +6177.2 | (none: the first copy) |",
    # The drop between them moved nothing: the load is the copy before.
    "| dma-states.fhr | states | 3 | move ct from cuda:0 to pinned | cold-value, 8.7 | +5671.6 "
    "| 15.7 / 0.0 | +5655.9 | ensure load pageable-device 64 MiB, 67189 us |",
    "| dma-states.fhr | states | 4 | move ct from pinned to cuda:0 | follow-on, 0.0 | +5421.6 "
    "| 8.5 / 0.0 | +5413.1 | move device-pinned 10 MiB, 5879 us |",
]
SUMMARY_HEADER = ["", "| state | steps | error, us: median (range) | within 5 us |", "|---|---|---|---|"]


def run_on(tmp_path, document, capsys, name="changed.run.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    status = load_script().main([str(path)])
    return status, capsys.readouterr().out.splitlines()


def test_every_small_dma_of_the_recorded_run(capsys):
    assert load_script().main([str(RECORDED)]) == 0
    assert capsys.readouterr().out.splitlines() == HEADER + ROWS + SUMMARY_HEADER + [
        "| after-host-work | 1 | +6201.5 (+6201.5 to +6201.5) | 0 |",
        "| cold-value | 1 | +5671.6 (+5671.6 to +5671.6) | 0 |",
        "| follow-on | 1 | +5421.6 (+5421.6 to +5421.6) | 0 |",
    ]


def test_the_summary_counts_the_steps_within_the_bound(tmp_path, capsys):
    # Each step measured 3 us over its prediction, and the follow-on 6 us.
    document = json.loads(RECORDED.read_text())
    for k, over in ((0, 3.0), (3, 3.0), (4, 6.0)):
        step = document["runs"][0]["steps"][k]
        step["measured"]["duration_us"] = step["predicted"]["duration_us"] + over
    status, out = run_on(tmp_path, document, capsys)
    assert status == 0
    assert out[-3:] == [
        "| after-host-work | 1 | +3.0 (+3.0 to +3.0) | 1 |",
        "| cold-value | 1 | +3.0 (+3.0 to +3.0) | 1 |",
        "| follow-on | 1 | +6.0 (+6.0 to +6.0) | 0 |",
    ]


def test_documents_of_one_unit_are_pooled(tmp_path, capsys):
    # Two documents of the same unit against the same prediction: the
    # step's error and its time before the copy are medians over both.
    document = json.loads(RECORDED.read_text())
    slower = copy.deepcopy(document)
    measured = slower["runs"][0]["steps"][4]["measured"]
    measured["duration_us"] += 100.0
    measured["transfer_us"] += 100.0
    measured["before_copy_us"] += 10.0
    first, second = tmp_path / "a.run.json", tmp_path / "b.run.json"
    first.write_text(json.dumps(document))
    second.write_text(json.dumps(slower))
    assert load_script().main([str(first), str(second)]) == 0
    rows = capsys.readouterr().out.splitlines()[2:5]
    assert rows[:2] == ROWS[:2]
    assert rows[2] == ("| dma-states.fhr | states | 4 | move ct from pinned to cuda:0 | follow-on, 0.0 | +5471.6 "
                       "| 13.5 / 0.0 | +5458.1 | move device-pinned 10 MiB, 5879 us |")


def test_an_older_document_shows_the_state_it_was_charged_for(tmp_path, capsys):
    # Written before `dma_state` and `follow_on_us`: the state of the extra
    # charged; a follow-on without its figure reads as none.
    document = json.loads(RECORDED.read_text())
    for step in document["runs"][0]["steps"]:
        step["predicted"].pop("dma_state", None)
        step["predicted"].pop("follow_on_us", None)
    status, out = run_on(tmp_path, document, capsys)
    assert status == 0
    assert [row.split(" | ")[4] for row in out[2:5]] == ["after-host-work, 26.7", "cold-value, 8.7", "none, 0.0"]
    # With the figure charged, the follow-on again.
    document["runs"][0]["steps"][4]["predicted"]["follow_on_us"] = 7.5
    status, out = run_on(tmp_path, document, capsys)
    assert out[4].split(" | ")[4] == "follow-on, 7.5"


def test_steps_without_a_prediction_or_a_measurement_are_left_out(tmp_path, capsys):
    # A refused step has only its result; a run that stopped measured
    # nothing after it; a step may have no time before its copy.
    document = json.loads(RECORDED.read_text())
    steps = document["runs"][0]["steps"]
    steps[0]["predicted"] = {"result": "refused (budget)"}
    steps[3]["measured"]["duration_us"] = None
    steps[4]["measured"]["before_copy_us"] = None
    steps[4]["predicted"]["before_copy_us"] = None
    status, out = run_on(tmp_path, document, capsys)
    assert status == 0
    # (Step 3, unmeasured, is still the copy before step 4, its time unknown.)
    assert out[2:3] == ["| dma-states.fhr | states | 4 | move ct from pinned to cuda:0 | follow-on, 0.0 | +5421.6 "
                        "| - | - | move device-pinned 10 MiB |"]


def test_a_bad_document_does_not_hide_the_others(tmp_path, capsys):
    empty = tmp_path / "failed.run.json"
    empty.write_text("")
    assert load_script().main([str(empty), str(RECORDED)]) == 2
    captured = capsys.readouterr()
    assert f"{empty}: not a JSON document" in captured.err
    assert captured.out.splitlines()[:5] == HEADER + ROWS


def test_a_staged_copy_is_tabled_apart(tmp_path, capsys):
    # The ciphertext's first move in, made a staged copy from pageable
    # memory that met the state after host work (a profile with
    # staged_after_host_work_us), 2 us over its prediction.
    document = json.loads(RECORDED.read_text())
    step = document["runs"][0]["steps"][0]
    step["link"], step["action"] = "pageable-device", "ensure ct from pageable to cuda:0"
    step["predicted"]["after_host_work_us"] = 80.0
    step["measured"]["duration_us"] = step["predicted"]["duration_us"] + 2.0
    status, out = run_on(tmp_path, document, capsys)
    assert status == 0
    assert out[2].startswith("| dma-states.fhr | states | 0 | ensure ct from pageable to cuda:0 | "
                             "after-host-work (staged), 80.0 | +2.0 |")
    assert out[-3:] == [
        "| after-host-work (staged) | 1 | +2.0 (+2.0 to +2.0) | 1 |",
        "| cold-value | 1 | +5671.6 (+5671.6 to +5671.6) | 0 |",
        "| follow-on | 1 | +5421.6 (+5421.6 to +5421.6) | 0 |",
    ]

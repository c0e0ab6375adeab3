"""bench/dma_states.py on a recorded fhr-run/1 document (issue #14).

tests/bench/inputs/dma-states.run.json is `fhr-plan run --backend sim
--format json tests/bench/inputs/dma-states.fhr`, recorded once: a 10 MiB
ciphertext moved into cuda:0 first (the extra after host work), out of it
after a key's load and a drop (a cold value), back in after its own move
(no extra), and a 20 MiB move the table leaves out (over 16 MiB).
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
    "| file | unit | step | action | extra charged, us | error, us | before the copy, us (measured / predicted) "
    "| error in the copy, us | the last copy before it |",
    "|---|---|---|---|---|---|---|---|---|",
]


def test_every_small_dma_of_the_recorded_run(capsys):
    assert load_script().main([str(RECORDED)]) == 0
    assert capsys.readouterr().out.splitlines() == HEADER + [
        "| dma-states.fhr | states | 0 | move ct from pinned to cuda:0 | after host work 26.7 | +6191.0 "
        "| 37.3 / 0.0 | +6153.6 | (none: the first copy) |",
        # The drop between them moved nothing: the load is the copy before.
        "| dma-states.fhr | states | 3 | move ct from cuda:0 to pinned | cold value 8.7 | +6047.9 "
        "| 26.7 / 0.0 | +6021.2 | ensure load pageable-device 64 MiB, 64888 us |",
        "| dma-states.fhr | states | 4 | move ct from pinned to cuda:0 | none | +5447.3 "
        "| 23.4 / 0.0 | +5423.9 | move device-pinned 10 MiB, 6255 us |",
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
    rows = capsys.readouterr().out.splitlines()[2:]
    assert len(rows) == 3
    assert rows[2] == ("| dma-states.fhr | states | 4 | move ct from pinned to cuda:0 | none | +5497.3 "
                       "| 28.4 / 0.0 | +5468.9 | move device-pinned 10 MiB, 6255 us |")


def test_a_bad_document_does_not_hide_the_others(tmp_path, capsys):
    empty = tmp_path / "failed.run.json"
    empty.write_text("")
    assert load_script().main([str(empty), str(RECORDED)]) == 2
    captured = capsys.readouterr()
    assert f"{empty}: not a JSON document" in captured.err
    assert len(captured.out.splitlines()) == 5


def test_the_follow_on_extra(tmp_path, capsys):
    # A profile with the figure charges step 4, right after step 3's cold
    # move (the recorded run predates the key: absent reads as none).
    document = json.loads(RECORDED.read_text())
    document["runs"][0]["steps"][4]["predicted"]["follow_on_us"] = 7.5
    path = tmp_path / "follow-on.run.json"
    path.write_text(json.dumps(document))
    assert load_script().main([str(path)]) == 0
    assert "| states | 4 | move ct from pinned to cuda:0 | follow-on 7.5 | +5447.3 " in capsys.readouterr().out

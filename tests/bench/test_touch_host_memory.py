"""bench/touch_host_memory.py, which bench/gpu_prediction.sh runs before
calibrating (issue #14): every page of the memory it is given is written,
the rounds and their rates are printed, and the memory is freed again."""
import importlib.util
import mmap
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("touch_host_memory", ROOT / "bench/touch_host_memory.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the worker processes find write_once by its module's name
    spec.loader.exec_module(module)
    return module


def test_one_write_reaches_every_whole_page():
    script = load_script()
    page = mmap.PAGESIZE
    assert script.write_once(5 * page + 123) == 5 * page  # a partial page is left out
    assert script.write_once(page) == page


def test_each_round_is_reported_with_what_it_wrote(capsys):
    script = load_script()
    assert script.main(["--gib", "0.25", "--rounds", "2", "--workers", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for number, line in enumerate(lines, start=1):
        assert re.fullmatch(
            rf"round {number}: 0\.2 GiB written by 2 processes in \d+\.\d\d s \(\d+\.\d GB/s\)", line), line


def test_rounds_and_workers_below_one_count_as_one(capsys):
    script = load_script()
    assert script.main(["--gib", "0.0625", "--rounds", "0", "--workers", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("round 1: 0.1 GiB written by 1 processes in ")


def test_the_default_size_is_85_percent_of_the_available_memory(capsys, monkeypatch):
    script = load_script()
    monkeypatch.setattr(script, "available_bytes", lambda: int(0.25 * script.GIB / 0.85) + 4096)
    assert script.main(["--rounds", "1", "--workers", "1"]) == 0
    assert capsys.readouterr().out.startswith("round 1: 0.2 GiB written by 1 processes in ")

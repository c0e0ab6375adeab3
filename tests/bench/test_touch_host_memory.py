"""bench/touch_host_memory.py, which bench/gpu_prediction.sh runs before
calibrating (issue #14): every page of the memory it is given is written,
the rounds and their rates are printed, and the memory is freed again."""
import importlib.util
import mmap
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("touch_host_memory", ROOT / "bench/touch_host_memory.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the worker processes find write_once by its module's name
    spec.loader.exec_module(module)
    return module


class FakeBlock:
    """A mapping of `nbytes` zero bytes that records what is written to it."""

    made = []

    def __init__(self, fileno, nbytes, flags=0):
        assert fileno == -1 and flags & mmap.MAP_PRIVATE and flags & mmap.MAP_ANONYMOUS
        self.data = bytearray(nbytes)
        self.closed = False
        FakeBlock.made.append(self)

    def __setitem__(self, key, value):
        self.data[key] = value

    def close(self):
        self.closed = True


def test_one_write_reaches_every_whole_page(monkeypatch):
    script = load_script()
    page = mmap.PAGESIZE
    FakeBlock.made.clear()
    monkeypatch.setattr(script.mmap, "mmap", FakeBlock)
    assert script.write_once(5 * page + 123) == 5 * page  # a partial page is left out
    (block,) = FakeBlock.made
    assert len(block.data) == 5 * page and block.closed
    assert [block.data[offset] for offset in range(0, 5 * page, page)] == [1] * 5
    assert block.data.count(0) == 5 * page - 5  # one byte a page, no more


def test_each_round_is_reported_with_what_it_wrote(capsys):
    script = load_script()
    assert script.main(["--gib", "0.25", "--rounds", "2", "--workers", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for number, line in enumerate(lines, start=1):
        assert re.fullmatch(
            rf"round {number}: 0\.2 GiB written by 2 processes in \d+\.\d\d s \(\d+\.\d GB/s\)", line), line


@pytest.mark.parametrize("arguments, message", [
    (["--gib", "0"], "argument --gib: must be above 0, not 0"),
    (["--gib", "-1"], "argument --gib: must be above 0, not -1"),
    (["--rounds", "0"], "argument --rounds: must be above 0, not 0"),
    (["--workers", "0"], "argument --workers: must be above 0, not 0"),
    (["--gib", "0.000001", "--workers", "2"], "1073 bytes over 2 workers is less than a page each"),
])
def test_bad_arguments_are_refused_with_the_reason(capsys, arguments, message):
    script = load_script()
    with pytest.raises(SystemExit) as exit_status:
        script.main(arguments)
    assert exit_status.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("error: " + message)


def test_the_default_size_is_85_percent_of_the_available_memory(capsys, monkeypatch):
    script = load_script()
    monkeypatch.setattr(script, "available_bytes", lambda: int(0.25 * script.GIB / 0.85) + 4096)
    assert script.main(["--rounds", "1", "--workers", "1"]) == 0
    assert capsys.readouterr().out.startswith("round 1: 0.2 GiB written by 1 processes in ")

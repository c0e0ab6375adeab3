"""Plans that write themselves: ``fhr.solve`` plans a workload (the steps
of a computation, what each needs where, and the budgets) and returns the
program ``fhr-plan solve`` prints, ready for :func:`fhr.load`'s
``PlanFile`` and ``program_steps`` (docs/python.md, "Solving a workload").

The extension ``fhr._compiler`` solves in-process (the planner, the
compiler that checks the printed program, and LLVM are linked there, and
loaded only here). Where that is not built (a runtime-only build), the
command ``fhr-plan solve`` from ``$FHR_PLAN`` or the ``PATH`` does it, with
the same report.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fhr._planfile import PlanFile, _compile, _compiler_module, _fhr_plan, _PlanModule
from fhr.errors import FhrError, WorkloadError

_POLICIES = ("planner", "lru")


@dataclass(frozen=True)
class Solution:
    """What ``fhr.solve`` found.

    ``feasible``: a program meets every step within the budgets.
    ``program``: that program as ``.fhr`` text (``None`` otherwise).
    ``report``: ``fhr-plan solve --format json``'s document (schema
    ``fhr-solve-report/1``): bytes moved per link, predicted time, peaks,
    the lower bound; for an infeasible workload the first step that cannot
    fit, where, and by how many bytes (``None`` where the reference
    controller gave up). ``failure``: why there is no program.
    """

    feasible: bool
    program: str | None
    report: dict[str, Any] | None
    failure: str | None = None

    @property
    def bytes_moved(self) -> int | None:
        return self.report["result"]["bytes_moved"] if self.program is not None and self.report else None

    @property
    def predicted_seconds(self) -> float | None:
        """The planner's clock: compute plus the stalls the copies leave."""
        if self.program is None or not self.report:
            return None
        return float(self.report["result"]["time"]["total_seconds"])

    @property
    def lower_bound_bytes(self) -> int | None:
        bound = self.report.get("lower_bound") if self.report else None
        return bound["bytes"] if bound else None

    def write(self, path: str | os.PathLike[str]) -> None:
        """Writes the program (``fhr-plan solve -o``'s file)."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self._require_program())

    def load(self) -> PlanFile:
        """The program compiled, as :func:`fhr.load` gives a plan file."""
        name = "<solved>"
        return PlanFile(name, _PlanModule.from_bytes(_compile(name, self._require_program())))

    def _require_program(self) -> str:
        if self.program is None:
            raise FhrError(f"no program to use: {self.failure}")
        return self.program


def solve(
    workload: Mapping[str, Any] | str | os.PathLike[str],
    *,
    policy: str = "planner",
    prefetch: bool = True,
    exact: bool = False,
    time_limit: float = 60.0,
    compare: bool = False,
    links: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> Solution:
    """Plans ``workload``: an ``fhr-workload/1`` mapping (as JSON would
    give it) or JSON text (a string starting with ``{``), or the path of
    such a ``.json`` file or of a ``.fhr`` file of steps. ``policy``: ``"planner"`` (look-ahead, prefetch) or ``"lru"``
    (the reference controller, step by step). ``links``: a link profile
    (``fhr-links/2``, a mapping or a path) for the time figures; the H200
    profile shipped with fhr by default.

    Raises :class:`WorkloadError` (a ``ValueError``) for a workload that
    does not parse or breaks its rules, with the parser's or compiler's
    messages in ``diagnostics``. An infeasible workload is a ``Solution``
    whose ``feasible`` is false.
    """
    if policy not in _POLICIES:
        raise ValueError(f"policy must be one of {', '.join(_POLICIES)}, not {policy!r}")
    if not isinstance(prefetch, bool) or not isinstance(exact, bool) or not isinstance(compare, bool):
        raise TypeError("prefetch, exact and compare must be bool")
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    text, file, path = _workload_text(workload)
    links_text = _links_text(links)
    compiler = _compiler_module()
    if compiler is None:
        return _solve_with_tool(text, file, path, policy, prefetch, exact, float(time_limit), compare, links_text)
    # A file name that is not UTF-8 is shown with its bad bytes replaced, as
    # the command's report does.
    shown = os.fsencode(file).decode("utf-8", errors="replace")
    outcome, program, report, message = compiler.solve(
        text, shown, policy, prefetch, exact, float(time_limit), compare, links_text
    )
    return _solution(outcome, program, json.loads(report) if report else None, message, file)


def _workload_text(workload: Mapping[str, Any] | str | os.PathLike[str]) -> tuple[str, str, str | None]:
    """(text, the name diagnostics give it, the file it was read from)."""
    if isinstance(workload, Mapping):
        try:
            return json.dumps(workload), "<workload>", None
        except (TypeError, ValueError) as error:
            raise WorkloadError(f"the workload is not JSON: {error}") from error
    if isinstance(workload, str) and workload.lstrip().startswith("{"):
        return workload, "<workload>", None  # JSON text, not a path
    if not isinstance(workload, (str, os.PathLike)):
        raise TypeError(f"workload must be a mapping, JSON text or a path, not {type(workload).__name__}")
    path = os.fspath(workload)
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(), path, path
    except (OSError, UnicodeDecodeError) as error:
        raise WorkloadError(f"cannot read {path}: {error}", path=path) from error


def _links_text(links: Mapping[str, Any] | str | os.PathLike[str] | None) -> str | None:
    if links is None:
        return None
    if isinstance(links, Mapping):
        return json.dumps(links)
    if not isinstance(links, (str, os.PathLike)):
        raise TypeError(f"links must be a mapping, a path or None, not {type(links).__name__}")
    try:
        with open(links, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read the link profile {os.fspath(links)}: {error}") from error


def _solution(
    outcome: str, program: str | None, report: dict[str, Any] | None, message: str, file: str
) -> Solution:
    if outcome == "solved":
        return Solution(True, program, report)
    if outcome in ("infeasible", "gave-up"):
        return Solution(False, None, report, message)
    if outcome == "bad-workload":
        raise WorkloadError(f"{file} is not a workload it can solve", path=file, diagnostics=message.rstrip())
    raise FhrError(f"internal error solving {file}: {message}")


def _solve_with_tool(
    text: str,
    file: str,
    path: str | None,
    policy: str,
    prefetch: bool,
    exact: bool,
    time_limit: float,
    compare: bool,
    links: str | None,
) -> Solution:
    """``fhr-plan solve`` does it: a workload read from a file is given by
    its path (the command names a ``.fhr`` workload after it), one given as
    JSON by a copy."""
    tool = _fhr_plan()
    if not tool:
        raise FhrError(
            "cannot solve: this build has no fhr._compiler and no fhr-plan was found "
            "(set FHR_PLAN or put fhr-plan on the PATH)"
        )
    with tempfile.TemporaryDirectory() as folder:
        source = path
        if source is None:
            source = os.path.join(folder, "workload.json")
            with open(source, "w", encoding="utf-8") as out:
                out.write(text)
        program_path = os.path.join(folder, "program.fhr")
        command = [tool, "solve", source, "-o", program_path, "--format", "json", "--policy", policy]
        command += ["--time-limit", repr(time_limit)]
        flags = (("--no-prefetch", not prefetch), ("--exact", exact), ("--compare", compare))
        command += [flag for flag, on in flags if on]
        links_path = os.path.join(folder, "links.json")
        if links is not None:
            with open(links_path, "w", encoding="utf-8") as out:
                out.write(links)
            command += ["--links", links_path]
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace")
        except OSError as error:
            raise FhrError(f"cannot solve: cannot run {tool}: {error}") from error
        if done.returncode == 0:
            with open(program_path, encoding="utf-8", errors="replace") as solved:
                return Solution(True, solved.read(), json.loads(done.stdout))
        message = done.stderr.strip()
        if done.returncode < 0:
            raise FhrError(f"internal error solving {file}: {tool} stopped by signal {-done.returncode}: {message}")
        if links is not None and message.startswith(f"fhr-plan: error: {links_path}: "):
            raise ValueError("the link profile: " + message.split(f"{links_path}: ", 1)[1])
        message = message.replace(source, file)
        if done.returncode == 1:
            # "fhr-plan solve: FILE: WHY" (SolvedWorkload::failure_text, as in-process)
            report = json.loads(done.stdout) if done.stdout.strip() else None
            return Solution(False, None, report, message.split(f"fhr-plan solve: {file}: ", 1)[-1])
        if "internal error" in message or "does not verify" in message:
            raise FhrError(f"internal error solving {file}: {message}")
        # JSON: "fhr-plan: error: FILE: WHY"; .fhr: the compiler's diagnostics.
        message = message.split(f"fhr-plan: error: {file}: ", 1)[-1]
        raise WorkloadError(f"{file} is not a workload it can solve", path=file, diagnostics=message)

"""Plans from text: ``fhr.load("plan.fhr")`` or a compiled ``.fhrb``
(docs/python.md, "Plans from text").

A ``.fhr`` file is compiled by the extension ``fhr._compiler`` (the
compiler and LLVM, loaded only here), or, where that is not built (a
runtime-only build), by ``fhr-plan compile`` from ``$FHR_PLAN`` or the
``PATH``. A ``.fhrb`` module goes straight to the runtime's loader, which
verifies it. Binding the file's declared values to a manager's handles
gives its plans as ``ResidencyPlan`` objects, and runs its plans and
programs on that manager.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fhr._fhr import ResidencyHandle, ResidencyLocation, _PlanModule
from fhr._model import Recoverability, ReplicaMode
from fhr.errors import FhrError, PlanFileError

if TYPE_CHECKING:
    from fhr._manager import ResidencyManager
    from fhr._plan import ResidencyPlan
    from fhr._records import ResidencyPlanExplanation, ResidencyTransitionReport
    from fhr._scope import ResidencyScope

_MAGIC = b"FHRB"


@dataclass(frozen=True)
class DeclaredValue:
    """A value the file declares (each family member on its own)."""

    value_id: int
    name: str
    index: int | None
    logical_nbytes: int
    storage_nbytes: int
    replica_mode: ReplicaMode
    recoverability: Recoverability
    location: ResidencyLocation  # where it is adopted, or where its source loads

    @property
    def display_name(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"


@dataclass(frozen=True)
class PlanStep:
    """One executed step of a plan or program (the runtime's ExecutedStep)."""

    kind: str
    index: int
    phase: str
    line: int
    failed: bool
    raised: str | None
    cause: str | None
    message: str
    transition: ResidencyTransitionReport | None
    value_id: int | None


@dataclass(frozen=True)
class PlanRun:
    """A run of setup, a plan or a program: it stops at its first failing step."""

    name: str
    completed: bool
    steps: tuple[PlanStep, ...]

    @property
    def failure(self) -> PlanStep | None:
        return None if self.completed or not self.steps else self.steps[-1]


def _run(raw: tuple[Any, ...]) -> PlanRun:
    name, completed, steps = raw
    return PlanRun(name, completed, tuple(PlanStep(*s) for s in steps))


def _compiler_module() -> Any:
    """The extension ``fhr._compiler``, or ``None`` in a runtime-only build
    (it is not there). An extension that is there but does not load (a
    library it links is missing) is an error, not a reason to fall back."""
    try:
        return importlib.import_module("fhr._compiler")
    except ModuleNotFoundError as error:
        if error.name != "fhr._compiler":
            raise FhrError(f"fhr._compiler does not load: {error}") from error
        return None
    except ImportError as error:
        raise FhrError(f"fhr._compiler does not load: {error}") from error


def _fhr_plan() -> str | None:
    """The command a runtime-only build compiles and solves with:
    ``$FHR_PLAN``, or ``fhr-plan`` on the ``PATH``."""
    return os.environ.get("FHR_PLAN") or shutil.which("fhr-plan")


def _compile(path: str, text: str) -> bytes:
    """``text`` (the contents of ``path``, or a program made here whose
    ``path`` names it in diagnostics) compiled to a module."""
    compiler = _compiler_module()
    if compiler is None:
        return _compile_with_tool(path, text)
    module, diagnostics = compiler.compile(text, path)
    if module is None:
        raise PlanFileError(f"{path} does not compile", path=path, diagnostics=diagnostics)
    return bytes(module)


def _compile_with_tool(path: str, text: str) -> bytes:
    tool = _fhr_plan()
    if not tool:
        raise PlanFileError(
            f"cannot compile {path}: this build has no fhr._compiler and no fhr-plan was found "
            "(set FHR_PLAN or put fhr-plan on the PATH, or load a compiled .fhrb)",
            path=path,
        )
    with tempfile.TemporaryDirectory() as folder:
        output = os.path.join(folder, "module.fhrb")
        source = path
        if not os.path.isfile(path):  # text made here: the tool reads a copy
            source = os.path.join(folder, "program.fhr")
            with open(source, "w", encoding="utf-8") as file:
                file.write(text)
        try:
            done = subprocess.run([tool, "compile", source, "-o", output], capture_output=True, text=True)
        except OSError as error:
            raise PlanFileError(f"cannot compile {path}: cannot run {tool}: {error}", path=path) from error
        if done.returncode != 0:
            diagnostics = done.stderr.strip().replace(source, path)
            raise PlanFileError(f"{path} does not compile", path=path, diagnostics=diagnostics)
        with open(output, "rb") as file:
            return file.read()


def load(path: str | os.PathLike[str]) -> PlanFile:
    """Reads a ``.fhr`` plan file (compiled here) or a ``.fhrb`` module
    (recognised by its magic, verified by the runtime's loader)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as file:
            data = file.read()
    except OSError as error:
        raise PlanFileError(f"cannot read {name}: {error.strerror}", path=name) from error
    if not data.startswith(_MAGIC):
        data = _compile(name, data.decode("utf-8", errors="replace"))
    try:
        module = _PlanModule.from_bytes(data)
    except PlanFileError as error:
        raise PlanFileError(f"{name}: {error}", path=name) from error
    return PlanFile(name, module)


class PlanFile:
    """A loaded plan file: its declarations, plans and programs."""

    def __init__(self, path: str, module: Any) -> None:
        self.path = path
        self._module = module
        self.values = tuple(
            DeclaredValue(
                value_id,
                name,
                index,
                logical,
                storage,
                ReplicaMode.REPLICABLE if replicable else ReplicaMode.EXCLUSIVE,
                Recoverability.RECONSTRUCTIBLE if reconstructible else Recoverability.MUST_PRESERVE,
                location,
            )
            for value_id, name, index, logical, storage, replicable, reconstructible, location in module.values
        )
        self.plans: tuple[str, ...] = module.plans
        self.programs: tuple[str, ...] = module.programs
        self.budgets: dict[ResidencyLocation, int | None] = dict(module.budgets)
        self.device_count: int | None = module.device_count

    def manager(self, **options: Any) -> ResidencyManager:
        """A manager with the file's budgets (options as ResidencyManager's)."""
        from fhr._manager import ResidencyManager

        return ResidencyManager({k: v for k, v in self.budgets.items() if v is not None}, **options)

    def bind(
        self,
        manager: ResidencyManager,
        handles: Mapping[str, ResidencyHandle] | None = None,
        *,
        synthetic: bool = False,
    ) -> BoundPlanFile:
        """Binds each declared value (by its name, ``rk[3]`` for a family
        member) to one of ``manager``'s handles, then runs the file's setup
        statements on the manager. A handle's value must be what the
        declaration promises: the same replica mode and recoverability and
        at most the declared charge (the file's predictions then hold).
        With ``synthetic``, values without a handle are adopted (or get a
        source) as synthetic bytes of the declared size, as ``fhr-plan run``
        does."""
        given = dict(handles or {})
        declared = {v.display_name: v for v in self.values}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise ValueError(f"{self.path} declares no value named {', '.join(unknown)}")
        missing = [name for name in declared if name not in given]
        if missing and not synthetic:
            raise ValueError(f"{self.path}: no handle is bound to {', '.join(missing)}")
        specs = {v.handle: v.spec for v in manager.snapshot().values if not v.discarded}
        for name, handle in given.items():
            if not isinstance(handle, ResidencyHandle):
                raise TypeError(f"the handle bound to {name} must be a ResidencyHandle")
            spec = specs.get(handle)
            if spec is None:
                raise ValueError(f"the handle bound to {name} is not a live value of this manager")
            want = declared[name]
            if (spec.replica_mode, spec.recoverability) != (want.replica_mode, want.recoverability):
                raise ValueError(
                    f"{name} is declared {want.replica_mode.value} and {want.recoverability.value}, its value is "
                    f"{spec.replica_mode.value} and {spec.recoverability.value}"
                )
            if spec.storage_nbytes > want.storage_nbytes:
                raise ValueError(
                    f"{name} is declared with a charge of {want.storage_nbytes} bytes, its value is charged "
                    f"{spec.storage_nbytes}: the file's predictions would not hold"
                )
        by_id = {declared[name].value_id: handle for name, handle in given.items()}
        run, setup = self._module.bind(manager, by_id, synthetic)
        return BoundPlanFile(self, manager, run, _run(setup))


class BoundPlanFile:
    """A plan file bound to a manager: its plans as ``ResidencyPlan`` objects
    over the manager's handles, and its plans and programs run there."""

    def __init__(self, file: PlanFile, manager: ResidencyManager, run: Any, setup: PlanRun) -> None:
        self.file = file
        self.manager = manager
        self._run = run
        self.setup = setup

    def handle(self, name: str) -> ResidencyHandle:
        """The handle bound to a declared value (``rk[3]`` for a family member)."""
        for value in self.file.values:
            if value.display_name == name:
                return self._run.handle(value.value_id)
        raise KeyError(name)

    def plan(self, name: str) -> ResidencyPlan:
        if name not in self.file.plans:
            raise KeyError(name)
        return self._run.plan(name)

    def explain(self, name: str, *, expected_state_version: int | None = None) -> ResidencyPlanExplanation:
        return self.manager.explain(self.plan(name), expected_state_version=expected_state_version)

    def scope(self, name: str, **options: Any) -> ResidencyScope:
        return self.manager.scope(self.plan(name), **options)

    def run_plan(self, name: str) -> PlanRun:
        """Runs a plan as a scope with an empty body; failures are results."""
        if name not in self.file.plans:
            raise KeyError(name)
        return _run(self._run.run_plan(name))

    def run_program(self, name: str) -> PlanRun:
        if name not in self.file.programs:
            raise KeyError(name)
        return _run(self._run.run_program(name))

    def program_steps(self, name: str, *, background: bool = False) -> ProgramSteps:
        """Program ``name`` a statement at a time (see :class:`ProgramSteps`)."""
        if name not in self.file.programs:
            raise KeyError(name)
        return ProgramSteps(self, name, background=background)


class ProgramSteps:
    """A program run one ``run`` or ``scope`` statement at a time by the
    runtime's interpreter, for a caller doing its own work while each is
    current: ``next()`` ends the current statement (its body, then its
    exit), runs the statements before the next one, enters that one and
    runs its body, and returns the statement's plan name. With
    ``background``, the body runs on a thread of its own (the manager's
    copies are synchronous, §17: prefetches then do not hold the caller);
    ``wait()`` waits for it. The iteration stops at the program's end or at
    its first failing step; ``close()`` ends it and returns the whole run
    (``result``), whose ``failure`` is that step."""

    def __init__(self, bound: BoundPlanFile, name: str, *, background: bool = False) -> None:
        self._bound = bound
        self._background = bool(background)
        self.name = name
        self.result: PlanRun | None = None
        self.current: str | None = None
        self._abandoned = False
        bound._run.begin_program(name)

    def __iter__(self) -> ProgramSteps:
        return self

    def __next__(self) -> str:
        if self.result is not None or self._abandoned:
            raise StopIteration
        plan = self._bound._run.next_statement(self._background)
        if plan is None:
            self.close()
            raise StopIteration
        self.current = plan
        return str(plan)

    def wait(self) -> bool:
        """Waits for the current body (background); False when it failed."""
        return bool(self._bound._run.wait_body())

    def close(self) -> PlanRun:
        """Runs the rest of the program and returns the run; idempotent."""
        if self._abandoned:
            raise RuntimeError(f"the run of program {self.name!r} was abandoned")
        if self.result is None:
            self.current = None
            self.result = _run(self._bound._run.finish_program())
        return self.result

    def __enter__(self) -> ProgramSteps:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # A failure of the caller's own work stops the walk; otherwise it finishes.
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def abandon(self) -> None:
        """Stops where it is: the current statement's scope is left without
        its exit and nothing more of the program runs (``result`` stays None)."""
        if self.result is None and not self._abandoned:
            self._abandoned = True
            self.current = None
            self._bound._run.abandon_program()

    def __del__(self) -> None:
        # An abandoned walk ends here, so that the file's plans and programs
        # can run again.
        if getattr(self, "result", True) is None:
            self.abandon()

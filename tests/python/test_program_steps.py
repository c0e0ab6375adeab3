"""A solved program run a statement at a time (BoundPlanFile.program_steps):
the interpreter's own walk, paused at each `run` or `scope` statement, with
the placement each statement leaves (the bootstrap's solved mode)."""

from __future__ import annotations

import pytest

import fhr
from conftest import CUDA0
from test_plan_files import can_compile

PINNED = fhr.PINNED_HOST
# Three keys, room for two on cuda:0: the shape fhr-plan solve prints.
SOLVED = """
budget cuda:0 64 KiB
devices 1
value a 32 KiB replicable at pinned
value b 32 KiB replicable at pinned
value c 32 KiB replicable at pinned
plan "ks-0/a" { enter { ensure a at cuda:0 } }
plan "ks-1/b" { }
plan "ks-2/c" { reclaim { drop a at cuda:0 } enter { ensure c at cuda:0 } }
plan "ks-3/b" { }
program "keys" {
  scope "ks-0/a" { actions "ks-0/a: prefetch" { ensure b at cuda:0 } }
  run "ks-1/b"
  run "ks-2/c"
  run "ks-3/b"
}
"""


@pytest.fixture
def bound(tmp_path, sim):
    if not can_compile():
        pytest.skip("neither fhr._compiler nor fhr-plan is available to compile .fhr text")
    path = tmp_path / "solved.fhr"
    path.write_text(SOLVED)
    file = fhr.load(path)
    m = file.manager(backend=sim)
    bound = file.bind(m, synthetic=True)
    yield bound
    m.close(force=True)


def on_cuda0(bound):
    names = {bound.handle(n): n for n in ("a", "b", "c")}
    return sorted(names[v.handle] for v in bound.manager.snapshot().values if CUDA0 in [r.location for r in v.materializations])


def empty(bound):
    for name in on_cuda0(bound):
        bound.manager.drop(bound.handle(name), CUDA0)


@pytest.mark.parametrize("background", [False, True])
def test_each_statement_is_current_with_its_body_run(bound, background):
    steps = bound.program_steps("keys", background=background)
    seen = []
    for plan in steps:
        steps.wait()  # the body's prefetch has landed
        seen.append((plan, on_cuda0(bound)))
        # The current statement's key is resident: a lease succeeds.
        key = bound.handle(plan.split("/")[1])
        with bound.manager.hold([key], at=CUDA0):
            pass
    assert seen == [
        ("ks-0/a", ["a", "b"]),  # entered, and its body prefetched b
        ("ks-1/b", ["a", "b"]),
        ("ks-2/c", ["b", "c"]),  # its reclaim dropped a
        ("ks-3/b", ["b", "c"]),
    ]
    run = steps.result
    assert run is not None and run.completed and run.name == "keys"
    kinds = [s.kind for s in run.steps]
    assert kinds.count("enter") == 2 and kinds.count("reclaim") == 1 and kinds.count("execute") == 1
    assert steps.close() is run  # idempotent
    # The same program run whole from the same state is the same walk.
    empty(bound)
    whole = bound.run_program("keys")
    assert whole.completed and [s.kind for s in whole.steps] == kinds


def test_a_failing_statement_ends_the_iteration_with_its_step(bound):
    m = bound.manager
    with m.reserve(CUDA0, 32 * 1024, label="someone else's"):
        steps = bound.program_steps("keys")
        assert next(steps) == "ks-0/a"
        # ks-1 needs the prefetched b; the prefetch found no room.
        with pytest.raises(StopIteration):
            next(steps)
    run = steps.result
    assert run is not None and not run.completed
    # The prefetch list's preflight found no room: a plan error whose cause is the budget.
    failure = run.failure
    assert (failure.kind, failure.raised, failure.cause) == ("preflight", "ResidencyPlanError", "ResidencyBudgetError")
    assert on_cuda0(bound) == ["a"]


def test_abandoned_steps_stop_where_they_are(bound):
    steps = bound.program_steps("keys")
    assert next(steps) == "ks-0/a"
    steps.abandon()  # ks-0's scope is left; ks-1 .. ks-3 never run
    assert on_cuda0(bound) == ["a", "b"] and steps.result is None
    with pytest.raises(StopIteration):
        next(steps)
    with pytest.raises(RuntimeError, match="abandoned"):
        steps.close()
    # The walk is over: the program runs again, whole or step by step.
    assert bound.run_program("keys").completed and on_cuda0(bound) == ["b", "c"]
    empty(bound)
    with pytest.raises(ValueError):  # the caller's failure abandons the walk too
        with bound.program_steps("keys") as again:
            next(again)
            raise ValueError("the caller's own work failed")
    assert again.result is None and on_cuda0(bound) == ["a", "b"]
    empty(bound)
    assert list(bound.program_steps("keys")) == ["ks-0/a", "ks-1/b", "ks-2/c", "ks-3/b"]

"""FHElium's logN 16 bootstrap with its evaluation keys managed by fhr (issue #13, part 5).

FHElium is found through FHR_FHELIUM_PATH (a copy with its native operators
built and installed, see the README beside FHElium's sources); without it, or
without a GPU, the script prints why it skipped and exits 0. Nothing of
FHElium is copied here: the script drives its public engine and bootstrap
and hooks the two methods of its hybrid key switcher that every key switch
goes through, so that each switch takes its key from fhr's manager (and
its two key checks, which the stand-ins' device keys passed when adopted).
The hooks are set on the engine's instances for each bootstrap alone and
taken off after it (FHElium's own methods again).

Modes (``--mode M``: one per process, which prints one JSON object):

- ``plain``: FHElium as it is (its keys on cuda:0, no fhr): the reference.
- ``unconstrained``: every key adopted by fhr in pinned memory and made
  resident on cuda:0 before the bootstrap; each key switch leases its key
  on the current stream (what fhr costs when nothing has to move).
- ``trace``: ``unconstrained``, recording the order of key uses with the
  GPU time between them (CUDA events on the consumer stream), written as an
  ``fhr-workload/1`` JSON (``--trace-out``) for ``fhr-plan solve``.
- ``lru``: a cuda:0 budget (``--budget-gib``, 3 by default) for the keys;
  each key switch is a ``use`` of the §18 controller (``ResidencyController``
  with the reference ``DeterministicTieredLRU``, cuda:0 spilling to pinned
  then pageable memory): a key that is absent evicts the least recently
  used ones (a DROP of their cuda:0 replica: the pinned one stays) and is
  copied in, and the use's lease gives it to the switch.
- ``traffic``: ``unconstrained`` while a thread of its own copies
  256 MiB blocks from pinned memory into a device buffer on a stream of its
  own, ``--traffic-gib`` per bootstrap (12.25 by default: what the solved
  program of the 3 GiB budget moves) spread evenly over the unconstrained
  time (``--traffic-seconds``, 3.7 by default): the copies' load on the
  GPU without a key switch ever waiting for one. Beside ``unconstrained``
  and ``solved`` it separates what the solved program's copies cost the
  kernels from what its key switches wait for. The copies go in whole
  blocks (at least one); a bootstrap that ends first cuts them short (each
  run says how much went, ``traffic_bytes_to_cuda0``); and the copying
  thread is a Python thread, so its GIL hand-offs are in the figure too.
- ``solved``: the same budget, running the program printed by ``fhr-plan
  solve`` (``--plan``, a ``.fhr`` or its compiled ``.fhrb``; or the
  workload trace mode wrote, a ``.json`` that ``fhr.solve`` plans first,
  in-process or through ``$FHR_PLAN``) a statement at
  a time with the runtime's interpreter: at the k-th key switch the
  program's k-th statement is current (its scope entered: reclaim and
  enter actions; then its body, the planner's prefetches, on a thread of
  its own so that the copies do not hold the host), the previous one
  exited.

Each prints: mode, bootstrap seconds, max and mean error, key uses, bytes
the manager moved to cuda:0, fhr's peak on cuda:0, PyTorch's peak
allocated memory and their sum (fhr's pools are not PyTorch's allocator),
and ``host_seconds``: the host's time in the residency policy before the
switches (``policy``: the solved program's statements, split for solved into
``drop_wait``, waiting for a dropped key's last switch, and ``statement``) and in taking their
keys (``borrow``: the lease or the LRU controller's use, and the key object
rebuilt over the manager's storage), time in which it queues no kernel.

``--seed N`` fixes FHElium's generator (``CkksEngine(rng_seed=N,
rng_nonce=N)``: with the seed alone the stream's nonce is still random), so
that every mode of one seed starts from the same keys and input.
``--repeats N`` runs the bootstrap N times in the process, each constrained
run starting with no key at cuda:0 (a new walk of the solved program, the
LRU controller's replicas dropped); ``runs`` lists each, and ``seconds`` is
the median of the runs after the first (the first pays kernel and pool
warm-up), the single run's time for N = 1.

``--modes M1,M2,...`` (instead of ``--mode``; any of plain, unconstrained,
lru and solved, each once) compares modes in one process, where the
machine's drift between processes (±10%) does not separate them: every
listed mode is set up once on the one engine (the same keys and input of
the one seed), each managed mode with a pinned copy of the keys and a
manager of its own, then ``--repeats K`` rounds run one bootstrap of each
mode, round r starting at the r-th mode (mod their number) of the list and
going round it: each mode runs in every position in turn (a cyclic
rotation keeps the cycle, so a mode not first follows the same one).
Each run of ``lru`` and ``solved`` starts with no key at cuda:0, as with
``--repeats``; ``unconstrained`` keeps its keys resident throughout. All
runs draw from the one generator, one after another, so the errors of a
round's modes differ a little (with ``--mode``, the k-th runs of one seed
decrypt to the same errors in every mode). The JSON object has ``order``
(the modes of each round, in the order they ran) and under ``per_mode``
each mode's ``runs`` (with ``round`` and ``position`` in them) and the
figures above, ``seconds`` the median of its runs after the first round;
for every other mode, with ``unconstrained`` listed,
``ratios_to_unconstrained`` (its time over ``unconstrained``'s of the same
round, round by round), ``median_ratio`` (their median after the first
round) and ``ratio_of_medians``. Each run is also written to standard
error as it ends, one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

MODES = ("plain", "unconstrained", "traffic", "trace", "lru", "solved")
CONSTRAINED = ("lru", "solved")  # the keys under the cuda:0 budget, each run starting with none there


def skip(reason: str) -> None:
    print(json.dumps({"skipped": reason}))
    sys.exit(0)


def mode_list(text: str) -> list[str]:
    """``--modes``: a comma list of distinct modes other than trace."""
    modes = [mode.strip() for mode in text.split(",")]
    for mode in modes:
        if mode == "trace":
            raise argparse.ArgumentTypeError("trace records a single bootstrap: use --mode trace")
        if mode not in MODES:
            raise argparse.ArgumentTypeError(f"'{mode}' is not one of plain, unconstrained, lru, solved")
    if len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(f"a mode is listed twice in '{text}'")
    return modes


def parse_arguments() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--mode", choices=MODES)
    which.add_argument(
        "--modes", type=mode_list, help="comma list of modes (not trace) run interleaved in this process, K rounds"
    )
    parser.add_argument("--budget-gib", type=float, default=3.0, help="cuda:0 budget for the keys (lru, solved)")
    parser.add_argument("--traffic-gib", type=float, default=12.25, help="traffic mode: GiB copied per bootstrap")
    parser.add_argument(
        "--traffic-seconds", type=float, default=3.7, help="traffic mode: the time the copies are spread over"
    )
    parser.add_argument("--trace-out", default="bootstrap-trace.json", help="trace mode: the workload written")
    parser.add_argument(
        "--plan", help="solved mode: the program fhr-plan solve printed, or a workload (.json) for fhr.solve to plan"
    )
    parser.add_argument("--seed", type=int, help="FHElium's generator seed (the same keys and input in every mode)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="bootstraps in this process (not with trace); rounds with --modes"
    )
    arguments = parser.parse_args()
    if arguments.repeats < 1 or (arguments.mode == "trace" and arguments.repeats != 1):
        parser.error("--repeats must be at least 1, and 1 in trace mode")
    if arguments.budget_gib <= 0:
        parser.error("--budget-gib must be positive")
    return parser, arguments


def check_plan(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> None:
    """The solved mode's program, loaded once FHElium is there to run it
    (without FHElium the script skips, as for every mode) and before the
    engine and its keys are made."""
    if "solved" not in (arguments.modes or [arguments.mode]):
        return
    if not arguments.plan:
        parser.error("the solved mode needs --plan PROGRAM.fhr or .fhrb (fhr-plan solve's output) or WORKLOAD.json")
    try:
        if arguments.plan.endswith(".json"):
            arguments.plan = solve_workload(arguments.plan)
        SolvedProgram.load(arguments.plan)  # a missing or bad program fails here, before any key is made
    except Exception as error:
        parser.error(f"--plan {arguments.plan}: {error}")


def solve_workload(path: str) -> str:
    """A recorded workload (trace mode's --trace-out) planned by fhr.solve;
    the program is written beside it (NAME-solved.fhr), its figures to
    standard error (standard output has the runs' JSON lines)."""
    import fhr

    solution = fhr.solve(path)
    if not solution.feasible:
        raise ValueError(f"the workload cannot be solved: {solution.failure}")
    program = os.path.splitext(path)[0] + "-solved.fhr"
    solution.write(program)
    print(
        f"fhr.solve: {path}: {solution.bytes_moved} bytes moved (bound {solution.lower_bound_bytes}), "
        f"predicted {solution.predicted_seconds:.4f} s; program {program}",
        file=sys.stderr,
    )
    return program


def import_fhelium() -> tuple[Any, Any]:
    path = os.environ.get("FHR_FHELIUM_PATH")
    if not path:
        skip("FHR_FHELIUM_PATH is not set (a built FHElium 0.10 copy): the bootstrap is skipped")
    sys.path.insert(0, path)
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("no CUDA device")
    try:
        import fhelium
    except ImportError as error:
        skip(f"FHElium does not import from {path}: {error}")
    return torch, fhelium


class Bootstrap:
    """The engine, the bootstrap, its keys and a depleted input ciphertext."""

    def __init__(self, torch: Any, fh: Any, seed: int | None = None) -> None:
        from fhelium.core import EvaluationKeySet
        from fhelium.experimental.bootstrap.presets import cosine_depth_refresh_logn16_v1

        self.torch = torch
        config = fh.CkksConfig.parse(fh.Preset.slots32768_scale50_levels27_int64, base_prime_bits=50)
        self.engine = fh.CkksEngine(config, device="cuda:0", allow_sk_gen=False, galois_generator=5, rng_seed=seed, rng_nonce=seed)
        self.refresh = cosine_depth_refresh_logn16_v1(self.engine)
        self.secret_key = self.engine.create_secret_key()
        public_key = self.engine.create_public_key(self.secret_key)
        self.keys = EvaluationKeySet(
            rotations=self.refresh.create_rotation_keys(self.secret_key),
            relinearization=self.engine.create_relinearization_key(self.secret_key),
            conjugation=self.engine.create_conjugation_key(self.secret_key),
        )
        self.message = torch.linspace(-0.1, 0.1, self.engine.num_slots, dtype=torch.float64)
        self.input = self.deplete(self.engine.encrypt_message(self.message, public_key))

    def deplete(self, ciphertext: Any) -> Any:
        """Multiplies by an encoded 1 and rescales until the ciphertext is at
        the engine's last public level, the bootstrap's input."""
        engine = self.engine
        ones = self.torch.ones(engine.num_slots, dtype=self.torch.float64, device=engine.device)
        while ciphertext.level < engine.final_public_level:
            one = engine.prepare_plaintext_for_multiplication(
                engine.encode(ones, level=ciphertext.level, scale=engine.config.default_scale)
            )
            product = engine.multiply_plaintext(engine.coefficient_domain_to_ntt_domain(ciphertext), one)
            ciphertext = engine.rescale_to_next_level(engine.ntt_domain_to_coefficient_domain(product))
        return ciphertext

    def named_keys(self) -> dict[str, Any]:
        rotations = self.keys.rotations
        named = {f"rk[{i}]": rotations.table[step] for i, step in enumerate(sorted(rotations.table))}
        named["conj"] = self.keys.conjugation
        named["relin"] = self.keys.relinearization
        return named

    def use_keys(self, named: dict[str, Any]) -> None:
        """Puts these key objects (named as ``named_keys`` names them) in the
        bootstrap's key set: FHElium's own, or a mode's stand-ins."""
        keys = self.keys
        for name, key in named.items():
            if name == "conj":
                keys.conjugation = key
            elif name == "relin":
                keys.relinearization = key
            else:
                keys.rotations.table[key.rotation_step] = key

    def run(self) -> dict[str, Any]:
        torch = self.torch
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(self.engine.device)
        started = time.perf_counter()
        refreshed = self.refresh(self.input, evaluation_keys=self.keys)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        decoded = self.engine.decrypt_message(refreshed, self.secret_key, is_real=True)
        error = (decoded.cpu() - self.message).abs()
        return {
            "seconds": round(seconds, 4),
            "max_error": float(error.max()),
            "mean_error": float(error.mean()),
            "output_level": refreshed.level,
            "torch_peak_gib": round(torch.cuda.max_memory_allocated(self.engine.device) / 2**30, 3),
        }


_ABSENT = object()


@contextlib.contextmanager
def patched(replacements: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """Each (object, attribute, value) set on the object's instance for the
    block; then what the instance had before put back (for FHElium's
    methods: the attribute removed, the class's method showing again), also
    when the block fails."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for owner, name, value in replacements:
            before = vars(owner).get(name, _ABSENT)
            setattr(owner, name, value)
            saved.append((owner, name, before))
        yield
    finally:
        for owner, name, before in reversed(saved):
            if before is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, before)


class ManagedKeys:
    """The bootstrap's keys as fhr values: each adopted in pinned memory
    (REPLICABLE: its pinned replica is its home) as a pinned copy of
    FHElium's key (its stand-in), and, for each run, the FHElium key objects
    replaced by those stand-ins and every key switch given the key's cuda:0
    replica through a lease on the current stream.

    Each mode has its own (its own manager and its own pinned copy of the
    keys, 30 of 256 MiB: 7.5 GiB of pinned memory a mode): a manager's
    budgets are fixed when it is made (unconstrained has none, lru and
    solved the cuda:0 budget), adopting takes a value's memory (one tensor
    cannot be adopted by two managers), and a manager of its own keeps each
    mode's figures (fhr's peak, the bytes moved, its trace) and its replicas
    apart from the others'."""

    def __init__(self, boot: Bootstrap, budget_bytes: int | None, originals: dict[str, Any]) -> None:
        import fhr

        self.fhr, self.torch, self.boot = fhr, boot.torch, boot
        self.cuda0 = fhr.cuda_location("cuda:0")
        self.manager = fhr.ResidencyManager(
            None if budget_bytes is None else {self.cuda0: budget_bytes}, trace_capacity=1 << 16
        )
        self.budget_bytes = budget_bytes
        self.handles: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}
        self.stand_ins: dict[str, Any] = {}  # name -> pinned key object (kept: `names` holds their ids)
        self.names: dict[int, str] = {}  # id(stand-in) -> name
        self.uses: list[str] = []
        self.before_use = lambda name: None  # the residency policy: makes the key resident at cuda:0
        self.borrow = self.lease  # how a switch gets the key's cuda:0 replica
        self.events: list[Any] | None = None
        self.released: dict[str, Any] = {}  # name -> event after its last switch's kernels (solved)
        # Host seconds spent in the residency policy before each switch and
        # in taking its key (the lease or the controller's use, and the key
        # object rebuilt over the manager's storage): time the host is not
        # queueing the bootstrap's kernels.
        self.host_seconds = {"policy": 0.0, "borrow": 0.0}
        for name, key in originals.items():
            boot.engine.validate_key_switch_key(key)  # once, on the device, as FHElium checks it
            pinned = key.pin_memory(copy=True)
            self.handles[name] = self.manager.adopt(pinned, at=fhr.PINNED_HOST, replica_mode=fhr.ReplicaMode.REPLICABLE)
            self.sizes[name] = pinned.storage_nbytes
            self.stand_ins[name] = pinned
            self.names[id(pinned)] = name
        self.name_of = {handle: name for name, handle in self.handles.items()}
        self.hooks = self.make_hooks()

    def make_hooks(self) -> list[tuple[Any, str, Any]]:
        """The replacements of FHElium's methods on the engine's instances,
        made while none is installed: they call FHElium's own."""
        engine = self.boot.engine
        switcher = engine._hybrid_key_switcher
        direct, prepared = switcher.apply_key_switch, switcher._switch_prepared_rotation
        validate, assert_engine_key = engine.validate_key_switch_key, engine._assert_engine_key

        def apply_key_switch(component: Any, key: Any, level: int) -> Any:
            with self.resident(key) as device_key:
                return direct(component, device_key, level)

        def switch_prepared_rotation(c0: Any, prepared_digits: Any, key: Any, **options: Any) -> Any:
            with self.resident(key) as device_key:
                return prepared(c0, prepared_digits, device_key, **options)

        def validate_key_switch_key(key: Any) -> None:
            if id(key) not in self.names:  # a stand-in was validated on the device when it was adopted
                validate(key)

        def engine_key_check(key: Any, *args: Any, **options: Any) -> None:
            if id(key) not in self.names:  # the stand-ins' device keys passed this check when adopted
                assert_engine_key(key, *args, **options)

        return [
            (switcher, "apply_key_switch", apply_key_switch),
            (switcher, "_switch_prepared_rotation", switch_prepared_rotation),
            (engine, "validate_key_switch_key", validate_key_switch_key),
            (engine, "_assert_engine_key", engine_key_check),
        ]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """For one run: these stand-ins in the bootstrap's key set and these
        hooks on FHElium's engine; FHElium's methods again when it ends, so
        that the next run, of this mode or another, sets its own."""
        self.boot.use_keys(self.stand_ins)
        with patched(self.hooks):
            yield

    @contextlib.contextmanager
    def resident(self, key: Any) -> Any:
        """The key's cuda:0 replica for one switch, on the current stream
        (leased, or through a controller's use), so that the replica stays
        until the switch's kernels ran."""
        name = self.names.get(id(key))
        if name is None:
            raise RuntimeError(f"a key switch used a key fhr does not manage ({type(key).__name__})")
        self.uses.append(name)
        stream = self.torch.cuda.current_stream()
        if self.events is not None:
            event = self.torch.cuda.Event(enable_timing=True)
            event.record(stream)
            self.events.append(event)
        started = time.perf_counter()
        self.before_use(name)
        borrowed = time.perf_counter()
        self.host_seconds["policy"] += borrowed - started
        with self.borrow(name, stream) as device_key:
            self.host_seconds["borrow"] += time.perf_counter() - borrowed
            yield device_key
        done = self.torch.cuda.Event()
        done.record(stream)
        self.released[name] = done

    @contextlib.contextmanager
    def lease(self, name: str, stream: Any) -> Any:
        """A lease on the consumer stream; its release records an event there."""
        handle = self.handles[name]
        lease = self.manager.acquire([handle], at=self.cuda0, consumer_stream=stream)
        try:
            yield lease.values[handle]
        finally:
            lease.release()

    def ensure_all(self) -> None:
        for handle in self.handles.values():
            self.manager.ensure(handle, self.cuda0)

    def drop_all(self) -> None:
        """Every key's cuda:0 replica dropped (the pinned one stays), once
        the GPU finished with them: a repeat starts as the first run did."""
        self.torch.cuda.synchronize()
        for handle in self.handles.values():
            self.manager.drop(handle, self.cuda0)

    def moved_to_cuda0(self) -> int:
        return sum(t.storage_nbytes for t in self.manager.trace() if t.destination == self.cuda0 and not t.no_op)

    def resident_names(self) -> list[str]:
        return [
            name
            for name, value in zip(self.handles, self.manager.snapshot().values)
            if any(r.location == self.cuda0 for r in value.materializations)
        ]

    def figures(self) -> dict[str, Any]:
        snapshot = self.manager.snapshot()
        cuda = next((loc for loc in snapshot.locations if loc.location == self.cuda0), None)
        return {
            "key_uses": len(self.uses),
            "key_bytes_to_cuda0": self.moved_to_cuda0(),
            "fhr_peak_gib": round((cuda.peak_used_bytes if cuda else 0) / 2**30, 3),
            "budget_gib": None if self.budget_bytes is None else self.budget_bytes / 2**30,
        }


class ControllerLRU:
    """Each key switch a ``use`` of the §18 controller with the reference
    policy, spilling cuda:0 to pinned then pageable memory (the tiers of the
    trace's workload; the keys' pinned replicas make every eviction a DROP)."""

    def __init__(self, keys: ManagedKeys) -> None:
        fhr = keys.fhr
        self.keys = keys
        policy = fhr.DeterministicTieredLRU({keys.cuda0: [fhr.PINNED_HOST, fhr.PAGEABLE_HOST]})
        self.controller = fhr.ResidencyController(keys.manager, policy)
        self.requests = {
            name: fhr.ResidencyRequest(f"ks/{name}", (fhr.ResidencyRequirement(handle, keys.cuda0),))
            for name, handle in keys.handles.items()
        }
        keys.borrow = self.borrow

    @contextlib.contextmanager
    def borrow(self, name: str, stream: Any) -> Any:
        keys, fhr = self.keys, self.keys.fhr
        use = self.controller.use(self.requests[name], consumer_streams={keys.cuda0: stream})
        try:
            use.__enter__()
        except fhr.ResidencyPlanError:
            # Every other key's last switch may still be running (pending
            # leases are no candidates): wait for them once and decide again.
            stream.synchronize()
            use = self.controller.use(self.requests[name], consumer_streams={keys.cuda0: stream})
            use.__enter__()
        try:
            yield use.value(keys.handles[name], at=keys.cuda0)
        finally:
            use.close()


class SolvedProgram:
    """At the k-th key use, the program's k-th statement is current: the
    runtime's interpreter walks the program (BoundPlanFile.program_steps),
    each scope's body (the prefetches) on a thread of its own."""

    def __init__(self, keys: ManagedKeys, path: str) -> None:
        self.keys = keys
        file = self.load(path)
        self.bound = file.bind(keys.manager, keys.handles)
        self.plans = list(file.plans)  # solve prints one plan per step, in program order
        # The keys each step's reclaim drops (looked up once, not at every switch).
        self.drops = [
            [keys.name_of[action.handle] for action in self.bound.plan(plan).reclaim] for plan in self.plans
        ]
        self.steps = self.bound.program_steps(file.programs[0], background=True)
        self.next = 0

    @staticmethod
    def load(path: str) -> Any:
        """The plan file, with the one program fhr-plan solve prints."""
        import fhr

        file = fhr.load(path)
        if len(file.programs) != 1:
            raise ValueError(f"expected the one program fhr-plan solve prints, found {len(file.programs)}")
        return file

    def __call__(self, name: str) -> None:
        if self.next >= len(self.plans):
            raise RuntimeError(f"the program has {len(self.plans)} steps; the bootstrap made more key uses")
        # A reclaim drops a key whose last switch may still be running on the
        # GPU (its lease is pending): wait for that switch alone.
        started = time.perf_counter()
        for dropped in self.drops[self.next]:
            done = self.keys.released.get(dropped)
            if done is not None:
                done.synchronize()
        waited = time.perf_counter()
        plan = next(self.steps, None)
        # The policy's time in two parts: waiting for a dropped key's last
        # switch, and the program's statement (its prefetch's wait included).
        seconds = self.keys.host_seconds
        seconds["drop_wait"] = seconds.get("drop_wait", 0.0) + waited - started
        seconds["statement"] = seconds.get("statement", 0.0) + time.perf_counter() - waited
        if plan is None:
            failure = self.steps.result.failure if self.steps.result else None
            raise RuntimeError(f"the program stopped before key use {self.next}: {failure}")
        if plan != self.plans[self.next] or plan.split("/", 1)[1] != name:
            raise RuntimeError(f"key use {self.next} is {name}, the program's statement {plan}")
        self.next += 1

    def close(self) -> None:
        run = self.steps.close()
        if not run.completed:
            raise RuntimeError(f"the program failed: {run.failure}")
        if self.next != len(self.plans):
            raise RuntimeError(f"the bootstrap made {self.next} key uses; the program has {len(self.plans)} steps")


class Traffic:
    """``traffic`` mode's copies: while entered, a thread copies a pinned
    256 MiB block into a device buffer on a stream of its own, one copy
    every ``seconds / (nbytes / 256 MiB)``, until ``nbytes`` are copied or
    the bootstrap ends (``copied`` says how much went)."""

    BLOCK = 256 * 2**20

    def __init__(self, torch: Any, nbytes: int, seconds: float) -> None:
        import threading

        self.torch, self.copies = torch, max(1, nbytes // self.BLOCK)
        self.period = seconds / self.copies
        self.source = torch.empty(self.BLOCK, dtype=torch.uint8, pin_memory=True)
        self.target = torch.empty(self.BLOCK, dtype=torch.uint8, device="cuda:0")
        self.stream = torch.cuda.Stream(device="cuda:0")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.copy_all, daemon=True)
        self.copied = 0

    def copy_all(self) -> None:
        torch = self.torch
        started = time.perf_counter()
        for k in range(self.copies):
            if self.stop.wait(max(0.0, started + k * self.period - time.perf_counter())):
                return
            with torch.cuda.stream(self.stream):
                self.target.copy_(self.source, non_blocking=True)
            self.stream.synchronize()
            self.copied += self.BLOCK

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join()


class Mode:
    """One mode set up on the process's bootstrap, run a bootstrap at a
    time: ``plain`` with FHElium's own keys, the others each with a
    ManagedKeys of its own."""

    def __init__(self, name: str, boot: Bootstrap, arguments: argparse.Namespace, originals: dict[str, Any]) -> None:
        self.name, self.boot, self.plan = name, boot, arguments.plan
        self.budget = int(arguments.budget_gib * 2**30)
        self.originals = originals if name == "plain" else None
        self.keys = None
        if name != "plain":
            self.keys = ManagedKeys(boot, self.budget if name in CONSTRAINED else None, originals)
        self.count = 0  # runs so far
        self.traffic_bytes = int(arguments.traffic_gib * 2**30)
        self.traffic_seconds = arguments.traffic_seconds

    def prepare(self) -> None:
        """What the mode does once before its first run (FHElium's device
        keys are gone by then, unless plain is one of the modes)."""
        keys = self.keys
        if self.name in ("unconstrained", "traffic", "trace"):
            keys.ensure_all()
            if self.name == "trace":
                keys.events = []
        elif self.name == "lru":
            ControllerLRU(keys)

    def run(self) -> dict[str, Any]:
        """One bootstrap of this mode; the hooks are this mode's for it alone."""
        boot, keys = self.boot, self.keys
        self.count += 1
        if keys is None:
            boot.use_keys(self.originals)
            return boot.run()
        if self.name in CONSTRAINED:
            if self.count > 1:
                keys.drop_all()
            resident = keys.resident_names()
            if resident:
                raise RuntimeError(f"{self.name} run {self.count} starts with keys at cuda:0: {resident}")
        solved = None
        if self.name == "solved":
            solved = SolvedProgram(keys, self.plan)
            keys.before_use = solved
        traffic = Traffic(boot.torch, self.traffic_bytes, self.traffic_seconds) if self.name == "traffic" else None
        keys.manager.clear_trace()  # this run's transfers alone (the trace is a bounded FIFO)
        uses_before = len(keys.uses)
        keys.host_seconds = {"policy": 0.0, "borrow": 0.0}
        try:
            with keys.installed(), traffic or contextlib.nullcontext():
                run = boot.run()
        except BaseException:
            if solved is not None:
                solved.steps.abandon()
            raise
        if solved is not None:
            solved.close()
        if traffic is not None:
            run["traffic_bytes_to_cuda0"] = traffic.copied
        run["key_uses"] = len(keys.uses) - uses_before
        run["key_bytes_to_cuda0"] = keys.moved_to_cuda0()
        run["host_seconds"] = {what: round(seconds, 4) for what, seconds in keys.host_seconds.items()}
        return run

    def summary(self, runs: list[dict[str, Any]]) -> dict[str, Any]:
        """The mode's figures over its runs: ``seconds`` the median of the
        runs after the first (the first pays warm-up), the single run's for
        one; errors and peaks the largest; transfers and host time the last
        run's."""
        result: dict[str, Any] = {}
        if self.keys is not None:
            result.update(self.keys.figures())
            result["key_uses"] = runs[-1]["key_uses"]
            result["key_bytes_to_cuda0"] = runs[-1]["key_bytes_to_cuda0"]
            result["host_seconds"] = runs[-1]["host_seconds"]
        timed = runs[1:] if len(runs) > 1 else runs
        result["seconds"] = round(median([r["seconds"] for r in timed]), 4)
        result["max_error"] = max(r["max_error"] for r in runs)
        result["mean_error"] = max(r["mean_error"] for r in runs)
        result["output_level"] = runs[-1]["output_level"]
        result["torch_peak_gib"] = max(r["torch_peak_gib"] for r in runs)
        if len(runs) > 1:
            result["runs"] = runs
        if self.keys is not None:
            result["total_peak_gib"] = round(result["torch_peak_gib"] + result["fhr_peak_gib"], 3)
        return result


def set_up(boot: Bootstrap, names: list[str], arguments: argparse.Namespace) -> list[Mode]:
    """Every listed mode on the one bootstrap: each managed mode's pinned
    copies of FHElium's keys first (made from its device keys, which then
    go, unless plain keeps them), then what each does once."""
    originals = boot.named_keys()
    modes = [Mode(name, boot, arguments, originals) for name in names]
    if "plain" not in names:
        boot.use_keys(next(mode.keys.stand_ins for mode in modes if mode.keys is not None))
    del originals  # plain's Mode keeps FHElium's keys; nothing else does now
    boot.torch.cuda.synchronize()
    boot.torch.cuda.empty_cache()  # the device keys are gone without plain; their memory goes back
    for mode in modes:
        mode.prepare()
    return modes


def workload(keys: ManagedKeys, budget_bytes: int) -> dict[str, Any]:
    """The key uses as fhr-workload/1 (docs/planner.md): one step per key
    switch needing its key at cuda:0, with the GPU time to the next switch."""
    times = [a.elapsed_time(b) / 1000.0 for a, b in zip(keys.events, keys.events[1:])] + [0.0]
    rotations = sorted(n for n in keys.sizes if n.startswith("rk["))
    sizes = {keys.sizes[n] for n in rotations}
    if len(sizes) != 1:
        raise RuntimeError(f"rotation keys of several sizes: {sorted(sizes)}")
    return {
        "schema": "fhr-workload/1",
        "name": "fhelium-bootstrap-logn16",
        "devices": 1,
        "budgets": [{"at": "cuda:0", "bytes": budget_bytes}],
        "tiers": [{"from": "cuda:0", "to": ["pinned", "pageable"]}],
        "values": [
            {"name": "rk", "count": len(rotations), "bytes": sizes.pop(), "mode": "replicable", "at": "pinned"},
            {"name": "conj", "bytes": keys.sizes["conj"], "mode": "replicable", "at": "pinned"},
            {"name": "relin", "bytes": keys.sizes["relin"], "mode": "replicable", "at": "pinned"},
        ],
        "steps": [
            {"name": f"ks-{i}/{name}", "needs": [{"at": "cuda:0", "values": [name]}], "compute_seconds": t}
            for i, (name, t) in enumerate(zip(keys.uses, times))
        ],
    }


def median(samples: list[float]) -> float:
    ordered = sorted(samples)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def one_mode(boot: Bootstrap, arguments: argparse.Namespace) -> dict[str, Any]:
    """``--mode``: the mode's runs one after another."""
    (mode,) = set_up(boot, [arguments.mode], arguments)
    runs = [mode.run() for _ in range(arguments.repeats)]
    result: dict[str, Any] = {"mode": arguments.mode, "seed": arguments.seed}
    result.update(mode.summary(runs))
    if arguments.mode == "trace":
        boot.torch.cuda.synchronize()
        with open(arguments.trace_out, "w") as out:
            json.dump(workload(mode.keys, mode.budget), out, indent=1)
        result["trace"] = arguments.trace_out
    return result


def interleaved(boot: Bootstrap, arguments: argparse.Namespace) -> dict[str, Any]:
    """``--modes``: K rounds of one run of each mode, round r starting at
    the r-th mode of the list (mod their number)."""
    modes = set_up(boot, arguments.modes, arguments)
    runs: dict[str, list[dict[str, Any]]] = {mode.name: [] for mode in modes}
    order = []
    for round_index in range(arguments.repeats):
        start = round_index % len(modes)
        rotated = modes[start:] + modes[:start]
        order.append([mode.name for mode in rotated])
        for position, mode in enumerate(rotated):
            run = mode.run()
            run["round"], run["position"] = round_index, position
            runs[mode.name].append(run)
            print(json.dumps({"mode": mode.name, **run}), file=sys.stderr, flush=True)
    result: dict[str, Any] = {
        "modes": arguments.modes,
        "seed": arguments.seed,
        "rounds": arguments.repeats,
        "order": order,
        "per_mode": {},
    }
    if any(name in CONSTRAINED for name in arguments.modes):
        result["budget_gib"] = arguments.budget_gib
    if "solved" in arguments.modes:
        result["plan"] = arguments.plan
    per_mode = result["per_mode"]
    for mode in modes:
        per_mode[mode.name] = mode.summary(runs[mode.name])
        per_mode[mode.name]["runs"] = runs[mode.name]
    if "unconstrained" in runs:
        base = runs["unconstrained"]
        for name in arguments.modes:
            if name == "unconstrained":
                continue
            ratios = [round(r["seconds"] / b["seconds"], 4) for r, b in zip(runs[name], base)]
            entry = per_mode[name]
            entry["ratios_to_unconstrained"] = ratios
            entry["median_ratio"] = round(median(ratios[1:] if len(ratios) > 1 else ratios), 4)
            entry["ratio_of_medians"] = round(entry["seconds"] / per_mode["unconstrained"]["seconds"], 4)
    return result


def main() -> None:
    parser, arguments = parse_arguments()
    torch, fh = import_fhelium()
    check_plan(parser, arguments)
    boot = Bootstrap(torch, fh, arguments.seed)
    print(json.dumps(interleaved(boot, arguments) if arguments.modes else one_mode(boot, arguments)))


if __name__ == "__main__":
    main()

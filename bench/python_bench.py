"""fhr's Python package beside FHElium 0.10's manager, in one process (docs/benchmarks.md).

    PYTHONPATH=build/python python3 bench/python_bench.py [--repeats 7]

Rows: no-op ensure; 4 KiB tensor ensure pinned -> cuda:0 (end to end, the
drop that follows not timed); lease acquire + release with a consumer
stream; 256 MiB pinned -> cuda:0 against a raw cudaMemcpyAsync of the same
bytes (torch's non-blocking copy_ + synchronize), with the Python
default pool setting (freed memory back to the driver) and with the
pool keeping everything. FHElium's rows need FHR_FHELIUM_PATH (its package
with the native operators built) and are left out without it; the CUDA
rows need torch and a GPU. Each figure: median of `repeats` runs (min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import fhr


def timed(function, iterations):
    start = time.perf_counter_ns()
    function(iterations)
    return (time.perf_counter_ns() - start) / iterations / 1000.0  # µs per iteration


def row(name, samples, unit="µs"):
    median = statistics.median(samples)
    print(f"| {name} | {median:.3f} {unit} ({min(samples):.3f}-{max(samples):.3f}) |", flush=True)
    return median


def fhr_noop(repeats):
    m = fhr.ResidencyManager(backend="host")
    h = m.adopt(np.zeros(4096, np.uint8))
    ensure, at = m.ensure, fhr.PAGEABLE_HOST

    def loop(n):
        for _ in range(n):
            ensure(h, at)

    return [timed(loop, 200_000) for _ in range(repeats)]


def load_fhelium():
    path = os.environ.get("FHR_FHELIUM_PATH")
    if not path:
        print("(FHElium rows skipped: FHR_FHELIUM_PATH is not set)")
        return None
    sys.path.insert(0, path)
    try:
        import fhelium.residency as residency
        from fhelium.core import TensorResident
    except Exception as error:  # reported, not fatal: fhr's rows still run
        print(f"(FHElium rows skipped: {error})")
        return None

    class OneTensor(TensorResident):
        """The smallest TensorResident: one tensor."""

        def __init__(self, tensor):
            self.tensor = tensor

        @property
        def _resident_tensors(self):
            return (self.tensor,)

        def _with_resident_tensors(self, tensors):
            return OneTensor(tensors[0])

    return residency, OneTensor


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--only",
        help="comma-separated rows to run: noop, small, lease, big (default: all); "
        "e.g. --only lease to time leases in many short processes",
    )
    arguments = parser.parse_args()
    repeats = arguments.repeats
    every_row = {"noop", "small", "lease", "big"}
    rows = {name.strip() for name in arguments.only.split(",")} if arguments.only else every_row
    if not rows <= every_row:
        parser.error(f"--only: unknown rows {sorted(rows - every_row)} (rows: {', '.join(sorted(every_row))})")
    print(f"fhr {fhr.__version__}, Python {sys.version.split()[0]}, CUDA devices {fhr.cuda_device_count()}")
    print("| measurement | median (range) |\n|---|---|")
    if "noop" in rows:
        row("fhr no-op ensure (host backend)", fhr_noop(repeats))
    fhelium = load_fhelium()
    try:
        import torch
    except ImportError:
        print("(CUDA rows skipped: no torch)")
        return
    if fhelium and "noop" in rows:
        residency, OneTensor = fhelium
        m = residency.ResidencyManager()
        h = m.adopt(OneTensor(torch.zeros(1024)))

        def noop(n):
            for _ in range(n):
                m.ensure(h, residency.PAGEABLE_HOST)

        row("FHElium no-op ensure", [timed(noop, 20_000) for _ in range(repeats)])
    if not torch.cuda.is_available() or fhr.cuda_device_count() == 0:
        print("(CUDA rows skipped: no GPU or fhr without CUDA)")
        return
    cuda0 = fhr.cuda_location("cuda:0")
    stream = torch.cuda.Stream()

    def small_ensure(manager, handle, location, drop_at):
        def loop(n):
            total = 0
            for _ in range(n):
                start = time.perf_counter_ns()
                manager.ensure(handle, location)
                total += time.perf_counter_ns() - start
                manager.drop(handle, drop_at)
            return total

        samples = []
        for _ in range(repeats):
            samples.append(loop(2000) / 2000 / 1000.0)
        return samples

    def lease(manager, handle, location, n=20_000):
        acquire = manager.acquire

        def loop(count):
            for _ in range(count):
                acquire([handle], at=location, consumer_stream=stream).release()

        return [timed(loop, n) for _ in range(repeats)]

    m = fhr.ResidencyManager(backend="cuda")
    h = m.adopt(torch.zeros(1024).pin_memory(), replica_mode=fhr.ReplicaMode.REPLICABLE)
    if "small" in rows:
        row("fhr 4 KiB tensor ensure pinned -> cuda:0", small_ensure(m, h, cuda0, cuda0))
    m.ensure(h, cuda0)
    if "lease" in rows:
        row("fhr lease acquire + release, consumer stream", lease(m, h, cuda0))
    if fhelium and rows & {"small", "lease"}:
        residency, OneTensor = fhelium
        fm = residency.ResidencyManager()
        fh = fm.adopt(OneTensor(torch.zeros(1024).pin_memory()), replica_mode=residency.ReplicaMode.REPLICABLE)
        fcuda = residency.cuda_location("cuda:0")
        if "small" in rows:
            row("FHElium 4 KiB tensor ensure pinned -> cuda:0", small_ensure(fm, fh, fcuda, fcuda))
        fm.ensure(fh, fcuda)
        if "lease" in rows:
            row("FHElium lease acquire + release, consumer stream", lease(fm, fh, fcuda, 2000))
    if "big" not in rows:
        return

    size = 256 << 20
    source = torch.empty(size, dtype=torch.uint8).pin_memory()
    target = torch.empty(size, dtype=torch.uint8, device="cuda:0")

    def raw(n):
        for _ in range(n):
            target.copy_(source, non_blocking=True)
            torch.cuda.synchronize()

    raw_ms = row("raw cudaMemcpyAsync 256 MiB pinned -> cuda:0", [timed(raw, 5) / 1000 for _ in range(repeats)], "ms")
    del target
    for label, backend in (
        ("fhr 256 MiB ensure pinned -> cuda:0 (default: freed memory back to the driver)", "cuda"),
        ("fhr 256 MiB ensure pinned -> cuda:0 (pool keeps everything)",
         fhr.CudaBackend(device_pool_release_threshold=2**64 - 1)),
    ):
        big = fhr.ResidencyManager(backend=backend)
        bh = big.adopt(source.clone().pin_memory(), replica_mode=fhr.ReplicaMode.REPLICABLE)
        ms = row(label, [_big_ensure(big, bh, cuda0) / 1000 for _ in range(repeats)], "ms")
        print(f"|   ratio to raw | {raw_ms / ms * 100:.1f} % |")
        big.close(force=True)


def _big_ensure(manager, handle, location):
    start = time.perf_counter_ns()
    manager.ensure(handle, location)
    elapsed = (time.perf_counter_ns() - start) / 1000.0
    manager.drop(handle, location)
    return elapsed


if __name__ == "__main__":
    main()

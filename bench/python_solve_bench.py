#!/usr/bin/env python3
"""fhr.solve in-process (fhr._compiler) against the same call through
`fhr-plan solve` (a runtime-only build's path): the median wall time of
each over the workloads of bench/workloads/, one after the other in turn.

    PYTHONPATH=build/python FHR_PLAN=build/tools/fhr-plan \\
        python3 bench/python_solve_bench.py [--repeat N] [WORKLOAD.json ...]

Both return the same program and report (tests/python/test_solve.py); the
difference is the process, the files and the JSON the command adds. Left
out: the first call of each (imports, the extension's loading) is not
timed; each workload is solved N times with warm caches.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time

import fhr


def timed(solve, workload, repeat):
    solve(workload)  # not timed: imports, first touches
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        solution = solve(workload)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), solution


def through_the_command(workload):
    saved = sys.modules.get("fhr._compiler")
    sys.modules["fhr._compiler"] = None  # as in a runtime-only build
    try:
        return fhr.solve(workload)
    finally:
        sys.modules["fhr._compiler"] = saved


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not os.environ.get("FHR_PLAN"):
        sys.exit("set FHR_PLAN to the fhr-plan to compare with")
    paths = args.workloads or sorted(glob.glob(os.path.join(os.path.dirname(__file__), "workloads", "*.json")))
    print("| workload | steps | bytes moved | in-process, s | through fhr-plan solve, s | ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for path in paths:
        with open(path) as file:
            workload = json.load(file)
        inside, a = timed(fhr.solve, workload, args.repeat)
        outside, b = timed(through_the_command, workload, args.repeat)
        assert a.program == b.program, path
        ratios.append(outside / inside)
        print(f"| {os.path.basename(path)} | {len(workload['steps'])} | {a.bytes_moved} | {inside:.4f} | "
              f"{outside:.4f} | {outside / inside:.2f} |")
    print(f"\nmedian ratio {statistics.median(ratios):.2f} over {len(ratios)} workloads")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Random workloads of two and three budgeted devices whose steps swap values
between devices (the planner's moves across, docs/planner.md), solved by
`fhr-plan solve`: every schedule must verify and its printed program pass
`check`; with --baseline, each workload's bytes moved, predicted time (the
shipped H200 profile) and bytes into pageable memory are compared with
another build's.

    swap_workloads.py FHR-PLAN [--first SEED] [--count N] [--tight]
                      [--baseline OTHER-FHR-PLAN]

Values exclusive or replicable, adopted on the devices, pinned or pageable
memory, or rebuilt from sources; budgeted pinned memory half the time;
tiers through the other devices; workspace; 70% of the workloads with
compute time, so that prefetch runs. --tight: smaller budgets, more swaps.
Written for the twenty-eighth wave's review of the realiser's order of
moves across (docs/benchmarks.md). Exit 1 when a schedule does not verify
or a printed program fails check.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

MiB = 1 << 20


def workload(seed, tight=False):
    """The random workload of `seed` (fhr-workload/1, as a dict)."""
    r = random.Random(seed)
    ndev = r.choice([2, 2, 3, 3])
    unit = r.choice([1, MiB])
    devs = [f"cuda:{d}" for d in range(ndev)]
    pinned_budget = r.random() < 0.5
    nvals = r.randint(2, 8)
    sizes_pool = [r.randint(1, 16) for _ in range(3)]
    values = []
    for v in range(nvals):
        kind = r.random()
        size = r.choice(sizes_pool) if r.random() < 0.6 else r.randint(1, 16)
        val = {"name": f"v{v}", "bytes": size * unit}
        if kind < 0.55:
            val["mode"] = "exclusive"
            val["at"] = r.choice(devs + ["pinned", "pageable", "pageable"])
        elif kind < 0.7:
            val["mode"] = "replicable"
            val["at"] = r.choice(devs + ["pinned", "pageable"])
        elif kind < 0.85:
            val["mode"] = "replicable"
            val["source"] = r.choice(["pinned", "pageable", "pageable"])
        else:
            val["mode"] = "exclusive"
            val["source"] = r.choice(["pinned", "pageable", "pageable"])
        values.append(val)
    sz = {v["name"]: v["bytes"] for v in values}
    largest = max(sz.values())
    budgets = {}
    for d in devs:
        budgets[d] = largest * r.randint(1, 2 if tight else 3) + r.randint(0, 3 if tight else 8) * unit
    if pinned_budget:
        in_pinned = sum(v["bytes"] for v in values if v.get("at") == "pinned")
        budgets["pinned"] = in_pinned + r.randint(0, 2) * largest + r.randint(0, 4) * unit
    # adopted at a budgeted device must fit its budget
    for d in devs:
        tot = sum(v["bytes"] for v in values if v.get("at") == d)
        if tot > budgets[d]:
            budgets[d] = tot + r.randint(0, 4) * unit
    tiers = []
    for d in devs:
        t = []
        others = [o for o in devs if o != d]
        r.shuffle(others)
        for o in others:
            if r.random() < 0.5:
                t.append(o)
        if r.random() < 0.8:
            t.append("pinned")
        t.append("pageable")
        r.shuffle(t) if r.random() < 0.1 else None
        if "pageable" in t:
            t.remove("pageable")
        t.append("pageable")
        tiers.append({"from": d, "to": t})
    if pinned_budget and r.random() < 0.7:
        t = [o for o in devs if r.random() < 0.3] + ["pageable"]
        tiers.append({"from": "pinned", "to": t})
    steps = []
    nsteps = r.randint(2, 12)
    timed = r.random() < 0.7
    # build steps with swap bias
    prev = {}
    for s in range(nsteps):
        needs = {}
        used = {}
        placed_excl = set()
        # swap: take values at previous step's locations and permute them
        cand_locs = devs + (["pinned"] if pinned_budget and r.random() < 0.3 else [])
        k = r.randint(1, 2 * ndev + 1)
        order = list(range(nvals))
        if prev and r.random() < (0.9 if tight else 0.6):
            # swap bias: reuse previous values at rotated locations
            items = list(prev.items())
            for (vn, loc) in items:
                if loc in devs and r.random() < 0.8:
                    i = devs.index(loc)
                    nl = devs[(i + r.choice([1, -1])) % ndev]
                    needs.setdefault(nl, []).append(vn)
                    placed_excl.add(vn)
        for _ in range(k):
            v = values[r.randrange(nvals)]
            loc = r.choice(cand_locs)
            vn = v["name"]
            if any(vn in vs for vs in needs.values()) and (v["mode"] == "exclusive" or "at" in v):
                continue
            if vn in needs.get(loc, []):
                continue
            needs.setdefault(loc, []).append(vn)
        # enforce budgets (drop values until fits)
        ws = []
        for loc in list(needs):
            b = budgets.get(loc)
            if b is None: continue
            tot = 0; keep = []
            for vn in needs[loc]:
                if tot + sz[vn] <= b:
                    keep.append(vn); tot += sz[vn]
            needs[loc] = keep
        for d in devs:
            if r.random() < 0.3:
                tot = sum(sz[vn] for vn in needs.get(d, []))
                room = budgets[d] - tot - largest  # leave possible load room
                if room > 0:
                    ws.append({"at": d, "bytes": r.randint(1, room), "label": "w"})
        if pinned_budget and r.random() < 0.15:
            tot = sum(sz[vn] for vn in needs.get("pinned", []))
            room = budgets["pinned"] - tot - largest
            if room > 0:
                ws.append({"at": "pinned", "bytes": r.randint(1, room), "label": "p"})
        step = {"name": f"s{s}", "needs": [{"at": l, "values": vs} for l, vs in needs.items() if vs]}
        if ws: step["workspace"] = ws
        if timed:
            step["compute_seconds"] = r.choice([0.0, 1e-6, 1e-5, 1e-4, 1e-3])
        steps.append(step)
        prev = {}
        for l, vs in needs.items():
            for vn in vs:
                prev[vn] = l
    w = {"schema": "fhr-workload/1", "name": f"f{seed}", "devices": ndev,
         "budgets": [{"at": k, "bytes": v} for k, v in budgets.items()],
         "tiers": tiers, "values": values, "steps": steps}
    return w


def solve(tool, workload_path, program_path):
    """(verdict, figures or None, detail) of one workload on `tool`; the
    figures are bytes moved, the predicted total seconds (the shipped H200
    profile) and the bytes into pageable memory."""
    solved = subprocess.run([tool, "solve", workload_path, "-o", program_path, "--format", "json"],
                            capture_output=True, text=True)
    if solved.returncode != 0:
        if "does not verify" in solved.stderr:
            return "does not verify", None, solved.stderr.strip()
        if "cannot fit" in solved.stderr:
            return "infeasible", None, ""
        return "other error", None, solved.stderr.strip()
    checked = subprocess.run([tool, "check", program_path], capture_output=True, text=True)
    if checked.returncode != 0:
        return "check fails", None, (checked.stdout + checked.stderr)[:400]
    result = json.loads(solved.stdout)["result"]
    to_pageable = sum(b for link, b in result["bytes_per_link"].items() if link.endswith("-pageable"))
    return "solved", (result["bytes_moved"], result["time"]["total_seconds"], to_pageable), ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tool")
    parser.add_argument("--first", type=int, default=100000)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--tight", action="store_true")
    parser.add_argument("--baseline")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="swap-workloads-")

    def one(seed):
        path = os.path.join(work, f"w{seed}.json")
        with open(path, "w") as f:
            json.dump(workload(seed, args.tight), f)
        ours = solve(args.tool, path, os.path.join(work, f"w{seed}.fhr"))
        theirs = solve(args.baseline, path, os.path.join(work, f"b{seed}.fhr")) if args.baseline else None
        return seed, ours, theirs

    verdicts, failed = {}, False
    both = 0
    # per figure (bytes moved, predicted seconds, bytes into pageable memory):
    # workloads where ours is lower, higher; totals of theirs and ours
    names = ("bytes moved", "predicted seconds", "bytes into pageable memory")
    lower, higher = [0, 0, 0], [0, 0, 0]
    theirs_total, ours_total = [0, 0, 0], [0, 0, 0]
    with ThreadPoolExecutor(2) as pool:
        for seed, (verdict, ours, detail), theirs in pool.map(one, range(args.first, args.first + args.count)):
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
            if verdict not in ("solved", "infeasible"):
                failed = True
                print(f"seed {seed}: {verdict}: {detail}")
            if theirs and ours is not None and theirs[1] is not None:
                both += 1
                for i, (a, b) in enumerate(zip(ours, theirs[1])):
                    ours_total[i] += a
                    theirs_total[i] += b
                    # time within a nanosecond counts as the same
                    lower[i] += a < b - (1e-9 if i == 1 else 0)
                    higher[i] += a > b + (1e-9 if i == 1 else 0)
    print(f"{args.count} workloads from seed {args.first}: " +
          ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    if both:
        print(f"{both} solved by both builds:")
        for i, name in enumerate(names):
            change = f" ({100 * (ours_total[i] - theirs_total[i]) / theirs_total[i]:+.2f}%)" if theirs_total[i] else ""
            print(f"  {name}: lower in {lower[i]}, higher in {higher[i]}, the same in "
                  f"{both - lower[i] - higher[i]}; {theirs_total[i]:.6g} -> {ours_total[i]:.6g}{change}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

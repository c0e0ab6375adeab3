#!/usr/bin/env python3
"""Predicted against measured step times (issue #14's EXPLAIN ANALYZE
target, until `fhr-plan run` prints the prediction itself).

    prediction_error.py EXPLAIN.json RUN.txt

EXPLAIN.json: `fhr-plan explain --profile links.json --format json FILE`;
RUN.txt: `fhr-plan run --backend cuda FILE` of the same file. Steps are
paired in order within each plan or program of the same name (the run
executes exactly the explained steps). A step's prediction is commit_us -
start_us: from its copy's start to its commit, which is what the run's
time column measures (TransitionReport completed_at - started_at).
Prints every step that moves bytes and the verdict: within 10% for
transfers of 16 MiB and more, within 5 us for smaller ones. Exit 1 if a
step misses its target.
"""
import json
import re
import sys

LARGE = 16 << 20


def run_units(text):
    units, current = {}, None
    for line in text.splitlines():
        header = re.match(r'^\S.*: (plan|program) "(.*)" on the ', line)
        if header:
            current = units.setdefault(header.group(2), [])
            continue
        row = re.match(r'^\s+\d+\s+\S+ \d+\s+(\S+).*?(\d+\.\d) us\s*$', line)
        if current is not None and row:
            current.append((row.group(1), float(row.group(2))))
        elif current is not None and re.match(r'^\s+\d+\s+\S+ \d+\s+', line):
            current.append((line.split()[3], None))
    return units


def main():
    explain = json.load(open(sys.argv[1]))
    measured = run_units(open(sys.argv[2]).read())
    misses = checked = 0
    print(f"{'unit':40} {'step':44} {'bytes':>12} {'predicted':>12} {'measured':>12} {'error':>10}")
    for file in explain["files"]:
        for unit in file["units"]:
            rows = measured.get(unit["name"], [])
            for step, row in zip(unit["steps"], rows):
                time = step.get("time") or {}
                if not time.get("engine") or row[1] is None:
                    continue
                predicted = time["commit_us"] - time["start_us"]
                actual = row[1]
                large = step["storage_bytes"] >= LARGE
                error = (predicted - actual) / actual * 100 if large else predicted - actual
                ok = abs(error) <= (10 if large else 5)
                checked += 1
                misses += 0 if ok else 1
                unit_text = unit["name"][:40]
                shown = f"{error:+.1f}%" if large else f"{error:+.2f} us"
                print(f"{unit_text:40} {step['step'][:44]:44} {step['storage_bytes']:12} {predicted:10.1f}us "
                      f"{actual:10.1f}us {shown:>10}{'' if ok else '  MISS'}")
    print(f"{checked} transfers compared, {misses} outside the target "
          "(10% at 16 MiB and more, 5 us below)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())

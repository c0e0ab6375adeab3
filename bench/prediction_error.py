#!/usr/bin/env python3
"""Predicted against measured step times: issue #14's EXPLAIN ANALYZE target.

    prediction_error.py RUN.json [RUN.json ...]

Each RUN.json is `fhr-plan run --backend cuda --profile links.json
--format json FILE` (schema fhr-run/1, docs/run.md): every step carries
the link model's prediction (predicted.duration_us: from its copy's
start to its commit) and the measured duration (measured.duration_us:
TransitionReport completed_at - started_at). Prints one row per step that
moves bytes and, per file, the run totals; the target is within 10% for
transfers of 16 MiB and more and within 5 us for smaller ones. Exit 1 if
a step misses its target, 2 if a document is not fhr-run/1.
"""
import json
import sys

LARGE = 16 << 20


def rows(document):
    for run in document["runs"]:
        for step in run["steps"]:
            predicted = step["predicted"].get("duration_us")
            measured = step["measured"].get("duration_us")
            if step["transfer"] == "none" or predicted is None or measured is None:
                continue
            yield run, step, predicted, measured


def main(paths):
    misses = checked = 0
    print(f"{'file':24} {'unit':32} {'step':44} {'bytes':>11} {'predicted':>12} {'measured':>12} {'error':>10}")
    for path in paths:
        with open(path) as f:
            document = json.load(f)
        if document.get("schema") != "fhr-run/1":
            print(f"{path}: not an fhr-run/1 document", file=sys.stderr)
            return 2
        for run, step, predicted, measured in rows(document):
            large = step["bytes"] >= LARGE
            error = (measured - predicted) / predicted * 100 if large and predicted > 0 else measured - predicted
            ok = abs(error) <= (10 if large else 5)
            checked += 1
            misses += 0 if ok else 1
            shown = f"{error:+.1f}%" if large else f"{error:+.2f} us"
            name = run["file"].split("/")[-1][:24]
            print(f"{name:24} {run['name'][:32]:32} {step['action'][:44]:44} {step['bytes']:11} "
                  f"{predicted:10.1f}us {measured:10.1f}us {shown:>10}{'' if ok else '  MISS'}")
        for run in document["runs"]:
            totals = run["totals"]
            if totals["predicted_us"] is None:
                continue
            print(f"  total {run['kind']} {run['name']}: predicted {totals['predicted_us']:.1f} us, "
                  f"measured {totals['measured_us']:.1f} us ({totals['error_percent']:+.1f}%)")
    print(f"{checked} transfers compared, {misses} outside the target "
          "(10% at 16 MiB and more, 5 us below)")
    return 1 if misses else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Measured step times of two or more sets of `run` documents side by side:
two builds, or one build under two settings, on the same plans.

    compare_runs.py NAME=RUN.json[,RUN.json ...] NAME=RUN.json[,...] [...]

Each set's documents are pooled as bench/prediction_error.py pools them
(a step's time: the median over all the runs of its `--repeat`s and of
the set's documents). For every step that moves bytes, one Markdown row:
the unit, the step, its action and size, each set's median transfer time
(µs) and, for the sets after the first, their time as a share of the
first's. Then per link (pageable-device, device-pageable, ...) and size
class (under 16 MiB, 16 MiB and more), each later set's median share and
its total time against the first's. Steps are matched by file, unit kind
and name, and position, and must have the same action and size in every
set; the others are left out and counted, as are units a set ran against
several predictions (their steps would be ambiguous) and steps a set did
not time. Exit 2 if a file is not an fhr-run/1 document or a set has no
step to compare.
"""

import sys

from prediction_error import LARGE, load_documents, median, pool

USAGE = "usage: compare_runs.py NAME=RUN.json[,RUN.json ...] NAME=RUN.json[,...] [...]"


def measured_steps(documents):
    """{(file, kind, unit, position): (action, link, bytes, median transfer µs)}
    for the steps of `documents` that moved bytes and were timed, and the
    keys of units that several of them ran against different predictions
    (pooled apart: which one a key means is ambiguous, so they are left
    out)."""
    units, _ = pool(documents)
    steps, seen, ambiguous = {}, set(), set()
    for run in units:
        unit = (run["file"].rsplit("/", 1)[-1], run["kind"], run["name"])
        if unit in seen:
            ambiguous.add(unit)
        seen.add(unit)
        for position, step in enumerate(run["steps"]):
            measured = step["measured"].get("transfer_us", step["measured"].get("duration_us"))
            if step["transfer"] == "none" or measured is None:
                continue
            steps[unit + (position,)] = (step["action"], step.get("link") or step["transfer"], step["bytes"],
                                         measured)
    for key in [key for key in steps if key[:3] in ambiguous]:
        del steps[key]
    return steps, len(ambiguous)


def size_text(nbytes):
    return f"{nbytes / (1 << 20):g} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def share_text(share):
    return "-" if share is None else f"{share:.3f}"


def compare(named_sets):
    """The table's lines for [(name, steps)], and how many steps were left
    out: not in every set, or not the same action and size in all."""
    (first_name, first), later = named_sets[0], named_sets[1:]
    names = [name for name, _ in named_sets]
    lines = ["| file | unit | step | action | bytes | " + " | ".join(f"{n}, µs" for n in names)
             + "".join(f" | {n} / {first_name}" for n, _ in later) + " |",
             "|---|---|---|---|---|" + "---|" * (len(names) + len(later))]
    # The first set's steps in its documents' order, then those it lacks.
    keys = list(first) + sorted({key for _, steps in later for key in steps if key not in first})
    left_out = 0
    groups = {}
    for key in keys:
        found = [steps.get(key) for _, steps in named_sets]
        if any(f is None or f[:3] != found[0][:3] for f in found):
            left_out += 1
            continue
        (action, link, nbytes, base), others = found[0], [f[3] for f in found[1:]]
        shares = [t / base if base > 0 else None for t in others]
        lines.append(f"| {key[0]} | {key[2]} | {key[3]} | {action} | {size_text(nbytes)} | {base:.1f} | "
                     + " | ".join(f"{t:.1f}" for t in others) + " | "
                     + " | ".join(share_text(s) for s in shares) + " |")
        group = groups.setdefault((link, nbytes >= LARGE), {"shares": [], "totals": [0.0] * len(later), "base": 0.0})
        group["shares"].append(shares)
        group["base"] += base
        for k, t in enumerate(others):
            group["totals"][k] += t
    lines += ["", "| link | sizes | steps | " + " | ".join(f"{n} / {first_name}: median share, total" for n, _ in later)
              + " |", "|---|---|---|" + "---|" * len(later)]
    for (link, large), group in sorted(groups.items()):
        cells = []
        for k in range(len(later)):
            of_set = [s[k] for s in group["shares"] if s[k] is not None]
            total = group["totals"][k] / group["base"] if group["base"] > 0 else None
            cells.append(f"{share_text(median(of_set) if of_set else None)}, {share_text(total)}")
        lines.append(f"| {link} | {'16 MiB and more' if large else 'under 16 MiB'} | {len(group['shares'])} | "
                     + " | ".join(cells) + " |")
    return lines, left_out


def main(arguments):
    if len(arguments) < 2 or any("=" not in a for a in arguments):
        print(USAGE, file=sys.stderr)
        return 2
    named_sets, unreadable, status = [], 0, 0
    for argument in arguments:
        name, paths = argument.split("=", 1)
        documents, bad = load_documents([p for p in paths.split(",") if p])
        unreadable += bad
        steps, ambiguous = measured_steps(documents)
        if ambiguous:
            print(f"{name}: {ambiguous} units ran against several predictions: left out", file=sys.stderr)
        if not steps:
            print(f"{name}: no timed step that moves bytes", file=sys.stderr)
            status = 2
        named_sets.append((name, steps))
    lines, left_out = compare(named_sets)
    print("\n".join(lines))
    if left_out:
        print(f"\n{left_out} steps not in every set, or not the same action and size in all: left out")
    return 2 if unreadable or status else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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
its total time against the first's. A set's step is matched to the
first's by file, unit and position; steps only one set ran are left out
and counted. Exit 2 if a file is not an fhr-run/1 document.
"""

import sys

from prediction_error import LARGE, load_documents, median, pool


def measured_steps(documents):
    """{(file, unit, position): (action, link, bytes, median transfer µs)}
    for the steps of `documents` that moved bytes."""
    units, _ = pool(documents)
    steps = {}
    for run in units:
        for position, step in enumerate(run["steps"]):
            measured = step["measured"].get("transfer_us", step["measured"].get("duration_us"))
            if step["transfer"] == "none" or measured is None:
                continue
            key = (run["file"].rsplit("/", 1)[-1], run["name"], position)
            steps[key] = (step["action"], step.get("link") or step["transfer"], step["bytes"], measured)
    return steps


def size_text(nbytes):
    return f"{nbytes / (1 << 20):g} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def compare(named_sets):
    """The table's lines for [(name, steps)], and how many steps of a later
    set had no match in the first."""
    (first_name, first), later = named_sets[0], named_sets[1:]
    names = [name for name, _ in named_sets]
    lines = ["| file | unit | step | action | bytes | " + " | ".join(f"{n}, µs" for n in names)
             + "".join(f" | {n} / {first_name}" for n, _ in later) + " |",
             "|---|---|---|---|---|" + "---|" * (len(names) + len(later))]
    unmatched = sum(1 for _, steps in later for key in steps if key not in first)
    groups = {}
    for key, (action, link, nbytes, base) in first.items():
        times = [steps.get(key) for _, steps in later]
        if any(t is None for t in times):
            unmatched += 1
            continue
        others = [t[3] for t in times]
        shares = [t / base if base > 0 else None for t in others]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {action} | {size_text(nbytes)} | {base:.1f} | "
                     + " | ".join(f"{t:.1f}" for t in others) + " | "
                     + " | ".join("-" if s is None else f"{s:.3f}" for s in shares) + " |")
        group = groups.setdefault((link, nbytes >= LARGE), [[], [0.0] * len(later), 0.0])
        group[0].append(shares)
        group[2] += base
        for k, t in enumerate(others):
            group[1][k] += t
    lines += ["", "| link | sizes | steps | " + " | ".join(f"{n} / {first_name}: median share, total" for n, _ in later)
              + " |", "|---|---|---|" + "---|" * len(later)]
    for (link, large), (shares, totals, base_total) in sorted(groups.items()):
        cells = []
        for k in range(len(later)):
            of_set = [s[k] for s in shares if s[k] is not None]
            share = f"{median(of_set):.3f}" if of_set else "-"
            total = f"{totals[k] / base_total:.3f}" if base_total > 0 else "-"
            cells.append(f"{share}, {total}")
        lines.append(f"| {link} | {'16 MiB and more' if large else 'under 16 MiB'} | {len(shares)} | "
                     + " | ".join(cells) + " |")
    return lines, unmatched


def main(arguments):
    if len(arguments) < 2 or any("=" not in a for a in arguments):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    named_sets, unreadable = [], 0
    for argument in arguments:
        name, paths = argument.split("=", 1)
        documents, bad = load_documents([p for p in paths.split(",") if p])
        unreadable += bad
        named_sets.append((name, measured_steps(documents)))
    lines, unmatched = compare(named_sets)
    print("\n".join(lines))
    if unmatched:
        print(f"\n{unmatched} steps ran in one set and not the other: left out")
    return 2 if unreadable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

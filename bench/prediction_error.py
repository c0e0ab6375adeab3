#!/usr/bin/env python3
"""Predicted against measured step times: issue #14's EXPLAIN ANALYZE target.

    prediction_error.py RUN.json [RUN.json ...]

Each RUN.json is `fhr-plan run --backend cuda --profile links.json
--format json FILE` (schema fhr-run/1, docs/run.md): every step carries
the link model's prediction (predicted.duration_us: from its copy's
start to its commit) and the measured duration (measured.duration_us:
TransitionReport completed_at - started_at). Prints one row per step that
moves bytes and, per file, the run totals; a load is compared without its
source's fill (predicted/measured `transfer_us`: the fill is the loader's
speed, tabled on its own lines and outside the target); the target is within 10% for
transfers of 16 MiB and more and within 5 us for smaller ones. A run's
total compares the prediction with the time its steps were in flight
(totals.measured_us); the time the runtime spent between steps is shown
beside it. Exit 1 if a step misses its target, 2 if a document is not
fhr-run/1 (the others are still tabled). With `run --repeat N` the
measured times are medians over N runs; each row then also shows the
range of the runs' transfer times, and a miss whose runs spread wider
than the target's band (20% of their median at 16 MiB and more, 10 us
below) is marked "MISS unsteady" and counted apart: the machine moved
under that step by more than the target allows (docs/benchmarks.md,
sixteenth wave).

Where two documents or more have loads, the last lines give, document by
document in the order given, the median error of their loads' source
fills and of those loads' copies of 16 MiB and more: the fill is the
processor writing host memory, so a document whose fills ran far from
the profile met the host in another stretch than the calibration did
(docs/benchmarks.md, thirtieth wave).

Documents that ran the same unit (file, kind and name) against the same
predictions — `gpu_prediction.sh`'s rounds against one merged profile —
are pooled: each step's measured time is then the median over every run
of every such document, and its range theirs. Runs of one unit against
different profiles stay apart.
"""
import json
import sys

LARGE = 16 << 20


def median(values):
    """The median (the mean of the middle two for an even count), as
    fhr::median takes it."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def predictions_of(run):
    """What a run predicted, step by step: the key that pools its runs with
    those of other documents."""
    return tuple((step["action"], step["predicted"].get("transfer_us", step["predicted"].get("duration_us")))
                 for step in run["steps"])


def runs_of(measured):
    """A step's measured runs as (duration, source load) pairs: its
    repetitions, or the one run; none where the run stopped before it."""
    repeated = measured.get("repetitions")
    if repeated:
        return list(zip(repeated["duration_us"], repeated["source_load_us"]))
    if measured.get("duration_us") is None:
        return []
    return [(measured["duration_us"], measured.get("source_load_us") or 0.0)]


def pooled_step(steps):
    """One step of a unit run by several documents: its measured times the
    medians over all their runs that reached it, which its repetitions then
    list."""
    if len(steps) == 1:
        return steps[0]
    runs = [run for step in steps for run in runs_of(step["measured"])]
    if not runs:
        return steps[0]  # no document reached it
    durations = [duration for duration, _ in runs]
    loads = [load or 0.0 for _, load in runs]
    measured = {"duration_us": median(durations), "source_load_us": median(loads),
                "transfer_us": median([d - s for d, s in zip(durations, loads)]),
                "repetitions": {"duration_us": durations, "source_load_us": loads}}
    # Each document's time before the copy is already its runs' median.
    before = [step["measured"]["before_copy_us"] for step in steps
              if step["measured"].get("before_copy_us") is not None]
    if before:
        measured["before_copy_us"] = median(before)
    return dict(steps[0], measured=measured)


def completed(run):
    """Whether a run reached its end: a stopped run's total is shorter than
    any whole run's, so it stays out of a pooled total."""
    return not run.get("stopped") and all(step["measured"].get("duration_us") is not None
                                          for step in run["steps"])


def pooled_totals(runs):
    """A pooled unit's totals: the first document's prediction, the medians
    of the measured ones of the runs that reached their end."""
    totals = dict(runs[0].get("totals") or {})
    whole = [run.get("totals") or {} for run in runs if completed(run)]
    measured = [t["measured_us"] for t in whole if t.get("measured_us") is not None]
    between = [t["between_steps_us"] for t in whole if t.get("between_steps_us") is not None]
    if not measured or totals.get("predicted_us") is None:
        return totals
    totals["measured_us"] = median(measured)
    totals["between_steps_us"] = median(between) if between else None
    predicted = totals["predicted_us"]
    totals["error_percent"] = (totals["measured_us"] - predicted) / predicted * 100 if predicted > 0 else None
    return totals


def pool(documents):
    """The units of `documents`, those run against the same predictions by
    several documents pooled into one (the others as they are), in the
    order they first appear; and how many units were pooled."""
    groups = {}
    for document in documents:
        for run in document["runs"]:
            groups.setdefault((run["file"], run["kind"], run["name"], predictions_of(run)), []).append(run)
    units, pooled = [], 0
    for runs in groups.values():
        if len(runs) == 1:
            units.append(runs[0])
            continue
        pooled += 1
        steps = [pooled_step([run["steps"][k] for run in runs]) for k in range(len(runs[0]["steps"]))]
        units.append(dict(runs[0], steps=steps, totals=pooled_totals(runs), pooled_documents=len(runs)))
    return units, pooled


def rows(units):
    """Steps that move bytes, with their predicted and measured transfer time.

    A load's step also holds its source filling the value's storage (the
    loader's speed, not a link's): where the document has it apart
    (`transfer_us`, `source_load_us`), the transfer is compared without it
    and the fill is tabled on its own line (fills())."""
    for run in units:
        for step in run["steps"]:
            predicted = step["predicted"].get("transfer_us", step["predicted"].get("duration_us"))
            measured = step["measured"].get("transfer_us", step["measured"].get("duration_us"))
            if step["transfer"] == "none" or predicted is None or measured is None:
                continue
            yield run, step, predicted, measured


def fills(units):
    """Loads whose source's fill was predicted and measured apart."""
    for run in units:
        for step in run["steps"]:
            predicted = step["predicted"].get("source_load_us")
            measured = step["measured"].get("source_load_us")
            if step["transfer"] != "load" or not predicted or measured is None:
                continue
            yield run, step, predicted, measured


def spread(step):
    """With --repeat: "  (5 runs: 3512.4-3790.1 us)", the range of the runs'
    transfer times (duration less the source's fill); "" for one run."""
    transfers = transfers_of_runs(step)
    if not transfers:
        return ""
    return f"  ({len(transfers)} runs: {min(transfers):.1f}-{max(transfers):.1f} us)"


def transfers_of_runs(step):
    """With --repeat: each run's transfer time (duration less the source's
    fill); [] for one run."""
    repeated = step["measured"].get("repetitions")
    if not repeated:
        return []
    return [d - s for d, s in zip(repeated["duration_us"], repeated["source_load_us"])]


def unsteady(step, large):
    """Whether a step's own runs spread wider than the target's band (20%
    of their median at 16 MiB and more, 10 us below): no prediction can
    be within the target of every run then, and their median moves with
    the machine as much as with the model. False for one run."""
    transfers = sorted(transfers_of_runs(step))
    if len(transfers) < 2:
        return False
    width = transfers[-1] - transfers[0]
    return width > (0.2 * transfers[len(transfers) // 2] if large else 10)


def total_line(run):
    """A run's predicted and measured totals, or None when it has no prediction.

    A unit may lack any of them: no prediction (predicted_us null), nothing
    predicted to take time (predicted_us 0: error_percent null), a run
    stopped before its first step (no measured time), or a document written
    before span_us existed."""
    totals = run.get("totals") or {}
    predicted = totals.get("predicted_us")
    if predicted is None:
        return None
    measured = totals.get("measured_us")
    text = f"  total {run['kind']} {run['name']}: predicted {predicted:.1f} us"
    if measured is None:
        return text + ", not measured"
    text += f", measured in steps {measured:.1f} us"
    error = totals.get("error_percent")
    text += f" ({error:+.1f}%)" if error is not None else f" ({measured - predicted:+.1f} us)"
    if totals.get("between_steps_us") is not None:
        text += f"; {totals['between_steps_us']:.1f} us between steps"
    # Windows of several copies, predicted and formed (runs with overlap).
    windows = run.get("windows")
    if windows:
        text += f"; windows {windows['predicted']} predicted, {windows['ran']} formed"
        differing = windows.get("differing_steps") or []
        if differing:
            text += f", steps {', '.join(str(k) for k in differing)} elsewhere"
    return text


def host_speed_lines(named_documents):
    """One line per document with loads, in the order given: how its loads'
    source fills and their copies of 16 MiB and more compared with the
    profile (medians). A fill is the processor writing host memory on one
    thread, so its error is the host's speed at that moment against the
    calibration's; on the H200 machine it switched within a call by a
    third, and the staged copies beside it followed (docs/benchmarks.md,
    thirtieth wave): a run of misses in one document, with its fills far
    off, is such a stretch, not the model. [] unless two documents or
    more have loads: one has nothing to compare with."""
    lines = []
    for path, document in named_documents:
        fill_errors, copy_errors = [], []
        for _, step, predicted, measured in fills(document["runs"]):
            fill_errors.append((measured / predicted - 1) * 100)
            copy_predicted, copy_measured = step["predicted"].get("transfer_us"), step["measured"].get("transfer_us")
            if step["bytes"] >= LARGE and copy_predicted and copy_measured is not None:
                copy_errors.append((copy_measured / copy_predicted - 1) * 100)
        if fill_errors:
            copies = f", copies of 16 MiB and more {median(copy_errors):+.1f}%" if copy_errors else ""
            loads = f"{len(fill_errors)} load" + ("s" if len(fill_errors) != 1 else "")
            lines.append(f"  {path.split('/')[-1]}: {loads}, fills {median(fill_errors):+.1f}%{copies}")
    if len(lines) < 2:
        return []
    return ["the host's speed by document, in the order given (medians against the profile: the loads' "
            "source fills, the host's memory then; their copies beside them):"] + lines


def read_documents(paths):
    """The fhr-run/1 documents at `paths` with their paths, and how many
    were not such a document (each named on stderr)."""
    named, unreadable = [], 0
    for path in paths:
        try:
            with open(path) as f:
                document = json.load(f)
        except (OSError, json.JSONDecodeError) as error:
            # A run that failed before writing its document (see its .err):
            # the others are still tabled.
            print(f"{path}: not a JSON document: {error}", file=sys.stderr)
            unreadable += 1
            continue
        if not isinstance(document, dict) or document.get("schema") != "fhr-run/1":
            print(f"{path}: not an fhr-run/1 document", file=sys.stderr)
            unreadable += 1
            continue
        named.append((path, document))
    return named, unreadable


def load_documents(paths):
    """The fhr-run/1 documents at `paths`, and how many were not such a
    document (each named on stderr)."""
    named, unreadable = read_documents(paths)
    return [document for _, document in named], unreadable


def main(paths):
    misses = unsteady_misses = checked = 0
    fill_errors = []
    named, unreadable = read_documents(paths)
    documents = [document for _, document in named]
    units, pooled = pool(documents)
    print(f"{'file':24} {'unit':32} {'step':44} {'bytes':>11} {'predicted':>12} {'measured':>12} {'error':>10}")
    # By plan file, in the order they first appear: its steps, its loads'
    # fills, its totals.
    for file in dict.fromkeys(run["file"] for run in units):
        of_file = [run for run in units if run["file"] == file]
        for run, step, predicted, measured in rows(of_file):
            large = step["bytes"] >= LARGE
            error = (measured - predicted) / predicted * 100 if large and predicted > 0 else measured - predicted
            ok = abs(error) <= (10 if large else 5)
            checked += 1
            mark = ""
            if not ok:
                misses += 1
                mark = "  MISS"
                if unsteady(step, large):
                    unsteady_misses += 1
                    mark = "  MISS unsteady"
            shown = f"{error:+.1f}%" if large else f"{error:+.2f} us"
            name = run["file"].split("/")[-1][:24]
            print(f"{name:24} {run['name'][:32]:32} {step['action'][:44]:44} {step['bytes']:11} "
                  f"{predicted:10.1f}us {measured:10.1f}us {shown:>10}{mark}{spread(step)}")
        for run, step, predicted, measured in fills(of_file):
            error = (measured - predicted) / predicted * 100
            name = run["file"].split("/")[-1][:24]
            fill_errors.append(error)
            print(f"{name:24} {run['name'][:32]:32} {('source fill: ' + step['action'])[:44]:44} "
                  f"{step['bytes']:11} {predicted:10.1f}us {measured:10.1f}us {error:+9.1f}%  (loader)")
        for run in of_file:
            line = total_line(run)
            if line:
                print(line)
    print(f"{checked} transfers compared, {misses} outside the target "
          "(10% at 16 MiB and more, 5 us below)")
    if unsteady_misses:
        print(f"{unsteady_misses} of them unsteady (their runs spread wider than the target's band: "
              f"20% at 16 MiB and more, 10 us below), {misses - unsteady_misses} steady")
    if pooled:
        print(f"{pooled} units pooled from several documents run against the same predictions "
              "(each step's measured time the median over all their runs)")
    if fill_errors:
        fill_errors.sort()
        print(f"{len(fill_errors)} source fills (the loader's time, outside the target): error "
              f"{fill_errors[0]:+.1f}% to {fill_errors[-1]:+.1f}%, median {fill_errors[len(fill_errors) // 2]:+.1f}%")
    for line in host_speed_lines(named):
        print(line)
    if unreadable:
        return 2
    return 1 if misses else 0


def command_line(usage, main):
    """Runs `main` on the command line's paths and exits with its status;
    without any, prints `usage` and exits 2 (this script and the others
    that read run documents)."""
    if len(sys.argv) < 2:
        print(usage, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    command_line(__doc__, main)

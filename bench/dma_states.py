#!/usr/bin/env python3
"""The DMAs of up to 16 MiB of `run` documents, each beside the state it met.

    dma_states.py RUN.json [RUN.json ...]

Issue #14's 5 us bound for small transfers turns on what came before a
DMA between pinned memory and a device: the time model charges the
profile's `dma_after_host_work_us`, `dma_cold_value_us` or
`dma_follow_on_us` (fhr/model/dma_history.hpp), and the warm device
pool's hand-out before the copy is not modelled (docs/benchmarks.md,
twenty-second and twenty-third waves). For every such step, 16 MiB
included (the size where the 10% target takes over), of `fhr-plan run
--backend cuda --format json` (fhr-run/1) this prints one Markdown row:
the extra the model charged, the step's error (measured less predicted
duration, median over the runs of `run --repeat` and over documents of
the same unit, as bench/prediction_error.py pools them), the time before
the copy (measured, predicted), the error less the difference of the two
(the error in the copy itself), and the last step before it that moved
bytes (its action, link, size and measured duration): a long copy, a
load's fill, a host copy or a short DMA. Exit 2 if a file is not an
fhr-run/1 document (the others are still tabled).
"""
import sys

from prediction_error import LARGE, command_line, load_documents, median, pool

DMA_LINKS = ("pinned-device", "device-pinned")


def previous_step(steps, k):
    """The last step before step k that moved bytes (a drop between them
    moves none): its action's keyword, link, size and measured duration."""
    earlier = [step for step in steps[:k] if step.get("transfer") != "none"]
    if not earlier:
        return "(none: the first copy)"
    step = earlier[-1]
    duration = step["measured"].get("duration_us")
    link = step.get("link") or "-"
    took = f", {duration:.0f} us" if duration is not None else ""
    return f"{step['action'].split()[0]} {link} {step['bytes'] >> 20} MiB{took}"


def rows(units):
    for run in units:
        steps = run["steps"]
        for k, step in enumerate(steps):
            predicted, measured = step["predicted"], step["measured"]
            if step.get("link") not in DMA_LINKS or step.get("transfer") != "copy":
                continue
            if step["bytes"] > LARGE or measured.get("duration_us") is None:
                continue
            durations = (measured.get("repetitions") or {}).get("duration_us") or [measured["duration_us"]]
            error = median(durations) - predicted["duration_us"]
            before = measured.get("before_copy_us")
            before_predicted = predicted.get("before_copy_us", 0.0)
            in_copy = error - (before - before_predicted) if before is not None else None
            if predicted.get("after_host_work_us"):
                extra = f"after host work {predicted['after_host_work_us']:.1f}"
            elif predicted.get("cold_value_us"):
                extra = f"cold value {predicted['cold_value_us']:.1f}"
            elif predicted.get("follow_on_us"):
                extra = f"follow-on {predicted['follow_on_us']:.1f}"
            else:
                extra = "none"
            yield run, k, step, extra, error, before, before_predicted, in_copy, previous_step(steps, k)


def main(paths):
    documents, unreadable = load_documents(paths)
    units, _ = pool(documents)
    print("| file | unit | step | action | extra charged, us | error, us | before the copy, us "
          "(measured / predicted) | error in the copy, us | the last copy before it |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run, k, step, extra, error, before, before_predicted, in_copy, previous in rows(units):
        before_text = f"{before:.1f} / {before_predicted:.1f}" if before is not None else "-"
        in_copy_text = f"{in_copy:+.1f}" if in_copy is not None else "-"
        print(f"| {run['file'].split('/')[-1]} | {run['name']} | {k} | {step['action']} | {extra} | "
              f"{error:+.1f} | {before_text} | {in_copy_text} | {previous} |")
    return 2 if unreadable else 0


if __name__ == "__main__":
    command_line(__doc__, main)

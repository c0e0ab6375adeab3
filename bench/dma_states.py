#!/usr/bin/env python3
"""The DMAs of up to 16 MiB of `run` documents, each beside the state it met
(staged copies from pageable memory into a device too).

    dma_states.py RUN.json [RUN.json ...]

Issue #14's 5 us bound for small transfers turns on what came before a
DMA between pinned memory and a device: the time model charges the
profile's `dma_after_host_work_us`, `dma_cold_value_us` or
`dma_follow_on_us` (fhr/model/dma_history.hpp), and the warm device
pool's hand-out before the copy is not modelled (docs/benchmarks.md,
twenty-second and twenty-third waves). For every such step, 16 MiB
included (the size where the 10% target takes over), of `fhr-plan run
--backend cuda --format json` (fhr-run/1) this prints one Markdown row:
the state the model says it met (`dma_state`) and the extra it charged,
the step's error (measured less predicted duration; over the runs of
`run --repeat` and the documents of one unit pooled as
bench/prediction_error.py pools them), the time before the copy
(measured, predicted), the error less the difference of the two (the
error in the copy itself), and the last step before it that moved bytes
(its action, link, size and measured duration): a long copy, a load's
fill, a host copy or a short DMA. Then, per state, how many such steps,
their error's median and range, and how many came within 5 us.
Documents written before `dma_state` show the state whose extra a step
was charged (none for a follow-on without the figure). A staged copy
from pageable memory into a device, which since the thirtieth wave meets
the state after host work too (`staged_after_host_work_us`), is tabled
with its state marked "(staged)", apart in the summary. Exit 2 if a file
is not an fhr-run/1 document (the others are still tabled).
"""
import sys

from prediction_error import LARGE, command_line, load_documents, median, pool

DMA_LINKS = ("pinned-device", "device-pinned")
STAGED_LINK = "pageable-device"


def size_text(nbytes):
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


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
    return f"{step['action'].split()[0]} {link} {size_text(step['bytes'])}{took}"


# The extras' keys in a step's prediction, by the state that charges them.
EXTRAS = (("after-host-work", "after_host_work_us"), ("cold-value", "cold_value_us"),
          ("follow-on", "follow_on_us"))


def state_of(predicted):
    """The state the model says the DMA met (`dma_state`); for documents
    written before it, the state whose extra it charged, else "none"."""
    if predicted.get("dma_state"):
        return predicted["dma_state"]
    return next((state for state, key in EXTRAS if predicted.get(key)), "none")


def rows(units):
    """Every DMA of up to 16 MiB between pinned memory and a device, and
    every staged copy of up to 16 MiB into one, that was predicted and
    measured."""
    for run in units:
        steps = run["steps"]
        for k, step in enumerate(steps):
            predicted, measured = step["predicted"], step["measured"]
            link = step.get("link")
            if link not in DMA_LINKS + (STAGED_LINK,) or step.get("transfer") != "copy" or step["bytes"] > LARGE:
                continue
            if predicted.get("duration_us") is None or measured.get("duration_us") is None:
                continue  # refused, or the run stopped before it
            # Pooled documents: the error over all their runs, the time
            # before the copy the median of each document's median.
            error = measured["duration_us"] - predicted["duration_us"]
            before = measured.get("before_copy_us")
            before_predicted = predicted.get("before_copy_us") or 0.0
            in_copy = error - (before - before_predicted) if before is not None else None
            state = state_of(predicted) + (" (staged)" if link == STAGED_LINK else "")
            charged = sum(predicted.get(key) or 0.0 for _, key in EXTRAS)
            yield {"run": run, "k": k, "step": step, "state": state, "charged": charged, "error": error,
                   "before": before, "before_predicted": before_predicted, "in_copy": in_copy,
                   "previous": previous_step(steps, k)}


def main(paths):
    documents, unreadable = load_documents(paths)
    units, _ = pool(documents)
    print("| file | unit | step | action | state, extra charged (us) | error, us | before the copy, us "
          "(measured / predicted) | error in the copy, us | the last copy before it |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_state = {}
    for row in rows(units):
        run, step = row["run"], row["step"]
        before = row["before"]
        before_text = f"{before:.1f} / {row['before_predicted']:.1f}" if before is not None else "-"
        in_copy_text = f"{row['in_copy']:+.1f}" if row["in_copy"] is not None else "-"
        print(f"| {run['file'].split('/')[-1]} | {run['name']} | {row['k']} | {step['action']} | "
              f"{row['state']}, {row['charged']:.1f} | {row['error']:+.1f} | {before_text} | {in_copy_text} | "
              f"{row['previous']} |")
        by_state.setdefault(row["state"], []).append(row["error"])
    print()
    print("| state | steps | error, us: median (range) | within 5 us |")
    print("|---|---|---|---|")
    for state, errors in by_state.items():
        within = sum(abs(error) <= 5 for error in errors)
        print(f"| {state} | {len(errors)} | {median(errors):+.1f} ({min(errors):+.1f} to {max(errors):+.1f}) | "
              f"{within} |")
    return 2 if unreadable else 0


if __name__ == "__main__":
    command_line(__doc__, main)

#!/usr/bin/env python3
"""Writes most of this machine's free memory once, then frees it.

On a virtual machine whose memory the hypervisor backs only when the guest
first touches it (the H200 machine of docs/benchmarks.md is one), the first
write to each guest page costs an exit to the hypervisor, which maps and
zeroes a page of its own: memory the machine never used is several times
slower to fault in than memory it used and freed. Every fresh block a
calibration or a run makes then costs what that page's history says, not
what the time model's figures (taken on memory already backed) say. A bare
machine has no such history; touching the memory once before calibrating
gives the virtual machine the same.

    touch_host_memory.py [--gib N] [--rounds R] [--workers W]

writes N GiB (default: 85% of MemAvailable) R times (default 2) with W
processes (default: the cores), and prints each round's rate: on such a
machine the first round is the slow one.
"""
import argparse
import mmap
import multiprocessing
import os
import sys
import time

GIB = 1 << 30


def available_bytes():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def write_once(nbytes):
    """Writes one byte of every page of `nbytes` of fresh anonymous memory
    (an extended slice: the loop runs in C), then frees it."""
    page = mmap.PAGESIZE
    nbytes -= nbytes % page
    block = mmap.mmap(-1, nbytes)
    block[::page] = b"\x01" * (nbytes // page)
    block.close()
    return nbytes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args(argv)
    total = int(options.gib * GIB) if options.gib else int(available_bytes() * 0.85)
    workers = max(1, options.workers)
    share = total // workers
    for round_number in range(1, max(1, options.rounds) + 1):
        started = time.monotonic()
        with multiprocessing.Pool(workers) as pool:
            written = sum(pool.map(write_once, [share] * workers))
        seconds = time.monotonic() - started
        print(f"round {round_number}: {written / GIB:.1f} GiB written by {workers} processes "
              f"in {seconds:.2f} s ({written / seconds / 1e9:.1f} GB/s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
machine the first round is the slow one. A worker the kernel kills (out
of memory) ends the script with an error, not a hang.
"""
import argparse
import concurrent.futures
import mmap
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
    """Writes one byte of every page of `nbytes` of fresh private anonymous
    memory (an extended slice: the loop runs in C), then frees it. Returns
    the bytes written: whole pages."""
    page = mmap.PAGESIZE
    nbytes -= nbytes % page
    block = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    block[::page] = b"\x01" * (nbytes // page)
    block.close()
    return nbytes


def positive(kind):
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value
    return parse


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=positive(float), default=None)
    parser.add_argument("--rounds", type=positive(int), default=2)
    parser.add_argument("--workers", type=positive(int), default=os.cpu_count() or 1)
    options = parser.parse_args(argv)
    total = int(options.gib * GIB) if options.gib is not None else int(available_bytes() * 0.85)
    share = total // options.workers
    if share < mmap.PAGESIZE:
        parser.error(f"{total} bytes over {options.workers} workers is less than a page each")
    for round_number in range(1, options.rounds + 1):
        started = time.monotonic()
        with concurrent.futures.ProcessPoolExecutor(options.workers) as pool:
            try:
                written = sum(pool.map(write_once, [share] * options.workers))
            except concurrent.futures.process.BrokenProcessPool:
                print(f"round {round_number}: a worker died (out of memory?); try a smaller --gib",
                      file=sys.stderr)
                return 1
        seconds = time.monotonic() - started
        print(f"round {round_number}: {written / GIB:.1f} GiB written by {options.workers} processes "
              f"in {seconds:.2f} s ({written / seconds / 1e9:.1f} GB/s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

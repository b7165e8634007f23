#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_allocnames.py - whether bpfprof --alloc -a's table of process names
follows the processes when a tenant forks short-lived ones: the names it
keeps at each interval's end, against the processes that came and went.

bpfprof record --alloc -a --interval 1 --output-dir TMP -v runs with the
default --alloc-budget (or --budget N); once its probes are in, a forker
(FORKERS processes forked from this script, FORKS/FORKERS each) starts
FORKS short processes a second for SECONDS, paced by the clock (a forker
that falls behind forks what it owes, so it may end later; the rate
printed is the one reached): each child allocates one 1 MiB block through the C
library (bytes(1 << 20): calloc, sampled at the default 512 KiB period about
6 times in 7 while the probes are in) and exits at once. -v prints at each
interval's end "process names: N kept, ... run-long: G gone, R reused, F not
noted (table full)"; the table counts every process whose allocation was
sampled and that the sweeps have not yet forgotten.

Prints the forks made (and their rate), the names kept at each interval's
end while the forker ran (median, max) and after it, and the run-long
counts.

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_allocnames.py
           [--forks 1200] [--forkers 2] [--seconds 20] [--budget N] [--bpfprof PATH]
Every allocator call of the host traps while the probes are in (the guard
holds it to the budget): run it on a host where that is acceptable.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
sys.path.insert(0, str(ROOT / "tools"))
from benchlib import interrupt  # noqa: E402

NAMES = re.compile(r"process names: (\d+) kept, (\d+) checked \((\d+) start times read\); "
                   r"run-long: (\d+) gone, (\d+) reused, (\d+) not noted")


def forker(rate, seconds, wfd):
    """Forks rate children a second for seconds (paced by the clock); each
    allocates 1 MiB through calloc and exits. Writes the count and the
    seconds taken to wfd."""
    t0 = time.monotonic()
    n = 0
    while True:
        t = time.monotonic() - t0
        if t >= seconds:
            break
        while n < int(t * rate):
            pid = os.fork()
            if pid == 0:
                b = bytes(1 << 20)  # calloc: fresh mmap'd pages, not written
                os._exit(len(b) == 0)
            n += 1
            while True:  # reap what has exited
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        break
                except ChildProcessError:
                    break
        time.sleep(0.001)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    os.write(wfd, f"{n} {time.monotonic() - t0:.3f}\n".encode())
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--forks", type=int, default=1200, help="short processes a second")
    ap.add_argument("--forkers", type=int, default=2, help="processes sharing the forks")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--budget", type=int, help="--alloc-budget (default: bpfprof's)")
    ap.add_argument("--bpfprof", default=str(OUT / "bpfprof"))
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    lines = []
    with tempfile.TemporaryDirectory() as d:
        argv = [a.bpfprof, "record", "--alloc", "-a", "--interval", "1", "--output-dir",
                os.path.join(d, "p"), "-v"]
        if a.budget is not None:
            argv += ["--alloc-budget", str(a.budget)]
        b = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ready = threading.Event()
        marks = {}

        def read():
            for line in b.stderr:
                lines.append((time.monotonic(), line))
                if "profiling allocations of every process" in line:
                    ready.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            if not ready.wait(180):
                raise RuntimeError("the probes never came in: " +
                                   "".join(x for _, x in lines)[-800:])
            time.sleep(2)
            r, w = os.pipe()
            marks["start"] = time.monotonic()
            pids = []
            for _ in range(a.forkers):
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    forker(a.forks / a.forkers, a.seconds, w)
                pids.append(pid)
            os.close(w)
            for pid in pids:
                os.waitpid(pid, 0)
            marks["end"] = time.monotonic()
            counts = [x.split() for x in os.read(r, 4096).decode().splitlines()]
            forks = sum(int(n) for n, _ in counts)
            took = max(float(t) for _, t in counts)
            os.close(r)
            time.sleep(3)
        finally:
            interrupt(b, 60)
            reader.join(timeout=10)
    during, after, last = [], [], None
    for t, line in lines:
        m = NAMES.search(line)
        if not m:
            continue
        last = [int(x) for x in m.groups()]
        if marks["start"] + 1 < t <= marks["end"]:
            during.append(last[0])
        elif t > marks["end"] + 1:
            after.append(last[0])
    if not during or not last:
        raise RuntimeError("no 'process names' line from -v during the forks: " +
                           "".join(x for _, x in lines)[-800:])
    print("    sudo flock /tmp/bpfprof-bench.lock " +
          shlex.join(["tools/bench_allocnames.py"] + sys.argv[1:]))
    print()
    print("| forks (per second) | names kept at an interval's end while forking: "
          "median, max (intervals) | after | run-long: gone, reused, not noted |")
    print("|---|---|---|---|")
    print(f"| {forks:,} in {took:.1f} s ({forks / took:,.0f}/s) | "
          f"{statistics.median(during):g}, {max(during)} ({len(during)}) | "
          f"{', '.join(map(str, after)) or '-'} | {last[3]:,}, {last[4]}, {last[5]} |")


if __name__ == "__main__":
    main()

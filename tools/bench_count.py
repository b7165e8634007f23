#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_count.py - what bpfprof count adds to each call of a probed function.

tests/workloads/countwork bench N calls a tiny function (bp_tiny) N times
and prints its own ns per call. It runs, in turn and for several rounds:

  * unprobed
  * under bpfprof count 'bp_tiny' with session uprobes (the default where
    the kernel has them: 6.13+)
  * under bpfprof count with uprobe_multi entry and return links
    (BPFPROF_TEST_COUNT_NO_SESSION, what 6.6 to 6.12 get)
  * under bpfprof count with perf-event uprobes (BPFPROF_TEST_COUNT_NO_MULTI,
    what older kernels get)
  * under bpftrace timing the same function the usual way: a uprobe and a
    uretprobe, the start time in a map keyed by thread, a histogram and a
    count (issue 40's reference one-liner)
  * --floor: under bpftrace with an empty uprobe and uretprobe: what the
    kernel alone costs, which no tool's programs can go below

--nop5: the function is tiny_nop5 (countwork bench5), whose first
instruction is a 5-byte nop, as in code built with -pg -mfentry -mnop-mcount.
Linux 6.18+ (x86-64) turns a uprobe on such a nop into a call to a
trampoline and a syscall instead of an int3 trap: the kernel's floor drops
and the tools' own programs are most of the cost.

Each tool is attached (its "attached" line) before the workload starts
(countwork wait); the cost per call is the workload's CPU time (user and
system: the probes run in the calling thread, in the kernel) over its calls,
so that other work on the machine taking the CPU away does not count; the
added cost is that minus the unprobed median. --wall: the workload's own
wall-clock ns per call instead. Prints the median and spread of each, and bpfprof's added cost as a
share of bpftrace's. Run it alone: flock /tmp/bpfprof-bench.lock.

    sudo flock /tmp/bpfprof-bench.lock tools/bench_count.py [--calls N] [--rounds R] [--nop5] [--floor]
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
BPFPROF = OUT / "bpfprof"
WORK = OUT / "workloads" / "countwork"

BPFTRACE = ("uprobe:{exe}:{fn} {{ @start[tid] = nsecs; }} "
            "uretprobe:{exe}:{fn} /@start[tid]/ {{ @ns = hist(nsecs - @start[tid]); "
            "@calls = count(); delete(@start[tid]); }}")
BPFTRACE_EMPTY = "uprobe:{exe}:{fn} {{ }} uretprobe:{exe}:{fn} {{ }}"
FN = "bp_tiny"
MODE = "bench"


def run_workload(calls, attach, wall):
    """Starts countwork waiting, attaches a tool (attach(pid) -> Popen, after
    it said it is attached), lets the workload run; its CPU (or wall) ns per
    call."""
    w = subprocess.Popen([str(WORK), "wait", MODE, str(calls)], stdout=subprocess.PIPE,
                         text=True)
    assert json.loads(w.stdout.readline())["waiting"] == w.pid
    tool = attach(w.pid) if attach else None
    w.send_signal(signal.SIGUSR1)
    out = w.stdout.read()
    _, status, ru = os.wait4(w.pid, 0)
    w.returncode = os.waitstatus_to_exitcode(status)
    if tool:
        tool.send_signal(signal.SIGINT)
        tool.communicate(timeout=600)
    if wall:
        return json.loads(out.strip().splitlines()[-1])["ns_per_call"]
    return (ru.ru_utime + ru.ru_stime) * 1e9 / calls


def wait_line(p, what):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stderr.readline() if what != "Attaching" else p.stdout.readline()
        if not line:
            break
        if (what.search(line) if hasattr(what, "search") else what in line):
            return
    p.kill()
    raise SystemExit(f"the tool never said '{what}'")


def bpfprof(env):
    def attach(pid):
        p = subprocess.Popen([str(BPFPROF), "count", "-v", "-p", str(pid), FN,
                              "--budget", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ, **env))
        wait_line(p, re.compile(r" probes?: "))  # "1 function, 1 probe: MODE" too
        return p
    return attach


def bpftrace(script):
    def attach(pid):
        p = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", script.format(exe=WORK, fn=FN)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_line(p, "Attaching")
        time.sleep(0.5)  # bpftrace prints before its probes are all in
        return p
    return attach


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="wall-clock ns per call, not CPU")
    ap.add_argument("--nop5", action="store_true",
                    help="probe tiny_nop5 (a 5-byte nop first: Linux 6.18+ optimizes the uprobe)")
    ap.add_argument("--floor", action="store_true",
                    help="also bpftrace with empty probes (the kernel's own cost)")
    a = ap.parse_args()
    global FN, MODE
    if a.nop5:
        FN, MODE = "tiny_nop5", "bench5"
    tools = {"unprobed": None, "bpfprof session": bpfprof({}),
             "bpfprof multi": bpfprof({"BPFPROF_TEST_COUNT_NO_SESSION": "1"}),
             "bpfprof perf": bpfprof({"BPFPROF_TEST_COUNT_NO_MULTI": "1"}),
             "bpftrace": bpftrace(BPFTRACE)}
    if a.floor:
        tools["bpftrace empty"] = bpftrace(BPFTRACE_EMPTY)
    res = {k: [] for k in tools}
    for r in range(a.rounds):
        for name, attach in tools.items():
            res[name].append(run_workload(a.calls, attach, a.wall))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}" for k, v in res.items()),
              file=sys.stderr)
    base = statistics.median(res["unprobed"])
    print(f"{a.calls} calls of {FN}, {a.rounds} rounds: {'wall' if a.wall else 'CPU'} ns "
          f"per call (median, min-max), and added by the probes")
    added = {}
    for name, v in res.items():
        med = statistics.median(v)
        added[name] = med - base
        print(f"  {name:16s} {med:8.0f}  ({min(v):.0f}-{max(v):.0f})  added {med - base:7.0f}")
    for name in ("bpfprof session", "bpfprof multi", "bpfprof perf") + (
            ("bpftrace empty",) if a.floor else ()):
        if added["bpftrace"] > 0:
            ratios = sorted((x - base) / (y - base) for x, y in zip(res[name], res["bpftrace"]))
            print(f"  {name}: {added[name] / added['bpftrace']:.2f}x bpftrace's added time "
                  f"(per round {ratios[0]:.2f}-{ratios[-1]:.2f})")


if __name__ == "__main__":
    main()

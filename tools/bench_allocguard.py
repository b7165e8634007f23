#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_allocguard.py - what bpfprof --alloc -a costs an allocation-heavy
program beside it, and what its guard (--alloc-budget) holds that to.

Each round runs, in turn (the order rotated each round), tests/workloads/
allocwork storm SECONDS (malloc/free pairs of 16-256 B in a tight loop, as
many as it can; it prints how many: wall-clock ns per pair) alone ("none") and beside bpfprof record
--alloc -a --alloc-budget B --listen PORT -o TMP (for each B of --budgets;
0 is no guard: every allocator call of the host traps, which slows the
whole host's allocations some 100-fold for the run - listed only when
asked). Once the probes are in and /healthz is ok, allocwork runs; /metrics
read before and after it gives, over allocwork's run: the share of time the
probes were in (bpfprof_alloc_probes_on_seconds_total), the allocator calls
trapped per second host-wide (bpfprof_alloc_calls_total, all kinds), the
probes' switches (bpfprof_alloc_guard_toggles_total) and the wall time they
took (bpfprof_alloc_guard_switch_seconds_total, off and on). The host's
own allocator calls (other processes) count among the calls and against
the budget. Medians and min - max over the rounds.

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_allocguard.py
           [--rounds 3] [--seconds 20] [--budgets 100000,20000] [--bpfprof PATH]
Needs make test-deps (build/workloads/allocwork). Prints a Markdown table
(docs/performance.md has the latest).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
sys.path.insert(0, str(ROOT / "tools"))
from benchlib import free_port, http_get, interrupt, med, wait_healthy  # noqa: E402

METRIC = re.compile(r"^(bpfprof_alloc_(?:calls_total|probes_on_seconds_total|"
                    r"guard_toggles_total|guard_switch_seconds_total))(\{[^}]*\})? (\S+)$", re.M)


def metrics(port):
    """{name: summed value} of the guard's metrics, and when they were read."""
    m = {}
    for name, _, v in METRIC.findall(http_get(port, "/metrics")[1].decode()):
        m[name] = m.get(name, 0.0) + float(v)
    return m, time.monotonic()


def allocwork(seconds):
    """Wall-clock ns per malloc/free pair of allocwork storm SECONDS."""
    t0 = time.monotonic()
    r = subprocess.run([str(OUT / "workloads" / "allocwork"), "storm", str(seconds)],
                       capture_output=True, text=True, timeout=seconds + 600)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("{")][-1]
    return took * 1e9 / json.loads(line)["pairs"]


def one_run(a, budget, tmp):
    """(ns per pair, probes-in share, calls trapped/s, toggles, switch s) of one arm."""
    if budget is None:
        return allocwork(a.seconds), None, None, None, None
    port = free_port()
    err = open(tmp / f"b{budget}.err", "w+")
    b = subprocess.Popen([a.bpfprof, "record", "--alloc", "-a", "--alloc-budget", str(budget),
                          "--listen", str(port), "-o", str(tmp / "x.pb.gz")],
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        def probes_in():
            err.seek(0)
            return "profiling allocations of every process" in err.read()
        try:
            wait_healthy(b, port, 180, probes_in)
        except RuntimeError as e:
            err.seek(0)
            raise RuntimeError(f"{e}: {err.read()[-800:]}") from None
        time.sleep(2)  # the guard's first windows
        m0, t0 = metrics(port)
        ns = allocwork(a.seconds)
        m1, t1 = metrics(port)
        dt = t1 - t0

        def d(k):
            return m1.get(k, 0.0) - m0.get(k, 0.0)
        return (ns, 1.0 if budget == 0 else d("bpfprof_alloc_probes_on_seconds_total") / dt,
                d("bpfprof_alloc_calls_total") / dt, d("bpfprof_alloc_guard_toggles_total"),
                d("bpfprof_alloc_guard_switch_seconds_total"))
    finally:
        interrupt(b, 120)
        err.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--budgets", default="100000,20000",
                    help="--alloc-budget values, comma-separated (0: no guard)")
    ap.add_argument("--bpfprof", default=str(OUT / "bpfprof"))
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    arms = [None] + [int(x) for x in a.budgets.split(",") if x]
    res = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for arm in order:
                res[arm].append(one_run(a, arm, Path(d)))
                print(f"round {r + 1} budget {arm}: {res[arm][-1]}", file=sys.stderr)
    print("    sudo flock /tmp/bpfprof-bench.lock " +
          shlex.join(["tools/bench_allocguard.py"] + sys.argv[1:]))
    print()
    print(f"allocwork storm {a.seconds:g}; median (min - max) of {a.rounds} rounds:")
    print()
    print("| run | ns per malloc/free pair | probes in (share of the time) | "
          "calls trapped a second, host-wide | switches of the probes | their wall time (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for arm in arms:
        v = res[arm]
        name = ("no bpfprof" if arm is None else
                f"`-a --alloc-budget {arm}`" + (" (no guard)" if arm == 0 else ""))
        print(f"| {name} | {med([x[0] for x in v], '{:.0f}')} | "
              f"{med([x[1] and x[1] * 100 for x in v], '{:.0f}%')} | "
              f"{med([x[2] for x in v], '{:,.0f}')} | {med([x[3] for x in v], '{:.0f}')} | "
              f"{med([x[4] for x in v], '{:.2f}')} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_agent.py - what always-on profiling costs the host.

Runs a fixed-work throughput workload on every CPU, with a few hundred other
(sleeping) processes on the host, under: no profiler, bpfprof -F 99 -a
--interval 10 --output-dir, bpftrace (the same aggregation), and perf record
-F 99 -a -g. Rounds alternate the order; medians are reported:

  * workload throughput relative to no profiler (loss = overhead on the host)
  * the profiler's own CPU while the workload runs (after a 5 s start-up), as
    a % of one core; its CPU in all (start-up and stop included); peak RSS

Usage: sudo tools/bench_agent.py [--seconds 20] [--rounds 3] [--procs 300]
"""
import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
WL = ROOT / "build" / "workloads"


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def run_profiler(argv, seconds, ncpu):
    """Starts argv (None: no profiler), lets it settle, runs the workload,
    stops argv. Returns (units of work done, profiler CPU seconds during the
    workload (steady state), profiler CPU seconds in all, max RSS KiB)."""
    prof = None
    steady = total = rss = 0.0
    if argv:
        prof = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(5)  # start-up done: attached, kernel symbols and tables read
        t0 = cpu_ticks(prof.pid)
    w = subprocess.run([str(WL / "throughput"), str(seconds), str(ncpu)], capture_output=True,
                       text=True, check=True)
    units = int(w.stdout.strip())
    if prof:
        steady = (cpu_ticks(prof.pid) - t0) / os.sysconf("SC_CLK_TCK")
        prof.send_signal(signal.SIGINT)
        _, status, ru = os.wait4(prof.pid, 0)
        prof.returncode = status
        total = ru.ru_utime + ru.ru_stime
        rss = ru.ru_maxrss
    return units, steady, total, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", type=int, default=300)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_agent: run as root")
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/bpfprof", "build/workloads/throughput"],
                   check=True)
    ncpu = os.cpu_count()
    tmp = Path(tempfile.mkdtemp(prefix="bpfprof-agent-"))
    sleepers = [subprocess.Popen(["sleep", "100000"]) for _ in range(args.procs)]
    configs = {
        "none": None,
        "bpfprof --interval 10": [str(BPFPROF), "-F", "99", "-a", "--interval", "10",
                                  "--output-dir", str(tmp / "store"), "-q"],
        "bpftrace": ["bpftrace", "-e", "profile:hz:99 { @[kstack, ustack, comm] = count(); }"],
        "perf record -g": ["perf", "record", "-e", "cpu-clock", "-F", "99", "-a", "-g", "-q",
                           "-o", str(tmp / "perf.data")],
    }
    res = {k: [] for k in configs}
    try:
        for r in range(args.rounds):
            order = list(configs)
            order = order[r % len(order):] + order[:r % len(order)]
            for name in order:
                res[name].append(run_profiler(configs[name], args.seconds, ncpu))
                print(f"round {r + 1} {name}: {res[name][-1]}", file=sys.stderr)
    finally:
        for s in sleepers:
            s.kill()
            s.wait()
        subprocess.run(["rm", "-rf", str(tmp)])
    base = statistics.median(r[0] for r in res["none"])
    print(f"\n{ncpu} CPUs busy with the throughput workload, {args.procs} other processes, "
          f"{args.seconds:g} s per run, medians of {args.rounds} rounds, "
          f"kernel {os.uname().release}\n")
    print("| profiler | workload throughput | profiler CPU, steady (% of one core) "
          "| profiler CPU incl. start and stop (s) | profiler peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for name, rs in res.items():
        units = statistics.median(r[0] for r in rs)
        if name == "none":
            print(f"| {name} | 100.0% | - | - | - |")
            continue
        steady = statistics.median(r[1] for r in rs)
        total = statistics.median(r[2] for r in rs)
        rss = statistics.median(r[3] for r in rs)
        print(f"| {name} | {100 * units / base:.1f}% | {100 * steady / args.seconds:.2f} | "
              f"{total:.2f} | {rss / 1024:.1f} |")


if __name__ == "__main__":
    main()

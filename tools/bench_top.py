#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_top.py - the CPU `bpfprof top` costs, side by side with `perf top`.

Both watch the whole machine (-a) at 99 Hz with the screen refreshed every
second (perf top -d 1), each in a tmux session of its own (a real terminal,
drawn by ncurses / perf's TUI), at the same time, on the same workload: the
test workloads busy (2 threads), topmix and syscalls keep the CPUs busy in
user and kernel code. perf top runs twice: as it starts by default (leaf
functions only) and with -g (call chains, what bpfprof's "total" column
needs); bpfprof top runs twice too: as it starts by default (user stacks
walked with .eh_frame tables, built for every new process) and with
--unwind fp (frame pointers, as perf top -g). Each round measures the processes' own CPU (utime + stime from
/proc/PID/stat) over a window after a warm-up; the figure is CPU time as a
percentage of one CPU.

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_top.py [--rounds 5] [--seconds 30]
Prints a Markdown table (the README has the latest).
"""
import argparse
import os
import shlex
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
BPFPROF = OUT / "bpfprof"
WL = OUT / "workloads"
TICK = os.sysconf("SC_CLK_TCK")
SOCKET = "bpfprof-bench"

TOOLS = {
    "bpfprof top": [str(BPFPROF), "top", "-a", "-F", "99"],
    "bpfprof top --unwind fp": [str(BPFPROF), "top", "-a", "-F", "99", "--unwind", "fp"],
    "perf top": ["perf", "top", "-a", "-F", "99", "-d", "1"],
    "perf top -g": ["perf", "top", "-a", "-F", "99", "-d", "1", "-g"],
}


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET] + [str(a) for a in args], capture_output=True,
                          text=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def pid_in(session):
    """The tool's pid: the process the session's pane runs."""
    out = tmux("list-panes", "-t", session, "-F", "#{pane_pid}").stdout.split()
    assert out, f"no pane in {session}"
    return int(out[0])


def start_workloads(seconds):
    procs = [subprocess.Popen([str(WL / "busy"), str(seconds), "2"], stdout=subprocess.DEVNULL),
             subprocess.Popen([str(WL / "topmix"), str(seconds)], stdout=subprocess.DEVNULL),
             subprocess.Popen([str(WL / "syscalls"), str(seconds)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    return procs


def one_round(seconds, warmup):
    sessions = {}
    for i, (name, argv) in enumerate(TOOLS.items()):
        s = f"bench{i}"
        tmux("kill-session", "-t", s)
        # exec: the pane's process is the tool itself.
        r = tmux("new-session", "-d", "-s", s, "-x", 160, "-y", 45,
                 "exec " + " ".join(shlex.quote(a) for a in argv))
        assert r.returncode == 0, r.stderr
        sessions[name] = s
    time.sleep(warmup)
    pids = {name: pid_in(s) for name, s in sessions.items()}
    before = {name: cpu_ticks(pid) for name, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    after = {name: cpu_ticks(pid) for name, pid in pids.items()}
    wall = time.monotonic() - t0
    screens = {name: tmux("capture-pane", "-p", "-t", s).stdout for name, s in sessions.items()}
    for s in sessions.values():
        tmux("send-keys", "-t", s, "q")
    time.sleep(1)
    for s in sessions.values():
        tmux("kill-session", "-t", s)
    return {n: 100.0 * (after[n] - before[n]) / TICK / wall for n in pids}, screens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=5)
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    results = []
    wls = start_workloads(int(a.rounds * (a.seconds + a.warmup + 3) + 10))
    try:
        for r in range(a.rounds):
            cpu, screens = one_round(a.seconds, a.warmup)
            results.append(cpu)
            print(f"round {r + 1}: " + ", ".join(f"{n} {v:.2f}%" for n, v in cpu.items()),
                  flush=True)
            if r == 0:
                for n, text in screens.items():
                    head = "\n".join(text.splitlines()[:6])
                    print(f"--- {n} (first lines of its screen)\n{head}")
    finally:
        for p in wls:
            p.kill()
            p.wait()
        tmux("kill-server")

    names = list(TOOLS)
    print()
    print(f"{a.rounds} rounds of {a.seconds:.0f} s (after {a.warmup:.0f} s of warm-up), -a at "
          f"99 Hz on {os.cpu_count()} CPUs, screen refreshed every second:")
    print()
    print("| tool | CPU % of one CPU, median | min – max | bpfprof top (default) / this, median (min – max) |")
    print("|---|---|---|---|")
    for n in names:
        v = [r[n] for r in results]
        ratios = [r["bpfprof top"] / r[n] if r[n] else float("nan") for r in results]
        ratio = "" if n.startswith("bpfprof") else \
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f} – {max(ratios):.3f})"
        print(f"| {n} | {statistics.median(v):.2f} | {min(v):.2f} – {max(v):.2f} | {ratio} |")


if __name__ == "__main__":
    main()

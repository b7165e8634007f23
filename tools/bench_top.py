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

CPU is measured in nanoseconds where the kernel offers it: each tool runs in
a cpuacct cgroup of its own (cgroup v1 cpuacct.usage, or cgroup v2 cpu.stat
usage_usec), its threads and children included; otherwise utime + stime from
/proc/PID/stat, whose resolution is one clock tick (10 ms).

--floor adds tools/tuifloor, a program that only sleeps a second and
redraws ~1.5 KB of its terminal, again and again: the least any
once-a-second live view costs on this machine (under a hypervisor, waking
up after a second asleep can cost hundreds of microseconds). The table then
also gives bpfprof top's CPU above that floor against perf top's.

--churn N adds process churn, as a busy container host has: benchlib's
churn(), a shell loop that starts about N short processes a second (a shell
counting for ~10 ms, ls, and every fifth time a python3 -c), each new
program image one that both tools see for the first time at its first
sample.

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_top.py [--rounds 5] [--seconds 30]
       [--churn N] [--floor] [--only NAME,...]
Prints a Markdown table (docs/performance.md has the latest).
"""
import argparse
import contextlib
import os
import shlex
import statistics
import subprocess
import time
from pathlib import Path

from benchlib import churn

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
FLOOR = "floor (tools/tuifloor)"


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET] + [str(a) for a in args], capture_output=True,
                          text=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Meter:
    """CPU seconds of one tool: its own cgroup (ns), else its /proc/PID/stat (ticks)."""
    V1 = Path("/sys/fs/cgroup/cpuacct")
    V2 = Path("/sys/fs/cgroup/unified")

    def __init__(self, name, pid):
        self.pid, self.cg = pid, None
        tag = "bpfprof-bench-" + "".join(c if c.isalnum() else "-" for c in name)
        for root, procs in ((self.V1, "cgroup.procs"), (self.V2, "cgroup.procs")):
            if not (root / procs).exists():
                continue
            cg = root / tag
            try:
                cg.mkdir(exist_ok=True)
                (cg / "cgroup.procs").write_text(str(pid))
            except OSError:
                continue
            self.cg = cg
            break

    def seconds(self):
        if self.cg is None:
            return cpu_ticks(self.pid) / TICK
        if (self.cg / "cpuacct.usage").exists():
            return int((self.cg / "cpuacct.usage").read_text()) / 1e9
        for line in (self.cg / "cpu.stat").read_text().splitlines():
            k, v = line.split()
            if k == "usage_usec":
                return int(v) / 1e6
        raise RuntimeError(f"no usage in {self.cg}")

    def kind(self):
        return "tick" if self.cg is None else "cgroup"

    def close(self):
        if self.cg is None:
            return
        parent = self.cg.parent / "cgroup.procs"
        for _ in range(50):
            try:
                for p in (self.cg / "cgroup.procs").read_text().split():
                    try:
                        parent.write_text(p)
                    except OSError:
                        pass
                self.cg.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def pid_in(session):
    """The tool's pid: the process the session's pane runs."""
    out = tmux("list-panes", "-t", session, "-F", "#{pane_pid}").stdout.split()
    assert out, f"no pane in {session}"
    return int(out[0])


def start_workloads(seconds):
    return [subprocess.Popen([str(WL / "busy"), str(seconds), "2"], stdout=subprocess.DEVNULL),
            subprocess.Popen([str(WL / "topmix"), str(seconds)], stdout=subprocess.DEVNULL),
            subprocess.Popen([str(WL / "syscalls"), str(seconds)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)]


def one_round(tools, seconds, warmup):
    sessions = {}
    for i, (name, argv) in enumerate(tools.items()):
        s = f"bench{i}"
        tmux("kill-session", "-t", s)
        # exec: the pane's process is the tool itself.
        r = tmux("new-session", "-d", "-s", s, "-x", 160, "-y", 45,
                 "exec " + " ".join(shlex.quote(a) for a in argv))
        assert r.returncode == 0, r.stderr
        sessions[name] = s
    time.sleep(warmup)
    pids = {name: pid_in(s) for name, s in sessions.items()}
    meters = {name: Meter(name, pid) for name, pid in pids.items()}
    try:
        time.sleep(1)  # moved in: from now on every tick of theirs is in the cgroup
        before = {name: m.seconds() for name, m in meters.items()}
        t0 = time.monotonic()
        time.sleep(seconds)
        after = {name: m.seconds() for name, m in meters.items()}
        wall = time.monotonic() - t0
    finally:
        kinds = {m.kind() for m in meters.values()}
        for m in meters.values():
            m.close()
    screens = {name: tmux("capture-pane", "-p", "-t", s).stdout for name, s in sessions.items()}
    for s in sessions.values():
        tmux("send-keys", "-t", s, "q")
    time.sleep(1)
    for s in sessions.values():
        tmux("kill-session", "-t", s)
    return {n: 100.0 * (after[n] - before[n]) / wall for n in pids}, screens, kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--churn", type=float, default=0,
                    help="also start about this many short processes a second")
    ap.add_argument("--baseline", default="",
                    help="another bpfprof binary, run as \"bpfprof top @baseline\" too")
    ap.add_argument("--floor", action="store_true",
                    help="also run tools/tuifloor: a 1 Hz terminal view that does nothing else")
    ap.add_argument("--only", default="",
                    help="comma-separated tool names (default: all four)")
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    tools = TOOLS if not a.only else {n: TOOLS[n] for n in a.only.split(",")}
    if a.baseline:
        tools = dict(tools)
        tools["bpfprof top @baseline"] = [a.baseline] + TOOLS["bpfprof top"][1:]
    if a.floor:
        floor = OUT / "tools" / "tuifloor"
        assert floor.exists(), f"no {floor}: make {floor}"
        tools = dict(tools)
        tools[FLOOR] = [str(floor)]
    assert "bpfprof top" in tools, "the ratios are of bpfprof top"
    results = []
    kinds = set()
    wls = start_workloads(int(a.rounds * (a.seconds + a.warmup + 5) + 10))
    busy = contextlib.ExitStack()
    try:
        if a.churn:
            # ~2.2 processes an iteration; the iteration itself takes ~25 ms.
            busy.enter_context(churn(pause=max(0.0, 2.2 / a.churn - 0.025), spin=2000))
        for r in range(a.rounds):
            cpu, screens, k = one_round(tools, a.seconds, a.warmup)
            kinds |= k
            results.append(cpu)
            print(f"round {r + 1}: " + ", ".join(f"{n} {v:.3f}%" for n, v in cpu.items()),
                  flush=True)
            if r == 0:
                for n, text in screens.items():
                    head = "\n".join(text.splitlines()[:6])
                    print(f"--- {n} (first lines of its screen)\n{head}")
    finally:
        busy.close()
        for p in wls:
            p.kill()
            p.wait()
        tmux("kill-server")

    names = list(tools)
    print()
    print(f"{a.rounds} rounds of {a.seconds:.0f} s (after {a.warmup:.0f} s of warm-up), -a at "
          f"99 Hz on {os.cpu_count()} CPUs, screen refreshed every second, "
          f"{'churn ~%g processes/s' % a.churn if a.churn else 'no churn'}, "
          f"CPU from {'/'.join(sorted(kinds))}:")
    print()
    print("| tool | CPU % of one CPU, median | min – max | bpfprof top (default) / this, median (min – max) |")
    print("|---|---|---|---|")
    for n in names:
        v = [r[n] for r in results]
        ratios = [r["bpfprof top"] / r[n] if r[n] else float("nan") for r in results]
        ratio = "" if n == "bpfprof top" else \
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f} – {max(ratios):.3f})"
        print(f"| {n} | {statistics.median(v):.3f} | {min(v):.3f} – {max(v):.3f} | {ratio} |")
    if FLOOR in names:
        print()
        print("Above the floor (each tool's CPU less tuifloor's in the same round), per round:")
        for other in (n for n in names if n not in ("bpfprof top", FLOOR)):
            ratios = [(r["bpfprof top"] - r[FLOOR]) / (r[other] - r[FLOOR]) for r in results
                      if r[other] > r[FLOOR]]
            if ratios:
                print(f"- bpfprof top / {other}: {statistics.median(ratios):.3f} "
                      f"({min(ratios):.3f} – {max(ratios):.3f})")


if __name__ == "__main__":
    main()

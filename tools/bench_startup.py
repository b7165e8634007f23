#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_startup.py - how long bpfprof takes from exec to sampling, and its
peak and steady memory in continuous mode, on a busy machine.

Each round starts `bpfprof -F 99 -a --interval 5 --output-dir DIR` while
three workloads keep every CPU busy (a CPU-bound one, a syscall-heavy one
and a throughput one) and --procs idle processes sit on the host, and
measures:

  * exec to sampling: from just before exec() to the "sampling ..." line on
    its stderr (printed once the program is attached);
  * steady RSS: VmRSS after --run seconds (past one interval written);
  * peak RSS at sampling start: VmHWM when the "sampling" line comes, so
    start-up alone (BPF load, kernel ORC table, kernel symbols so far);
  * peak RSS: the kernel's high-water mark for the whole run (wait4), which
    adds what the symbolizer holds for the host's processes.

With --command, bpfprof also runs a command (`-a ... -- sh -c ...`, profiled
for as long as it runs, as perf does) and the time from exec to the
command's first line is measured too: the command waits for start-up.

With --compare OTHER_BPFPROF, this build and another one alternate, round by
round, on the same machine state (judge a change with it); the medians and
per-round ranges of both are printed side by side. --idle leaves out the
workloads. Run under `flock /tmp/bpfprof-bench.lock` on a shared machine.

Usage: sudo tools/bench_startup.py [--rounds 7] [--run 7] [--procs 200] [--idle]
       [--compare OTHER_BPFPROF] [--args '...'] [--command]
"""
import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import kill_groups

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
WL = ROOT / "build" / "workloads"


def start_load(procs, idle):
    """The busy workloads and the idle processes; returns their Popen objects."""
    out = []
    if not idle:
        for name in ("busy", "syscalls", "throughput"):
            exe = WL / name
            if not exe.exists():
                raise SystemExit(f"bench_startup: {exe} is missing: run make test-deps")
            out.append(subprocess.Popen([str(exe), "100000"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True))
    for _ in range(procs):
        out.append(subprocess.Popen(["sleep", "100000"], start_new_session=True))
    time.sleep(1)
    return out


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


CMD_MARK = "bench-startup-command-runs"


def one_round(bpfprof, run_s, extra, tmp, command):
    """(exec to sampling s, steady RSS MiB, peak RSS MiB, start-up peak MiB,
    exec to the command's start s or None) of one run."""
    d = tempfile.mkdtemp(dir=tmp)
    argv = [str(bpfprof), "-F", "99", "-a", "--interval", "5", "--output-dir", d] + extra
    if command:
        argv += ["--", "sh", "-c", f"echo {CMD_MARK} >&2; exec sleep 100000"]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t_sampling = t_cmd = None
    seen = []
    while True:
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if CMD_MARK in line:
            t_cmd = time.monotonic() - t0
        elif "sampling" in line and t_sampling is None:
            t_sampling = time.monotonic() - t0
            start_peak = vm_kib(p.pid, "VmHWM") / 1024  # before the first drain
        if t_sampling is not None and (t_cmd is not None or not command):
            break
    if t_sampling is None or (command and t_cmd is None):
        p.kill()
        p.wait()
        raise SystemExit(f"bench_startup: {bpfprof} never started sampling:\n{''.join(seen)}")
    time.sleep(run_s)
    steady = vm_kib(p.pid, "VmRSS") / 1024
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = status
    p.stderr.read()
    shutil.rmtree(d, ignore_errors=True)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise SystemExit(f"bench_startup: {bpfprof} failed ({status})")
    return t_sampling, steady, ru.ru_maxrss / 1024, start_peak, t_cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--run", type=float, default=7, help="seconds of sampling per round")
    ap.add_argument("--procs", type=int, default=200, help="idle processes on the host")
    ap.add_argument("--idle", action="store_true", help="no busy workloads")
    ap.add_argument("--compare", metavar="OTHER_BPFPROF")
    ap.add_argument("--args", default="", help="more bpfprof arguments")
    ap.add_argument("--command", action="store_true",
                    help="also run a command and time its start")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_startup: run as root")
    builds = [BPFPROF] + ([Path(a.compare)] if a.compare else [])
    extra = shlex.split(a.args)
    tmp = tempfile.mkdtemp(prefix="bpfprof-startup-")
    load = start_load(a.procs, a.idle)
    nproc = sum(1 for d in os.listdir("/proc") if d.isdigit())
    res = {b: [] for b in builds}
    try:
        for r in range(a.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for b in order:
                res[b].append(one_round(b, a.run, extra, tmp, a.command))
    finally:
        kill_groups(load)
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print(f"\n{time.strftime('%Y-%m-%d')}, {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{'idle' if a.idle else 'busy (3 workloads)'}, {nproc} processes on the host, "
          f"{a.rounds} rounds, "
          f"-F 99 -a --interval 5 {a.args}{' -- COMMAND' if a.command else ''}\n")
    print("| build | exec → sampling, median (range) | peak RSS at sampling start MiB | "
          "steady RSS MiB | peak RSS MiB, median (range) |")
    print("|---|---:|---:|---:|---:|")
    for b in builds:
        st = [x[0] for x in res[b]]
        rs = [x[1] for x in res[b]]
        pk = [x[2] for x in res[b]]
        sp = [x[3] for x in res[b]]
        print(f"| {b} | {med(st):.3f} s ({min(st):.3f}-{max(st):.3f}) | "
              f"{med(sp):.1f} ({min(sp):.1f}-{max(sp):.1f}) | "
              f"{med(rs):.1f} ({min(rs):.1f}-{max(rs):.1f}) | "
              f"{med(pk):.1f} ({min(pk):.1f}-{max(pk):.1f}) |")
    if a.command:
        print("\n| build | exec → command runs, median (range) |\n|---|---:|")
        for b in builds:
            ct = [x[4] for x in res[b]]
            print(f"| {b} | {med(ct):.3f} s ({min(ct):.3f}-{max(ct):.3f}) |")
    print("\nper round, exec → sampling (s): " + "; ".join(
        f"{b.parent.parent.name}: " + " ".join(f"{x[0]:.3f}" for x in res[b]) for b in builds))
    if a.command:
        print("per round, exec → command runs (s): " + "; ".join(
            f"{b.parent.parent.name}: " + " ".join(f"{x[4]:.3f}" for x in res[b])
            for b in builds))
    for b in builds:
        print(f"per round, {b.parent.parent.name}: peak RSS MiB " +
              " ".join(f"{x[2]:.1f}" for x in res[b]) + "; steady RSS MiB " +
              " ".join(f"{x[1]:.1f}" for x in res[b]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

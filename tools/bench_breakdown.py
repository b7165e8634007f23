#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_breakdown.py - where one sample's time goes inside bpfprof's BPF program.

Builds a second bpfprof under build/timing/ with -DBPFPROF_TIMING (the program
then adds the time of each of its parts into a "timing" array map; the normal
build has none of it), runs it with -a in both --unwind modes at the same time
(at 99 and 97 Hz, swapped every round) on the same workload as
tools/bench_overhead.py (a CPU-bound and a syscall-heavy process on every
CPU), and prints the average per sample of:

  identity   pid, process start time and exec count, comm
  kstack     the kernel stack (the ORC walk, else bpf_get_stack; none in user mode)
  ustack     the user stack (unwind tables or frame pointers, in the program);
             in brackets the part spent finding the process's tables, and
             the frames per sample
  hot        aggregation when the key is already counted in this drain
  new        aggregation for a new key (notice check, stacks stored, key inserted)

The clock reads themselves add ~30 ns each, so the parts add up to a little
more than bench_overhead.py's "BPF ns/sample" for the same run.

Usage: sudo tools/bench_breakdown.py [--seconds 10] [--rounds 3]
"""
import argparse
import json
import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "timing"
WL = ROOT / "build" / "workloads"
PARTS = ["samples", "identity", "kstack", "ustack", "hot", "hot_n", "new", "new_n", "uproc",
         "uframes", "uw_hit", "uw_hit_n", "uw_miss", "uw_miss_n", "uw_rest"]


def timing_maps():
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True)
    return {m["id"] for m in json.loads(out.stdout or "[]") if m.get("name") == "timing"}


def read_map(map_id):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)],
                         capture_output=True, text=True, check=True)
    num = lambda x: int.from_bytes(bytes(int(b, 16) for b in x), "little") \
        if isinstance(x, list) else x  # no BTF: hex byte strings
    vals = {}
    for e in json.loads(out.stdout):
        if "formatted" in e:
            e = e["formatted"]
        v = num(e["value"]) if "value" in e else sum(num(x["value"]) for x in e["values"])
        vals[num(e["key"])] = v
    return [vals.get(i, 0) for i in range(len(PARTS))]


def start(mode, freq):
    """Starts the timing build; returns (process, its timing map id)."""
    before = timing_maps()
    p = subprocess.Popen([str(OUT / "bpfprof"), "-F", str(freq), "-a", "-q", "--unwind", mode,
                          "-o", "/dev/null"])
    t0 = time.monotonic()
    new = set()
    while not new and time.monotonic() - t0 < 15:
        time.sleep(0.1)
        new = timing_maps() - before
    if not new:
        p.kill()
        raise SystemExit("bench_breakdown: the timing build did not start")
    return p, max(new)


def one_round(modes, seconds, swap):
    """Both modes at once over one window, at 99 and 97 Hz (swapped every
    round): the VM's slow spells hit both alike, and the two timers' phase
    turns so neither always runs just after the other on warm caches."""
    freqs = [97, 99] if swap else [99, 97]
    runs = []
    try:
        for mode, f in zip(modes, freqs):
            runs.append(start(mode, f))
        time.sleep(1.0)  # past start-up: first tables, first notices
        a = [read_map(m) for _, m in runs]
        time.sleep(seconds)
        b = [read_map(m) for _, m in runs]
    finally:
        for p, _ in runs:
            p.send_signal(signal.SIGINT)
        for p, _ in runs:
            p.wait()
    return {mode: [y - x for x, y in zip(xa, xb)] for mode, xa, xb in zip(modes, a, b)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_breakdown: run as root")
    subprocess.run(["make", "-s", "-C", str(ROOT), f"OUT={OUT}",
                    "BPF_EXTRA_CFLAGS=-DBPFPROF_TIMING", f"{OUT}/bpfprof"], check=True)
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/workloads/busy",
                    "build/workloads/syscalls"], check=True)
    ncpu = os.cpu_count()
    wls = [subprocess.Popen([str(WL / "busy"), "100000", str(max(1, ncpu - 1))],
                            stdout=subprocess.DEVNULL),
           subprocess.Popen([str(WL / "syscalls"), "100000"])]
    sums = {"auto": [0] * len(PARTS), "fp": [0] * len(PARTS)}
    try:
        time.sleep(0.5)
        for i in range(args.rounds):
            for mode, d in one_round(list(sums), args.seconds, i % 2).items():
                sums[mode] = [x + y for x, y in zip(sums[mode], d)]
    finally:
        for w in wls:
            w.kill()
            w.wait()

    print(f"\n-F 99/97 -a, {args.seconds:g} s x {args.rounds} rounds, both modes at once, busy + syscalls "
          f"on {ncpu} CPUs, kernel {os.uname().release}; ns per sample\n")
    print("| --unwind | samples | identity | kstack | ustack (process lookup; frames) | "
          "hot key (share) | new key (share) | sum |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, v in sums.items():
        s = dict(zip(PARTS, v))
        n = max(s["samples"], 1)
        hot = s["hot"] / max(s["hot_n"], 1)
        new = s["new"] / max(s["new_n"], 1)
        total = (s["identity"] + s["kstack"] + s["ustack"] + s["hot"] + s["new"]) / n
        print(f"| {mode} | {s['samples']} | {s['identity'] / n:.0f} | {s['kstack'] / n:.0f} "
              f"| {s['ustack'] / n:.0f} ({s['uproc'] / n:.0f}; {s['uframes'] / n:.1f}) | {hot:.0f} ({100 * s['hot_n'] / n:.0f}%) "
              f"| {new:.0f} ({100 * s['new_n'] / n:.0f}%) | {total:.0f} |")
    s = dict(zip(PARTS, sums["auto"]))
    hn, mn = max(s["uw_hit_n"], 1), max(s["uw_miss_n"], 1)
    print(f"\nauto, per user frame looked up in the row cache: hit {s['uw_hit'] / hn:.0f} ns "
          f"({s['uw_hit_n']}), miss and search {s['uw_miss'] / mn:.0f} ns ({s['uw_miss_n']}); "
          f"the step after the row: {s['uw_rest'] / max(hn + mn, 1):.0f} ns")


if __name__ == "__main__":
    main()

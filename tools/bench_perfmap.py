#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tools/bench_perfmap.py - what a hostile JIT perf map costs the agent.

One or two processes (build/workloads/jitlike in its "huge" mode) write
/tmp/perf-PID.map with 1.8M entries of 120-character names (~232 MB) around
their real code and run it; 4 s into sampling they switch to a second
function whose entry is the map's first line. For each bpfprof binary given
(default build/bpfprof) and each round, it runs

    bpfprof -v -p PID -d 8            (one process)
    bpfprof -v -a -d 12               (two processes)

and reports peak RSS (wait4), seconds sampled, end of sampling to written
profile, CPU time, and how many samples of the two functions were named.
Run it as root, under the benchmark lock:

    sudo flock /tmp/bpfprof-bench.lock tools/bench_perfmap.py --rounds 3 \\
        --bpfprof old/build/bpfprof --bpfprof build/bpfprof
"""
import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_jit(jitlike, secs=120):
    proc = subprocess.Popen([jitlike, str(secs), "huge"], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline().split()[0])
    return proc, pid


def folded_counts(path, comm):
    named = unnamed = 0
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = [f for f in stack.split(";") if not f.endswith("_[k]")]
        if frames[0] != comm or "run_jit" not in frames or frames[-1] == "run_jit":
            continue
        if frames[-1].startswith("jit_hot_loop"):
            named += int(n)
        else:
            unnamed += int(n)
    return named, unnamed


def one(bpfprof, jitlike, nproc, tmp):
    jits = [start_jit(jitlike) for _ in range(nproc)]
    out = Path(tmp) / "out.folded"
    args = ["-p", str(jits[0][1]), "-d", "8"] if nproc == 1 else ["-a", "-d", "12"]
    try:
        proc = subprocess.Popen([bpfprof, "-v", "-o", str(out)] + args, stderr=subprocess.PIPE,
                                text=True)
        err = ""
        while "sampling" not in err:
            line = proc.stderr.readline()
            if not line:
                break
            err += line
        time.sleep(4)
        for p, _ in jits:
            p.send_signal(signal.SIGUSR1)
        err += proc.stderr.read()
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        for p, pid in jits:
            p.kill()
            p.wait()
            try:
                os.unlink(f"/tmp/perf-{pid}.map")
            except FileNotFoundError:
                pass
    tail = re.search(r"end of sampling to written profile: ([0-9.]+) ms", err)
    secs = re.search(r"\d+ samples? in ([0-9.]+) s", err)
    named, unnamed = folded_counts(out, Path(jitlike).name[:15])
    return {
        "rss_mb": ru.ru_maxrss / 1024,
        "sampled_s": float(secs.group(1)) if secs else float("nan"),
        "tail_s": float(tail.group(1)) / 1000 if tail else float("nan"),
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "named": named,
        "unnamed": unnamed,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bpfprof", action="append", help="binary to measure (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    bins = a.bpfprof or [str(ROOT / "build/bpfprof")]
    jitlike = str(ROOT / "build/workloads/jitlike")
    with tempfile.TemporaryDirectory() as tmp:
        # A copy with a name of its own, so -a counts only these processes.
        exe = Path(tmp) / "hugejit"
        exe.write_bytes(Path(jitlike).read_bytes())
        exe.chmod(0o755)
        print("| binary | case | peak RSS (MB) | sampled (s) | end to profile (s) | CPU (s) "
              "| JIT samples named / unnamed |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for b in bins:
            for nproc in (1, 2):
                rows = [one(b, str(exe), nproc, tmp) for _ in range(a.rounds)]

                def span(k, fmt="{:.1f}"):
                    v = [r[k] for r in rows]
                    return fmt.format(min(v)) + "-" + fmt.format(max(v))
                case = "-p, one 232 MB map, -d 8" if nproc == 1 else "-a, two 232 MB maps, -d 12"
                print(f"| `{b}` | {case} | {span('rss_mb', '{:.0f}')} | {span('sampled_s')} | "
                      f"{span('tail_s', '{:.2f}')} | {span('cpu_s')} | "
                      f"{sum(r['named'] for r in rows)} / {sum(r['unnamed'] for r in rows)} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

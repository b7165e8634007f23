#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tools/bench_python.py - what walking Python frames costs.

1. BPF ns per sample of Debian's python3.11 with a 20-frame Python stack
   (two processes, one per CPU, -p at 99 Hz), with Python frames walked
   (the default) and with --no-python (native frames only), in alternating
   rounds so drifting load from other jobs hits both alike; per-round ratios.
2. The agent with 50 Python processes on the host (-a, 30 s): its CPU time,
   peak RSS, and RSS at the end, while every process keeps making new code
   objects (the code-object cache must stay bounded).

    sudo flock /tmp/bpfprof-bench.lock tools/bench_python.py [--rounds 5] [--seconds 10]
        [--baseline OLD_BPFPROF]

With --baseline, each round also runs that binary (Python frames walked)
on the same processes, and a column gives this build's cost over its.

Needs root, kernel.bpf_stats_enabled (set for the run, restored after).
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
PY = "/usr/bin/python3.11"

DEEP = """
import sys, time
def hot(n):
    s = 0
    for i in range(n):
        s += i * 7
    return s
def level(d):
    return level(d - 1) if d > 1 else hot(5000)
until = time.time() + float(sys.argv[1])
while time.time() < until:
    level(19)   # <module> + 18 levels + hot: 20 Python frames
"""

CHURN = """
import sys, time
until = time.time() + float(sys.argv[1])
i = 0
def level(d, f):
    return level(d - 1, f) if d > 1 else f(3000)
while time.time() < until:
    # Mostly asleep, like a service; every round new code objects.
    src = "def f_%d(n):\\n    s = 0\\n    for j in range(n):\\n        s += j\\n    return s\\n" % i
    ns = {}
    exec(compile(src, "gen%d.py" % i, "exec"), ns)
    for _ in range(3):
        level(10, ns["f_%d" % i])
    i += 1
    time.sleep(0.02)
"""


def py_depth(folded):
    depths = []
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        if n.isdigit():
            depths += [stack.count("_[py]")] * int(n)
    return statistics.median(depths) if depths else 0


def bpf_cost(tmp, rounds, seconds, baseline=None):
    script = tmp / "deep.py"
    script.write_text(DEEP)
    procs = [subprocess.Popen(["taskset", "-c", str(c), PY, str(script), "100000"])
             for c in range(min(2, os.cpu_count()))]
    time.sleep(1)
    pids = ",".join(str(p.pid) for p in procs)
    runs = {"python": [], "native": [], "baseline": []}
    kinds = [("python", BPFPROF, []), ("native", BPFPROF, ["--no-python"])]
    if baseline:
        kinds.append(("baseline", baseline, []))
    try:
        for i in range(rounds):
            # Each order in turn: drifting load hits every kind alike.
            for label, binary, extra in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
                argv = [str(binary), "-F", "99", "-U", "-q", "-p", pids] + extra
                r = measure(label, argv, seconds, ["do_sample"])
                r["depth"] = py_depth(r["output"])
                runs[label].append(r)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print("\nBPF cost per sample, python3.11 with a 20-frame Python stack (2 processes, -p, "
          f"{seconds} s per round, {rounds} rounds)\n")
    base_cols = " --baseline: ns/sample | this/baseline |" if baseline else ""
    print("| round | Python frames walked: ns/sample | --no-python: ns/sample | ratio |"
          f" Python frames per stack |{base_cols}")
    print("|---:|---:|---:|---:|---:|" + ("---:|---:|" if baseline else ""))
    ratios, vs_base = [], []
    for i, (a, b) in enumerate(zip(runs["python"], runs["native"]), 1):
        ratio = a["bpf_ns_per_sample"] / b["bpf_ns_per_sample"]
        ratios.append(ratio)
        extra = ""
        if baseline:
            c = runs["baseline"][i - 1]["bpf_ns_per_sample"]
            vs_base.append(a["bpf_ns_per_sample"] / c)
            extra = f" {c:.0f} | {vs_base[-1]:.2f} |"
        print(f"| {i} | {a['bpf_ns_per_sample']:.0f} | {b['bpf_ns_per_sample']:.0f} | "
              f"{ratio:.2f} | {a['depth']:.0f} |{extra}")
    med_a = statistics.median(r["bpf_ns_per_sample"] for r in runs["python"])
    med_b = statistics.median(r["bpf_ns_per_sample"] for r in runs["native"])
    extra = ""
    if baseline:
        med_c = statistics.median(r["bpf_ns_per_sample"] for r in runs["baseline"])
        extra = (f" {med_c:.0f} | {statistics.median(vs_base):.2f} "
                 f"(range {min(vs_base):.2f}-{max(vs_base):.2f}) |")
    print(f"| median | {med_a:.0f} | {med_b:.0f} | {statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}) | |{extra}")


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def agent_50(tmp, seconds):
    script = tmp / "churn.py"
    script.write_text(CHURN)
    procs = [subprocess.Popen([PY, str(script), str(seconds + 30)]) for _ in range(50)]
    time.sleep(3)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        prof = subprocess.Popen([str(BPFPROF), "-a", "-U", "-v", "-d", str(seconds), "-o",
                                 str(tmp / "out.folded")], stderr=subprocess.PIPE, text=True)
        samples = []
        t0 = time.monotonic()
        while prof.poll() is None:
            time.sleep(1)
            if prof.poll() is None:
                samples.append((time.monotonic() - t0, rss_kb(prof.pid)))
        err = prof.stderr.read()
        # The only child waited for since `before`: the profiler's CPU alone.
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru.ru_utime + ru.ru_stime - before.ru_utime - before.ru_stime
        maxrss = max(r for _, r in samples) if samples else 0
    finally:
        for p in procs:
            p.kill()
            p.wait()
    named = re.search(r"(\d+) Python frames named, (\d+) not", err)
    walked = re.search(r"\((\d+) Python walked", err)
    folded = (tmp / "out.folded").read_text()
    py_stacks = sum(int(l.rpartition(" ")[2]) for l in folded.splitlines() if "_[py]" in l)
    print(f"\nAgent with 50 Python processes making new code objects (-a, {seconds} s)\n")
    print(f"- agent CPU: {cpu:.2f} s ({100 * cpu / seconds:.1f}% of one CPU); peak RSS "
          f"{maxrss} KiB")
    print(f"- processes walked: {walked.group(1) if walked else '?'}; Python frames named "
          f"{named.group(1) if named else '?'}, not named {named.group(2) if named else '?'}; "
          f"samples with Python frames: {py_stacks}")
    quarter = max(1, len(samples) // 4)
    print("- RSS (KiB) at " + ", ".join(f"{t:.0f} s: {r}" for t, r in samples[quarter - 1::quarter]))
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--agent-seconds", type=float, default=30)
    ap.add_argument("--baseline", help="another bpfprof binary to compare the walk's cost with")
    ap.add_argument("--no-agent", action="store_true", help="only the per-sample cost")
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("bench_python.py: needs root")
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = stats.read_text().strip()
    stats.write_text("1")
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            bpf_cost(tmp, args.rounds, args.seconds, args.baseline)
            if not args.no_agent:
                agent_50(tmp, args.agent_seconds)
    finally:
        stats.write_text(old)


if __name__ == "__main__":
    main()

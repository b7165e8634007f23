#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_offcpu.py - what off-CPU profiling costs a context-switch-heavy workload.

Two threads pass a byte back and forth through two pipes as fast as they can
(tests/workloads/waits SECONDS pingpong: every round trip is two waits in
read(), a few hundred thousand context switches a second here). Both run on
CPU 0 and the profilers' own processes on CPU 1: every wait is then a direct
switch between the two threads (no cross-CPU wake-ups, whose cost in a VM
depends on where the scheduler happens to put the threads and swamps what is
measured), so what a profiler adds to a switch is what the throughput loses.
A thread napping 5 ms at a time (waits many 1) keeps CPU 1 from idling for
long in every configuration: on this VM an idle second vCPU halves the
ping-pong's throughput on the first (a 100 Hz timer on CPU 1 doubles it), so
without it any profiler that wakes CPU 1 looked like a speed-up.
Its throughput is
measured with no profiler, then under each profiler, in rotating order each
round; medians are reported, and per round the cost (1 - throughput /
throughput without a profiler) of each, and the ratio of bpfprof --off-cpu's
cost to the equivalent bpftrace program's in the same round:

  bpfprof -F 99 -a                         on-CPU sampling only
  bpfprof -F 99 -a --off-cpu               + waits of at least 1 ms (the default)
  bpfprof -F 99 -a --off-cpu --off-cpu-min 0   + every wait
  bpftrace, min 1 ms / every wait          tracepoint:sched:sched_switch; kernel
                                           and user stacks when a task blocks,
                                           the time when it runs again, summed
                                           per (stacks, comm): what perf's and
                                           bcc's off-CPU tools do

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_offcpu.py [--seconds 10] [--rounds 5]
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
WAITS = ROOT / "build" / "workloads" / "waits"

# Stacks at the block (prev is the current task), time at the return; blocked
# only (prev_state 0 is runnable, 0x100 is how the tracepoint reports a
# preemption), idle excluded, as bpfprof does.
BPFTRACE = """
tracepoint:sched:sched_switch
{
	if (args->prev_pid != 0 && args->prev_state != 0 && args->prev_state != 0x100) {
		@ts[args->prev_pid] = nsecs;
		@ks[args->prev_pid] = kstack;
		@us[args->prev_pid] = ustack;
	}
	$t = @ts[args->next_pid];
	if ($t) {
		if (nsecs - $t >= MIN_NS) {
			@[@ks[args->next_pid], @us[args->next_pid], args->next_comm] = sum(nsecs - $t);
		}
		delete(@ts[args->next_pid]);
		delete(@ks[args->next_pid]);
		delete(@us[args->next_pid]);
	}
}
END { clear(@ts); clear(@ks); clear(@us); }
"""


def start(argv):
    """Starts a profiler (on CPU 1) and waits until it is attached."""
    if not argv:
        return None
    argv = ["taskset", "-c", "1"] + argv
    # bpfprof says "sampling ..." on stderr, bpftrace "Attaching ..." on stdout.
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if "sampling" in line or "Attaching" in line:
            time.sleep(1)  # past start-up work (tables, symbols)
            return p
    p.kill()
    raise SystemExit(f"{argv[0]} did not start:\n" + "".join(seen))


def stop(p):
    if not p:
        return
    p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def pingpong(seconds):
    out = subprocess.run(["taskset", "-c", "0", str(WAITS), str(seconds), "pingpong"],
                         capture_output=True, text=True,
                         check=True, timeout=seconds + 60).stdout
    m = re.search(r"trips (\d+) (\d+)/s", out)
    assert m, out
    return int(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_offcpu: run as root")
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/bpfprof", "build/workloads/waits"],
                   check=True)
    bp = [str(BPFPROF), "-F", "99", "-a", "-o", "/dev/null"]
    configs = [
        ("none", None),
        ("bpfprof -a", bp),
        ("bpfprof -a --off-cpu", bp + ["--off-cpu"]),
        ("bpfprof -a --off-cpu --off-cpu-min 0", bp + ["--off-cpu", "--off-cpu-min", "0"]),
        ("bpftrace off-CPU, min 1 ms", ["bpftrace", "-e", BPFTRACE.replace("MIN_NS", "1000000")]),
        ("bpftrace off-CPU, every wait", ["bpftrace", "-e", BPFTRACE.replace("MIN_NS", "0")]),
    ]
    tput = {name: [] for name, _ in configs}
    ticker = subprocess.Popen(["taskset", "-c", "1", str(WAITS), "100000", "many", "1"],
                              stdout=subprocess.DEVNULL)
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for name, argv in order:
            p = start(argv)
            try:
                tput[name].append(pingpong(args.seconds))
            finally:
                stop(p)
            print(f"round {r + 1}: {name}: {tput[name][-1]} round trips/s", file=sys.stderr)
    ticker.kill()
    ticker.wait()
    base = tput["none"]

    def costs(name):
        return [1 - t / b for t, b in zip(tput[name], base)]

    print(f"\npipe ping-pong, {args.seconds:g} s x {args.rounds} rounds "
          f"(median round trips/s without a profiler: {statistics.median(base):,.0f})\n")
    def added_ns(name):
        """What a round trip (two waits) took longer than without a profiler."""
        return [1e9 / t - 1e9 / b for t, b in zip(tput[name], base)]

    print("| profiler | round trips/s (median) | cost (median of per-round) | "
          "ns added per round trip (median) | per-round costs |")
    print("|---|---:|---:|---:|---|")
    for name, _ in configs:
        c = costs(name)
        print(f"| {name} | {statistics.median(tput[name]):,.0f} | "
              f"{100 * statistics.median(c):.1f}% | {statistics.median(added_ns(name)):,.0f} | "
              f"{' / '.join(f'{100 * x:.1f}%' for x in c)} |")
    print()
    for mine, theirs in (("bpfprof -a --off-cpu", "bpftrace off-CPU, min 1 ms"),
                         ("bpfprof -a --off-cpu --off-cpu-min 0", "bpftrace off-CPU, every wait")):
        ratios = [a / b if b > 0 else float("nan") for a, b in zip(costs(mine), costs(theirs))]
        print(f"{mine} / {theirs}: cost ratio median {statistics.median(ratios):.2f} "
              f"(per round: {' / '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()

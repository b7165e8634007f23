#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_heapserve.py - what clients hammering Go's heap endpoint cost the
agent: bpfprof --alloc --listen serving /debug/pprof/heap (no seconds: the
run-long allocations and the blocks in use now) to clients that ask again
as soon as they have their answer.

Per round and per build: tests/workloads/allocwork steady RATE (malloc/free
pairs of 4 KiB a second, and HOLD blocks a second kept: the live table
grows) under bpfprof --alloc=PERIOD -p PID --listen PORT; once /healthz says
ok and WARMUP seconds have passed, SECONDS with no client ("idle"), then SECONDS
with CLIENTS threads each fetching /debug/pprof/heap back to back, a new
connection per request ("hammered"); then the sampled blocks in use
(/metrics' bpfprof_alloc_live_blocks) and the last answer's size. What a
build of the profile costs grows with the blocks in use: the default
PERIOD of 4 KiB and HOLD of 1,000 blocks a second make it some 10,000 -
30,000 blocks. bpfprof's CPU is utime + stime of its
process (every thread) from /proc/PID/stat over each phase, in CPU seconds
per second; the answers are counted (status 200, a gzip body). --baseline
OLD runs another build the same way, the two alternating round by round
(the order swapped each round). Medians and min - max over the rounds.

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_heapserve.py
           [--rounds 3] [--seconds 10] [--clients 4] [--rate 1000] [--hold 1000]
           [--period 4096] [--warmup 10] [--bpfprof PATH] [--baseline OLD/build/bpfprof]
Needs make test-deps (build/workloads/allocwork). Prints a Markdown table
(docs/continuous.md has the latest).
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
sys.path.insert(0, str(ROOT / "tools"))
from benchlib import cpu_s, free_port, http_get, med, wait_healthy  # noqa: E402


def hammer(port, stop, counts, sizes, i):
    while not stop.is_set():
        try:
            status, body = http_get(port, "/debug/pprof/heap")
            if status == 200 and body[:2] == b"\x1f\x8b":
                counts[i] += 1
                sizes[i] = len(body)
        except OSError:
            time.sleep(0.01)


def live_blocks(port):
    for line in http_get(port, "/metrics")[1].decode().splitlines():
        if line.startswith("bpfprof_alloc_live_blocks "):
            return int(float(line.split()[1]))
    return -1


def one_run(bpfprof, a, err):
    """(idle CPU s/s, hammered CPU s/s, answers/s, live blocks, answer bytes) of one build."""
    port = free_port()
    w = subprocess.Popen([str(OUT / "workloads" / "allocwork"), "steady", str(a.rate),
                          str(int(a.warmup + 2 * a.seconds + 60)), str(a.hold)],
                         stdout=subprocess.DEVNULL)
    b = subprocess.Popen([str(bpfprof), f"--alloc={a.period}", "-p", str(w.pid), "--listen", str(port)],
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_healthy(b, port, 60)
        time.sleep(a.warmup)
        c0, t0 = cpu_s(b.pid), time.monotonic()
        time.sleep(a.seconds)
        c1, t1 = cpu_s(b.pid), time.monotonic()
        idle = (c1 - c0) / (t1 - t0)
        stop = threading.Event()
        counts, sizes = [0] * a.clients, [0] * a.clients
        threads = [threading.Thread(target=hammer, args=(port, stop, counts, sizes, i),
                                    daemon=True)
                   for i in range(a.clients)]
        for t in threads:
            t.start()
        c0, t0 = cpu_s(b.pid), time.monotonic()
        time.sleep(a.seconds)
        c1, t1 = cpu_s(b.pid), time.monotonic()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        return idle, (c1 - c0) / (t1 - t0), sum(counts) / (t1 - t0), live_blocks(port), max(sizes)
    finally:
        for p in (b, w):
            if p.poll() is None:
                p.send_signal(signal.SIGINT if p is b else signal.SIGTERM)
        for p in (b, w):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rate", type=int, default=1000, help="malloc/free pairs a second")
    ap.add_argument("--hold", type=int, default=1000, help="4 KiB blocks kept a second")
    ap.add_argument("--period", type=int, default=4096, help="--alloc's mean sampling period")
    ap.add_argument("--warmup", type=float, default=10, help="seconds before the idle phase")
    ap.add_argument("--bpfprof", default=str(OUT / "bpfprof"))
    ap.add_argument("--baseline", help="another build, run the same way, alternating")
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    builds = [("this build", a.bpfprof)]
    if a.baseline:
        builds.append(("baseline", a.baseline))
    res = {name: [] for name, _ in builds}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for name, path in order:
                with open(Path(d) / f"{name}.{r}.err", "w") as err:
                    res[name].append(one_run(path, a, err))
                print(f"round {r + 1} {name}: idle {res[name][-1][0]:.3f}, hammered "
                      f"{res[name][-1][1]:.3f} s/s, {res[name][-1][2]:.0f} answers/s",
                      file=sys.stderr)
    print("    sudo flock /tmp/bpfprof-bench.lock " +
          shlex.join(["tools/bench_heapserve.py"] + sys.argv[1:]))
    print()
    print(f"allocwork steady {a.rate} (4 KiB pairs a second, {a.hold} blocks a second kept) "
          f"under bpfprof --alloc={a.period} -p PID --listen; {a.clients} clients fetching "
          f"/debug/pprof/heap back to back; bpfprof's CPU, s per s, median (min - max) of "
          f"{a.rounds} rounds of {a.seconds:g} s:")
    print()
    print("| build | no client | hammered | answers/s | sampled blocks in use | answer bytes |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, path in builds:
        v = res[name]
        print(f"| {name} (`{path}`) | {med([x[0] for x in v], '{:.3f}')} | "
              f"{med([x[1] for x in v], '{:.3f}')} | {med([x[2] for x in v], '{:.0f}')} | "
              f"{med([x[3] for x in v], '{:.0f}')} | {med([x[4] for x in v], '{:.0f}')} |")


if __name__ == "__main__":
    main()

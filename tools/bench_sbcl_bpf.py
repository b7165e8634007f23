#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_sbcl_bpf.py - what bpfprof --alloc's BPF program costs per fire on
SBCL, split: tests/workloads/lispbench.lisp SHAPE (default list) for SECONDS
under bpfprof --alloc=PERIOD -p PID for each PERIOD given (a huge one, 1G:
almost no sample, the program's path for a region closed alone; the default
512K; a small one), and under an empty bpftrace uprobe on gc_close_region
(the BPF floor). Prints each run's fires (BPF stats' run_cnt), ns per fire
(run_time_ns / run_cnt) and the loop's ops per CPU second. One run each:
noisy on a busy host, run it twice.

    sudo flock /tmp/bpfprof-bench.lock tools/bench_sbcl_bpf.py [--shape list]
        [--seconds 3] [--bpfprof build/bpfprof] [PERIOD...]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_alloc as B  # noqa: E402  (its BPF stats and workload helpers)


def one(argv, attach):
    w = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    pid = json.loads(w.stdout.readline())["waiting"]
    tool = attach(pid)
    try:
        w.send_signal(signal.SIGUSR1)
        out = w.stdout.read()
        w.wait()
        st = B.prog_stats(tool.pid)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        tool.send_signal(signal.SIGINT)
        tool.communicate(timeout=60)
    return st, B.last_json(out, "ops_per_sec")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("periods", nargs="*", default=["1G", "512K", "64K"])
    ap.add_argument("--shape", default="list")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--bpfprof", default=str(B.OUT / "bpfprof"))
    a = ap.parse_args()
    exe = shutil.which("sbcl")
    if not exe:
        sys.exit("no sbcl (apt-get install sbcl)")
    argv = [exe, "--script", str(B.LISPBENCH), a.shape, str(a.seconds), "wait"]
    fd = B.bpf_stats()
    if fd is None:
        sys.exit("BPF stats refused (BPF_ENABLE_STATS)")
    print(f"`sudo flock /tmp/bpfprof-bench.lock tools/bench_sbcl_bpf.py --shape {a.shape} "
          f"--seconds {a.seconds} {' '.join(a.periods)}`\n")
    print("| probe | fires | BPF ns per fire | ops per CPU second |")
    print("|---|---:|---:|---:|")
    try:
        for period in a.periods:
            def attach(pid, period=period):
                p = subprocess.Popen([a.bpfprof, f"--alloc={period}", "-v", "-p", str(pid), "-o",
                                      os.devnull], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
                B.wait_stream(p.stderr, "profiling allocations of", p, "bpfprof -p")
                return p
            st, j = one(argv, attach)
            print(f"| bpfprof --alloc={period} | {st[0]} | {st[1] / st[0]:.0f} | "
                  f"{j['ops_per_cpu_sec']:.0f} |")
        if shutil.which("bpftrace"):
            def attach_bt(pid):
                p = subprocess.Popen(["bpftrace", "-e", f"uprobe:{os.path.realpath(exe)}:"
                                      "gc_close_region { }"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
                B.wait_stream(p.stdout, "Attaching", p, "bpftrace")
                time.sleep(0.5)
                return p
            st, j = one(argv, attach_bt)
            print(f"| empty bpftrace uprobe | {st[0]} | {st[1] / st[0]:.0f} | "
                  f"{j['ops_per_cpu_sec']:.0f} |")
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()

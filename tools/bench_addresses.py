#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_addresses.py - what keeping leaf addresses (record --addresses)
costs: distinct keys and memory in the kernel, samples in the profile, pprof
bytes, and the agent's peak RSS.

Two bpfprof record runs sample the whole machine at the same time, one with
--addresses and one without, for the same seconds, on the same workload
mix (busy with 2 threads, topmix, syscalls, cxxwork, plus whatever else
runs), each writing a gzip pprof. From each: the kernel's distinct keys
(samples that stored a new key, from -v), the kernel map memory (the map
sizes are the same options: identical), the profile's samples (distinct
process + stack + leaf address), locations, and the file's bytes; peak RSS
from wait4().

Usage: sudo flock /tmp/bpfprof-bench.lock tools/bench_addresses.py [--rounds 5] [--seconds 30]
Prints a Markdown table (docs/performance.md has the latest).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
BPFPROF = OUT / "bpfprof"
WL = OUT / "workloads"
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import pprof  # noqa: E402  (the tests' independent decoder)


def run_pair(seconds, tmp):
    procs = {}
    for mode in ("plain", "addresses"):
        out = tmp / f"{mode}.pb.gz"
        args = [str(BPFPROF), "-a", "-F", "99", "-d", str(seconds), "-v", "-o", str(out)]
        if mode == "addresses":
            args.append("--addresses")
        procs[mode] = (subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True), out)
    res = {}
    for mode, (p, out) in procs.items():
        stderr = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        assert p.returncode == 0, stderr
        keys = re.search(r"(\d+) samples stored a new key", stderr)
        samples = re.search(r"(\d+) samples? in", stderr)
        prof = pprof.decode(out.read_bytes())
        res[mode] = {
            "kernel samples": int(samples.group(1)),
            "kernel new keys": int(keys.group(1)) if keys else 0,
            "profile samples": len(prof["sample"]),
            "locations": len(prof["location"]),
            "pprof bytes": out.stat().st_size,
            "peak RSS KiB": ru.ru_maxrss,
        }
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=30)
    a = ap.parse_args()
    assert os.geteuid() == 0, "needs root"
    total = a.rounds * (a.seconds + 5) + 10
    wls = [subprocess.Popen([str(WL / "busy"), str(total), "2"], stdout=subprocess.DEVNULL),
           subprocess.Popen([str(WL / "topmix"), str(total)], stdout=subprocess.DEVNULL),
           subprocess.Popen([str(WL / "cxxwork"), str(total)], stdout=subprocess.DEVNULL),
           subprocess.Popen([str(WL / "syscalls"), str(total)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)]
    rounds = []
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                res = run_pair(a.seconds, Path(d))
                rounds.append(res)
                print(f"round {r + 1}: {res}", flush=True)
    finally:
        for p in wls:
            p.kill()
            p.wait()
    print()
    print(f"{a.rounds} rounds, two bpfprof -a -F 99 -d {a.seconds} runs side by side, "
          f"{os.cpu_count()} CPUs:")
    print()
    print("| per run | without | with --addresses | with / without, median (min – max) |")
    print("|---|---|---|---|")
    for k in rounds[0]["plain"]:
        plain = [r["plain"][k] for r in rounds]
        addr = [r["addresses"][k] for r in rounds]
        ratios = [x / y if y else float("nan") for x, y in zip(addr, plain)]
        print(f"| {k} | {statistics.median(plain):,.0f} | {statistics.median(addr):,.0f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f} – {max(ratios):.2f}) |")


if __name__ == "__main__":
    main()

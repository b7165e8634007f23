#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_unwind.py - what complete user stacks cost: --unwind auto vs fp vs bpftrace
vs perf --call-graph=dwarf, table build time and size, kernel memory for a host.

1. Per-sample cost, on Debian binaries built without frame pointers (xz -9e and
   python3 busy on the two CPUs), then on a frame-pointer build (busy, 2
   threads) where frame pointers give complete stacks too. For each profiler
   in turn, -a at -F 99: BPF ns per sample (kernel.bpf_stats_enabled),
   the profiler's CPU time, output bytes per sample, and the share of
   samples whose stack reaches __libc_start_call_main (libc6-dbg names it).
   perf has no BPF program: its cost is its own CPU time (record + script)
   per sample, plus the 8 KiB stack copy per sample it makes in the kernel.
2. Table build time (best of 5) and size for libc, python3 and friends.
3. Kernel memory with 200 idle processes of 10 different programs, all
   profiled with -p (their tables are installed before sampling starts).

Usage: sudo tools/bench_unwind.py [--seconds 10] [--rounds 3] [--skip-host]
Prints Markdown (docs/performance.md has the latest numbers).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import kill_groups

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from bench_overhead import measure  # noqa: E402
from perfcmp import Bottom  # noqa: E402

BPFPROF = ROOT / "build" / "bpfprof"
WL = ROOT / "build" / "workloads"

PY_WORK = """
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
while True:
    fib(18)
    sorted(str(i) for i in range(2000))
"""


def make_xz_input(tmp):
    path = tmp / "xz.in"
    with open(path, "wb") as out:
        for lib in sorted(Path("/usr/lib/x86_64-linux-gnu").glob("*.so*")):
            if out.tell() > 60 << 20:
                break
            if lib.is_file() and not lib.is_symlink():
                out.write(lib.read_bytes())
    return path


def start_debian_workloads(tmp):
    xz_in = make_xz_input(tmp)
    script = tmp / "work.py"
    script.write_text(PY_WORK)
    # Own sessions: kill_groups() ends each workload's whole process group by its id.
    return [subprocess.Popen(["sh", "-c", f"while :; do xz -9e -T1 -c {xz_in} >/dev/null; done"],
                             start_new_session=True),
            subprocess.Popen(["/usr/bin/python3", str(script)], start_new_session=True)]


# Samples and reach are counted for the workloads' own processes only: -a also
# samples whatever else runs (the benchmark's helpers, other users' jobs).

def folded_stats(text, bottom, comms):
    n = reach = 0
    for line in text.splitlines():
        stack, _, c = line.rpartition(" ")
        if c.isdigit() and stack.split(";")[0] in comms:
            n += int(c)
            if bottom.reaches(stack):
                reach += int(c)
    return n, reach


def bpftrace_stats(text, comms):
    """@[kstack, ustack, comm]: N - frames one per line, the key closed by ", comm]: N"."""
    n = reach = 0
    cur = []
    for line in text.splitlines():
        m = re.match(r"^\s*,?\s*(.*)\]: (\d+)$", line)
        if m and not line.startswith(" " * 8):
            c = int(m.group(2))
            if m.group(1).strip(", ") in comms:
                n += c
                if any("__libc_start_call_main" in f for f in cur):
                    reach += c
            cur = []
        else:
            cur.append(line)
    return n, reach


def perf_stats(text, comms):
    n = reach = total = 0
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        total += 1
        if lines[0].split()[0] in comms:
            n += 1
            reach += "__libc_start_call_main" in block
    return n, reach, total


def cost_table(title, seconds, freq, tmp, bottom, comms, rounds, with_perf=True):
    rows = []
    runs = [
        ("bpfprof --unwind fp", [str(BPFPROF), "-F", str(freq), "-a", "-q", "--unwind", "fp"],
         ["do_sample"], None),
        ("bpfprof --unwind auto", [str(BPFPROF), "-F", str(freq), "-a", "-q", "--unwind", "auto"],
         ["do_sample"], None),
        ("bpftrace (ustack, kstack)",
         ["bpftrace", "-e", f"profile:hz:{freq} {{ @[kstack, ustack, comm] = count(); }}"],
         # bpftrace 0.17 names the program after the probe's last part ("99")
         ["profile_hz", "profile", str(freq)], None),
    ]
    if with_perf:
        data = tmp / "perf.data"
        runs.append(("perf record --call-graph=dwarf + perf script",
                     ["perf", "record", "-e", "cpu-clock", "-F", str(freq), "-a",
                      "--call-graph=dwarf", "-q", "-o", str(data)], [],
                     # to a file: measure() keeps only the tail of what it captures
                     ["sh", "-c", f"perf script -i {data} --no-inline -F comm,ip,sym,dso "
                                  f"> {tmp / 'perf.txt'}"]))
    # Rounds alternate the profilers, so drifting load from other jobs on the
    # machine hits them alike; the table shows medians.
    results = {label: [] for label, _, _, _ in runs}
    for _ in range(rounds):
        for label, argv, progs, post in runs:
            r = measure(label, argv, seconds, progs, post_argv=post)
            if label.startswith("bpfprof"):
                n, reach = folded_stats(r["output"], bottom, comms)
            elif label.startswith("bpftrace"):
                n, reach = bpftrace_stats(r["output"], comms)
            else:
                n, reach, r["bpf_runs"] = perf_stats(
                    (tmp / "perf.txt").read_text(errors="replace"), comms)
                r["bytes"] = data.stat().st_size if data.exists() else 0
            r["n"], r["reach"] = n, reach
            results[label].append(r)
    for label, rs in results.items():
        r = dict(rs[0])
        ns = [x["bpf_ns_per_sample"] for x in rs if x["bpf_ns_per_sample"]]
        r["bpf_ns_per_sample"] = statistics.median(ns) if ns else None
        r["cpu_s"] = statistics.median(x["cpu_s"] for x in rs)
        r["bpf_runs"] = statistics.median((x.get("bpf_runs") or x["n"]) for x in rs)
        r["n"] = statistics.median(x["n"] for x in rs)
        r["reach"] = statistics.median(x["reach"] / max(x["n"], 1) for x in rs) * r["n"]
        if "bytes" in r:
            r["bytes"] = statistics.median(x["bytes"] for x in rs)
        rows.append(r)
    print(f"\n{title}\n")
    print("| profiler | BPF ns/sample | profiler CPU s | CPU µs/sample | perf.data bytes/sample "
          f"| samples of {'/'.join(sorted(comms))} | reaching `__libc_start_call_main` |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ns = f"{r['bpf_ns_per_sample']:.0f}" if r["bpf_ns_per_sample"] else "-"
        n = max(r["n"], 1)
        runs_all = max(r.get("bpf_runs") or n, n)
        per = f"{r['cpu_s'] * 1e6 / runs_all:.0f}"
        bps = f"{r['bytes'] / runs_all:.0f}" if "bytes" in r else "-"
        print(f"| {r['label']} | {ns} | {r['cpu_s']:.2f} | {per} | {bps} | {r['n']:.0f} | "
              f"{100 * r['reach'] / n:.1f}% |")
    return rows


def table_sizes():
    files = ["/lib/x86_64-linux-gnu/libc.so.6", os.path.realpath("/usr/bin/python3"),
             "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", "/usr/lib/x86_64-linux-gnu/liblzma.so.5",
             "/usr/bin/xz", "/usr/bin/sqlite3", "/lib/x86_64-linux-gnu/libstdc++.so.6"]
    files = [f for f in files if os.path.exists(f)]
    tool = ROOT / "build" / "uwtable"
    out = subprocess.run([str(tool), "-n", "5"] + files, capture_output=True, text=True,
                         check=True).stdout
    base = subprocess.run(["/usr/bin/time", "-f", "%M", str(tool), "/usr/bin/true"],
                          capture_output=True, text=True).stderr.strip().splitlines()[-1]
    print("\nTable build (best of 5) and size: rows are 8 bytes, page index entries 8 bytes "
          "per 4 KiB of text; userspace keeps only segment info once a table is uploaded.\n")
    print("| file | text KiB | rows | build ms | kernel KiB | build peak RSS KiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for line in out.splitlines()[1:]:
        f = line.split()
        rss = subprocess.run(["/usr/bin/time", "-f", "%M", str(tool), f[0]], capture_output=True,
                             text=True).stderr.strip().splitlines()[-1]
        text_kib = int(f[2]) * 4
        extra = int(rss) - int(base)
        print(f"| {os.path.basename(f[0])} | {text_kib} | {f[1]} | {f[3]} | {f[5]} | "
              f"{extra if extra >= 100 else '< 100'} |")


def map_ids():
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True).stdout
    return {m["id"]: m for m in json.loads(out or "[]")}


def host_memory(seconds, tmp):
    kinds = [
        ["sleep", "600"],
        ["tail", "-f", "/dev/null"],
        ["cat"],
        ["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"],
        ["sqlite3"],
        ["xz", "-c"],
        ["perl", "-e", "<STDIN>"],
        ["bash", "-c", "read x"],
        ["sh", "-c", "read x"],
        ["gzip", "-c"],
    ]
    procs = []
    try:
        for i in range(200):
            procs.append(subprocess.Popen(kinds[i % len(kinds)], stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)
        pids = [str(p.pid) for p in procs if p.poll() is None]
        before = map_ids()
        prof = subprocess.Popen([str(BPFPROF), "-p", ",".join(pids), "-d", str(seconds), "-v"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(min(3, seconds / 2))
        new = {k: v for k, v in map_ids().items() if k not in before}
        _, err = prof.communicate()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    unwind = sum(m.get("bytes_memlock", 0) for m in new.values()
                 if m.get("name", "").startswith(("uw_chunk", "unwind_")))
    total = sum(m.get("bytes_memlock", 0) for m in new.values())
    m = re.search(r"unwind: (\d+) tables \((\d+) rows\) in ([0-9.]+) MiB of kernel memory "
                  r"\(([0-9.]+) MiB used\), built in ([0-9.]+) ms", err)
    print(f"\nHost with {len(pids)} processes of {len(kinds)} programs (-p, idle), "
          "kernel memory (bpftool bytes_memlock):\n")
    if m:
        print(f"- {m.group(1)} distinct tables, {m.group(2)} rows, built in {m.group(5)} ms")
        print(f"- slot pool: {m.group(3)} MiB allocated, {m.group(4)} MiB used")
    print(f"- unwinder maps (chunks, process entries, walker state): {unwind / 1048576:.1f} MiB")
    print(f"- all of bpfprof's maps: {total / 1048576:.1f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds; medians shown")
    ap.add_argument("--skip-host", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_unwind: run as root")
    for tool in ("bpftrace", "perf", "bpftool", "xz", "sqlite3"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            raise SystemExit(f"bench_unwind: {tool} is missing (tools/install-deps.sh)")
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/bpfprof", "build/uwtable",
                    "build/workloads/busy"], check=True)
    bottom = Bottom()
    old = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    tmp = Path(tempfile.mkdtemp(prefix="bpfprof-bench-"))
    print(f"Kernel {os.uname().release}, {os.cpu_count()} CPUs, -F {args.freq}, "
          f"{args.seconds:g} s per profiler, median of {args.rounds} round(s)")
    try:
        wl = start_debian_workloads(tmp)
        try:
            time.sleep(1)
            cost_table("Debian binaries without frame pointers (xz -9e, python3):",
                       args.seconds, args.freq, tmp, bottom, {"xz", "python3"}, args.rounds)
        finally:
            kill_groups(wl)
        wl = [subprocess.Popen([str(WL / "busy"), "100000"], stdout=subprocess.DEVNULL,
                               start_new_session=True) for _ in range(2)]
        try:
            time.sleep(1)
            cost_table("Frame-pointer build (2 x busy, clang -fno-omit-frame-pointer "
                       "-mno-omit-leaf-frame-pointer):",
                       args.seconds, args.freq, tmp, bottom, {"busy"}, args.rounds,
                       with_perf=False)
        finally:
            kill_groups(wl)
        table_sizes()
        if not args.skip_host:
            host_memory(max(4, args.seconds / 2), tmp)
    finally:
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(old)
        subprocess.run(["rm", "-rf", str(tmp)])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_symbolize.py - how fast bpfprof turns a whole-machine profile into
names, side by side with perf's pipeline, and whether its memory stays flat
while processes come and go.

1. A workload mix runs on every CPU: copies of the test workloads under
   different names (each its own file), a PIE with a shared library, a C++
   program, a JIT (node --perf-basic-prof), python3, perl, sh and xz loops.
2. End of sampling to finished output, for the same -a window:
     bpfprof -a -d S -o x.folded   (its -v line: drain + symbolize + write)
     perf record -a -g -F 99 -d S  (record's own wrap-up after sampling)
       + perf script               (cold, then warm: a second run)
       + perf report --stdio
   and frames per second (frames in the output / time).
3. tools/symbench (build/tools/symbench): every process on the machine,
   every executable mapping, cold (new symbolizer: kallsyms, maps, ELF and
   debug files) and warm (the same frames again); wall and CPU time (the mix
   still runs, so wall time includes waiting for a CPU).
4. Memory (--churn SECONDS): bpfprof -a runs while short-lived processes
   (copies of one binary, and shells) are started and exit continuously; its
   RSS is sampled every few seconds.

5. --compare OTHER_BPFPROF: this build and another one (e.g. the commit
   before a change, built in a git worktree) side by side instead: both
   `-a -d S -v` on the same window of the mix while short-lived processes
   come and go, --rounds times; end of sampling to output, peak RSS and CPU
   time of each, medians and the per-round spread.

Usage: sudo tools/bench_symbolize.py [--seconds 10] [--churn 60]
       sudo tools/bench_symbolize.py --compare /tmp/old/build/bpfprof [--rounds 5]
Prints Markdown tables (docs/performance.md has the latest ones).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import kill_groups

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
BPFPROF = OUT / "bpfprof"
WL = OUT / "workloads"
SYMBENCH = OUT / "tools" / "symbench"


def start_mix(tmp, seconds):
    """Starts the workload mix; returns the Popen objects."""
    procs = []
    longer = str(seconds * 6 + 60)

    def spawn(argv, **kw):
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True, **kw))

    for i, name in enumerate(["busy", "syscalls", "cxxwork", "mtexit", "busy", "syscalls"]):
        exe = tmp / f"mix{i}_{name}"
        shutil.copy(WL / name, exe)
        spawn([str(exe), longer])
    shutil.copy(WL / "pieapp", tmp / "pieapp")
    shutil.copy(WL / "libwl.so", tmp / "libwl.so")
    spawn([str(tmp / "pieapp"), longer])
    node = shutil.which("node") or shutil.which("nodejs")
    if node:
        js = tmp / "mix.js"
        js.write_text("function f(n){let s=0;for(let i=0;i<n;i++)s=(s+i*7)%1000003;return s}\n"
                      f"const e=Date.now()+{longer}*1000;let t=0;"
                      "while(Date.now()<e){t+=f(1e5);}\n")
        spawn([node, "--perf-basic-prof", str(js)], cwd=tmp)  # V8 logs to its cwd
    spawn([sys.executable, "-c", "import json,zlib\nwhile True:\n"
           " zlib.compress(json.dumps(list(range(20000))).encode())"])
    if shutil.which("perl"):
        spawn(["perl", "-e", "my %h; while (1) { $h{$_} = sqrt($_) for 1..20000; %h = (); }"])
    spawn(["sh", "-c", "while :; do ls /usr/lib > /dev/null; done"])
    data = tmp / "xz.in"
    data.write_bytes(os.urandom(1 << 20) * 4)
    spawn(["sh", "-c", f"while :; do xz -1 -T1 -c {data} > /dev/null; done"])
    time.sleep(2)  # let everything start (and V8 compile)
    return procs


def stop_mix(procs):
    kill_groups(procs)
    for p in procs:
        Path(f"/tmp/perf-{p.pid}.map").unlink(missing_ok=True)


def timed(argv, **kw):
    t0 = time.monotonic()
    p = subprocess.run(argv, **kw)
    return time.monotonic() - t0, p


def count_perf_frames(text):
    """Frame lines of perf script output: indented, hex address first."""
    return sum(1 for line in text.splitlines() if re.match(r"^\s+[0-9a-f]+ ", line))


def bench_bpfprof(tmp, seconds):
    out = tmp / "bpfprof.folded"
    p = subprocess.run([str(BPFPROF), "-a", "-d", str(seconds), "-v", "-o", str(out)],
                       capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"bpfprof failed:\n{p.stderr}")
    m = re.search(r"end of sampling to written profile: ([0-9.]+) ms; (\d+) frames", p.stderr)
    s = re.search(r"symbols: (.*)", p.stderr)
    samples = sum(int(l.rsplit(" ", 1)[1]) for l in out.read_text().splitlines() if l.strip())
    frames_out = sum((l.rsplit(" ", 1)[0].count(";")) * int(l.rsplit(" ", 1)[1])
                     for l in out.read_text().splitlines() if l.strip())
    return {"ms": float(m.group(1)), "frames_symbolized": int(m.group(2)),
            "frames_out": frames_out, "samples": samples, "stats": s.group(1) if s else ""}


def bench_perf(tmp, seconds):
    data = tmp / "perf.data"
    t, p = timed(["perf", "record", "-a", "-g", "-F", "99", "-e", "cpu-clock", "-o", str(data),
                  "--", "sleep", str(seconds)], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"perf record failed:\n{p.stderr}")
    record_tail = max(0.0, t - seconds)
    res = {"record_tail_ms": record_tail * 1e3}
    for run in ("cold", "warm"):
        t, p = timed(["perf", "script", "-i", str(data)], capture_output=True, text=True)
        res[f"script_{run}_ms"] = t * 1e3
        res["frames"] = count_perf_frames(p.stdout)
        res["samples"] = sum(1 for b in p.stdout.split("\n\n") if b.strip())
    t, p = timed(["perf", "report", "-i", str(data), "--stdio"], capture_output=True, text=True)
    res["report_ms"] = t * 1e3
    return res


def bench_symbench(per=20):
    p = subprocess.run([str(SYMBENCH), str(per)], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"symbench failed:\n{p.stderr}")
    return dict(kv.split("=") for kv in p.stdout.split())


def rss_kib(pid):
    m = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(m.group(1)) if m else 0


def bench_churn(tmp, seconds):
    """bpfprof -a while short-lived processes come and go; RSS over time."""
    exes = []
    for i in range(8):
        exe = tmp / f"churn{i}"
        shutil.copy(WL / "busy", exe)
        exes.append(str(exe))
    bp = subprocess.Popen([str(BPFPROF), "-a", "-d", str(seconds), "-v", "-o",
                           str(tmp / "churn.folded")], stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    t0 = time.monotonic()
    rss, started, i = [], 0, 0
    next_sample = 0
    while time.monotonic() - t0 < seconds - 2:
        procs = [subprocess.Popen([exes[(i + k) % len(exes)], "0.01"], stdout=subprocess.DEVNULL)
                 for k in range(4)]
        procs.append(subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done"]))
        for p in procs:
            p.wait()
        started += len(procs)
        i += 4
        el = time.monotonic() - t0
        if el >= next_sample:
            rss.append((round(el), started, rss_kib(bp.pid)))
            next_sample += max(1, seconds // 12)
    _, err = bp.communicate()
    s = re.search(r"symbols: (\d+) processes", err)
    return {"rss": rss, "started": started, "procs_at_end": int(s.group(1)) if s else -1}


def run_pair(tmp, builds, seconds, rnd):
    """Both builds over the same window; per build: stop-to-output ms, peak RSS KiB, CPU s."""
    procs = []
    for i, b in enumerate(builds):
        out = tmp / f"pair{rnd}_{i}.folded"
        procs.append(subprocess.Popen([str(b), "-a", "-d", str(seconds), "-v", "-o", str(out)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
    res = []
    for p in procs:
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise SystemExit(f"{p.args[0]} failed:\n{err}")
        m = re.search(r"end of sampling to written profile: ([0-9.]+) ms", err)
        res.append({"ms": float(m.group(1)), "rss": ru.ru_maxrss,
                    "cpu": ru.ru_utime + ru.ru_stime})
    return res


def compare(tmp, other, seconds, rounds):
    builds = [BPFPROF, Path(other)]
    procs = start_mix(tmp, seconds * rounds * 2)
    churn = subprocess.Popen(["sh", "-c", f"cp {WL / 'busy'} {tmp}/churn; "
                              f"while :; do {tmp}/churn 0.05 >/dev/null; sh -c true; done"],
                             start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    rows = []
    try:
        for r in range(rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            res = run_pair(tmp, order, seconds, r)
            rows.append(res if r % 2 == 0 else res[::-1])
    finally:
        os.killpg(churn.pid, signal.SIGKILL)
        stop_mix(procs)

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]
    print(f"\n{time.strftime('%Y-%m-%d')}, {os.uname().release}, {os.cpu_count()} CPUs, "
          f"{rounds} rounds of {seconds} s of -a at 99 Hz, both builds at once, "
          "with the mix and short-lived processes\n")
    print("| build | end of sampling → output, median (range) | peak RSS MiB, median (range) "
          "| CPU s, median (range) |")
    print("|---|---:|---:|---:|")
    for i, b in enumerate(builds):
        ms = [row[i]["ms"] for row in rows]
        rss = [row[i]["rss"] / 1024 for row in rows]
        cpu = [row[i]["cpu"] for row in rows]
        print(f"| {b} | {med(ms):.0f} ms ({min(ms):.0f}-{max(ms):.0f}) | "
              f"{med(rss):.1f} ({min(rss):.1f}-{max(rss):.1f}) | "
              f"{med(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10, help="sampling window")
    ap.add_argument("--churn", type=int, default=60, help="memory run length (0: skip)")
    ap.add_argument("--compare", metavar="OTHER_BPFPROF", help="side by side with another build")
    ap.add_argument("--rounds", type=int, default=5, help="rounds with --compare")
    a = ap.parse_args()
    if a.compare:
        tmp = Path(tempfile.mkdtemp(prefix="bpfprof-symbench-"))
        compare(tmp, a.compare, a.seconds, a.rounds)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if os.geteuid():
        raise SystemExit("run as root")
    for f in (BPFPROF, SYMBENCH):
        if not f.exists():
            raise SystemExit(f"{f} is missing: run make test-deps")
    tmp = Path(tempfile.mkdtemp(prefix="bpfprof-symbench-"))
    procs = start_mix(tmp, a.seconds)
    try:
        ours = bench_bpfprof(tmp, a.seconds)
        perf = bench_perf(tmp, a.seconds)
        sb = bench_symbench()
    finally:
        stop_mix(procs)
    uname = os.uname()
    print(f"\n{time.strftime('%Y-%m-%d')}, {uname.sysname} {uname.release}, {os.cpu_count()} CPUs, "
          f"{a.seconds} s of -a at 99 Hz with the workload mix\n")
    print("| pipeline | end of sampling → output | frames | frames/s |")
    print("|---|---:|---:|---:|")
    print(f"| bpfprof -a -o x.folded (drain, symbolize, write) | {ours['ms']:.0f} ms | "
          f"{ours['frames_out']} in {ours['samples']} samples | "
          f"{ours['frames_out'] / (ours['ms'] / 1e3):,.0f} |")
    for run in ("cold", "warm"):
        ms = perf["record_tail_ms"] + perf[f"script_{run}_ms"]
        print(f"| perf record -g + perf script ({run}) | {ms:.0f} ms | {perf['frames']} in "
              f"{perf['samples']} samples | {perf['frames'] / (ms / 1e3):,.0f} |")
    ms = perf["record_tail_ms"] + perf["report_ms"]
    print(f"| perf record -g + perf report --stdio | {ms:.0f} ms | {perf['frames']} | "
          f"{perf['frames'] / (ms / 1e3):,.0f} |")
    print(f"\nbpfprof: {ours['stats']}")
    print(f"\nsymbench (every process on the machine, every executable mapping): "
          f"{sb['processes']} processes, {sb['files']} files, {sb['frames']} frames "
          f"({sb['named']} named), {sb['debug_files']} debug files\n")
    print("| symbench | wall time | CPU time | frames per CPU second |")
    print("|---|---:|---:|---:|")
    print(f"| cold (kallsyms, maps, ELF and debug files, frames) | {float(sb['cold_ms']):.0f} ms | "
          f"{float(sb['cold_cpu_ms']):.0f} ms | {int(sb['cold_fps']):,} |")
    print(f"| warm (the same frames again) | {float(sb['warm_ms']):.1f} ms | "
          f"{float(sb['warm_cpu_ms']):.1f} ms | {int(sb['warm_fps']):,} |")
    if a.churn:
        c = bench_churn(tmp, a.churn)
        print(f"\nMemory: bpfprof -a for {a.churn} s while {c['started']} short-lived processes "
              f"came and went ({c['procs_at_end']} process entries held at the end)\n")
        print("| time (s) | processes started | bpfprof RSS (KiB) |")
        print("|---:|---:|---:|")
        for t, n, r in c["rss"]:
            print(f"| {t} | {n} | {r} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

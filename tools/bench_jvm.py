#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tools/bench_jvm.py - what walking and naming Java (HotSpot) frames costs.

1. BPF ns per sample of a Java process against a native C process of the
   same stack depth, for several shapes of Java stack (all started with no
   JVM option unless the shape says):
     hot     main interpreted, calling two compiled hot loops (like JavaHot);
     deep    a compiled recursion 24 calls deep (C2 inlines every other one);
     interp  the same recursion under -Xint: 24 interpreter frames;
     wide    128 compiled methods calling each other in random chains of 10.
   The Java process, its native twin and a sleeping process are profiled at
   the same time by three bpfprof -p, each on its own perf events (the
   first two at 99 and 97 Hz, swapped every round; the sleeper's at 98), so
   the VM's slow and fast spells hit both alike. -p's program runs on every
   tick of every CPU and returns early for other processes: the sleeper's
   instance gives that early return's cost, taken out of the other two, so
   "ns/sample" is per sample of the profiled process:
     (run_time_ns - (run_cnt - samples) * sleeper's ns/run) / samples.
2. Naming cost per JVM: N JVMs of the wide shape (and N native twins) are
   profiled with -p -v for a few seconds, alternating: bpfprof's CPU and
   peak RSS (wait4), the time reading the VM structures and naming code-cache
   addresses (-v), the first JVM against N (first sight: each further JVM).
   Then one long run each (steady state): bpfprof's CPU per drain and its
   RSS over the second half.

    sudo flock /tmp/bpfprof-bench.lock tools/bench_jvm.py [--rounds 5] [--seconds 8]
        [--shapes hot,deep,interp,wide] [--jvms 3] [--steady-seconds 30] [--quick]

--breakdown instead builds build/timing (-DBPFPROF_TIMING, as
tools/bench_breakdown.py) and runs it on each shape's Java process and its
native twin at once: where a sample's time goes (row-cache lookups of table
frames, the JVM's entry, the steps through its code cache).

--quick: 2 rounds of 3 s, shapes hot and interp, 2 JVMs, 10 s of steady
state (~2.5 min). Needs root, a JDK (javac, java), cc, bpftool;
kernel.bpf_stats_enabled is set for the run and restored after.
"""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import perf_event_progs_of, prog_stats_by_id  # noqa: E402
import bench_breakdown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
LOOP = "x = x * 6364136223846793005L + (x >>> 17) + i;"

HOT = """
public class JbHot {
    static volatile long sink;
    static long alpha(long x) { for (int i = 0; i < 4_000_000; i++) %(loop)s return x; }
    static long beta(long x) { for (int i = 0; i < 2_000_000; i++) %(loop)s return x; }
    public static void main(String[] a) {
        long stop = System.nanoTime() + Long.parseLong(a[0]) * 1_000_000_000L, x = 1;
        while (System.nanoTime() < stop) { x = alpha(x); x = beta(x); }
        sink = x;
    }
}
""" % {"loop": LOOP}

DEEP = """
public class JbDeep {
    static volatile long sink;
    static long hot(long x, int n) { for (int i = 0; i < n; i++) %(loop)s return x; }
    static long level(int d, long x, int n) { return d > 1 ? level(d - 1, x, n) ^ d : hot(x, n); }
    public static void main(String[] a) {
        long stop = System.nanoTime() + Long.parseLong(a[0]) * 1_000_000_000L, x = 1;
        int depth = Integer.parseInt(a[1]), n = Integer.parseInt(a[2]);
        while (System.nanoTime() < stop) x = level(depth, x, n);
        sink = x;
    }
}
""" % {"loop": LOOP}

NATIVE_DEEP = r"""
#include <stdlib.h>
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) static unsigned long hot(unsigned long x)
{
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + (x >> 17) + i;
	return x;
}
__attribute__((noinline)) static unsigned long level(int d, unsigned long x)
{
	x = d > 1 ? level(d - 1, x) : hot(x);
	__asm__ volatile("" : "+r"(x)); /* no tail call, no loop made of it */
	return x ^ d;
}
int main(int argc, char **argv)
{
	time_t stop = time(NULL) + atol(argv[1]);
	int depth = atoi(argv[2]);
	while (time(NULL) < stop)
		sink = level(depth, sink);
	return 0;
}
"""

WIDE_N, WIDE_DEPTH = 128, 10


def wide_sources():
    """The wide shape in Java and in C, the same call graph: method i calls
    one of two others chosen here, by a bit of its running value."""
    rnd = random.Random(42)
    edges = [(rnd.randrange(WIDE_N), rnd.randrange(WIDE_N)) for _ in range(WIDE_N)]
    java = ["public class JbWide {", "    static volatile long sink;"]
    c = ["#include <stdlib.h>", "#include <time.h>", "volatile unsigned long sink;"]
    c += [f"static unsigned long m{i}(unsigned long x, int d);" for i in range(WIDE_N)]
    for i, (a, b) in enumerate(edges):
        java.append(
            f"    static long m{i}(long x, int d) {{ x = x * 6364136223846793005L + {i};"
            f" if (d == 0) {{ for (int i = 0; i < 20000; i++) x = x * 31 + (x >>> 7) + i;"
            f" return x; }} return (((x >>> 33) & 1) == 0 ? m{a}(x, d - 1) : m{b}(x, d - 1))"
            f" ^ {i}; }}")
        c.append(
            f"__attribute__((noinline)) static unsigned long m{i}(unsigned long x, int d)"
            f" {{ x = x * 6364136223846793005UL + {i}; if (d == 0) {{ for (int i = 0;"
            f" i < 20000; i++) x = x * 31 + (x >> 7) + i; return x; }}"
            f" x = ((x >> 33) & 1) == 0 ? m{a}(x, d - 1) : m{b}(x, d - 1);"
            f" __asm__ volatile(\"\" : \"+r\"(x)); return x ^ {i}; }}")
    disp = " ".join(f"case {i}: x = m{i}(x, {WIDE_DEPTH}); break;" for i in range(WIDE_N))
    java.append("    public static void main(String[] a) {\n"
                "        long stop = System.nanoTime() + Long.parseLong(a[0]) * 1_000_000_000L,"
                " x = 1;\n"
                f"        for (int k = 0; System.nanoTime() < stop; k = (k + 1) % {WIDE_N})"
                f" switch (k) {{ {disp} }}\n        sink = x;\n    }}\n}}")
    c.append("int main(int argc, char **argv) { time_t stop = time(NULL) + atol(argv[1]);"
             " unsigned long x = 1;"
             f" for (int k = 0; time(NULL) < stop; k = (k + 1) % {WIDE_N})"
             f" switch (k) {{ {disp} }} sink = x; return 0; }}")
    return "\n".join(java) + "\n", "\n".join(c) + "\n"


# shape: (Java class, JVM options, its arguments after SECONDS, native binary, its arguments)
SHAPES = {
    "hot": ("JbHot", [], [], "native_deep", ["5"]),
    "deep": ("JbDeep", [], ["24", "200000"], "native_deep", ["29"]),
    "interp": ("JbDeep", ["-Xint"], ["24", "2000"], "native_deep", ["30"]),
    "wide": ("JbWide", [], [], "native_wide", []),
}


def build(tmp):
    (tmp / "JbHot.java").write_text(HOT)
    (tmp / "JbDeep.java").write_text(DEEP)
    jw, cw = wide_sources()
    (tmp / "JbWide.java").write_text(jw)
    (tmp / "native_deep.c").write_text(NATIVE_DEEP)
    (tmp / "native_wide.c").write_text(cw)
    subprocess.run(["javac", "-d", str(tmp), str(tmp / "JbHot.java"), str(tmp / "JbDeep.java"),
                    str(tmp / "JbWide.java")], check=True)
    # Debian's default: -O2 without frame pointers (the .eh_frame walk).
    for n in ("native_deep", "native_wide"):
        subprocess.run(["cc", "-O2", "-o", str(tmp / n), str(tmp / f"{n}.c")], check=True)


def start(tmp, shape, seconds, java):
    cls, jopts, jargs, nat, nargs = SHAPES[shape]
    if java:
        argv = ["java"] + jopts + ["-cp", str(tmp), cls, str(int(seconds))] + jargs
    else:
        argv = [str(tmp / nat), str(int(seconds))] + nargs
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def cpu_rss(pid):
    """(user+sys seconds, VmRSS KiB) of a live process."""
    f = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return cpu, rss


class Prof:
    """One bpfprof run: started, its programs found, stopped; wait4()'s rusage."""

    def __init__(self, tmp, name, argv, binary=BPFPROF):
        self.out = tmp / f"{name}.folded"
        self.err_path = tmp / f"{name}.err"
        self.err_f = open(self.err_path, "w")
        self.p = subprocess.Popen([str(binary)] + argv + ["-o", str(self.out)],
                                  stdout=subprocess.DEVNULL, stderr=self.err_f)
        self.ids = set()

    def wait_progs(self, timeout=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            self.ids = perf_event_progs_of(self.p.pid)
            if self.ids:
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"bpfprof did not start: {self.err_path.read_text()[-2000:]}")

    def bpf(self):
        """(run_time_ns, run_cnt) of its perf_event programs so far."""
        s = prog_stats_by_id(self.ids)
        return sum(v[1] for v in s.values()), sum(v[2] for v in s.values())

    def finish(self, sigint=True):
        if sigint:
            self.p.send_signal(signal.SIGINT)
        _, status, ru = os.wait4(self.p.pid, 0)
        self.p.returncode = os.waitstatus_to_exitcode(status)
        self.err_f.close()
        self.err = self.err_path.read_text()
        if self.p.returncode:
            raise SystemExit(f"bpfprof failed ({self.p.returncode}): {self.err[-2000:]}")
        self.cpu = ru.ru_utime + ru.ru_stime
        self.maxrss = ru.ru_maxrss
        self.folded = self.out.read_text() if self.out.exists() else ""
        return self

    def samples(self):
        return sum(int(ln.rpartition(" ")[2]) for ln in self.folded.splitlines()
                   if ln.rpartition(" ")[2].isdigit())


def depths(folded):
    """Median frames per stack (user frames, the comm left out) and Java frames."""
    total, java = [], []
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")[1:]
        total += [len(frames)] * int(n)
        java += [sum(f.endswith(("_[j]", "_[i]", "_[0]")) for f in frames)] * int(n)
    med = statistics.median
    return (med(total) if total else 0), (med(java) if java else 0)


def load():
    return os.getloadavg()[0]


def bpf_cost(tmp, shapes, rounds, seconds):
    sleeper = subprocess.Popen(["sleep", "100000"], start_new_session=True)
    results = {}
    loads = [load()]
    try:
        for shape in shapes:
            life = rounds * (seconds + 20) + 60
            procs = {"java": start(tmp, shape, life, True),
                     "native": start(tmp, shape, life, False)}
            time.sleep(6)  # the JIT's first compilations
            rows = []
            try:
                for r in range(rounds):
                    freqs = {"java": 99, "native": 97} if r % 2 == 0 else \
                        {"java": 97, "native": 99}
                    profs = {k: Prof(tmp, f"{shape}-{k}-{r}",
                                     ["-F", str(freqs[k]), "-U", "-q", "-p", str(procs[k].pid)])
                             for k in procs}
                    profs["idle"] = Prof(tmp, f"{shape}-idle-{r}",
                                         ["-F", "98", "-U", "-q", "-p", str(sleeper.pid)])
                    for p in profs.values():
                        p.wait_progs()
                    time.sleep(seconds)
                    stats = {k: p.bpf() for k, p in profs.items()}
                    for p in profs.values():
                        p.p.send_signal(signal.SIGINT)
                    for p in profs.values():
                        p.finish(False)
                    loads.append(load())
                    idle_ns = stats["idle"][0] / max(1, stats["idle"][1])
                    row = {"idle_ns": idle_ns}
                    for k in ("java", "native"):
                        ns, cnt = stats[k]
                        n = profs[k].samples()
                        row[k] = (ns - (cnt - n) * idle_ns) / n if n else float("nan")
                        row[k + "_raw"] = ns / max(1, cnt)
                        row[k + "_n"] = n
                        row[k + "_depth"] = depths(profs[k].folded)
                    row["ratio"] = row["java"] / row["native"]
                    row["net"] = (row["java"] - idle_ns) / (row["native"] - idle_ns)
                    rows.append(row)
                    print(f"  {shape} round {r + 1}: java {row['java']:.0f} ns "
                          f"({row['java_n']} samples), native {row['native']:.0f} ns "
                          f"({row['native_n']}), ratio {row['ratio']:.2f}, early return "
                          f"{idle_ns:.0f} ns", file=sys.stderr)
                # The last round's walk counters, for where the time goes.
                v = Prof(tmp, f"{shape}-v", ["-F", "99", "-U", "-v", "-p",
                                             str(procs["java"].pid), "-d", "3"]).finish(False)
                m = re.search(r"unwind: JVMs: .*", v.err)
                rows[-1]["jvm_line"] = m.group(0) if m else "(no JVM line)"
                walks = vnum(r"unwind: (\d+) stacks walked with tables", v.err)
                rows[-1]["jvm_walked"] = vnum(r"; (\d+) frames through the code cache",
                                              v.err) / max(1, walks)
            finally:
                stop(procs.values())
            results[shape] = rows
    finally:
        stop([sleeper])
    print(f"\n### BPF cost per sample, Java against native ({rounds} rounds of {seconds:g} s, "
          f"-p, side by side; load average {min(loads):.1f} - {max(loads):.1f})\n")
    print("| shape | frames per stack: Java (Java frames; walked in the code cache) / native "
          "| Java ns/sample (median, range) | native ns/sample | Java / native (median) | "
          "per-round ratios | above the early return: Java / native |")
    print("|---|---|---:|---:|---:|---|---:|")
    med = statistics.median
    for shape, rows in results.items():
        jd, jj = med(r["java_depth"][0] for r in rows), med(r["java_depth"][1] for r in rows)
        nd = med(r["native_depth"][0] for r in rows)
        js = [r["java"] for r in rows]
        ns = [r["native"] for r in rows]
        ratios = [r["ratio"] for r in rows]
        print(f"| {shape} | {jd:.0f} ({jj:.0f}; {rows[-1]['jvm_walked']:.1f}) / {nd:.0f} | "
              f"{med(js):,.0f} ({min(js):,.0f} - {max(js):,.0f}) | {med(ns):,.0f} "
              f"({min(ns):,.0f} - {max(ns):,.0f}) | **{med(ratios):.2f}** | "
              + " / ".join(f"{x:.2f}" for x in ratios)
              + f" | {med(r['net'] for r in rows):.2f} |")
    print("\nSamples per round (Java / native), the early return's ns, raw run_time/run_cnt:")
    for shape, rows in results.items():
        print(f"- {shape}: " + "; ".join(
            f"{r['java_n']}/{r['native_n']}, {r['idle_ns']:.0f} ns, raw {r['java_raw']:.0f}/"
            f"{r['native_raw']:.0f}" for r in rows))
        print(f"  - `{rows[-1]['jvm_line']}`")
    return results


TIMING = ROOT / "build" / "timing"
TM_PARTS = bench_breakdown.PARTS + ["hs_begin", "hs_step", "hs_step_n"]


def timing_map(prof):
    """The "timing" map of this bpfprof's sampling program."""
    for pid in prof.ids:
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(pid)],
                             capture_output=True, text=True, check=True)
        for mid in json.loads(out.stdout).get("map_ids", []):
            m = subprocess.run(["bpftool", "-j", "map", "show", "id", str(mid)],
                               capture_output=True, text=True, check=True)
            if json.loads(m.stdout).get("name") == "timing":
                return mid
    raise SystemExit("bench_jvm.py: no timing map (not the BPFPROF_TIMING build?)")


def read_timing(mid):
    saved = bench_breakdown.PARTS
    bench_breakdown.PARTS = TM_PARTS
    try:
        return bench_breakdown.read_map(mid)
    finally:
        bench_breakdown.PARTS = saved


def breakdown(tmp, shapes, rounds, seconds):
    """Where a sample's time goes, Java against native: the BPFPROF_TIMING
    build (build/timing, made here) on both processes at once."""
    subprocess.run(["make", "-s", "-C", str(ROOT), f"OUT={TIMING}",
                    "BPF_EXTRA_CFLAGS=-DBPFPROF_TIMING", f"{TIMING}/bpfprof"], check=True)
    loads = [load()]
    res = {}
    for shape in shapes:
        procs = {"java": start(tmp, shape, rounds * (seconds + 20) + 60, True),
                 "native": start(tmp, shape, rounds * (seconds + 20) + 60, False)}
        sums = {k: [0] * len(TM_PARTS) for k in procs}
        time.sleep(6)
        try:
            for r in range(rounds):
                freqs = {"java": 99, "native": 97} if r % 2 == 0 else {"java": 97, "native": 99}
                profs = {k: Prof(tmp, f"tm-{shape}-{k}", ["-F", str(freqs[k]), "-U", "-q", "-p",
                                                           str(procs[k].pid)], TIMING / "bpfprof")
                         for k in procs}
                for p in profs.values():
                    p.wait_progs()
                time.sleep(1)
                maps = {k: timing_map(p) for k, p in profs.items()}
                a = {k: read_timing(m) for k, m in maps.items()}
                time.sleep(seconds)
                b = {k: read_timing(m) for k, m in maps.items()}
                for p in profs.values():
                    p.p.send_signal(signal.SIGINT)
                for p in profs.values():
                    p.finish(False)
                loads.append(load())
                for k in procs:
                    sums[k] = [s + y - x for s, x, y in zip(sums[k], a[k], b[k])]
        finally:
            stop(procs.values())
        res[shape] = sums
    print(f"\n### Where a sample's time goes (BPFPROF_TIMING build, -p, {rounds} rounds of "
          f"{seconds:g} s; load average {min(loads):.1f} - {max(loads):.1f}); ns per sample\n")
    print("| shape | process | samples | identity | user stack (process lookup) | table frames:"
          " row cache hit n x ns, miss n x ns, step ns | JVM entry | code-cache steps n x ns |"
          " aggregation | sum |")
    print("|---|---|---:|---:|---:|---|---:|---|---:|---:|")
    for shape, sums in res.items():
        for k, v in sums.items():
            s = dict(zip(TM_PARTS, v))
            n = max(s["samples"], 1)
            hn, mn, sn = s["uw_hit_n"], s["uw_miss_n"], s["hs_step_n"]
            total = (s["identity"] + s["kstack"] + s["ustack"] + s["hot"] + s["new"]) / n
            print(f"| {shape} | {k} | {s['samples']} | {s['identity'] / n:,.0f} | "
                  f"{s['ustack'] / n:,.0f} ({s['uproc'] / n:,.0f}) | "
                  f"{hn / n:.1f} x {s['uw_hit'] / max(hn, 1):,.0f}, {mn / n:.1f} x "
                  f"{s['uw_miss'] / max(mn, 1):,.0f}, {s['uw_rest'] / max(hn + mn, 1):,.0f} | "
                  f"{s['hs_begin'] / n:,.0f} | {sn / n:.1f} x {s['hs_step'] / max(sn, 1):,.0f} | "
                  f"{(s['hot'] + s['new']) / n:,.0f} | {total:,.0f} |")
    return res


def vnum(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else float("nan")


def naming(tmp, rounds, seconds, jvms, steady):
    life = rounds * 3 * (seconds + 15) + 2 * steady + 120
    java = [start(tmp, "wide", life, True) for _ in range(jvms)]
    native = [start(tmp, "wide", life, False) for _ in range(jvms)]
    loads = [load()]
    time.sleep(8)
    cases = [("1 JVM", java[:1]), (f"{jvms} JVMs", java), ("1 native", native[:1]),
             (f"{jvms} native", native)]
    runs = {c: [] for c, _ in cases}
    try:
        for r in range(rounds):
            for label, procs in cases[r % len(cases):] + cases[:r % len(cases)]:
                p = Prof(tmp, f"name-{r}", ["-U", "-v", "-d", str(seconds), "-p",
                                             ",".join(str(x.pid) for x in procs)]).finish(False)
                loads.append(load())
                runs[label].append({
                    "cpu": p.cpu, "rss": p.maxrss,
                    "tables_ms": vnum(r"unwind: \d+ tables .* built in ([\d.]+) ms", p.err),
                    "probe_u": vnum(r"original pc; VM structures read in ([\d.]+) ms", p.err),
                    "probe_s": vnum(r"frames named from HotSpot code caches in [\d.]+ ms of CPU,"
                                    r" VM structures read in ([\d.]+) ms", p.err),
                    "name_ms": vnum(r"frames named from HotSpot code caches in ([\d.]+) ms", p.err),
                    "names": vnum(r"java names: (\d+) frames", p.err),
                    "startup": vnum(r"start-up: (\d+) ms to sampling", p.err),
                })
        steady_runs = {}
        for label, procs in ((f"{jvms} JVMs", java), (f"{jvms} native", native)):
            p = Prof(tmp, "steady", ["-U", "-v", "-d", str(steady), "-p",
                                     ",".join(str(x.pid) for x in procs)])
            p.wait_progs()
            t0 = time.monotonic()
            trace = []
            # (waitid WNOWAIT: the exit left for finish()'s wait4)
            while os.waitid(os.P_PID, p.p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                try:
                    c, rss = cpu_rss(p.p.pid)
                except (OSError, IndexError):
                    break
                trace.append((time.monotonic() - t0, c, rss))
                time.sleep(1)
            p.finish(False)
            loads.append(load())
            drains = vnum(r"(\d+) drains", p.err)
            # (not the last second: the exit frees)
            half = [t for t in trace if steady / 2 <= t[0] <= steady - 1]
            a, b = half[0], half[-1]
            steady_runs[label] = {
                "cpu_per_drain_ms": 1000 * (b[1] - a[1]) / max(1e-9, b[0] - a[0]),
                "rss_half": a[2], "rss_end": b[2], "drains": drains, "cpu": p.cpu,
                "names": vnum(r"java names: (\d+) frames", p.err),
                "name_ms": vnum(r"frames named from HotSpot code caches in ([\d.]+) ms", p.err),
                "span": b[0] - a[0]}
    finally:
        stop(java + native)
    med = statistics.median

    def col(label, k):
        vals = [x[k] for x in runs[label]]
        return med(vals), min(vals), max(vals)

    print(f"\n### Naming cost per JVM, first sight (-p of the wide shape, -d {seconds:g}, "
          f"{rounds} rounds; load average {min(loads):.1f} - {max(loads):.1f})\n")
    print("| profiled | bpfprof CPU s (median, range) | peak RSS MiB | unwind tables built ms | "
          "VM structures read, ms of CPU (walker + names) | code-cache addresses named "
          "(ms of CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, _ in cases:
        c, s, t = col(label, "cpu"), col(label, "rss"), col(label, "tables_ms")
        pu, ps = col(label, "probe_u"), col(label, "probe_s")
        nm, nn = col(label, "name_ms"), col(label, "names")
        jv = "java" not in label and "native" in label
        print(f"| {label} | {c[0]:.2f} ({c[1]:.2f} - {c[2]:.2f}) | {s[0] / 1024:.1f} | "
              f"{t[0]:.0f} | " + ("- | - |" if jv else
                                  f"{pu[0]:.1f} + {ps[0]:.1f} | {nn[0]:.0f} ({nm[0]:.1f}) |"))
    one, many = col("1 JVM", "cpu")[0], col(f"{jvms} JVMs", "cpu")[0]
    n1, nm_ = col("1 native", "cpu")[0], col(f"{jvms} native", "cpu")[0]
    r1, rm = col("1 JVM", "rss")[0], col(f"{jvms} JVMs", "rss")[0]
    print(f"\n- the first JVM over one native twin: {one - n1:+.2f} s CPU, "
          f"{(r1 - col('1 native', 'rss')[0]) / 1024:+.1f} MiB peak RSS")
    if jvms > 1:
        print(f"- each further JVM: {(many - one) / (jvms - 1):+.3f} s CPU "
              f"(each further native twin {(nm_ - n1) / (jvms - 1):+.3f} s), "
              f"{(rm - r1) / 1024 / (jvms - 1):+.1f} MiB peak RSS")
    print(f"\n### Steady state ({steady:g} s, -p of {jvms} processes, the second half)\n")
    print("| profiled | bpfprof CPU per drain (ms) | RSS at half / end (MiB) | drains | "
          "code-cache addresses named (ms of CPU; us each) |")
    print("|---|---:|---:|---:|---:|")
    for label, s in steady_runs.items():
        print(f"| {label} | {s['cpu_per_drain_ms']:.1f} | {s['rss_half'] / 1024:.1f} / "
              f"{s['rss_end'] / 1024:.1f} | {s['drains']:.0f} | "
              + ("-" if "native" in label else f"{s['names']:.0f} ({s['name_ms']:.1f}; "
                 f"{1000 * s['name_ms'] / max(1, s['names']):.0f})") + " |")
    return runs, steady_runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--shapes", default="hot,deep,interp,wide")
    ap.add_argument("--jvms", type=int, default=3)
    ap.add_argument("--name-seconds", type=float, default=3)
    ap.add_argument("--name-rounds", type=int, default=4)
    ap.add_argument("--steady-seconds", type=float, default=30)
    ap.add_argument("--no-naming", action="store_true", help="only the per-sample cost")
    ap.add_argument("--no-cost", action="store_true", help="only the naming cost")
    ap.add_argument("--breakdown", action="store_true",
                    help="only where a sample's time goes (builds build/timing)")
    ap.add_argument("--quick", action="store_true", help="a short run (~2.5 min)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.shapes = 2, 3, "hot,interp"
        args.jvms, args.name_rounds, args.steady_seconds = 2, 2, 10
    shapes = args.shapes.split(",")
    if any(s not in SHAPES for s in shapes):
        sys.exit(f"bench_jvm.py: shapes are {', '.join(SHAPES)}")
    if os.geteuid():
        sys.exit("bench_jvm.py: needs root")
    print(f"bench_jvm.py on {os.uname().release}, {os.cpu_count()} CPUs, load average "
          f"{load():.2f}; {subprocess.run(['java', '-version'], capture_output=True, text=True).stderr.splitlines()[0]}")
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = stats.read_text().strip()
    stats.write_text("1")
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            build(tmp)
            if args.breakdown:
                breakdown(tmp, shapes, args.rounds, args.seconds)
                return
            if not args.no_cost:
                bpf_cost(tmp, shapes, args.rounds, args.seconds)
            if not args.no_naming:
                naming(tmp, args.name_rounds, args.name_seconds, args.jvms, args.steady_seconds)
    finally:
        stats.write_text(old)


if __name__ == "__main__":
    main()

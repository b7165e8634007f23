#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_alloc.py - issue 39's benchmarks: what a memory profiler costs per
malloc/free pair, how close bpfprof --alloc's bytes per call site come to the
truth, and what it costs an allocation-heavy Go program.

  cost      tests/workloads/allocwork bench SHAPE N times N malloc/free pairs
            and prints its own ns per pair, in three shapes: small (16-256 B,
            freed at once, a tight loop), mixed (a ring of 64 live blocks of
            16 B-64 KiB) and mt (small in 2 threads, per thread). Each shape
            runs, in turn, for several rounds (the order rotated each round):
              none        no profiler
              entry traps a uprobe on malloc and one on free whose programs
                          do nothing (bpftrace): the floor of a design that
                          probes every call's entry
              bpftrace    a bcc-memleak-like one-liner: uprobe and uretprobe
                          on libc's malloc (bytes summed by user stack, the
                          block's address kept in a map) and a uprobe on free
                          (the address deleted)
              heaptrack   heaptrack ./allocwork (LD_PRELOAD, Debian's)
              bpfprof -p  bpfprof --alloc -p PID, attached before the loop
              bpfprof --  bpfprof --alloc -- allocwork ...
              (--fallbacks: bpfprof -p multi, bpfprof -p perf: the probes of
              kernels without session uprobes, BPFPROF_TEST_ALLOC_MODE)
            Attached tools (bpftrace, bpfprof -p) attach while the workload
            waits (allocwork wait ...) and are started before its loop. The
            added cost of a tool is its median ns per pair less the median
            of none; bpfprof/bpftrace is the ratio of their added costs
            (median, and min-max of the per-round ratios). Issue target: at
            most 0.5x.
  accuracy  bpfprof --alloc=PERIOD -o X.pb.gz -- allocwork sites MIB: five
            call sites allocate about MIB MiB each (freed at once, kept, many
            small ones, calloc, posix_memalign) and print their truth; the
            profile (read by tests/integration/pprof.py's decoder) gives
            alloc_space, alloc_objects and inuse_space per site (the innermost
            site_* frame of each stack). Issue target: bytes within +-10%.
            The expected sampling error (1 sigma) is shown beside: with a mean
            period P, a site of B bytes in blocks much smaller than P is
            estimated to about sqrt(P/B).
  go        tests/workloads/goalloc (structs, strings, slices, one goroutine
            per CPU) prints its own ops per second and per CPU second; none
            against bpfprof --alloc -p PID, rounds interleaved. goalloc links
            runtime.MemProfile, so the runtime samples in both arms (its own
            sampling is not bpfprof's cost). Issue target: at most 1%
            cost. Skipped, with a message, when bpfprof --alloc records no
            allocation of the Go program (Go's allocator not probed).

Prints Markdown tables with the command. bpftrace 0.17 attaches its library
uprobes to every process (the pid is only its predicate), so run it alone on
the host: flock /tmp/bpfprof-bench.lock, or --lock-rounds (the lock taken for
each round, other benchmarks can run between them).

    sudo flock /tmp/bpfprof-bench.lock tools/bench_alloc.py [cost|accuracy|go|all]
        [--bpfprof PATH] [--pairs N] [--rounds R] [--shapes small,mixed,mt]
        [--period BYTES] [--mib MIB] [--go-seconds S]
    sudo tools/bench_alloc.py --lock-rounds ...
Needs make test-deps (build/workloads/allocwork, goalloc), bpftrace, heaptrack.
"""
import argparse
import contextlib
import fcntl
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / os.environ.get("OUT", "build")
WORK = OUT / "workloads" / "allocwork"
GOWORK = OUT / "workloads" / "goalloc"
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import pprof  # noqa: E402  (tests/integration/pprof.py: an independent decoder)

BPFTRACE = ("uprobe:{libc}:malloc /pid == {pid}/ {{ @size[tid] = arg0; }} "
            "uretprobe:{libc}:malloc /@size[tid]/ {{ @bytes[ustack] = sum(@size[tid]); "
            "@live[retval] = @size[tid]; delete(@size[tid]); }} "
            "uprobe:{libc}:free /pid == {pid}/ {{ delete(@live[arg0]); }}")
# The floor of any design that probes each call's entry: a uprobe on malloc
# and one on free, programs that do nothing (the pid test aside).
TRAPS = "uprobe:{libc}:malloc /pid == 0/ {{ }} uprobe:{libc}:free /pid == 0/ {{ }}"

SHAPES = {"small": "16-256 B, freed at once", "mixed": "ring of 64 blocks, 16 B-64 KiB",
          "mt": "16-256 B, 2 threads"}
SITES = {"site_free": "malloc 1-64 KiB, freed", "site_keep": "malloc 4 KiB, kept",
         "site_small": "malloc 16-128 B, freed", "site_calloc": "calloc(1-16, 256), freed",
         "site_align": "posix_memalign 64-8192 B, freed"}


class Skip(Exception):
    pass


def last_json(text, key):
    for line in reversed(text.splitlines()):
        if line.startswith("{") and key in line:
            return json.loads(line)
    raise RuntimeError(f"no {key} in the workload's output: {text[-500:]!r}")


def libc_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = line.split()[-1]
            if re.search(r"/libc(\.so\.6|-[0-9.]+\.so)$", path):
                return path
    raise RuntimeError(f"no libc in {pid}'s maps")


def wait_stream(stream, pattern, proc, what, timeout=60):
    """Reads lines from stream until one matches pattern (a regex)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if re.search(pattern, line):
            return
    proc.kill()
    raise RuntimeError(f"{what} never printed /{pattern}/: {''.join(seen)[-800:]}")


def stop(p, timeout=120):
    """Lets a tool end (it stops when its target exits), else SIGINT."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        return p.communicate(timeout=timeout)


class Bench:
    def __init__(self, a, tmp):
        self.a, self.tmp = a, Path(tmp)
        self.bpfprof = a.bpfprof

    # -- how each tool runs the workload; each returns the workload's JSON --

    def attached(self, argv, attach, key):
        """argv waits (its first output line: {"waiting": PID}); attach(pid)
        starts a tool and returns once it is attached; then the workload runs."""
        w = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        first = w.stdout.readline()
        pid = json.loads(first)["waiting"]
        tool = None
        try:
            tool = attach(pid)
            w.send_signal(signal.SIGUSR1)
            out = w.communicate(timeout=900)[0]
        finally:
            if w.poll() is None:
                w.kill()
                w.wait()
        if tool:
            if tool.args[0] == "bpftrace":  # it outlives its target: ended here
                tool.send_signal(signal.SIGINT)
            _, err = stop(tool)
            if tool.returncode not in (0, -signal.SIGINT, 130):
                raise RuntimeError(f"tool exited {tool.returncode}: {(err or '')[-800:]}")
        return last_json(out, key)

    def attach_bpftrace(self, pid, text=BPFTRACE):
        prog = text.format(libc=libc_of(pid), pid=pid)
        p = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        wait_stream(p.stdout, "Attaching", p, "bpftrace")
        time.sleep(0.5)  # bpftrace prints before its probes are all in
        return p

    def attach_bpfprof(self, pid, mode=None):
        env = dict(os.environ)
        if mode:  # the older kernels' probes: a return probe on every allocation call
            env["BPFPROF_TEST_ALLOC_MODE"] = mode
        p = subprocess.Popen([self.bpfprof, "--alloc", "-v", "-p", str(pid), "-o",
                              str(self.tmp / "p.pb.gz")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env)
        wait_stream(p.stderr, self.a.attached, p, "bpfprof -p")
        return p

    def run(self, tool, wargv, key):
        """wargv: the workload's argv (without wait)."""
        if tool == "none":
            return last_json(subprocess.run(wargv, stdout=subprocess.PIPE, text=True,
                                            check=True).stdout, key)
        if tool == "bpftrace":
            return self.attached([wargv[0], "wait"] + wargv[1:], self.attach_bpftrace, key)
        if tool == "entry traps":
            return self.attached([wargv[0], "wait"] + wargv[1:],
                                 lambda pid: self.attach_bpftrace(pid, TRAPS), key)
        if tool == "heaptrack":
            r = subprocess.run(["heaptrack", "-o", str(self.tmp / "ht")] + wargv,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               check=True)
            for f in self.tmp.glob("ht*"):
                f.unlink()
            return last_json(r.stdout, key)
        if tool == "bpfprof -p":
            return self.attached([wargv[0], "wait"] + wargv[1:], self.attach_bpfprof, key)
        if tool.startswith("bpfprof -p "):  # "bpfprof -p multi", "bpfprof -p perf"
            mode = tool.split()[-1]
            return self.attached([wargv[0], "wait"] + wargv[1:],
                                 lambda pid: self.attach_bpfprof(pid, mode), key)
        if tool == "bpfprof --":
            r = subprocess.run([self.bpfprof, "--alloc", "-o", str(self.tmp / "c.pb.gz"), "--"]
                               + wargv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            if r.returncode:
                raise RuntimeError(f"bpfprof -- exited {r.returncode}: {r.stderr[-800:]}")
            return last_json(r.stdout, key)
        raise ValueError(tool)


@contextlib.contextmanager
def bench_lock(a):
    """--lock-rounds: /tmp/bpfprof-bench.lock held for each round only (other
    benchmarks run between rounds); without it the caller holds it (flock)."""
    if not a.lock_rounds:
        yield
        return
    with open("/tmp/bpfprof-bench.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def has_alloc(bpfprof):
    try:
        h = subprocess.run([bpfprof, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return False
    return "--alloc" in h


def med_spread(v, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}-{fmt.format(max(v))})"


def command_line(a, sub):
    args = [sub, "--rounds", str(a.rounds)]
    if sub == "cost":
        args += ["--pairs", str(a.pairs), "--shapes", a.shapes] + \
            (["--fallbacks"] if a.fallbacks else [])
    if sub == "accuracy":
        args = [sub, "--period", str(a.period), "--mib", str(a.mib)]
    if sub == "go":
        args += ["--go-seconds", str(a.go_seconds)]
    if a.bpfprof != str(OUT / "bpfprof"):
        args += ["--bpfprof", a.bpfprof]
    if a.lock_rounds:
        return "sudo tools/bench_alloc.py " + shlex.join(args + ["--lock-rounds"])
    return "sudo flock /tmp/bpfprof-bench.lock tools/bench_alloc.py " + shlex.join(args)


def cost(b, a):
    tools = ["none", "entry traps", "bpftrace", "heaptrack"]
    if has_alloc(a.bpfprof):
        tools += ["bpfprof -p", "bpfprof --"]
        if a.fallbacks:
            tools += ["bpfprof -p multi", "bpfprof -p perf"]
    else:
        print(f"{a.bpfprof} has no --alloc: bpfprof's rows skipped", file=sys.stderr)
    shapes = a.shapes.split(",")
    res = {s: {t: [] for t in tools} for s in shapes}
    for r in range(a.rounds):
        with bench_lock(a):
            for s in shapes:
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                for t in order:
                    j = b.run(t, [str(WORK), "bench", s, str(a.pairs)], "ns_per_pair")
                    res[s][t].append(j["ns_per_pair"])
                print(f"round {r + 1} {s}: " + ", ".join(f"{t} {res[s][t][-1]:.0f}"
                                                         for t in tools), file=sys.stderr)
    print(f"\n### Cost per malloc/free pair\n\n`{command_line(a, 'cost')}`\n")
    print(f"allocwork bench SHAPE {a.pairs}: ns per malloc/free pair, median (min-max) of "
          f"{a.rounds} interleaved rounds; added: the median less no profiler's.\n")
    head = "| tool |" + "".join(f" {s}: ns/pair | added |" for s in shapes)
    print(head)
    print("|---|" + "---:|---:|" * len(shapes))
    base = {s: statistics.median(res[s]["none"]) for s in shapes}
    for t in tools:
        row = f"| {t} |"
        for s in shapes:
            v = res[s][t]
            row += f" {med_spread(v)} | " + ("-" if t == "none" else
                                              f"{statistics.median(v) - base[s]:.0f}") + " |"
        print(row)
    if "bpfprof -p" in tools:
        print("\nbpfprof's added ns per pair as a share of bpftrace's (median of the rounds' "
              "ratios, min-max; target at most 0.5x):\n")
        print("| shape | entry traps added | bpftrace added | bpfprof -p added "
              "| bpfprof -p / bpftrace | bpfprof -- / bpftrace | heaptrack added |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for s in shapes:
            def ratios(t):
                return [(x - base[s]) / (y - base[s]) for x, y in
                        zip(res[s][t], res[s]["bpftrace"]) if y > base[s]]
            rp, rc = ratios("bpfprof -p"), ratios("bpfprof --")
            add = {t: statistics.median(res[s][t]) - base[s] for t in tools}
            print(f"| {s} ({SHAPES[s]}) | {add['entry traps']:.0f} | {add['bpftrace']:.0f} | "
                  f"{add['bpfprof -p']:.0f} | "
                  f"{med_spread(rp, '{:.2f}')}x | {med_spread(rc, '{:.2f}')}x | "
                  f"{add['heaptrack']:.0f} |")


def profile_sites(path):
    p = pprof.decode(Path(path).read_bytes())
    st = p["string_table"]
    types = [st[t.get(1, 0)] for t in p["sample_type"]]
    need = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
    if not all(t in types for t in need):
        raise RuntimeError(f"{path}: sample types {types}, not {need}")
    idx = {t: types.index(t) for t in need}
    got = {}
    for smp in p["sample"]:
        site = "(elsewhere)"
        for lid in smp["location_id"]:  # leaf first
            names = [pprof.strings(p, p["function"][ln.get(1)].get(2, 0))
                     for ln in reversed(p["location"][lid]["lines"])]
            hit = [n for n in names if n.startswith("site_")]
            if hit:
                site = hit[0]
                break
        g = got.setdefault(site, {t: 0 for t in need})
        for t in need:
            g[t] += smp["value"][idx[t]]
    return got


def expected_sigma(bytes_, count, period):
    """1-sigma relative error of the byte and count estimates, all blocks
    taken at the site's mean size s: each is sampled with p = 1 - exp(-s/P)
    and weighed 1/p."""
    if not count:
        return 0.0, 0.0
    s = bytes_ / count
    p = 1 - math.exp(-s / period)
    rel = math.sqrt((1 - p) / (count * p))
    return rel, rel  # same for bytes and count at one size


def accuracy(b, a):
    if not has_alloc(a.bpfprof):
        raise Skip(f"{a.bpfprof} has no --alloc")
    out = b.tmp / "acc.pb.gz"
    with bench_lock(a):
        t0 = time.monotonic()
        r = subprocess.run([a.bpfprof, f"--alloc={a.period}", "-o", str(out), "--", str(WORK),
                            "sites", str(a.mib)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        secs = time.monotonic() - t0
    if r.returncode:
        raise RuntimeError(f"bpfprof exited {r.returncode}: {r.stderr[-800:]}")
    truth = last_json(r.stdout, "sites")["sites"]
    got = profile_sites(out)
    mib = 1048576
    print(f"\n### Accuracy: bytes per call site\n\n`{command_line(a, 'accuracy')}`\n")
    print(f"`bpfprof --alloc={a.period} -o X.pb.gz -- allocwork sites {a.mib}` ({secs:.0f} s); "
          f"the program's own totals against the profile's alloc_space, alloc_objects and "
          f"inuse_space at each site (target: bytes within +-10%); expected error: one "
          f"standard deviation of the sampling.\n")
    print("| call site | true MiB | profile MiB | error | expected | true allocations "
          "| profile | error | in use: true MiB | profile MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for site, t in truth.items():
        g = got.get(site, {"alloc_space": 0, "alloc_objects": 0, "inuse_space": 0})
        eb = g["alloc_space"] / t["bytes"] - 1
        ec = g["alloc_objects"] / t["count"] - 1
        sig, _ = expected_sigma(t["bytes"], t["count"], a.period)
        worst = max(worst, abs(eb))
        print(f"| {site} ({SITES.get(site, '')}) | {t['bytes'] / mib:.1f} | "
              f"{g['alloc_space'] / mib:.1f} | {eb:+.1%} | +-{sig:.1%} | {t['count']} | "
              f"{g['alloc_objects']} | {ec:+.1%} | {t['inuse_bytes'] / mib:.1f} | "
              f"{g['inuse_space'] / mib:.1f} |")
    for site, g in got.items():
        if site not in truth:
            print(f"| {site} | | {g['alloc_space'] / mib:.1f} | | | | {g['alloc_objects']} | | "
                  f"| {g['inuse_space'] / mib:.1f} |")
    print(f"\nlargest byte error {worst:.1%}: "
          + ("within" if worst <= 0.10 else "NOT within") + " +-10%")
    return worst <= 0.10


def go(b, a):
    if not has_alloc(a.bpfprof):
        raise Skip(f"{a.bpfprof} has no --alloc")
    # Does --alloc see Go's allocations at all? A short run, its profile.
    out = b.tmp / "go.pb.gz"
    r = subprocess.run([a.bpfprof, "--alloc", "-o", str(out), "--", str(GOWORK), "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    why = None
    if r.returncode:
        why = f"bpfprof --alloc -- goalloc exited {r.returncode}: {r.stderr.strip()[-300:]}"
    else:
        got = profile_sites(out) if out.exists() else {}
        total = sum(g["alloc_space"] for g in got.values())
        if total < 0.01 * last_json(r.stdout, "ops")["total_alloc"]:
            why = (f"bpfprof --alloc recorded {total} bytes of the Go program's "
                   f"{last_json(r.stdout, 'ops')['total_alloc']}: Go's allocator is not probed "
                   f"by this build")
    if why:
        raise Skip(why)
    tools = ["none", "bpfprof -p"]
    res = {t: [] for t in tools}
    cpu = {t: [] for t in tools}
    for rnd in range(a.rounds):
        with bench_lock(a):
            for t in (tools if rnd % 2 == 0 else tools[::-1]):
                j = b.run(t, [str(GOWORK), str(a.go_seconds)], "ops_per_sec")
                res[t].append(j["ops_per_sec"])
                cpu[t].append(j["ops_per_cpu_sec"])
        print(f"round {rnd + 1}: " + ", ".join(f"{t} {res[t][-1]:.0f}" for t in tools),
              file=sys.stderr)
    print(f"\n### Go: throughput of an allocation-heavy program\n\n`{command_line(a, 'go')}`\n")
    print(f"goalloc {a.go_seconds}: objects made per second (one goroutine per CPU), median "
          f"(min-max) of {a.rounds} interleaved rounds; cost: 1 - profiled / unprofiled "
          f"(median of the rounds' pairs, min-max; target at most 1%).\n")
    print("| | ops/s | cost |")
    print("|---|---:|---:|")
    costs = [1 - y / x for x, y in zip(res["none"], res["bpfprof -p"])]
    print(f"| none | {med_spread(res['none'])} | - |")
    print(f"| bpfprof --alloc -p PID | {med_spread(res['bpfprof -p'])} | "
          f"{med_spread([c * 100 for c in costs], '{:.1f}')}% |")
    # Objects per CPU second of the program (its traps are its system time):
    # what the probes cost it, less at the mercy of other work on the host.
    ccosts = [1 - y / x for x, y in zip(cpu["none"], cpu["bpfprof -p"])]
    print("\nThe same per CPU second of goalloc (user + system time: the probes' traps "
          "included):\n")
    print("| | ops per CPU second | cost |")
    print("|---|---:|---:|")
    print(f"| none | {med_spread(cpu['none'])} | - |")
    print(f"| bpfprof --alloc -p PID | {med_spread(cpu['bpfprof -p'])} | "
          f"{med_spread([c * 100 for c in ccosts], '{:.1f}')}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", default="all", choices=["cost", "accuracy", "go", "all"])
    ap.add_argument("--bpfprof", default=str(OUT / "bpfprof"),
                    help="the bpfprof with --alloc (default build/bpfprof)")
    ap.add_argument("--pairs", type=int, default=50_000, help="pairs per run (cost)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", default="small,mixed,mt")
    ap.add_argument("--period", default="65536", help="accuracy: --alloc=BYTES")
    ap.add_argument("--mib", type=float, default=64, help="accuracy: MiB at each site")
    ap.add_argument("--go-seconds", type=float, default=5)
    ap.add_argument("--fallbacks", action="store_true",
                    help="cost: also bpfprof -p with the older kernels' probes "
                         "(BPFPROF_TEST_ALLOC_MODE=multi, perf)")
    ap.add_argument("--lock-rounds", action="store_true",
                    help="take /tmp/bpfprof-bench.lock for each round (cost, go) and the "
                         "accuracy run, instead of running under flock")
    ap.add_argument("--attached", default=r"profiling allocations of",
                    help="regex of bpfprof -v's line saying its probes are in")
    a = ap.parse_args()
    try:
        a.period = int(a.period)
    except ValueError:
        ap.error("--period: bytes, a number")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench_alloc.") as tmp:
        b = Bench(a, tmp)
        for what, fn in (("cost", cost), ("accuracy", accuracy), ("go", go)):
            if a.what not in (what, "all"):
                continue
            try:
                if fn(b, a) is False:
                    ok = False
            except Skip as e:
                print(f"\n{what}: skipped: {e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

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
            per CPU, or --procs N: GOMAXPROCS=N and N goroutines) prints its
            own ops per second and per CPU second; none against bpfprof
            --alloc -p PID, and a control pair: goalloc-nomemprof alone and
            under bpfprof -p (probed the same, but its runtime samples nothing:
            no probe fires), the arms' order rotated each round. goalloc links
            runtime.MemProfile, so the runtime samples in both arms (its own
            sampling is not bpfprof's cost). Then the bound, from exact counts:
            the probes' fires per second (run_cnt of bpfprof's programs, BPF
            stats turned on for the run by BPF_ENABLE_STATS) times a fire's
            price (an empty uprobe trap, the cost mode's entry-traps arm on
            allocwork, or goalloc's own added system time per fire, the larger,
            plus bpfprof's BPF run_time_ns per run) over goalloc's CPU seconds
            per second; and bpfprof's own CPU. Issue target: at most 1%
            cost. Skipped, with a message, when bpfprof --alloc records no
            allocation of the Go program (Go's allocator not probed).
  sbcl      tests/workloads/lispbench.lisp under Debian's sbcl, SHAPE for
            --sbcl-seconds: list (make-list 100: alloc_list's cons region),
            vector (256-byte vectors: alloc's mixed region), large (160 KB
            arrays: large objects); it prints its own ops per second and per
            CPU second. Arms, the order rotated each round: none, bpfprof
            --alloc -p PID (attached while it waits), close traps (bpftrace:
            an empty uprobe on gc_close_region, the floor of any design that
            traps at each region closed) and none again (a control: its cost
            against none is the host's noise). Then the
            bound, as go's: the probes' fires per second (BPF stats'
            run_cnt) x (an empty emulated uprobe trap, priced on allocwork
            + bpfprof's BPF run_time_ns per run) over the program's CPU
            seconds per second. --baseline PATH: another build's arm too.

Prints Markdown tables with the command. bpftrace 0.17 attaches its library
uprobes to every process (the pid is only its predicate), so run it alone on
the host: flock /tmp/bpfprof-bench.lock, or --lock-rounds (the lock taken for
each round, other benchmarks can run between them; each wait at most
BPFPROF_BENCH_LOCK_TIMEOUT s, default 900, then it stops naming the holder).

    sudo flock /tmp/bpfprof-bench.lock tools/bench_alloc.py [cost|accuracy|go|sbcl|all]
        [--bpfprof PATH] [--pairs N] [--rounds R] [--shapes small,mixed,mt]
        [--period BYTES] [--mib MIB] [--go-seconds S] [--procs N] [--no-control]
        [--trap-rounds N] [--sbcl-seconds S] [--sbcl-shapes list,vector,large]
    sudo tools/bench_alloc.py --lock-rounds ...
Needs make test-deps (build/workloads/allocwork, goalloc), bpftrace, heaptrack,
sbcl (for sbcl).
"""
import argparse
import contextlib
import ctypes
import json
import math
import os
import re
import shlex
import shutil
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
GONOMEM = OUT / "workloads" / "goalloc-nomemprof"
LISPBENCH = ROOT / "tests" / "workloads" / "lispbench.lisp"
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import pprof  # noqa: E402  (tests/integration/pprof.py: an independent decoder)
import benchlib  # noqa: E402  (tools/: the bounded wait for the benchmark lock)

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
    """Reads lines from stream until one matches pattern (a regex); returns them."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if re.search(pattern, line):
            return "".join(seen)
    proc.kill()
    raise RuntimeError(f"{what} never printed /{pattern}/: {''.join(seen)[-800:]}")


def stop(p, timeout=120):
    """Lets a tool end (it stops when its target exits), else SIGINT."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        return p.communicate(timeout=timeout)


def wait_rusage(w):
    """The stdout of the workload w (a Popen) and its resource usage, once it exits."""
    out = w.stdout.read()
    _, status, ru = os.wait4(w.pid, 0)
    w.returncode = os.waitstatus_to_exitcode(status)
    return out, ru


class Bench:
    def __init__(self, a, tmp):
        self.a, self.tmp = a, Path(tmp)
        self.bpfprof = a.bpfprof
        self.extra = {}

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
            t0, c0 = time.monotonic(), proc_cpu(tool.pid)
            w.send_signal(signal.SIGUSR1)
            out, ru = wait_rusage(w)
            # go: the tool's CPU and its programs' runs over the workload's life
            c1 = proc_cpu(tool.pid)
            self.extra = {"wall": time.monotonic() - t0, "progs": prog_stats(tool.pid),
                          "tool_cpu": c1 - c0 if c0 is not None and c1 is not None else None,
                          "work_cpu": ru.ru_utime + ru.ru_stime}
        finally:
            if w.poll() is None:
                w.kill()
                w.wait()
        if tool:
            if tool.args[0] == "bpftrace":  # it outlives its target: ended here
                tool.send_signal(signal.SIGINT)
            _, err = stop(tool)
            self.extra["stderr"] = getattr(tool, "head", "") + (err or "")
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

    def attach_bpfprof(self, pid, mode=None, bpfprof=None):
        env = dict(os.environ)
        if mode:  # the older kernels' probes: a return probe on every allocation call
            env["BPFPROF_TEST_ALLOC_MODE"] = mode
        p = subprocess.Popen([bpfprof or self.bpfprof, "--alloc", "-v", "-p", str(pid), "-o",
                              str(self.tmp / "p.pb.gz")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env)
        p.head = wait_stream(p.stderr, self.a.attached, p, "bpfprof -p")
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
        if tool == "baseline -p":  # go --baseline: another build of bpfprof
            return self.attached([wargv[0], "wait"] + wargv[1:],
                                 lambda pid: self.attach_bpfprof(pid, None, self.a.baseline), key)
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
    benchmarks run between rounds), each wait bounded (tools/benchlib.py:
    BPFPROF_BENCH_LOCK_TIMEOUT, the holder named); without it the caller
    holds it (flock)."""
    if not a.lock_rounds:
        yield
        return
    with benchlib.bench_lock(what="tools/bench_alloc.py --lock-rounds"):
        yield


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
        args += ["--go-seconds", str(a.go_seconds)] + \
            (["--procs", str(a.procs)] if a.procs else []) + \
            ([] if a.go_control else ["--no-control"]) + \
            (["--trap-rounds", str(a.trap_rounds)] if a.trap_rounds != 3 else []) + \
            (["--baseline", a.baseline] if a.baseline else []) + \
            (["--go-binary", a.go_binary] if a.go_binary else [])
    if sub == "sbcl":
        args += ["--sbcl-seconds", str(a.sbcl_seconds), "--sbcl-shapes", a.sbcl_shapes] + \
            (["--trap-rounds", str(a.trap_rounds)] if a.trap_rounds != 3 else []) + \
            (["--baseline", a.baseline] if a.baseline else [])
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


def bpf_stats():
    """BPF_ENABLE_STATS (BPF_STATS_RUN_TIME): the kernel counts every BPF
    program's runs and their time while the returned fd is open (a count of
    holders: the kernel.bpf_stats_enabled sysctl is left as it is). None where
    refused."""
    nr = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    if nr is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # union bpf_attr: enable_stats.type 0, run time
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(32), attr, ctypes.c_long(8))
    return fd if fd >= 0 else None


def prog_stats(pid):
    """(runs, ns) of the BPF programs pid holds open (their fds' run_cnt and
    run_time_ns in /proc/PID/fdinfo, counted while BPF stats are on), or None."""
    seen, runs, ns = set(), 0, 0
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return None
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        if "prog_id" not in info or "run_cnt" not in info or info["prog_id"] in seen:
            continue
        seen.add(info["prog_id"])
        runs += int(info["run_cnt"])
        ns += int(info["run_time_ns"])
    return (runs, ns) if seen else None


def proc_cpu(pid):
    """utime + stime of pid in seconds (None: it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


# An empty uprobe of each kind the kernel has: malloc's first instruction
# (glibc 2.36: push %r12) is emulated, free's (test %rdi,%rdi) single-stepped
# out of line, a second trap. bpfprof's Go probes sit on an emulated jbe
# (bpfprof -v: "emulated"), older builds on a single-stepped mov.
TRAP_KINDS = {"emulated": "uprobe:{libc}:malloc /pid == 0/ {{ }}",
              "single-stepped": "uprobe:{libc}:free /pid == 0/ {{ }}"}


def trap_ns(b, a):
    """{kind: [ns]}: the CPU time of one empty uprobe trap of each kind,
    allocwork bench small's CPU time with the probe less without, per call
    (malloc's and free's are one each per pair); a.trap_rounds paired runs."""
    pairs = 200_000
    argv = [str(WORK), "bench", "small", str(pairs)]
    v = {k: [] for k in TRAP_KINDS}
    for _ in range(a.trap_rounds):
        for kind, text in TRAP_KINDS.items():
            w = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
            _, ru = wait_rusage(w)
            b.extra = {}
            b.attached([argv[0], "wait"] + argv[1:],
                       lambda pid, t=text: b.attach_bpftrace(pid, t), "ns_per_pair")
            # CPU time, not the loop's wall clock: steady on a busy host
            v[kind].append(1e9 * (b.extra["work_cpu"] - ru.ru_utime - ru.ru_stime) / pairs)
    return v


GO_ARMS = (("none", "none", GOWORK), ("bpfprof -p", "bpfprof -p", GOWORK),
           ("nomemprof", "none", GONOMEM), ("nomemprof, bpfprof -p", "bpfprof -p", GONOMEM))
GO_COUNTERS = re.compile(r"Go: (\d+) allocations the runtime sampled, (\d+) frees of sampled")


def go(b, a):
    if not has_alloc(a.bpfprof):
        raise Skip(f"{a.bpfprof} has no --alloc")
    if a.procs:
        os.environ["GOMAXPROCS"] = str(a.procs)
    # Does --alloc see Go's allocations at all? A short run, its profile.
    out = b.tmp / "go.pb.gz"
    work = Path(a.go_binary) if a.go_binary else GOWORK
    r = subprocess.run([a.bpfprof, "--alloc", "-o", str(out), "--", str(work), "1"],
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
    stats_fd = bpf_stats()
    arms = [(n, t, work if p == GOWORK else p) for n, t, p in GO_ARMS
            if a.go_control or not n.startswith("nomemprof")]
    if a.baseline:
        arms.insert(2, ("baseline -p", "baseline -p", work))
    names = [x[0] for x in arms]
    res = {t: [] for t in names}
    extra = {t: [] for t in names}
    wargs = [str(a.go_seconds)] + ([str(a.procs)] if a.procs else [])
    traps = {}
    try:
        for rnd in range(a.rounds):
            with bench_lock(a):
                for name, tool, prog in arms[rnd % len(arms):] + arms[:rnd % len(arms)]:
                    b.extra = {}
                    res[name].append(b.run(tool, [str(prog)] + wargs, "ops_per_sec"))
                    extra[name].append(b.extra)
            print(f"round {rnd + 1}: " + ", ".join(f"{t} {res[t][-1]['ops_per_sec']:.0f}"
                                                  for t in names), file=sys.stderr)
        if a.trap_rounds and shutil.which("bpftrace"):
            with bench_lock(a):
                traps = trap_ns(b, a)
    finally:
        if stats_fd is not None:
            os.close(stats_fd)
    go_report(a, names, res, extra, traps, stats_fd is not None)


def go_report(a, names, res, extra, traps, stats):
    procs = a.procs or os.cpu_count()
    print(f"\n### Go: throughput of an allocation-heavy program\n\n`{command_line(a, 'go')}`\n")
    print(f"goalloc {a.go_seconds}: objects made per second ({procs} goroutine(s), GOMAXPROCS "
          f"{a.procs or 'unset'}), median (min-max) of {a.rounds} interleaved rounds (arm order "
          f"rotated); cost: 1 - profiled / unprofiled (median of the rounds' pairs, min-max; "
          f"target at most 1%). The control (goalloc-nomemprof, no runtime.MemProfile linked) "
          f"is probed the same but its probes never fire: its cost is what bpfprof's "
          f"presence costs without a trap (or the host's noise).\n")
    pairs = [("bpfprof -p", "none"), ("baseline -p", "none")]
    if "nomemprof" in names:
        pairs.append(("nomemprof, bpfprof -p", "nomemprof"))
    for key, what in (("ops_per_sec", "ops/s"), ("ops_per_cpu_sec", "ops per CPU second")):
        print(f"| {what} | median (min-max) | cost |")
        print("|---|---:|---:|")
        for t in names:
            v = [j[key] for j in res[t]]
            cost = "-"
            for p, base in pairs:
                if t == p:
                    c = [100 * (1 - y[key] / x[key]) for x, y in zip(res[base], res[p])]
                    cost = med_spread(c, "{:+.1f}") + "%"
            print(f"| goalloc{'' if t == 'none' else ' ' + t} | {med_spread(v)} | {cost} |")
        print()
    print("The bound: probe fires per second x a fire's price (an empty trap + bpfprof's BPF "
          "program) over goalloc's CPU seconds per second.\n")
    for kind, v in traps.items():
        print(f"An empty uprobe trap, {kind} (allocwork's {'malloc' if kind == 'emulated' else 'free'}"
              f", its CPU time per call trapped): {med_spread(v)} ns.\n")
    print("| arm | fires/s | trap | BPF ns per fire | goalloc's added system ns per fire "
          "| goalloc CPU s/s | bpfprof's CPU, % of a CPU | bound |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for arm, base in (("bpfprof -p", "none"), ("baseline -p", "none"),
                      ("nomemprof, bpfprof -p", "nomemprof")):
        if arm in names:
            go_bound(arm, extra[arm], res[arm], res[base], traps, stats)
    print("\nfires/s: BPF stats' run_cnt of bpfprof's programs (else bpfprof -v's counters: "
          "the profiled objects' fires, a floor); added system ns: goalloc's system time "
          "per second with bpfprof less without, per fire (the trap and the BPF both in "
          "it: a cross-check, noisy); trap: the kind of the probes' instruction (bpfprof -v "
          "says emulated); bound: fires/s x (that kind's empty trap + the BPF ns) / goalloc's "
          "CPU seconds per second; target at most 1%.")


def fire_stats(extra, res, base, seconds, fallback=None):
    """Per round of a probed arm: (fires a second, BPF ns per fire, bpfprof's
    CPU as % of a CPU, the workload's added system ns per fire), from BPF
    stats' run counts (extra's "progs") over seconds(extra, result); rounds
    without them: fallback(extra) fires a second if given (None: none)."""
    fires, bpf_ns, agent, sys_ns = [], [], [], []
    for x, j, b0 in zip(extra, res, base):
        if x.get("progs"):
            runs, ns = x["progs"]
            per_s = runs / seconds(x, j)
            fires.append(per_s)
            bpf_ns.append(ns / runs if runs else 0)
            added = j["sys_seconds"] / j["seconds"] - b0["sys_seconds"] / b0["seconds"]
            if runs:
                sys_ns.append(1e9 * added / per_s)
        elif fallback and x.get("stderr"):
            f = fallback(x)
            if f is not None:
                fires.append(f)
        if x.get("tool_cpu") is not None:
            agent.append(100 * x["tool_cpu"] / x["wall"])
    return fires, bpf_ns, agent, sys_ns


def trap_bound(fires, bpf_ns, traps, kind, cpu, fmt):
    """fires/s x (an empty trap of that kind + the BPF ns) over the
    workload's CPU seconds a second, as a percentage (fmt); "-" without fires
    or a trap's price."""
    if not (fires and statistics.median(fires) and traps.get(kind)):
        return "-"
    per = statistics.median(traps[kind]) + (statistics.median(bpf_ns) if bpf_ns else 0)
    return fmt.format(100 * statistics.median(fires) * per * 1e-9 / cpu) + "%"


def go_bound(arm, extra, res, base, traps, stats):
    kind = "single-stepped"
    for x in extra:
        if "emulated)" in x.get("stderr", "") or "emulated," in x.get("stderr", ""):
            kind = "emulated"

    def counters(x):  # without BPF stats: the profiled objects' two traps, a floor
        m = GO_COUNTERS.search(x["stderr"])
        return (int(m.group(1)) + int(m.group(2))) / x["wall"] if m else None
    fires, bpf_ns, agent, sys_ns = fire_stats(extra, res, base, lambda x, j: x["wall"], counters)
    cpu = statistics.median(j["cpu_seconds"] / j["seconds"] for j in res)
    bound = trap_bound(fires, bpf_ns, traps, kind, cpu, "{:.2f}")
    print(f"| {arm} | {med_spread(fires) if fires else '-'} | "
          f"{kind if fires and statistics.median(fires) else '-'} | "
          f"{med_spread(bpf_ns) if bpf_ns else '-'} | {med_spread(sys_ns) if sys_ns else '-'} | "
          f"{cpu:.2f} | {med_spread(agent, '{:.1f}') if agent else '-'} | {bound} |")


SBCL_SHAPES = {"list": "make-list 100, 1,600 B of conses", "vector": "make-array 30, 256 B",
               "large": "160 KB double-float arrays"}
SBCL_ARMS = ("none", "bpfprof -p", "close traps", "none again")
# The floor of probing each region's close: an empty uprobe on gc_close_region (bpftrace).
# (attach_bpftrace formats it again: its braces doubled)
SBCL_TRAPS = "uprobe:{exe}:gc_close_region /pid == 0/ {{{{ }}}}"


def sbcl_bench(b, a):
    exe = shutil.which("sbcl")
    if not exe:
        raise Skip("no sbcl (apt-get install sbcl)")
    if not has_alloc(a.bpfprof):
        raise Skip(f"{a.bpfprof} has no --alloc")
    shapes = a.sbcl_shapes.split(",")
    for s in shapes:
        if s not in SBCL_SHAPES:
            raise Skip(f"--sbcl-shapes: {s} is none of {', '.join(SBCL_SHAPES)}")
    arms = SBCL_ARMS[:2] + (("baseline -p",) if a.baseline else ()) + \
        (SBCL_ARMS[2:3] if shutil.which("bpftrace") else ()) + SBCL_ARMS[3:]
    stats_fd = bpf_stats()
    res = {s: {t: [] for t in arms} for s in shapes}
    extra = {s: {t: [] for t in arms} for s in shapes}
    traps = {}
    try:
        for rnd in range(a.rounds):
            with bench_lock(a):
                for s in shapes:
                    argv = [exe, "--script", str(LISPBENCH), s, str(a.sbcl_seconds)]
                    k = rnd % len(arms)
                    for t in arms[k:] + arms[:k]:
                        if t.endswith(" -p"):
                            b.extra = {}
                            path = a.baseline if t == "baseline -p" else a.bpfprof
                            res[s][t].append(b.attached(
                                argv + ["wait"],
                                lambda pid, p=path: b.attach_bpfprof(pid, None, p),
                                "ops_per_sec"))
                            extra[s][t].append(b.extra)
                        elif t == "close traps":
                            res[s][t].append(b.attached(
                                argv + ["wait"],
                                lambda pid: b.attach_bpftrace(
                                    pid, SBCL_TRAPS.format(exe=os.path.realpath(exe))),
                                "ops_per_sec"))
                        else:
                            res[s][t].append(b.run("none", argv, "ops_per_sec"))
                    print(f"round {rnd + 1} {s}: " + ", ".join(
                        f"{t} {res[s][t][-1]['ops_per_sec']:.0f}" for t in arms),
                        file=sys.stderr)
        if a.trap_rounds and shutil.which("bpftrace"):
            with bench_lock(a):
                traps = trap_ns(b, a)
    finally:
        if stats_fd is not None:
            os.close(stats_fd)
    sbcl_report(a, shapes, arms, res, extra, traps)


def sbcl_report(a, shapes, arms, res, extra, traps):
    print(f"\n### SBCL: throughput of an allocation-heavy Lisp loop\n\n"
          f"`{command_line(a, 'sbcl')}`\n")
    print(f"sbcl --script lispbench.lisp SHAPE {a.sbcl_seconds}: operations per second, median "
          f"(min-max) of {a.rounds} interleaved rounds (arm order rotated); cost: 1 - profiled "
          f"/ unprofiled (each round's pair, median and min-max). none again is a second "
          f"unprofiled run in each round: its cost against none is the host's noise; close "
          f"traps: an empty uprobe on gc_close_region (bpftrace), the trap alone"
          + (f"; baseline -p: {a.baseline}" if a.baseline else "") + ".\n")
    for key, what in (("ops_per_sec", "ops/s"), ("ops_per_cpu_sec", "ops per CPU second")):
        print("| shape | GB/s consed | none " + what + " |"
              + "".join(f" {t} {what} | cost |" for t in arms[1:]))
        print("|---|---:|---:|" + "---:|---:|" * (len(arms) - 1))
        for s in shapes:
            r = res[s]

            def cost(t):
                return med_spread([100 * (1 - y[key] / x[key])
                                   for x, y in zip(r["none"], r[t])], "{:+.1f}") + "%"
            gbs = statistics.median(j["bytes_per_sec"] for j in r["none"]) / 1e9
            print(f"| {s} ({SBCL_SHAPES[s]}) | {gbs:.1f} | "
                  f"{med_spread([j[key] for j in r['none']])} |"
                  + "".join(f" {med_spread([j[key] for j in r[t]])} | {cost(t)} |"
                            for t in arms[1:]))
        print()
    for kind, v in traps.items():
        print(f"An empty uprobe trap, {kind} (allocwork's "
              f"{'malloc' if kind == 'emulated' else 'free'}, its CPU time per call trapped): "
              f"{med_spread(v)} ns.\n")
    kind = "emulated"  # alloc's and gc_close_region's probed instructions (push, jmp)
    print("| shape | arm | fires/s | BPF ns per fire | added system ns per fire | CPU s/s "
          "| bpfprof's CPU, % of a CPU | bound |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for s, arm in [(s, t) for s in shapes for t in arms if t.endswith(" -p")]:
        fires, bpf_ns, agent, sys_ns = fire_stats(extra[s][arm], res[s][arm], res[s]["none"],
                                                  lambda x, j: j["seconds"])
        cpu = statistics.median(j["cpu_seconds"] / j["seconds"] for j in res[s][arm])
        bound = trap_bound(fires, bpf_ns, traps, kind, cpu, "{:.1f}")
        print(f"| {s} | {arm} | {med_spread(fires) if fires else '-'} | "
              f"{med_spread(bpf_ns) if bpf_ns else '-'} | "
              f"{med_spread(sys_ns) if sys_ns else '-'} | {cpu:.2f} | "
              f"{med_spread(agent, '{:.1f}') if agent else '-'} | {bound} |")
    print("\nfires/s: BPF stats' run_cnt of bpfprof's programs over the loop's seconds (the "
          "run's start and end included: a slight overcount); bound: fires/s x (an empty "
          "emulated trap + the BPF ns) / the program's CPU seconds per second; added system "
          "ns: its system time per second with bpfprof less without, per fire (a noisy "
          "cross-check: the SBCL GC's own system time varies).")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", default="all", choices=["cost", "accuracy", "go", "sbcl", "all"])
    ap.add_argument("--bpfprof", default=str(OUT / "bpfprof"),
                    help="the bpfprof with --alloc (default build/bpfprof)")
    ap.add_argument("--pairs", type=int, default=50_000, help="pairs per run (cost)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", default="small,mixed,mt")
    ap.add_argument("--period", default="65536", help="accuracy: --alloc=BYTES")
    ap.add_argument("--mib", type=float, default=64, help="accuracy: MiB at each site")
    ap.add_argument("--go-seconds", type=float, default=5)
    ap.add_argument("--procs", type=int, default=0,
                    help="go: GOMAXPROCS and goroutines of goalloc (default: unset, one "
                         "goroutine per CPU)")
    ap.add_argument("--no-control", dest="go_control", action="store_false",
                    help="go: without the control arms (goalloc-nomemprof, whose probes "
                         "never fire)")
    ap.add_argument("--go-binary", metavar="PATH",
                    help="go: this build of tests/workloads/goalloc instead (e.g. "
                    "build/workloads/goalloc-stripped, -ldflags='-s -w')")
    ap.add_argument("--baseline", metavar="PATH",
                    help="go, sbcl: also the workload under this other build of bpfprof "
                         "(an arm)")
    ap.add_argument("--trap-rounds", type=int, default=3,
                    help="go: paired allocwork runs pricing an empty uprobe trap (0: none)")
    ap.add_argument("--sbcl-seconds", type=int, default=3,
                    help="sbcl: seconds of each run of lispbench.lisp")
    ap.add_argument("--sbcl-shapes", default="list,vector,large",
                    help="sbcl: lispbench.lisp's shapes (list, vector, large)")
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
        for what, fn in (("cost", cost), ("accuracy", accuracy), ("go", go),
                         ("sbcl", sbcl_bench)):
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

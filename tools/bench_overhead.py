#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_overhead.py - bpfprof vs bpftrace vs perf, side by side on one workload.

For each profiler, in turn, on the same running workload (a CPU-bound process
with a deep-ish call chain and a syscall-heavy one, busy on every CPU):

  * per-sample BPF cost: run_time_ns / run_cnt of its perf_event program
    (kernel.bpf_stats_enabled=1; perf has no BPF program, so "-")
  * the profiler's own CPU time (user+sys) and peak RSS, from wait4()
  * stop-to-output: from SIGINT (end of sampling) to the finished output
    (for perf: record's exit plus the whole "perf script" run)
  * samples in the output

With --together, each bpfprof variant - the default, --unwind fp, and
--kernel-unwind kernel (kernel stacks by bpf_get_stack()) - runs at the same
time as bpftrace instead, each on its own events over the same seconds of
the same workload, and both programs' run_time_ns / run_cnt are taken over
one common window (after a second of start-up). The VM's slow and fast
spells then hit both alike, so the per-window ratio to bpftrace is stable
where back-to-back runs swing by +-50%. Pairs, not all at once: programs
that both call the kernel's unwinder warm its tables for each other. The
two run at F and F - 2 Hz, swapped every round: at one frequency their
timers keep one phase for the whole window, and whichever fires just after
the other finds the task, its stack and the kernel's unwind data in the
cache (per-window ratios then swing from 0.35 to 0.7; two apart, the phase
turns twice a second and evens out).

With --compare OTHER, this build and another bpfprof binary run in pairs the
same way (alternating which starts first), to judge a change to the program
(--compare-pid: both with -p of the CPU-bound workload instead of -a):
  git worktree add /tmp/old HEAD && make -C /tmp/old build/bpfprof
  sudo tools/bench_overhead.py --compare /tmp/old/build/bpfprof --rounds 8

--shape shallow swaps the CPU-bound workload for a two-frame loop built with
frame pointers (tests/workloads/shallow.c): short user stacks, where the
fixed per-sample costs weigh most.

Usage: sudo tools/bench_overhead.py [--seconds 10] [--rounds 3] [--freq 99] [--together]
       [--shape mixed|shallow]
       [--compare BPFPROF [--compare-args '...'] [--compare-pid]]
Prints a Markdown table (docs/performance.md has the latest one).
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BPFPROF = ROOT / "build" / "bpfprof"
WL = ROOT / "build" / "workloads"


def prog_stats(name_prefixes):
    """{prog id: (name, run_time_ns, run_cnt)} for perf_event programs."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    res = {}
    for p in json.loads(out.stdout or "[]"):
        if p.get("type") != "perf_event":
            continue
        name = p.get("name", "")
        if any(name.startswith(x) for x in name_prefixes):
            res[p["id"]] = (name, p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return res


def perf_event_progs_of(pid):
    """Ids of the perf_event BPF programs process pid holds (its fdinfo)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(ln.split(":", 1) for ln in f.read().splitlines() if ":" in ln)
        except OSError:
            continue
        if info.get("prog_type", "").strip() == "7" and "prog_id" in info:  # perf_event
            ids.add(int(info["prog_id"]))
    return ids


def prog_stats_by_id(ids):
    """{prog id: (name, run_time_ns, run_cnt)} for these programs."""
    want = set(ids)
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    return {p["id"]: (p.get("name", ""), p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.loads(out.stdout or "[]") if p["id"] in want}


def measure(label, argv, seconds, prog_names, post_argv=None, count=None):
    """Runs a profiler in a fresh helper process so RUSAGE_CHILDREN is its own."""
    helper = [sys.executable, __file__, "--_one", json.dumps({
        "argv": argv, "seconds": seconds, "progs": prog_names, "post": post_argv})]
    out = subprocess.run(helper, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{label} failed:\n{out.stderr}")
    r = json.loads(out.stdout)
    r["label"] = label
    return r


def one(spec):
    """Child side of measure(): start profiler, sample, stop, post-process."""
    argv, seconds, progs, post = spec["argv"], spec["seconds"], spec["progs"], spec["post"]
    before = set(prog_stats(progs)) if progs else set()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while progs and time.monotonic() - t0 < 15:
        if any(k not in before for k in prog_stats(progs)):
            break
        time.sleep(0.05)
    if not progs:
        time.sleep(1.0)
    time.sleep(seconds)
    last = {k: v for k, v in prog_stats(progs).items() if k not in before} if progs else {}
    t_stop = time.monotonic()
    proc.send_signal(signal.SIGINT)
    # bpftrace 0.17 now and then sleeps through its SIGINT (seen once in
    # ~30 runs, woken by a ptrace attach): ask again rather than hang.
    for attempt in range(4):
        try:
            stdout, stderr = proc.communicate(timeout=30)
            break
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT if attempt < 2 else signal.SIGKILL)
    else:
        stdout, stderr = proc.communicate()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t_out = time.monotonic()
    cpu = ru.ru_utime + ru.ru_stime
    rss = ru.ru_maxrss
    text = stdout.decode(errors="replace")
    if post:
        p = subprocess.run(post, capture_output=True)
        text = p.stdout.decode(errors="replace")
        t_out = time.monotonic()
        ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru2.ru_utime + ru2.ru_stime
        rss = max(rss, ru2.ru_maxrss)
    run_ns = sum(v[1] for v in last.values())
    run_cnt = sum(v[2] for v in last.values())
    print(json.dumps({
        "rc": proc.returncode,
        "stop_to_output_s": t_out - t_stop,
        "cpu_s": cpu,
        "maxrss_kb": rss,
        "bpf_ns_per_sample": (run_ns / run_cnt) if run_cnt else None,
        "bpf_runs": run_cnt,
        "output": text[-2_000_000:],
        "stderr": stderr.decode(errors="replace")[-4000:],
    }))


def median_run(rs):
    """One result whose numeric fields are the medians over the rounds."""
    out = dict(rs[len(rs) // 2])
    for k in ("stop_to_output_s", "cpu_s", "maxrss_kb", "bpf_ns_per_sample"):
        vals = sorted(r[k] for r in rs if r[k] is not None)
        out[k] = vals[len(vals) // 2] if vals else None
    return out


TOGETHER = [
    ("bpfprof", lambda F: [str(BPFPROF), "-F", str(F), "-a", "-q", "-o", "/dev/null"], "do_sample"),
    ("bpfprof --unwind fp", lambda F: [str(BPFPROF), "-F", str(F), "-a", "-q", "--unwind", "fp",
                                       "-o", "/dev/null"], "do_sample"),
    ("bpfprof --kernel-unwind kernel", lambda F: [str(BPFPROF), "-F", str(F), "-a", "-q",
                                                  "--kernel-unwind", "kernel", "-o", "/dev/null"],
     "do_sample"),
    ("bpftrace", lambda F: ["bpftrace", "-e", f"profile:hz:{F} {{ @[kstack, ustack, comm] = count(); }}"],
     None),  # bpftrace names the program after the probe: "99"
]


def proc_cpu(pid):
    """utime + stime of process pid, in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def together_round(F, seconds, members, freqs=None):
    """{label: (ns per sample, runs, its process's CPU seconds)} for members
    (TOGETHER entries) over one common window; freqs: each member's frequency
    (default F for all)."""
    procs, ids = [], {}
    freqs = freqs or [F] * len(members)
    try:
        for (label, argv, prog), f in zip(members, freqs):
            proc = subprocess.Popen(argv(f), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            procs.append(proc)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 15:
                # The program this process loaded: not any new one of that
                # name (other bpfprof runs on a shared machine load theirs).
                mine = perf_event_progs_of(proc.pid)
                if mine:
                    ids[label] = max(mine)
                    break
                time.sleep(0.05)
            else:
                raise SystemExit(f"bench_overhead: {label} did not start")
        time.sleep(1.0)  # past start-up: first notices, unwind tables
        a = prog_stats_by_id(ids.values())
        cpu_a = [proc_cpu(p.pid) for p in procs]
        time.sleep(seconds)
        b = prog_stats_by_id(ids.values())
        cpu_b = [proc_cpu(p.pid) for p in procs]
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:  # bpftrace 0.17 may sleep through SIGINT
                p.kill()
                p.wait()
    out = {}
    for i, (label, pid) in enumerate(ids.items()):
        dn, dc = b[pid][1] - a[pid][1], b[pid][2] - a[pid][2]
        out[label] = (dn / dc if dc else float("nan"), dc, cpu_b[i] - cpu_a[i])
    return out


def together(F, seconds, rounds):
    """Each bpfprof variant paired with bpftrace, round after round. Pairs,
    not all at once: two programs that both call the kernel's unwinder warm
    its tables for each other, which would flatter whichever shares them."""
    bt = TOGETHER[-1]
    per = {label: [] for label, _, _ in TOGETHER[:-1]}
    for i in range(rounds):
        for m in TOGETHER[:-1]:
            r = together_round(F, seconds, [m, bt], [F, F - 2] if i % 2 else [F - 2, F])
            per[m[0]].append((r[m[0]][0], r[bt[0]][0], r[m[0]][1]))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"\nEach with bpftrace at the same time on the same workload: -F {F}, "
          f"{seconds:g} s windows, {rounds} rounds, kernel {os.uname().release}\n")
    print("| program | BPF ns/sample (median) | bpftrace in the same windows (median) "
          "| x bpftrace (median of per-window ratios) | per-window ratios | runs per window |")
    print("|---|---:|---:|---:|---|---:|")
    for label, rs in per.items():
        ratios = [a / b for a, b, _ in rs]
        print(f"| {label} | {med([a for a, _, _ in rs]):,.0f} | {med([b for _, b, _ in rs]):,.0f} | "
              f"{med(ratios):.2f} | {' / '.join(f'{x:.2f}' for x in ratios)} | "
              f"{med([n for _, _, n in rs])} |")


def compare(F, seconds, rounds, other, extra, target=None):
    """This build and another bpfprof binary at the same time, same options:
    per-window ratio of their per-sample BPF cost (for judging a change), and
    what that comes to per second (runs x cost: a target's filter runs on
    every CPU's samples), and each one's own CPU time. target: -p PID
    instead of -a."""
    # F and F - 2 Hz, swapped every round: at one frequency the two programs'
    # timers keep one phase for a whole window, and whichever runs just after
    # the other finds the task and its stack in the cache. Two apart, the
    # phase turns twice a second and that evens out.
    args = lambda F: ["-F", str(F)] + (["-p", str(target)] if target else ["-a"]) + \
        ["-q", "-o", "/dev/null"] + extra
    a = ("this build", lambda f: [str(BPFPROF)] + args(f), "do_sample")
    b = (other, lambda f: [other] + args(f), "do_sample")
    rs = []
    for i in range(rounds):
        if i % 2 == 0:
            r = together_round(F, seconds, [a, b], [F, F - 2])
        else:
            r = together_round(F, seconds, [b, a], [F, F - 2])
        rs.append((r[a[0]], r[b[0]]))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    ratios = [x[0] / y[0] for x, y in rs]
    per_s = lambda r: r[0] * r[1] / seconds / 1000  # BPF us per second
    print(f"\n{' '.join(args(F))}: this build vs {other}, {seconds:g} s windows, {rounds} rounds\n")
    print("| this build ns/sample (median) | other (median) | ratio (median) | per-window ratios "
          "| BPF us/s this / other (median) | runs per window this / other (median) "
          "| own CPU ms/s this / other (median) |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    print(f"| {med([x[0] for x, _ in rs]):,.0f} | {med([y[0] for _, y in rs]):,.0f} | "
          f"{med(ratios):.2f} | {' / '.join(f'{x:.2f}' for x in ratios)} | "
          f"{med([per_s(x) for x, _ in rs]):,.0f} / {med([per_s(y) for _, y in rs]):,.0f} | "
          f"{med([x[1] for x, _ in rs])} / {med([y[1] for _, y in rs])} | "
          f"{med([x[2] for x, _ in rs]) / seconds * 1000:.1f} / "
          f"{med([y[2] for _, y in rs]) / seconds * 1000:.1f} |")


def folded_samples(text):
    n = 0
    for line in text.splitlines():
        _, _, c = line.rpartition(" ")
        if c.isdigit():
            n += int(c)
    return n


def bpftrace_samples(text):
    """Sums the counts of bpftrace's map print: entries end in "]: N"."""
    n = 0
    for line in text.splitlines():
        if line.startswith("@: ") and line[3:].strip().isdigit():  # @ = count()
            n += int(line[3:])
            continue
        head, sep, num = line.rpartition("]: ")
        if sep and num.strip().isdigit():
            n += int(num)
    return n


def perf_script_samples(text):
    return sum(1 for block in text.split("\n\n") if block.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternate the profilers this many times; report medians")
    ap.add_argument("--together", action="store_true",
                    help="run the BPF programs at the same time, over one window")
    ap.add_argument("--compare", metavar="BPFPROF",
                    help="instead: this build against another bpfprof binary, in pairs")
    ap.add_argument("--compare-args", default="",
                    help="extra options for both sides of --compare, e.g. '--unwind fp'")
    ap.add_argument("--compare-pid", action="store_true",
                    help="--compare with -p of the CPU-bound workload instead of -a")
    ap.add_argument("--shape", choices=("mixed", "shallow"), default="mixed",
                    help="the workload: mixed (busy: a deep-ish call chain, plus a /dev/zero "
                         "reader; default) or shallow (a two-frame loop built with frame "
                         "pointers, plus the same reader)")
    ap.add_argument("--_one")
    args = ap.parse_args()
    if args._one:
        one(json.loads(args._one))
        return
    if os.geteuid() != 0:
        raise SystemExit("bench_overhead: run as root")
    for tool in ("bpftrace", "perf", "bpftool"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            raise SystemExit(f"bench_overhead: {tool} is missing (tools/install-deps.sh)")
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/bpfprof", "build/workloads/busy",
                    "build/workloads/syscalls", "build/workloads/shallow"], check=True)
    old_stats = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    ncpu = os.cpu_count()
    cpu_bound = "busy" if args.shape == "mixed" else "shallow"
    print(f"workload: {cpu_bound} on {max(1, ncpu - 1)} thread(s) and a /dev/zero reader")
    workloads = [subprocess.Popen([str(WL / cpu_bound), "100000", str(max(1, ncpu - 1))],
                                  stdout=subprocess.DEVNULL),
                 subprocess.Popen([str(WL / "syscalls"), "100000"])]
    tmp = Path(tempfile.mkdtemp(prefix="bpfprof-bench-"))
    F, S = args.freq, args.seconds
    try:
        time.sleep(0.5)
        if args.compare:
            compare(F, S, args.rounds, args.compare, args.compare_args.split(),
                    workloads[0].pid if args.compare_pid else None)
            return
        if args.together:
            together(F, S, args.rounds)
            return
        runs = {}
        for _ in range(args.rounds):
            for r in [
                measure("bpfprof", [str(BPFPROF), "-F", str(F), "-a", "-q"], S, ["do_sample"]),
                measure("bpfprof --unwind fp", [str(BPFPROF), "-F", str(F), "-a", "-q",
                                                "--unwind", "fp"], S, ["do_sample"]),
                measure("bpfprof --kernel-unwind kernel", [str(BPFPROF), "-F", str(F), "-a", "-q",
                                                           "--kernel-unwind", "kernel"],
                        S, ["do_sample"]),
                measure("bpftrace", ["bpftrace", "-e",
                                     f"profile:hz:{F} {{ @[kstack, ustack, comm] = count(); }}"],
                        S, [str(F)]),  # bpftrace names the program after the probe: "99"
                # What bpftrace's cost is made of: the program alone, then each
                # stack walk alone.
                measure("bpftrace @ = count() (reference)", ["bpftrace", "-e",
                        f"profile:hz:{F} {{ @ = count(); }}"], S, [str(F)]),
                measure("bpftrace @[kstack] = count() (reference)", ["bpftrace", "-e",
                        f"profile:hz:{F} {{ @[kstack] = count(); }}"], S, [str(F)]),
                measure("bpftrace @[ustack] = count() (reference)", ["bpftrace", "-e",
                        f"profile:hz:{F} {{ @[ustack] = count(); }}"], S, [str(F)]),
                measure("perf record -g + perf script",
                        ["perf", "record", "-e", "cpu-clock", "-F", str(F), "-a", "-g", "-q",
                         "-o", str(tmp / "perf.data")], S, [],
                        post_argv=["perf", "script", "-i", str(tmp / "perf.data")]),
            ]:
                runs.setdefault(r["label"], []).append(r)
        results = [median_run(v) for v in runs.values()]
    finally:
        for w in workloads:
            w.kill()
            w.wait()
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(old_stats)
        subprocess.run(["rm", "-rf", str(tmp)])

    counters = {"bpfprof": folded_samples, "bpfprof --unwind fp": folded_samples,
                "bpfprof --kernel-unwind kernel": folded_samples,
                "bpftrace": bpftrace_samples}
    print(f"\nWorkload: busy ({max(1, ncpu - 1)} threads) + syscalls on {ncpu} CPUs, "
          f"-F {F}, {S:g} s of sampling, medians of {args.rounds} rounds, "
          f"kernel {os.uname().release}, load average {os.getloadavg()[0]:.2f}\n")
    print("| profiler | BPF ns/sample | profiler CPU (s) | peak RSS (MiB) | stop-to-output (s) | samples |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        if r["label"].endswith("(reference)"):
            count = bpftrace_samples
        else:
            count = counters.get(r["label"], perf_script_samples)
        n = count(r["output"])
        ns = f"{r['bpf_ns_per_sample']:.0f}" if r["bpf_ns_per_sample"] else "-"
        print(f"| {r['label']} | {ns} | {r['cpu_s']:.2f} | {r['maxrss_kb'] / 1024:.1f} | "
              f"{r['stop_to_output_s']:.2f} | {n} |")


if __name__ == "__main__":
    main()

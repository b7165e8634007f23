# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""--unwind: user stacks through code without frame pointers (.eh_frame tables in BPF).

Debian's binaries are built without frame pointers: frame-pointer walks stop
after the leaf. The reference for complete stacks is perf record
--call-graph=dwarf on the same process at the same time; see perfcmp.py for
how frames are matched and what "reaching the bottom" means.
"""
import math
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (BPFPROF, Workload, count_with, cpu_seconds, frames_of, has_chain,
                      parse_folded, run_bpfprof, total, wait_attached, wait_for, wl, Sampled,
                      assert_count, assert_count_at_least, assert_most, SIGMAS)

FREQ = 99
from perfcmp import (Bottom, hottest_perf_chains, ours_has_chain, perf_reaches, perf_samples,
                     start_perf)

SECONDS = 4


@pytest.fixture(scope="module")
def bottom():
    return Bottom()


@pytest.fixture(scope="module")
def xz_input(tmp_path_factory):
    """~40 MB of compressible binary data: shared libraries back to back."""
    path = tmp_path_factory.mktemp("xz") / "input.bin"
    libs = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("*.so*"))
    with open(path, "wb") as out:
        for lib in libs:
            if out.tell() > 40 << 20:
                break
            if lib.is_file() and not lib.is_symlink():
                out.write(lib.read_bytes())
    assert path.stat().st_size > 10 << 20
    return path


PY_WORK = """
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work(until):
    while time.time() < until:
        fib(18)
        sorted(str(i) for i in range(2000))
work(time.time() + float(sys.argv[1]))
"""

SQL = ("WITH RECURSIVE c(x) AS (VALUES(1) UNION ALL SELECT x+1 FROM c WHERE x<50000000) "
       "SELECT sum(x*x%7), count(DISTINCT x%1000), max(length(printf('%x', x))) FROM c;")


def workload_argv(name, xz_input, tmp_path):
    if name == "xz":
        return ["xz", "-9e", "-T1", "-c", str(xz_input)]
    if name == "sqlite3":
        return ["sqlite3", ":memory:", SQL]
    script = tmp_path / "work.py"
    script.write_text(PY_WORK)
    return ["/usr/bin/python3", str(script), "60"]


def bpfprof_bg(args):
    return subprocess.Popen([str(BPFPROF)] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=60):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"bpfprof exited {proc.returncode}:\n{err}"
    return out, err


def share(folded, pred):
    n = total(folded)
    assert n > 0
    return count_with(folded, pred) / n


def assert_most_stacks(folded, pred, what, at_least=0.95):
    """At least that share of the samples' stacks satisfy pred (assert_most:
    binomial tolerance from the sample count, however few a busy machine gave)."""
    assert_most(count_with(folded, pred), total(folded), what, share=at_least)


@pytest.mark.parametrize("name", ["xz", "sqlite3", "python3"])
def test_debian_binaries_match_perf_dwarf(name, xz_input, tmp_path, bottom):
    """Samples reaching __libc_start_call_main: >= 99% of perf --call-graph=dwarf's share,
    the hottest caller chains identical; frame pointers (--unwind fp) reach it ~never."""
    data = tmp_path / "perf.data"
    with Workload(*workload_argv(name, xz_input, tmp_path)) as w:
        perf = start_perf(w.pid, SECONDS, data)
        fp = bpfprof_bg(["-p", w.pid, "-d", SECONDS, "--unwind", "fp"])
        # Native frames against perf's: Python frames would stand in for the
        # interpreter loop's (test_python.py covers those).
        auto = run_bpfprof(["-p", w.pid, "-d", SECONDS, "-v", "--no-python"])
        fp_out, _ = finish(fp)
        perf.wait(timeout=60)
        assert w.proc.poll() is None, f"{name} finished before the profile did"
    ours = parse_folded(auto.stdout)
    samples = perf_samples(data)
    # ~400 samples each on an idle machine; a busy one gives the workload
    # less, and the tolerances below grow with it (never a fixed count).
    perf_n, our_n = len(samples), total(ours)
    perf_share = sum(1 for s in samples if perf_reaches(s)) / max(perf_n, 1)
    our_share = share(ours, bottom.reaches)
    fp_share = share(parse_folded(fp_out), bottom.reaches)
    assert_most(round(perf_share * perf_n), perf_n, "perf itself reaching the bottom", share=0.9)
    # One-sided: ours at least perf's share, within SIGMAS of the difference
    # of two binomial shares (a walk that stops early anywhere loses far more).
    p = (perf_share * perf_n + our_share * our_n) / (perf_n + our_n)
    tol = SIGMAS * math.sqrt(p * (1 - p) * (1 / perf_n + 1 / our_n)) + 0.01
    assert our_share >= perf_share - tol, \
        f"{name}: {our_share:.1%} of {our_n} stacks reach __libc_start_call_main, " \
        f"perf {perf_share:.1%} of {perf_n} (tolerance {tol:.3f})\n{auto.stderr}"
    # The problem this solves, visible: Debian builds without frame pointers.
    assert fp_share < 0.2, f"--unwind fp reached the bottom in {fp_share:.1%}?"

    hot = hottest_perf_chains(samples)
    assert hot, "perf has no hot complete chain"
    for chain, sh in hot:
        # Absent by chance only if ours expect few samples of it: checked
        # where SIGMAS Poisson deviations below the expected count is still
        # above zero (sh x our_n > SIGMAS^2: all of perf's top chains on an
        # idle machine, the hottest ones on a busy one).
        if sh * our_n <= SIGMAS ** 2:
            continue
        pretty = ";".join(f[1] if f[1] != "[unknown]" else f"{f[2]}+0x{f[0] + 1:x}"
                          for f in reversed(chain))
        assert ours_has_chain(ours, chain, bottom), \
            f"perf's chain ({sh:.0%} of its samples) is not in bpfprof's output: {pretty}"


def test_mixed_frame_pointer_code_and_fp_less_library(bottom):
    """FP code without tables -> FP-less library with tables -> FP callback: one walk,
    both kinds of steps."""
    with Workload(wl("uw_mixed"), 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "-v"], [w.pid], until_cpu=3, timeout=180)
    folded = parse_folded(p.stdout)
    n = total(folded)
    full = ["main", "mixed_run", "nofp_outer", "nofp_inner", "mixed_cb", "mixed_leaf"]
    in_cb = count_with(folded, lambda s: has_chain(s, full))
    in_lib = count_with(folded, lambda s: has_chain(s, full[:4]))
    assert_most(in_cb + in_lib, n, "through the library " + p.stdout, share=0.95)
    assert_most(in_cb, n, "in the callback " + p.stdout, share=0.5)
    assert_most_stacks(folded, bottom.reaches, "reaching the bottom")
    m = re.search(r"(\d+) frames from tables, (\d+) by frame pointers", p.stderr)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, p.stderr
    # A steady loop repeats its return addresses: most frames come from the row
    # cache (leaf pcs vary more; 77-93% hits seen).
    m = re.search(r"row cache: (\d+) hits, (\d+) misses", p.stderr)
    assert m and int(m.group(1)) > int(m.group(2)), p.stderr


def test_leaf_without_frame_pointer_keeps_its_caller():
    """gcc omits the frame pointer in leaves even with -fno-omit-frame-pointer."""
    with Workload(wl("uw_leaf"), 30) as w:
        fp = bpfprof_bg(["-p", w.pid, "-d", 3, "--unwind", "fp"])
        auto = parse_folded(run_bpfprof(["-p", w.pid, "-d", 3]).stdout)
        fp = parse_folded(finish(fp)[0])
    chain = ["main", "leaf_caller", "leaf_nofp"]
    assert_most_stacks(auto, lambda s: has_chain(s, chain), f"{chain} {auto}")
    # Frame pointers skip leaf_caller: its frame is found through the leaf's rbp.
    assert share(fp, lambda s: has_chain(s, chain)) < 0.2, fp
    assert_most_stacks(fp, lambda s: has_chain(s, ["main", "leaf_nofp"]), f"main;leaf_nofp {fp}",
                       at_least=0.5)


def test_dlopen_after_start():
    """A library mapped after the process's tables were installed: the walker asks for a
    refresh and the stacks through it become complete."""
    # dlopen once bpfprof is sampling (its tables in), however long its
    # start-up takes on a busy machine; then 3 s of the plugin's CPU time.
    with Workload(wl("uw_dlopen"), 300, "signal") as w:
        proc = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "-d", "120", "-v"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            head = wait_attached(proc)
            c0 = cpu_seconds(w.pid)
            w.proc.send_signal(signal.SIGUSR1)
            wait_for(lambda: cpu_seconds(w.pid) - c0 >= 3, "3 CPU s after dlopen", timeout=120)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        cpu = cpu_seconds(w.pid) - c0
    err = head + err
    assert proc.returncode == 0, err
    folded = parse_folded(out)
    in_plugin = count_with(folded, lambda s: frames_of(s)[-1] in ("plugin_leaf", "plugin_work"))
    # Nearly all samples after the dlopen have their leaf in the plugin.
    assert_count_at_least(in_plugin, 0.9 * FREQ * cpu, f"in the plugin, {cpu:.2f} CPU s")
    complete = count_with(folded, lambda s: has_chain(s, ["main", "run_plugin", "plugin_work",
                                                          "plugin_leaf"]))
    assert_most(complete, in_plugin, "complete stacks through the plugin " + out)
    m = re.search(r"(\d+) refresh requests", err)
    assert m and int(m.group(1)) >= 1, err


def test_process_with_thousands_of_mappings(bottom):
    with Workload(wl("uw_maps"), 300, 6000, 500) as w:
        with open(f"/proc/{w.pid}/maps") as f:
            nmaps = sum(1 for _ in f)
        p = Sampled(["-p", w.pid, "-d", 120], [w.pid], until_cpu=3, timeout=180)
    assert nmaps > 6000, f"only {nmaps} mappings"
    folded = parse_folded(p.stdout)
    assert_most_stacks(folded, lambda s: has_chain(s, ["main", "maps_outer", "maps_leaf"]),
                       "main;maps_outer;maps_leaf " + p.stdout)
    assert_most_stacks(folded, bottom.reaches, "reaching the bottom")


def test_stacks_cross_signal_frames(bottom):
    """Through libc's __restore_rt (a signal frame: registers restored from the ucontext)."""
    with Workload(wl("uw_signal"), 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120], [w.pid], until_cpu=3, timeout=180)
    folded = parse_folded(p.stdout)
    in_handler = count_with(folded, lambda s: "sig_handler" in frames_of(s))
    assert_most(in_handler, total(folded), "in sig_handler " + p.stdout, share=0.3)
    crossed = count_with(folded, lambda s: "sig_handler" in frames_of(s) and
                         "sig_wait_loop" in frames_of(s) and bottom.reaches(s))
    assert_most(crossed, in_handler, "crossing the signal frame " + p.stdout)


def test_dwarf_mode_uses_no_frame_pointers(xz_input, bottom):
    """--unwind dwarf: tables only; frames in code without a table end the stack."""
    with Workload(wl("uw_mixed"), 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "--unwind", "dwarf", "-v"], [w.pid], until_cpu=2,
                    timeout=180)
    folded = parse_folded(p.stdout)
    assert "--unwind dwarf" in p.stderr
    # mixed_leaf is frame-pointer code without a table: nothing above it; a return
    # address into mixed_run (found from nofp_outer's table row) is the last frame.
    assert not any("main" in frames_of(s) for s in folded), p.stdout
    assert_most_stacks(folded, lambda s: frames_of(s)[1:2] == ["mixed_leaf"], "mixed_leaf alone",
                       at_least=0.5)
    with Workload("xz", "-9e", "-T1", "-c", xz_input) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "--unwind", "dwarf"], [w.pid], until_cpu=2,
                    timeout=180)
    assert_most_stacks(parse_folded(p.stdout), bottom.reaches, "xz reaching the bottom " + p.stdout)


def test_command_and_children_get_tables(bottom):
    """-- COMMAND: each new program image gets its tables from its first notice."""
    # 1.5 s of CPU time each ("c"), however busy the machine: ~150 samples.
    p = run_bpfprof(["-v", "--", "sh", "-c",
                     f"{wl('uw_leaf')} 1.5c & {wl('uw_maps')} 1.5c 100 10; wait"], timeout=300)
    folded = parse_folded(p.stdout)
    for comm, chain in (("uw_leaf", ["leaf_caller", "leaf_nofp"]),
                        ("uw_maps", ["maps_outer", "maps_leaf"])):
        n = total(folded, comm)
        assert_count_at_least(n, FREQ * 1.5, f"{comm} " + p.stderr)
        ok = count_with(folded, lambda s: s.startswith(comm + ";") and has_chain(s, chain)
                        and bottom.reaches(s))
        # The first samples of each image are taken before its notice (a
        # few, more while a busy machine delays the agent); without its
        # tables from then on, most would miss leaf_caller or the bottom.
        assert_most(ok, n, f"{comm}: complete " + p.stdout)


def test_dlopen_then_exit_between_drains_is_named(tmp_path):
    """dlopen() and exit within one drain period: the walker's refresh request
    makes the symbolizer re-read the maps while the process is alive, so the
    plugin's frames are named although the process is gone at the drain."""
    out = tmp_path / "dl.folded"
    # In the process's own CPU time ("c"): 0.6 s in the plugin, ~60 samples,
    # however busy the machine.
    run_bpfprof(["-o", out, "--", wl("uw_dlopen"), "0.8c", 0.2], timeout=300)
    folded = parse_folded(out.read_text())
    named = count_with(folded, lambda s: frames_of(s)[-1] in ("plugin_leaf", "plugin_work"))
    unnamed = count_with(folded, lambda s: "libuw_plugin.so+0x" in s)
    assert_count_at_least(named, 0.9 * FREQ * 0.6, "named in the plugin")
    assert unnamed <= 0.1 * named, out.read_text()


@pytest.mark.parametrize("mode", ["fp", "auto"])
def test_frame_pointers_by_the_kernel_where_the_walker_cannot_load(mode):
    """Kernels without bpf_loop() (before 5.17) cannot load the walker; bpfprof
    then loads the program with the kernel's frame-pointer walk
    (bpf_get_stack) instead. BPFPROF_TEST_NO_WALKER picks that program here:
    it must load and give the same frame-pointer stacks."""
    env = dict(os.environ, BPFPROF_TEST_NO_WALKER="1")
    with Workload(wl("busy"), 30) as w:
        p = Sampled(["-p", w.pid, "-d", 2, "-v", "--unwind", mode], [w.pid], env=env)
    folded = parse_folded(p.stdout)
    chain = ["main", "run", "outer_loop"]
    leaves = count_with(folded, lambda s: has_chain(s, chain + ["leaf_a"])
                        or has_chain(s, chain + ["leaf_b"]))
    # Every sample of the CPU time the process got (a busy machine gives it less).
    assert_count(total(folded), FREQ * p.cpu[w.pid], "busy")
    assert_most(leaves, total(folded), "main;run;outer_loop;leaf_* " + p.stdout, share=0.95)
    assert "walked by the kernel (bpf_get_stack)" in p.stderr, p.stderr
    assert "stacks walked with tables" not in p.stderr, p.stderr

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc --on-cpu: the CPU and the allocations in one run.

One -p run serves the -p assertions: a spinning busy (CPU only) and an
allocwork (its allocation sites, started by SIGUSR1 once the run samples)
are both targets; -o D/p.pb.gz gets the CPU profile, D/p.heap.pb.gz the heap
profile. The CPU side: busy's samples are F x its CPU time over the window
(conftest's assert_count, Poisson). The heap side: each site's bytes within
SIGMAS x sqrt(T x P) of what allocwork says it allocated (the standard
deviation of a site's estimate, sqrt(T s (1-p)/p) for blocks of s bytes, is
at most sqrt(T P) whatever the sizes: test_alloc.py's derivation). One -a
run writes both files in another format (svg: .heap before the ending), and
a terminal without -o gets both reports. One `-- allocwork sites` run: both
files of the command (its CPU samples F x the CPU time it reports, its
sites as above), its exit status bpfprof's.
"""
import json
import os
import re
import signal
import subprocess
import threading

import pytest

from conftest import (BPFPROF, SIGMAS, assert_count, cpu_seconds, run_bpfprof, run_on_tty,
                      site_values, wait_for, wl)
import pprof

PERIOD = 16384
FREQ = 99
MIB = 16  # per allocwork site: ~1000 samples each at PERIOD
BUSY_CPU = 3  # seconds: ~300 samples at FREQ
SITES = ("site_free", "site_keep", "site_small", "site_calloc", "site_align")


def _bpfprof(args, on_sampling=None, timeout=120, env=None):
    """Runs bpfprof, calling on_sampling() when it says it samples (and
    on_sampling(end=True) at its summary); returns (returncode, stderr)."""
    proc = subprocess.Popen([str(BPFPROF)] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines, marks = [], set()
    killer = None
    try:
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        for line in proc.stderr:
            lines.append(line)
            if "start" not in marks and re.search(r"bpfprof: sampling ", line):
                marks.add("start")
                if on_sampling:
                    on_sampling()
            elif "end" not in marks and re.search(r"\d+ samples? in [0-9.]+ s", line):
                marks.add("end")
                if on_sampling:
                    on_sampling(end=True)
        proc.wait()
    finally:
        if killer:
            killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(lines)


def _heap_sites(path):
    """(profile, {leaf function: alloc_space}) of a heap profile (conftest's
    site_values: its sample types checked)."""
    p, v = site_values(path)
    return p, {k: x[1] for k, x in v.items()}


@pytest.fixture(scope="module")
def pid_run(tmp_path_factory):
    """One --alloc --on-cpu -p run of busy and allocwork, until both exit. busy
    is stopped until the run samples, then spins BUSY_CPU seconds of its own
    CPU time (as many samples on a loaded machine as on an idle one, later);
    allocwork waits for SIGUSR1, sent then too, and is reaped as soon as it
    exits (seconds before busy: gone for the drains' sweeps, its heap stacks
    must still be named at the end). busy's CPU time is read from its zombie
    (not reaped until the run ended)."""
    d = tmp_path_factory.mktemp("alloccpu")
    busy = subprocess.Popen([wl("busy"), f"{BUSY_CPU}c"], stdout=subprocess.DEVNULL)
    aw = subprocess.Popen([wl("allocwork"), "wait", "sites", str(MIB)], stdout=subprocess.PIPE,
                          text=True)
    cpu, truth, reaped = {}, [], threading.Thread(
        target=lambda: (truth.append(aw.stdout.read()), aw.wait()), daemon=True)
    try:
        # Stopped once it runs its own code (the C library mapped: probed).
        wait_for(lambda: "libc" in open(f"/proc/{busy.pid}/maps").read(), "busy's libc")
        os.kill(busy.pid, signal.SIGSTOP)
        assert json.loads(aw.stdout.readline())["waiting"] == aw.pid

        def on_sampling(end=False):
            if not end:
                cpu["start"] = cpu_seconds(busy.pid)
                os.kill(busy.pid, signal.SIGCONT)
                os.kill(aw.pid, signal.SIGUSR1)
                reaped.start()

        rc, err = _bpfprof([f"--alloc={PERIOD}", "--on-cpu", "-F", FREQ, "-o", d / "p.pb.gz",
                               "-p", f"{busy.pid},{aw.pid}"], on_sampling)
        cpu["end"] = cpu_seconds(busy.pid)  # a zombie now: its times are kept
        if rc == 0:
            reaped.join(60)
    finally:
        for p in (busy, aw):
            if p.poll() is None:
                p.kill()
            p.wait()
    assert rc == 0, err
    return {"dir": d, "rc": rc, "stderr": err, "truth": json.loads(truth[0]), "busy": busy.pid,
            "cpu": cpu.get("end", 0) - cpu.get("start", 0)}


def test_pid_both_files(pid_run):
    assert pid_run["rc"] == 0, pid_run["stderr"]
    d = pid_run["dir"]
    assert sorted(os.listdir(d)) == ["p.heap.pb.gz", "p.pb.gz"], os.listdir(d)
    err = pid_run["stderr"]
    assert f"wrote {d / 'p.pb.gz'} (pprof)" in err and f"wrote {d / 'p.heap.pb.gz'}" in err, err
    # The run ended with its targets; the CPU's summary before the heap's counters.
    assert "all 2 processes exited" in err, err
    assert err.index("samples in") < err.index("allocation calls"), err


def test_pid_cpu_samples(pid_run):
    """busy's samples: F x its CPU time over the sampling window."""
    p = pprof.decode((pid_run["dir"] / "p.pb.gz").read_bytes())
    assert pprof.strings(p, p["sample_type"][0].get(1, 0)) == "samples"
    n = sum(s["value"][0] for s in p["sample"] if s["label"].get("pid") == pid_run["busy"])
    assert pid_run["cpu"] > BUSY_CPU / 2, f"busy ran {pid_run['cpu']} s of CPU in the run"
    assert_count(n, FREQ * pid_run["cpu"], "busy's CPU samples")


def test_pid_heap_sites(pid_run):
    """allocwork's sites within SIGMAS x sqrt(T x P) bytes."""
    p, v = _heap_sites(pid_run["dir"] / "p.heap.pb.gz")
    assert p["period"] == PERIOD
    truth = pid_run["truth"]["sites"]
    for site in SITES:
        t = truth[site]["bytes"]
        tol = SIGMAS * (t * PERIOD) ** 0.5
        assert site in v, f"{site} missing from {sorted(v)}"
        assert abs(v[site] - t) <= tol, f"{site}: estimated {v[site]} bytes, truly {t} +- {tol:.0f}"
    # busy allocates nothing: the CPU profile's samples are not in the heap one.
    assert not any(k in ("leaf_a", "leaf_b") for k in v), sorted(v)


@pytest.fixture(scope="module")
def cmd_run(tmp_path_factory):
    """One --alloc --on-cpu -- allocwork sites run: the command started by
    bpfprof, stopped at its entry for the probes, its pid the CPU program's
    child; its stdout (bpfprof's, -o takes the profiles) is its truth."""
    d = tmp_path_factory.mktemp("alloccmd")
    r = run_bpfprof([f"--alloc={PERIOD}", "--on-cpu", "-F", FREQ, "-o", d / "p.pb.gz", "--",
                     wl("allocwork"), "sites", MIB], check=False)
    return {"dir": d, "rc": r.returncode, "stderr": r.stderr, "stdout": r.stdout}


def test_cmd_both_profiles(cmd_run):
    """-- COMMAND: its exit status, both files, its CPU samples and its heap sites."""
    err, d = cmd_run["stderr"], cmd_run["dir"]
    assert cmd_run["rc"] == 0, err
    truth = json.loads(cmd_run["stdout"])
    assert sorted(os.listdir(d)) == ["p.heap.pb.gz", "p.pb.gz"], os.listdir(d)
    assert f"wrote {d / 'p.pb.gz'} (pprof)" in err and f"wrote {d / 'p.heap.pb.gz'}" in err, err
    assert "probed in process %d" % truth["pid"] in err, err
    # The CPU side: allocwork's samples, F x the CPU time it ran (all of it
    # in the window: it is let go when the run samples).
    m = re.search(r"exited with status 0 after ([0-9.]+) s of CPU", err)
    assert m, err
    p = pprof.decode((d / "p.pb.gz").read_bytes())
    n = sum(s["value"][0] for s in p["sample"] if s["label"].get("pid") == truth["pid"])
    assert_count(n, FREQ * float(m.group(1)), "allocwork's CPU samples")
    # The heap side: every site within SIGMAS x sqrt(T x P).
    p, v = _heap_sites(d / "p.heap.pb.gz")
    assert p["period"] == PERIOD
    for site in SITES:
        t = truth["sites"][site]["bytes"]
        tol = SIGMAS * (t * PERIOD) ** 0.5
        assert site in v, f"{site} missing from {sorted(v)}"
        assert abs(v[site] - t) <= tol, f"{site}: estimated {v[site]} bytes, truly {t} +- {tol:.0f}"


def test_cmd_status(tmp_path):
    """The command's exit status is bpfprof's; both files are written."""
    out = tmp_path / "s.pb.gz"
    r = run_bpfprof(["--alloc", "--on-cpu", "-o", out, "--", "sh", "-c", "exit 3"],
                    check=False)
    assert r.returncode == 3, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["s.heap.pb.gz", "s.pb.gz"], r.stderr


def test_all_svg(tmp_path):
    """-a: both profiles, here as svg (out.svg, out.heap.svg). --alloc-budget 1
    engages the guard at its first tick: it ticks on its own thread at once
    (not after the CPU side's first turn, seconds on a loaded host: bpfprof's
    own allocations trap into -a's probes too), and puts the probes back
    after a window off, which needs the capabilities the run kept: here
    with perf-event uprobes (BPFPROF_TEST_ALLOC_MODE=perf, what kernels
    without uprobe_multi get), whose perf_event_open needs CAP_PERFMON
    (this kernel's session uprobe links go in with CAP_BPF alone)."""
    busy = subprocess.Popen([wl("busy"), "20"], stdout=subprocess.DEVNULL)
    try:
        rc, err = _bpfprof(["--alloc", "--alloc-budget", 1, "--on-cpu", "-a", "-d", 3,
                            "-o", tmp_path / "out.svg"],
                           env=dict(os.environ, BPFPROF_TEST_ALLOC_MODE="perf"))
    finally:
        busy.kill()
        busy.wait()
    assert rc == 0 and "perf-event" in err, err
    m = re.search(r"allocator guard: engaged after ([0-9.]+) s;.* (\d+) switches off and on",
                  err)
    assert m, err
    # fails unfixed at 14-39 s; 0.1 s measured: 2 s leaves room for a stalled host
    assert float(m.group(1)) < 2.0, f"the guard engaged late: {m.group(0)}"
    assert int(m.group(2)) >= 2, f"the probes were never put back: {m.group(0)}"
    assert "not all put back" not in err and "not all attached" not in err, err
    cpu, heap = (tmp_path / "out.svg").read_text(), (tmp_path / "out.heap.svg").read_text()
    assert "leaf_a" in cpu, "busy's frames missing from the CPU flame graph"
    assert "<svg" in heap and "bytes" in heap, heap[:500]


def test_terminal_both_reports():
    """A terminal without -o: the CPU's report, then the heap's."""
    busy = subprocess.Popen([wl("busy"), "20"], stdout=subprocess.DEVNULL)
    try:
        rc, out, err = run_on_tty([BPFPROF, "--alloc", "--on-cpu", "-d", "1", "-p", busy.pid])
    finally:
        busy.kill()
        busy.wait()
    assert rc == 0, err
    cpu, heap = out.find("samples"), out.find("bytes of memory allocated")
    assert 0 <= cpu < heap, out
    assert "leaf_a" in out[:heap], out
    assert "tops of the two profiles" in err, err


def test_usage_errors():
    for args, msg in ((["--on-cpu", "-p", "1"], "needs --alloc"),
                      (["--alloc", "--cpu", "0", "-d", "1"], "both profiles of every CPU: --alloc --on-cpu -a"),
                      (["--alloc", "--on-cpu", "-p", "1", "-o", "-"], "stdout (-o -)"),
                      (["--alloc", "--on-cpu", "-p", "1"], "standard output cannot hold both")):
        r = run_bpfprof(args, check=False, stdin=subprocess.DEVNULL)
        assert r.returncode == 2 and msg in r.stderr, (args, r.returncode, r.stderr)

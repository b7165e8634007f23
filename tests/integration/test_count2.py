# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof count, part two: session uprobes (one program for entry and return,
the entry's time in the call's session cookie), -a and --cgroup, and the
tenant's call storm. countwork (tests/workloads/countwork.c) prints its own
counts; test_count.py's checks are reused.
"""
import json
import os
import re
import signal
import subprocess

import pytest

from conftest import BPFPROF, as_tenant, cgroup_v2, run_bpfprof, tenant_dir, wl  # noqa: F401
from test_count import by_name, callers, check_calls, own_counts, start_count, start_waiting

SESSION_SAYS = "session uprobes: one uprobe_multi link per file and process"


def test_session_counts_exact(tmp_path):
    """The default on this kernel: session uprobes, every count, caller,
    recursion level and the slow function's mean as countwork measured them."""
    out = tmp_path / "s.json"
    p = run_bpfprof(["count", "-v", "bp_*", "-o", out, "--", wl("countwork"), "calls"])
    assert SESSION_SAYS in p.stderr, p.stderr
    check_calls(json.loads(out.read_text()), own_counts(p.stdout))


def test_session_falls_back(tmp_path):
    """A kernel without session uprobes (asked for by the test switch) gets the
    entry and return links, and -v says so."""
    out = tmp_path / "m.json"
    p = run_bpfprof(["count", "-v", "bp_*", "-o", out, "--", wl("countwork"), "calls"],
                    env=dict(os.environ, BPFPROF_TEST_COUNT_NO_SESSION="1"))
    assert "uprobe_multi: one entry and one return link per file" in p.stderr
    assert SESSION_SAYS not in p.stderr
    check_calls(json.loads(out.read_text()), own_counts(p.stdout))


def test_session_guard_detaches(tmp_path):
    """The guard's link replacement works for session links: bp_hot detached,
    the file's other functions still counted exactly and timed."""
    out = tmp_path / "g.json"
    p = run_bpfprof(["count", "--budget", "5000", "bp_hot", "bp_slow", "bp_b", "-o", out, "--",
                     wl("countwork"), "hot", "3"])
    own = own_counts(p.stdout)
    assert re.search(r"warning: bp_hot \(.*countwork\): \d+ calls/s, over the budget", p.stderr)
    fns = by_name(json.loads(out.read_text()))
    assert fns["bp_hot"]["detached"] is True and 0 < fns["bp_hot"]["calls"] < own["bp_hot"]
    assert fns["bp_slow"]["calls"] == own["bp_slow"] == 10
    assert fns["bp_slow"]["timed_calls"] == 10 and fns["bp_slow"]["min_ns"] >= 2_000_000
    assert fns["bp_b"]["calls"] == own["bp_b"] == 100


# --- -a and --cgroup -------------------------------------------------------------------

def test_all_processes(tmp_path):
    """-a: the file is found through a process running at the start; a second
    process started after the probes are in is counted too (uprobes are per
    file), the counts of both exact, with no filter."""
    exe = wl("countwork")
    w = start_waiting()
    out = tmp_path / "a.json"
    p, err = start_count(["-a", "-d", "60", f"{exe}:bp_a", f"{exe}:bp_b", "-o", out])
    assert "processes looked at for the patterns" in err and SESSION_SAYS in err, err
    w.send_signal(signal.SIGUSR1)
    own1 = own_counts(w.communicate(timeout=60)[0])
    later = subprocess.run([exe, "calls"], capture_output=True, text=True, timeout=60)
    own2 = own_counts(later.stdout)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    fns = by_name(json.loads(out.read_text()))
    assert fns["bp_a"]["calls"] == own1["bp_a"] + own2["bp_a"] == 2000
    assert fns["bp_b"]["calls"] == own1["bp_b"] + own2["bp_b"] == 500
    assert fns["bp_a"]["timed_calls"] == 2000
    # The first process's callers are named (it was known from the start).
    c = callers(fns["bp_a"])
    assert c.get("bp_caller_one", 0) >= 600 and c.get("bp_caller_two", 0) >= 400


def test_cgroup_filter(tmp_path):
    """--cgroup: only the process in the cgroup is counted, the same program
    outside it (same file, same probes) is not: filtered in BPF."""
    with cgroup_v2("bpfprof-count2") as cg:
        _cgroup_filter(tmp_path, cg)


def _cgroup_filter(tmp_path, cg):
    inside = start_waiting()
    outside = start_waiting()
    try:
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(inside.pid))
        out = tmp_path / "c.json"
        p, err = start_count(["--cgroup", cg, "-d", "60", "bp_a", "bp_b", "bp_slow", "-o", out])
        assert "1 process looked at" in err, err
        inside.send_signal(signal.SIGUSR1)
        outside.send_signal(signal.SIGUSR1)
        own = own_counts(inside.communicate(timeout=60)[0])
        own_counts(outside.communicate(timeout=60)[0])
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        fns = by_name(json.loads(out.read_text()))
        assert fns["bp_a"]["calls"] == own["bp_a"] == 1000
        assert callers(fns["bp_a"]) == {"bp_caller_one": 600, "bp_caller_two": 400}
        assert fns["bp_b"]["calls"] == 250 and fns["bp_slow"]["calls"] == 50
    finally:
        for w in (inside, outside):
            if w.poll() is None:
                w.kill()
                w.wait()


def test_target_usage_errors():
    for args, what in ((["-a", "-p", "1", "x"], "choose one"),
                       (["-a", "--cgroup", "/x", "x"], "choose one"),
                       (["--cgroup", "/nonexistent-cg", "x"], "--cgroup /nonexistent-cg"),
                       (["-a"], "no pattern")):
        p = run_bpfprof(["count", *args], check=False)
        assert p.returncode in (1, 2) and what in p.stderr, (args, p.stderr)


# --- the tenant's attack: a call storm under -a ------------------------------------------

def test_tenant_call_storm_hits_budget(tenant_dir, tmp_path):
    """Root counts a tenant program's functions with -a. The tenant calls
    bp_hot in a storm: the guard must detach it within about one check,
    counted and said, the tenant's other functions still counted exactly, and
    the storm must then run at about its unprobed speed (no host slowdown
    while bpfprof runs on)."""
    import shutil
    exe = tenant_dir / "countwork"
    shutil.copy(wl("countwork"), exe)
    os.chown(exe, *tenant_ids())
    t = subprocess.Popen(as_tenant([exe, "wait", "hot", "3"]), stdout=subprocess.PIPE, text=True)
    try:
        assert "waiting" in t.stdout.readline()
        out = tmp_path / "storm.json"
        p, err = start_count(["-a", "--budget", "5000", "-d", "60", f"{exe}:bp_hot",
                              f"{exe}:bp_b", f"{exe}:bp_slow", "-o", out])
        t.send_signal(signal.SIGUSR1)
        own = own_counts(t.communicate(timeout=60)[0])
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert re.search(r"warning: bp_hot \(.*countwork\): \d+ calls/s, over the budget of "
                         r"5000: detached after \d+ calls", err), err
        fns = by_name(json.loads(out.read_text()))
        f = fns["bp_hot"]
        assert f["detached"] is True
        assert 0 < f["calls"] < f["detached_rate"] * 2  # within about one check
        # After the detach the storm ran free: almost all its calls uncounted.
        assert f["calls"] < own["bp_hot"] / 10, (f["calls"], own["bp_hot"])
        assert fns["bp_b"]["calls"] == own["bp_b"] == 100
        assert fns["bp_slow"]["calls"] == own["bp_slow"] == 10
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()


def tenant_ids():
    import pwd
    from conftest import TENANT
    pw = pwd.getpwnam(TENANT)
    return pw.pw_uid, pw.pw_gid


# --- kernel functions ---------------------------------------------------------------------

def test_kernel_function_counts_or_refuses(tmp_path):
    """kernel:GLOB: the clock_nanosleep system call, made 55 times by countwork
    calls (bp_slow's 50 usleeps, the recursion's 5 leaves), counted exactly
    with its caller in the kernel; on a kernel without kprobe_multi (this
    test machine's: CONFIG_KPROBES off) a clear refusal, the command never run."""
    out = tmp_path / "k.json"
    p = run_bpfprof(["count", "kernel:__x64_sys_clock_nanosleep", "bp_slow", "-o", out, "--",
                     wl("countwork"), "calls"], check=False)
    if p.returncode == 1 and "kernel functions cannot be counted here" in p.stderr:
        assert "could not be probed" in p.stderr
        assert "bp_a" not in p.stdout  # ended before it ran
        return
    assert p.returncode == 0, p.stderr
    fns = by_name(json.loads(out.read_text()))
    k = fns["__x64_sys_clock_nanosleep"]
    assert k["module"] == "[kernel]"
    assert k["calls"] == 55 and k["timed_calls"] == 55
    assert k["min_ns"] >= 1_000_000
    assert fns["bp_slow"]["calls"] == 50
    # -k: the same pattern without kernel:
    p = run_bpfprof(["count", "-k", "__x64_sys_clock_nanosleep", "--", wl("countwork"), "calls"])
    assert re.search(r"^\s+55\s+", p.stdout, re.M), p.stdout


def test_kernel_pattern_matching_nothing():
    p = run_bpfprof(["count", "-k", "no_such_kfn_*", "-p", os.getpid()], check=False)
    assert p.returncode == 2 and "no kernel function matches 'no_such_kfn_*'" in p.stderr


# --- --interval ----------------------------------------------------------------------------

def test_interval_running_table():
    """--interval: running tables, cumulative (bp_slow's calls never go
    down), then the final one, exact."""
    p = run_bpfprof(["count", "--interval", "0.03", "bp_slow", "--", wl("countwork"), "calls"])
    sections = re.split(r"^--- ", p.stdout, flags=re.M)[1:]
    assert len(sections) >= 3, p.stdout
    assert sections[-1].startswith("the end, after ")
    counts = []
    for sec in sections:
        m = re.search(r"^\s+(\d+)\s+\S+\s+\S+\s+\S+%.*bp_slow \(countwork\)$", sec, re.M)
        counts.append(int(m.group(1)) if m else 0)
    assert counts == sorted(counts), counts
    assert counts[-1] == 50 and counts[0] < 50, counts


# --- --children ----------------------------------------------------------------------------

def test_children_counted_others_not(tmp_path):
    """--children: shortlived forks and execs itself; each child calls
    short_spin once: all counted, exactly as many as it says ran. The same
    program run beside it (same file, same probes: they are for every
    process) is filtered out in BPF. Without --children, no child's call."""
    outsider = subprocess.Popen([wl("shortlived"), "2", "5", "50"], stdout=subprocess.PIPE,
                                text=True)
    try:
        out = tmp_path / "ch.json"
        p = run_bpfprof(["count", "--children", "short_spin", "parent_spin", "-o", out, "--",
                         wl("shortlived"), "1", "5", "50"])
        ran = int(re.search(r"^children (\d+)$", p.stdout, re.M).group(1))
        assert ran > 5
        fns = by_name(json.loads(out.read_text()))
        assert fns["short_spin"]["calls"] == ran, (fns["short_spin"]["calls"], ran)
        assert fns["parent_spin"]["calls"] == 1
    finally:
        outsider.communicate(timeout=60)
    p = run_bpfprof(["count", "short_spin", "parent_spin", "-o", out, "--", wl("shortlived"), "1",
                     "5", "50"])
    fns = by_name(json.loads(out.read_text()))
    assert fns["short_spin"]["calls"] == 0 and fns["parent_spin"]["calls"] == 1
    p = run_bpfprof(["count", "--children", "x", "-p", "1"], check=False)
    assert p.returncode == 2 and "--children follows -- COMMAND" in p.stderr

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof count: exact calls, callers and entry-to-return times of chosen
functions (uprobes), against tests/workloads/countwork, which prints its own
counts and the mean time of its slow function as it measured it.

countwork calls: bp_a 600 times from bp_caller_one and 400 from bp_caller_two,
bp_b 250 times from main, bp_slow (usleep 2 ms) 50 times, bp_recurse to depth
8 five times (40 calls, the leaf sleeping 1 ms).
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BPFPROF, as_tenant, run_bpfprof, tenant_dir, tenant_run, wl  # noqa: F401


def by_name(doc):
    return {f["function"]: f for f in doc["functions"]}


def callers(f):
    return {c["function"]: c["calls"] for c in f["callers"]}


def own_counts(stdout):
    """The workload's own JSON line (the last one that names bp_a or bp_hot)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and ("bp_a" in line or "bp_hot" in line):
            return json.loads(line)
    raise AssertionError("countwork printed no counts:\n" + stdout)


def check_calls(doc, own):
    fns = by_name(doc)
    assert fns["bp_a"]["calls"] == own["bp_a"] == 1000
    assert callers(fns["bp_a"]) == {"bp_caller_one": 600, "bp_caller_two": 400}
    assert fns["bp_b"]["calls"] == 250
    assert callers(fns["bp_b"]) == {"main": 250}
    assert fns["bp_slow"]["calls"] == 50
    assert fns["bp_caller_one"]["calls"] == 1 and fns["bp_caller_two"]["calls"] == 1
    # Recursion: every level is a call, timed from its own entry.
    r = fns["bp_recurse"]
    assert r["calls"] == 40 and r["timed_calls"] == 40
    assert callers(r) == {"main": 5, "bp_recurse": 35}
    # Every level includes the leaf's 1 ms sleep: none can be shorter; a
    # return matched with another level's entry would be (or far longer).
    assert r["min_ns"] >= 1_000_000
    assert r["max_ns"] < 1_000_000 * 50
    # The slow function: its mean within 20% of what it measured itself.
    s = fns["bp_slow"]
    assert s["timed_calls"] == 50
    mean = s["total_ns"] / s["timed_calls"]
    assert abs(mean - own["bp_slow_mean_ns"]) <= 0.2 * own["bp_slow_mean_ns"], (mean, own)
    assert s["min_ns"] >= 2_000_000 and s["min_ns"] <= mean <= s["max_ns"]
    assert sum(s["hist"]) == 50
    assert sum(s["hist"][21:]) + s["hist"][20] == 50  # 2 ms: bucket 20 ([2^20, 2^21) ns) or above
    for f in doc["functions"]:
        assert sum(f["hist"]) == f["timed_calls"]
        assert f["timed_calls"] == 0 or f["min_ns"] <= f["max_ns"]
        assert f["module"].endswith("/countwork")


# uprobe_multi entry and return links (6.6 to 6.12), and the perf-event uprobes older
# kernels get (session uprobes, this kernel's default: test_count2.py)
MODES = {"multi": {"BPFPROF_TEST_COUNT_NO_SESSION": "1"}, "perf": {"BPFPROF_TEST_COUNT_NO_MULTI": "1"}}
MODE_SAYS = {"multi": "uprobe_multi: one entry and one return link per file",
             "perf": "uprobe + uretprobe per function and process"}


@pytest.mark.parametrize("mode", MODES)
def test_command_counts_exact(tmp_path, mode):
    out = tmp_path / "c.json"
    p = run_bpfprof(["count", "-v", "bp_*", "-o", out, "--", wl("countwork"), "calls"],
                    env=dict(os.environ, **MODES[mode]))
    doc = json.loads(out.read_text())
    check_calls(doc, own_counts(p.stdout))
    assert MODE_SAYS[mode] in p.stderr  # -v says how it attached
    assert "returns without their call (entered before the probes): 0" in p.stderr
    assert "calls without their return (longjmp, a detached probe): 0" in p.stderr


def test_command_table_and_status(tmp_path):
    p = run_bpfprof(["count", "bp_a", "bp_slow", "--", wl("countwork"), "calls"])
    lines = p.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:3] == ["calls", "seconds", "seconds/call"])
    rows = [l for l in lines[head + 1:] if "(countwork)" in l]
    # Sorted by time: bp_slow (50 x 2 ms) before bp_a (1000 x a few us).
    assert "bp_slow (countwork)" in rows[0] and "bp_a (countwork)" in rows[1]
    calls, secs, per_call, share = rows[0].split()[:4]
    assert int(calls) == 50 and 0.1 <= float(secs) < 1.0 and share.endswith("%")
    assert abs(float(per_call) * 50 - float(secs)) < 1e-3
    assert re.search(r"^\s+600\s+60\.0%\s+<- bp_caller_one$", p.stdout, re.M)
    assert re.search(r"^\s+400\s+40\.0%\s+<- bp_caller_two$", p.stdout, re.M)
    # The command's exit status is bpfprof's.
    p = run_bpfprof(["count", "bp_*", "--", wl("countwork"), "bogus"], check=False)
    assert p.returncode == 2, p.stderr


def start_waiting():
    w = subprocess.Popen([wl("countwork"), "wait", "calls"], stdout=subprocess.PIPE, text=True)
    assert json.loads(w.stdout.readline())["waiting"] == w.pid
    return w


def start_count(args):
    p = subprocess.Popen([str(BPFPROF), "count", "-v", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if re.search(r" probes?: ", line):  # "N functions, N probes: MODE" (1 probe)
            return p, "".join(seen)
    p.kill()
    raise AssertionError("bpfprof count never attached:\n" + "".join(seen))


def test_pid_counts_exact_and_target_exit(tmp_path):
    """-p: attached to a running process, which exits mid-run (-d 60): the
    run ends with it, and the table is written."""
    w = start_waiting()
    out = tmp_path / "p.json"
    p, _ = start_count(["-p", w.pid, "-d", "60", "bp_*", "-o", out])
    t0 = time.monotonic()
    w.send_signal(signal.SIGUSR1)
    own = own_counts(w.communicate(timeout=60)[0])
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert time.monotonic() - t0 < 30  # ended with its target, not at -d
    assert "the targets exited" in err
    check_calls(json.loads(out.read_text()), own)


def test_library_pattern(tmp_path):
    out = tmp_path / "l.json"
    p = run_bpfprof(["count", "libc:usleep", "bp_slow", "-o", out, "--", wl("countwork"), "calls"])
    fns = by_name(json.loads(out.read_text()))
    # usleep: 50 from bp_slow, 5 from the recursion's leaves
    assert "libc.so" in fns["usleep"]["module"]
    assert callers(fns["usleep"]) == {"bp_slow": 50, "bp_recurse": 5}
    assert fns["bp_slow"]["calls"] == 50


@pytest.mark.parametrize("mode", MODES)
def test_guard_detaches_hot_function(tmp_path, mode):
    """bp_hot in a tight loop goes over the budget and is detached; with
    uprobe_multi its file's links are replaced by ones without it, and the
    other functions of the file (bp_slow, called after) are still counted."""
    out = tmp_path / "g.json"
    env = dict(os.environ, **MODES[mode])
    p = run_bpfprof(["count", "--budget", "5000", "bp_hot", "bp_slow", "bp_b", "-o", out, "--",
                     wl("countwork"), "hot", "3"], env=env)
    own = own_counts(p.stdout)
    assert re.search(r"warning: bp_hot \(.*countwork\): \d+ calls/s, over the budget of 5000: "
                     r"detached after \d+ calls", p.stderr), p.stderr
    fns = by_name(json.loads(out.read_text()))
    f = fns["bp_hot"]
    assert f["detached"] is True
    assert 0 < f["calls"] < own["bp_hot"]
    # Detached within about one check (a quarter second) of going over.
    assert f["calls"] < f["detached_rate"] * 2
    assert fns["bp_slow"]["detached"] is False and fns["bp_b"]["detached"] is False
    assert fns["bp_slow"]["calls"] == own["bp_slow"] == 10
    assert fns["bp_b"]["calls"] == own["bp_b"] == 100
    assert fns["bp_slow"]["timed_calls"] == 10 and fns["bp_slow"]["min_ns"] >= 2_000_000
    p = run_bpfprof(["count", "--budget", "5000", "bp_hot", "--", wl("countwork"), "hot", "1"],
                    env=env)
    assert "[detached by the guard]" in p.stdout


def test_pattern_matching_nothing():
    p = run_bpfprof(["count", "no_such_fn_*", "--", wl("countwork"), "calls"], check=False)
    assert p.returncode == 2  # a usage error (the design's exit statuses)
    assert "no function matches 'no_such_fn_*'" in p.stderr
    assert "bp_a" not in p.stdout  # the command was ended, never ran its work
    p = run_bpfprof(["count", "nolib:malloc", "-p", os.getpid()], check=False)
    assert p.returncode == 2 and "no function matches 'nolib:malloc'" in p.stderr


def test_usage_errors():
    for args, what in ((["bp_*"], "no target"), (["-p", "1"], "no pattern"),
                       (["--max-functions", "0", "x", "-p", "1"], "invalid --max-functions"),
                       (["-f", "svg", "x", "-p", "1"], "unknown --format")):
        p = run_bpfprof(["count", *args], check=False)
        assert p.returncode == 2 and what in p.stderr, (args, p.stderr)
    p = run_bpfprof(["count", "x", "-p", "999999999"], check=False)
    assert p.returncode in (1, 2)


def test_max_functions_refused(tmp_path):
    p = run_bpfprof(["count", "--max-functions", "3", "bp_*", "--", wl("countwork"), "calls"],
                    check=False)
    assert p.returncode == 1
    assert "more than --max-functions 3" in p.stderr
    assert "bp_a" not in p.stdout


# --- the tenant's attack: hostile symbol tables ---------------------------------------

HOSTILE_SYMS = 60000


def hostile_program(d):
    """A tenant program whose symbol table has HOSTILE_SYMS function symbols
    named bp_x_N, all overlapping one 256 KiB function (each claims 128 KiB
    from its own start), and which then sleeps."""
    src = d / "hostile.S"
    with open(src, "w") as f:
        f.write("\t.text\n\t.globl main\n\t.type main,@function\nmain:\n"
                "\tsubq $8, %rsp\n\tmovl $600, %edi\n\tcall sleep@PLT\n\taddq $8, %rsp\n"
                "\txorl %eax, %eax\n\tret\n\t.size main, .-main\n"
                "\t.globl bp_big\n\t.type bp_big,@function\nbp_big:\n\t.skip 262144, 0x90\n"
                "\tret\n\t.size bp_big, .-bp_big\n")
        for i in range(HOSTILE_SYMS):
            f.write(f"\t.globl bp_x_{i}\n\t.type bp_x_{i},@function\n"
                    f"\t.set bp_x_{i}, bp_big + {i * 4}\n\t.size bp_x_{i}, 131072\n")
        f.write('\t.section .note.GNU-stack,"",@progbits\n')
    os.chown(src, *tenant_ids())
    exe = d / "hostile"
    r = tenant_run(["cc", "-o", str(exe), str(src)], timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def tenant_ids():
    import pwd
    from conftest import TENANT
    pw = pwd.getpwnam(TENANT)
    return pw.pw_uid, pw.pw_gid


def test_tenant_hostile_symbols_capped(tenant_dir):
    """The tenant's program has 60,000 overlapping function symbols matching
    'bp_*'. Root's bpfprof count must refuse within seconds, attaching no
    probe, both at the default cap and at the highest --max-functions; a
    pattern within the cap is attached."""
    exe = hostile_program(tenant_dir)
    t = subprocess.Popen(as_tenant([exe]))
    try:
        time.sleep(0.5)
        for extra in ([], ["--max-functions", "20000"]):
            t0 = time.monotonic()
            p = run_bpfprof(["count", *extra, "-p", t.pid, "-d", "1", "bp_*"], check=False,
                            timeout=60)
            took = time.monotonic() - t0
            assert p.returncode == 1, p.stderr
            assert re.search(r"the patterns match \d+ functions in the targets, more than "
                             r"--max-functions", p.stderr), p.stderr
            assert took < 15, took
            assert "probes" not in p.stderr
        # 10 of them (bp_x_1000 .. bp_x_1009): attached, counted (never called)
        p = run_bpfprof(["count", "-v", "-p", t.pid, "-d", "0.5", "bp_x_100?", "--all-functions"],
                        timeout=60)
        assert "10 functions, 20 probes" in p.stderr, p.stderr
        assert p.stdout.count("(hostile)") == 10
    finally:
        t.kill()
        t.wait()

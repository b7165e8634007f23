# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof count, part three: pprof output (calls/count and time/nanoseconds,
one sample per (function, caller) edge), -a and --cgroup with -- COMMAND, and
kernel functions where this kernel cannot trace them. countwork
(tests/workloads/countwork.c) prints its own counts; test_count.py's checks
are reused.
"""
import json
import os
import shutil
import subprocess

import pytest

import pprof
from conftest import cgroup_v2, run_bpfprof, wl
from test_count import own_counts

GO = shutil.which("go") or "/usr/lib/go-1.19/bin/go"


def go_pprof(*args):
    p = subprocess.run([GO, "tool", "pprof", *map(str, args)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=os.environ.get("HOME", "/root"),
                                             PPROF_TMPDIR="/tmp"))
    assert p.returncode == 0, f"go tool pprof {args} failed:\n{p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def pprof_run(tmp_path_factory):
    """One run of countwork's known calls, written as pprof (by the .pb.gz name)."""
    out = tmp_path_factory.mktemp("c3") / "calls.pb.gz"
    p = run_bpfprof(["count", "bp_*", "-o", out, "--", wl("countwork"), "calls"])
    return out, own_counts(p.stdout)


def edges(prof):
    """{(function, caller or None): [calls, ns]} from the decoded profile."""
    st = prof["string_table"]

    def name(lid):
        fn = prof["function"][prof["location"][lid]["lines"][0][1]]
        return st[fn[2]]

    out = {}
    for s in prof["sample"]:
        ids = s["location_id"]
        key = (name(ids[0]), name(ids[1]) if len(ids) > 1 else None)
        assert len(ids) <= 2 and key not in out, key
        out[key] = s["value"]
    return out


def test_pprof_edges(pprof_run):
    """Sample types calls/count and time/nanoseconds (time the default); one
    sample per (function, caller) edge with its exact calls; each function's
    time is its own, split among its callers; a caller that is itself counted
    is the same location (bp_recurse calls itself)."""
    out, own = pprof_run
    prof = pprof.decode(out.read_bytes())
    st = prof["string_table"]
    assert [(st[t[1]], st[t[2]]) for t in prof["sample_type"]] == \
        [("calls", "count"), ("time", "nanoseconds")]
    e = edges(prof)
    calls = {k: v[0] for k, v in e.items()}
    assert calls[("bp_a", "bp_caller_one")] == 600 and calls[("bp_a", "bp_caller_two")] == 400
    assert calls[("bp_b", "main")] == 250
    assert calls[("bp_recurse", "main")] == 5 and calls[("bp_recurse", "bp_recurse")] == 35
    assert sum(v for (f, _), v in calls.items() if f == "bp_slow") == own["bp_slow"] == 50
    # Time: bp_slow's total within 20% of what countwork measured itself; bp_a's
    # time split 60/40 as its calls.
    slow_ns = sum(v[1] for (f, _), v in e.items() if f == "bp_slow")
    assert abs(slow_ns - 50 * own["bp_slow_mean_ns"]) <= 0.2 * 50 * own["bp_slow_mean_ns"]
    a1, a2 = e[("bp_a", "bp_caller_one")][1], e[("bp_a", "bp_caller_two")][1]
    assert a1 > 0 and abs(a1 / (a1 + a2) - 0.6) < 0.01
    # The counted functions' locations carry the executable's mapping.
    fn_loc = {st[prof["function"][l["lines"][0][1]][2]]: l for l in prof["location"].values()}
    mod = prof["mapping"][fn_loc["bp_a"]["mapping_id"]]
    assert st[mod[5]].endswith("/countwork")
    assert len([n for n in fn_loc if n == "bp_recurse"]) == 1


def test_pprof_go_tool(pprof_run):
    """go tool pprof reads it: flat calls per function, the callers by -peek."""
    out, _ = pprof_run
    top = go_pprof("-top", "-sample_index=calls", out)
    flat = {l.split()[-1]: int(l.split()[0]) for l in top.splitlines()
            if l.split() and l.split()[-1].startswith("bp_") and l.split()[0].isdigit()}
    assert flat["bp_a"] == 1000 and flat["bp_b"] == 250 and flat["bp_slow"] == 50, top
    peek = go_pprof("-peek", "^bp_a$", "-sample_index=calls", out)
    assert "600 60.00% |   bp_caller_one" in peek and "400 40.00% |   bp_caller_two" in peek, peek
    # The default sample type is time.
    assert "Type: time" in go_pprof("-top", out)


def test_pprof_format_option(tmp_path):
    """-f pprof writes it whatever the name; an unknown format names pprof."""
    out = tmp_path / "x.out"
    run_bpfprof(["count", "-f", "pprof", "bp_b", "-o", out, "--", wl("countwork"), "calls"])
    e = edges(pprof.decode(out.read_bytes()))
    assert e[("bp_b", "main")][0] == 250
    p = run_bpfprof(["count", "-f", "bogus", "bp_b", "--", wl("countwork"), "calls"], check=False)
    assert p.returncode == 2 and "table, json, pprof or pb" in p.stderr


# --- -a and --cgroup with -- COMMAND: every process (of the cgroups) while it runs ------------

def waiting_countwork():
    from test_count import start_waiting
    return start_waiting()


def finish(w):
    if w.poll() is None:
        w.kill()
    return w.communicate(timeout=60)[0]


def test_all_with_command(tmp_path):
    """-a -- COMMAND, as perf stat -a -- COMMAND: every process is counted
    while the command runs, the command's own files (it is stopped at its
    entry point while the files are looked at) and another process's alike;
    the run ends with the command, with its status."""
    exe = wl("countwork")
    w = waiting_countwork()
    try:
        out = tmp_path / "a.json"
        script = f"kill -USR1 {w.pid}; {exe} calls; sleep 1; exit 3"
        p = run_bpfprof(["count", "-v", "-a", f"{exe}:bp_a", f"{exe}:bp_b", "-o", out, "--",
                         "/bin/sh", "-c", script], check=False)
        assert p.returncode == 3, p.stderr
        assert "the command exited" in p.stderr, p.stderr
        own_w = own_counts(finish(w))
        fns = {f["function"]: f for f in json.loads(out.read_text())["functions"]}
        # The command's countwork and the other process: 1000 + 1000.
        assert fns["bp_a"]["calls"] == own_counts(p.stdout)["bp_a"] + own_w["bp_a"] == 2000
        assert fns["bp_b"]["calls"] == 500
    finally:
        finish(w)


def test_all_with_command_own_files(tmp_path):
    """-a -- COMMAND where no other process maps the command's executable:
    its functions are found in the stopped command itself, counted exactly,
    callers named."""
    exe = wl("countwork")
    out = tmp_path / "o.json"
    p = run_bpfprof(["count", "-a", f"{exe}:bp_a", "-o", out, "--", exe, "calls"])
    f = json.loads(out.read_text())["functions"][0]
    assert f["calls"] == own_counts(p.stdout)["bp_a"] == 1000
    assert {c["function"]: c["calls"] for c in f["callers"]} == \
        {"bp_caller_one": 600, "bp_caller_two": 400}


def test_cgroup_with_command(tmp_path):
    """--cgroup -- COMMAND: only the cgroup's processes, for the command's
    duration: the process in the cgroup is counted, the command (outside it,
    same file, same probes) is not."""
    exe = wl("countwork")
    with cgroup_v2("bpfprof-count3") as cg:
        w = waiting_countwork()
        try:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(w.pid))
            out = tmp_path / "c.json"
            script = f"kill -USR1 {w.pid}; {exe} calls; sleep 1"
            p = run_bpfprof(["count", "--cgroup", cg, "bp_a", "-o", out, "--",
                             "/bin/sh", "-c", script])
            assert own_counts(p.stdout)["bp_a"] == 1000  # the command ran its calls
            f = json.loads(out.read_text())["functions"][0]
            assert f["calls"] == own_counts(finish(w))["bp_a"] == 1000
        finally:
            finish(w)


def test_command_target_usage():
    for args, what in ((["-p", "1", "x", "--", "true"], "not -p"),
                       (["-a", "--children", "x", "--", "true"], "counted already")):
        p = run_bpfprof(["count", *args], check=False)
        assert p.returncode == 2 and what in p.stderr, (args, p.stderr)


# --- --children: what the children exec is probed too ----------------------------------

def test_children_exec_probed(tmp_path):
    """-- COMMAND --children where the functions are only in what the
    command's children exec (a shell running countwork twice): each exec
    stops, its new executable is probed before its first instruction, every
    call counted exactly and its callers named; a pattern that matches
    nothing in the command's own files waits for them."""
    exe = wl("countwork")
    out = tmp_path / "x.json"
    p = run_bpfprof(["count", "-v", "--children", "bp_a", "bp_b", "-o", out, "--", "/bin/sh",
                     "-c", f"{exe} calls; {exe} calls; exit 4"], check=False)
    assert p.returncode == 4, p.stderr
    assert "no function matches 'bp_a' in the command's files yet" in p.stderr
    assert "exec'd: 2 more functions probed" in p.stderr
    fns = {f["function"]: f for f in json.loads(out.read_text())["functions"]}
    assert fns["bp_a"]["calls"] == 2000 and fns["bp_a"]["timed_calls"] == 2000
    assert {c["function"]: c["calls"] for c in fns["bp_a"]["callers"]} == \
        {"bp_caller_one": 1200, "bp_caller_two": 800}
    assert fns["bp_b"]["calls"] == 500

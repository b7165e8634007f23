# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof count, part three: pprof output (calls/count and time/nanoseconds,
one sample per (function, caller) edge), -a and --cgroup with -- COMMAND, and
kernel functions where this kernel cannot trace them. countwork
(tests/workloads/countwork.c) prints its own counts; test_count.py's checks
are reused.
"""
import os
import shutil
import subprocess

import pytest

import pprof
from conftest import run_bpfprof, wl
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
    assert p.returncode == 2 and "table, json or pprof" in p.stderr

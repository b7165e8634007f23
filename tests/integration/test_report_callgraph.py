# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""report --callers, --callees and --call-graph on a real recorded profile.

The workload is build/workloads/callers: hot has two callers, caller_a with
3/4 of its work and, through four levels of recursion, rec with 1/4; rec's
only caller is caller_b (its calls of itself are not callers). The shares
are checked with tolerances from the sample counts, on the pprof profile
bpfprof wrote and on the folded text converted from it (the same numbers),
and against go tool pprof -peek on the same file. Then the command's errors.
Last, an allocation profile (bpfprof --alloc -- allocwork sites, ~1 s, one
run for the module): the call graph of each --view in its unit, the sites'
shares within the sampling's tolerance, go tool pprof -peek agreeing.
"""
import json
import math
import os
import re
import subprocess

import pytest

from conftest import SIGMAS, Sampled, Workload, run_bpfprof, wl, assert_most, assert_share

# A row of the call graph: a function's line (self, %, total, %) or an edge
# (samples, %) with its name indented by four more columns.
# The Module column is as wide as its names (12 to 40 columns): its section's
# header says (the last header line in text).
def row_re(text):
    head = [ln for ln in text.splitlines() if "  Module " in ln][-1]
    mw = head.index("Function") - head.index("Module") - 2
    return re.compile(r"^ *(?:(?P<self>[\d,]+) +(?P<selfp>[\d.]+) +)?(?P<val>[\d,]+) +"
                      r"(?P<pct>[\d.]+)  (?P<mod>.{%d})  (?P<edge>    )?(?P<name>\S.*)$" % mw)
DASHES = "-" * 79


def num(s):
    return int(s.replace(",", ""))


def graph(text):
    """{name: {"self", "total", "callers": {name: samples}, "callees": {...}}}
    from report's call graph blocks."""
    out = {}
    chunks = text.split(DASHES + "\n")
    for before, block in zip(chunks, chunks[1:]):
        if "  Module " in before:
            ROW = row_re(before)
        callers, callees, me = {}, {}, None
        for line in block.splitlines():
            m = ROW.match(line)
            if not m:
                break  # the end of the section
            if m["edge"] is None:
                assert m["self"] is not None, line
                me = m["name"]
                out[me] = {"self": num(m["self"]), "total": num(m["val"])}
            else:
                (callees if me else callers)[m["name"]] = num(m["val"])
        assert me, block
        out[me]["callers"], out[me]["callees"] = callers, callees
    return out


def report(*args):
    return run_bpfprof(["report"] + [str(a) for a in args]).stdout


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    """The workload recorded to pprof (~2,000 samples), and the same profile as
    folded text."""
    d = tmp_path_factory.mktemp("callgraph")
    with Workload(wl("callers"), 300) as w:
        Sampled(["-p", w.pid, "-F", 499, "-d", 120, "-o", d / "callers.pb.gz"], [w.pid],
                until_cpu=4, timeout=180)
    run_bpfprof(["convert", d / "callers.pb.gz", "-o", d / "callers.folded"])
    return d


def check_hot(g, what):
    hot = g["hot"]
    n = hot["total"]
    assert n >= 200, f"{what}: only {n} samples of hot"
    callers = hot["callers"]
    # Nearly every sample of hot has its caller (a few land before its frame
    # pointer is pushed and name main instead).
    assert_most(callers.get("caller_a", 0) + callers.get("rec", 0), n,
                f"hot's samples with caller_a or rec as caller in {what}")
    assert_share(callers.get("caller_a", 0) / n, 0.75, n, f"caller_a's share of hot in {what}",
                 floor=0.02)
    assert_share(callers.get("rec", 0) / n, 0.25, n, f"rec's share of hot in {what}",
                 floor=0.02)
    # Its callees are interrupts that came while it ran.
    assert_most(hot["self"], n, f"hot's self samples in {what}")


@pytest.mark.parametrize("name", ["callers.pb.gz", "callers.folded"])
def test_callers_of_hot(rec, name):
    text = report("--callers", "hot", rec / name)
    assert "Callers of 'hot' (1 function):" in text, text
    g = graph(text)
    assert list(g) == ["hot"], text
    check_hot(g, name)


def test_recursion_and_callees(rec):
    """rec recurses four deep: its only caller is caller_b, its total counts
    each stack once, its callee is hot; caller_b's callee is rec."""
    g = graph(report("--callers", "rec", "--callees", "rec", rec / "callers.pb.gz"))
    r = g["rec"]
    assert "rec" not in r["callers"] and "rec" not in r["callees"], r
    assert_most(r["callers"].get("caller_b", 0), r["total"], "rec's samples called by caller_b")
    assert_most(r["callees"].get("hot", 0), r["total"], "rec's samples in hot")
    hot = graph(report("--callers", "hot", rec / "callers.pb.gz"))["hot"]
    # rec's total is about hot's samples through it (not four times them).
    assert r["total"] <= hot["callers"].get("rec", 0) * 1.5 + 20, (r, hot)
    b = graph(report("--callees", "caller_b", rec / "callers.pb.gz"))["caller_b"]
    assert_most(b["callees"].get("rec", 0), b["total"], "caller_b's samples in rec")


def test_call_graph_top(rec):
    """-g: the top functions by total (the four frames from _start to main,
    then hot, then caller_a), each with its callers and callees."""
    text = report("-g", "--top", 6, rec / "callers.folded")
    assert "Call graph of the top 6 functions by total samples:" in text, text
    assert "Top " not in text  # the call graph replaces the tables
    g = graph(text)
    totals = [v["total"] for v in g.values()]
    assert len(g) == 6 and totals == sorted(totals, reverse=True), text
    # hot (all but caller_b's few samples of its own) and caller_a (3/4 of
    # hot) are among them whatever order main's callers and the frames below
    # it come in (a stack that stopped short has no _start).
    assert list(g).index("hot") < list(g).index("caller_a"), text
    assert "main" in g, text
    check_hot(g, "-g")
    assert set(g["main"]["callees"]) >= {"caller_a", "caller_b"}, g["main"]
    assert all(len(l) <= 80 for l in text.splitlines()), text


def test_folded_and_pprof_agree(rec):
    """The folded text converted from the pprof file gives the same numbers."""
    a = graph(report("--callers", "hot", "--callees", "hot", rec / "callers.pb.gz"))
    b = graph(report("--callers", "hot", "--callees", "hot", rec / "callers.folded"))
    assert a == b


def test_go_tool_pprof_peek_agrees(rec):
    """go tool pprof -peek of the same file: the same callers, the same counts."""
    p = subprocess.run(["go", "tool", "pprof", "-peek", "^hot$", "-sample_index=samples",
                        str(rec / "callers.pb.gz")], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=os.environ.get("HOME", "/root"),
                                             PPROF_TMPDIR="/tmp"))
    assert p.returncode == 0, p.stderr
    # "      1500 75.00% |   caller_a" above "| hot"
    theirs = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s+(\d+)\s+[\d.]+%\s+\|\s{3}(\S+)$", line)
        if m:
            theirs[m[2]] = int(m[1])
        if re.search(r"\|\s(hot)$", line):
            break
    ours = graph(report("--callers", "hot", rec / "callers.pb.gz"))["hot"]["callers"]
    assert ours == theirs, p.stdout


def test_off_cpu_view(tmp_path):
    """A profile with off-CPU time (tests/workloads/waits): the call graph of
    each view, in its unit. Off-CPU, sleep_loop's time all comes through
    sleeper_thread and nearly all goes to the sleep it calls."""
    pb = tmp_path / "w.pb.gz"
    with Workload(wl("waits"), 120) as w:
        run_bpfprof(["--off-cpu", "-p", w.pid, "-d", 3, "-o", pb])
    both = report("--callers", "sleep_loop", pb)
    assert "bpfprof report, on-CPU:" in both and "bpfprof report, off-CPU:" in both, both
    text = report("--view", "off-cpu", "--callers", "sleep_loop", "--callees", "sleep_loop", pb)
    assert "Callers and callees of 'sleep_loop' (1 function), \u00b5s:" in text, text
    s = graph(text)["sleep_loop"]
    assert s["total"] >= 1_000_000, s  # of 3 s sleeping in 20 ms naps
    assert s["callers"] == {"sleeper_thread": s["total"]}, s
    name, w = max(s["callees"].items(), key=lambda kv: kv[1])
    assert "sleep" in name and w >= 0.9 * s["total"], s


@pytest.mark.parametrize("args,code,needle", [
    (["--callers", "no_such_function"], 1,
     "--callers 'no_such_function': no function of the profile"),
    (["--callees", ""], 2, "empty --callees"),
])
def test_errors(rec, args, code, needle):
    p = run_bpfprof(["report"] + args + [rec / "callers.folded"], check=False)
    assert p.returncode == code, p.stderr
    assert needle in p.stderr and not p.stdout, p.stderr


def test_other_commands_refuse_it(rec, tmp_path):
    for opt in (["-g"], ["--callers", "hot"]):
        p = run_bpfprof(["convert"] + opt + [rec / "callers.folded", "-o", tmp_path / "x.folded"],
                        check=False)
        assert p.returncode == 2, p.stderr
        assert f"{opt[0]}" in p.stderr and "is an option of 'bpfprof report'" in p.stderr, p.stderr
        assert not (tmp_path / "x.folded").exists()
    p = run_bpfprof(["diff", "--callees", "hot", rec / "callers.folded", rec / "callers.folded"],
                    check=False)
    assert p.returncode == 2 and "--callees is an option of 'bpfprof report'" in p.stderr


# --- allocation profiles ----------------------------------------------------
#
# bpfprof --alloc -- allocwork sites MIB: about MIB MiB from each of five
# call sites, all called by sites(); the workload prints each one's truth.
# An allocation's stack ends at the allocator's caller (the site), as Go's
# heap profiles do: the sites are the leaves, sites() their only caller.
# Sampled by bytes (one sample every HEAP_PERIOD bytes on average), a site
# of T bytes is estimated within about sqrt(T * HEAP_PERIOD) bytes (one
# sample in n: 1/sqrt(n) relative; test_alloc.py's docstring derives it),
# whatever its block sizes; its allocations, of at least s bytes each,
# within about sqrt(count * HEAP_PERIOD / s).
HEAP_PERIOD = 16384
HEAP_MIB = 8
# A sampled block of s bytes weighs s / (1 - exp(-s / HEAP_PERIOD)): at
# most s + HEAP_PERIOD bytes, 1 + HEAP_PERIOD / s allocations.
OTHER_BYTES, OTHER_COUNT = 4096 + HEAP_PERIOD, 1 + HEAP_PERIOD / 4096
MIN_SIZE = {"site_free": 1024, "site_keep": 4096, "site_small": 16, "site_calloc": 256,
            "site_align": 64}


@pytest.fixture(scope="module")
def heap(tmp_path_factory):
    """One allocation profile of allocwork sites, and the workload's truth."""
    d = tmp_path_factory.mktemp("heap")
    pb = d / "heap.pb.gz"
    r = run_bpfprof([f"--alloc={HEAP_PERIOD}", "-o", pb, "--", wl("allocwork"), "sites",
                     HEAP_MIB])
    truth = json.loads(next(l for l in r.stdout.splitlines() if l.startswith('{"pid"')))
    return pb, truth["sites"]


def check_sites(g, truth, value, sd_of, other_max, what):
    """sites()'s callees in view `value` of g: each site with its share of
    the truth (value: "bytes", "count" or "inuse_bytes"), within SIGMAS of
    the estimate's standard deviation (sd_of(site)) and of the total's.
    Besides the sites, sites() calls printf, whose stdio buffer (one 4 KiB
    block, kept) may be sampled: at most other_max."""
    s = g["sites"]
    callees = {k: v for k, v in s["callees"].items() if k.startswith("site_")}
    assert sum(s["callees"].values()) - sum(callees.values()) <= other_max, s
    want = {k: v[value] for k, v in truth.items() if v[value]}
    assert set(callees) == set(want), (callees, want)
    whole, est_whole = sum(want.values()), sum(callees.values())
    whole_sd = math.sqrt(sum(sd_of(k) ** 2 for k in want))
    # Every byte is allocated under sites(): its total is its callees'.
    assert s["total"] == sum(s["callees"].values()) and s["self"] == 0, s
    assert abs(est_whole - whole) <= SIGMAS * whole_sd, (what, est_whole, whole)
    for k, est in callees.items():
        tol = SIGMAS * (sd_of(k) + want[k] / whole * whole_sd) / whole + 0.001
        share = est / est_whole
        assert abs(share - want[k] / whole) <= tol, \
            f"{what}: {k}'s share {share:.3f}, truly {want[k] / whole:.3f} +- {tol:.3f}"


def test_heap_callees_by_view(heap):
    """--callees sites in each view: the five sites with their shares of the
    bytes and of the allocations, and in use only the site that keeps its
    blocks, in the view's unit."""
    pb, truth = heap

    def sd_bytes(k):
        return math.sqrt(truth[k]["bytes"] * HEAP_PERIOD)

    def sd_count(k):
        return math.sqrt(truth[k]["count"] * HEAP_PERIOD / MIN_SIZE[k])

    text = report("--view", "alloc-space", "--callees", "sites", pb)
    assert "Callees of 'sites' (1 function), bytes:" in text, text
    check_sites(graph(text), truth, "bytes", sd_bytes, OTHER_BYTES, "alloc-space")
    assert text == report("--callees", "sites", pb)  # the default view
    text = report("--view", "alloc-objects", "--callees", "sites", pb)
    assert "Callees of 'sites' (1 function), allocs:" in text, text
    check_sites(graph(text), truth, "count", sd_count, OTHER_COUNT, "alloc-objects")
    text = report("--view", "inuse-space", "--callers", "sites", "--callees", "sites", pb)
    assert "Callers and callees of 'sites' (1 function), bytes:" in text, text
    g = graph(text)
    check_sites(g, truth, "inuse_bytes", sd_bytes, OTHER_BYTES, "inuse-space")
    assert g["sites"]["callers"] == {"main": g["sites"]["total"]}, g
    g = graph(report("--view", "inuse-objects", "--callees", "sites", pb))
    assert [k for k in g["sites"]["callees"] if k.startswith("site_")] == ["site_keep"], g


def test_heap_callers_of_a_site(heap):
    """--callers of a site: sites() with all of it; in use, a site that
    freed all its blocks has none (said so, not 'no function matches')."""
    pb, truth = heap
    g = graph(report("--callers", "site_small", pb))
    s = g["site_small"]
    assert s["callers"] == {"sites": s["total"]} and s["self"] == s["total"], s
    text = report("--view", "inuse-space", "--callers", "site_small", pb)
    assert "'site_small': no memory in use there or in a callee\n" \
        "(it is in the profile, not in this view)." in text, text
    assert "No function matches" not in text, text


def test_heap_call_graph(heap):
    """-g in use: the kept site under sites() with all of it."""
    pb, truth = heap
    text = report("--view", "inuse-space", "-g", pb)
    assert re.search(r"^Call graph of the top \d+ functions? by total memory in use, bytes:$",
                     text, re.M), text
    g = graph(text)
    assert "site_keep" in g and "sites" in g, text
    k = g["site_keep"]
    assert k["callers"] == {"sites": k["total"]} and k["self"] == k["total"], k


def test_heap_tables_in_the_views_unit(heap):
    """The tables' process table names the view's value and unit (not time)."""
    pb, truth = heap
    text = report(pb)
    assert "Memory allocated by process (bytes, 1 of 1):" in text, text
    assert re.search(r"^ +Bytes +% +PID +Command$", text, re.M), text
    text = report("--view", "inuse-objects", pb)
    assert "Memory in use by process (allocs, 1 of 1):" in text, text
    assert re.search(r"^ +Allocs +% +PID +Command$", text, re.M), text


@pytest.mark.parametrize("view,index", [("alloc-space", "alloc_space"),
                                        ("inuse-space", "inuse_space"),
                                        ("alloc-objects", "alloc_objects")])
def test_heap_go_tool_pprof_peek_agrees(heap, view, index):
    """go tool pprof -peek of the same heap profile: the same callers and
    callees of sites(), the same bytes and allocations."""
    pb, truth = heap
    p = subprocess.run(["go", "tool", "pprof", "-peek", "^sites$", f"-sample_index={index}",
                        "-unit=B" if "space" in view else "-unit=count", str(pb)],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=os.environ.get("HOME", "/root"),
                                PPROF_TMPDIR="/tmp"))
    assert p.returncode == 0, p.stderr
    # "     67897688B 20.48% |   site_keep", callers above "| sites", callees below
    theirs, side = ({}, {}), 0
    for line in p.stdout.splitlines():
        m = re.match(r"^\s+(\d+)B?\s+[\d.]+%\s+\|\s{3}(\S+)$", line)
        if m:
            theirs[side][m[2]] = int(m[1])
        if re.search(r"\|\s(sites)$", line):
            side = 1
    s = graph(report("--view", view, "--callers", "sites", "--callees", "sites", pb))["sites"]
    assert (s["callers"], s["callees"]) == theirs, p.stdout


def test_heap_callers_of_malloc(heap):
    """No allocator frame: --callers malloc says where the stacks end."""
    pb, truth = heap
    p = run_bpfprof(["report", "--callers", "malloc", pb], check=False)
    assert p.returncode == 1 and not p.stdout, p.stderr
    assert "--callers 'malloc': no function of the profile" in p.stderr, p.stderr
    assert "an allocation profile's stacks end at the allocator's caller" in p.stderr, p.stderr


def test_heap_cpu_view(heap, tmp_path):
    """A CPU view of an allocation profile, or an allocation view of another
    profile, is a usage error said in one line."""
    pb, truth = heap
    for cmd in (["report"], ["convert", "-f", "folded"]):
        p = run_bpfprof(cmd + ["--view", "cpu", pb], check=False)
        assert p.returncode == 2 and not p.stdout, p.stderr
        assert "an allocation profile: --view alloc-space, alloc-objects, inuse-space or " \
               "inuse-objects" in p.stderr, p.stderr
        assert len(p.stderr.splitlines()) == 1, p.stderr
    folded = tmp_path / "heap.folded"
    run_bpfprof(["convert", pb, "-o", folded])
    p = run_bpfprof(["report", "--view", "inuse-space", folded], check=False)
    assert p.returncode == 2 and not p.stdout, p.stderr
    assert "heap.folded: not an allocation profile" in p.stderr, p.stderr

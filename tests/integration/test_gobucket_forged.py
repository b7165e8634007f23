# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on Go reads the runtime's profile buckets from the
process: with a symbol table it polls the runtime's list of them
(runtime.mbuckets), else it probes runtime.setprofilebucket(p, b) and reads
b (its stack, size and in-use counts). A tenant's Go program can forge both:
call that function itself with any b (the probed path, forced here by
BPFPROF_TEST_GO_NO_POLL), or point runtime.mbuckets at a list it made.
For the first, tests/workloads/goforge does (a bucket with a garbage stack and
counts whose frees pass their allocations, one with absurd counts, one with
a huge nstk, one of another type, unmapped and kernel addresses, and 20,000
distinct forged buckets, past its share of the BPF table), while an honest
Go program (goalloc) is profiled in the same run. What must hold: the
forger's refused buckets are counted (-v), its flood is cut at its own share
(8192 entries) and counted, its values are clamped (no negative or wrapped
in-use, nothing in use where frees pass allocations), and the honest
program's profile matches its runtime's own per site as test_allocgo's does.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import (BPFPROF, GO_SITES, Waiting, alloc_attach, as_tenant, assert_go_sites,
                      go_sites, json_line, tenant, wl)
import pprof

INT64_MAX = (1 << 63) - 1
SHARE = 8192  # ALLOC_GO_BUCKETS_PROC


def check_honest(p, hpid, hout):
    """The honest goalloc's sites: its runtime's own profile (test_allocgo's checks)."""
    assert_go_sites(json_line(hout, "memprof")["sites"], go_sites(p, hpid))


def tenant_goforge(tenant_dir):
    """goforge copied into the tenant's directory, the tenant's: its path."""
    pw = tenant()
    prog = tenant_dir / "goforge"
    shutil.copy(wl("goforge"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    return prog


def test_forged_buckets_stay_the_forgers(tmp_path, tenant_dir):
    prog = tenant_goforge(tenant_dir)
    out = tmp_path / "go.pb.gz"
    env = dict(os.environ, BPFPROF_TEST_GO_NO_POLL="1")  # the probed path
    with Waiting([wl("goalloc"), "wait", "memprof", "2"]) as honest, \
            Waiting(as_tenant([prog, "wait", "2"])) as forger:
        stderr, (hout, fout), took, rc = alloc_attach([honest, forger], out, env=env)
    hpid, fpid = honest.pid, forger.pid
    assert rc == 0, stderr
    assert took < 30, took  # the forger's buckets did not stall the run
    forged = json_line(fout, "forged")
    assert forged["flood"] == 20000, forged

    # refused: huge nstk, another type, unmapped, kernel (one entry each),
    # and the flood's entries within the forger's share; the rest not counted
    m = re.search(r"Go: (\d+) profile buckets read from the processes \((\d+) reads, "
                  r"([\d.]+) ms\), (\d+) samples of buckets refused \(not a bucket, unreadable\), "
                  r"(\d+) not counted \(the tables full\)", stderr)
    assert m, stderr
    nb, _, read_ms, refused, uncounted = int(m.group(1)), int(m.group(2)), \
        float(m.group(3)), int(m.group(4)), int(m.group(5))
    refused_want = (forged["huge_nstk"] + forged["other_type"] + forged["unmapped"]
                    + forged["kernel"] + SHARE - 6)
    assert refused == refused_want, (refused, refused_want, forged, m.group(0))
    assert uncounted == 20000 - (SHARE - 6), uncounted
    assert nb <= SHARE + 1000, nb  # the forger's share, and the honest program's few
    assert read_ms < 5000, read_ms

    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    for s in p["sample"]:
        assert all(0 <= v <= INT64_MAX for v in s["value"]), s
    # the forger: garbage (frees past allocations) has nothing in use; its
    # samples are its own (pid), named by nothing of the honest program
    fs = [s for s in p["sample"] if s["label"].get("pid") == fpid]
    assert fs, "no sample of the forger"
    by_objects = sorted(fs, key=lambda s: s["value"][1])
    garbage = [s for s in fs if s["value"][1] == forged["garbage"] * 4096]
    assert garbage and all(s["value"][2] == 0 and s["value"][3] == 0 for s in garbage), \
        by_objects
    fsites = go_sites(p, fpid)
    assert not set(fsites) & set(GO_SITES), fsites

    check_honest(p, hpid, hout)


@pytest.mark.parametrize("poll", [True, False], ids=["polled", "probed"])
def test_inlined_call_frames_once(tmp_path, poll):
    """A bucket's stack is runtime.callers's: an allocation in main.small,
    inlined into main.outer, has a pc in outer's code for small and another
    for outer itself. The profile's stack names each function once, as the
    runtime's own profile does (runtime.CallersFrames), innermost first."""
    out = tmp_path / "go.pb.gz"
    env = dict(os.environ, **({} if poll else {"BPFPROF_TEST_GO_NO_POLL": "1"}))
    r = subprocess.run([str(BPFPROF), "--alloc", "-v", "-o", str(out), "--", wl("goforge"),
                        "inline", "1"], capture_output=True, text=True, timeout=60, env=env)
    assert ("buckets polled each drain" in r.stderr) == poll, r.stderr
    assert r.returncode == 0, r.stderr
    truth = json_line(r.stdout, "inline")
    assert truth[:2] == ["main.small", "main.outer"], truth
    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    best = max(p["sample"], key=lambda s: s["value"][1])
    names = []
    for lid in best["location_id"]:  # leaf first; a location's lines innermost first
        for ln in p["location"][lid]["lines"]:
            names.append(pprof.strings(p, p["function"][ln.get(1)].get(2, 0)))
    names = [n.removesuffix(".abi0") for n in names]
    assert names == truth, (names, truth)


def test_forged_bucket_list_stays_the_forgers(tmp_path, tenant_dir):
    """With a symbol table bpfprof polls the runtime's bucket list
    (runtime.mbuckets) instead of probing each sample. goforge list points
    that list at 20,000 forged buckets (absurd and moving counts, another
    type, a huge nstk, a cycle at its end): the walk keeps the forger's share
    (8192), refuses the two that are not buckets, its values are clamped, and
    the honest goalloc profiled in the same run still matches its runtime."""
    prog = tenant_goforge(tenant_dir)
    out = tmp_path / "go.pb.gz"
    with Waiting([wl("goalloc"), "wait", "memprof", "2"]) as honest, \
            Waiting(as_tenant([prog, "list", "wait", "2"])) as forger:
        stderr, (hout, fout), took, rc = alloc_attach([honest, forger], out)
    hpid, fpid = honest.pid, forger.pid
    assert rc == 0, stderr
    assert took < 30, took
    assert json_line(fout, "list") == 20000
    assert "buckets polled each drain" in stderr, stderr
    m = re.search(r"Go: (\d+) profile buckets read from the processes .*; (\d+) samples from "
                  r"polled buckets, (\d+) polled buckets refused", stderr)
    assert m, stderr
    nb, refused = int(m.group(1)), int(m.group(3))
    assert SHARE <= nb <= SHARE + 1000 and refused == 2, m.group(0)
    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    for s in p["sample"]:
        assert all(0 <= v <= INT64_MAX for v in s["value"]), s
    fs = [s for s in p["sample"] if s["label"].get("pid") == fpid]
    assert fs and all(s["value"][2] == 0 and s["value"][3] == 0 for s in fs), fs  # frees > allocs
    check_honest(p, hpid, hout)

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
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BPFPROF, as_tenant, tenant, wl
import pprof

SITES = ("main.makeBytes", "main.makeNode", "strconv.formatBits", "main.worker")
MIN_SAMPLES = 20
INT64_MAX = (1 << 63) - 1
SHARE = 8192  # ALLOC_GO_BUCKETS_PROC


def sites_of(p, pid):
    """{innermost non-runtime function: [alloc_objects, alloc_space, inuse_objects,
    inuse_space]} of pid's samples."""
    out = {}
    for s in p["sample"]:
        if s["label"].get("pid") != pid:
            continue
        name = "[none]"
        for lid in s["location_id"]:
            lines = p["location"][lid]["lines"] if lid in p["location"] else []
            names = [pprof.strings(p, p["function"][ln.get(1)].get(2, 0)) for ln in lines]
            hit = [n for n in names if not n.startswith("runtime.")]
            if hit:
                name = hit[0]
                break
        v = out.setdefault(name, [0, 0, 0, 0])
        for i in range(4):
            v[i] += s["value"][i]
    return out


def start_waiting(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith('{"waiting"'), line
    return proc, json.loads(line)["waiting"]


def last_json(text, key):
    for line in text.splitlines():
        if line.startswith('{"' + key):
            return json.loads(line)[key]
    raise AssertionError(f"no {key} line:\n{text}")


def run_pair(honest, hpid, forger, fpid, out, strip=False):
    """bpfprof --alloc -v -p honest,forger until both exit: (stderr, honest's stdout,
    forger's stdout, seconds from their start, bpfprof's exit code). strip: the
    bucket list not polled (as for a binary without a symbol table)."""
    env = dict(os.environ, **({"BPFPROF_TEST_GO_NO_POLL": "1"} if strip else {}))
    bp = subprocess.Popen([str(BPFPROF), "--alloc", "-v", "-o", str(out), "-p",
                           f"{hpid},{fpid}"], stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = bp.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "profiling allocations of" in line:
                break
        t0 = time.monotonic()
        os.kill(hpid, signal.SIGUSR1)
        os.kill(fpid, signal.SIGUSR1)
        hout, _ = honest.communicate(timeout=60)
        fout, _ = forger.communicate(timeout=60)
        stderr = "".join(seen) + bp.communicate(timeout=60)[1]
        took = time.monotonic() - t0
    finally:
        for p in (honest, forger, bp):
            if p.poll() is None:
                p.kill()
                p.wait()
    return stderr, hout, fout, took, bp.returncode


def check_honest(p, hpid, hout):
    """The honest goalloc's sites: its runtime's own profile (test_allocgo's tolerances)."""
    truth = last_json(hout, "memprof")["sites"]
    v = sites_of(p, hpid)
    assert truth["main.makeBytes"][0] >= MIN_SAMPLES, truth
    for site in SITES:
        t = truth.get(site, [0] * 5)
        if t[0] < MIN_SAMPLES:
            continue
        assert site in v, f"{site} missing from {sorted(v)}"
        assert abs(v[site][1] - t[2]) <= 0.10 * t[2], (site, v[site], t)
        assert abs(v[site][0] - t[1]) <= 0.10 * t[1], (site, v[site], t)
        assert abs(v[site][3] - t[4]) <= 0.20 * t[4] + 2 * 524288, (site, v[site], t)


def test_forged_buckets_stay_the_forgers(tmp_path, tenant_dir):
    pw = tenant()
    prog = tenant_dir / "goforge"
    shutil.copy(wl("goforge"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "go.pb.gz"
    honest, hpid = start_waiting([wl("goalloc"), "wait", "memprof", "2"])
    forger, fpid = start_waiting(as_tenant([prog, "wait", "2"]))
    stderr, hout, fout, took, rc = run_pair(honest, hpid, forger, fpid, out, strip=True)
    assert rc == 0, stderr
    assert took < 30, took  # the forger's buckets did not stall the run
    forged = last_json(fout, "forged")
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
    fsites = sites_of(p, fpid)
    assert not set(fsites) & set(SITES), fsites

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
    truth = last_json(r.stdout, "inline")
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
    pw = tenant()
    prog = tenant_dir / "goforge"
    shutil.copy(wl("goforge"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "go.pb.gz"
    honest, hpid = start_waiting([wl("goalloc"), "wait", "memprof", "2"])
    forger, fpid = start_waiting(as_tenant([prog, "list", "wait", "2"]))
    stderr, hout, fout, took, rc = run_pair(honest, hpid, forger, fpid, out)
    assert rc == 0, stderr
    assert took < 30, took
    assert last_json(fout, "list") == 20000
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

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on Go programs: the runtime's own sampled allocations.

The Go runtime samples allocations by bytes (runtime.MemProfileRate) and
records each sampled one in its profile bucket. With a symbol table bpfprof
polls the runtime's list of buckets (runtime.mbuckets) each drain, with no
trap per sample; without one it counts runtime.setprofilebucket's calls by
bucket. Either way it reads each bucket's stack and size, and its in-use
counts, from the process, so its samples are the runtime's own and no free is
probed. The workload
(tests/workloads/goalloc, memprof mode) prints the runtime's heap profile per
site (runtime.MemProfile after runtime.GC() twice, scaled as runtime/pprof
scales it): bpfprof's profile must show the same samples at the same sites,
its alloc_space per site within 10% of the runtime's (the same samples: only
weighing each sample by its own size instead of the bucket's average
differs), and in-use bytes within 20% (the bucket's own counts, read up to
one drain before the exit: as of the runtime's last GC).
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import (Waiting, alloc_attach, as_tenant, assert_go_sites, go_release_edited,
                      go_sites, json_line, run_bpfprof, tenant, wl)
import pprof


def load(path):
    with open(path, "rb") as f:
        return pprof.decode(f.read())


def go_counts(stderr):
    """(sampled, frees seen, frees matched) from bpfprof's -v summary."""
    m = re.search(r"Go: (\d+) allocations the runtime sampled, (\d+) frees of sampled "
                  r"objects seen, (\d+) of them matched", stderr)
    if m:
        return tuple(int(x) for x in m.groups())
    raise AssertionError(f"no Go summary:\n{stderr}")


def go_buckets(stderr):
    """(buckets read, samples of refused buckets, samples not counted) from -v."""
    m = re.search(r"Go: (\d+) profile buckets read from the processes \((\d+) reads, "
                  r"[\d.]+ ms\), (\d+) samples of buckets refused \(not a bucket, "
                  r"unreadable\), (\d+) not counted", stderr)
    assert m, f"no Go bucket summary:\n{stderr}"
    return int(m.group(1)), int(m.group(3)), int(m.group(4))


def check_against_runtime(out, stdout, stderr, rate=None, late=0):
    """late: samples the runtime may have taken before -p attached (its start,
    signal.Notify), beyond its own [runtime] site."""
    mp = json_line(stdout, "memprof")
    if rate is not None:
        assert mp["rate"] == rate
    truth = mp["sites"]
    sampled, seen, matched = go_counts(stderr)
    rt_samples = sum(v[0] for v in truth.values())
    early = truth.get("[runtime]", [0])[0]  # the runtime's start, before -p attached
    # Every sample the runtime took is ours too (a few more: after its profile was read).
    assert rt_samples - early - late <= sampled <= rt_samples * 1.02 + 10, (rt_samples, sampled)
    # Go 1.19 (verified): setprofilebucket alone, no free probed; every bucket read
    assert seen == 0 and matched == 0, (seen, matched)
    nb, refused, uncounted = go_buckets(stderr)
    assert nb > 0 and refused == 0 and uncounted == 0, (nb, refused, uncounted)
    v = go_sites(load(out))
    assert_go_sites(truth, v)
    # The runtime's leading frames are left out: no sample's leaf is runtime.*.
    return v


@pytest.fixture(scope="module")
def go_command(tmp_path_factory):
    out = tmp_path_factory.mktemp("allocgo") / "go.pb.gz"
    r = run_bpfprof(["--alloc", "-v", "-o", out, "--", wl("goalloc"), "memprof", 2])
    return out, r


def test_go_sites_match_the_runtime(go_command):
    """-- COMMAND: per site, the runtime's own heap profile."""
    out, r = go_command
    # a symbol table: the runtime's bucket list polled, mProf_Flush alone probed (a
    # trap per GC, none per sample): not mProf_Malloc, freeSpecial, mProf_Free
    assert "goalloc: 1 allocator functions probed" in r.stderr, r.stderr
    assert "probing runtime.mProf_Flush" in r.stderr and "buckets polled" in r.stderr, r.stderr
    assert "mProf_Malloc" not in r.stderr and "mProf_Free " not in r.stderr, r.stderr
    check_against_runtime(out, r.stdout, r.stderr, rate=524288)


def test_go_runtime_frames_trimmed(go_command):
    """Leading runtime.* frames are left out, as runtime/pprof does: the leaf
    of the big site is main.makeBytes itself (go tool pprof -top's flat)."""
    out, _ = go_command
    p = load(out)
    leaves = {}
    for s in p["sample"]:
        loc = p["location"][s["location_id"][0]]
        name = pprof.strings(p, p["function"][loc["lines"][0].get(1)].get(2, 0))
        leaves[name] = leaves.get(name, 0) + s["value"][1]
    tot = sum(leaves.values())
    runtime = sum(b for n, b in leaves.items() if n.startswith("runtime."))
    assert leaves.get("main.makeBytes", 0) > 0.8 * tot, leaves
    assert runtime < 0.01 * tot, leaves


def test_go_stripped(tmp_path):
    """-ldflags='-s -w': names from .gopclntab, the release from .go.buildinfo,
    the rate taken as the default (said). runtime.mbuckets is found in the
    runtime's code and polled (test_gostrip.py); here the list is not polled
    (BPFPROF_TEST_GO_NO_POLL, as when the address found fails its check):
    setprofilebucket probed, a trap per sample."""
    out = tmp_path / "go.pb.gz"
    r = run_bpfprof(["--alloc", "-v", "-o", out, "--", wl("goalloc-stripped"), "memprof", 2],
                    env=dict(os.environ, BPFPROF_TEST_GO_NO_POLL="1"))
    assert "no symbol table" in r.stderr and "524288" in r.stderr, r.stderr
    assert "probing runtime.setprofilebucket" in r.stderr and "polled each" not in r.stderr
    check_against_runtime(out, r.stdout, r.stderr, rate=524288)


def test_go_pid(tmp_path):
    """-p: a running Go program (attached before its work starts)."""
    out = tmp_path / "go.pb.gz"
    with Waiting([wl("goalloc"), "wait", "memprof", "2"]) as w:
        stderr, (stdout,), _, rc = alloc_attach([w], out)
    assert rc == 0, stderr
    check_against_runtime(out, stdout, stderr, rate=524288, late=5)


def test_go_sampling_off_warns():
    """A Go program that does not link runtime.MemProfile samples nothing
    (MemProfileRate 0): said, not an empty profile in silence."""
    r = run_bpfprof(["--alloc", "-d", "3", "-f", "folded", "--", wl("goalloc-nomemprof"), 1])
    assert "the Go runtime samples no allocation" in r.stderr, r.stderr
    assert "runtime.MemProfile" in r.stderr


def test_go_sampling_off_stripped_warns(tmp_path):
    """The same without a symbol table (the flag cannot be read): zero samples
    from a Go program that ran are said at the end."""
    prog = tmp_path / "goalloc-nomemprof"
    shutil.copy(wl("goalloc-nomemprof"), prog)
    subprocess.run(["strip", str(prog)], check=True)
    r = run_bpfprof(["--alloc", "-d", "3", "-f", "folded", "--", prog, 1])
    assert "the Go runtime sampled no allocation" in r.stderr, r.stderr


def test_tenant_edited_buildinfo(tmp_path, tenant_dir):
    """A tenant's Go program whose build information names another release
    than its code (go1.19.8 edited to go1.23.8, whose mProf_Malloc takes the
    M first: its probe would read the size from the wrong register) is not
    probed, said; no sample of wrong weight."""
    pw = tenant()
    prog = tenant_dir / "goalloc"
    go_release_edited(wl("goalloc"), prog, "go1.23")
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "go.pb.gz"
    with Waiting(as_tenant([prog, "wait", "memprof", "1"])) as w:
        stderr, _, _, rc = alloc_attach([w], out)
    assert "its build information names go1.23" in stderr, stderr
    assert "Go allocations not profiled" in stderr
    assert rc != 0 or "allocations the runtime sampled" not in stderr, stderr

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on SBCL (issue 39, source 3): Debian's sbcl 2.2.9.

Lisp code allocates inline in its thread's allocation regions; the runtime
closes a full one (gc_close_region) and opens another. A close of one of
the thread's regions stands for the bytes it holds (sb-sprof's :alloc
point), a large object (alloc, 128 KiB and more) for its own bytes; those
bytes are sampled by bytes as the C library's (bpf/alloc_abi.h).

tests/workloads/lispalloc.lisp conses at three sites in rounds and prints
what sb-ext:get-bytes-consed counted at each. A site's estimate is a sum of
sampled closes of about s bytes each (its mean, alloc_space / alloc_objects)
weighed by 1/p, p = 1 - exp(-s/P): a standard deviation of about
sqrt(T s (1 - p) / p) for T bytes (test_alloc.py's derivation), SIGMAS of
them allowed. A region is closed by the site that finds it full: at each of
a site's 2 edges per round up to one region (GENCGC_PAGE_BYTES, 32 KiB) is
another site's, a floor of 2 x ROUNDS regions. The program pauses between
rounds (some 5,000 samples a second, not 12,000): a reader starved of CPU
for a second on a loaded machine loses none of the ring's 3,900.
"""
import math
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import SIGMAS, as_tenant, folded_sum, run_bpfprof, sbcl, tenant, wl

PERIOD = 131072
ROUNDS, PAUSE_MS = 150, 3
REGION = 32768
SITES = ("CONS-SITE", "VECTOR-SITE", "BIG-SITE")
LISP = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "workloads"
           / "lispalloc.lisp")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One --alloc run of lispalloc.lisp: (its stdout, bpfprof's stderr, the
    profile's folded views {view: text})."""
    exe = sbcl()
    out = tmp_path_factory.mktemp("sbcl") / "heap.pb.gz"
    r = run_bpfprof([f"--alloc={PERIOD // 1024}K", "-v", "-o", out, "--", exe, "--script", LISP,
                     ROUNDS, PAUSE_MS])
    views = {v: run_bpfprof(["convert", "--view", v, "-f", "folded", out]).stdout
             for v in ("alloc-space", "alloc-objects", "inuse-space")}
    return r.stdout, r.stderr, views


def test_sites_bytes(run):
    stdout, stderr, views = run
    truth = {m[0]: int(m[1]) for m in re.findall(r"^site (\S+) (\d+)$", stdout, re.M)}
    assert set(truth) == set(SITES), stdout
    assert "ring buffer was full" not in stderr, stderr
    for site in SITES:
        name = "LISPALLOC::" + site
        est = folded_sum(views["alloc-space"], name)
        objs = folded_sum(views["alloc-objects"], name)
        assert objs > 0, f"{site}: no sample\n{views['alloc-space'][:3000]}"
        s = est / objs
        p = -math.expm1(-s / PERIOD)
        tol = SIGMAS * math.sqrt(truth[site] * s * (1 - p) / p) + 2 * ROUNDS * REGION
        assert abs(est - truth[site]) <= tol, \
            f"{site}: estimated {est} bytes, truly {truth[site]} +- {tol:.0f} (regions of {s:.0f})"


def test_inuse_not_measured_and_said_once(run):
    """The GC moves objects: no SBCL block is followed, -v says so once."""
    _, stderr, views = run
    said = [l for l in stderr.splitlines() if "in-use bytes are not measured" in l]
    assert len(said) == 1 and "GC moves objects" in said[0], stderr
    assert "SITE" not in views["inuse-space"], views["inuse-space"][:2000]
    assert "alloc and gc_close_region probed" in stderr, stderr


def test_a_fake_sbcl_is_not_probed(tenant_dir):
    """The tenant's fakesbcl_alloc says it is 2.2.9 and exports alloc,
    alloc_list and gc_close_region, alloc's first instructions 2.2.9's but
    for absurd region offsets; fakesbcl_alloc_new says 9.9.9 (no layout).
    Neither is probed (one warning each, one for two processes of the same
    file), bpfprof does not crash, the fakes run on."""
    pw = tenant()
    exes = []
    for name in ("fakesbcl_alloc", "fakesbcl_alloc_new"):
        dst = tenant_dir / name
        shutil.copy2(wl(name), dst)
        os.chown(dst, pw.pw_uid, pw.pw_gid)
        exes.append(dst)
    # 5 s: bpfprof -p's start (its -p scan, the probes) well inside their life on a loaded host
    procs = [subprocess.Popen(as_tenant([e, "5"]), stdout=subprocess.PIPE, text=True)
             for e in (exes[0], exes[1], exes[1])]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        r = run_bpfprof(["--alloc", "-v", "-o", tenant_dir.parent / "fake.pb.gz",
                         "-p", ",".join(str(p.pid) for p in procs)], timeout=60)
    finally:
        outs = [p.communicate(timeout=30)[0] for p in procs]
    assert all(p.returncode == 0 and "calls" in o for p, o in zip(procs, outs)), outs
    bad = [l for l in r.stderr.splitlines() if "SBCL 2.2.9.fake" in l]
    assert len(bad) == 1 and "not the code verified" in bad[0], r.stderr
    new = [l for l in r.stderr.splitlines() if "SBCL 9.9.9" in l]
    assert len(new) == 1 and "not verified" in new[0], r.stderr
    assert "gc_close_region probed" not in r.stderr, r.stderr


def test_all_processes_continuous(tmp_path):
    """-a in continuous mode: the sbcl binary is a file of its own (probed
    once, in every process mapping it); each interval's heap profile names
    the Lisp sites, and over the files their shares of the bytes are the
    program's (the same rounds all along: get-bytes-consed's ratios), within
    SIGMAS of the samples' binomial spread plus the region floor."""
    exe = sbcl()
    rounds = 900  # some 8 s: past the run's 2 however long -a's start takes (seconds, loaded)
    w = subprocess.Popen([exe, "--script", LISP, str(rounds), str(PAUSE_MS)],
                         stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # its runtime started: current_thread's GOT entry relocated
        d = tmp_path / "out"
        r = run_bpfprof([f"--alloc={PERIOD // 1024}K", "-a", "--interval", "1", "--output-dir",
                         d, "-d", "2", "-v"], timeout=60)
        stdout, _ = w.communicate(timeout=60)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    assert re.search(r"sbcl: 2 allocator functions probed in every process mapping it",
                     r.stderr), r.stderr
    files = sorted(d.glob("bpfprof-*.heap.pb.gz"))
    assert len(files) >= 2, (files, r.stderr)
    truth = {m[0]: int(m[1]) for m in re.findall(r"^site (\S+) (\d+)$", stdout, re.M)}
    est, samples, named = dict.fromkeys(SITES, 0), 0.0, 0
    for f in files:
        space = run_bpfprof(["convert", "--view", "alloc-space", "-f", "folded", f]).stdout
        objs = run_bpfprof(["convert", "--view", "alloc-objects", "-f", "folded", f]).stdout
        named += any(("LISPALLOC::" + s) in space for s in SITES)
        for site in SITES:
            b, o = folded_sum(space, "LISPALLOC::" + site), folded_sum(objs, "LISPALLOC::" + site)
            est[site] += b
            if o:
                samples += o * -math.expm1(-(b / o) / PERIOD)
    assert named >= len(files) - 1, (named, files)  # the last interval may hold none
    total, true_total = sum(est.values()), sum(truth.values())
    assert total > 0, r.stderr
    for site in SITES:
        share, want = est[site] / total, truth[site] / true_total
        tol = SIGMAS * math.sqrt(want * (1 - want) / samples) + 2 * REGION * rounds / true_total
        assert abs(share - want) <= tol, \
            f"{site}: {share:.3f} of the bytes, expected {want:.3f} +- {tol:.3f}"

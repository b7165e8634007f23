# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc: memory profiles from the C library's allocator.

The workload (tests/workloads/allocsites.c) allocates known bytes from known
call sites and prints its totals; the profile's estimates per site are
checked against them within tolerances derived from the sampling:

A Poisson process of mean P over the bytes samples an allocation of s bytes
with probability p = 1 - exp(-s/P) and weighs it by w = 1/p. For a site of
n allocations of s bytes (T = n s), the estimate s w K (K ~ Binomial(n, p))
is unbiased with variance n s^2 w^2 p (1 - p) = T s w (1 - p): a standard
deviation of about sqrt(T P) bytes, 1/sqrt(expected samples) relative.
The assertions allow SIGMAS (5) of them, as conftest's helpers do
(sd_bytes, assert_bytes and site_values are conftest's; other files still
import them from here).
"""
import os
import subprocess
import time

import pytest

from conftest import BPFPROF, as_tenant, assert_bytes, run_bpfprof, site_values, tenant, wl
from conftest import sd_bytes  # noqa: F401  (imported from here by other files)

PERIOD = 16384
ROUNDS, N, SIZE = 8, 1024, 4096


def truth(stdout):
    t = {}
    for line in stdout.splitlines():
        name, b, o, kept = line.split()
        t[name] = (int(b), int(o), int(kept))
    return t


def test_alloc_sites(tmp_path):
    out = tmp_path / "heap.pb.gz"
    r = run_bpfprof(["--alloc=16K", "-v", "-o", out, "--", wl("allocsites"), ROUNDS, N, SIZE])
    t = truth(r.stdout)
    assert "session uprobes" in r.stderr or "uprobe_multi" in r.stderr, r.stderr
    p, v = site_values(out)
    assert p["period"] == PERIOD
    for site, size in (("site_freed", SIZE), ("site_kept", SIZE), ("site_small", 64)):
        b, o, kept = t[site]
        assert site in v, f"{site} missing from {sorted(v)}"
        ao, ab, io, ib = v[site]
        assert_bytes(ab, b, size, PERIOD, f"{site} alloc_space")
        # Objects: the same relative error (every block of a site has one size).
        assert_bytes(ao * size, o * size, size, PERIOD, f"{site} alloc_objects x {size}")
        if kept:
            assert_bytes(ib, kept, size, PERIOD, f"{site} inuse_space")
        else:
            assert ib == 0 and io == 0, f"{site}: {ib} bytes in use, all were freed"
    # Nothing but the three sites (and the C library's own start-up) allocates much.
    other = sum(x[1] for k, x in v.items() if k not in ("site_freed", "site_kept", "site_small"))
    assert other < 0.01 * sum(x[1] for x in v.values()), v


def test_alloc_readers(tmp_path):
    """go tool pprof, bpfprof report and convert read the heap profile; the views."""
    out = tmp_path / "heap.pb.gz"
    run_bpfprof(["--alloc=64K", "-o", out, "--", wl("allocsites"), 2, 512, SIZE])
    top = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=alloc_space", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    assert "Type: alloc_space" in top.stdout and "site_freed" in top.stdout, top.stdout
    inuse = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=inuse_space",
                            str(out)], capture_output=True, text=True, timeout=120)
    assert "site_kept" in inuse.stdout and "site_freed" not in inuse.stdout, inuse.stdout
    rep = run_bpfprof(["report", out])
    assert "bytes of memory allocated" in rep.stdout and "site_freed" in rep.stdout, rep.stdout
    folded = run_bpfprof(["convert", "--view", "inuse-space", "-f", "folded", out]).stdout
    assert "site_kept" in folded and "site_freed" not in folded, folded
    objs = run_bpfprof(["convert", "--view", "alloc-objects", "-f", "folded", out]).stdout
    assert "site_small" in objs
    d = run_bpfprof(["diff", "--view", "inuse-space", out, out]).stdout
    assert "No function's share changed" in d, d
    # Round trip: bpfprof's pprof of its own pprof keeps the four values.
    again = tmp_path / "again.pb.gz"
    run_bpfprof(["convert", "-o", again, out])
    assert site_values(again)[1] == site_values(out)[1]


def test_alloc_usage_errors():
    for args, msg in ((["--alloc", "-C", "0", "-d", "1"], "not -C"),
                      (["--alloc", "-a", "-p", "1"], "exclude each other"),
                      (["--alloc", "-a", "--", "true"], "no command"),
                      (["--alloc", "--alloc-budget", "5", "-p", "1"], "needs -a or --cgroup"),
                      (["--alloc", "--alloc-budget", "x", "-a"], "invalid --alloc-budget"),
                      (["--alloc-budget", "5", "-a"], "needs --alloc"),
                      (["--alloc", "-d", "1"], "needs -p"),
                      (["--alloc=0", "-p", "1"], "invalid --alloc"),
                      (["--alloc", "--off-cpu", "-p", "1"], "cannot be combined"),
                      (["--view", "inuse-space", "-p", "1"], "needs --alloc"),
                      (["--alloc", "--view", "wall", "-p", "1"], "--alloc profiles take")):
        r = run_bpfprof(args, check=False)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)


def test_alloc_pid(tmp_path):
    """-p: a running process, profiled until it exits; the same estimates."""
    out = tmp_path / "heap.pb.gz"
    proc = subprocess.Popen([wl("allocsites")] + [str(x) for x in (ROUNDS, N, SIZE, 3)],
                            stdout=subprocess.PIPE,
                            text=True)
    try:
        r = run_bpfprof(["--alloc=16K", "-o", out, "-p", proc.pid], timeout=120)
    finally:
        stdout, _ = proc.communicate(timeout=60)
    t = truth(stdout)
    _, v = site_values(out)
    for site, size in (("site_freed", SIZE), ("site_kept", SIZE), ("site_small", 64)):
        assert_bytes(v[site][1], t[site][0], size, PERIOD, f"-p: {site} alloc_space")
    assert_bytes(v["site_kept"][3], t["site_kept"][2], SIZE, PERIOD, "-p: site_kept inuse_space")


def test_tenant_fake_allocator(tmp_path, tenant_dir):
    """A tenant's program exports its own malloc and free and calls malloc with
    2^62-byte sizes as fast as it can, each call a new address never freed:
    every call is sampled and weighs 2^62 bytes. The bounds hold (the live
    table stops at its size, counted and reported), bpfprof ends with the
    process, and the sums saturate at pprof's int64 maximum instead of
    wrapping negative."""
    import shutil
    pw = tenant()
    prog = tenant_dir / "fakemalloc"
    shutil.copy(wl("fakemalloc"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "fake.pb.gz"
    proc = subprocess.Popen(as_tenant([prog, 1, 3]))
    try:
        t0 = time.monotonic()
        r = run_bpfprof(["--alloc", "-o", out, "-p", proc.pid], timeout=120)
        took = time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
    assert took < 60, f"bpfprof took {took:.0f} s for a 4 s process"
    assert "fakemalloc: 4 allocator functions probed" in r.stderr, r.stderr
    assert "blocks in use was full" in r.stderr, r.stderr
    p, v = site_values(out)
    for s in p["sample"]:
        assert all(0 <= x < 1 << 63 for x in s["value"]), s["value"]
    assert v["storm"][1] == (1 << 63) - 1, v["storm"]
    top = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=alloc_space", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0 and "storm" in top.stdout, top.stdout + top.stderr


@pytest.mark.parametrize("mode,says", [("multi", "uprobe_multi"), ("perf", "perf-event")])
def test_alloc_fallbacks(tmp_path, mode, says):
    """Kernels without session uprobes (or uprobe_multi): a return probe on
    every allocation call, the same estimates."""
    out = tmp_path / "heap.pb.gz"
    env = dict(os.environ, BPFPROF_TEST_ALLOC_MODE=mode)
    r = run_bpfprof(["--alloc=16K", "-o", out, "--", wl("allocsites"), 4, N, SIZE], env=env)
    assert says in r.stderr, r.stderr
    t = truth(r.stdout)
    _, v = site_values(out)
    for site, size in (("site_freed", SIZE), ("site_kept", SIZE), ("site_small", 64)):
        assert_bytes(v[site][1], t[site][0], size, PERIOD, f"{mode}: {site} alloc_space")
    assert_bytes(v["site_kept"][3], t["site_kept"][2], SIZE, PERIOD,
                 f"{mode}: site_kept inuse_space")
    assert v["site_freed"][3] == 0


def test_tenant_storm_stop(tmp_path, tenant_dir):
    """Rule 5: during a tenant's allocation storm (every call sampled), a stop
    request (SIGINT) still ends bpfprof promptly with its profile written."""
    import shutil
    import signal
    pw = tenant()
    prog = tenant_dir / "fakemalloc"
    shutil.copy(wl("fakemalloc"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "storm.pb.gz"
    victim = subprocess.Popen(as_tenant([prog, 0, 20]))
    try:
        bp = subprocess.Popen([str(BPFPROF), "--alloc", "-o", str(out), "-p", str(victim.pid)],
                              stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        assert bp.poll() is None, bp.stderr.read()
        t0 = time.monotonic()
        bp.send_signal(signal.SIGINT)
        _, err = bp.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        victim.kill()
        victim.wait()
    assert bp.returncode == 0, err
    assert took < 5, f"{took:.1f} s to stop during the storm"
    assert out.exists() and "storm" in site_values(out)[1], err


def test_alloc_command_status(tmp_path):
    """-- COMMAND: bpfprof exits as the command did; -d ends the command (0)."""
    out = tmp_path / "heap.pb.gz"
    r = run_bpfprof(["--alloc", "-o", out, "--", "sh", "-c", "exit 3"], check=False)
    assert r.returncode == 3 and out.exists(), r.stderr
    t0 = time.monotonic()
    r = run_bpfprof(["--alloc", "-d", "1", "-o", out, "--", "sleep", "30"])
    assert time.monotonic() - t0 < 15 and "wrote" in r.stderr, r.stderr

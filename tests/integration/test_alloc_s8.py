# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Review findings of session 8 on bpfprof --alloc (session/allocrun.c, record.c).

test_cap_warned_after_a_share_refusal: -a's cap on files probed warned only
while nothing had been refused before it (one counter, held_over, for both
refusals): once a cgroup's share had refused a file, reaching the cap said
nothing. A tenant's copies in its cgroup (past its share of the cap), then
copies mapped by a process of the root cgroup up to the cap: both warnings.
The run holds /tmp/bpfprof-bench.lock (-a traps the whole host's
allocations, as test_tenant_s7.py's run).
"""
import fcntl
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BPFPROF, as_tenant, cgroup2_root, tenant, wl

MAX_HELD = 32  # the cap on files probed, made small (BPFPROF_TEST_ALLOC_MAX_HELD)
SHARE = 2  # one cgroup's share of it (BPFPROF_TEST_ALLOC_MAX_SHARE)

# Maps the files named (PROT_EXEC, as a loader would), says "ready", sleeps.
MAPPER = r'''
import mmap, sys, time
ms = []
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        ms.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_EXEC))
print("ready", flush=True)
time.sleep(600)
'''


def _into(cg):
    """A preexec_fn: the child into cgroup cg (before setpriv drops root)."""
    def f():
        with open(os.path.join(cg, "cgroup.procs"), "w") as p:
            p.write(str(os.getpid()))
    return f


def _remove(cg):
    if not os.path.isdir(cg):
        return
    for _ in range(100):
        try:
            os.rmdir(cg)
            return
        except OSError:
            time.sleep(0.1)
    os.rmdir(cg)


def _said(err, path):
    """Whether bpfprof said it probed or refused the file path."""
    return re.search(r"(?m)^.*%s: (\d+ allocator functions probed|defines the allocator, not "
                     r"probed)" % re.escape(path), err)


def _read_until(proc, err, cond, what, timeout=60):
    """stderr lines of proc appended to err until cond(err); the new err."""
    t0 = time.monotonic()
    for line in proc.stderr:
        err += line
        if cond(err):
            return err
        assert time.monotonic() - t0 < timeout, "%s: not seen in %d s\n%s" % (
            what, timeout, err[-3000:])
    raise AssertionError("%s: bpfprof ended first\n%s" % (what, err[-3000:]))


def test_cap_warned_after_a_share_refusal():
    """The share's warning when the tenant's third copy is refused, then the
    cap's when the root cgroup's copies reach it (main: the cap's missing,
    its refusals only in -v's debug lines)."""
    mnt = cgroup2_root()
    pw = tenant()
    d = tempfile.mkdtemp(prefix="bpfprof-tenant-", dir="/tmp")
    os.chmod(d, 0o755)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    prog = os.path.join(d, "mapper.py")
    with open(prog, "w") as f:
        f.write(MAPPER)
    os.chmod(prog, 0o644)
    mine = [os.path.join(d, "fake-%d" % i) for i in range(SHARE + 1)]
    host = [os.path.join(d, "host-%d" % i) for i in range(MAX_HELD)]
    for p in mine + host:
        shutil.copy(wl("fakemalloc"), p)
        os.chmod(p, 0o755)
    cg = os.path.join(mnt, "bpfprof-s8-cap-%d" % os.getpid())
    os.mkdir(cg)
    a = h = b = None
    err = ""
    try:
        with open("/tmp/bpfprof-bench.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "-v", "-a", "-d", "60",
                                  "--alloc-budget", "1000000000", "-o", "/dev/null"],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                          BPFPROF_TEST_ALLOC_MAX_HELD=str(MAX_HELD),
                                          BPFPROF_TEST_ALLOC_MAX_SHARE=str(SHARE)))
            err = _read_until(b, err, lambda e: "rescan: " in e, "the first rescan")
            held = len(re.findall(r"(?m): \d+ allocator functions probed", err))
            if held + SHARE >= MAX_HELD:
                pytest.skip("this host's own files (%d) leave no room under the cap" % held)
            assert "not probed any more" not in err, err[-3000:]
            a = subprocess.Popen(as_tenant(["/usr/bin/python3", prog] + mine),
                                 stdout=subprocess.PIPE, text=True, preexec_fn=_into(cg))
            assert a.stdout.readline().strip() == "ready"
            err = _read_until(b, err, lambda e: all(_said(e, p) for p in mine),
                              "the tenant's copies looked at")
            assert "files newly mapped by processes of cgroup" in err, err[-3000:]
            assert "not probed any more" not in err, err[-3000:]
            h = subprocess.Popen(["/usr/bin/python3", prog] + host, stdout=subprocess.PIPE,
                                 text=True, preexec_fn=_into(mnt))
            assert h.stdout.readline().strip() == "ready"
            err = _read_until(b, err, lambda e: all(_said(e, p) for p in host),
                              "the root cgroup's copies looked at")
            b.send_signal(signal.SIGINT)
            err += b.communicate(timeout=120)[1]
    finally:
        for p in (a, h, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL if p is not b else signal.SIGTERM)
                p.wait(timeout=30)
        _remove(cg)
        shutil.rmtree(d, ignore_errors=True)
    assert b.returncode == 0, err[-3000:]
    refused = [p for p in host if re.search(r"%s: defines the allocator, not probed \(the cap"
                                            % re.escape(p), err)]
    assert refused, err[-3000:]  # the cap was reached
    assert err.count("files newly mapped not probed any more: at most %d files are probed"
                     % MAX_HELD) == 1, err[-3000:]
    assert err.count("files newly mapped by processes of cgroup") == 1, err[-3000:]

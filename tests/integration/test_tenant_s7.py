# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Tenant attacks of session 7 (../shared/threat-model.md rule 8): --alloc -a's
cap on files probed (session/allocrun.c held_full()) is host-wide, and one
tenant that maps many copies of the C library used it up: every container
started later had its own C library not probed, its allocations missing from
the profile. Of the cap, at most a quarter is first probed for the processes
of one cgroup (v2 path; the root cgroup, the host's own, is not shared out).

Two cgroup v2 cgroups are made (removed afterwards): the tenant's processes,
mapping LIBCS copies of the C library, in one; a victim allocwork, started
once the tenant's copies were looked at and running on a copy of its own (as
a container's), in the other. One bpfprof -a run (about 4 s); it holds
/tmp/bpfprof-bench.lock (-a traps the whole host's allocations, as
test_tenant_s6.py's run).
"""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BPFPROF, as_tenant, tenant, wl
import pprof

LIBCS = 16  # the tenant's copies of the C library
MAX_HELD = 16  # the cap on files probed, made small (BPFPROF_TEST_ALLOC_MAX_HELD)
SHARE = MAX_HELD // 4  # one cgroup's share of it

# The tenant's program: copies the C library, maps the copies in processes of
# its own (4 each), says "ready", sleeps until SIGTERM.
ATTACK = r'''
import mmap, os, shutil, signal, sys, time
d, libc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
paths = []
for i in range(n):
    paths.append(os.path.join(d, "libc-%d.so.6" % i))
    shutil.copyfile(libc, paths[-1])
kids = []
for i in range(0, n, 4):
    pid = os.fork()
    if not pid:
        ms = []
        for p in paths[i:i + 4]:
            with open(p, "rb") as f:
                ms.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                                    prot=mmap.PROT_READ | mmap.PROT_EXEC))
        time.sleep(600)
        os._exit(0)
    kids.append(pid)
signal.signal(signal.SIGTERM, lambda *a: [os.kill(k, 9) for k in kids] and os._exit(0))
print("ready", flush=True)
for k in kids:
    os.waitpid(k, 0)
'''


def _libc():
    return next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6")
                if os.path.exists(p))


def _cgroup2():
    """The cgroup v2 mount point (/sys/fs/cgroup, or .../unified on a hybrid host)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            a, b = line.split(" - ", 1)
            if b.startswith("cgroup2 "):
                return a.split()[4]
    return None


def _into(cg):
    """A preexec_fn: the child into cgroup cg (before setpriv drops root)."""
    def f():
        with open(os.path.join(cg, "cgroup.procs"), "w") as p:
            p.write(str(os.getpid()))
    return f


def _remove(cg):
    """Removes cgroup cg once its processes (ours, killed) are gone."""
    if not os.path.isdir(cg):
        return
    if os.path.exists(os.path.join(cg, "cgroup.kill")):
        with open(os.path.join(cg, "cgroup.kill"), "w") as f:
            f.write("1")
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


def _by_pid(p):
    """{pid: {leaf function: alloc_space}}"""
    out = {}
    for s in p["sample"]:
        loc = p["location"][s["location_id"][0]] if s["location_id"] else None
        name = "[none]"
        if loc and loc["lines"]:
            name = pprof.strings(p, p["function"][loc["lines"][-1].get(1)].get(2, 0))
        v = out.setdefault(s["label"].get("pid"), {})
        v[name] = v.get(name, 0) + s["value"][1]
    return out


@pytest.fixture(scope="module")
def share_attack(tmp_path_factory):
    """(stderr, profile, the victim's truth, its copy's path, tenant dir)."""
    mnt = _cgroup2()
    if not mnt:
        pytest.skip("no cgroup v2 mount")
    pw = tenant()
    d = tempfile.mkdtemp(prefix="bpfprof-tenant-", dir="/tmp")
    os.chmod(d, 0o755)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    prog = os.path.join(d, "attack.py")
    with open(prog, "w") as f:
        f.write(ATTACK)
    os.chmod(prog, 0o644)
    vdir = tempfile.mkdtemp(prefix="bpfprof-victim-", dir="/tmp")
    vlibc = os.path.join(vdir, "libc.so.6")
    shutil.copyfile(_libc(), vlibc)
    cgs = [os.path.join(mnt, "bpfprof-s7-%s-%d" % (w, os.getpid())) for w in ("tenant", "victim")]
    out = tmp_path_factory.mktemp("s7") / "heap.pb.gz"
    a = b = v = None
    try:
        for cg in cgs:
            os.mkdir(cg)
        with open("/tmp/bpfprof-bench.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "-v", "-a", "-d", "60",
                                  "--alloc-budget", "1000000000", "-o", str(out)],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                          BPFPROF_TEST_ALLOC_MAX_HELD=str(MAX_HELD)))
            err = ""
            for line in b.stderr:  # the probes in, and a first rescan without the tenant
                err += line
                if "rescan: " in line:
                    break
            a = subprocess.Popen(as_tenant(["/usr/bin/python3", prog, d, _libc(), LIBCS]),
                                 stdout=subprocess.PIPE, text=True, preexec_fn=_into(cgs[0]))
            assert a.stdout.readline().strip() == "ready"
            copies = [os.path.join(d, "libc-%d.so.6" % i) for i in range(LIBCS)]
            for line in b.stderr:  # every copy of the tenant's probed or refused
                err += line
                if all(_said(err, p) for p in copies):
                    break
            # The victim: a container's C library (a copy), started after.
            v = subprocess.Popen([str(wl("allocwork")), "wait", "steady",
                                  "20000", "2"], stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, LD_LIBRARY_PATH=vdir),
                                 preexec_fn=_into(cgs[1]))
            assert "waiting" in json.loads(v.stdout.readline())
            for line in b.stderr:
                err += line
                if _said(err, vlibc):
                    break
            v.send_signal(signal.SIGUSR1)
            truth = json.loads(v.stdout.readline())
            v.wait(timeout=30)
            b.send_signal(signal.SIGINT)
            err += b.communicate(timeout=120)[1]
    finally:
        for p in (a, v, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
        for cg in cgs:
            _remove(cg)
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(vdir, ignore_errors=True)
    assert b.returncode == 0, err[-3000:]
    with open(out, "rb") as f:
        prof = pprof.decode(f.read())
    return err, prof, truth, vlibc, d


def test_tenant_copies_leave_the_victim_probed(share_attack):
    """The tenant's LIBCS copies take at most its cgroup's share (main: all the
    cap left, 14 of 16); the victim's copy, mapped later in another cgroup,
    is probed and its site is in the heap profile (main: refused, missing)."""
    err, prof, truth, vlibc, d = share_attack
    probed = {m[1] for m in re.finditer(r"(\S+): \d+ allocator functions probed", err)}
    mine = {p for p in probed if p.startswith(d + "/")}
    assert vlibc in probed, (len(mine), err[-3000:])
    sites = _by_pid(prof).get(truth["pid"], {})
    assert sites.get("site_steady", 0) > 0, (sorted(sites), err[-3000:])
    assert len(mine) <= SHARE, sorted(mine)
    assert "at most %d of the %d files probed are first probed for one cgroup" % (
        SHARE, MAX_HELD) in err, err[-3000:]

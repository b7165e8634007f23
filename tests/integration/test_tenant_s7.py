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

The cap on files probed is the real one (64) and host-wide: the host's own
processes' allocator files count in it too (this host's, another's: any
number). The first rescan, before the tenant starts, says how many the host
has (the baseline); the test needs room for the tenant's share and the
victim's copy beside them, and fails saying so otherwise. The share is made
SHARE explicitly (BPFPROF_TEST_ALLOC_MAX_SHARE; by default a quarter of the
cap, 16): LIBCS copies are more than it, so without the share the tenant's
copies are all probed (16 of them) where its share allows SHARE.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from contextlib import ExitStack

import pytest

from conftest import (BPFPROF, Lines, bench_lock, cgroup_v2, heap_by_pid, into_cgroup, libc_path,
                      new_tenant_dir, start_libc_copies, wl)
import pprof

LIBCS = 16  # the tenant's copies of the C library
MAX_HELD = 64  # the cap on files probed (ALLOCRUN_MAX_HELD), host-wide
SHARE = 4  # one cgroup's share of it (BPFPROF_TEST_ALLOC_MAX_SHARE)
WAIT = 120  # s: the most any step waits for bpfprof or a process (-a's start: 15 s seen)


def _said(err, path):
    """Whether bpfprof said it probed or refused the file path."""
    return re.search(r"(?m)^.*%s: (\d+ allocator functions probed|defines the allocator, not "
                     r"probed)" % re.escape(path), err)


def _rescan_probed(line):
    """A finished rescan's (-v) count of files probed, or None."""
    m = re.search(r"rescan: .*; (\d+) files probed, \d+ defining the allocator not probed", line)
    return int(m[1]) if m else None


def _stop(p, sig=signal.SIGTERM, group=False):
    """Ends process p (its whole process group if group), waiting at most 30 s, then SIGKILL."""
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, sig) if group else p.send_signal(sig)
        p.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL) if group else p.kill()
        p.wait()


@pytest.fixture(scope="module")
def share_attack(tmp_path_factory):
    """(stderr, profile, the victim's truth, its copy's path, tenant dir,
    the host's files probed before the tenant). Whatever fails, nothing
    outlives it: the processes are ended (the tenant's whole session, then
    both cgroups' processes), the lock let go, cgroups and files removed."""
    out = tmp_path_factory.mktemp("s7") / "heap.pb.gz"
    with ExitStack() as stack:
        d = str(new_tenant_dir())
        stack.callback(shutil.rmtree, d, ignore_errors=True)
        vdir = tempfile.mkdtemp(prefix="bpfprof-victim-", dir="/tmp")
        stack.callback(shutil.rmtree, vdir, ignore_errors=True)
        vlibc = os.path.join(vdir, "libc.so.6")
        shutil.copyfile(libc_path(), vlibc)
        cgs = [stack.enter_context(cgroup_v2("bpfprof-s7-" + w)) for w in ("tenant", "victim")]
        stack.enter_context(bench_lock())
        b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "-v", "-a", "-d", "60",
                              "--alloc-budget", "1000000000", "-o", str(out)],
                             stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                      BPFPROF_TEST_ALLOC_MAX_SHARE=str(SHARE)))
        stack.callback(_stop, b)
        err = Lines(b.stderr)
        # the probes in, and a first rescan without the tenant: the host's own files
        base = _rescan_probed(err.until(lambda line: _rescan_probed(line) is not None, WAIT,
                                        "the first rescan"))
        assert base + SHARE + 1 <= MAX_HELD, \
            f"the host's own {base} files probed leave no room for the test under the cap " \
            f"of {MAX_HELD}"
        # (conftest's LIBC_COPIES: 4 copies mapped by each of its processes)
        a = start_libc_copies(d, LIBCS, preexec_fn=into_cgroup(cgs[0]))
        stack.callback(_stop, a, signal.SIGKILL, group=True)
        assert Lines(a.stdout).readline(WAIT, "the tenant's ready").strip() == "ready"
        copies = [os.path.join(d, "libc-%d.so.6" % i) for i in range(LIBCS)]
        # every copy of the tenant's probed or refused
        err.until(lambda line: all(_said(err.text, p) for p in copies), WAIT,
                  "every tenant copy probed or refused")
        # The victim: a container's C library (a copy), started after.
        v = subprocess.Popen([str(wl("allocwork")), "wait", "steady", "20000", "2"],
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, LD_LIBRARY_PATH=vdir),
                             preexec_fn=into_cgroup(cgs[1]))
        stack.callback(_stop, v, signal.SIGKILL)
        vout = Lines(v.stdout)
        assert "waiting" in json.loads(vout.readline(WAIT, "the victim waiting"))
        err.until(lambda line: _said(err.text, vlibc), WAIT, "the victim's copy probed or refused")
        v.send_signal(signal.SIGUSR1)
        truth = json.loads(vout.readline(WAIT, "the victim's totals"))
        v.wait(timeout=WAIT)
        b.send_signal(signal.SIGINT)
        b.wait(timeout=WAIT)
        text = err.rest(WAIT)
    assert b.returncode == 0, text[-3000:]
    with open(out, "rb") as f:
        prof = pprof.decode(f.read())
    return text, prof, truth, vlibc, d, base


def test_tenant_copies_leave_the_victim_probed(share_attack):
    """The tenant's LIBCS copies take at most its cgroup's share (without the
    share: all of them, as long as the cap has room; with the cap made 16 on
    a quiet host it took 14 of 16 and the victim's copy was refused); the
    victim's copy, mapped later in another cgroup, is probed and its site is
    in the heap profile."""
    err, prof, truth, vlibc, d, base = share_attack
    probed = {m[1] for m in re.finditer(r"(\S+): \d+ allocator functions probed", err)}
    mine = {p for p in probed if p.startswith(d + "/")}
    assert vlibc in probed, (base, len(mine), err[-3000:])
    sites = {k: v[1] for k, v in heap_by_pid(prof).get(truth["pid"], {}).items()}
    assert sites.get("site_steady", 0) > 0, (sorted(sites), err[-3000:])
    assert len(mine) <= SHARE, sorted(mine)
    assert "at most %d of the %d files probed are first probed for one cgroup" % (
        SHARE, MAX_HELD) in err, err[-3000:]

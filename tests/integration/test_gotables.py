# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc's Go buckets and the tables they share with everything
else (the source review's H2 remnants, L2, L5).

Each bucket read keeps its stack in the run's stack table while its process
lives. A tenant's Go program that points runtime.mbuckets at a list of
thousands of forged buckets with distinct stacks (goforge list) used to fill
that table (every entry referenced, none evictable): every other process's
new stacks were then dropped for the rest of the run. Go's buckets now hold
at most half the table, and one process's at most an eighth of it; past
that a bucket is kept without its stack (its samples counted as [no
stack]), counted in /metrics with the other Go losses. The table is made
small here (BPFPROF_TEST_ALLOC_STACKS) so that one forger is enough.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

from conftest import BPFPROF, ROOT, as_tenant, start_waiting, tenant, wait_for, wl
from conftest import json_line as last_json
import pprof
from test_gobucket_forged import check_honest

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import free_port  # noqa: E402

STACKS = 4096  # the stack table (BPFPROF_TEST_ALLOC_STACKS)
GO_STACKS = STACKS // 2  # all Go buckets' stacks at most
PROC_STACKS = STACKS // 8  # one process's
LIST = 20000  # goforge list's buckets
SHARE = 8192  # buckets kept a process (ALLOC_GO_BUCKETS_PROC)
U64_MAX = (1 << 64) - 1
INT64_MAX = (1 << 63) - 1


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def metric(text, name, label=None):
    """The value of metric name (with label, e.g. 'reason="refused"'), or None."""
    want = name + ("{" + label + "}" if label else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return int(line.split()[1])
    return None


class Pair:
    """goalloc (honest) and a tenant's goforge MODE, both waiting, profiled
    with -p until both exit, /metrics on a port; env: bpfprof's."""

    def __init__(self, tmp_path, tenant_dir, mode, env=None, secs=6):
        pw = tenant()
        prog = tenant_dir / "goforge"
        shutil.copy(wl("goforge"), prog)
        os.chown(prog, pw.pw_uid, pw.pw_gid)
        self.out = tmp_path / "go.pb.gz"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.honest, self.hpid = start_waiting([wl("goalloc"), "wait", "memprof", "2"])
        self.forger, self.fpid = start_waiting(as_tenant([prog, mode, "wait", str(secs)]))
        self.bp = subprocess.Popen(
            [str(BPFPROF), "--alloc", "-v", "-o", str(self.out), "--listen",
             f"127.0.0.1:{self.port}", "-p", f"{self.hpid},{self.fpid}"],
            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})))
        self.seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.bp.stderr.readline()
            if not line:
                break
            self.seen.append(line)
            if "profiling allocations of" in line:
                break
        assert any("profiling allocations of" in s for s in self.seen), "".join(self.seen)

    def metrics(self):
        return get(self.base + "/metrics")

    def wait_metric(self, name, label, pred, timeout=30):
        last = [None]

        def ok():
            try:
                last[0] = metric(self.metrics(), name, label)
            except OSError:
                return False
            return last[0] is not None and pred(last[0])
        wait_for(ok, f"{name}{{{label}}}", timeout=timeout, step=0.2)
        return last[0]

    def finish(self):
        """Both programs' stdout, bpfprof's stderr and exit code, the profile."""
        try:
            hout, _ = self.honest.communicate(timeout=60)
            fout, _ = self.forger.communicate(timeout=60)
            err = "".join(self.seen) + self.bp.communicate(timeout=60)[1]
        finally:
            self.kill()
        with open(self.out, "rb") as f:
            p = pprof.decode(f.read())
        return hout, fout, err, self.bp.returncode, p

    def kill(self):
        for p in (self.honest, self.forger, self.bp):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_forged_list_keeps_its_share_of_the_stack_table(tmp_path, tenant_dir):
    """goforge list's 20,000 forged buckets (distinct stacks) are walked
    first: 8192 kept, at most PROC_STACKS of them with their stack. The
    honest goalloc, allocating only then, still has its stacks (its sites
    match its runtime's own profile); the forger's loss is in /metrics while
    the run goes on (before: the forger's stacks filled the table, goalloc's
    samples were all [no stack])."""
    r = Pair(tmp_path, tenant_dir, "list", env={"BPFPROF_TEST_ALLOC_STACKS": str(STACKS)})
    try:
        os.kill(r.fpid, signal.SIGUSR1)
        # its list walked to its share (4096 new buckets a walk), its stacks charged
        r.wait_metric("bpfprof_alloc_go_buckets", None, lambda v: v >= SHARE - 2)
        m = r.metrics()
        assert metric(m, "bpfprof_alloc_go_stacks_process_max") == PROC_STACKS, m
        assert metric(m, "bpfprof_alloc_go_stacks_max") == GO_STACKS, m
        # the forger's share, and goalloc's few buckets (waiting: it has not started)
        assert PROC_STACKS <= metric(m, "bpfprof_alloc_go_stacks") <= PROC_STACKS + 64, m
        # the forger's kept buckets past its share: without their stack, counted
        lost = metric(m, "bpfprof_alloc_go_buckets_lost_total", 'reason="stack_share"')
        assert lost >= SHARE - 2 - PROC_STACKS, m
        assert metric(m, "bpfprof_alloc_go_buckets_lost_total", 'reason="refused"') == 2, m
        os.kill(r.hpid, signal.SIGUSR1)
        hout, fout, err, rc, p = r.finish()
    finally:
        r.kill()
    assert rc == 0, err
    assert last_json(fout, "list") == LIST
    assert re.search(r"its Go buckets past its share of the stack table \(%d stacks a "
                     r"process, %d all Go processes\)" % (PROC_STACKS, GO_STACKS), err), err
    m = re.search(r"Go: (\d+) buckets kept without their stack \(past their process's share "
                  r"of the stack table, (\d+), or all Go processes', (\d+)\)", err)
    assert m and int(m.group(1)) >= SHARE - 2 - PROC_STACKS, err
    for s in p["sample"]:
        assert all(0 <= v <= INT64_MAX for v in s["value"]), s
    check_honest(p, r.hpid, hout)


def test_forged_counts_saturate(tmp_path, tenant_dir):
    """goforge listwrap: its forged buckets' counts are 0 when first read,
    then 2^63 allocations each: sums over buckets pass 2^64. The counters
    that take them (here the samples counted without a stack, of the
    buckets past the forger's share) saturate rather than wrap (a
    Prometheus counter never goes back), the profile's values stay within
    int64, and the honest program is untouched."""
    r = Pair(tmp_path, tenant_dir, "listwrap", env={"BPFPROF_TEST_ALLOC_STACKS": str(STACKS)})
    try:
        os.kill(r.fpid, signal.SIGUSR1)
        r.wait_metric("bpfprof_alloc_go_buckets", None, lambda v: v >= SHARE - 2)
        os.kill(r.hpid, signal.SIGUSR1)
        # 2 s after its start the counts jump: every bucket's 2^63, thousands of them
        v = r.wait_metric("bpfprof_alloc_go_samples_unnamed_total", None, lambda v: v > 0)
        assert v == U64_MAX, v
        time.sleep(0.5)
        assert metric(r.metrics(), "bpfprof_alloc_go_samples_unnamed_total") == U64_MAX
        hout, fout, err, rc, p = r.finish()
    finally:
        r.kill()
    assert rc == 0, err
    for s in p["sample"]:
        assert all(0 <= v <= INT64_MAX for v in s["value"]), s
    check_honest(p, r.hpid, hout)


def test_failed_attach_not_polled(tmp_path):
    """-p goalloc whose probes are not attached (the attach made to fail in
    it: BPFPROF_TEST_GO_ATTACH_FAIL=its pid, as a tenant's descriptors
    exhausted would): its bucket list is not polled either, and that is
    said (before, the list was polled from go_probes on, the attach
    notwithstanding). A static Go target with nothing else probed ends the
    run, as any target not probed; a process that also maps a probed C
    library (cgo) would go on, its Go allocations not counted."""
    out = tmp_path / "go.pb.gz"
    a, apid = start_waiting([wl("goalloc"), "wait", "memprof", "1"])
    try:
        r = subprocess.run([str(BPFPROF), "--alloc", "-v", "-o", str(out), "-p", str(apid)],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, BPFPROF_TEST_GO_ATTACH_FAIL=str(apid)))
    finally:
        a.kill()
        a.wait()
    assert "buckets polled each drain" in r.stderr, r.stderr  # its list found
    assert f"its allocator not probed in {apid}" in r.stderr, r.stderr
    assert f"process {apid} (" in r.stderr and "runtime.mProf_Flush not probed: its Go " \
        "buckets (runtime.mbuckets) not polled, its Go allocations not profiled" \
        in r.stderr, r.stderr
    assert r.returncode != 0 and not out.exists(), r.stderr


def _names(p, s):
    out = []
    for lid in s["location_id"]:
        for ln in (p["location"][lid]["lines"] if lid in p["location"] else []):
            out.append(pprof.strings(p, p["function"][ln.get(1)].get(2, 0)))
    return out


def test_many_forgers_leave_half_the_table(tmp_path, tenant_dir):
    """Nine tenant forgers (goforge list), each within its own share (an
    eighth of the table), would fill the whole stack table between them:
    all Go buckets together hold at most half of it, so that a C program
    profiled in the same run (allocwork, its stacks new once they are
    full) still has its stacks named. Before: every one of its stacks was
    dropped ([stack lost])."""
    stacks = 2048  # a process's share 256, Go's 1024: 9 x 256 > 2048
    pw = tenant()
    prog = tenant_dir / "goforge"
    shutil.copy(wl("goforge"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "heap.pb.gz"
    port = free_port()
    procs, pids = [], []
    bp = None
    err = ""
    try:
        for _ in range(9):
            f, fpid = start_waiting(as_tenant([prog, "list", "wait", "8"]))
            procs.append(f)
            pids.append(fpid)
        aw, awpid = start_waiting([wl("allocwork"), "wait", "sites", "8"])
        procs.append(aw)
        bp = subprocess.Popen(
            [str(BPFPROF), "--alloc", "-v", "-o", str(out), "--listen", f"127.0.0.1:{port}",
             "-p", ",".join(map(str, pids + [awpid]))], stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, BPFPROF_TEST_ALLOC_STACKS=str(stacks)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = bp.stderr.readline()
            if not line:
                break
            err += line
            if "profiling allocations of" in line:
                break
        for fpid in pids:
            os.kill(fpid, signal.SIGUSR1)
        last = [None]

        def full():
            try:
                last[0] = metric(get(f"http://127.0.0.1:{port}/metrics"),
                                 "bpfprof_alloc_go_stacks")
            except OSError:
                return False
            return last[0] is not None and last[0] >= stacks // 2
        wait_for(full, "Go's half of the stack table used", timeout=30, step=0.2)
        m = get(f"http://127.0.0.1:{port}/metrics")
        assert metric(m, "bpfprof_alloc_go_stacks") == stacks // 2, m
        assert metric(m, "bpfprof_alloc_go_stacks_max") == stacks // 2, m
        os.kill(awpid, signal.SIGUSR1)
        awout, _ = aw.communicate(timeout=60)
        for f in procs[:-1]:
            f.communicate(timeout=60)
        err += bp.communicate(timeout=60)[1]
    finally:
        for p in procs + ([bp] if bp else []):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert bp.returncode == 0, err
    assert "all Go processes'" in err or "the Go processes' share" in err, err
    truth = json.loads([ln for ln in awout.splitlines() if '"sites"' in ln][-1])
    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    mine = [s for s in p["sample"] if s["label"].get("pid") == awpid]
    total = sum(s["value"][1] for s in mine)
    named = sum(s["value"][1] for s in mine if any(n.startswith("site_") for n in _names(p, s)))
    assert total > 0.5 * sum(v["bytes"] for v in truth["sites"].values()), (total, truth)
    assert named >= 0.95 * total, (named, total)

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc under -a / --cgroup: one tenant's Go processes cannot
take every other tenant's share of the stack table (issue 39's open item).

Go's buckets hold at most half the stack table, one process's at most an
eighth (test_gotables). Four forgers (goflood: thousands of forged
buckets with distinct stacks each, handed to runtime.setprofilebucket,
which -a and --cgroup probe) in one tenant's cgroup used to fill Go's
whole half, and an honest Go program in another cgroup then had all its
buckets counted as [no stack]. One cgroup's Go processes together now hold
at most half of Go's share: the honest program, in a cgroup of its own, is
named. The table is made small (BPFPROF_TEST_ALLOC_STACKS) so that four
forgers are enough.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack

from conftest import (BPFPROF, GO_MIN_SAMPLES, GO_SITES, ROOT, Lines, as_tenant, cgroup_v2,
                      go_sites, into_cgroup, json_line, probes_in, tenant, wait_for, wl)
import pprof

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import free_port  # noqa: E402

STACKS = 4096  # the stack table (BPFPROF_TEST_ALLOC_STACKS)
GO_STACKS = STACKS // 2  # all Go buckets' stacks at most
CG_STACKS = GO_STACKS // 2  # one cgroup's Go processes' together
PROC_STACKS = STACKS // 8  # one process's
FORGERS = 4  # FORGERS x PROC_STACKS == GO_STACKS: Go's share full without the cgroup's
FLOOD = 1000  # goflood's buckets: past its share of stacks, within its share of buckets
WAIT = 60


def metric(text, name, label=None):
    """The value of metric name (with label, e.g. 'reason="refused"'), or None."""
    want = name + ("{" + label + "}" if label else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return int(line.split()[1])
    return None


def get_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def start_waiting_in(argv, cg, stack):
    """argv (a workload in its wait mode) started in cgroup cg, killed when
    stack closes: (Popen, its Lines, its pid)."""
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True,
                         preexec_fn=into_cgroup(cg))
    stack.callback(_kill, p)
    lines = Lines(p.stdout)
    first = lines.readline(WAIT, "a workload's waiting line")
    pid = json.loads(first)["waiting"]
    return p, lines, pid


def check_alloc_sites(truth, v):
    """goalloc's sites in bpfprof's profile (v, go_sites()) against its
    runtime's own heap profile (its memprof line's "sites"): alloc_space
    and alloc_objects within 10% (conftest's assert_go_sites, in use aside)."""
    assert truth["main.makeBytes"][0] >= GO_MIN_SAMPLES, truth
    for site in GO_SITES:
        t = truth.get(site, [0] * 5)
        if t[0] < GO_MIN_SAMPLES:
            continue
        assert site in v, f"{site} missing from {sorted(v)}"
        assert abs(v[site][1] - t[2]) <= 0.10 * t[2], \
            f"{site} alloc_space: ours {v[site][1]}, the runtime's {t[2]:.0f}"
        assert abs(v[site][0] - t[1]) <= 0.10 * t[1], \
            f"{site} alloc_objects: ours {v[site][0]}, the runtime's {t[1]:.0f}"


def _kill(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def test_one_cgroups_forgers_leave_the_others_go_named(tmp_path, tenant_dir):
    """FORGERS goflood in the tenant's cgroup read first (each to its
    own share, PROC_STACKS stacks: together Go's whole share before the fix),
    then the honest goalloc in another cgroup allocates: its sites match its
    runtime's own profile (before: all [no stack], missing). The tenant's
    cgroup holds at most CG_STACKS; the loss is in /metrics and said."""
    pw = tenant()
    prog = tenant_dir / "goflood"
    shutil.copy(wl("goflood"), prog)
    os.chown(prog, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "go.pb.gz"
    port = free_port()
    with ExitStack() as stack:
        tcg = stack.enter_context(cgroup_v2("bpfprof-gofair-tenant"))
        vcg = stack.enter_context(cgroup_v2("bpfprof-gofair-victim"))
        forgers = [start_waiting_in(as_tenant([prog, "wait", str(FLOOD), "60"]), tcg, stack)
                   for _ in range(FORGERS)]
        honest, hlines, hpid = start_waiting_in([wl("goalloc"), "wait", "memprof", "2"],
                                                vcg, stack)
        bp = subprocess.Popen(
            [str(BPFPROF), "--alloc", "-v", "-o", str(out), "--listen", f"127.0.0.1:{port}",
             "--cgroup", tcg, "--cgroup", vcg, "-d", "120"],
            stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, BPFPROF_TEST_ALLOC_STACKS=str(STACKS)))
        stack.callback(_kill, bp)
        err = Lines(bp.stderr)
        # (-a, --cgroup said "profiling allocations of" before the probes were
        # in: the forgers' burst of calls made right after it was never seen)
        probes_in(err, WAIT)
        for _, _, pid in forgers:
            os.kill(pid, signal.SIGUSR1)
        # every forger's buckets read, their stacks charged
        want = FORGERS * FLOOD
        last = {}

        def walked():
            try:
                last["m"] = get_metrics(port)
            except OSError:
                return False
            return (metric(last["m"], "bpfprof_alloc_go_buckets") or 0) >= want
        try:
            wait_for(walked, f"{want} Go buckets kept", timeout=WAIT, step=0.2)
        except AssertionError as e:
            raise AssertionError(f"{e}: {last.get('m')}\n{err.text[-3000:]}") from None
        during = last["m"]
        os.kill(hpid, signal.SIGUSR1)
        hout = hlines.rest(WAIT)
        honest.wait(timeout=WAIT)
        time.sleep(0.5)  # a few drains: goalloc's last buckets read
        after = get_metrics(port)
        bp.send_signal(signal.SIGINT)
        bp.wait(timeout=WAIT)
        text = err.rest(WAIT)
    assert bp.returncode == 0, text[-3000:]
    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    # the honest program named: its sites, its runtime's own bytes within 10%
    # (test_allocgo's checks but in use: under --cgroup an exited process's
    # buckets are let go, it holds nothing)
    truth, ours = json_line(hout, "memprof")["sites"], go_sites(p, hpid)
    print(f"main.makeBytes alloc_space: ours {ours.get('main.makeBytes', [0, 0])[1]}, the "
          f"runtime's {truth['main.makeBytes'][2]:.0f}; [no stack] "
          f"{ours.get('[no stack]', [0, 0])[1]}")
    check_alloc_sites(truth, ours)
    # the tenant's cgroup within its share (the honest goalloc not started yet)
    assert metric(during, "bpfprof_alloc_go_stacks_cgroup_max") == CG_STACKS, during
    assert metric(during, "bpfprof_alloc_go_stacks_max") == GO_STACKS, during
    assert CG_STACKS - 64 <= metric(during, "bpfprof_alloc_go_stacks") <= CG_STACKS, during
    # each forger's kept buckets, but the cgroup's CG_STACKS, without their
    # stack: past the cgroup's share (at least the FORGERS x PROC_STACKS its
    # processes' own shares allowed, but CG_STACKS), else past their own
    lost = metric(after, "bpfprof_alloc_go_buckets_lost_total", 'reason="cgroup_share"')
    own = metric(after, "bpfprof_alloc_go_buckets_lost_total", 'reason="stack_share"')
    print(f"go_stacks {metric(during, 'bpfprof_alloc_go_stacks')}, lost cgroup_share {lost}, "
          f"stack_share {own}")
    assert lost >= FORGERS * PROC_STACKS - CG_STACKS, after
    assert abs(lost + own - (FORGERS * FLOOD - CG_STACKS)) <= 64, after
    assert "its Go buckets past its cgroup's share of the stack table (%d stacks the Go " \
        "processes of one cgroup together, of the %d of all Go processes)" % (
            CG_STACKS, GO_STACKS) in text, text[-3000:]
    assert f"of cgroup /{os.path.basename(tcg)}" in text, text[-3000:]
    assert json_line(hout, "memprof")

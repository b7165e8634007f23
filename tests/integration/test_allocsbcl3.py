# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on SBCL, the source review's findings of session 8
(test_allocsbcl2.py has the slot given back after a failed attach in the
default mode).

- L1: an attach that fails part way takes back the probes it attached (in
  perf mode each probe is its own link: fakesbcl_attach's alloc is attached
  before its gc_close_region, an int3 the kernel refuses), and a runtime's
  layout reaches its slot only once all its probes are: the tenant's runtime
  has nothing in the profile, not even from the moment between the two, and
  its alloc does not fire with the layout of the real sbcl given the slot
  after it.
- M3: the Lisp frames the drains' budget left unnamed are named when the
  profile is written within a budget of the write's own (500 ms a take):
  a tenant's Lisp code allocating from some 30,000 distinct stacks
  (lisppaths.lisp) took the write 8.5 s here before, its frames past the
  budget are now "[unnamed: SBCL]", counted in the summary; in continuous
  mode /debug/pprof/heap answers within the budget's reach and each
  interval's file says its unnamed frames in its note.
"""
import re
import signal
import subprocess
import sys
import time
import urllib.request

from conftest import (BPFPROF, ROOT, alloc_failed_attach_then_sbcl, kill_all, parse_folded,
                      tenant_sbcl, wait_for)
import pprof

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import free_port  # noqa: E402

WRITE_MS = 500  # ALLOCRUN_SBCL_WRITE_MS


def test_failed_attach_leaves_no_probe_perf_mode(tenant_dir):
    """Perf-event uprobes, one slot: the tenant's runtime (first in -p)
    fails to attach and is said so; none of its samples are in the profile
    (its loop calls alloc with 1 MB, a large object at every call, and no
    malloc); the real sbcl after it is probed in the slot and its Lisp
    allocations are there."""
    out = tenant_dir.parent / f"{tenant_dir.name}-perf.folded"
    r = alloc_failed_attach_then_sbcl(tenant_dir, out, BPFPROF_TEST_ALLOC_MODE="perf")
    try:
        folded = parse_folded(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    assert "perf-event uprobes" in r.stderr, r.stderr
    fails = [l for l in r.stderr.splitlines() if "fakesbcl_attach" in l and "not probed" in l]
    assert fails, r.stderr  # the fake's attach did fail
    assert "fakesbcl_attach: SBCL" not in r.stderr, r.stderr  # never said probed
    fake_stacks = {k: v for k, v in folded.items() if k.split(";")[0] == "fakesbcl_attach"}
    assert not fake_stacks, f"{fake_stacks}\n{r.stderr}"
    assert any("LISPBENCH::OP-LIST" in k for k in folded), list(folded)[:20]


def test_write_names_lisp_frames_within_a_budget(tenant_dir):
    """The tenant's lisppaths (2^14 paths through LEFT and RIGHT, a region
    closed in each) profiled for 4 s at --alloc=4K: from the probes in to
    bpfprof's exit takes at most 5 s past the duration (the write's naming
    500 ms of it; all the frames named took 8.5 s past it here); frames past
    the budget are "[unnamed: SBCL]", their number said; frames named before
    it are in the profile by name (LISPPATHS::LEAF)."""
    lisp = tenant_sbcl(tenant_dir, "lisppaths.lisp", "14", "40")
    out = tenant_dir.parent / f"{tenant_dir.name}-paths.folded"
    duration = 4
    b = None
    try:
        assert lisp.stdout.readline().strip() == "ready"
        time.sleep(1)  # its paths' first round: every stack in use
        b = subprocess.Popen([str(BPFPROF), "--alloc=4K", "-d", str(duration), "-p",
                              str(lisp.pid), "-o", out], stderr=subprocess.PIPE, text=True)
        err = ""
        for line in b.stderr:
            err += line
            if line.startswith("bpfprof: probes: "):
                break
        t_in = time.monotonic()
        err += b.stderr.read()
        b.wait(timeout=120)
        after = time.monotonic() - t_in - duration
    finally:
        kill_all(b, lisp)
    try:
        text = out.read_text()
    finally:
        out.unlink(missing_ok=True)
    print(f"{after:.2f} s past the duration")
    assert b.returncode == 0, err
    m = re.search(r'SBCL: (\d+) Lisp frames written as "\[unnamed: SBCL\]"', err)
    assert m and int(m.group(1)) > 0, err
    folded = parse_folded(text)
    assert any("[unnamed: SBCL]" in k for k in folded), list(folded)[:10]
    assert any("LISPPATHS::LEAF" in k for k in folded), list(folded)[:10]
    print(f"{m.group(1)} frames unnamed, {len(folded)} stacks")
    # The count above is what fails without the budget; the time is a loose
    # bound (1.1-2.4 s here with it, 6.8-8.5 s without: CI's machine may be
    # slower, and a test that fails one run in fifty blocks every landing).
    assert after <= 15, f"{after:.2f} s past the {duration} s\n{err}"


def _get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def test_heap_request_within_the_budget(tenant_dir, tmp_path):
    """Continuous mode (--interval 2, --output-dir, --listen) on the tenant's
    lisppaths: /debug/pprof/heap (the current interval's Lisp frames named
    by the request) answers within 4 s (its naming 500 ms of it; every frame
    named took 10.8 s here), /healthz right after it within 1 s; the
    interval files whose frames were cut say so in their note
    (sbcl_unnamed_frames=N), /metrics counts them
    (bpfprof_alloc_sbcl_unnamed_frames_total)."""
    lisp = tenant_sbcl(tenant_dir, "lisppaths.lisp", "14", "60")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    b = None
    try:
        assert lisp.stdout.readline().strip() == "ready"
        b = subprocess.Popen([str(BPFPROF), "--alloc=4K", "--interval", "2", "--output-dir",
                              tmp_path, "--listen", str(port), "-d", "40", "-p", str(lisp.pid)],
                             stderr=subprocess.PIPE, text=True)

        def healthy():
            try:
                return _get(base + "/healthz", timeout=1)[0] == 200
            except OSError:
                return False
        wait_for(healthy, "/healthz ok", timeout=30)
        time.sleep(1.8)  # the interval's stacks: a second and more of the paths
        t = time.monotonic()
        status, body = _get(base + "/debug/pprof/heap")
        took = time.monotonic() - t
        t = time.monotonic()
        health = _get(base + "/healthz", timeout=30)[0]
        health_took = time.monotonic() - t
        time.sleep(2.5)  # an interval file or two more
        metrics = _get(base + "/metrics")[1].decode()
        b.send_signal(signal.SIGINT)
        _, err = b.communicate(timeout=60)
    finally:
        kill_all(b, lisp)
    print(f"/debug/pprof/heap {took:.2f} s, /healthz {health_took:.2f} s")
    assert status == 200 and health == 200, err[-3000:]
    heap = pprof.decode(body)
    assert any("LISPPATHS" in k for k in pprof.to_folded(heap)), err[-3000:]
    # Loose bounds (1.0-3.1 s here with the budget, 10.8 s without): the
    # unnamed counts below are what fail without it.
    assert took <= 20, f"/debug/pprof/heap took {took:.2f} s\n{err[-3000:]}"
    assert health_took <= 5, f"/healthz took {health_took:.2f} s"
    notes = []
    for f in sorted(tmp_path.glob("*.heap.pb.gz")):
        p = pprof.decode(f.read_bytes())
        notes += [pprof.strings(p, c) for c in p.get("comment", [])]
    cut = [n for n in notes if re.search(r"sbcl_unnamed_frames=[1-9]", n)]
    assert cut, (notes, err[-3000:])
    m = re.search(r"^bpfprof_alloc_sbcl_unnamed_frames_total (\d+)$", metrics, re.M)
    assert m and int(m.group(1)) > 0, metrics

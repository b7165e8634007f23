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
"""
import os
import shutil
import subprocess
from pathlib import Path

from conftest import as_tenant, parse_folded, run_bpfprof, sbcl, tenant, wl

LISPBENCH = str(Path(__file__).resolve().parents[1] / "workloads" / "lispbench.lisp")


def test_failed_attach_leaves_no_probe_perf_mode(tenant_dir):
    """Perf-event uprobes, one slot: the tenant's runtime (first in -p)
    fails to attach and is said so; none of its samples are in the profile
    (its loop calls alloc with 1 MB, a large object at every call, and no
    malloc); the real sbcl after it is probed in the slot and its Lisp
    allocations are there."""
    exe = sbcl()
    pw = tenant()
    fake = tenant_dir / "fakesbcl_attach"
    shutil.copy2(wl("fakesbcl_attach"), fake)
    os.chown(fake, pw.pw_uid, pw.pw_gid)
    f = subprocess.Popen(as_tenant([fake, "8"]), stdout=subprocess.PIPE, text=True)
    s = subprocess.Popen([exe, "--script", LISPBENCH, "list", "8"], stdout=subprocess.PIPE,
                         text=True)
    out = tenant_dir.parent / f"{tenant_dir.name}-perf.folded"
    try:
        assert f.stdout.readline().strip() == "ready"
        env = dict(os.environ, BPFPROF_TEST_ALLOC_SBCL_SLOTS="1", BPFPROF_TEST_ALLOC_MODE="perf")
        r = run_bpfprof(["--alloc", "-v", "-o", out, "-d", "3", "-p", f"{f.pid},{s.pid}"],
                        timeout=60, env=env)
    finally:
        for p in (f, s):
            p.kill()
            p.communicate(timeout=30)
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

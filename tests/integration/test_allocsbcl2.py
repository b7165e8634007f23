# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on SBCL, session 8's findings (test_allocsbcl.py has the
sampling itself).

- A runtime's slot (ALLOC_SBCL_SLOTS of them, BPFPROF_TEST_ALLOC_SBCL_SLOTS
  makes them fewer) is taken only once its probes are attached: a tenant's
  runtime whose attach fails (fakesbcl_attach passes every check, but its
  gc_close_region begins with an int3 the kernel's uprobes refuse) leaves it
  to the next runtime.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import as_tenant, run_bpfprof, sbcl, tenant, wl

LISPBENCH = str(Path(__file__).resolve().parents[1] / "workloads" / "lispbench.lisp")


def test_failed_attach_gives_the_slot_back(tenant_dir):
    """One slot: the tenant's runtime (first in -p) fails to attach, the real
    sbcl after it is probed (not "no slot left") and its Lisp allocations
    are in the profile."""
    exe = sbcl()
    pw = tenant()
    fake = tenant_dir / "fakesbcl_attach"
    shutil.copy2(wl("fakesbcl_attach"), fake)
    os.chown(fake, pw.pw_uid, pw.pw_gid)
    f = subprocess.Popen(as_tenant([fake, "8"]), stdout=subprocess.PIPE, text=True)
    # 8 s of Lisp: past bpfprof -p's start on a loaded host
    s = subprocess.Popen([exe, "--script", LISPBENCH, "list", "8"], stdout=subprocess.PIPE,
                         text=True)
    out = tenant_dir.parent / "attach.pb.gz"
    try:
        assert f.stdout.readline().strip() == "ready"
        env = dict(os.environ, BPFPROF_TEST_ALLOC_SBCL_SLOTS="1")
        r = run_bpfprof(["--alloc", "-v", "-o", out, "-d", "3", "-p", f"{f.pid},{s.pid}"],
                        timeout=60, env=env)
    finally:
        for p in (f, s):
            p.kill()
            p.communicate(timeout=30)
    fails = [l for l in r.stderr.splitlines() if "fakesbcl_attach" in l and "not probed" in l]
    assert fails, r.stderr  # the fake's attach did fail
    assert "no slot left" not in r.stderr, r.stderr
    assert re.search(r"/sbcl: SBCL 2\.2\.9\S*: alloc and gc_close_region probed", r.stderr), \
        r.stderr
    space = run_bpfprof(["convert", "--view", "alloc-space", "-f", "folded", out]).stdout
    assert "LISPBENCH::OP-LIST" in space, space[:3000]

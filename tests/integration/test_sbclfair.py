# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on SBCL: the profile write's naming budget shared fairly
between SBCL processes (issue 39's open item).

A write names the Lisp frames the drains left within a budget
(ALLOCRUN_SBCL_WRITE_MS). A tenant's SBCL allocating from thousands of
distinct stacks (lisppaths.lisp, as test_allocsbcl3) used to spend all of
it, whatever the order of the stacks: an honest SBCL process profiled in the
same run then had its frames written as "[unnamed: SBCL]" (in 3 runs of 3
before: 0 of its bytes in named stacks). The budget is now of time spent
naming (a turn's takes share it), and each of the N SBCL processes known
gets a share of it, budget / (N + 1): the honest one's few frames are named.
Without the shares (the naming-time budget alone) it still failed, 2 of 2.
"""
import os
import shutil
import subprocess
import time
from pathlib import Path

from conftest import BPFPROF, as_tenant, sbcl, tenant
import pprof

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"


def _names(p, s):
    out = []
    for lid in s["location_id"]:
        for ln in (p["location"][lid]["lines"] if lid in p["location"] else []):
            out.append(pprof.strings(p, p["function"][ln.get(1)].get(2, 0)))
    return out


def test_honest_sbcl_named_next_to_a_tenants_many_stacks(tenant_dir, tmp_path):
    """The tenant's lisppaths (2^14 stacks) and the honest lispbench (list:
    one Lisp stack, LISPBENCH::OP-LIST), profiled together for 3 s at
    --alloc=4K with the drains naming one new stack each and a write's
    budget made 100 ms: the honest process's sampled bytes are nearly all
    in stacks that name LISPBENCH::OP-LIST, none in "[unnamed: SBCL]"
    ones (before: its frames came after the tenant's in the write and were
    cut with them)."""
    exe = sbcl()
    pw = tenant()
    script = tenant_dir / "lisppaths.lisp"
    shutil.copy2(WORKLOADS / "lisppaths.lisp", script)
    os.chown(script, pw.pw_uid, pw.pw_gid)
    out = tmp_path / "heap.pb.gz"
    lisp = subprocess.Popen(as_tenant([exe, "--script", script, "14", "40"]),
                            stdout=subprocess.PIPE, text=True)
    honest = b = None
    try:
        assert lisp.stdout.readline().strip() == "ready"
        time.sleep(1)  # its paths' first round: every stack in use
        honest = subprocess.Popen([exe, "--script", str(WORKLOADS / "lispbench.lisp"), "list",
                                   "30"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        b = subprocess.run([str(BPFPROF), "--alloc=4K", "-v", "-d", "3", "-p",
                            f"{lisp.pid},{honest.pid}", "-o", str(out)],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, BPFPROF_TEST_ALLOC_SBCL_NAME_STACKS="1",
                                    BPFPROF_TEST_ALLOC_SBCL_WRITE_MS="100"))
    finally:
        for proc in (lisp, honest):
            if proc is not None:
                proc.kill()
                proc.communicate(timeout=30)
    assert b.returncode == 0, b.stderr[-3000:]
    with open(out, "rb") as f:
        p = pprof.decode(f.read())
    named = unnamed = other = 0
    tenant_unnamed = 0
    for s in p["sample"]:
        names = _names(p, s)
        pid = s["label"].get("pid")
        if pid == lisp.pid:
            tenant_unnamed += "[unnamed: SBCL]" in names
            continue
        if pid != honest.pid:
            continue
        if "[unnamed: SBCL]" in names:
            unnamed += s["value"][1]
        elif "LISPBENCH::OP-LIST" in names:
            named += s["value"][1]
        else:
            other += s["value"][1]
    print(f"honest: {named} bytes named, {unnamed} unnamed, {other} other; "
          f"tenant: {tenant_unnamed} stacks unnamed")
    assert tenant_unnamed > 0, b.stderr[-3000:]  # the budget did bite
    assert named > 0 and unnamed == 0, (named, unnamed, other, b.stderr[-3000:])

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on SBCL, session 8's findings (test_allocsbcl.py has the
sampling itself).

- A runtime's slot (ALLOC_SBCL_SLOTS of them, BPFPROF_TEST_ALLOC_SBCL_SLOTS
  makes them fewer) is taken only once its probes are attached: a tenant's
  runtime whose attach fails (fakesbcl_attach passes every check, but its
  gc_close_region begins with an int3 the kernel's uprobes refuse) leaves it
  to the next runtime.
- Debian's 2.2.9's alloc is probed at its tail jump to gc_alloc_large (a
  large object's only), not at its entry (which trapped at each mixed
  region refilled too): said by -v, and a loop of 160 KB arrays gets its
  bytes within the sampling's spread.
- current_thread is read once a thread (kept in its task storage with where
  it was read): two Lisp threads consing at once each get their own bytes.
"""
import json
import math
import re
from pathlib import Path

from conftest import SIGMAS, alloc_failed_attach_then_sbcl, folded_sum, run_bpfprof, sbcl

LISPBENCH = str(Path(__file__).resolve().parents[1] / "workloads" / "lispbench.lisp")
LISPTHREADS = str(Path(__file__).resolve().parents[1] / "workloads" / "lispthreads.lisp")
REGION = 32768
PERIOD = 2 << 20  # some 8,000 samples a second: a loaded host's reader keeps up
LARGE = 20000 * 8 + 16  # lispbench's large shape: a double-float array of 20,000


def test_large_objects_at_the_jump(tmp_path):
    """2 s of 160 KB arrays: OP-LARGE's bytes in the profile are what
    get-bytes-consed counted in the loop, within SIGMAS standard deviations
    of the sampling (each object sampled with p = 1 - exp(-s/P), weighed
    1/p: a variance of T s (1 - p) / p), 1% (the loop's own small conses)
    and the samples the ring lost (s / p each); -v says where alloc is
    probed."""
    exe = sbcl()
    out = tmp_path / "large.pb.gz"
    r = run_bpfprof([f"--alloc={PERIOD}", "-v", "-o", out, "--", exe, "--script", LISPBENCH,
                     "large", "2"], timeout=120)
    assert "alloc at its large objects' jump to gc_alloc_large (emulated)" in r.stderr, r.stderr
    j = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    truth = j["bytes_per_sec"] * j["seconds"]
    space = run_bpfprof(["convert", "--view", "alloc-space", "-f", "folded", out]).stdout
    est = folded_sum(space, "LISPBENCH::OP-LARGE")
    p = -math.expm1(-LARGE / PERIOD)
    m = re.search(r"(\d+) sampled allocations lost", r.stderr)
    lost = int(m.group(1)) if m else 0
    tol = SIGMAS * math.sqrt(truth * LARGE * (1 - p) / p) + 0.01 * truth + lost * LARGE / p
    assert abs(est - truth) <= tol, f"OP-LARGE: {est} bytes, truly {truth:.0f} +- {tol:.0f}"


def test_failed_attach_gives_the_slot_back(tenant_dir):
    """One slot: the tenant's runtime (first in -p) fails to attach, the real
    sbcl after it is probed (not "no slot left") and its Lisp allocations
    are in the profile."""
    out = tenant_dir.parent / "attach.pb.gz"
    r = alloc_failed_attach_then_sbcl(tenant_dir, out)
    fails = [l for l in r.stderr.splitlines() if "fakesbcl_attach" in l and "not probed" in l]
    assert fails, r.stderr  # the fake's attach did fail
    assert "no slot left" not in r.stderr, r.stderr
    assert re.search(r"/sbcl: SBCL 2\.2\.9\S*: alloc and gc_close_region probed", r.stderr), \
        r.stderr
    space = run_bpfprof(["convert", "--view", "alloc-space", "-f", "folded", out]).stdout
    assert "LISPBENCH::OP-LIST" in space, space[:3000]


def test_two_threads_each_their_bytes(tmp_path):
    """lispthreads.lisp: THREAD-A conses twice THREAD-B's bytes, at once in
    two threads. Each thread's regions are its own (current_thread kept per
    thread): A's estimate over B's is 2 within SIGMAS standard deviations
    of both sums of sampled regions (s bytes each, p = 1 - exp(-s/P)) and
    two regions each (a thread's last one, open at its end)."""
    exe = sbcl()
    n = 5_000_000
    out = tmp_path / "threads.pb.gz"
    r = run_bpfprof([f"--alloc={PERIOD}", "-v", "-o", out, "--", exe, "--script", LISPTHREADS,
                     n], timeout=120)
    assert "done" in r.stdout, r.stdout
    space = run_bpfprof(["convert", "--view", "alloc-space", "-f", "folded", out]).stdout
    a, b = (folded_sum(space, "LISPTHREADS::THREAD-" + t) for t in "AB")
    assert a > 0 and b > 0, space[:3000]
    p = -math.expm1(-REGION / PERIOD)
    rel = math.hypot(math.sqrt(REGION * (1 - p) / (p * 1600 * n)),
                     math.sqrt(REGION * (1 - p) / (p * 800 * n)))
    tol = 2 * (SIGMAS * rel + 2 * REGION / (800 * n))
    m = re.search(r"(\d+) sampled allocations lost", r.stderr)
    if m:
        tol += 2 * int(m.group(1)) * REGION / p / (800 * n)
    assert abs(a / b - 2) <= tol, f"THREAD-A {a} bytes, THREAD-B {b}: {a / b:.3f}, 2 +- {tol:.3f}"

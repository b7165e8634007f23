# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""SBCL (issue 38): Lisp programs on Debian's sbcl, profiled with no options.

SBCL's x86-64 frames keep frame pointers, and its runtime's call_into_lisp
describes its frame with a CFA expression the table walker cannot follow
(*rbp + 16: it runs Lisp on a control stack of its own). --unwind auto
goes on from there with frame pointers (bpf/unwind.bpf.h, uw_fp_fallback),
so Lisp stacks reach main as a frame-pointer walk's do. uw_switch is the
same in C, with a frame whose rbp is no frame pointer (it must still stop).
"""
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import (BPFPROF, Sampled, Workload, assert_few, assert_most, frames_of,
                      parse_folded, uwl, wait_attached, wl)

LISP = Path(__file__).resolve().parents[1] / "workloads" / "lisphot.lisp"
FREQ = 99


def sbcl():
    path = shutil.which("sbcl")
    if not path:
        pytest.skip("no sbcl (apt-get install sbcl)")
    return path


def stops(err, reason):
    m = re.search(r"unwind: stops: .*?(\d+) " + reason, err)
    assert m, err
    return int(m.group(1))


def fallbacks(err):
    m = re.search(r"\((\d+) where a table rule could not be followed\)", err)
    assert m, err
    return int(m.group(1))


def user_frames(stack):
    return [f for f in frames_of(stack) if not f.endswith("_[k]")]


def reaches_main(stack):
    """The stack goes down to main, called by libc's start (the outermost
    frames a frame-pointer walk of sbcl finds)."""
    fr = user_frames(stack)
    return any(fr[i] == "__libc_start_call_main" and fr[i + 1] == "main"
               for i in range(1, len(fr) - 1))


def test_lisp_stacks_reach_main_in_the_default_mode(tmp_path):
    """Debian's sbcl running two hot Lisp functions under a driver, profiled
    with no unwind option: nearly every stack of its Lisp code (those through
    call_into_lisp_) reaches main, and none stops at an unsupported rule."""
    exe = sbcl()
    with Workload(exe, "--script", LISP, "120") as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=3, timeout=120)
    folded = parse_folded(p.stdout)
    lisp = {s: c for s, c in folded.items() if "call_into_lisp_" in user_frames(s)}
    n = sum(lisp.values())
    whole = sum(c for s, c in lisp.items() if reaches_main(s))
    assert_most(n, sum(folded.values()), "samples in Lisp code", share=0.9)
    assert_most(whole, n, f"Lisp stacks reaching main {p.stderr}", share=0.98)
    assert_few(stops(p.stderr, "unsupported rule"), n, "stops at an unsupported rule",
               share=0.01)
    assert fallbacks(p.stderr) >= whole - 5, p.stderr


def metrics(port):
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            return urllib.request.urlopen(base + "/metrics", timeout=1).read().decode()
        except OSError:
            time.sleep(0.1)
    raise AssertionError("no /metrics")


def test_a_rule_the_walker_cannot_follow_goes_on_with_frame_pointers(tmp_path):
    """uw_switch: trampolines keep a frame pointer under a CFA expression the
    walker does not know; one runs its callee on an mmap()ed stack. Both
    stacks reach main, each fallback counted (-v, /metrics); the trampoline
    whose rbp holds no frame pointer still ends its stack there."""
    exe, comm = uwl("uw_switch")
    port = 17000 + (os.getpid() + 500) % 1000
    with Workload(exe, "600") as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=3, timeout=120)
        a = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "--interval", "1", "--listen",
                              str(port), "--output-dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_attached(a)
            time.sleep(2)
            text = metrics(port)
            a.send_signal(signal.SIGINT)
            a.communicate(timeout=60)
        finally:
            if a.poll() is None:
                a.kill()
                a.wait()
    err = p.stderr
    folded = parse_folded(p.stdout)
    by_leaf = {}
    for s, c in folded.items():
        fr = user_frames(s)
        by_leaf.setdefault(fr[-1], []).append((fr, c))
    walked_on = 0
    for name, via in (("same", "sw_call_same"), ("switched", "sw_call_switch")):
        got = by_leaf.get(f"{name}_leaf", [])
        n = sum(c for _, c in got)
        whole = sum(c for fr, c in got
                    if fr[1:] == ["_start", "__libc_start_main", "__libc_start_call_main",
                                  "main", "sw_run", via, f"{name}_outer", f"{name}_leaf"])
        assert n >= 50, (name, by_leaf.keys(), err)
        assert_most(whole, n, f"{name}_leaf stacks whole {got[:5]}", share=0.97)
        walked_on += whole
    bad = by_leaf.get("bad_leaf", [])
    n = sum(c for _, c in bad)
    ended = sum(c for fr, c in bad if fr[1:] == ["sw_call_bad", "bad_outer", "bad_leaf"])
    assert n >= 50, (by_leaf.keys(), err)
    assert_most(ended, n, f"bad_leaf stacks ending at sw_call_bad {bad[:5]}", share=0.97)
    assert not any("main" in fr for fr, _ in bad), bad
    assert stops(err, "unsupported rule") >= ended - 5, err
    m = re.search(r"^bpfprof_unwind_fp_fallbacks_total (\d+)$", text, re.M)
    assert m and int(m.group(1)) > 0, text
    assert fallbacks(err) >= walked_on - 10, err  # the first samples: frame pointers only

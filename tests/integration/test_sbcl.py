# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""SBCL (issue 38): Lisp programs on Debian's sbcl, profiled with no options.

SBCL's x86-64 frames keep frame pointers, and its runtime's call_into_lisp
describes its frame with a CFA expression the table walker cannot follow
(*rbp + 16: it runs Lisp on a control stack of its own). --unwind auto
goes on from there with frame pointers (bpf/unwind.bpf.h, uw_fp_fallback),
so Lisp stacks reach main as a frame-pointer walk's do. uw_switch is the
same in C, with a frame whose rbp is no frame pointer (it must still stop).

Lisp functions are named from the process's heap (src/lang/sbcl.c): the
code object holding the pc, its simple-fun's name, printed as SBCL prints
it (LISPHOT::ALPHA-WORK, SB-VM::GENERIC-+ for assembly routines).
"""
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from conftest import (BPFPROF, Sampled, Workload, as_tenant, assert_few, assert_most, assert_share,
                      frames_of, metrics, parse_folded, sbcl, tenant_copy, uwl, wait_attached, wl)

LISP = Path(__file__).resolve().parents[1] / "workloads" / "lisphot.lisp"
FREQ = 99


def stops(err, reason):
    m = re.search(r"unwind: stops: .*?(\d+) " + reason, err)
    assert m, err
    return int(m.group(1))


def fallbacks(err):
    m = re.search(r"\((\d+) where a table rule could not be followed\)", err)
    assert m, err
    return int(m.group(1))


def user_frames(stack):
    """Its user frames, Lisp ones without their kind's "_[lisp]"."""
    return [f.removesuffix("_[lisp]") for f in frames_of(stack) if not f.endswith("_[k]")]


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


UNNAMED = re.compile(r"(\+0x[0-9a-f]+|^\[unknown\])$")


def test_lisp_functions_named_with_their_shares():
    """-p of Debian's sbcl running lisphot.lisp, no options: at least 95% of
    its samples have no unnamed frame; ALPHA-WORK and BETA-WORK (the same
    loop, twice and once the iterations) are named, under DRIVE, at 2:1
    (GAMMA-WORK takes ~5% more, in SBCL's assembly routines: named too);
    SBCL's own functions under them (LOAD, SB-IMPL::PROCESS-SCRIPT)."""
    exe = sbcl()
    with Workload(exe, "--script", LISP, "120") as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=4, timeout=120)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.split(";")[0] == "sbcl"}
    n = sum(folded.values())
    unnamed = sum(c for s, c in folded.items() if any(UNNAMED.search(f) for f in user_frames(s)))
    assert_few(unnamed, n, f"samples with an unnamed frame {p.stderr[-2000:]}", share=0.05)
    alpha = sum(c for s, c in folded.items() if "LISPHOT::ALPHA-WORK" in user_frames(s))
    beta = sum(c for s, c in folded.items() if "LISPHOT::BETA-WORK" in user_frames(s))
    assert_most(alpha + beta, n, "samples in ALPHA-WORK or BETA-WORK", share=0.85)
    assert_share(alpha / max(alpha + beta, 1), 2 / 3, alpha + beta, "ALPHA-WORK of the two")
    chain = ["LOAD", "SB-IMPL::PROCESS-SCRIPT", "LISPHOT::DRIVE"]
    under = sum(c for s, c in folded.items()
                if all(f in user_frames(s) for f in chain) and reaches_main(s))
    assert_most(under, n, "samples under DRIVE, LOAD, PROCESS-SCRIPT and main", share=0.9)
    assert re.search(r"SB-VM::GENERIC-[+<]", p.stdout), "assembly routines named"
    assert not [l for l in p.stderr.splitlines() if "warning" in l], p.stderr


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


# --- the tenant's fake SBCL ---------------------------------------------------


def test_a_fake_sbcl_runtime_gets_bounded_names_and_no_hang(tenant_dir):
    """The tenant's fakesbcl exports the runtime's variables and points them
    at a hostile heap that it rewrites all the time: a cyclic name list, a
    name string of 2^40 characters, a package id past a vector of 2^50, a
    code object behind 4096 tiny objects. bpfprof names its two spinning
    threads from that heap without hanging or crashing: every name within
    SBCL_NAME_MAX bytes of valid UTF-8, the profile written promptly."""
    exe = tenant_copy(wl("fakesbcl"), tenant_dir)
    with Workload(*as_tenant([exe, "120"])) as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=3, timeout=120)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.startswith("fakesbcl;")}
    names = {f for s in folded for f in user_frames(s)[1:]}
    lisp = [f for f in names if f.startswith(("(?::", '"'))]
    assert len(lisp) >= 1, names
    assert all(len(f.encode()) < 512 for f in names), max(names, key=len)
    m = re.search(r"end of sampling to written profile: ([0-9.]+) ms", p.stderr)
    assert m and float(m.group(1)) < 10000, p.stderr[-2000:]


def test_an_sbcl_of_an_unknown_version_warns_once_per_runtime(tenant_dir):
    """Two processes of a runtime that says it is SBCL 9.9.9 (no layout for
    it): exactly one warning naming the version, and no Lisp names at all
    (the frames stay unnamed, never a wrong name)."""
    exe = tenant_copy(wl("fakesbcl_new"), tenant_dir)
    with Workload(*as_tenant([exe, "120"])) as w1, Workload(*as_tenant([exe, "120"])) as w2:
        p = Sampled(["-v", "-p", f"{w1.pid},{w2.pid}", "-d", 60], [w1.pid, w2.pid],
                    until_cpu=3, timeout=120)
    warned = [l for l in p.stderr.splitlines() if "SBCL 9.9.9" in l]
    assert len(warned) == 1, p.stderr
    assert warned[0].startswith("bpfprof: warning: ") and "does not know" in warned[0], warned
    assert "?::" not in p.stdout and '"AAAA' not in p.stdout, p.stdout[:2000]
    assert any(s.startswith("fakesbcl_new;") for s in parse_folded(p.stdout)), p.stdout[:2000]

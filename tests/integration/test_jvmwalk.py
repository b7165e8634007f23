# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""HotSpot frames walked in BPF (issue 42 item 3, bpf/hotspot.bpf.h): a JVM
started with no option (no -XX:+PreserveFramePointer) keeps no frame pointer
in compiled code; the walker steps through its nmethods (frame size from the
code blob found in the segment map), its interpreter frames (rbp) and the
call stub (back to the native walker), so stacks reach the thread's start.

The fake JVM (tests/workloads/fakejvm.c, mode "frames") builds those frames
itself in its fake code cache: it runs wherever the tests do, no JDK needed.
The real JDK's tests are in test_jvmuser.py.

A tenant's hostile fake JVM (mode "hostile": a segment-map hop chain longer
than any walk may take, a thread rewriting the code cache while it is read)
costs bounded reads per sample, and its stops are counted.
"""
import re

import pytest

from conftest import (Sampled, Workload, as_tenant, assert_few, assert_most, frames_of,
                      parse_folded, tenant_copy, wl)

# The interpreter frame named by the Method* it holds at fp - 24 (its "_[0]").
CHAIN = ["spin_via", "StubRoutines (1)_[j]", "com.example.Fake.work_[0]",
         "com.example.Fake.work_[j]"]


def user_frames(stack):
    return [f for f in frames_of(stack) if not f.endswith("_[k]")]


def jvm_line(stderr):
    """The -v line of the JVM walk (session/record.c)."""
    m = re.search(r"unwind: JVMs: (\d+) walked, (\d+) not \(layout\), (\d+) probes again.*?"
                  r"(\d+) frames through the code cache \((\d+) leaf guesses\), (\d+) handed "
                  r"back at the call stub; stops: (\d+) no blob, (\d+) bad frame, (\d+) return "
                  r"address, (\d+) interpreter frame, (\d+) unreadable, (\d+) read budget",
                  stderr)
    assert m, stderr[-3000:]
    return dict(zip(["walked", "unknown", "retries", "frames", "guesses", "stub", "blob", "frame",
                     "ra", "interp", "read", "budget"], [int(x) for x in m.groups()]))


@pytest.fixture(scope="module")
def fake_frames():
    """One -v run of -p on fakejvm frames: its spinning thread's stacks."""
    with Workload(wl("fakejvm"), "frames", "60") as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 30], [w.pid], until_cpu=3, timeout=90)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.startswith("fakejvm;")}
    return p, folded


def test_fake_jvm_stacks_walk_through_jit_interpreter_and_call_stub(fake_frames):
    """Two threads: one in an nmethod that left a junk rbp, which cuts a
    frame-pointer walk, the other in an nmethod's epilogue (its frame
    taken down, spinning in the return poll), where the frame-size step
    would read the interpreter frame's own return address and skip that
    frame. Both walk through the nmethod, the interpreter frame and the
    call stub to spin_via() and down to start_thread."""
    p, folded = fake_frames
    n = sum(folded.values())
    whole = sum(c for s, c in folded.items()
                if user_frames(s)[-len(CHAIN):] == CHAIN and "start_thread" in user_frames(s))
    assert_most(whole, n, f"fakejvm stacks start_thread;...;{';'.join(CHAIN)} "
                f"{list(folded.items())[:5]} {p.stderr[-3000:]}", share=0.9)


def test_fake_jvm_walk_is_counted(fake_frames):
    """-v: the fake JVM walked; each whole stack took three steps in its
    code cache (nmethod, interpreter, call stub) and handed back once at the
    call stub; hardly any stop short of it."""
    p, folded = fake_frames
    v = jvm_line(p.stderr)
    n = sum(folded.values())
    assert v["walked"] == 1 and v["unknown"] == 0, v
    assert_most(v["stub"], n, f"walks handed back at the call stub {v}", share=0.9)
    assert v["frames"] >= 3 * v["stub"], v
    errors = v["blob"] + v["frame"] + v["ra"] + v["interp"] + v["read"] + v["budget"]
    assert_few(errors, n, f"JVM walks stopped short {v}", share=0.02)


def test_hostile_fake_jvm_walk_is_bounded_and_counted(tenant_dir):
    """The tenant's hostile fake JVM: one thread behind a segment-map hop
    chain longer than any walk may take (stops counted as "no blob", never a
    loop), another in an nmethod whose tables a third thread rewrites. The
    walker takes no Java frame it cannot check: every stack of the two
    spinning threads is its leaf alone; the profile is written promptly."""
    exe = tenant_copy(wl("fakejvm"), tenant_dir)
    with Workload(*as_tenant([exe, "hostile", "60"])) as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 30], [w.pid], until_cpu=3, timeout=90)
    v = jvm_line(p.stderr)
    assert v["walked"] == 1, v
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.startswith("fakejvm;")}
    spun = {s: c for s, c in folded.items() if user_frames(s)[-1].endswith("_[j]")
            or user_frames(s)[-1] == "[unknown]"}
    n = sum(spun.values())
    assert_most(n, sum(folded.values()), "samples of the two spinning threads", share=0.8)
    # The far thread's walks end in the hop chain, counted; not a frame more than its leaf.
    assert v["blob"] > 0, v
    deeper = sum(c for s, c in spun.items() if len(user_frames(s)) > 2)
    assert_few(deeper, n, f"spinning threads' stacks with frames beyond the leaf {v}", share=0.02)
    m = re.search(r"end of sampling to written profile: ([0-9.]+) ms", p.stderr)
    assert m and float(m.group(1)) < 10000, p.stderr[-2000:]

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""HotSpot JVMs walked with no JVM option (issue 42, item 3).

Without -XX:+PreserveFramePointer, compiled Java code uses rbp as an
ordinary register, so a frame-pointer walk ends at the first JIT frame. The
unwinder hands each JVM's code cache to the BPF walker (lang/hotspot.c's
hotspot__bpf(): the heaps' segment maps, the interpreter's code, the call
stub's return address, CodeBlob offsets) and the walker steps through
nmethods by their frame size, interpreter frames by rbp, and hands back to
the native walker at the call stub: JavaHot's stacks read

    JavaMain;...;JavaCalls::call_helper;StubRoutines (1)_[j];JavaHot.main_[0];JavaHot.alpha_[j]

main's interpreter frame named by the Method* in it ("_[0]": interpreted).

One bpfprof run of a JVM (-p) serves the assertions on it; a second starts
the JVM under bpfprof (-- java), whose tables are not filled yet at its first
sample: probed again until they are.
"""
import re

import pytest

from conftest import Sampled, assert_few, assert_most, assert_share, parse_folded
from test_jvm import JavaHot, classes, java, user_frames  # noqa: F401 (fixture)

CHAIN = ["JavaMain", "StubRoutines (1)_[j]", "JavaHot.main_[0]"]


def work_stacks(folded):
    """The java thread's stacks whose leaf-most Java frame is alpha or beta."""
    return {s: c for s, c in folded.items() if s.split(";")[0] == "java"
            and {"JavaHot.alpha_[j]", "JavaHot.beta_[j]"} & set(user_frames(s))}


def through_main(stack):
    """JavaMain, the call stub, main's interpreter frame (named JavaHot.main),
    then alpha or beta: in that order."""
    frames = user_frames(stack)
    at = 0
    for want in CHAIN:
        try:
            at = frames.index(want, at) + 1
        except ValueError:
            return False
    return any(f in ("JavaHot.alpha_[j]", "JavaHot.beta_[j]") for f in frames[at:])


def jvm_line(stderr):
    m = re.search(r"unwind: JVMs: (\d+) walked, (\d+) not \(layout\), (\d+) probes again.*?"
                  r"(\d+) frames through the code cache \((\d+) leaf guesses\), (\d+) handed "
                  r"back at the call stub; stops: (\d+) no blob, (\d+) bad frame, (\d+) return "
                  r"address, (\d+) interpreter frame, (\d+) unreadable, (\d+) read budget",
                  stderr)
    assert m, stderr[-3000:]
    v = [int(x) for x in m.groups()]
    return {"walked": v[0], "unknown": v[1], "retries": v[2], "frames": v[3], "guesses": v[4],
            "stub": v[5], "errors": sum(v[6:])}


@pytest.fixture(scope="module")
def attached(classes):
    """-p of a running JavaHot started with no JVM option."""
    with JavaHot(classes) as j:
        return Sampled(["-v", "-p", j.pid, "-d", 60], [j.pid], until_cpu=3, timeout=120)


def test_java_stacks_reach_main_with_no_jvm_option(attached):
    """Nearly every stack of alpha and beta goes down through main's
    interpreter frame, named JavaHot.main by its Method*, and the call stub
    to the launcher's JavaMain, and alpha and beta keep their 2:1 shares;
    hardly any interpreted caller is left unnamed ("Interpreter")."""
    work = work_stacks(parse_folded(attached.stdout))
    n = sum(work.values())
    whole = sum(c for s, c in work.items() if through_main(s))
    assert_most(whole, n, f"alpha/beta stacks through JavaHot.main_[0] to JavaMain "
                f"{attached.stderr[-2000:]}", share=0.9)
    unnamed = sum(c for s, c in work.items() if "Interpreter_[j]" in user_frames(s)[:-1])
    assert_few(unnamed, n, "alpha/beta stacks with an interpreted caller unnamed", share=0.02)
    alpha = sum(c for s, c in work.items() if "JavaHot.alpha_[j]" in user_frames(s))
    assert_share(alpha / max(n, 1), 2 / 3, n, "alpha of the two")


def test_jvm_walk_is_counted_in_the_verbose_output(attached):
    """-v: one JVM walked, frames stepped through its code cache, walks
    handed back at the call stub, and stops short of it a few percent of
    them at most; no warning about the JVM."""
    v = jvm_line(attached.stderr)
    assert v["walked"] == 1 and v["unknown"] == 0, v
    assert v["frames"] > 0 and v["stub"] > 0, v
    assert_few(v["errors"], v["stub"] + v["errors"], "JVM walks that stopped short", share=0.05)
    assert not [l for l in attached.stderr.splitlines()
                if "warning" in l and ("HotSpot" in l or "JVM" in l)], attached.stderr


def test_a_jvm_started_under_bpfprof_is_walked_once_started(classes, tmp_path):
    """-- java JavaHot: at its first samples the launcher has not mapped
    libjvm.so or the VM not made its code cache; probed again, then walked:
    most of alpha's and beta's stacks reach JavaMain."""
    out = tmp_path / "out.folded"  # (java prints to the same stdout)
    p = Sampled(["-v", "-d", 60, "-o", out, "--", java(), "-cp", classes, "JavaHot", 6],
                timeout=120)
    v = jvm_line(p.stderr)
    assert v["walked"] == 1, v
    work = work_stacks(parse_folded(out.read_text()))
    n = sum(work.values())
    whole = sum(c for s, c in work.items() if through_main(s))
    assert_most(whole, n, "alpha/beta stacks through JavaHot.main_[0] to JavaMain", share=0.9)

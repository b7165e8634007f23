# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""HotSpot JVMs machine-wide (issue 42's "Done when"), Debian's OpenJDK 17
started with no JVM option, one `bpfprof -a` run of three JVMs at once:

  - JavaHot: its Java thread's samples named Class.method, alpha and beta at
    their 2:1 shares, under main's interpreter frame, the call stub and the
    launcher's JavaMain;
  - JavaInline: big under helper (inlined into outer by C2: a frame of its
    own, from the nmethod's scopes) under outer, down to JavaMain;
  - JavaDeopt: code deoptimised and recompiled during the profile (a class
    loaded that breaks a compiled method's class-hierarchy assumption while
    its frame waits for a long call; a type the compiled code never saw):
    every sample named only with what its thread runs (thread deoptA: Alpha,
    deoptB: Beta), and a deoptimised frame (its return address patched to its
    nmethod's deopt handler) walked and named at its original pc, so the
    method inlined at the call (via) stays a frame of its own.

bpfprof runs as an always-on profiler would (--interval 1 --output-dir),
started with the JVMs: the intervals until they are warm (and bpfprof has
built the unwind tables of every process it met, libjvm.so's among them:
seconds on a loaded machine, while native frames are walked by frame
pointers) are left out; the four after them are the profile. pprof: its samples carry the pid (other processes' JVMs on
the machine are left out); frames root first, inlined ones expanded.
"""
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

import pprof
from conftest import BPFPROF, assert_few, assert_most, assert_share
from test_jvm import java

JAVA = Path(__file__).resolve().parents[1] / "workloads" / "java"
# A Java method: package.Class.method, "_[0]" when interpreted (by_pid)
METHOD = re.compile(r"^[\w$.]+\.[A-Za-z_$<][\w$<>]*(_\[0\])?$")
INTERP = "_[0]"


def main_chain(cls):
    """JavaMain, the call stub, main's interpreter frame named by its Method*."""
    return ["JavaMain", "StubRoutines (1)", f"{cls}.main{INTERP}"]


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    java()
    d = tmp_path_factory.mktemp("java4")
    subprocess.run(["javac", "-d", str(d), *map(str, sorted(JAVA.glob("*.java")))],
                   check=True, timeout=120)
    d.chmod(0o755)
    return d


def start(classes, main):
    return subprocess.Popen([java(), "-cp", str(classes), main, "300"],
                            stdout=subprocess.PIPE, text=True)


def wait_warm(procs, timeout=240):
    """Each JVM printed "warm" (its methods compiled; JavaDeopt: one cycle run)."""
    left, deadline = list(procs), time.monotonic() + timeout
    while left:
        assert time.monotonic() < deadline, "a JVM never warmed up"
        for p in list(left):
            assert p.poll() is None, f"java {p.args} exited"
            r, _, _ = select.select([p.stdout], [], [], 0.2)
            if r and "warm" in p.stdout.readline():
                left.remove(p)


def by_pid(profiles):
    """{pid: {(comm, frame, ..., leaf): samples}}, inlined frames expanded,
    kernel frames left out (pprof's names have no _[k]: "finish_task_switch.isra.0");
    interpreted Java frames (their mapping "[java-interpreted]") with "_[0]"."""
    out = {}
    for profile, s in ((p, s) for p in profiles for s in p["sample"]):
        names = []
        for lid in reversed(s["location_id"]):
            m = profile["mapping"].get(profile["location"][lid]["mapping_id"], {})
            mapping = pprof.strings(profile, m.get(5, 0))
            if mapping == "[kernel.kallsyms]":
                continue
            for line in reversed(profile["location"][lid]["lines"]):
                fn = profile["function"][line.get(1)]
                names.append(pprof.strings(profile, fn.get(2, 0))
                             + (INTERP if mapping == "[java-interpreted]" else ""))
        d = out.setdefault(s["label"].get("pid"), {})
        key = (s["label"].get("comm", ""), *names)
        d[key] = d.get(key, 0) + s["value"][0]
    return out


def thread(stacks, comm):
    return {s[1:]: c for s, c in stacks.items() if s[0] == comm}


def in_order(frames, chain, end=None):
    """chain's frames in this order (not next to each other), then one of end after them."""
    at = 0
    for want in chain:
        try:
            at = frames.index(want, at) + 1
        except ValueError:
            return False
    return end is None or any(f in end for f in frames[at:])


def jvm_counts(stderr):
    m = re.search(r"unwind: JVMs: (\d+) walked.*?(\d+) frames through the code cache.*?"
                  r"(\d+) deoptimised frames at their original pc", stderr)
    assert m, stderr[-3000:]
    return [int(x) for x in m.groups()]


INTERVALS = 4  # measured, after the first


@pytest.fixture(scope="module")
def machine(classes, tmp_path_factory):
    """One -a run of 1 s intervals, started with the three JVMs: the 4
    intervals after the one in which the last of them got warm."""
    d = tmp_path_factory.mktemp("java4out")
    procs = [start(classes, m) for m in ("JavaHot", "JavaInline", "JavaDeopt")]
    bp = subprocess.Popen([str(BPFPROF), "-v", "-a", "--interval", "1", "--output-dir", str(d),
                           "-d", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    try:
        wait_warm(procs)
        skip = len(list(d.glob("*.pb.gz"))) + 1  # written, and the one under way
        deadline = time.monotonic() + 90
        while len(list(d.glob("*.pb.gz"))) < skip + INTERVALS and time.monotonic() < deadline \
                and bp.poll() is None:
            time.sleep(0.1)
    finally:
        bp.send_signal(signal.SIGINT)
        _, stderr = bp.communicate(timeout=60)
        for pr in procs:
            pr.kill()
            pr.wait()
    files = sorted(d.glob("*.pb.gz"))
    assert len(files) >= skip + INTERVALS, (files, stderr[-2000:])
    stacks = by_pid(pprof.decode(f.read_bytes()) for f in files[skip:skip + INTERVALS])
    return {"hot": stacks.get(procs[0].pid, {}), "inline": stacks.get(procs[1].pid, {}),
            "deopt": stacks.get(procs[2].pid, {}), "stderr": stderr}


def test_java_thread_named_with_shares_down_to_main(machine):
    """JavaHot's Java thread: >= 90% of its samples with a Java method
    named, alpha and beta nearly all of them at 2:1, their stacks through
    main's interpreter frame (named JavaHot.main by its Method*) and the
    call stub to the launcher's JavaMain."""
    hot = thread(machine["hot"], "java")
    n = sum(hot.values())
    # Named from the JIT's code (nmethods), not by main's interpreter frame
    # (main_[0]), which is under nearly every stack.
    named = sum(c for s, c in hot.items()
                if any(METHOD.match(f) and not f.endswith(INTERP) for f in s))
    assert_most(named, n, f"java samples with a compiled Java method named "
                f"{machine['stderr'][-2000:]}")
    work = {s: c for s, c in hot.items() if {"JavaHot.alpha", "JavaHot.beta"} & set(s)}
    k = sum(work.values())
    assert_most(k, n, "java samples in alpha or beta", share=0.85)
    alpha = sum(c for s, c in work.items() if "JavaHot.alpha" in s)
    assert_share(alpha / max(k, 1), 2 / 3, k, "alpha of the two")
    whole = sum(c for s, c in work.items()
                if in_order(list(s), main_chain("JavaHot"), ("JavaHot.alpha", "JavaHot.beta")))
    assert_most(whole, k, "alpha/beta stacks down to JavaMain")


def test_inlined_method_walked_as_a_frame_of_its_own(machine):
    """JavaInline with no JVM option: big's stacks read outer, helper (C2
    inlined it into outer), big, with main's interpreter frame and JavaMain
    below."""
    inl = thread(machine["inline"], "java")
    in_big = {s: c for s, c in inl.items() if s[-1] == "JavaInline.big"}
    n = sum(in_big.values())
    assert_most(n, sum(inl.values()), "java samples in big", share=0.85)
    chain = sum(c for s, c in in_big.items()
                if list(s[-3:]) == ["JavaInline.outer", "JavaInline.helper", "JavaInline.big"]
                and in_order(list(s), main_chain("JavaInline")))
    assert_most(chain, n, "big under helper (inlined) under outer, down to JavaMain")


DEOPT = {"DeoptCycle.drive", "DeoptCycle.mid", "DeoptCycle.via",
         "DeoptCycle.lambda$phase$0", "java.lang.Thread.run",
         "java.lang.System.nanoTime"}  # (its native wrapper, called by work interpreted)
WORK = {"deoptA": "DeoptCycle$Alpha.work", "deoptB": "DeoptCycle$Beta.work"}


def test_recompiled_and_deoptimised_code_keeps_its_names(machine):
    """JavaDeopt: a thread's samples name only methods it runs (deoptA
    never Beta.work, deoptB never Alpha.work, no other Java method); nearly
    every stack of work reads via (inlined into mid or drive), then work:
    a frame deoptimised while work ran (its return address the deopt
    handler's) keeps the method inlined at its call; some were walked."""
    for comm, work in WORK.items():
        t = thread(machine["deopt"], comm)
        n = sum(t.values())
        assert n > 0, (comm, machine["deopt"].keys())
        wrong = {f for s in t for f in s
                 if METHOD.match(f) and f.removesuffix(INTERP) not in DEOPT | {work}}
        assert not wrong, (comm, wrong)
        in_work = {s: c for s, c in t.items() if work in s}
        k = sum(in_work.values())
        assert_most(k, n, f"{comm} samples in {work}", share=0.85)
        # The frame above work: via (inlined or not), or an interpreted one
        # (via_[0], or Interpreter); never mid or drive with via lost.
        cut = sum(c for s, c in in_work.items()
                  if s[s.index(work) - 1] in ("DeoptCycle.mid", "DeoptCycle.drive",
                                              "DeoptCycle.mid" + INTERP,
                                              "DeoptCycle.drive" + INTERP))
        assert_few(cut, k, f"{comm}: work's stacks without via", share=0.02)
        whole = sum(c for s, c in in_work.items()
                    if any(f == "Interpreter" or f.endswith(INTERP)
                           for f in s[:s.index(work)]))
        top = sorted(in_work.items(), key=lambda x: -x[1])[:6]
        assert_most(whole, k, f"{comm}: work's stacks through an interpreted frame {top} "
                    f"{machine['stderr'][-3000:]}", share=0.9)
    walked, frames, deopt = jvm_counts(machine["stderr"])
    assert walked >= 3 and frames > 0 and deopt > 0, (walked, frames, deopt)

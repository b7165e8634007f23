# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""HotSpot JVMs (issue 42): Java methods named with no JVM option.

The JVM's code cache is read from outside (src/lang/hotspot.c): the tables
libjvm.so exports (gHotSpotVMStructs, gHotSpotVMTypes) give the layout, the
code heap's segment map the blob holding a pc, an nmethod's Method* its
name ("JavaHot.alpha"); stubs and the interpreter are named by their blob
("Interpreter", "StubRoutines (1)"). Frames are JIT frames ("_[j]"); an
interpreted frame that called out is named by its Method* ("JavaHot.main_[0]").

Stacks: the tests that run the JVM with -XX:+PreserveFramePointer reach the
launcher's JavaMain through the interpreter frame of main by frame pointers;
without it the BPF walker steps through JIT and interpreter frames
(test_jvmwalk.py, test_jvmuser.py, test_jvm4.py).
"""
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (Reaped, Sampled, Workload, as_tenant, assert_few, assert_most,
                      assert_share, frames_of, parse_folded, tenant_copy, wl)

JAVA = Path(__file__).resolve().parents[1] / "workloads" / "java"
NAME_MAX = 2 * 200 + 8  # HS_NAME_MAX


def java():
    path = shutil.which("java")
    if not path or not shutil.which("javac"):
        pytest.skip("no JDK (apt-get install openjdk-17-jdk-headless)")
    return path


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """JavaHot and JavaInline compiled (javac) into a directory of their own."""
    java()
    d = tmp_path_factory.mktemp("javahot")
    subprocess.run(["javac", "-d", str(d), str(JAVA / "JavaHot.java"), str(JAVA / "JavaInline.java")],
                   check=True, timeout=120)
    d.chmod(0o755)
    return d


class JavaHot(Reaped):
    """java [OPTIONS] JavaHot SECONDS (or main), returned once it printed
    "warm" (its methods compiled), then given a few seconds more."""

    def __init__(self, classes, *opts, seconds=300, main="JavaHot"):
        self.proc = subprocess.Popen([java(), *opts, "-cp", str(classes), main,
                                      str(seconds)], stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 1)
            if r and "warm" in self.proc.stdout.readline():
                time.sleep(3)
                return
            assert self.proc.poll() is None, "java exited"
        raise AssertionError("JavaHot never warmed up")


def user_frames(stack):
    return [f for f in frames_of(stack) if not f.endswith("_[k]")]


def java_frame(f):
    """A frame named from the code cache as a Java method (Class.method_[j])."""
    return f.endswith("_[j]") and re.match(r"^[\w$.]+\.[\w$<>]+_\[j\]$", f) is not None


def check_names_and_shares(folded, stderr):
    """The java thread's samples (comm "java"): at least 90% with a named
    Java frame, alpha and beta at 2:1 (the same loop, twice the iterations)."""
    hot = {s: c for s, c in folded.items() if s.split(";")[0] == "java"}
    n = sum(hot.values())
    named = sum(c for s, c in hot.items() if any(java_frame(f) for f in user_frames(s)))
    assert_most(named, n, f"java samples with a named Java frame {stderr[-2000:]}", share=0.9)
    alpha = sum(c for s, c in hot.items() if "JavaHot.alpha_[j]" in user_frames(s))
    beta = sum(c for s, c in hot.items() if "JavaHot.beta_[j]" in user_frames(s))
    assert_most(alpha + beta, n, "java samples in alpha or beta", share=0.85)
    assert_share(alpha / max(alpha + beta, 1), 2 / 3, alpha + beta, "alpha of the two")
    return hot


def test_java_methods_named_with_no_jvm_option(classes):
    """-p of a JVM started with no option (Debian's OpenJDK 17): its hot
    thread's samples named JavaHot.alpha and JavaHot.beta at their 2:1
    shares, no warning about the JVM."""
    with JavaHot(classes) as j:
        p = Sampled(["-v", "-p", j.pid, "-d", 60], [j.pid], until_cpu=5, timeout=120)
    check_names_and_shares(parse_folded(p.stdout), p.stderr)
    m = re.search(r"java names: (\d+) frames named", p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr
    assert not [l for l in p.stderr.splitlines() if "warning" in l and "HotSpot" in l], p.stderr


def test_java_methods_named_machine_wide(classes):
    """The same with -a: the JVM found among every process's frames."""
    with JavaHot(classes) as j:
        p = Sampled(["-a", "-d", 60], [j.pid], until_cpu=5, timeout=120)
    check_names_and_shares(parse_folded(p.stdout), p.stderr)


def test_java_stacks_reach_main_with_frame_pointers(classes):
    """-XX:+PreserveFramePointer: the stacks of alpha and beta go down
    through main's interpreter frame (named by its Method*: JavaHot.main_[0])
    and the call stub to the launcher's JavaMain, named on the way."""
    with JavaHot(classes, "-XX:+PreserveFramePointer") as j:
        p = Sampled(["-p", j.pid, "-d", 60], [j.pid], until_cpu=5, timeout=120)
    hot = check_names_and_shares(parse_folded(p.stdout), p.stderr)
    work = {s: c for s, c in hot.items()
            if {"JavaHot.alpha_[j]", "JavaHot.beta_[j]"} & set(user_frames(s))}
    n = sum(work.values())
    whole = sum(c for s, c in work.items()
                if "JavaMain" in user_frames(s) and "JavaHot.main_[0]" in user_frames(s))
    assert_most(whole, n, "alpha and beta stacks through JavaHot.main to JavaMain", share=0.9)


def test_inlined_java_methods_are_frames_of_their_own(classes):
    """JavaInline (-XX:+PreserveFramePointer): outer calls helper, which C2
    inlines into it, which calls big (too large to inline). Nearly every
    stack in big reads outer, then helper as an inlined frame of its own
    (from the nmethod's PcDesc at the call's return address and its scopes),
    then big."""
    with JavaHot(classes, "-XX:+PreserveFramePointer", main="JavaInline") as j:
        p = Sampled(["-v", "-p", j.pid, "-d", 60], [j.pid], until_cpu=5, timeout=120)
    hot = {s: c for s, c in parse_folded(p.stdout).items() if s.split(";")[0] == "java"}
    in_big = {s: c for s, c in hot.items() if user_frames(s)[-1] == "JavaInline.big_[j]"}
    n = sum(in_big.values())
    assert_most(n, sum(hot.values()), "java samples in big", share=0.85)
    chain = sum(c for s, c in in_big.items()
                if user_frames(s)[-3:-1] in (["JavaInline.outer_[j]", "JavaInline.helper_[i]"],
                                             ["JavaInline.outer_[i]", "JavaInline.helper_[i]"]))
    assert_most(chain, n, "big under helper (inlined) under outer", share=0.9)
    m = re.search(r"(\d+) inlined frames", p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr


def test_a_fake_jvm_gets_bounded_names_and_no_hang(tenant_dir):
    """The tenant's fakejvm exports gHotSpotVMStructs and its kin with an
    OpenJDK 17 layout and points them at a code cache made to hurt, which
    it rewrites all the time: an nmethod whose class name claims 65535
    bytes of control characters, cyclic and dangling Method/ConstMethod
    pointers, absurd blob sizes and heap counts, a segment-map hop chain
    longer than a walk may take. bpfprof names the first thread with a cut,
    printable name, leaves the other unnamed, and writes the profile
    promptly."""
    exe = tenant_copy(wl("fakejvm"), tenant_dir)
    with Workload(*as_tenant([exe, "hostile", "120"])) as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=4, timeout=120)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.startswith("fakejvm;")}
    names = {f for s in folded for f in user_frames(s)[1:]}
    assert all(len(f.encode()) <= NAME_MAX + 4 for f in names), max(names, key=len)
    assert all(re.match(r"^[\x20-\x7e]+$", f) for f in names), names
    cut = [f for f in names if re.match(r"^\?+\.\.\.\.\?+\.\.\._\[j\]$", f)]
    assert cut, names
    spun = sum(c for s, c in folded.items() if user_frames(s)[-1] in cut)
    unknown = sum(c for s, c in folded.items() if user_frames(s)[-1] == "[unknown]")
    assert_most(spun + unknown, sum(folded.values()), "samples of the two spinning threads",
                share=0.8)
    m = re.search(r"end of sampling to written profile: ([0-9.]+) ms", p.stderr)
    assert m and float(m.group(1)) < 10000, p.stderr[-2000:]


def test_a_jvm_of_an_unknown_layout_warns_once_and_names_nothing(tenant_dir):
    """Two processes of a 'JVM' whose tables lack CodeBlob::_name: exactly
    one warning naming what is missing, no Java names (native frames only,
    never a wrong name)."""
    exe = tenant_copy(wl("fakejvm"), tenant_dir)
    with Workload(*as_tenant([exe, "unknown", "120"])) as w1, \
            Workload(*as_tenant([exe, "unknown", "120"])) as w2:
        p = Sampled(["-v", "-p", f"{w1.pid},{w2.pid}", "-d", 60], [w1.pid, w2.pid],
                    until_cpu=3, timeout=120)
    warned = [l for l in p.stderr.splitlines() if "HotSpot JVM" in l]
    assert len(warned) == 1, p.stderr
    assert warned[0].startswith("bpfprof: warning: ") and "lack CodeBlob::_name" in warned[0]
    assert "_[j]" not in p.stdout, p.stdout[:2000]
    assert re.search(r"java names: 0 frames", p.stderr), p.stderr


def test_endless_jvm_tables_are_read_within_their_caps(tenant_dir):
    """Tables of 4 Mi entries (256 MiB, a piece mapped over and over), their
    type names 1 MiB without a NUL: read within the caps (entries, bytes,
    200 ms), one warning that says so, the profile written promptly: the
    run ends once the spinning threads had their CPU, not after a walk of
    the whole table."""
    exe = tenant_copy(wl("fakejvm"), tenant_dir)
    with Workload(*as_tenant([exe, "tables", "120"])) as w:
        t0 = time.monotonic()
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=3, timeout=120)
        took = time.monotonic() - t0
    warned = [l for l in p.stderr.splitlines() if "HotSpot JVM" in l]
    assert len(warned) == 1 and "not readable: over their" in warned[0], p.stderr
    assert "_[j]" not in p.stdout, p.stdout[:2000]
    m = re.search(r"end of sampling to written profile: ([0-9.]+) ms", p.stderr)
    assert m and float(m.group(1)) < 10000, p.stderr[-2000:]
    assert took < 30, f"{took:.1f} s for 3 s of CPU of two spinning threads"

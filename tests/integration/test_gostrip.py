# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on a stripped Go 1.19 program (-ldflags='-s -w'): the
runtime's bucket list polled, as with a symbol table.

No symbol names runtime.mbuckets, so bpfprof finds it in the runtime's own
code (both functions found through .gopclntab): runtime.stkbucket's
memProfile branch (`cmp typ, 1; jne; lea r, mbuckets(%rip)`) and the first
load of the zero-filled data in runtime.mProf_FlushLocked must name the same
address, and the list there is checked in the process (-p: its first buckets
must be memory-profile buckets, else setprofilebucket is probed; a command:
its first bucket, else the list is no longer polled). The address found must
be the linker's symbol (a twin built with -ldflags=-w keeps the symbol table
and the same layout), the profile must match the runtime's own (test_allocgo's
checks), and only mProf_Flush is probed (a trap per GC, none per sample).
"""
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, Waiting, alloc_attach, run_bpfprof, wl
from test_allocgo import check_against_runtime

FOUND = re.compile(r"runtime\.mbuckets found in runtime\.stkbucket's code "
                   r"\(and mProf_FlushLocked's\): 0x([0-9a-f]+)")
POLLED = re.compile(r"Go: .*; (\d+) samples from polled buckets, (\d+) polled buckets refused")


def polled(stderr):
    m = POLLED.search(stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def test_stripped_polled(tmp_path):
    """-- COMMAND: found, polled, the runtime's own profile."""
    out = tmp_path / "go.pb.gz"
    r = run_bpfprof(["--alloc", "-v", "-o", out, "--", wl("goalloc-stripped"), "memprof", 2])
    assert r.returncode == 0, r.stderr
    assert "no symbol table" in r.stderr, r.stderr
    assert FOUND.search(r.stderr), r.stderr
    assert "buckets polled each drain" in r.stderr, r.stderr
    assert "probing runtime.mProf_Flush" in r.stderr, r.stderr
    assert "probing runtime.setprofilebucket" not in r.stderr, r.stderr
    check_against_runtime(out, r.stdout, r.stderr, rate=524288)
    samples, refused = polled(r.stderr)
    assert samples > 0 and refused == 0, (samples, refused)


def test_found_address_is_the_symbol(tmp_path):
    """The address found in a -s -w build is runtime.mbuckets of the same
    program linked with its symbol table (-w alone: the same layout)."""
    go = shutil.which("go")
    if not go:
        pytest.skip("no go toolchain to build the twin")
    src = ROOT / "tests" / "workloads" / "goalloc"
    if not src.is_dir():
        pytest.skip(f"no {src}")
    # the twins must be built by the release that built the workload (the same layout)
    built = subprocess.run([go, "version", wl("goalloc-stripped")], stdout=subprocess.PIPE,
                           text=True, check=True).stdout.split()[-1]
    have = subprocess.run([go, "version"], stdout=subprocess.PIPE, text=True,
                          check=True).stdout.split()[2]
    assert have == built, f"{go} is {have}, the workload was built by {built}"
    twins = {}
    for name, flags in (("sym", "-w"), ("strip", "-s -w")):
        twins[name] = tmp_path / f"goalloc-{name}"
        subprocess.run([go, "build", f"-ldflags={flags}", "-o", str(twins[name]), "."],
                       cwd=src, check=True, timeout=300)
    nm = subprocess.run(["nm", str(twins["sym"])], stdout=subprocess.PIPE, text=True,
                        check=True).stdout
    sym = re.search(r"^([0-9a-f]+) B runtime\.mbuckets$", nm, re.M)
    assert sym, "the twin has no runtime.mbuckets"
    r = run_bpfprof(["--alloc", "-v", "-o", tmp_path / "go.pb.gz", "--", twins["strip"],
                     "memprof", 1])
    assert r.returncode == 0, r.stderr
    m = FOUND.search(r.stderr)
    assert m, r.stderr
    assert int(m.group(1), 16) == int(sym.group(1), 16), (m.group(1), sym.group(1))


def test_pid_stripped_polled(tmp_path):
    """-p: the list there at attach is checked, then polled."""
    out = tmp_path / "go.pb.gz"
    with Waiting([wl("goalloc-stripped"), "wait", "memprof", "2"]) as w:
        stderr, (stdout,), _, rc = alloc_attach([w], out)
    assert rc == 0, stderr
    assert FOUND.search(stderr) and "buckets polled each drain" in stderr, stderr
    assert "probing runtime.setprofilebucket" not in stderr, stderr
    check_against_runtime(out, stdout, stderr, rate=524288, late=5)


def test_pid_wrong_word_probed_instead(tmp_path, monkeypatch):
    """-p: a word that is not the list (as a forged stkbucket would name:
    runtime.buckhash, 64 bytes below, a pointer to the hash table) fails the
    check: setprofilebucket is probed, and the profile is still right."""
    monkeypatch.setenv("BPFPROF_TEST_GO_MBUCKETS_SHIFT", "-64")
    out = tmp_path / "go.pb.gz"
    with Waiting([wl("goalloc-stripped"), "wait", "memprof", "2"]) as w:
        stderr, (stdout,), _, rc = alloc_attach([w], out)
    assert rc == 0, stderr
    assert "holds no bucket list" in stderr and "setprofilebucket probed instead" in stderr, \
        stderr
    assert "probing runtime.setprofilebucket" in stderr, stderr
    assert "buckets polled each drain" not in stderr, stderr
    check_against_runtime(out, stdout, stderr, rate=524288, late=5)


def test_command_wrong_word_no_longer_polled(tmp_path, monkeypatch):
    """-- COMMAND: the list is empty at exec, so the check passes; the first
    bucket read from the wrong word is refused: the list is no longer polled
    (said), and nothing read from it is counted."""
    monkeypatch.setenv("BPFPROF_TEST_GO_MBUCKETS_SHIFT", "-64")
    out = tmp_path / "go.pb.gz"
    r = run_bpfprof(["--alloc", "-v", "-o", out, "--", wl("goalloc-stripped"), "memprof", 1])
    assert r.returncode == 0, r.stderr
    assert "holds no memory-profile bucket: its Go allocations no longer polled" in r.stderr, \
        r.stderr
    samples, refused = polled(r.stderr)
    assert samples == 0 and refused == 1, (samples, refused)

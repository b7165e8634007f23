# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on Go: two traps per profiled object, and only where the
runtime's layout is known.

A sampled object costs a trap at runtime.mProf_Malloc and one at
runtime.freeSpecial, whose probe reads the special record's kind byte to
tell a profiled object's record from a finalizer's (runtime.mProf_Free, which
freeSpecial calls next, is not probed); on x86-64 both probes sit on the jbe
of the function's stack check, which the kernel emulates (a trap, not a trap
and a single-step). The byte's offset in struct special
and the profile kind's value move between Go releases: bpfprof keeps a table
of the releases verified (lang/gobuildinfo.c); the others get their
allocations only (mProf_Malloc alone, no in-use values). Here:
the table's entry for the Go on this machine agrees with that Go's own
runtime (the DWARF of a binary it built, its runtime/mheap.go), and a binary
naming a release not in the table gets allocations and no in-use values.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import run_bpfprof, wl
import pprof


def dwarf_member_offset(binary, struct, member):
    """DW_AT_data_member_location of struct's member in binary's DWARF (readelf)."""
    text = subprocess.run(["readelf", "--debug-dump=info", str(binary)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=True).stdout
    m = re.search(r"DW_TAG_structure_type\)\n\s+<\w+>\s+DW_AT_name\s+: " + re.escape(struct)
                  + r"\n(.*?)\n <1>", text, re.S)
    assert m, f"no {struct} in {binary}'s DWARF"
    mm = re.search(r"DW_AT_name\s+: " + re.escape(member)
                   + r"\n\s+<\w+>\s+DW_AT_data_member_location: (\d+)", m.group(1))
    assert mm, m.group(1)
    return int(mm.group(1))


def goroot_const(name):
    root = subprocess.run(["go", "env", "GOROOT"], stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()
    src = (Path(root) / "src" / "runtime" / "mheap.go").read_text()
    m = re.search(r"^\s*" + name + r"\s*=\s*(\d+)", src, re.M)
    assert m, f"no {name} in {root}/src/runtime/mheap.go"
    return int(m.group(1))


@pytest.fixture(scope="module")
def go_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gocost") / "go.pb.gz"
    return run_bpfprof(["--alloc", "-v", "-o", out, "--", wl("goalloc"), 1])


def test_special_layout_is_this_gos(go_run):
    """The kind byte's offset and the profile kind bpfprof uses for this
    machine's Go are the ones its runtime has."""
    r = go_run
    assert r.returncode == 0, r.stderr
    m = re.search(r"built by (go1\.\d+)\S*: .*freeSpecial's special kind at \+(\d+) "
                  r"\(profile (\d+)\)", r.stderr)
    assert m, r.stderr
    assert int(m.group(2)) == dwarf_member_offset(wl("goalloc"), "runtime.special", "kind")
    assert int(m.group(3)) == goroot_const("_KindSpecialProfile")


def test_two_traps_frees_matched(go_run):
    """mProf_Malloc and freeSpecial probed, not mProf_Free, each on an
    instruction the kernel emulates (x86-64); the sweeper's frees of sampled
    objects still found in the live table."""
    r = go_run
    assert "goalloc: 2 allocator functions probed" in r.stderr, r.stderr
    assert "mProf_Free" not in r.stderr
    m = re.search(r"Go: (\d+) allocations the runtime sampled, (\d+) frees of sampled objects "
                  r"seen, (\d+) of them matched", r.stderr)
    assert m, r.stderr
    samples, seen, matched = map(int, m.groups())
    if os.uname().machine == "x86_64":  # both on the jbe of their stack check: emulated
        assert r.stderr.count("its stack check's jump, emulated") == 2, r.stderr
    # 1 s of goalloc: hundreds of samples, most swept before its end
    assert samples >= 100 and matched >= samples // 4 and matched <= seen, m.group(0)


def test_unverified_release_allocations_only(tmp_path):
    """A binary whose build information names a release whose special records
    were not verified (go1.19.8 edited to go1.18.8: the same pc-line table
    version, so only the layout table tells them apart) gets its allocations
    profiled through mProf_Malloc alone, said, and no in-use values (its
    frees are not seen: a live entry would never go)."""
    prog = tmp_path / "goalloc"
    data = bytearray(Path(wl("goalloc")).read_bytes())
    at = data.find(b"\xff Go buildinf:")
    assert at >= 0
    ver = data.find(b"go1.19", at, at + 64)
    assert ver > 0, data[at:at + 64]
    data[ver:ver + 6] = b"go1.18"
    prog.write_bytes(bytes(data))
    prog.chmod(0o755)
    out = tmp_path / "go.pb.gz"
    r = run_bpfprof(["--alloc", "-v", "-o", out, "--", prog, 1], check=False)
    assert r.returncode == 0, r.stderr
    assert "built by go1.18" in r.stderr and "special records are not known" in r.stderr, \
        r.stderr
    assert "its Go allocations profiled, their frees not" in r.stderr, r.stderr
    assert "goalloc: 1 allocator functions probed" in r.stderr, r.stderr
    m = re.search(r"Go: (\d+) allocations the runtime sampled, (\d+) frees of sampled objects "
                  r"seen, (\d+) of them matched", r.stderr)
    assert m, r.stderr
    samples, seen, matched = map(int, m.groups())
    assert samples >= 100 and seen == 0 and matched == 0, m.group(0)
    with open(out, "rb") as f:
        prof = pprof.decode(f.read())
    totals = [sum(s["value"][i] for s in prof["sample"]) for i in range(4)]
    assert totals[1] > 0 and totals[2] == 0 and totals[3] == 0, totals

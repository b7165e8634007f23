# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc on Go: one trap per sampled object, and only where the
runtime's layout is known.

A sampled object costs a trap at runtime.setprofilebucket(p, b), counted by
bucket in BPF; the bucket's stack and size are read from the process once,
its in-use counts (the runtime's own) at each drain: no free is probed. On
x86-64 the probe sits on the jbe of the function's stack check, which the
kernel emulates (a trap, not a trap and a single-step). The bucket's layout
moves between Go releases: bpfprof keeps a table of the releases verified
(lang/gobuildinfo.c); the others get their allocations only (mProf_Malloc
alone, no in-use values). Here: the table's entry for the Go on this
machine agrees with that Go's own runtime (the DWARF of a binary it built,
its runtime/mprof.go), and a binary naming a release not in the table gets
allocations and no in-use values.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import go_release_edited, run_bpfprof, wl
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


def dwarf_struct_size(binary, struct):
    text = subprocess.run(["readelf", "--debug-dump=info", str(binary)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=True).stdout
    m = re.search(r"DW_TAG_structure_type\)\n\s+<\w+>\s+DW_AT_name\s+: " + re.escape(struct)
                  + r"\n\s+<\w+>\s+DW_AT_byte_size\s+: (\d+)", text)
    assert m, f"no {struct} in {binary}'s DWARF"
    return int(m.group(1))


def goroot_src(name):
    root = subprocess.run(["go", "env", "GOROOT"], stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()
    return (Path(root) / "src" / "runtime" / name).read_text()


def test_bucket_layout_is_this_gos(go_run):
    """The bucket layout bpfprof reads for this machine's Go (its size and
    nstk fields, the stack after the header) is its runtime's: the DWARF of a
    binary it built; memProfile is 1 and maxStack 32 in its mprof.go."""
    r = go_run
    assert r.returncode == 0, r.stderr
    m = re.search(r"built by (go1\.\d+)\S*: setprofilebucket's bucket in argument (\d+), read "
                  r"from the process \(bucket size at \+(\d+), nstk at \+(\d+), stack at "
                  r"\+(\d+)\)", r.stderr)
    assert m, r.stderr
    b = wl("goalloc")
    assert int(m.group(3)) == dwarf_member_offset(b, "runtime.bucket", "size")
    assert int(m.group(4)) == dwarf_member_offset(b, "runtime.bucket", "nstk")
    assert int(m.group(5)) == dwarf_struct_size(b, "runtime.bucket")
    assert dwarf_member_offset(b, "runtime.bucket", "typ") == 16  # lang/gobuildinfo.c's
    src = goroot_src("mprof.go")
    assert re.search(r"^\s*memProfile bucketType = 1 \+ iota", src, re.M)
    assert re.search(r"^\s*maxStack = 32$", src, re.M)
    # active {allocs, frees, alloc_bytes, free_bytes} first in memRecord
    assert dwarf_member_offset(b, "runtime.memRecord", "active") == 0
    assert re.search(r"allocs, frees\s+uintptr\n\s+alloc_bytes, free_bytes uintptr", src)
    # setprofilebucket(p, b): b the second integer argument (BX)
    assert int(m.group(2)) == 1
    assert re.search(r"^func setprofilebucket\(p unsafe\.Pointer, b \*bucket\)", goroot_src("mheap.go"),
                     re.M)


def test_no_trap_per_sample(go_run):
    """A symbol table: the runtime's bucket list is polled; mProf_Flush alone
    is probed (a trap per GC; not mProf_Malloc, freeSpecial, mProf_Free), on
    an instruction the kernel emulates (x86-64); every sample is counted from
    the buckets read from the process, none refused."""
    r = go_run
    assert "goalloc: 1 allocator functions probed" in r.stderr, r.stderr
    assert "probing runtime.mProf_Flush" in r.stderr and "mProf_Malloc" not in r.stderr
    assert "freeSpecial" not in r.stderr and "setprofilebucket at" not in r.stderr
    m = re.search(r"Go: (\d+) allocations the runtime sampled, (\d+) frees of sampled objects "
                  r"seen, (\d+) of them matched", r.stderr)
    assert m, r.stderr
    samples, seen, matched = map(int, m.groups())
    if os.uname().machine == "x86_64":  # on the jbe of its stack check: emulated
        assert r.stderr.count("its stack check's jump, emulated") == 1, r.stderr
    assert samples >= 100 and seen == 0 and matched == 0, m.group(0)
    m = re.search(r"Go: (\d+) profile buckets read from the processes \((\d+) reads, [\d.]+ ms\), "
                  r"(\d+) samples of buckets refused.*; (\d+) samples from polled buckets, "
                  r"(\d+) polled buckets refused, (\d+) GC cycles seen", r.stderr)
    assert m and int(m.group(1)) > 0 and int(m.group(3)) == 0, r.stderr
    polled, refused, gcs = int(m.group(4)), int(m.group(5)), int(m.group(6))
    assert polled == samples and refused == 0, m.group(0)
    # goalloc collects often, yet a trap per GC is far fewer than one per
    # sample: about 8 samples a GC at the 4 MB minimum heap (its pacing, not
    # the host's load), so half of the samples leaves 4x headroom for a Go or
    # workload change and still fails a trap per sample (gcs >= samples)
    assert 0 < gcs < samples / 2, m.group(0)
    with open(r.args[r.args.index("-o") + 1], "rb") as f:
        prof = pprof.decode(f.read())
    totals = [sum(s["value"][i] for s in prof["sample"]) for i in range(4)]
    assert totals[1] > 0 and totals[3] > 0, totals  # allocations and in-use


def test_unverified_release_allocations_only(tmp_path):
    """A binary whose build information names a release whose special records
    were not verified (go1.19.8 edited to go1.18.8: the same pc-line table
    version, so only the layout table tells them apart) gets its allocations
    profiled through mProf_Malloc alone, said, and no in-use values (its
    frees are not seen: a live entry would never go)."""
    prog = tmp_path / "goalloc"
    go_release_edited(wl("goalloc"), prog, "go1.18")
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

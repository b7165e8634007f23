# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc: where free is probed.

glibc's free (2.36, Debian 12) begins with its NULL test, test %rdi,%rdi;
je (48 85 ff 0f 84 rel32, or 74 rel8), instructions x86 uprobes single-step,
then a push the kernel emulates: bpfprof probes free at that push (several
times cheaper per call) and still matches the frees of sampled blocks.
The expected site is worked out here from the C library's own bytes (its
dynamic symbol table and program headers, read independently of bpfprof).
"""
import platform
import re
import struct
import subprocess

import pytest

from conftest import run_bpfprof, site_values, wl
from test_alloc import N, ROUNDS, SIZE, truth


def file_offset(path, name):
    """The file offset of the dynamic symbol name in the ELF file path."""
    syms = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                          text=True, check=True).stdout
    addr = next(int(a, 16) for a, _, n in (ln.split()[:3] for ln in syms.splitlines()
                                           if len(ln.split()) >= 3)
                if n.split("@")[0] == name)
    with open(path, "rb") as f:
        ehdr = f.read(64)
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            typ, _, off, vaddr, _, filesz = struct.unpack("<IIQQQQ", f.read(40))
            if typ == 1 and vaddr <= addr < vaddr + filesz:
                return addr - vaddr + off
    raise AssertionError(f"{name} at {addr:#x} in no PT_LOAD of {path}")


def expected_skip(code):
    """Where free should be probed, from its first bytes (the rule of collector/freeprobe.h)."""
    if code[:3] != b"\x48\x85\xff":
        return 0
    at = 5 if code[3] == 0x74 else 9 if code[3:5] == b"\x0f\x84" else 0
    if not at:
        return 0
    if 0x50 <= code[at] <= 0x57 or (code[at] == 0x41 and 0x50 <= code[at + 1] <= 0x57):
        return at
    return 0


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64's uprobe emulation")
def test_free_probed_past_its_null_test(tmp_path):
    out = tmp_path / "heap.pb.gz"
    r = run_bpfprof(["--alloc=16K", "-v", "-o", out, "--", wl("allocsites"), ROUNDS, N, SIZE])
    m = re.search(r"probing free at (/\S+)\+0x([0-9a-f]+) in", r.stderr)
    assert m, r.stderr
    libc, probed = m.group(1), int(m.group(2), 16)
    entry = file_offset(libc, "free")
    with open(libc, "rb") as f:
        f.seek(entry)
        code = f.read(16)
    skip = expected_skip(code)
    assert probed == entry + skip, \
        f"free probed at {probed:#x}, its entry {entry:#x}, bytes {code.hex()}: want +{skip}"
    said = f"free probed past its NULL test at +{skip}"
    assert (said in r.stderr) == bool(skip), r.stderr
    # The frees are matched there: nothing in use at the site that frees all it allocates.
    t = truth(r.stdout)
    _, v = site_values(out)
    assert t["site_freed"][2] == 0 and "site_freed" in v, (t, v)
    assert v["site_freed"][2] == 0 and v["site_freed"][3] == 0, v["site_freed"]
    assert v["site_kept"][3] > 0, v["site_kept"]

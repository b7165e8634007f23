# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Comparing bpfprof's user stacks with `perf record --call-graph=dwarf`.

perf copies 8 KiB of user stack per sample and unwinds it afterwards with
libdw: complete, heavy, and the reference the .eh_frame walker is held to.

"Reaching the bottom" means reaching glibc's __libc_start_call_main (the
frame below main). On Debian it is a local symbol, absent from .dynsym, so
perf names it from libc6-dbg and bpfprof (symtab/dynsym only) prints
"libc.so.6+0xADDR": such a frame counts when ADDR - 1 lies inside the
function, whose range comes from the libc6-dbg debug file by build id.
"""
import os
import re
import subprocess
from pathlib import Path

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no build id"
    return m.group(1)


def debug_file(path):
    bid = build_id(path)
    dbg = Path("/usr/lib/debug/.build-id") / bid[:2] / (bid[2:] + ".debug")
    assert dbg.exists(), f"{dbg} is missing: install libc6-dbg (tools/install-deps.sh)"
    return dbg


def symbol_range(path, name):
    """[start, end) of a function in path's separate debug file."""
    out = subprocess.run(["nm", "-S", "--defined-only", str(debug_file(path))],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            start, size = int(f[0], 16), int(f[1], 16)
            return start, start + size
    raise AssertionError(f"{name} not found in the debug file of {path}")


class Bottom:
    """Recognises the __libc_start_call_main frame in bpfprof's folded output."""

    def __init__(self):
        self.start, self.end = symbol_range(os.path.realpath(LIBC), "__libc_start_call_main")
        self.libc = os.path.basename(os.path.realpath(LIBC))

    def is_bottom_frame(self, frame):
        if frame == "__libc_start_call_main":
            return True
        m = re.fullmatch(r"(.+)\+0x([0-9a-f]+)", frame)
        if not m or m.group(1) not in ("libc.so.6", self.libc):
            return False
        return self.start < int(m.group(2), 16) <= self.end  # a return address

    def reaches(self, stack):
        return any(self.is_bottom_frame(f) for f in stack.split(";"))


def start_perf(pid, seconds, data):
    return subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "99", "--call-graph=dwarf",
                             "-p", str(pid), "-o", str(data), "--", "sleep", str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_bases = {}


def exec_base(path):
    """perf prints addresses in a non-PIE executable relative to its first
    segment; bpfprof prints ELF virtual addresses (what addr2line takes)."""
    if path not in _bases:
        base = 0
        if path.startswith("/") and os.path.exists(path):
            out = subprocess.run(["readelf", "-hlW", path], capture_output=True, text=True).stdout
            if re.search(r"Type:\s+EXEC", out):
                loads = [int(m.group(1), 16) for m in
                         re.finditer(r"^\s+LOAD\s+0x[0-9a-f]+ (0x[0-9a-f]+)", out, re.M)]
                base = min(loads) if loads else 0
        _bases[path] = base
    return _bases[path]


def perf_samples(data):
    """[[(addr, sym, dso basename), ...leaf first], ...] of user frames per sample."""
    out = subprocess.run(["perf", "script", "-i", str(data), "--no-inline", "-F", "ip,sym,dso"],
                         capture_output=True, text=True, timeout=600).stdout
    samples = []
    for block in out.split("\n\n"):
        frames = []
        for line in block.strip().splitlines():
            m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
            if not m:
                continue
            dso = m.group(3)
            if dso.startswith("[kernel"):
                continue
            sym = re.sub(r"\+0x[0-9a-f]+$", "", m.group(2))
            frames.append((int(m.group(1), 16) + exec_base(dso), sym, os.path.basename(dso)))
        if frames:
            samples.append(frames)
    return samples


def perf_reaches(frames):
    return any(sym == "__libc_start_call_main" for _, sym, _ in frames)


def ours_user_chain(stack):
    """bpfprof folded stack -> user frames, leaf first (comm and kernel frames dropped)."""
    fr = [f for f in stack.split(";")[1:] if not f.endswith("_[k]")]
    return list(reversed(fr))


def perf_token_set(frame):
    """What bpfprof may print for a perf caller frame: its name, or module+0x(return address).
    perf shows a caller at return address - 1."""
    addr, sym, dso = frame
    toks = {f"{dso}+0x{addr + 1:x}"}
    if sym and sym != "[unknown]":
        toks.add(sym)
    return toks


def unnamed_in_function(ours, frame):
    """bpfprof names a frame no symbol covers after the start of its function
    (its .eh_frame FDE): module+0xSTART, where perf prints the caller's own
    address. True if ours is such a name for perf's unnamed frame: same
    module, a start at or below the return address, within 1 MiB of it."""
    addr, sym, dso = frame
    if sym and sym != "[unknown]":
        return False
    mod, sep, off = ours.rpartition("+0x")
    if not sep or mod != dso:
        return False
    try:
        start = int(off, 16)
    except ValueError:
        return False
    return start <= addr + 1 < start + (1 << 20)


def chain_to_bottom(chain, is_bottom):
    """Callers of the leaf up to and including the bottom frame; None if it is not reached."""
    for i, f in enumerate(chain):
        if is_bottom(f):
            return chain[1:i + 1]
    return None


def hottest_perf_chains(samples, top=5, min_share=0.03):
    """Most frequent caller chains (leaf excluded, up to __libc_start_call_main)."""
    counts = {}
    for frames in samples:
        chain = chain_to_bottom(frames, lambda f: f[1] == "__libc_start_call_main")
        if chain is None:
            continue
        key = tuple(chain)
        counts[key] = counts.get(key, 0) + 1
    n = len(samples)
    hot = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
    return [(list(k), c / n) for k, c in hot if c / n >= min_share]


def ours_has_chain(folded, perf_chain, bottom):
    """True if some bpfprof stack has exactly perf_chain as its caller chain."""
    for stack in folded:
        chain = chain_to_bottom(ours_user_chain(stack), bottom.is_bottom_frame)
        if chain is None or len(chain) != len(perf_chain):
            continue
        if all(o in perf_token_set(p) or unnamed_in_function(o, p) or
               p[1] == "__libc_start_call_main" and bottom.is_bottom_frame(o)
               for o, p in zip(chain, perf_chain)):
            return True
    return False

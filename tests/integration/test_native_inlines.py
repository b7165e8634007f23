# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Inlined frames and source lines of native code, from DWARF (issue 41 items
1 and 3): a -O2 -g C++ program whose hot work is in two always-inlined
functions, 3/4 and 1/4 of the time (tests/workloads/inlwork.cc), shows both
as inlined frames under bp_inl_outer(double) with their shares; --lines splits
them by source line; pprof carries the chain of Lines with files and lines;
the binary stripped of everything, its debug file under /usr/lib/debug's
.build-id, is named the same; a Rust program (v0 and legacy mangling) too;
a tenant's binary with a corrupt .debug_info is named without inlines.
"""
import re
import subprocess
from pathlib import Path

import pytest
from pprof import decode, strings

from conftest import (BPFPROF, Sampled, Workload, as_tenant, assert_count_at_least, assert_few,
                      assert_most, assert_share, command_cpu, count_with, parse_folded,
                      run_bpfprof, strip_with_debug_file, tenant_run, total, wl)

FREQ = 99  # bpfprof's default -F
ROOT = Path(__file__).resolve().parents[1]
INL_SRC = ROOT / "workloads" / "inlwork.cc"
RS_SRC = ROOT / "workloads" / "rust" / "inlrs.rs"

OUTER = "bp_inl_outer(double)"
HEAVY = "bp_inl_heavy(double)"
LIGHT = "bp_inl_light(double)"


def src_line(path, marker):
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(f"{marker!r} not in {path}")


def by_comm(folded, comm):
    return {s: c for s, c in folded.items() if s.split(";")[0] == comm}


def check_shares(folded, comm, what):
    """Both inlined functions as frames of their own under bp_inl_outer, with
    the shares of the work: heavy 3/4, light 1/4 (the rest is a few
    instructions of loop set-up)."""
    mine = by_comm(folded, comm)
    n = total(mine)
    heavy = count_with(mine, lambda s: s.endswith(f";{OUTER};{HEAVY}_[i]"))
    light = count_with(mine, lambda s: s.endswith(f";{OUTER};{LIGHT}_[i]"))
    top = "\n".join(f"{c} {s}" for s, c in sorted(mine.items(), key=lambda x: -x[1])[:8])
    assert n >= 50, f"{what}: {n} samples\n{top}"
    assert_share(heavy / n, 0.75, n, f"{what}: {HEAVY} under {OUTER}\n{top}", floor=0.03)
    assert_share(light / n, 0.25, n, f"{what}: {LIGHT} under {OUTER}\n{top}", floor=0.03)
    return n


def test_inlined_functions_are_frames_with_their_shares():
    with Workload(wl("inlwork"), 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120], [w.pid], until_cpu=3, timeout=180)
    folded = parse_folded(p.stdout)
    n = check_shares(folded, "inlwork", "inlwork")
    assert_count_at_least(n, FREQ * p.cpu[w.pid], "inlwork")


def test_lines_split_inlined_frames_and_pprof_chain(tmp_path):
    """One run to pprof; folded --lines and the pprof Location's Line[] from it."""
    out = tmp_path / "inl.pb.gz"
    with Workload(wl("inlwork"), 300) as w:
        Sampled(["-p", w.pid, "-d", 120, "-o", out], [w.pid], until_cpu=2, timeout=180)
    heavy_lines = {src_line(INL_SRC, "// bp_inl_heavy loop"),
                   src_line(INL_SRC, "// bp_inl_heavy loop") + 1}
    light_lines = {src_line(INL_SRC, "// bp_inl_light loop"),
                   src_line(INL_SRC, "// bp_inl_light loop") + 1}
    call_heavy = src_line(INL_SRC, "// bp_inl_outer calls heavy")
    call_light = src_line(INL_SRC, "// bp_inl_outer calls light")

    # folded --lines: the inlined frame at its own line, the caller at the call's.
    lines = parse_folded(run_bpfprof(["convert", "--lines", out]).stdout)
    mine = by_comm(lines, "inlwork")
    n = total(mine)
    pat = re.compile(r";bp_inl_outer\(double\) \(inlwork\.cc:(\d+)\);"
                     r"(bp_inl_heavy|bp_inl_light)\(double\) \(inlwork\.cc:(\d+)\)_\[i\]$")
    good = 0
    for s, c in mine.items():
        m = pat.search(s)
        if not m:
            continue
        call, fn, line = int(m.group(1)), m.group(2), int(m.group(3))
        if fn == "bp_inl_heavy":
            assert call == call_heavy and line in heavy_lines, s
        else:
            assert call == call_light and line in light_lines, s
        good += c
    assert_most(good, n, f"inlined frames with their lines: {sorted(mine.items())[:6]}")

    # pprof: a Location's Line[] is the chain, innermost first, with files and lines.
    p = decode(out.read_bytes())
    chains = {}
    for loc in p["location"].values():
        if len(loc["lines"]) < 2:
            continue
        names = []
        for ln in loc["lines"]:
            fn = p["function"][ln.get(1)]
            names.append((strings(p, fn.get(2, 0)), strings(p, fn.get(4, 0)), ln.get(2, 0),
                          fn.get(5, 0)))
        chains.setdefault(tuple(x[0] for x in names), []).append(names)
    assert (HEAVY, OUTER) in chains and (LIGHT, OUTER) in chains, list(chains)[:10]
    for (inner, outer) in [(HEAVY, OUTER), (LIGHT, OUTER)]:
        for chain in chains[(inner, outer)]:
            (_, ifile, iline, istart), (_, ofile, oline, ostart) = chain
            assert ifile.endswith("/inlwork.cc") and ofile.endswith("/inlwork.cc"), chain
            want = heavy_lines if inner == HEAVY else light_lines
            assert iline in want, chain
            assert oline == (call_heavy if inner == HEAVY else call_light), chain
            # Functions carry their first line (DW_AT_decl_line).
            assert istart == src_line(INL_SRC, "inline double " + inner.split("(")[0]), chain
            assert ostart == src_line(INL_SRC, "double bp_inl_outer(double x)"), chain


def test_stripped_binary_inlines_from_build_id_debug_file(tmp_path):
    """Stripped of everything (no symbols, no DWARF, no debug link), its debug
    file only under /usr/lib/debug/.build-id (a tmpfs in a private mount
    namespace, so the machine's own is untouched): named with both inlined
    frames and their shares, as the -g binary."""
    binp = tmp_path / "inlstrip"
    dbg = tmp_path / "inlstrip.debug"
    bid = strip_with_debug_file(wl("inlwork"), binp, dbg)
    out_plain = tmp_path / "plain.folded"
    out_dbg = tmp_path / "dbg.folded"
    script = f"""set -e
mkdir -p /usr/lib/debug
mount -t tmpfs tmpfs /usr/lib/debug
{BPFPROF} -o {out_plain} -- {binp} 1
mkdir -p /usr/lib/debug/.build-id/{bid[:2]}
cp {dbg} /usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug
exec {BPFPROF} -v -o {out_dbg} -- {binp} 3
"""
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    plain = by_comm(parse_folded(out_plain.read_text()), "inlstrip")
    # Without the debug file: no names, no inlines (the test's premise).
    assert total(plain) > 0 and not any(OUTER in s for s in plain), plain
    folded = parse_folded(out_dbg.read_text())
    n = check_shares(folded, "inlstrip", "stripped, debug file by build id")
    assert_count_at_least(n, FREQ * command_cpu(p.stderr), "inlstrip")


def rust_binary(tmp_path, mangling):
    exe = tmp_path / f"inlrs-{mangling}"
    cmd = ["rustc", "-C", "opt-level=2", "-g", "-C", "force-frame-pointers=yes",
           "-C", f"symbol-mangling-version={mangling}", str(RS_SRC), "-o", str(exe)]
    env = None
    if mangling == "legacy":  # stable rustc asks for unstable options to choose it
        import os
        env = dict(os.environ, RUSTC_BOOTSTRAP="1")
        cmd[1:1] = ["-Z", "unstable-options"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    prefix = "_ZN5inlrs11bp_rs_outer" if mangling == "legacy" else "_RNv"
    assert any(prefix in l and "bp_rs_outer" in l for l in syms.splitlines()), syms[:2000]
    return exe


@pytest.mark.parametrize("mangling", ["v0", "legacy"])
def test_rust_inlined_function_named_with_lines(tmp_path, mangling):
    exe = rust_binary(tmp_path, mangling)
    out = tmp_path / "rs.pb.gz"
    with Workload(exe, 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "-o", out], [w.pid], until_cpu=2, timeout=180)
    comm = exe.name[:15]
    folded = by_comm(parse_folded(run_bpfprof(["convert", out]).stdout), comm)
    n = total(folded)
    assert_count_at_least(n, FREQ * p.cpu[w.pid], comm)
    # heavy, inlined into bp_rs_outer; below it what core inlined into heavy.
    under = re.compile(r";inlrs::main;inlrs::bp_rs_outer;inlrs::heavy_\[i\](;[^;]+_\[i\])*$")
    top = "\n".join(f"{c} {s}" for s, c in sorted(folded.items(), key=lambda x: -x[1])[:5])
    assert_most(count_with(folded, lambda s: under.search(s) is not None), n,
                f"inlrs::heavy_[i] under inlrs::bp_rs_outer\n{top}")
    assert not any(re.search(r"(^|;)_(ZN|R)", s) for s in folded), top
    # Lines: heavy at its loop's lines, bp_rs_outer at its call.
    lines = by_comm(parse_folded(run_bpfprof(["convert", "--lines", out]).stdout), comm)
    body = {src_line(RS_SRC, "// heavy's line"), src_line(RS_SRC, "// heavy's line") - 1}
    call = src_line(RS_SRC, "// bp_rs_outer calls heavy")
    pat = re.compile(r";inlrs::bp_rs_outer \(inlrs\.rs:(\d+)\);inlrs::heavy \(inlrs\.rs:(\d+)\)_\[i\]")
    good = sum(c for s, c in lines.items()
               for m in [pat.search(s)] if m and int(m.group(1)) == call
               and int(m.group(2)) in body)
    assert_most(good, n, f"lines of heavy {body} and its call {call}: "
                f"{sorted(lines.items(), key=lambda x: -x[1])[:3]}", share=0.8)


# Run by the tenant: overwrites .debug_info of argv[1] in place, all 0xff, or
# (argv[2] == "1") a byte pattern that keeps the first unit's header.
CORRUPT = r"""
import re, subprocess, sys
path, pattern = sys.argv[1], sys.argv[2] == "1"
out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
m = re.search(r"\.debug_info\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
off, size = int(m.group(1), 16), int(m.group(2), 16)
data = bytearray(open(path, "rb").read())
for i in range(12 if pattern else 0, size):
    data[off + i] = ((i * 37 + (i >> 3)) & 0xff) if pattern else 0xff
open(path, "wb").write(bytes(data))
"""


@pytest.mark.parametrize("pattern", [False, True])
def test_tenant_corrupt_debug_info_named_without_inlines(tenant_dir, pattern):
    """A tenant's program whose .debug_info is garbage (its own bytes):
    root's bpfprof names its functions from the symbol table, adds no
    inlined frame the garbage cannot give, and runs to the end."""
    exe = tenant_dir / "inlbad"
    tenant_run(["cp", wl("inlwork"), exe], check=True)
    tenant_run(["/usr/bin/python3", "-c", CORRUPT, exe, "1" if pattern else "0"], check=True)
    with Workload(*as_tenant([exe, 300])) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "-v"], [w.pid], until_cpu=2, timeout=180)
    mine = by_comm(parse_folded(p.stdout), "inlbad")
    n = total(mine)
    assert_count_at_least(n, FREQ * p.cpu[w.pid], "inlbad")
    top = "\n".join(f"{c} {s}" for s, c in sorted(mine.items(), key=lambda x: -x[1])[:5])
    assert_most(count_with(mine, lambda s: f";main;{OUTER}" in s), n, f"{OUTER} named\n{top}")
    if not pattern:  # no unit can be read: no inlined frame at all in the binary
        assert not any(HEAVY in s or LIGHT in s for s in mine), top
    # Whatever the garbage makes of names, they are frames of bp_inl_outer's samples.
    assert_few(count_with(mine, lambda s: "inlbad+0x" in s), n, f"unnamed\n{top}")

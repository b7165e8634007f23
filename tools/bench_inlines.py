#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_inlines.py - what naming native addresses with their inlined frames
and source lines costs (issue 41): first sight of a large -g file.

Addresses: up to --per-function of them spread inside every function of the
file's symbol table (nm -S), --limit in all, in a random order. Then, each
in one process over all of them, timed with /usr/bin/time (CPU, peak RSS):
  build/tools/inlbench FILE ADDRS  bpfprof's reader (sym/dwinline.c): the
                                   debug sections read, units indexed, each
                                   address's unit walked (cold), then the
                                   cache (warm); and the names alone from the
                                   symbol table (the cost without DWARF)
  addr2line -i -f -C -e FILE       binutils, the same addresses on stdin
  llvm-symbolizer --inlining       LLVM's

Usage: tools/bench_inlines.py [--file PATH] [--limit 20000] [--per-function 3]
Default file: the largest libpython*.so with .debug_info under ~/.pyenv
(a -g build of CPython: ~24 MiB of debug sections, 60,000 inlined calls).
Prints a Markdown table.
"""
import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def default_file():
    best = None
    for f in glob.glob(os.path.expanduser("~/.pyenv/versions/*/lib/libpython3*.so.1.0")):
        out = subprocess.run(["readelf", "-SW", f], capture_output=True, text=True).stdout
        if ".debug_info" in out and (not best or os.path.getsize(f) > os.path.getsize(best)):
            best = f
    return best


def addresses(path, per, limit):
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True).stdout
    addrs = set()
    for line in out.splitlines():
        m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tTwW] ", line)
        if not m:
            continue
        start, size = int(m.group(1), 16), int(m.group(2), 16)
        for k in range(per):
            addrs.add(start + size * k // per)
    addrs = sorted(addrs)
    random.Random(41).shuffle(addrs)
    return addrs[:limit]


def timed(cmd, stdin=None):
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M"] + cmd, stdin=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)", r.stderr)
    if r.returncode or not m:
        sys.exit(f"{cmd[0]} failed: {r.stderr[-2000:]}")
    wall, user, sys_, rss = float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))
    return r.stdout, user + sys_, rss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file")
    ap.add_argument("--limit", type=int, default=20000)
    ap.add_argument("--per-function", type=int, default=3)
    a = ap.parse_args()
    path = a.file or default_file()
    if not path:
        sys.exit("no file given and no -g libpython under ~/.pyenv")
    bench = ROOT / "build" / "tools" / "inlbench"
    if not bench.exists():
        sys.exit("build/tools/inlbench is missing: make build/tools/inlbench")
    addrs = addresses(path, a.per_function, a.limit)
    with tempfile.NamedTemporaryFile("w", suffix=".addrs", delete=False) as f:
        f.write("".join(f"{x:x}\n" for x in addrs))
        af = f.name
    out, cpu, rss = timed([str(bench), path, af])
    kv = dict(x.split("=") for x in out.split())
    rows = [("bpfprof (dwinline), cold: open + index + every address",
             float(kv["open_s"]) + float(kv["cold_s"]), rss,
             f"{kv['frames']} frames, {kv['inlined']} inlined; held {kv['held_mib']} MiB")]
    rows.append(("... of which opening (debug sections read)", float(kv["open_s"]), None, ""))
    rows.append(("... warm (cached answers)", float(kv["warm_s"]), None, ""))
    rows.append(("names alone, symbol table (no DWARF)", float(kv["symtab_s"]), None,
                 f"{kv['named']} named"))
    with open(af) as f:
        out, cpu2, rss2 = timed(["addr2line", "-i", "-f", "-C", "-a", "-e", path], stdin=f)
    rows.append(("addr2line -i -f -C", cpu2, rss2, f"{out.count(chr(10))} lines out"))
    with open(af) as f:
        out, cpu3, rss3 = timed(["llvm-symbolizer", "--inlining", "--demangle",
                                 f"--obj={path}"], stdin=f)
    rows.append(("llvm-symbolizer --inlining", cpu3, rss3, f"{out.count(chr(10))} lines out"))
    size = sum(int(m.group(1), 16) for m in re.finditer(
        r"\.z?debug_\S+\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)",
        subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout))
    print(f"{path}: {size / 2**20:.1f} MiB of debug sections; {len(addrs)} addresses\n")
    print("| | CPU s | peak RSS MiB | |")
    print("|---|---:|---:|---|")
    for name, c, r, note in rows:
        print(f"| {name} | {c:.3f} | {'' if r is None else f'{r:.0f}'} | {note} |")
    os.unlink(af)


if __name__ == "__main__":
    main()

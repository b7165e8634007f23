# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Go binaries: names from .gopclntab when the symbol tables are stripped
(-ldflags="-s -w", as releases ship), complete stacks from the pcsp tables
(Go omits the frame of small leaves, which loses their caller in a
frame-pointer walk), source lines in pprof, inlined functions as frames.

The workload (tests/workloads/gohot) splits its work 7:3:2 between
main.alphaLeaf, main.betaLeaf and main.gammaLeaf (called from
main.viaInlined, which the compiler inlines into main.main).
"""
import math
import re
import subprocess
from pathlib import Path

from conftest import (Sampled, Workload, assert_count_at_least, assert_few, assert_most, count_with,
                      cpu_seconds, parse_folded, run_bpfprof, total, wl)

SECONDS = 6
HZ = 99  # bpfprof's default -F; samples are compared with the workload's CPU time


LEAVES = ("main.alphaLeaf", "main.betaLeaf", "main.gammaLeaf")
CHAINS = {
    "main.alphaLeaf": ";runtime.main;main.main;main.alphaLeaf",
    "main.betaLeaf": ";runtime.main;main.main;main.betaLeaf",
    "main.gammaLeaf": ";runtime.main;main.main;main.viaInlined_[i];main.gammaLeaf",
}


def leaf_counts(folded, comm):
    mine = {s: c for s, c in folded.items() if s.split(";")[0] == comm}
    return {leaf: count_with(mine, lambda s, leaf=leaf: s.endswith(";" + leaf))
            for leaf in LEAVES}, total(mine)


def test_stripped_named_and_complete_like_unstripped():
    full, stripped = wl("gohot"), wl("gohot-stripped")
    # Until the two got 2 x SECONDS of CPU time, however busy the machine.
    with Workload(full, 600, cpu=0) as a, Workload(stripped, 600, cpu=1) as b:
        p = Sampled(["-U", "-d", 300, "-p", f"{a.pid},{b.pid}"], [a.pid, b.pid],
                    until_cpu=2 * SECONDS, timeout=360)
        want = {"gohot": HZ * p.cpu[a.pid], "gohot-stripped": HZ * p.cpu[b.pid]}
    folded = parse_folded(p.stdout)
    counts = {}
    for comm in ("gohot", "gohot-stripped"):
        mine = {s: c for s, c in folded.items() if s.split(";")[0] == comm}
        n = total(mine)
        assert_count_at_least(n, want[comm], comm)
        # No unnamed frames of the Go binary itself (other modules: the vdso).
        unnamed = count_with(mine, lambda s: f"{comm}+0x" in s)
        assert_few(unnamed, n, f"{comm}: samples with unnamed frames")
        # Complete: the leaf's caller main.main is there (frame pointers lose it).
        complete = sum(c for s, c in mine.items()
                       if any(s.endswith(chain) for chain in CHAINS.values()))
        assert_most(complete, n, f"{comm}: complete samples\n" +
                    "\n".join(f"{c} {s}" for s, c in sorted(mine.items(), key=lambda x: -x[1])[:10]))
        counts[comm] = leaf_counts(folded, comm)
    # The stripped build has the unstripped build's shares, and both the design's.
    (ca, na), (cb, nb) = counts["gohot"], counts["gohot-stripped"]
    work = {"main.alphaLeaf": 7, "main.betaLeaf": 3, "main.gammaLeaf": 2}
    for leaf in LEAVES:
        pa, pb = ca[leaf] / na, cb[leaf] / nb
        sd = math.sqrt(pa * (1 - pa) / na + pb * (1 - pb) / nb)
        assert abs(pa - pb) <= 4 * sd + 0.01, (leaf, pa, pb, sd)
        # The design's share, with room for loop overhead outside the leaves.
        want = work[leaf] / 12
        p_all = (ca[leaf] + cb[leaf]) / (na + nb)
        sd1 = math.sqrt(want * (1 - want) / (na + nb))
        assert abs(p_all - want) <= 4 * sd1 + 0.06, (leaf, p_all, want)


def test_goroutines_complete():
    """Goroutines on other threads: runtime.goexit;main.main.func1;main.work;leaf."""
    with Workload(wl("gohot-stripped"), 600, 2) as w:
        p = Sampled(["-U", "-d", 300, "-p", w.pid], [w.pid], until_cpu=SECONDS, timeout=360)
        want = HZ * p.cpu[w.pid]
    folded = parse_folded(p.stdout)
    n = total(folded)
    assert_count_at_least(n, want, "gohot-stripped")
    done = count_with(folded, lambda s: re.search(
        r";runtime\.goexit;main\.main\.func1;main\.work;(main\.alphaLeaf|main\.betaLeaf|"
        r"main\.viaInlined_\[i\];main\.gammaLeaf)$", s) is not None)
    assert_most(done, n, "complete goroutine stacks\n" + p.stdout)


def test_pprof_lines_and_inlined(tmp_path):
    out = tmp_path / "go.pb.gz"
    with Workload(wl("gohot-stripped"), 60) as w:
        run_bpfprof(["-U", "-d", SECONDS, "-p", w.pid, "-o", out])
    lines = {}
    main_go = Path(__file__).resolve().parents[1] / "workloads" / "gohot" / "main.go"
    for i, text in enumerate(main_go.read_text().splitlines(), 1):
        lines.setdefault(text.strip(), i)
    top = subprocess.run(["go", "tool", "pprof", "-lines", "-top", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    # The leaves' loop lines, as go tool pprof prints them.
    alpha = [l for l in top.stdout.splitlines() if " main.alphaLeaf " in l]
    assert alpha, top.stdout
    body = {lines["s += uint64(i)*7 ^ s>>3"], lines["for i := 0; i < n; i++ {"]}
    seen = {int(m.group(1)) for l in alpha for m in [re.search(r"main\.go:(\d+)", l)] if m}
    assert seen & body, (seen, body, top.stdout)
    # main.viaInlined is a line of main.main's location: pprof shows it with its line.
    tree = subprocess.run(["go", "tool", "pprof", "-lines", "-traces", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert re.search(r"main\.viaInlined .*main\.go:%d" % lines["return gammaLeaf(n) + 1"],
                     tree.stdout), tree.stdout[:3000]
    # The folded conversion of the same file marks it inlined.
    folded = run_bpfprof(["convert", "-f", "folded", out]).stdout
    assert "main.main;main.viaInlined_[i];main.gammaLeaf" in folded


ESBUILD = Path(__file__).resolve().parents[1] / "node_modules" / "@esbuild" / "linux-x64" / \
    "bin" / "esbuild"


def test_release_binary_of_a_recent_go(tmp_path):
    """esbuild as npm ships it: stripped, built by Go 1.26 (the 1.20+ table
    layout, moduledata in its own .go.module section, inline trees inside
    .gopclntab). Named, complete to runtime.goexit, inlined frames."""
    assert ESBUILD.exists(), "tests/node_modules is missing: run tools/install-deps.sh"
    src = tmp_path / "big.js"
    with open(src, "w") as f:
        for i in range(60000):
            f.write(f"export function f{i}(a, b) {{ const x = [a, b, {i}].map(v => v * {i % 7}); "
                    f"return x.reduce((s, v) => s + v, 0) + '{i}'.length; }}\n")
    script = tmp_path / "run.sh"
    script.write_text(f"for i in 1 2 3 4; do {ESBUILD} {src} --minify --bundle "
                      f"--format=esm --outfile={tmp_path}/out.js --log-level=error; done\n")
    out = tmp_path / "esb.pb.gz"
    p = run_bpfprof(["-U", "-o", out, "--", "sh", str(script)], timeout=300)
    folded = run_bpfprof(["convert", "-f", "folded", out]).stdout
    mine = {s: c for s, c in parse_folded(folded).items() if s.split(";")[0] == "esbuild"}
    n = total(mine)
    # Four builds' CPU time: a fixed amount of work, however busy the machine.
    assert n >= 50, f"{n} esbuild samples\n{p.stderr}"
    unnamed = count_with(mine, lambda s: "esbuild+0x" in s)
    assert_few(unnamed, n, "unnamed esbuild frames")
    ours = count_with(mine, lambda s: "github.com/evanw/esbuild/" in s)
    assert_most(ours, n, "in esbuild's own packages", share=0.3)
    complete = count_with(mine, lambda s: s.split(";")[1] in ("runtime.goexit", "runtime.mstart",
                                                              "runtime.rt0_go"))
    assert_most(complete, n, f"complete {sorted(mine.items(), key=lambda x: -x[1])[:5]}",
                share=0.8)
    assert count_with(mine, lambda s: "_[i];" in s or s.endswith("_[i]")) > 0
    top = subprocess.run(["go", "tool", "pprof", "-lines", "-top", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert re.search(r"github\.com/evanw/esbuild/\S+ \S+\.go:\d+", top.stdout), top.stdout

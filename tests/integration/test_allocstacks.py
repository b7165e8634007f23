# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc: stacks by value (issue 39; notes/alloc-continuous-design.md 1.2).

Each sampled allocation's user stack comes in its ring-buffer event with its
hash; userspace keeps each distinct stack once (base/stacktab.h, 65536 of
them). The stack map of 16384 ids it replaces failed a new stack whose
bucket was taken (bpf_get_stackid's -EEXIST), so over a long run, or one
with many stacks, a growing share of samples lost their stack.

The workload (tests/workloads/allocpaths.c) allocates once from each of
32768 distinct paths (3 levels of 32 functions); every allocation is
sampled (--alloc=1), so the profile must hold every path, by name. The old
map kept 14182 of them here (18586 samples "without their stack").

The table's overflow (BPFPROF_TEST_ALLOC_STACKS makes it small): the
stacks beyond go under [stack lost], counted and said, no byte lost.
"""
import os
import re

from conftest import parse_folded, run_bpfprof, wl

PATHS = 32 ** 3


def test_alloc_many_stacks(tmp_path):
    out = tmp_path / "heap.folded"
    r = run_bpfprof(["--alloc=1", "-v", "-o", out, "--", wl("allocpaths"), 3, 64, 16])
    assert f"paths {PATHS}" in r.stdout, r.stdout
    assert "without their stack" not in r.stderr, r.stderr
    assert "[stack lost]" not in r.stderr, r.stderr
    folded = parse_folded(out.read_text())
    paths = set()
    for stack in folded:
        frames = stack.split(";")
        if frames[-1] != "leaf":
            continue
        steps = tuple(f for f in frames if f.startswith("step"))
        assert len(steps) == 3, stack
        paths.add(steps)
    # The ring buffer may lose a few events on a loaded machine (said, and
    # not a stack lost): all but those. The old stack map: at most 16384.
    lost = 0
    for line in r.stderr.splitlines():
        if "sampled allocations lost: the ring buffer was full" in line:
            lost = int(line.split("warning: ")[-1].split()[0])
    assert len(paths) >= PATHS - lost, (len(paths), lost)
    assert len(paths) > 20000, len(paths)
    # Each path once, 64 bytes (weighed by 1 / (1 - exp(-64)), 1).
    assert all(v == 64 for s, v in folded.items() if s.endswith(";leaf")), \
        [(s, v) for s, v in folded.items() if s.endswith(";leaf") and v != 64][:5]


def test_alloc_stack_table_full(tmp_path):
    cap, paths = 100, 32 ** 2
    out = tmp_path / "heap.folded"
    r = run_bpfprof(["--alloc=1", "-o", out, "--", wl("allocpaths"), 2, 64, 16],
                    env=dict(os.environ, BPFPROF_TEST_ALLOC_STACKS=str(cap)))
    assert f"paths {paths}" in r.stdout, r.stdout
    folded = parse_folded(out.read_text())
    named = [s for s in folded if s.endswith(";leaf")]
    lost = sum(v for s, v in folded.items() if s.endswith(";[stack lost]"))
    assert len(named) <= cap, len(named)
    # Every sampled allocation is there, named or not (the stdio buffer besides).
    assert sum(folded[s] for s in named) + lost >= paths * 64, (len(named), lost)
    assert lost >= (paths - cap) * 64, lost
    m = re.search(r"warning: (\d+) sampled allocations and (\d+) blocks in use without "
                  r"their stack \(\[stack lost\]\): the table of (\d+) distinct stacks", r.stderr)
    assert m, r.stderr
    assert int(m.group(1)) >= paths - cap and int(m.group(3)) == cap, m.group(0)

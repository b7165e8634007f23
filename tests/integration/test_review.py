# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Fixes from the code review: each test here fails without its fix.

- count reads each target file's symbols once (not once to count the
  matches and again to probe them): its count of matching symbols that lie
  outside every loaded segment says each such symbol once.
"""
import subprocess

from conftest import run_bpfprof, wl


def test_count_reads_symbols_once(tmp_path):
    # A function symbol in .bss: it matches, but no file bytes hold it (no probe).
    exe = tmp_path / "countwork-bss"
    subprocess.run(["objcopy", "--add-symbol", "bp_outside=.bss:0x8,function,global",
                    wl("countwork"), exe], check=True)
    p = run_bpfprof(["count", "-v", "bp_*", "-o", tmp_path / "c.json", "--", exe, "calls"])
    assert "1 matching symbols lie outside every loaded segment: not probed" in p.stderr, p.stderr

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc in continuous mode when an interval's profile cannot be
taken: no memory for the run-long total (BPFPROF_TEST_ALLOC_TOTAL_FAIL=1
makes the first staging of it fail). The agent warns and goes on (it used to
exit 1, "out of memory"); the next interval's profile spans both intervals,
their allocations counted once. One run, ~4 s.
"""
import os
import subprocess

from conftest import BPFPROF, wl
from test_alloc import site_values

RATE, SIZE = 2000, 4096  # allocwork steady: 4 KiB blocks a second, freed at once


def test_interval_without_memory_skipped(tmp_path):
    out = tmp_path / "heap"
    p = subprocess.run([str(BPFPROF), "--alloc=16K", "--interval", "1", "--output-dir", str(out),
                        "-d", "3.5", "--", str(wl("allocwork")), "steady", str(RATE), "60", "0"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BPFPROF_TEST_ALLOC_TOTAL_FAIL="1"))
    assert p.returncode == 0, p.stderr
    assert "out of memory" not in p.stderr, p.stderr
    assert p.stderr.count("could not be taken") == 1, p.stderr
    files = sorted(out.glob("*.heap.pb.gz"))
    assert len(files) >= 2, (files, p.stderr)
    first, sites = site_values(files[0])
    secs = first["duration_nanos"] / 1e9
    assert 1.5 < secs < 3, secs  # the skipped interval and its own
    # both intervals' allocations in it, once: within a third of the rate's
    steady = sites.get("site_steady", [0, 0])[1]
    assert abs(steady - RATE * SIZE * secs) < RATE * SIZE * secs / 3, (steady, secs)

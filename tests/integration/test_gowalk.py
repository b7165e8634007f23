# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc's polled Go bucket lists and exiting Go processes (review9).

F1: a -p target points runtime.mbuckets at 8000 valid-looking buckets whose
last allnext is unmapped (gowalk ... hole): a walk that stops there must end
the list for good, and a walk stopped by its budget must resume where it
stopped, not pass every bucket it kept again at each drain. bpfprof's CPU
time over 10 s stays that of the same list ending in a cycle (which the walk
always completed): before the fix, 1.06 s against 0.18 s here (8000 reads
of the process a drain).
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import pprof
from conftest import BPFPROF, cgroup_v2, into_cgroup, wait_for, wl
from test_allocgo import go_counts


def _walk_run(tmp_path, tail):
    """(bpfprof's CPU seconds, its stderr) for a 10 s -p run on gowalk 8000 TAIL."""
    prog = subprocess.Popen([wl("gowalk"), "8000", tail, "30"], stdout=subprocess.PIPE,
                            text=True)
    bp = None
    errpath = tmp_path / f"{tail}.err"
    try:
        pid = json.loads(prog.stdout.readline())["pid"]
        with open(errpath, "w") as err:
            bp = subprocess.Popen([str(BPFPROF), "--alloc", "-v", "-d", "10", "-o",
                                   str(tmp_path / f"{tail}.pb.gz"), "-p", str(pid)],
                                  stderr=err)
            _, status, ru = os.wait4(bp.pid, 0)
            bp.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for p in (prog, bp):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    stderr = errpath.read_text()
    assert bp.returncode == 0, stderr
    return ru.ru_utime + ru.ru_stime, stderr


def _polled(stderr):
    """(buckets kept, polled buckets refused) from -v's Go summary."""
    m = re.search(r"Go: (\d+) profile buckets read from the processes \(\d+ reads, "
                  r"[\d.]+ ms\).* (\d+) polled buckets refused", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def test_go_list_hole_walked_once(tmp_path):
    cycle_cpu, cycle_err = _walk_run(tmp_path, "cycle")
    hole_cpu, hole_err = _walk_run(tmp_path, "hole")
    # both lists read in full: 8000 buckets (the hole's tail refused: unreadable)
    kept, refused = _polled(cycle_err)
    assert kept == 8000 and refused == 0, (kept, refused, cycle_err)
    kept, refused = _polled(hole_err)
    assert kept == 8001 and refused == 1, (kept, refused, hole_err)
    # the hole costs what the cycle costs (0.18 s each here; the hole 1.06 s
    # before the fix): a generous bound, the cycle's run measured beside it
    assert hole_cpu <= 2 * cycle_cpu + 0.25, (hole_cpu, cycle_cpu)

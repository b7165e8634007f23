# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof count, part two: session uprobes (one program for entry and return,
the entry's time in the call's session cookie), -a and --cgroup, and the
tenant's call storm. countwork (tests/workloads/countwork.c) prints its own
counts; test_count.py's checks are reused.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BPFPROF, as_tenant, run_bpfprof, tenant_dir, wl  # noqa: F401
from test_count import by_name, callers, check_calls, own_counts, start_count, start_waiting

SESSION_SAYS = "session uprobes: one uprobe_multi link per file and process"


def test_session_counts_exact(tmp_path):
    """The default on this kernel: session uprobes, every count, caller,
    recursion level and the slow function's mean as countwork measured them."""
    out = tmp_path / "s.json"
    p = run_bpfprof(["count", "-v", "bp_*", "-o", out, "--", wl("countwork"), "calls"])
    assert SESSION_SAYS in p.stderr, p.stderr
    check_calls(json.loads(out.read_text()), own_counts(p.stdout))


def test_session_falls_back(tmp_path):
    """A kernel without session uprobes (asked for by the test switch) gets the
    entry and return links, and -v says so."""
    out = tmp_path / "m.json"
    p = run_bpfprof(["count", "-v", "bp_*", "-o", out, "--", wl("countwork"), "calls"],
                    env=dict(os.environ, BPFPROF_TEST_COUNT_NO_SESSION="1"))
    assert "uprobe_multi: one entry and one return link per file" in p.stderr
    assert SESSION_SAYS not in p.stderr
    check_calls(json.loads(out.read_text()), own_counts(p.stdout))


def test_session_guard_detaches(tmp_path):
    """The guard's link replacement works for session links: bp_hot detached,
    the file's other functions still counted exactly and timed."""
    out = tmp_path / "g.json"
    p = run_bpfprof(["count", "--budget", "5000", "bp_hot", "bp_slow", "bp_b", "-o", out, "--",
                     wl("countwork"), "hot", "3"])
    own = own_counts(p.stdout)
    assert re.search(r"warning: bp_hot \(.*countwork\): \d+ calls/s, over the budget", p.stderr)
    fns = by_name(json.loads(out.read_text()))
    assert fns["bp_hot"]["detached"] is True and 0 < fns["bp_hot"]["calls"] < own["bp_hot"]
    assert fns["bp_slow"]["calls"] == own["bp_slow"] == 10
    assert fns["bp_slow"]["timed_calls"] == 10 and fns["bp_slow"]["min_ns"] >= 2_000_000
    assert fns["bp_b"]["calls"] == own["bp_b"] == 100

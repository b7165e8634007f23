# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc's Go state against pid reuse (review8-src H1).

A polled Go process (-p, runtime.mbuckets read each drain) exits while the
run goes on (another target keeps it alive); another copy of the same
non-PIE Go binary then gets its pid (kernel.ns_last_pid; other processes of
the host may take it first: retried). Its list is at the same address: a
run that keys its Go state by the bare pid walks it and counts the new
process's allocations, all of its life, under the dead target. They must
not be counted: the run's Go samples are the target's (the runtime's own
count) and not the stranger's.
"""
import fcntl
import os
import re
import signal
import subprocess
import time

from conftest import BPFPROF, wait_for, wl
from test_allocgo import go_counts, memprof, start_waiting


def _same_pid(pid, argv, tries=40):
    """argv started with pid (it waits for SIGUSR1), or None."""
    with open("/tmp/bpfprof-ns-last-pid.lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        for _ in range(tries):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
            proc, got = start_waiting(argv)
            if got == pid:
                return proc
            proc.kill()
            proc.wait()
    return None


def test_go_pid_reused_not_counted(tmp_path):
    out = tmp_path / "go.pb.gz"
    keeper = subprocess.Popen(["sleep", "120"])
    target, pid = start_waiting([wl("goalloc"), "wait", "memprof", "1"])
    stranger = None
    bp = subprocess.Popen([str(BPFPROF), "--alloc", "-v", "-o", str(out), "-p", f"{pid},{keeper.pid}"], stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = bp.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "profiling allocations of" in line:
                break
        assert bp.poll() is None, "".join(seen)
        os.kill(pid, signal.SIGUSR1)
        t_out, _ = target.communicate(timeout=60)
        truth = memprof(t_out)
        rt_samples = sum(v[0] for v in truth["sites"].values())
        # the stranger: the same binary, 3 s of allocations
        stranger = _same_pid(pid, [wl("goalloc"), "wait", "memprof", "3"])
        assert stranger is not None, "no process got the target's pid"
        os.kill(pid, signal.SIGUSR1)
        s_out, _ = stranger.communicate(timeout=60)
        s_samples = sum(v[0] for v in memprof(s_out)["sites"].values())
        time.sleep(0.5)  # a few drains more
        keeper.kill()
        keeper.wait()
        stderr = "".join(seen) + bp.communicate(timeout=60)[1]
    finally:
        for p in (target, stranger, keeper, bp):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert bp.returncode == 0, stderr
    sampled, _, _ = go_counts(stderr)
    assert s_samples > 0.3 * rt_samples, (s_samples, rt_samples)  # seen if counted
    # the target's samples, not the stranger's (before the fix: both)
    assert rt_samples * 0.5 <= sampled <= rt_samples * 1.02 + 10, \
        (sampled, rt_samples, s_samples, stderr)


def test_go_exited_let_go_one_shot(tmp_path):
    """-a, one run (no interval, review8-src H2): a Go process that exited
    has its Go state (buckets, BPF's gobuckets and gobucket_procs entries)
    let go at a drain, not only at an interval's take: else short-lived Go
    processes fill the shared tables for the rest of the run."""
    errpath = tmp_path / "stderr"
    bp = None
    proc, pid = start_waiting([wl("goalloc"), "wait", "memprof", "1"])  # found at the start
    try:
        with open(errpath, "w") as err:
            bp = subprocess.Popen([str(BPFPROF), "--alloc", "-a", "-v", "-d", "300",
                                   "--alloc-budget", "1000000000", "-o",
                                   str(tmp_path / "a.pb.gz")], stderr=err)
            wait_for(lambda: "profiling allocations of every process" in errpath.read_text(),
                     timeout=120, what="the probes in")
            assert f"in {pid}" in errpath.read_text(), "goalloc not probed"
            os.kill(pid, signal.SIGUSR1)
            proc.communicate(timeout=60)
            assert proc.returncode == 0
            wait_for(lambda: re.search(rf"process {pid} has exited: its (Go state|\d+ Go "
                                       r"buckets) let go", errpath.read_text()),
                     timeout=10, what="the exited Go process let go")
            bp.send_signal(signal.SIGINT)
            bp.wait(timeout=60)
    finally:
        for p in (proc, bp):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert bp.returncode == 0, errpath.read_text()

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
import signal
import subprocess
import time

from conftest import BPFPROF, wl
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

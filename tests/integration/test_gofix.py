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
import contextlib
import re
import signal
import subprocess
import time

from conftest import BPFPROF, Lines, Waiting, bench_lock, json_line, probes_in, wait_for, wl
from test_allocgo import go_counts


def _same_pid(pid, argv, tries=40):
    """A Waiting argv started with pid, or None."""
    with bench_lock(path="/tmp/bpfprof-ns-last-pid.lock"):
        for _ in range(tries):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
            w = Waiting(argv)
            if w.pid == pid:
                return w
            w.close()
    return None


def test_go_pid_reused_not_counted(tmp_path):
    out = tmp_path / "go.pb.gz"
    with contextlib.ExitStack() as stack:
        keeper = subprocess.Popen(["sleep", "120"])
        stack.callback(lambda: (keeper.kill(), keeper.wait()))
        target = stack.enter_context(Waiting([wl("goalloc"), "wait", "memprof", "1"]))
        pid = target.pid
        bp = subprocess.Popen([str(BPFPROF), "--alloc", "-v", "-o", str(out), "-p",
                               f"{pid},{keeper.pid}"], stderr=subprocess.PIPE, text=True)
        stack.callback(lambda: (bp.poll() is None and bp.kill(), bp.wait()))
        err = Lines(bp.stderr)
        probes_in(err, 90)
        assert bp.poll() is None, err.text
        target.go()
        truth = json_line(target.output(60), "memprof")
        rt_samples = sum(v[0] for v in truth["sites"].values())
        # the stranger: the same binary, 3 s of allocations
        stranger = _same_pid(pid, [wl("goalloc"), "wait", "memprof", "3"])
        assert stranger is not None, "no process got the target's pid"
        stack.enter_context(stranger)
        stranger.go()
        s_samples = sum(v[0] for v in json_line(stranger.output(60), "memprof")["sites"].values())
        time.sleep(0.5)  # a few drains more
        keeper.kill()
        keeper.wait()
        stderr = err.rest(60, "the end of bpfprof's stderr")
        bp.wait(timeout=60)
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
    with Waiting([wl("goalloc"), "wait", "memprof", "1"]) as w:  # found at the start
        pid = w.pid
        try:
            with open(errpath, "w") as err:
                bp = subprocess.Popen([str(BPFPROF), "--alloc", "-a", "-v", "-d", "300",
                                       "--alloc-budget", "1000000000", "-o",
                                       str(tmp_path / "a.pb.gz")], stderr=err)
                wait_for(lambda: "profiling allocations of every process" in errpath.read_text(),
                         timeout=120, what="the probes in")
                assert f"in {pid}" in errpath.read_text(), "goalloc not probed"
                w.go()
                w.output(60)
                assert w.proc.returncode == 0
                wait_for(lambda: re.search(rf"process {pid} has exited: its (Go state|\d+ Go "
                                           r"buckets) let go", errpath.read_text()),
                         timeout=10, what="the exited Go process let go")
                bp.send_signal(signal.SIGINT)
                bp.wait(timeout=60)
        finally:
            if bp is not None and bp.poll() is None:
                bp.kill()
                bp.wait()
    assert bp.returncode == 0, errpath.read_text()

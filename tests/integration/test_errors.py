# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Bad input gets a one-line error and the documented exit status."""
import os
import subprocess

import pytest

from conftest import BPFPROF, Workload, run_bpfprof, wl


@pytest.mark.parametrize("args,needle", [
    (["-F", "99x"], "invalid frequency"),
    (["-F", "0"], "invalid frequency"),
    (["-F", "-1"], "invalid frequency"),
    (["-F", "2147483648"], "invalid frequency"),
    (["-C", "-5"], "invalid CPU list"),
    (["-C", "100000"], "invalid CPU list"),
    (["-d", "0"], "invalid duration"),
    (["-d", "abc"], "invalid duration"),
    (["-p", "abc"], "invalid pid"),
    (["-p", "0"], "invalid pid"),
    (["-U", "-K"], "exclude each other"),
    (["--bogus"], "unknown option"),
    (["-f", "nope"], "unknown format"),
    (["stray"], "unknown command"),
    (["-o", "/nonexistent-dir/x.folded", "-d", "1"], "cannot write /nonexistent-dir/x.folded"),
])
def test_usage_errors_exit_2(args, needle):
    p = run_bpfprof(args, check=False)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert needle in p.stderr
    assert p.stdout == ""
    assert p.stderr.startswith("bpfprof: ")


def test_unknown_pid_exits_2():
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    pid = next(p for p in range(pid_max - 1, 1, -1) if not os.path.exists(f"/proc/{p}"))
    p = run_bpfprof(["-p", pid, "-d", "1"], check=False)
    assert p.returncode == 2
    assert "does not exist" in p.stderr


def test_thread_id_is_not_a_pid():
    with Workload(wl("busy"), 10, 2) as w:
        tids = [int(t) for t in os.listdir(f"/proc/{w.pid}/task") if int(t) != w.pid]
        p = run_bpfprof(["-p", tids[0], "-d", "1"], check=False)
    assert p.returncode == 2
    assert f"is a thread of process {w.pid}" in p.stderr


def test_frequency_above_kernel_limit():
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        limit = int(f.read())
    p = run_bpfprof(["-F", limit + 1, "-d", "1"], check=False)
    assert p.returncode == 2
    assert "above the kernel's limit" in p.stderr and "HINT:" in p.stderr


def test_not_root_exits_1():
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "--inh-caps=-all", str(BPFPROF), "-d", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "needs root" in p.stderr and "HINT:" in p.stderr


def test_no_btf_exits_1():
    """Hide /sys/kernel/btf in a private mount namespace."""
    p = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount -t tmpfs none /sys/kernel/btf && exec {BPFPROF} -d 1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "no BTF" in p.stderr and "CONFIG_DEBUG_INFO_BTF" in p.stderr


def test_help_lists_every_option_with_examples():
    p = run_bpfprof(["--help"])
    for opt in ["--freq", "--all-cpus", "--pid", "--cpu", "--duration", "--user-only",
                "--kernel-only", "--output", "--format", "--include-idle", "Examples:"]:
        assert opt in p.stdout, opt
    assert run_bpfprof(["--version"]).stdout.startswith("bpfprof ")

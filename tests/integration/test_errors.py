# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Bad input gets a one-line error and the documented exit status."""
import os
import subprocess

import pytest

from conftest import BPFPROF, Workload, run_bpfprof, uwl, wl


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


def test_least_privilege_caps_only_and_named_missing_cap():
    """Works as an unprivileged user with just the four capabilities; a missing
    one is named; after attach the agent holds none of the powerful ones."""
    caps = "+bpf,+perfmon,+sys_ptrace,+syslog"
    sysc, SYSC = uwl("syscalls")
    with Workload(sysc, 30):
        ok = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             f"--inh-caps={caps}", f"--ambient-caps={caps}", str(BPFPROF), "-a",
                             "-d", "1.5"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    # CAP_SYSLOG: kernel names; CAP_SYS_PTRACE: root's process is symbolized.
    assert any(l.startswith(SYSC + ";") and ";main;" in l and "do_syscall_64_[k]" in l
               for l in ok.stdout.splitlines()), ok.stdout
    no_perfmon = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 "--inh-caps=+bpf,+sys_ptrace", "--ambient-caps=+bpf,+sys_ptrace",
                                 str(BPFPROF), "-a", "-d", "1"],
                                capture_output=True, text=True, timeout=60)
    assert no_perfmon.returncode == 1
    assert "missing CAP_PERFMON" in no_perfmon.stderr


def test_capabilities_dropped_after_attach():
    proc = subprocess.Popen([str(BPFPROF), "-a", "-d", "4"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        import time
        time.sleep(2)
        with open(f"/proc/{proc.pid}/status") as f:
            eff = int(next(l for l in f if l.startswith("CapEff:")).split()[1], 16)
    finally:
        proc.wait(timeout=30)
    CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF, CAP_NET_ADMIN, CAP_SYS_MODULE = 21, 38, 39, 12, 16
    assert eff & (1 << CAP_BPF), hex(eff)
    for cap in (CAP_SYS_ADMIN, CAP_PERFMON, CAP_NET_ADMIN, CAP_SYS_MODULE):
        assert not eff & (1 << cap), f"capability {cap} still held: {eff:#x}"

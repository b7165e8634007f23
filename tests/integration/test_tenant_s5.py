# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Tenant attacks of session 5 (../shared/threat-model.md): count --children's
exec stops (a pid the tenant has reused; a crowd of execs of costly files)
and a fake SBCL's dynamic space made to cost. Each test performs the attack
as the tenant (conftest.as_tenant) against root's bpfprof.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import (BPFPROF, ROOT, Sampled, Workload, as_tenant, frames_of, parse_folded,
                      tenant, wait_for, wl)

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import make_fake_python  # noqa: E402  (shared with the soak)


def _state(pid):
    """Process pid's state letter (/proc/PID/stat), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _children(ppid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == ppid:
                        out.append(int(d))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
    return out


def _spawn_at(pid, argv):
    """argv started with process id pid (the kernel asked through
    ns_last_pid; other processes of the host may take it first: retried)."""
    for _ in range(300):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        p = subprocess.Popen(argv)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


def _write_fifo(path, timeout=10):
    """A line into FIFO path once its reader has it open (never blocks for good)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < deadline, f"{path}: no reader"
            time.sleep(0.02)
    os.write(fd, b"\n")
    os.close(fd)


def test_children_sigcont_not_sent_to_a_reused_pid(tenant_dir):
    """count --children stops a target at its exec (BPF's SIGSTOP) and lists
    its pid; before the agent looks (its main loop late: here stopped by the
    test), the tenant kills that stopped process and starts one of its own at
    the same pid, stopped on purpose. The agent must not resume the process
    now at that number: it signals the process it stopped (a pidfd checked
    against the start time BPF saw), not a number."""
    pw = tenant()
    d = tenant_dir
    for f in ("go", "end"):
        os.mkfifo(d / f)
        os.chown(d / f, pw.pw_uid, pw.pw_gid)
    # Builtins only between the stops: every exec of a target is stopped.
    script = (f"read x < {d}/go; sleep 1000 & echo $! > {d}/p.pid; wait; "
              f"read x < {d}/end")
    bp = subprocess.Popen([str(BPFPROF), "count", "--children", "bp_none_matches", "-d", "30",
                           "--", *as_tenant(["/bin/sh", "-c", script])],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    impostor = None
    try:
        # The command (setpriv, then sh) waits in its read: the agent is in its loop.
        def sh_waits():
            kids = _children(bp.pid)
            return kids and Path(f"/proc/{kids[0]}/comm").read_text().strip() == "sh" \
                and _state(kids[0]) == "S"
        wait_for(sh_waits, "the command running")
        os.kill(bp.pid, signal.SIGSTOP)
        _write_fifo(d / "go")
        wait_for(lambda: (d / "p.pid").exists() and (d / "p.pid").read_text().strip(),
                 "the child's pid")
        victim = int((d / "p.pid").read_text())
        wait_for(lambda: _state(victim) == "T", "the child stopped at its exec")
        subprocess.run(as_tenant(["kill", "-9", str(victim)]), check=True)
        wait_for(lambda: _state(victim) is None, "the child reaped")
        # The tenant's own process at that pid, stopped on purpose.
        impostor = _spawn_at(victim, as_tenant(["/bin/sh", "-c", "kill -STOP $$; exec sleep 100"]))
        assert impostor, "could not get the same pid again"
        wait_for(lambda: _state(victim) == "T", "the impostor stopped itself")
        os.kill(bp.pid, signal.SIGCONT)
        time.sleep(0.6)  # the agent's loop looks every 20 ms
        assert _state(victim) == "T", "the agent resumed a process it did not stop"
    finally:
        os.kill(bp.pid, signal.SIGCONT)
        if impostor:
            impostor.kill()
            impostor.wait()
        try:  # the command's last read, if it got there
            _write_fifo(d / "end", timeout=2)
        except AssertionError:
            pass
        bp.send_signal(signal.SIGINT)
        _, err = bp.communicate(timeout=30)
    assert bp.returncode == 0, err


def _kill_exe_under(d):
    """Kills the processes whose executable is in directory d (the tenant's
    programs this test started)."""
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.readlink(f"/proc/{p}/exe").startswith(f"{d}/"):
                os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass


def test_children_crowd_of_execs_does_not_hold_up_a_stop(tenant_dir, tmp_path):
    """count --children: the tenant's child forks 8 processes that each exec
    a distinct copy of a program with 200,000 symbols (~0.1 s of the
    agent's CPU each to read, within a file's budget; seconds on a loaded
    host). They were all followed back to back on the main loop before it
    looked at anything else (a stop request: every file still opened, then
    given up as "bpfprof is stopping"); SIGINT once the first is probed must
    stop the agent after a file or two more (the rest stay stopped until it
    lets them go)."""
    n = 8
    py = make_fake_python(tenant_dir, nsyms=200000, prefix=as_tenant([]))
    for i in range(n):
        subprocess.run(as_tenant(["cp", py, f"{tenant_dir}/c{i}"]), check=True)
    script = " ".join(f"{tenant_dir}/c{i} &" for i in range(n)) + " wait"
    log = tmp_path / "err"
    with open(log, "w") as err:
        bp = subprocess.Popen([str(BPFPROF), "count", "-v", "--children", "main", "-d", "60",
                               "--", *as_tenant(["/bin/sh", "-c", script])],
                              stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for(lambda: "exec'd: 1 more functions probed" in log.read_text(),
                 "the first exec probed", timeout=60)
        bp.send_signal(signal.SIGINT)
        bp.wait(timeout=60)
    finally:
        if bp.poll() is None:
            bp.kill()
            bp.wait()
        _kill_exe_under(tenant_dir)
    text = log.read_text()
    followed = text.count("exec'd: 1 more functions probed") + text.count("no symbols read")
    assert "stopping on Interrupt" in text, text
    # The file in hand when SIGINT lands, and one more on a fast host (the
    # test's 50 ms poll); without the bound all 8.
    assert 1 <= followed <= 3, text


def test_sbcl_dynamic_space_sled_costs_its_budget_and_names_nothing_wrong(tenant_dir):
    """The tenant's fakesbcl_dyn: a dynamic space whose page_table sends every
    lookup 4 MiB back over 65,536 fillers (SBCL_MAX_DYN_WALK, SBCL_MAX_STEPS)
    at a new pc every sample (a thread running a 15 MiB sled), and a code
    object named "DYNOK" another thread spins in. A failed lookup is not
    kept, so each sample of the sled cost a whole walk (~1.6 ms of the
    agent's CPU here, at any sample rate the operator picks): now at most
    SBCL_DYN_BUDGET (64 MiB, 16 walks) a second per process, the rest
    counted. No wrong name: the sled unnamed, the code named "DYNOK"."""
    pw = tenant()
    exe = tenant_dir / "fakesbcl_dyn"
    shutil.copy(wl("fakesbcl_dyn"), exe)
    os.chown(exe, pw.pw_uid, pw.pw_gid)
    with Workload(*as_tenant([exe, "120"])) as w:
        p = Sampled(["-v", "-F", 1999, "-p", w.pid, "-d", 60], [w.pid], until_cpu=1,
                    timeout=120)
    folded = {st: c for st, c in parse_folded(p.stdout).items() if st.startswith("fakesbcl_dyn;")}
    leaves = {}
    for st, c in folded.items():
        user = [f for f in frames_of(st)[1:] if not f.endswith("_[k]")]
        leaves[user[0] if user else ""] = leaves.get(user[0] if user else "", 0) + c
    lisp = {f for f in leaves if f.endswith("_[lisp]")}
    # No wrong name. "DYNOK" itself is named only when its lookup comes
    # before the sled's have spent the second's budget (the process's own
    # budget: the tenant's sled hurts only its own names), so it may be
    # unnamed in a one-drain run: not asserted (3 runs in 10 were so).
    assert lisp <= {'"DYNOK"_[lisp]'}, leaves
    sled = leaves.get("[unknown]", 0)
    assert sled > 200, leaves
    m = re.search(r"(\d+) not \(dynamic-space walks over their budget; (\d+) KiB walked\)",
                  p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr[-3000:]
    secs = float(re.search(r"\d+ samples? in ([0-9.]+) s", p.stderr).group(1))
    walked_mib = int(m.group(2)) / 1024
    # 64 MiB a second of drains and of the last symbolization (a few seconds).
    assert walked_mib <= 64 * (secs + 4), (walked_mib, secs, sled)

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""What a new user trips over in the first hour (issue 37), about the run
itself: the exit status of -- COMMAND, -p targets that exit, a profile that
cannot be written where asked, a terminal without -o, continuous mode's
status line, and a run that must stop when -d says.
"""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import (BPFPROF, Workload, parse_folded, run_bpfprof, sampled_seconds, total,
                      wait_attached, wl)


def start(args, **kw):
    return subprocess.Popen([str(BPFPROF)] + [str(a) for a in args], stderr=subprocess.PIPE,
                            text=True, **kw)


# --- 7: -- COMMAND exits with the command's status -----------------------------------

@pytest.mark.parametrize("script,status", [("exit 3", 3), ("exit 0", 0),
                                           ("kill -KILL $$", 128 + signal.SIGKILL),
                                           ("kill -TERM $$", 128 + signal.SIGTERM)])
def test_command_exit_status_is_bpfprofs(tmp_path, script, status):
    """As perf record and time(1): the command's exit status, 128 + N when
    signal N killed it, and the profile is written all the same."""
    out = tmp_path / "cmd.folded"
    p = run_bpfprof(["-o", out, "--", "sh", "-c", f"{wl('busy')} 0.3; {script}"],
                    check=False)
    assert p.returncode == status, p.stderr
    samples, _ = sampled_seconds(p.stderr)
    assert samples > 0 and total(parse_folded(out.read_text())) > 0, p.stderr


def test_bin_false():
    """The issue's case: bpfprof -- /bin/false exited 0."""
    p = run_bpfprof(["-o", "/dev/null", "--", "/bin/false"], check=False)
    assert p.returncode == 1, p.stderr
    assert "'/bin/false' exited with status 1" in p.stderr, p.stderr


def test_command_status_with_a_target(tmp_path):
    """With -p, the command only says how long to sample: its status is still bpfprof's."""
    out = tmp_path / "p.folded"
    with Workload(wl("busy"), 60) as w:
        p = run_bpfprof(["-p", w.pid, "-o", out, "--", "sh", "-c", "sleep 0.5; exit 4"],
                        check=False)
    assert p.returncode == 4, p.stderr
    assert total(parse_folded(out.read_text()), "busy") > 0, p.stderr


def test_command_ended_by_bpfprof_is_not_its_status(tmp_path):
    """-d ran out while the command ran: bpfprof ended it, its SIGTERM is
    not the command's own exit, and bpfprof exits 0."""
    out = tmp_path / "d.folded"
    p = run_bpfprof(["-d", "1", "-o", out, "--", wl("busy"), 60], check=False)
    assert p.returncode == 0, p.stderr
    assert "bpfprof ended it" in p.stderr, p.stderr
    assert total(parse_folded(out.read_text()), "busy") > 0


def test_stop_request_to_bpfprof_alone(tmp_path):
    """SIGTERM to bpfprof alone (not its process group): it ends the command
    and exits 0, the profile written."""
    out = tmp_path / "t.folded"
    proc = start(["-o", out, "--", wl("busy"), 60])
    seen = wait_attached(proc)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, seen + err
    assert total(parse_folded(out.read_text()), "busy") > 0


def test_ctrl_c_to_the_group_is_the_commands_130(tmp_path):
    """Ctrl-C on a terminal reaches bpfprof and the command: the command
    died of SIGINT, and bpfprof says so with 130 as a shell would - whichever
    of the two saw the signal first (five tries)."""
    for i in range(5):
        out = tmp_path / f"c{i}.folded"
        proc = start(["-o", out, "--", wl("busy"), 60], start_new_session=True)
        seen = wait_attached(proc)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGINT, seen + err
        assert total(parse_folded(out.read_text()), "busy") > 0


# --- 5: -p stops when its processes have all exited ------------------------------

def test_pid_target_exits_run_stops(tmp_path):
    """A -p target that exits, -d 60: sampling stops then (as perf record
    does), says so, and the profile is written. The target is left a zombie
    (nobody reaps it yet): it has exited all the same."""
    out = tmp_path / "p.folded"
    with Workload(wl("busy"), 60) as w:
        proc = start(["-p", w.pid, "-d", 60, "-o", out])
        seen = wait_attached(proc)
        time.sleep(1)
        w.proc.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    err = seen + err
    assert proc.returncode == 0, err
    assert f"process {w.pid} exited: stopping" in err, err
    assert took < 5, (took, err)  # a turn of the loop, the last drain, the write
    assert total(parse_folded(out.read_text()), "busy") > 0


def test_several_pids_stop_when_all_are_gone(tmp_path):
    """Two targets: the first exiting does not stop the run, the second does."""
    out = tmp_path / "pp.folded"
    with Workload(wl("busy"), 60) as a, Workload(wl("busy"), 60) as b:
        proc = start(["-p", f"{a.pid},{b.pid}", "-d", 60, "-o", out])
        seen = wait_attached(proc)
        time.sleep(0.5)
        a.proc.kill()
        a.proc.wait()
        time.sleep(2)
        assert proc.poll() is None, "bpfprof stopped with a target still running"
        b.proc.kill()
        _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 0, err
    assert "all 2 processes exited: stopping" in err, err
    _, secs = sampled_seconds(err)
    assert 2.5 <= secs < 10, err
    assert total(parse_folded(out.read_text()), "busy") > 0


def test_pid_target_exits_continuous(tmp_path):
    """Continuous mode with -p stops too, after writing the partial interval."""
    d = tmp_path / "store"
    with Workload(wl("busy"), 60) as w:
        proc = start(["-p", w.pid, "--interval", 1, "--output-dir", d])
        seen = wait_attached(proc)
        time.sleep(1.5)
        w.proc.kill()
        _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 0, err
    assert f"process {w.pid} exited: stopping" in err, err
    m = re.search(r"(\d+) samples in [0-9.]+ s, (\d+) lost, (\d+) intervals", err)
    assert m and int(m.group(3)) >= 2, err
    assert len([f for f in os.listdir(d) if f.endswith(".pb.gz")]) == int(m.group(3))

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

from conftest import (BPFPROF, Workload, parse_folded, run_bpfprof, run_on_tty, sampled_seconds,
                      total, wait_attached, wl)


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
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost, (\d+) intervals?", err)
    assert m and int(m.group(3)) >= 2, err
    assert len([f for f in os.listdir(d) if f.endswith(".pb.gz")]) == int(m.group(3))


# --- 8: a profile that cannot be written where asked is saved elsewhere ------------

@pytest.fixture
def spare(tmp_path):
    """$TMPDIR for bpfprof: root's, 0700, where its fallback files land."""
    d = tmp_path / "spare"
    d.mkdir(mode=0o700)
    return d


def run_and_break(args, env, breaker):
    """Runs bpfprof -p busy ARGS, calls breaker() once sampling runs; (rc, stderr)."""
    with Workload(wl("busy"), 60) as w:
        proc = start(["-p", w.pid, "-d", 2] + args, env=env)
        seen = wait_attached(proc)
        breaker()
        _, err = proc.communicate(timeout=60)
    return proc.returncode, seen + err


def saved_to(err):
    m = re.search(r"the profile was saved to (\S+) instead", err)
    assert m, err
    return m.group(1)


def assert_saved(err, spare_dir, name):
    path = saved_to(err)
    assert os.path.dirname(path) == str(spare_dir), err
    assert re.fullmatch(r"bpfprof-[A-Za-z0-9]{6}-" + re.escape(name), os.path.basename(path))
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == 0, oct(st.st_mode)
    samples, _ = sampled_seconds(err)
    assert total(parse_folded(open(path).read())) == samples > 0, err
    return path


def test_output_dir_removed_during_sampling(tmp_path, spare):
    d = tmp_path / "out"
    d.mkdir()
    rc, err = run_and_break(["-o", d / "p.folded"], dict(os.environ, TMPDIR=str(spare)),
                            lambda: d.rmdir())
    assert rc == 1, err
    assert "writing" in err and "failed" in err, err
    assert_saved(err, spare, "p.folded")


def test_output_in_proc(spare):
    """/proc/x.folded passes the early check but holds no file."""
    rc, err = run_and_break(["-o", "/proc/x.folded"], dict(os.environ, TMPDIR=str(spare)),
                            lambda: None)
    assert rc == 1, err
    assert_saved(err, spare, "x.folded")


def test_output_on_a_full_disk(tmp_path, spare):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        def fill():
            fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"x" * 512)
            except OSError:
                pass
            finally:
                os.close(fd)

        rc, err = run_and_break(["-o", mnt / "p.svg"], dict(os.environ, TMPDIR=str(spare)),
                                fill)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert rc == 1, err
    assert "No space left on device" in err, err
    path = saved_to(err)
    assert open(path).read().startswith("<?xml"), path  # still the format asked for


def test_fallback_not_in_a_tenants_directory(tenant_dir, shared_dir):
    """TMPDIR names a directory the tenant owns, or a symlink the tenant
    planted in a shared one: neither is used (the tenant could remove or
    replace the file, or steer root's write); /tmp is."""
    from conftest import tenant_run
    link = shared_dir / "tmp"
    assert tenant_run(["ln", "-s", tenant_dir, link]).returncode == 0
    for tmpdir in (tenant_dir, link):
        rc, err = run_and_break(["-o", "/proc/x.folded"], dict(os.environ, TMPDIR=str(tmpdir)),
                                lambda: None)
        assert rc == 1, err
        path = saved_to(err)
        try:
            assert os.path.dirname(path) == "/tmp", err
            assert not os.listdir(tenant_dir), os.listdir(tenant_dir)
        finally:
            os.unlink(path)


# --- 6: a terminal without -o gets the top functions, not folded lines -------------

def run_on_a_pty(args):
    """Runs bpfprof with stdout on a new terminal (at most 60 s); (rc, what the
    terminal showed, stderr)."""
    return run_on_tty([BPFPROF] + list(args), timeout=60)


FOLDED_LINE = re.compile(r"^\S.*;.* \d+\r?$", re.M)


def test_terminal_gets_the_report():
    rc, shown, err = run_on_a_pty(["-d", 5, "--", "sh", "-c", f"{wl('busy')} 1 >/dev/null"])
    assert rc == 0, err
    assert "functions by self samples" in shown and "leaf_a" in shown, shown
    assert not FOLDED_LINE.search(shown), shown
    assert "save all of it with -o FILE" in err, err


def test_terminal_with_f_or_a_pipe_gets_folded(tmp_path):
    """-f folded on a terminal, and a pipe: folded text as before."""
    rc, shown, err = run_on_a_pty(["-d", 5, "-f", "folded", "--", "sh", "-c",
                                   f"{wl('busy')} 1 >/dev/null"])
    assert rc == 0, err
    assert FOLDED_LINE.search(shown) and "functions by" not in shown, shown
    p = run_bpfprof(["-d", 5, "--", "sh", "-c", f"{wl('busy')} 1 >/dev/null"])
    assert total(parse_folded(p.stdout), "busy") > 0 and "functions by" not in p.stdout
    assert "save all of it" not in p.stderr


# --- 16: continuous mode's status line counts the profiles written and pushed -------

def test_continuous_status_line_counts_profiles(tmp_path):
    """On a terminal (stderr), the status line says how many profiles were
    written and pushed, and how many pushes failed (a server that refuses
    connections)."""
    import socket
    d = tmp_path / "store"
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Workload(wl("busy"), 60) as w:
        _, text, _ = run_on_tty([BPFPROF, "-p", w.pid, "--interval", 1, "--output-dir", d,
                                 "--push", f"http://127.0.0.1:{port}", "-d", 5], stream="stderr",
                                timeout=60, env=dict(os.environ, TERM="xterm"))
    lines = re.findall(r"bpfprof: (\d+) s of 5 s, \d+ samples?, (\d+) profiles? written, "
                       r"(\d+) pushed(?: \((\d+) failed, \d+ dropped\))?", text)
    assert lines, text
    secs, written, pushed, failed = lines[-1]
    assert int(written) >= 2 and int(pushed) == 0 and int(failed or 0) >= 1, text


# --- 12: sampling stops when -d says, even in the middle of a long drain ----------------

def test_sampling_stops_at_the_deadline_during_a_long_drain(tmp_path):
    """A drain that runs past -d (at -F 100000 one took seconds to read and
    name its new stacks): the one due at 1 s is held for 2 s here
    (BPFPROF_TEST_DRAIN_STALL), with -d 1.5 and both CPUs busy. Sampling went
    on through it (3.0 s, twice the samples); the events now stop at 1.5 s
    from a timer thread, so the summary says 1.5 s and the profile holds no
    more than F x CPUs x 1.5 s (plus a tick per CPU)."""
    freq, ncpu = 99, os.cpu_count()
    out = tmp_path / "d.folded"
    env = dict(os.environ, BPFPROF_TEST_DRAIN_STALL="1:2000")
    with Workload(wl("busy"), 30), Workload(wl("busy"), 30):
        p = run_bpfprof(["-F", freq, "-a", "-d", "1.5", "-o", out], env=env)
    samples, secs = sampled_seconds(p.stderr)
    assert secs <= 1.55, p.stderr
    got = total(parse_folded(out.read_text()))
    assert got == samples, p.stderr
    assert got <= freq * ncpu * 1.5 + 2 * ncpu, (got, p.stderr)

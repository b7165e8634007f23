# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Fixes from the code review: each test here fails without its fix.

- count reads each target file's symbols once (not once to count the
  matches and again to probe them): its count of matching symbols that lie
  outside every loaded segment says each such symbol once.
- top -p stops when its processes have all exited, as record -p does (on a
  pipe and on a terminal).
"""
import signal
import subprocess
import time

from conftest import BPFPROF, run_bpfprof, wl


def test_count_reads_symbols_once(tmp_path):
    # A function symbol in .bss: it matches, but no file bytes hold it (no probe).
    exe = tmp_path / "countwork-bss"
    subprocess.run(["objcopy", "--add-symbol", "bp_outside=.bss:0x8,function,global",
                    wl("countwork"), exe], check=True)
    p = run_bpfprof(["count", "-v", "bp_*", "-o", tmp_path / "c.json", "--", exe, "calls"])
    assert "1 matching symbols lie outside every loaded segment: not probed" in p.stderr, p.stderr


def top_until_exit(argv):
    """bpfprof top argv -p a workload, its stdout a pipe: the workload is
    killed once top has printed its first snapshot; top's (returncode,
    stderr, seconds it ran on after the kill), None for the returncode if it
    did not stop within 15 s."""
    w = subprocess.Popen([str(wl("topmix")), "60"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        top = subprocess.Popen([str(BPFPROF), "top", "-p", str(w.pid), "--delay", "0.5"] + argv,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in top.stdout:  # sampling: the first snapshot's header
            if line.startswith("bpfprof top:"):
                break
        w.kill()
        w.wait()
        t0 = time.monotonic()
        try:
            _, err = top.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            top.send_signal(signal.SIGINT)
            _, err = top.communicate(timeout=30)
            return None, err, time.monotonic() - t0
        return top.returncode, err, time.monotonic() - t0
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()


def test_top_p_stops_when_its_process_exits():
    rc, err, after = top_until_exit([])
    assert rc == 0, f"top -p ran on after its process exited: {err}"
    assert "exited: stopping" in err, err
    assert after < 5, after  # within a refresh (0.5 s), start-up aside


def test_top_p_stops_when_all_its_processes_exit():
    """Two targets: top runs on while one of them does, and stops when the
    last one exits (on a terminal, driven by tmux)."""
    from test_top import Screen

    a = subprocess.Popen([str(wl("topmix")), "60"], stdout=subprocess.DEVNULL)
    b = subprocess.Popen([str(wl("topmix")), "60"], stdout=subprocess.DEVNULL)
    try:
        with Screen(["-p", f"{a.pid},{b.pid}", "--delay", "0.5"]) as s:
            s.wait_seconds(1)
            a.kill()
            a.wait()
            time.sleep(2)
            assert "EXIT=" not in s.text(), "top stopped while one of its processes ran"
            b.kill()
            b.wait()
            assert s.exit_status() == 0
            assert "all 2 processes exited: stopping" in (s.dir / "stderr").read_text()
            before, after = s.stty()
            assert before == after, "the terminal was not restored"
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()

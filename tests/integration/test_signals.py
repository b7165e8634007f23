# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Stop requests by signal never cost the profile (src/cmd/stop.h).

timeout(1), shells and supervisors deliver a signal to bpfprof and to its
whole process group at once, or SIGINT and SIGTERM together: however many
copies arrive close together, they are one request to stop, and bpfprof
exits 0 with a complete profile. Only a signal more than a second after the
first means "exit now", and even that waits for an output being written.
"""
import glob
import os
import re
import signal
import subprocess
import threading
import time

import pprof
from conftest import BPFPROF, Workload, parse_folded, total, wait_attached, wl


def summary(stderr):
    """(samples, lost) from the one-shot summary line."""
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def assert_complete_oneshot(out, err, comm=None):
    """The file holds every sample the summary counted (nothing lost here)."""
    samples, lost = summary(err)
    assert samples > 0, err
    folded = parse_folded(out.read_text())
    assert total(folded) == samples - lost, (total(folded), samples, lost, err)
    if comm:
        assert total(folded, comm) > 0, folded


def start(args, **kw):
    return subprocess.Popen([str(a) for a in args], stderr=subprocess.PIPE, text=True, **kw)


def test_timeout_sends_term_twice_oneshot(tmp_path):
    """timeout forwards SIGTERM to bpfprof and to its process group: two
    SIGTERMs at once. Three tries: the lost profile was a race."""
    with Workload(wl("busy"), 60) as w:
        for i in range(3):
            out = tmp_path / f"t{i}.folded"
            proc = start(["timeout", 40, BPFPROF, "-p", w.pid, "-o", out])
            seen = wait_attached(proc)
            time.sleep(1)
            proc.send_signal(signal.SIGTERM)  # to timeout, which forwards it twice
            _, err = proc.communicate(timeout=60)
            err = seen + err
            assert proc.returncode == 0, err
            assert "stopping on Terminated" in err, err
            assert_complete_oneshot(out, err, "busy")


def test_timeout_sends_term_twice_continuous(tmp_path):
    """The same in continuous mode: the partial interval is written and the
    intervals hold every sample counted."""
    d = tmp_path / "store"
    with Workload(wl("busy"), 60) as w:
        proc = start(["timeout", 40, BPFPROF, "-p", w.pid, "--interval", 2, "--output-dir", d])
        seen = wait_attached(proc)
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 0, err
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost, (\d+) intervals?", err)
    assert m, err
    samples, lost, intervals = (int(g) for g in m.groups())
    files = sorted(f for f in glob.glob(f"{d}/bpfprof-*") if ".tmp." not in f)
    assert len(files) == intervals >= 2, (files, err)  # one full interval and the partial one
    counted = sum(total(pprof.to_folded(pprof.decode(open(f, "rb").read()))) for f in files)
    assert counted == samples - lost > 0, (counted, samples, lost)
    assert not glob.glob(f"{d}/*.tmp.*"), "a temporary file was left behind"


def test_term_to_the_process_group(tmp_path):
    """kill -TERM -PGID (shells, supervisors): bpfprof and its command both
    get it; the command's profile is written, and bpfprof exits as the
    command did (128 + SIGTERM), as perf record and time(1) do."""
    out = tmp_path / "pg.folded"
    proc = start([BPFPROF, "-o", out, "--", wl("busy"), 60], start_new_session=True)
    seen = wait_attached(proc)
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "was killed by Terminated" in err, err
    assert_complete_oneshot(out, err, "busy")


def test_sigint_and_sigterm_together(tmp_path):
    out = tmp_path / "both.folded"
    with Workload(wl("busy"), 60) as w:
        proc = start([BPFPROF, "-p", w.pid, "-o", out])
        seen = wait_attached(proc)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 0, err
    assert_complete_oneshot(out, err, "busy")


def test_late_second_signal_exits_but_finishes_the_write(tmp_path):
    """A second request a second and more after the first is "exit now" - but
    not in the middle of writing the output. The output is a FIFO here whose
    one-page buffer the test filled, so bpfprof is held in its write until the
    test reads: it must deliver the whole profile, then die of the signal.
    (The reader is there first: bpfprof never waits in open() for one.)"""
    import fcntl
    fifo = tmp_path / "out.folded"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(fifo, os.O_WRONLY)
    page = fcntl.fcntl(wfd, fcntl.F_SETPIPE_SZ, 4096)
    os.write(wfd, b"#" * page)  # full: bpfprof's write waits for the reader
    os.close(wfd)
    os.set_blocking(rfd, True)
    try:
        with Workload(wl("busy"), 60) as w:
            proc = start([BPFPROF, "-p", w.pid, "-o", fifo])
            seen = wait_attached(proc)
            time.sleep(1)
            proc.send_signal(signal.SIGINT)
            time.sleep(1.5)  # bpfprof now waits in its write for the reader
            assert proc.poll() is None, "bpfprof ended before its output was read"
            proc.send_signal(signal.SIGINT)  # exit now, once the write is done
            time.sleep(0.2)
            assert proc.poll() is None, "bpfprof died in the middle of its write"
            data = []

            def read_all():
                chunks = []
                while chunk := os.read(rfd, 65536):
                    chunks.append(chunk)
                data.append(b"".join(chunks)[page:].decode())

            reader = threading.Thread(target=read_all)
            reader.start()
            _, err = proc.communicate(timeout=60)
            reader.join(timeout=60)
    finally:
        os.close(rfd)
    err = seen + err
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert data and data[0].endswith("\n"), data
    samples, lost = summary(err)
    assert total(parse_folded(data[0])) == samples - lost > 0, (data, err)

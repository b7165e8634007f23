# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof top: the full-screen view driven in tmux (send-keys, capture-pane),
and its plain snapshots without a terminal.

The workload topmix splits its CPU 3:1 between hot_spin and cold_spin with
the same loop in both, so hot_spin's share of the two is 3/4 on any CPU and
under any load; the tolerance is four standard deviations of a binomial
share over the samples the screen shows.
"""
import contextlib
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conftest import (BPFPROF, ROOT, Workload, assert_count_at_least, count_tolerance,
                      sample_rate, uwl, wait_attached, wl)

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import churn  # noqa: E402  (tools/: shared with bench_top.py)


ROW = re.compile(r"^\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\S+)\s+(.+?)\s*$")
HEADER = re.compile(r"bpfprof top: .* \((\d+) s so far\), .* (\d+) samples shown")


def tmux(*args, check=True):
    # A server of the tests' own: nobody else's sessions, nor theirs ours.
    p = subprocess.run(["tmux", "-L", "bpfprof-tests"] + [str(a) for a in args],
                       capture_output=True, text=True)
    if check:
        assert p.returncode == 0, f"tmux {args}: {p.stderr}"
    return p.stdout


class Screen:
    """bpfprof top in a detached tmux session of its own. The pane's shell
    saves the terminal settings (stty -g) before and after bpfprof, and
    prints bpfprof's exit status."""

    def __init__(self, args, width=160, height=40):
        self.dir = Path(tempfile.mkdtemp(prefix="bpfprof-top-"))
        self.name = f"bpfprof-test-{os.getpid()}-{id(self) % 100000}"
        cmd = " ".join(shlex.quote(str(a)) for a in [BPFPROF, "top"] + list(args))
        # trap: Ctrl-C is for bpfprof; the shell survives it to report.
        script = (f"trap : INT; stty -g > {self.dir}/before; {cmd} 2> {self.dir}/stderr; "
                  f"echo EXIT=$?; stty -g > {self.dir}/after; sleep 600")
        tmux("new-session", "-d", "-s", self.name, "-x", width, "-y", height, "sh", "-c", script)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tmux("kill-session", "-t", self.name, check=False)

    def text(self):
        return tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys):
        tmux("send-keys", "-t", self.name, *keys)

    def alternate_on(self):
        return tmux("display-message", "-p", "-t", self.name, "#{alternate_on}").strip()

    def wait_for(self, pred, timeout=60, what="the screen"):
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if pred(text):
                return text
            time.sleep(0.2)
        stderr = (self.dir / "stderr").read_text() if (self.dir / "stderr").exists() else ""
        raise AssertionError(f"timed out waiting for {what}:\n{text}\nstderr:\n{stderr}")

    def wait_seconds(self, secs):
        """The screen once its window covers at least secs seconds."""
        def ok(text):
            m = HEADER.search(text)
            return m and int(m.group(1)) >= secs
        return self.wait_for(ok, what=f"{secs} s of sampling")

    def exit_status(self):
        text = self.wait_for(lambda t: "EXIT=" in t, what="bpfprof to exit")
        return int(re.search(r"EXIT=(\d+)", text).group(1))

    def stty(self):
        after = self.dir / "after"
        deadline = time.monotonic() + 10
        # The shell creates the file before stty has written to it.
        while not (after.exists() and after.read_text().endswith("\n")) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        return (self.dir / "before").read_text(), (self.dir / "after").read_text()


def rows(text):
    """{function: (self %, total %, samples, module)} of the function table."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[m.group(5)] = (float(m.group(1)), float(m.group(2)), int(m.group(3)),
                               m.group(4))
    return out


def assert_whole_rows(text):
    """Rows are redrawn only where they changed: every line between the
    column header and the key line is a whole row or blank (no stale piece
    of an earlier row left beside a shorter one), and the figures add up."""
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if "Self%" in ln)
    for ln in lines[head + 1:]:
        if ln.startswith(("s sort", "up/down", "filter (")):
            break
        m = ROW.match(ln)
        assert not ln.strip() or m, f"not a whole row: {ln!r}\n{text}"
        if m:
            assert float(m.group(1)) <= float(m.group(2)) + 0.01, f"self > total: {ln!r}"


def ordered(text):
    return [ROW.match(ln) for ln in text.splitlines() if ROW.match(ln)]


def check_share(hot, cold, p=0.75):
    n = hot + cold
    assert n >= 200, f"only {n} samples of topmix in the window"
    sigma = math.sqrt(p * (1 - p) / n)
    share = hot / n
    assert abs(share - p) <= 4 * sigma + 0.5 / n, \
        f"hot_spin has {share:.3f} of topmix's samples, expected {p} +- {4 * sigma:.3f} (n={n})"


def test_top_shows_the_hot_function_with_its_share():
    with sample_rate(999) as hz, Workload(wl("topmix"), 60) as w, \
            Screen(["-p", w.pid, "-F", hz]) as s:
        text = s.wait_seconds(3)
        assert s.alternate_on() == "1", "top should draw on the alternate screen"
        r = rows(text)
        assert "hot_spin" in r and "cold_spin" in r, text
        first = ordered(text)[0]
        assert first.group(5) == "hot_spin", text
        check_share(r["hot_spin"][2], r["cold_spin"][2])
        # The self share on screen is of every sample shown (kernel ones too).
        shown = int(HEADER.search(text).group(2))
        assert abs(r["hot_spin"][0] - 100.0 * r["hot_spin"][2] / shown) < 0.01, text
        assert r["hot_spin"][3] == "topmix", text
        assert re.search(rf"process \d+ at {hz} Hz, sliding window 10 s", text), text
        s.keys("q")
        assert s.exit_status() == 0


def test_top_keys_sort_filter_frames_zoom_pause():
    topmix, tcomm = uwl("topmix")
    busy, bcomm = uwl("busy")
    with Workload(topmix, 90) as a, Workload(busy, 90) as b, \
            Screen(["-p", f"{a.pid},{b.pid}", "-F", 199]) as s:
        text = s.wait_for(lambda t: "hot_spin" in t and "leaf_a" in t, what="both workloads")

        # s: sorted by total, largest first.
        s.keys("s")
        text = s.wait_for(lambda t: "sort: total" in t)
        totals = [float(m.group(2)) for m in ordered(text)]
        assert totals and totals == sorted(totals, reverse=True), text
        s.keys("s")
        text = s.wait_for(lambda t: "sort: self" in t)
        selfs = [float(m.group(1)) for m in ordered(text)]
        assert selfs == sorted(selfs, reverse=True), text

        # /: by process name, then by pid; Ctrl-U and Enter clear it.
        s.keys("/", bcomm, "Enter")
        text = s.wait_for(lambda t: f"filter: {bcomm}" in t and "hot_spin" not in t)
        assert "leaf_a" in rows(text), text
        s.keys("/", "C-u", str(a.pid), "Enter")
        text = s.wait_for(lambda t: f"filter: {a.pid}" in t and "leaf_a" not in t)
        assert "hot_spin" in rows(text), text
        s.keys("/", "C-u", "Enter")
        text = s.wait_for(lambda t: "filter: none" in t and "leaf_a" in t and "hot_spin" in t)
        assert_whole_rows(text)

        # k: user frames only, then kernel frames only, then all.
        s.keys("k")
        text = s.wait_for(lambda t: "frames: user" in t)
        assert all(m.group(4) != "[kernel]" for m in ordered(text)), text
        assert_whole_rows(text)
        s.keys("k")
        text = s.wait_for(lambda t: "frames: kernel" in t)
        assert all(m.group(4) == "[kernel]" for m in ordered(text)), text
        s.keys("k")
        s.wait_for(lambda t: "frames: all" in t)

        # p: the process list; select topmix, Enter zooms into it; z goes back.
        s.keys("p")
        text = s.wait_for(lambda t: "Command" in t and tcomm in t and bcomm in t)
        lines = [ln for ln in text.splitlines() if re.match(r"^\s+[\d.]+\s+\d+\s+\d+\s+\S", ln)]
        pos = next(i for i, ln in enumerate(lines) if tcomm in ln)
        s.keys(*(["Down"] * pos), "Enter")
        text = s.wait_for(lambda t: f"process: {a.pid}" in t and "Self%" in t)
        r = rows(text)
        assert "hot_spin" in r and "leaf_a" not in r, text
        s.keys("z")
        text = s.wait_for(lambda t: "process: all" in t and "leaf_a" in t)

        # space: paused, the figures stay; space again: they move on.
        s.keys("Space")
        text = s.wait_for(lambda t: "PAUSED" in t)
        shown = HEADER.search(text).group(2)
        time.sleep(2.5)
        assert HEADER.search(s.text()).group(2) == shown, s.text()
        s.keys("Space")
        s.wait_for(lambda t: "PAUSED" not in t and HEADER.search(t).group(2) != shown)
        s.keys("q")
        assert s.exit_status() == 0


def test_top_quit_keys_and_signals_restore_the_terminal():
    for how in ("q", "C-c", "SIGTERM"):
        with Workload(wl("busy"), 60) as w, Screen(["-p", w.pid]) as s:
            s.wait_for(lambda t: "leaf_a" in t, what="the first refresh")
            assert s.alternate_on() == "1"
            if how == "SIGTERM":
                pid = subprocess.run(["pgrep", "-f", f"^{BPFPROF} top -p {w.pid}"],
                                     capture_output=True, text=True).stdout.split()
                assert pid, "bpfprof top is not running"
                os.kill(int(pid[0]), 15)
            else:
                s.keys(how)
            assert s.exit_status() == 0, how
            before, after = s.stty()
            assert before == after, f"{how}: terminal settings not restored"
            assert s.alternate_on() == "0", f"{how}: still on the alternate screen"
            assert "bpfprof top:" not in s.text(), f"{how}: the view is still on screen"


def test_top_survives_resizes():
    with Workload(wl("busy"), 60) as w, Screen(["-p", w.pid], width=120, height=30) as s:
        s.wait_for(lambda t: "leaf_a" in t, what="the first refresh")
        for width, height in ((40, 8), (10, 3), (200, 60), (80, 24)):
            tmux("resize-window", "-t", s.name, "-x", width, "-y", height)
            time.sleep(1.2)
            text = s.text()
            assert "EXIT=" not in text, f"exited after a resize to {width}x{height}:\n{text}"
            assert "bpfprof top"[:width] in text, f"nothing drawn at {width}x{height}:\n{text}"
            widest = max(len(ln) for ln in text.splitlines())
            assert widest <= width, f"drawn past the edge at {width}x{height}:\n{text}"
        text = s.wait_for(lambda t: "leaf_a" in t)
        assert_whole_rows(text)
        s.keys("q")
        assert s.exit_status() == 0


def test_top_without_a_terminal_prints_snapshots():
    with sample_rate(999) as hz, Workload(wl("topmix"), 60) as w:
        p = subprocess.run([str(BPFPROF), "top", "-p", str(w.pid), "-F", str(hz), "-d", "3.5",
                            "--rows", "5"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    snaps = [s for s in p.stdout.split("\n\n") if s.strip()]
    assert len(snaps) == 3, p.stdout
    for i, snap in enumerate(snaps):
        m = HEADER.search(snap)
        assert m and int(m.group(1)) == i + 1, snap
        assert len(ordered(snap)) <= 5, snap
        assert "\x1b" not in snap, "escape sequences in plain output"
    r = rows(snaps[-1])
    assert ordered(snaps[-1])[0].group(5) == "hot_spin", snaps[-1]
    check_share(r["hot_spin"][2], r["cold_spin"][2])


# A JIT names its code with what a terminal obeys: U+009B (CSI, UTF-8) and a
# raw 0x9b, each with "2J" (clear the screen), an OSC that sets the window
# title, a right-to-left override.
HOSTILE_NAME = b"evil\xc2\x9b2J\x9b2Jx\x1b]0;pwned\x07y\xe2\x80\xaeRLO"
HOSTILE_SHOWN = b"evil?2J?2Jx?]0;pwned?y?RLO"
# In the files (and the report of one) ';' separates frames and a byte that
# is not UTF-8 is U+FFFD, as in every format writer.
HOSTILE_FOLDED = b"evil?2J\xef\xbf\xbd2Jx?]0:pwned?y?RLO"
OBEYED = (b"\x1b]", b"\xc2\x9b", b"\x9b2J", b"\xe2\x80\xae", b"\x07")


def assert_nothing_obeyed(out, what):
    for seq in OBEYED:
        assert seq not in out, f"{what}: {seq!r} reached the output"


def test_top_shows_hostile_names_without_their_terminal_controls(tmp_path):
    """A process's function names go to the operator's terminal: the
    controls in them come out as '?', on the screen (the pane's raw bytes,
    as bpfprof wrote them), in the plain snapshots, and in the profiles and
    report of the same process. Without this, the name clears the screen
    and sets the window title."""
    jit = subprocess.Popen([str(wl("jitlike")).encode(), b"120", b"normal", HOSTILE_NAME],
                           stdout=subprocess.PIPE)
    pid = int(jit.stdout.readline().split()[0])
    raw = tmp_path / "pane.raw"
    try:
        with Screen(["-p", pid, "-F", 99]) as s:
            tmux("pipe-pane", "-o", "-t", s.name, f"cat >> {shlex.quote(str(raw))}")
            s.wait_for(lambda t: "evil?2J" in t, what="the JIT's name")
            s.keys("q")
            assert s.exit_status() == 0
        out = raw.read_bytes()
        assert HOSTILE_SHOWN in out, out[-2000:]
        assert_nothing_obeyed(out, "the screen")
        snap = subprocess.run([str(BPFPROF), "top", "-p", str(pid), "-d", "1.5"],
                              capture_output=True, timeout=60)
        assert snap.returncode == 0, snap.stderr
        assert HOSTILE_SHOWN in snap.stdout, snap.stdout
        assert_nothing_obeyed(snap.stdout + snap.stderr, "the snapshot")
        folded = tmp_path / "jit.folded"
        rec = subprocess.run([str(BPFPROF), "-p", str(pid), "-d", "1.5", "-o", str(folded)],
                             capture_output=True, timeout=60)
        assert rec.returncode == 0, rec.stderr
        rep = subprocess.run([str(BPFPROF), "report", str(folded)], capture_output=True,
                             timeout=60)
        assert rep.returncode == 0, rep.stderr
        for what, out in (("folded", folded.read_bytes()), ("report", rep.stdout),
                          ("stderr", rec.stderr + rep.stderr)):
            assert_nothing_obeyed(out, what)
        assert HOSTILE_FOLDED in folded.read_bytes()
        assert HOSTILE_FOLDED in rep.stdout
    finally:
        jit.kill()
        jit.wait()
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)


def test_top_catalog_replacements_keep_counts_and_names():
    """Every CATALOG_SPAN seconds (60; 2 here) the profile the drains go into
    is replaced; the samples the window still shows are carried into the
    next with their keys' names (not symbolized again). Across replacements
    the window keeps the same number of samples (none lost, none counted
    twice) and topmix's 3:1 split."""
    with sample_rate(499) as hz, Workload(wl("topmix"), 60) as w:
        p = subprocess.run([str(BPFPROF), "top", "-p", str(w.pid), "-F", str(hz), "--window", "2",
                            "-d", "9.5", "--rows", "5", "-v"], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, BPFPROF_TEST_CATALOG_SECS="2"))
    assert p.returncode == 0, p.stderr
    m = re.search(r"catalogs: (\d+) replaced, (\d+) samples carried into the next", p.stderr)
    assert m and int(m.group(1)) >= 3 and int(m.group(2)) >= int(m.group(1)), p.stderr
    snaps = [s for s in p.stdout.split("\n\n") if s.strip()]
    full, hot, cold = [], 0, 0
    for i, snap in enumerate(snaps):
        h = HEADER.search(snap)
        assert h, snap
        if int(h.group(1)) >= 2:  # the 2 s window full
            r = rows(snap)
            assert ordered(snap)[0].group(5) == "hot_spin", snap
            full.append(int(h.group(2)))
            # The split over every other window (they do not overlap): one
            # 2 s window's ~1,000 samples vary more than a binomial's (the
            # timer and the loop beat against each other; 4.5 sigma once).
            if len(full) % 2:
                hot, cold = hot + r["hot_spin"][2], cold + r["cold_spin"][2]
    assert len(full) >= 5, p.stdout
    check_share(hot, cold)
    # A full window is 2 refreshes' samples: a replacement neither drops a
    # refresh (half) nor counts one twice (1.5x). (Also the window's own
    # edge: it once held 2 or 3 refreshes, by how the drains fell.)
    mid = sorted(full)[len(full) // 2]
    assert all(0.8 * mid <= n <= 1.25 * mid for n in full), (full, p.stdout)


def test_top_whole_machine_gives_tables_to_a_process_that_keeps_running():
    """-a with --unwind auto: a new process's unwind tables wait until it has had
    samples in 3 refreshes (short-lived ones never pay for them); then its stacks
    are walked with them. uw_leaf's leaf has no frame pointer: frame pointers
    skip its caller (test_unwind), tables find it under every leaf sample."""
    path, comm = uwl("uw_leaf")

    def ours(text):
        """rows() of our copy's functions (another test's uw_leaf may run too)."""
        return {m.group(5): (float(m.group(1)), float(m.group(2)), int(m.group(3)))
                for m in ordered(text) if m.group(4) == comm}

    # Both niced up: on a crowded machine the workload still makes 1% of the
    # samples (the rule), and top still refreshes beside it.
    with Workload("nice", "-n", "-10", path, 60):
        time.sleep(0.5)
        p = subprocess.run(["nice", "-n", "-10", str(BPFPROF), "top", "-a", "-F", "199", "--window", "2", "-d", "10.5",
                            "--sort", "total", "--rows", "100", "-v"],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    snaps = [s for s in p.stdout.split("\n\n") if s.strip()]
    # (A crowded machine may skip a refresh or two: the last one is what counts.)
    assert len(snaps) >= 4, p.stdout
    # The last window (2 s) holds only refreshes after its tables came in (promoted at
    # the third, walked with them from the next or, on a busy machine, the one after).
    r = ours(snaps[-1])
    assert "leaf_nofp" in r and r["leaf_nofp"][2] >= 30, (comm, snaps[-1])
    leaf_self, caller_total = r["leaf_nofp"][0], r.get("leaf_caller", (0, 0))[1]
    assert caller_total >= 0.9 * leaf_self, snaps[-1]
    m = re.search(r"unwind tables deferred for (\d+) new images, built for (\d+)", p.stderr)
    assert m and int(m.group(2)) >= 1, p.stderr
    # The first refreshes walked it with frame pointers: its caller was missing then.
    first = ours(snaps[1])
    if "leaf_nofp" in first and first["leaf_nofp"][2] >= 50:
        assert first.get("leaf_caller", (0, 0))[1] < 0.5 * first["leaf_nofp"][0], snaps[1]


def test_top_does_not_wake_up_for_an_interpreter_that_never_starts():
    """pylinked links libpython3.11 but never starts the interpreter (as perf,
    gdb and vim do): its _PyRuntime stays without an interpreter, and the
    unwinder probes it again, for up to ~50 tries. The first second's retries
    (every 20, then 100 ms: a Python starting up is found early) wake top up
    on their own; the once-a-second ones are taken at the refreshes top wakes
    up for anyway. Without that, each of them was one more wake-up a second
    (~0.3 ms of CPU each on this VM). Each retry reads only the process's
    memory (cpython__recheck), not its mappings and symbol tables again."""
    with Workload("nice", "-n", "-10", wl("pylinked"), 60):
        time.sleep(0.5)
        p = subprocess.run(["nice", "-n", "-10", str(BPFPROF), "top", "-a", "-F", "99", "-d", "20.5",
                            "--rows", "5", "-v"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    m = re.search(r"unwind tables deferred for \d+ new images, built for (\d+)", p.stderr)
    assert m and int(m.group(1)) >= 1, p.stderr
    retries = re.search(r"(\d+) probes again of Python interpreters not started yet", p.stderr)
    early = re.search(r"(\d+) waits ended early for the unwinder", p.stderr)
    assert retries and early, p.stderr
    # Promoted at its third refresh: 13 retries in its first second, then one
    # every 1-2 s (at a refresh) for the 16 s left.
    assert int(retries.group(1)) >= 13 + 5, p.stderr
    # The first second's 13 (one more if a refresh came late), none after.
    assert int(early.group(1)) <= 14, p.stderr


def test_top_v_tells_the_steady_state_from_the_start_up():
    """-v's exit summary gives the CPU of the refreshes after the first ten
    apart: the first drains symbolize every stack the machine runs (a busy
    host: milliseconds each), which a whole-run average mixes into what a
    long run costs. The steady figures must add up: the process's CPU a
    refresh holds the main thread's drain, table and screen, and the share
    of a CPU is that CPU over the seconds it covers."""
    with Workload(wl("busy"), 30, 1):
        p = subprocess.run([str(BPFPROF), "top", "-a", "-F", "99", "-d", "14.5", "--stdio",
                            "--rows", "3", "-v"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    n = int(re.search(r"(\d+) refreshes, CPU per refresh", p.stderr).group(1))
    m = re.search(r"after the first 10 refreshes: ([\d.]+) ms CPU a refresh \(([\d.]+)% of a CPU "
                  r"over ([\d.]+) s\): ([\d.]+) ms drain, ([\d.]+) ms table, ([\d.]+) ms screen "
                  r"\(the rest: [^)]*\); ([\d.]+) waits a refresh, ([\d.]+) slept", p.stderr)
    assert m, p.stderr
    cpu, share, secs, drain, table, screen, waits, slept = map(float, m.groups())
    assert n >= 13 and 2 <= secs <= n - 10 + 1, p.stderr
    # Rounded to the printed 3 decimals: a refresh's parts within its whole.
    assert drain + table + screen <= cpu + 0.002, p.stderr
    # The share is CPU over seconds: within what the printed roundings allow
    # (CPU a refresh to 0.0005 ms, seconds to 0.05 s, the share to 0.0005%).
    lo = (cpu - 0.0005) * (n - 10) / (secs + 0.05) / 10 - 0.0005
    hi = (cpu + 0.0005) * (n - 10) / (secs - 0.05) / 10 + 0.0005
    assert lo <= share <= hi, (lo, share, hi, p.stderr)
    # One wait a refresh at least (a refresh is a wake-up), each asleep.
    assert waits >= 0.95 and slept <= waits, p.stderr


def short_lived_in_top(hz, env, exe=None):
    """top -a over the shortlived workload, started once top samples:
    children that spin ~8 ms each in short_spin and exit, gone long before
    top takes its notices (every 200 ms). Returns (short_spin's self
    samples, the children's CPU seconds, the part of them in short_spin,
    children, images named from their notice's mappings, top's stderr)."""
    top = subprocess.Popen([str(BPFPROF), "top", "-a", "-F", str(hz), "--window", "30", "-d", "9",
                            "--rows", "200", "-v"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))
    try:
        started = wait_attached(top)
        wl_out, _ = subprocess.Popen([str(exe or wl("shortlived")), "7", "8", "20"],
                                     stdout=subprocess.PIPE, text=True).communicate(timeout=60)
        out, err = top.communicate(timeout=60)
    finally:
        if top.poll() is None:
            top.kill()
            top.wait()
    err = started + err
    assert top.returncode == 0, err
    snaps = [s for s in out.split("\n\n") if s.strip()]
    spin = sum(int(m.group(3)) for m in ordered(snaps[-1])
               if m.group(5) == "short_spin" and m.group(4) == "shortlived")
    cpu = float(re.search(r"children_cpu ([\d.]+)", wl_out).group(1))
    spin_cpu = float(re.search(r"spin_cpu ([\d.]+)", wl_out).group(1))
    children = int(re.search(r"children (\d+)", wl_out).group(1))
    m = re.search(r"images lost \((\d+) of them named from their notice's mappings\)", err)
    assert m, err
    return spin, cpu, spin_cpu, children, int(m.group(1)), err


def test_top_names_processes_gone_before_it_reads_them():
    """A new image's notice carries the mappings of its first sample's stack
    as the kernel had them (bpf_find_vma): a process gone before top reads its
    /proc files is named from them, through the files top already knows (the
    parent's: the same binary and libc). Every sample of the children's CPU
    time in short_spin (as each child measured it) must be named short_spin.
    Without the notice's mappings (the test's control: the workload really is
    gone before top looks), hardly any is."""
    with sample_rate(499) as hz:
        spin, cpu, spin_cpu, children, mapped, err = short_lived_in_top(hz, {})
        assert children >= 100, (children, err)
        assert_count_at_least(spin, spin_cpu * hz, "short_spin, named from notices")
        assert mapped >= 0.5 * children, (mapped, children, err)
        spin0, cpu0, _, _, mapped0, err0 = short_lived_in_top(
            hz, {"BPFPROF_TEST_NO_NOTICE_VMAS": "1"})
    assert mapped0 == 0, err0
    expected0 = 0.25 * cpu0 * hz
    assert spin0 <= expected0 + count_tolerance(expected0), \
        f"without the notices' mappings short_spin had {spin0} samples of ~{cpu0 * hz:.0f}: " \
        "the children were read alive, and the test shows nothing"


def test_top_names_gone_processes_on_a_busy_host():
    """The same while two shell loops start ~20 other short processes a
    second: a child's samples come between other images' on its CPU, and
    its notice may have gone from the other CPU. Each CPU then sends the
    mappings of a young image's sample again when it comes back to it (an
    update), not only while no other image came between: before, a third
    of short_spin's samples here were [unknown]."""
    with churn(loops=2), sample_rate(499) as hz:
        spin, cpu, spin_cpu, children, mapped, err = short_lived_in_top(hz, {})
    assert children >= 50, (children, err)
    assert_count_at_least(spin, spin_cpu * hz, "short_spin on a busy host, named from notices")
    assert mapped >= 0.5 * children, (mapped, children, err)


@contextlib.contextmanager
def overlay_copy(path):
    """path copied into the lower layer of an overlayfs mount, as a container
    runs its programs: the file at the mount point is yielded."""
    base = Path(tempfile.mkdtemp(prefix="bpfprof-ovl-"))
    dirs = {d: base / d for d in ("lower", "upper", "work", "merged")}
    for d in dirs.values():
        d.mkdir()
    subprocess.run(["cp", str(path), str(dirs["lower"])], check=True)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={dirs['lower']},upperdir={dirs['upper']},workdir={dirs['work']}",
                    str(dirs["merged"])], check=True)
    try:
        yield dirs["merged"] / Path(path).name
    finally:
        subprocess.run(["umount", "-l", str(dirs["merged"])], check=False)
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_top_names_gone_processes_of_an_overlayfs_program():
    """A container's program (overlayfs): the kernel's mappings name the
    layer's device, /proc/PID/maps the overlay's. The parent, read both ways,
    teaches top the pair; its gone children are named through it."""
    with sample_rate(499) as hz, overlay_copy(wl("shortlived")) as exe:
        spin, cpu, spin_cpu, children, mapped, err = short_lived_in_top(hz, {}, exe)
    assert children >= 100, (children, err)
    assert_count_at_least(spin, spin_cpu * hz, "short_spin of an overlayfs program")
    assert mapped >= 0.5 * children, (mapped, children, err)


def test_top_usage_errors():
    for args, msg in ((["-a", "-p", "1"], "exclude each other"),
                      (["--window", "0"], "invalid --window"),
                      (["--sort", "name"], "invalid --sort"),
                      (["extra"], "unexpected argument")):
        p = subprocess.run([str(BPFPROF), "top"] + args, capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)
    p = subprocess.run([str(BPFPROF), "top", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "Keys:" in p.stdout

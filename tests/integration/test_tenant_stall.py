# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Tenants attack the root agent with files that cost it super-linear or
repeated work (issue 35, round three). The tenant runs the programs and makes
the files; root's bpfprof must keep its duration, drain on time, obey SIGTERM
and profile everyone else, and spend bounded work on the tenant's files
(threat model rules 3 and 5)."""
import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from conftest import (BPFPROF, ROOT, Reaped, Workload, as_tenant, assert_count_at_least,
                      cpu_seconds, parse_folded, total, uwl, wait_attached)

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import make_fake_python, make_go_lookalike  # noqa: E402  (shared with the soak)

TENANT = as_tenant([])  # setpriv ... --: what the tenant runs goes after it

# --- a file that only looks like Go ----------------------------------------------
#
# Without section headers, a Go binary's pc-line table is found by its header,
# searched in the read-only segments. Every 8 bytes of the tenant's file look
# like a Go 1.20 header (benchlib.GO_LOOKALIKE) that never holds. Each
# candidate used to be copied with the rest of the segment before its header
# was read: 1 MiB took 3.6 s, 4 MiB 37 s, 8 MiB never finished - and
# meanwhile nothing was drained and SIGTERM went unheard.


def lookalike_go(d, name, mib=8):
    """As the tenant: a static executable without section headers that spins,
    with a read-only segment of `mib` MiB of Go-header lookalikes."""
    return Path(make_go_lookalike(Path(d) / name, mib, TENANT))


class TenantProc(Reaped):
    """A program the tenant runs (as_tenant), killed at the end."""

    def __init__(self, *argv, settle=0.3):
        self.proc = subprocess.Popen(as_tenant(argv), stdout=subprocess.DEVNULL)
        self.pid = self.proc.pid
        time.sleep(settle)
        assert self.proc.poll() is None, f"{argv} died at start"


class Agent(Reaped):
    """Root's bpfprof, timed from its "sampling" line; killed if a test leaves it."""

    def __init__(self, args, wrap=()):
        self.proc = subprocess.Popen(list(wrap) + [str(BPFPROF)] + [str(a) for a in args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.head = wait_attached(self.proc)
        self.t0 = time.monotonic()

    def finish(self, within):
        """Waits for the exit, at most `within` seconds from the start of sampling:
        (seconds it took, stdout, stderr). Fails, and kills it, past that."""
        try:
            out, err = self.proc.communicate(timeout=max(within - (time.monotonic() - self.t0), 0.1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"bpfprof still running {within:.1f} s after it started "
                                 f"sampling:\n{self.head}{err}")
        took = time.monotonic() - self.t0
        assert self.proc.returncode == 0, self.head + err
        return took, out, self.head + err


# The last drain, symbolization and the write after the duration or the
# signal: well under this on this VM, even beside the other tests. (Before
# the fix these runs did not end for minutes: 8 MiB of lookalikes took more
# than an hour to search.)
SLACK = 3.0
FREQ = 99


def busy_samples(folded, comm, cpu):
    """The other process is profiled as it ran: its samples against its CPU time."""
    assert_count_at_least(total(folded, comm), FREQ * cpu, f"{comm}, {cpu:.2f} s of CPU")


def test_a_go_lookalike_does_not_stretch_a_timed_run(tenant_dir, tmp_path):
    """-p the tenant's program and another process, -d 3: done on time, both
    profiled (the tenant's frames as file+offset)."""
    golike = lookalike_go(tenant_dir, "golike", 8)
    busy, comm = uwl("busy")
    out = tmp_path / "out.folded"
    with TenantProc(golike) as t, Workload(busy, 30) as w:
        with Agent(["-p", f"{t.pid},{w.pid}", "-d", 3, "-o", out]) as a:
            cpu0 = cpu_seconds(w.pid)
            _, _, err = a.finish(3 + SLACK)
            cpu = cpu_seconds(w.pid) - cpu0
    folded = parse_folded(out.read_text())
    busy_samples(folded, comm, cpu)
    assert any(s.startswith("golike;") and "golike+0x" in s for s in folded), (folded, err)


def test_a_go_lookalike_does_not_hold_up_the_drains(tenant_dir, tmp_path):
    """--interval 1: an interval file every second, on time, while the
    tenant's program runs from the start."""
    golike = lookalike_go(tenant_dir, "golike", 16)
    busy, comm = uwl("busy")
    d = tmp_path / "store"
    with TenantProc(golike) as t, Workload(busy, 30) as w, \
            Agent(["-p", f"{t.pid},{w.pid}", "--interval", 1, "--output-dir", d, "-d", 6]) as a:
        _, _, err = a.finish(6 + SLACK)
    files = sorted(f for f in glob.glob(f"{d}/bpfprof-*") if ".tmp." not in f)
    assert len(files) >= 6, (files, err)
    times = sorted(os.stat(f).st_mtime for f in files)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < 2.0, (gaps, err)


def test_sigterm_is_obeyed_while_a_go_lookalike_is_read(tenant_dir, tmp_path):
    """No -d: SIGTERM once the tenant's file is being read (the first drain, a
    second in) stops the agent within a couple of seconds, with its profile."""
    golike = lookalike_go(tenant_dir, "golike", 16)
    busy, comm = uwl("busy")
    out = tmp_path / "out.folded"
    with TenantProc(golike) as t, Workload(busy, 30) as w, \
            Agent(["-p", f"{t.pid},{w.pid}", "-o", out]) as a:
        cpu0 = cpu_seconds(w.pid)
        time.sleep(2.5)
        a.proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, _, err = a.finish(2.5 + SLACK)
        stopped = time.monotonic() - t0
        cpu = cpu_seconds(w.pid) - cpu0
    assert stopped < SLACK, err
    assert "stopping on Terminated" in err, err
    busy_samples(parse_folded(out.read_text()), comm, cpu)


# --- fake python3.11 processes ----------------------------------------------------
#
# A process whose mappings include a python3.X or libpython3.X file is probed
# for an interpreter: the file's symbol tables are searched for _PyRuntime.
# A python3.X that needs a libpython3 not mapped yet is probed again, as one
# whose interpreter is not initialized yet is. The tenant's python3.11
# (benchlib.make_fake_python) has half a million symbols and needs a
# libpython3.11.so.1.0 of its own, which has no interpreter: every probe of
# every process read the whole symbol table again, up to 50 tries a process.


def io_read_chars(pid):
    """rchar of /proc/PID/io: bytes the process read with read() and pread()."""
    with open(f"/proc/{pid}/io") as f:
        return int(re.search(r"rchar: (\d+)", f.read()).group(1))


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_fake_pythons_cost_one_read_of_their_file(tenant_dir, tmp_path):
    """20 processes of the tenant's python3.11 (half a million symbols, its own
    libpython3.11.so.1.0 without an interpreter), -p all of them for 14 s:
    the file's symbols are read once by the probes (and once for names), not
    once per process and try; each process is tried again only through its
    first second; and after that the agent is idle (from 6 to 13 s: past
    the first second's tries and the reads of the file, well within the
    once-a-second tries of before, which went on to ~40 s). Was: every try of
    every process read the 21 MB of symbol tables again, 50 tries a process,
    and the agent spent its CPU on that for as long (20 such processes took
    over half a core for 45 s). bpfprof runs at nice -10, so a loaded machine
    does not keep the old tries from running; a quiet agent stays quiet."""
    py = Path(make_fake_python(tenant_dir, prefix=TENANT))
    size = py.stat().st_size
    clk = os.sysconf("SC_CLK_TCK")
    with ExitStack() as stack:
        procs = [stack.enter_context(TenantProc(py, settle=0)) for _ in range(20)]
        time.sleep(0.5)
        assert all(p.proc.poll() is None for p in procs)
        a = stack.enter_context(Agent(["-p", ",".join(str(p.pid) for p in procs), "-d", 14,
                                       "-v", "-o", tmp_path / "out.folded"],
                                      wrap=["nice", "-n", "-10"]))
        seen = []  # (seconds since sampling started, CPU ticks, bytes read)

        def sample():
            while a.proc.poll() is None:
                try:
                    seen.append((time.monotonic() - a.t0, cpu_ticks(a.proc.pid),
                                 io_read_chars(a.proc.pid)))
                except (OSError, ValueError, AttributeError):
                    break
                time.sleep(0.1)
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        _, _, err = a.finish(300)
        t.join()
    folded = parse_folded((tmp_path / "out.folded").read_text())
    m = re.search(r"(\d+) probes again of interpreters not started yet, (\d+) interpreter "
                  r"files' symbols read", err)
    retries, reads = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    late = [c for s, c, r in seen if 6 <= s <= 13]
    assert len(late) > 10, seen
    cpu = (late[-1] - late[0]) / clk
    what = (f"{retries} tries again, {reads} files read, {seen[-1][2] >> 20} MiB read "
            f"({size >> 20} MiB file), {cpu:.2f} s of CPU from 6 to 13 s, "
            f"{total(folded, 'python3.11')} samples\n{err}")
    assert total(folded, "python3.11") > 100, what
    # The probes' read and the symbolizer's, and what any run reads (BTF,
    # kallsyms, /proc): not 20 processes x 13-50 tries x 21 MB (1.7 GB here).
    assert seen[-1][2] < 3 * size + (64 << 20), what
    # From 6 s to 13 s: drains of 20 processes' samples, nothing more (0.01 s
    # in 13 s here; the tries went on, 1.3 s in 13 s in a loaded machine's
    # share of a core: 0.7 s in these 7 s).
    assert cpu < 0.3, what
    assert m, what
    assert reads <= 2, what  # python3.11 and the libpython, once each
    assert retries <= 20 * 12, what  # the first second's tries (PY_FAST_TRIES - 1)

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
import time
from pathlib import Path

from conftest import (BPFPROF, Workload, as_tenant, parse_folded, tenant_run, total, uwl,
                      wait_attached)

# --- a file that only looks like Go ----------------------------------------------
#
# Without section headers, a Go binary's pc-line table is found by its header,
# searched in the read-only segments. Every 8 bytes of this one look like a Go
# 1.20 header (magic f1ff ffff, quantum 1, pointer size 8) that never holds.
# Each candidate used to be copied with the rest of the segment before its
# header was read: 1 MiB took 3.6 s, 4 MiB 37 s, 8 MiB never finished - and
# meanwhile nothing was drained and SIGTERM went unheard.

LOOKALIKE_ELF = r'''
import struct, sys
path, mib = sys.argv[1], int(sys.argv[2])
code_va, data_va, data_off = 0x400000, 0x10000000, 0x1000
code_off = 64 + 2 * 56
code = b"\xeb\xfe"  # jmp . (hot, forever)
data = bytes.fromhex("f1ffffff00000108") * (mib << 17)
eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
eh += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, code_va + code_off, 64, 0, 0, 64, 56, 2, 0, 0, 0)
ph = struct.pack("<IIQQQQQQ", 1, 5, 0, code_va, code_va, code_off + len(code),
                 code_off + len(code), 0x1000)
ph += struct.pack("<IIQQQQQQ", 1, 4, data_off, data_va, data_va, len(data), len(data), 0x1000)
img = eh + ph + code
with open(path, "wb") as f:
    f.write(img + bytes(data_off - len(img)) + data)
'''


def lookalike_go(d, name, mib=8):
    """As the tenant: a static executable without section headers that spins,
    with a read-only segment of `mib` MiB of Go-header lookalikes."""
    path = Path(d) / name
    p = tenant_run(["/usr/bin/python3", "-c", LOOKALIKE_ELF, path, mib])
    assert p.returncode == 0, p.stderr
    path.chmod(0o755)
    return path


class TenantProc:
    """A program the tenant runs (as_tenant), killed at the end."""

    def __init__(self, *argv):
        self.proc = subprocess.Popen(as_tenant(argv), stdout=subprocess.DEVNULL)
        self.pid = self.proc.pid
        time.sleep(0.3)
        assert self.proc.poll() is None, f"{argv} died at start"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Agent:
    """Root's bpfprof, timed from its "sampling" line; killed if a test leaves it."""

    def __init__(self, args):
        self.proc = subprocess.Popen([str(BPFPROF)] + [str(a) for a in args],
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# The last drain, symbolization and the write after the duration or the
# signal: well under this on this VM, even beside the other tests.
SLACK = 3.0


def test_a_go_lookalike_does_not_stretch_a_timed_run(tenant_dir, tmp_path):
    """-p the tenant's program and another process, -d 3: done on time, both
    profiled (the tenant's frames as file+offset)."""
    golike = lookalike_go(tenant_dir, "golike", 8)
    busy, comm = uwl("busy")
    out = tmp_path / "out.folded"
    with TenantProc(golike) as t, Workload(busy, 30) as w, \
            Agent(["-p", f"{t.pid},{w.pid}", "-d", 3, "-o", out]) as a:
        took, _, err = a.finish(3 + SLACK)
    folded = parse_folded(out.read_text())
    assert total(folded, comm) > 50, (took, folded, err)
    assert total(folded, "golike") > 50, (took, folded, err)
    assert any(s.startswith("golike;") and "golike+0x" in s for s in folded), folded


def test_a_go_lookalike_does_not_hold_up_the_drains(tenant_dir, tmp_path):
    """-a --interval 1: an interval file every second, on time, while the
    tenant's program runs from the start."""
    golike = lookalike_go(tenant_dir, "golike", 16)
    busy, comm = uwl("busy")
    d = tmp_path / "store"
    with TenantProc(golike), Workload(busy, 30), \
            Agent(["-a", "--interval", 1, "--output-dir", d, "-d", 6]) as a:
        took, _, err = a.finish(6 + SLACK)
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
    with TenantProc(golike), Workload(busy, 30), Agent(["-a", "-o", out]) as a:
        time.sleep(2.5)
        a.proc.send_signal(signal.SIGTERM)
        t = time.monotonic()
        took, _, err = a.finish(2.5 + SLACK)
    assert time.monotonic() - t < SLACK, err
    assert "stopping on" in err, err
    assert total(parse_folded(out.read_text()), comm) > 50, err

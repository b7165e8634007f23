# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Tenant attacks of session 6 (../shared/threat-model.md): --alloc -a's rescan
(session/allocrun.c rescan(), probe_process()), which looks at the files of
every process again every 10 s (300 ms here) and probes those that define
malloc and free. Each test performs the attack as the tenant
(conftest.as_tenant) against root's bpfprof.

The tenant starts, after bpfprof's probes are in, processes that map (mmap
PROT_EXEC) files it made: distinct ELF files of 200,000 symbols each (each
costs ~160 ms to read; all in one turn, the drains and the guard's ticks
wait seconds) and distinct copies of the C library (each one probed and held
for the run: the guard's switches and the exit cost ~50 ms a file; past the
cap on files probed, refused and counted, while the costly files, which
define no allocator, are read and not counted). One
bpfprof run (stopped once a pass looked at every file) serves every assertion; it holds /tmp/bpfprof-bench.lock
(-a traps the whole host's allocations, as test_allocguard.py's runs).
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (BPFPROF, Lines, bench_lock, new_tenant_dir, start_libc_copies,
                      tenant_program, tenant_run)
import pprof

BIG = 10  # distinct files of many symbols, in one process
LIBCS = 16  # distinct copies of the C library
MAX_HELD = 8  # the cap on files probed, made small (BPFPROF_TEST_ALLOC_MAX_HELD)
WAIT = 120  # s: the most any step waits for bpfprof or the tenant

# The tenant's program that makes its costly files, DIR/big-I.so (one made,
# copied NBIG - 1 times: distinct files); conftest's LIBC_COPIES maps them
# after its copies of the C library (looked at first: they fill the cap on
# files probed before the costly files, which define no allocator, are
# looked at).
MAKE_BIG = r'''
import os, shutil, struct, sys
d, nbig = sys.argv[1], int(sys.argv[2])

def big(path, n):
    """An x86-64 ELF of n function symbols (.symtab over a .text of no bytes)."""
    strtab, syms = bytearray(b"\0"), bytearray(24)
    for i in range(n):
        syms += struct.pack("<IBBHQQ", len(strtab), 0x12, 0, 1, 0x1000 + 16 * i, 16)
        strtab += b"f%x\0" % i
    shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    sym_off = 0x1000
    str_off = sym_off + len(syms)
    shs_off = str_off + len(strtab)
    sh_off = (shs_off + len(shstr) + 7) & ~7
    sec = lambda *a: struct.pack("<IIQQQQIIQQ", *a)
    with open(path, "wb") as f:
        f.write(struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, bytes(7), 3,
                            62, 1, 0, 64, sh_off, 0, 64, 56, 1, 64, 5, 4))
        f.write(struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, sh_off, sh_off, 0x1000))
        f.seek(sym_off)
        f.write(syms + strtab + shstr)
        f.seek(sh_off)
        f.write(sec(*[0] * 10) + sec(1, 8, 6, 0x1000, 0x1000, 16 * n, 0, 0, 16, 0)
                + sec(7, 2, 0, 0, sym_off, len(syms), 3, 1, 8, 24)
                + sec(15, 3, 0, 0, str_off, len(strtab), 0, 0, 1, 0)
                + sec(23, 3, 0, 0, shs_off, len(shstr), 0, 0, 1, 0))

big(os.path.join(d, "big-0.so"), 200000)
for i in range(1, nbig):
    shutil.copyfile(os.path.join(d, "big-0.so"), os.path.join(d, "big-%d.so" % i))
'''


@pytest.fixture(scope="module")
def rescan_attack(tmp_path_factory):
    """bpfprof --alloc -a -v while the tenant maps BIG costly files and
    LIBCS copies of the C library: (stderr, s from SIGINT to exit, files looked at before)."""
    d = str(new_tenant_dir())
    a = b = None
    try:
        # the costly files made before the run (only their mapping is the attack)
        r = tenant_run(["/usr/bin/python3", tenant_program(d, MAKE_BIG, "make_big.py"), d, BIG])
        assert r.returncode == 0, r.stderr
        bigs = [os.path.join(d, "big-%d.so" % i) for i in range(BIG)]
        out = tmp_path_factory.mktemp("s6") / "heap.pb.gz"
        with bench_lock():
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "-v", "-a", "-d", "60",
                                  "--alloc-budget", "1000000000", "-o", str(out)],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                          BPFPROF_TEST_ALLOC_MAX_HELD=str(MAX_HELD),
                                          # one cgroup may have it all (the share: test_tenant_s7)
                                          BPFPROF_TEST_ALLOC_MAX_SHARE=str(MAX_HELD)))
            lines = Lines(b.stderr)  # every wait below bounded (WAIT s)
            # the probes in, and a first rescan without the tenant
            lines.until(lambda line: "rescan: " in line, WAIT, "the first rescan")
            base = lines.text
            a = start_libc_copies(d, LIBCS, bigs)  # its own session: killpg'd below
            assert Lines(a.stdout).readline(WAIT, "the tenant").strip() == "ready", \
                "the tenant not ready"
            # Stopped once a pass has looked at every file of the tenant's
            # (however long the loaded machine took), then the stop's pace.
            looked0 = max(x[2] for x in _rescans(base))

            def passed(line):
                r = _rescans(line)
                return r and r[-1][2] - looked0 >= BIG + LIBCS
            lines.until(passed, WAIT, "a pass over every file of the tenant's")
            t_stop = time.monotonic()
            b.send_signal(signal.SIGINT)
            b.wait(timeout=WAIT)
            stop_s = time.monotonic() - t_stop
            err = lines.rest(WAIT)
    finally:
        if a:
            try:
                os.killpg(a.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            a.wait(timeout=30)
        if b and b.poll() is None:
            b.send_signal(signal.SIGTERM)
            try:
                b.wait(timeout=30)
            except subprocess.TimeoutExpired:
                b.kill()
                b.wait()
        shutil.rmtree(d, ignore_errors=True)
    assert b.returncode == 0, err
    with open(out, "rb") as f:
        assert pprof.decode(f.read())["sample_type"], "no heap profile written"
    return err, stop_s, max(x[2] for x in _rescans(base))


def _rescans(err):
    """Each finished rescan: (processes, turns, files looked at so far, longest turn ms)."""
    return [(int(m[1]), int(m[2]), int(m[3]), float(m[4])) for m in re.finditer(
        r"rescan: (\d+) processes in (\d+) turns, (\d+) files looked at so far, the longest "
        r"turn ([\d.]+) ms", err)]


def test_rescan_turns_keep_the_drains_pace(rescan_attack):
    """BIG files of 200,000 symbols (40-160 ms each, by the load): without a
    time budget one turn reads them all (0.5-1.6 s) while the ring and the
    guard wait; with it a turn stops 50 ms in, or after its first file, and
    the next turn resumes (several turns): every file is still looked at."""
    err, stop_s, base = rescan_attack
    r = _rescans(err)
    assert r, err[-3000:]
    assert max(x[1] for x in r) >= 3, r  # the pass of the costly files cut in turns
    assert max(x[3] for x in r) < 700, r
    assert r[-1][2] - base >= BIG + LIBCS, (base, r)  # a pass completed: every file looked at
    assert stop_s < 2.5, stop_s  # a stop request keeps its pace


def test_rescan_files_probed_capped(rescan_attack):
    """LIBCS distinct copies of the C library, each probed and held for the run
    (the guard's switches and the exit ~50 ms a file): at most the cap, the
    rest counted and said."""
    err, _, _ = rescan_attack
    m = re.search(r"allocator guard: .*, (\d+) files probed", err)
    assert m, err[-3000:]
    assert int(m[1]) <= MAX_HELD, m[0]
    assert "not probed any more: at most %d files are probed" % MAX_HELD in err, err[-3000:]


def _caps(err):
    """Each finished rescan's (files probed, files defining the allocator not probed)."""
    return [(int(m[1]), int(m[2])) for m in re.finditer(
        r"rescan: \d+ processes in .*; (\d+) files probed, (\d+) defining the allocator not "
        r"probed", err)]


def test_rescan_cap_counts_allocators_only(rescan_attack):
    """The cap on files probed counts only files that define the allocator,
    when they would be probed: every tenant copy of the C library past the
    cap is refused and counted once (the count the end says, as /metrics'
    bpfprof_alloc_files_not_probed_total), the costly files (no allocator,
    looked at once the cap is full) are not (fcf51cc: counted, +BIG)."""
    err, _, _ = rescan_attack
    m = re.search(r"(\d+) files probed \(at most (\d+)\)(?:; (\d+) files that define the "
                  r"allocator not probed)?", err)  # the summary at the end
    assert m, err[-3000:]
    assert int(m[2]) == MAX_HELD, m[0]
    after = int(m[3] or 0)
    first = err.index("rescan: ")  # the fixture's first look, before the tenant started
    before = _caps(err)[0][1]
    tenant = re.compile(r"/bpfprof-tenant-[^/\s]+/(?:libc|big)-\d+\.so(?:\.6)?$")
    probed = {x[1] for x in re.finditer(r"(\S+): \d+ allocator functions probed", err)
              if tenant.search(x[1])}
    refused = [x[1] for x in re.finditer(r"(\S+): defines the allocator, not probed", err)
               if x.start() > first]
    tenant_refused = {p for p in refused if tenant.search(p)}
    # Every copy looked at: probed, or refused past the cap (fcf51cc: not said).
    assert len(probed) + len(tenant_refused) == LIBCS, (sorted(probed), sorted(tenant_refused))
    # Each file refused counted once, and nothing else: not the costly files
    # (fcf51cc: +BIG, 20 where LIBCS - probed was 10).
    assert after - before == len(refused) == len(set(refused)), (before, after, refused)

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Review findings of session 8 on bpfprof --alloc (session/allocrun.c, record.c).

test_cap_warned_after_a_share_refusal: -a's cap on files probed warned only
while nothing had been refused before it (one counter, held_over, for both
refusals): once a cgroup's share had refused a file, reaching the cap said
nothing. A tenant's copies in its cgroup (past its share of the cap), then
copies mapped by a process of the root cgroup up to the cap: both warnings.

test_descriptors_short_said_once: -a in perf-event mode under a low
descriptor limit: a tenant's copies of an allocator ran the descriptors out
(files then not even opened, the output at risk); now the files that would
leave fewer than 64 are not probed, said once and counted.

test_on_cpu_churn_keeps_only_what_the_heap_names: --alloc --on-cpu kept
every exited process's symbols (keep_gone) up to max_procs; now only those
the heap profile still names (in a cgroup of its own, --cgroup).

test_total_keeps_live_stacks_past_a_churn: the run-long total (capped at
insertion) kept what exited processes left for the rest of the run, so a
live process's new stacks all went to [other stacks]; now exited processes'
samples are folded when the cap would be reached.

Each run holds /tmp/bpfprof-bench.lock (-a traps the whole host's
allocations, as test_tenant_s7.py's run).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
import sys

import pytest

from conftest import (BPFPROF, ROOT, Lines, as_tenant, bench_lock, cgroup2_root, into_cgroup,
                      new_tenant_dir, remove_cgroup, tenant_program, wl)
import pprof

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import free_port  # noqa: E402

MAX_HELD = 32  # the cap on files probed, made small (BPFPROF_TEST_ALLOC_MAX_HELD)
SHARE = 2  # one cgroup's share of it (BPFPROF_TEST_ALLOC_MAX_SHARE)

# Maps the files named (PROT_EXEC, as a loader would), says "ready", sleeps.
MAPPER = r'''
import mmap, sys, time
ms = []
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        ms.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                            prot=mmap.PROT_READ | mmap.PROT_EXEC))
print("ready", flush=True)
time.sleep(600)
'''


def _said(err, path):
    """Whether bpfprof said it probed or refused the file path."""
    return re.search(r"(?m)^.*%s: (\d+ allocator functions probed|defines the allocator, not "
                     r"probed)" % re.escape(path), err)


def _read_until(proc, err, cond, what, timeout=60):
    """stderr lines of proc appended to err until cond(err) (at most timeout
    s, a Lines); the new err."""
    deadline = time.monotonic() + timeout
    while True:
        line = _lines(proc, "stderr").readline(deadline - time.monotonic(), what)
        if not line:
            raise AssertionError("%s: bpfprof ended first\n%s" % (what, err[-3000:]))
        err += line
        if cond(err):
            return err


def _lines(proc, stream="stdout"):
    """proc's stream (a pipe) read by a Lines, the same one each call."""
    if not hasattr(proc, "lines_" + stream):
        setattr(proc, "lines_" + stream, Lines(getattr(proc, stream)))
    return getattr(proc, "lines_" + stream)


def _line(proc, what, timeout=60):
    """proc's next line of stdout, at most timeout s."""
    return _lines(proc).readline(timeout, what)


def _rest(proc, timeout=120):
    """The rest of bpfprof's stderr, once it exits (at most timeout s)."""
    text = _lines(proc, "stderr")
    start = len(text.text)
    text.rest(timeout, "the end of bpfprof's stderr")
    proc.wait(timeout=timeout)
    return text.text[start:]


def test_cap_warned_after_a_share_refusal():
    """The share's warning when the tenant's third copy is refused, then the
    cap's when the root cgroup's copies reach it (main: the cap's missing,
    its refusals only in -v's debug lines)."""
    mnt = cgroup2_root()
    d = new_tenant_dir()
    prog = tenant_program(d, MAPPER, "mapper.py")
    mine = [os.path.join(d, "fake-%d" % i) for i in range(SHARE + 1)]
    host = [os.path.join(d, "host-%d" % i) for i in range(MAX_HELD)]
    for p in mine + host:
        shutil.copy(wl("fakemalloc"), p)
        os.chmod(p, 0o755)
    cg = os.path.join(mnt, "bpfprof-s8-cap-%d" % os.getpid())
    os.mkdir(cg)
    a = h = b = None
    err = ""
    try:
        with bench_lock():
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "-v", "-a", "-d", "60",
                                  "--alloc-budget", "1000000000", "-o", "/dev/null"],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                          BPFPROF_TEST_ALLOC_MAX_HELD=str(MAX_HELD),
                                          BPFPROF_TEST_ALLOC_MAX_SHARE=str(SHARE)))
            err = _read_until(b, err, lambda e: "rescan: " in e, "the first rescan")
            held = len(re.findall(r"(?m): \d+ allocator functions probed", err))
            if held + SHARE >= MAX_HELD:
                pytest.skip("this host's own files (%d) leave no room under the cap" % held)
            assert "not probed any more" not in err, err[-3000:]
            a = subprocess.Popen(as_tenant(["/usr/bin/python3", prog] + mine),
                                 stdout=subprocess.PIPE, text=True, preexec_fn=into_cgroup(cg))
            assert _line(a, "the tenant's mapper ready").strip() == "ready"
            err = _read_until(b, err, lambda e: all(_said(e, p) for p in mine),
                              "the tenant's copies looked at")
            assert "files newly mapped by processes of cgroup" in err, err[-3000:]
            assert "not probed any more" not in err, err[-3000:]
            h = subprocess.Popen(["/usr/bin/python3", prog] + host, stdout=subprocess.PIPE,
                                 text=True, preexec_fn=into_cgroup(mnt))
            assert _line(h, "the host's mapper ready").strip() == "ready"
            err = _read_until(b, err, lambda e: all(_said(e, p) for p in host),
                              "the root cgroup's copies looked at")
            b.send_signal(signal.SIGINT)
            err += _rest(b)
    finally:
        for p in (a, h, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL if p is not b else signal.SIGTERM)
                p.wait(timeout=30)
        remove_cgroup(cg)
        shutil.rmtree(d, ignore_errors=True)
    assert b.returncode == 0, err[-3000:]
    refused = [p for p in host if re.search(r"%s: defines the allocator, not probed \(the cap"
                                            % re.escape(p), err)]
    assert refused, err[-3000:]  # the cap was reached
    assert err.count("files newly mapped not probed any more: at most %d files are probed"
                     % MAX_HELD) == 1, err[-3000:]
    assert err.count("files newly mapped by processes of cgroup") == 1, err[-3000:]


def test_descriptors_short_said_once():
    """-a with perf-event uprobes (two descriptors a probe, 14 a copy of
    fakemalloc) under a limit of FDS descriptors (soft and hard): the start
    says the limit is short for the cap on files; then the tenant maps 40
    copies at once: those that would leave fewer than 64 descriptors are not
    probed, said once, counted with the files not probed, and the profile is
    written (main: the descriptors ran out, one warning per file, then files
    not even opened and the output not written)."""
    fds, copies = 320, 40
    d = new_tenant_dir()
    prog = tenant_program(d, MAPPER, "mapper.py")
    paths = [os.path.join(d, "fake-%d" % i) for i in range(copies)]
    for p in paths:
        shutil.copy(wl("fakemalloc"), p)
        os.chmod(p, 0o755)
    out = os.path.join(d, "heap.pb.gz")
    a = b = None
    err = ""
    try:
        with bench_lock():
            b = subprocess.Popen(["prlimit", "--nofile=%d:%d" % (fds, fds), str(BPFPROF),
                                  "record", "--alloc", "-v", "-a", "-d", "30",
                                  "--alloc-budget", "1000000000", "-o", out],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, BPFPROF_TEST_ALLOC_RESCAN_MS="300",
                                          BPFPROF_TEST_ALLOC_MODE="perf"))
            err = _read_until(b, err, lambda e: "rescan: " in e, "the first rescan")
            a = subprocess.Popen(as_tenant(["/usr/bin/python3", prog] + paths),
                                 stdout=subprocess.PIPE, text=True)
            assert _line(a, "the tenant's mapper ready").strip() == "ready"
            err = _read_until(b, err, lambda e: all(
                re.search(r"(?m)%s: (\d+ allocator functions probed|its allocator not probed|"
                          r"defines the allocator, not probed|Too many open files)"
                          % re.escape(p), e) for p in paths), "every copy probed or not")
            b.send_signal(signal.SIGINT)
            err += _rest(b)
    finally:
        for p in (a, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL if p is not b else signal.SIGTERM)
                p.wait(timeout=30)
        written = os.path.exists(out) and os.path.getsize(out) > 0
        shutil.rmtree(d, ignore_errors=True)
    warned = [l for l in err.splitlines()
              if "warning:" in l and "its allocator not probed" in l]
    assert len(warned) <= 1, "\n".join(warned[:5])
    assert b.returncode == 0 and written, err[-3000:]
    probed = [p for p in paths if re.search(r"(?m)%s: \d+ allocator functions probed"
                                            % re.escape(p), err)]
    assert 0 < len(probed) < copies, err[-3000:]  # the descriptors short among them
    assert err.count("not probed while file descriptors are short") == 1, err[-3000:]
    m = re.search(r"file descriptors: the limit is %d, \d+ are open, and the probes of the 64 "
                  r"files this run may probe need up to \d+ more \(\d+ a file\)" % fds, err)
    assert m, err[-3000:]
    m = re.search(r"(\d+) files that define the allocator not probed", err)
    assert m and int(m[1]) >= copies - len(probed), err[-3000:]


def _sites_by_pid(p):
    """{pid: {leaf function: alloc_space}} of a heap profile."""
    out = {}
    for s in p["sample"]:
        loc = p["location"][s["location_id"][0]] if s["location_id"] else None
        name = "[none]"
        if loc and loc["lines"]:
            name = pprof.strings(p, p["function"][loc["lines"][-1].get(1)].get(2, 0))
        v = out.setdefault(s["label"].get("pid"), {})
        v[name] = v.get(name, 0) + s["value"][1]
    return out


def test_on_cpu_churn_keeps_only_what_the_heap_names(tmp_path):
    """--alloc --on-cpu keeps the symbols of exited processes for the heap
    profile, named at the end: only those whose allocations it still has to
    name. In a cgroup of its own (--cgroup: the host's other processes, which
    allocate and are kept, left out), a tenant's churn of short-lived
    processes (shortlived: a child every 5 ms, each on CPU 4 ms, allocating
    nothing) leaves the symbolizer's process count bounded (main: every
    exited process kept up to 16384: 560 kept for 471 children; after: 3
    for 565), and an allocwork that allocated and exited
    before the end is still named (site_steady)."""
    out = tmp_path / "p.pb.gz"
    cg = os.path.join(cgroup2_root(), "bpfprof-s8-churn-%d" % os.getpid())
    os.mkdir(cg)
    b = w = s = None
    err = ""
    try:
        # the C library's file found through a process of the cgroup (--cgroup)
        s = subprocess.Popen(["/bin/sleep", "120"], preexec_fn=into_cgroup(cg))
        with bench_lock():
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc", "--alloc-budget",
                                  "1000000000", "--on-cpu", "--cgroup", cg, "-F", "999", "-d",
                                  "14", "-v", "-o", str(out)], stderr=subprocess.PIPE, text=True)
            err = _read_until(b, err, lambda e: re.search(r"bpfprof: sampling ", e),
                              "the sampling's start")
            w = subprocess.Popen([wl("allocwork"), "steady", "20000", "2"],
                                 stdout=subprocess.PIPE, text=True, preexec_fn=into_cgroup(cg))
            churn = subprocess.run(as_tenant([wl("shortlived"), "6", "4", "5"]), timeout=120,
                                   capture_output=True, text=True, preexec_fn=into_cgroup(cg))
            m = re.search(r"children (\d+)", churn.stdout)
            assert churn.returncode == 0 and m, churn
            children = int(m[1])
            truth = json.loads(_line(w, "allocwork's report"))
            w.wait(timeout=30)
            assert b.poll() is None, "the run ended before the churn did: %s" % err[-3000:]
            err += _rest(b)
    finally:
        for p in (w, s, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL if p is not b else signal.SIGTERM)
                p.wait(timeout=30)
        remove_cgroup(cg)
    assert b.returncode == 0, err[-3000:]
    assert children >= 100, children  # a churn at all
    m = re.search(r"symbols: (\d+) processes", err)
    assert m, err[-3000:]
    print("symbolizer processes %d, churn children %d" % (int(m[1]), children))
    assert int(m[1]) < 20 + children // 3, (int(m[1]), children)
    with open(tmp_path / "p.heap.pb.gz", "rb") as f:
        prof = pprof.decode(f.read())
    sites = _sites_by_pid(prof).get(truth["pid"], {})
    assert sites.get("site_steady", 0) > 0, (sorted(sites), err[-3000:])


TOTAL_MAX = 2000  # the run-long total's cap, made small (BPFPROF_TEST_ALLOC_TOTAL_MAX)


def _get(url, timeout=20):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def test_total_keeps_live_stacks_past_a_churn(tmp_path):
    """Continuous -a with the run-long total capped at TOTAL_MAX samples: a
    tenant's two short-lived allocpaths (thousands of distinct stacks each)
    fill it and exit; then an allocwork's site_steady and site_held are in
    /debug/pprof/heap's total by name (main: in its [other stacks] for the
    rest of the run, the exited processes' samples keeping the places)."""
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    b = w = None
    err = ""
    try:
        with bench_lock():
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc=4K", "-a", "--alloc-budget",
                                  "1000000000", "--interval", "1", "--listen",
                                  "127.0.0.1:%d" % port, "-d", "40", "-v"],
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ,
                                          BPFPROF_TEST_ALLOC_TOTAL_MAX=str(TOTAL_MAX)))
            err = _read_until(b, err, lambda e: "probes: " in e, "the probes in")
            for _ in range(2):  # each: 32768 paths of 4 KiB, 1 ms asleep every 100
                churn = subprocess.run(as_tenant([wl("allocpaths"), "3", "4096", "100"]),
                                       capture_output=True, text=True, timeout=60)
                assert churn.returncode == 0, churn
            time.sleep(2.5)  # their samples in the total (intervals of 1 s)
            w = subprocess.Popen([wl("allocwork"), "steady", "5000", "8", "200"],
                                 stdout=subprocess.PIPE, text=True)
            time.sleep(3.5)
            heap = pprof.decode(_get(base + "/debug/pprof/heap"))
            w.send_signal(signal.SIGTERM)
            truth = json.loads(_line(w, "allocwork's report"))
            w.wait(timeout=30)
            b.send_signal(signal.SIGINT)
            err += _rest(b)
    finally:
        for p in (w, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL if p is w else signal.SIGTERM)
                p.wait(timeout=30)
    assert b.returncode == 0, err[-3000:]
    sites = _sites_by_pid(heap).get(truth["pid"], {})
    assert sites.get("site_steady", 0) > 0 and sites.get("site_held", 0) > 0, (
        sites, err[-3000:])
    assert "[other stacks]" not in sites, sites

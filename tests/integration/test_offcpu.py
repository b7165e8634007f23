# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""--off-cpu (root, real BPF): where threads wait, in the same profile as where
they run. Threads that wait in known places (nanosleep, a pipe read, a mutex)
must show their waiting time under their own functions, a spinning thread
none; the minimum filter drops and counts short waits; interval files hold
exactly what the kernel counted; the task table's evictions are accounted;
targets (-p, -- COMMAND and its children, -a, -C, --cgroup); the outputs
(pprof sample types for go tool pprof, folded/svg views, report, Pyroscope's
second series, /debug/pprof/profile)."""
import glob
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pprof
from conftest import (BPFPROF, Reaped, cgroup2_root, cpu_seconds, parse_folded, run_bpfprof,
                      uwl, wait_attached, wl)

FREQ = 99
WINDOW = 5.0
# Workloads run until killed at the end of a test (their own end is far off):
# on a loaded machine bpfprof's start-up alone can take seconds.
LONG = 120


class Waits(Reaped):
    """tests/workloads/waits in one of its modes; .tids: its threads' ids as it
    printed them (sleeper, reader, spinner / holder, waiter / ...)."""

    def __init__(self, path, seconds, *mode, prefix=()):
        self.proc = subprocess.Popen([*prefix, path, str(seconds), *map(str, mode)],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), f"waits did not start: {line!r}"
        self.tids = [int(t) for t in line.split()[1:]]
        self.pid = self.proc.pid


def index_of(p, name):
    names = [pprof.strings(p, t.get(1, 0)) for t in p["sample_type"]]
    return names.index(name) if name in names else None


def folded_values(p, name):
    """{"comm;root;...;leaf": value of sample type `name`}."""
    vi = index_of(p, name)
    assert vi is not None, [pprof.strings(p, t.get(1, 0)) for t in p["sample_type"]]
    out = {}
    for s in p["sample"]:
        names = []
        for lid in reversed(s["location_id"]):
            for line in reversed(p["location"][lid]["lines"]):
                names.append(pprof.strings(p, p["function"][line.get(1)].get(2, 0)))
        key = ";".join([s["label"].get("comm", "")] + names)
        out[key] = out.get(key, 0) + s["value"][vi]
    return out


def by_thread(p, name):
    """{tid: [(stack, value of type name)]} (needs --per-thread)."""
    vi = index_of(p, name)
    out = {}
    for s in p["sample"]:
        if not s["value"][vi]:
            continue
        names = []
        for lid in reversed(s["location_id"]):
            for line in reversed(p["location"][lid]["lines"]):
                names.append(pprof.strings(p, p["function"][line.get(1)].get(2, 0)))
        out.setdefault(s["label"].get("thread"), []).append((";".join(names), s["value"][vi]))
    return out


def offcpu_line(stderr):
    m = re.search(r"off-CPU: (\d+) waits: (\d+) counted \(([0-9.]+) s(?:; (\d+) still blocked "
                  r"at the end, counted to it)?\), (\d+) shorter than [0-9.]+ ms \(([0-9.]+) s\), "
                  r"(\d+) lost(?: \([^)]*\))?(?:, (\d+) evicted from the task table)?"
                  r"(?:, (\d+) still blocked)?", stderr)
    assert m, f"no off-CPU summary in:\n{stderr}"
    g = [x if x is None or "." in x else int(x) for x in m.groups()]
    return {"waits": g[0], "counted": g[1], "counted_s": float(g[2]), "cut": g[3] or 0,
            "short": g[4], "short_s": float(g[5]), "lost": g[6], "evicted": g[7] or 0,
            "pending": g[8] or 0}


def record_pprof(tmp_path, args):
    """Runs bpfprof with -o a pprof file; (decoded profile, stderr)."""
    out = tmp_path / f"p{time.monotonic_ns()}.pb.gz"
    p = run_bpfprof(list(args) + ["-o", out])
    return pprof.decode(out.read_bytes()), p.stderr


def kernel_ns(stderr):
    m = re.search(r"off-CPU: (\d+) ns counted in the kernel", stderr)
    assert m, stderr
    return int(m.group(1))


def test_known_waits_per_thread(tmp_path):
    """A sleeping thread and a thread blocked on a pipe each wait about the
    whole window, under their own functions and the kernel functions they
    block in; the spinning thread waits not at all and keeps its samples."""
    out = tmp_path / "w.pb.gz"
    with Waits(wl("waits"), LONG) as w:
        sleeper, reader, spinner = w.tids
        proc = subprocess.Popen([str(BPFPROF), "--off-cpu", "--per-thread", "-p", str(w.pid),
                                 "-d", str(WINDOW), "-v", "-o", str(out)],
                                stderr=subprocess.PIPE, text=True)
        head = wait_attached(proc)
        # CPU time from the start of sampling (start-up is not sampled).
        c0 = cpu_seconds(w.pid)
        _, tail = proc.communicate(timeout=120)
        c1 = cpu_seconds(w.pid)
    assert proc.returncode == 0, head + tail
    stderr = head + tail
    prof = pprof.decode(out.read_bytes())
    window = float(re.search(r"samples? in ([0-9.]+) s", stderr).group(1))
    off = by_thread(prof, "off_cpu")
    on = by_thread(prof, "samples")
    # period: the longest a wait lasts. The wait in progress when the
    # programs attached is not counted ("lost: return not seen", below) -
    # up to a period, more when bpfprof's start-up and the spinner keep the
    # writer (main) from its CPU: a CI run counted the reader 0.54 s short.
    for tid, fn, kfn, period in ((sleeper, "sleep_loop", "do_nanosleep", 0.02),
                                 (reader, "read_loop", "pipe_read", 0.3)):
        waited = sum(v for _, v in off.get(tid, [])) / 1e9
        assert -0.10 * window - period <= waited - window <= 0.10 * window, \
            (tid, fn, waited, window, off.get(tid), stderr)
        # Nearly all of it under the function, with the kernel's wait below.
        under = sum(v for s, v in off[tid] if fn in s.split(";") and any(
            kfn in f for f in s.split(";"))) / 1e9
        assert under >= 0.95 * waited, (fn, off[tid])
        assert any(s.split(";")[-1] == "__schedule" for s, _ in off[tid]), off[tid]
    assert spinner not in off, off.get(spinner)
    # On-CPU: the spinner's samples as without --off-cpu (F x its CPU time).
    spun = sum(v for _, v in on.get(spinner, []))
    expected = FREQ * (c1 - c0)
    assert abs(spun - expected) <= 0.15 * expected + 10, (spun, expected)
    # Accounting: every counted nanosecond is in the profile.
    assert sum(v for l in off.values() for _, v in l) == kernel_ns(stderr)
    s = offcpu_line(stderr)
    assert s["evicted"] == 0 and s["lost"] <= 3, s  # lost: only "return not seen" (README)
    assert not re.search(r"(stack map full|count map full|user stack gone|internal map error)",
                         stderr), stderr
    assert s["waits"] == s["counted"] + s["short"] + s["lost"] + s["evicted"] + s["pending"]


def test_mutex_waiter_blocks_in_futex_under_lock_loop(tmp_path):
    with Waits(wl("waits"), LONG, "mutex") as w:
        holder, waiter = w.tids
        prof, _ = record_pprof(tmp_path, ["--off-cpu", "--per-thread", "-p", w.pid, "-d", 4])
    off = by_thread(prof, "off_cpu")
    stacks = off.get(waiter, [])
    total = sum(v for _, v in stacks)
    assert total > 1.5e9, stacks  # the holder keeps the lock most of the time
    futex = 0
    for s, v in stacks:
        fr = s.split(";")
        if "lock_loop" in fr:
            after = fr[fr.index("lock_loop") + 1:]
            if any("mutex_lock" in f for f in after) and any("futex" in f for f in after):
                futex += v
    assert futex >= 0.9 * total, stacks


def test_minimum_filter_drops_and_counts_short_waits(tmp_path):
    """100 us naps: below the default 1 ms they are only counted; with
    --off-cpu-min 0 their time is in the profile. (On a busy machine some naps
    last longer than 1 ms; the filter's boundary holds whatever the mix.)"""
    with Waits(wl("waits"), LONG, "short") as w:
        p = run_bpfprof(["--off-cpu", "-p", w.pid, "-d", 3, "-o", "/dev/null", "-v"])
        s = offcpu_line(p.stderr)
        assert s["short"] > 300, s
        assert s["short_s"] / s["short"] < 1e-3, s  # each under the minimum
        if s["counted"]:
            assert s["counted_s"] / s["counted"] >= 1e-3, s  # each at least the minimum
        prof, stderr = record_pprof(tmp_path, ["--off-cpu", "--off-cpu-min", "0", "-p", w.pid,
                                               "-d", 3])
    s = offcpu_line(stderr)
    assert s["short"] == 0 and s["counted"] > 300, s
    folded = folded_values(prof, "off_cpu")
    naps = sum(v for k, v in folded.items() if "sleep_loop" in k.split(";"))
    assert naps > 1.0e9, folded  # the thread does little but nap


def test_intervals_hold_exactly_what_the_kernel_counted(tmp_path):
    """Every drain flips the buffers here (the hardest case: waits span flips,
    their user stacks are carried over): the interval files' off_cpu values add
    up to the kernel's total to the nanosecond, nothing lost."""
    d = tmp_path / "store"
    with Waits(wl("waits"), LONG) as w:
        p = run_bpfprof(["--off-cpu", "-p", w.pid, "--interval", 1, "--output-dir", d,
                         "-d", 6.5, "-v"], env={**os.environ, "BPFPROF_TEST_ALWAYS_FLIP": "1"})
    files = sorted(f for f in glob.glob(f"{d}/bpfprof-*") if ".tmp." not in f)
    assert len(files) >= 6, files
    got = 0
    for f in files:
        prof = pprof.decode(Path(f).read_bytes())
        assert index_of(prof, "off_cpu") is not None and index_of(prof, "cpu") is not None
        got += sum(folded_values(prof, "off_cpu").values())
    assert got == kernel_ns(p.stderr), p.stderr
    s = offcpu_line(p.stderr)
    assert s["counted"] > 50 and s["waits"] - s["counted"] <= 0.02 * s["waits"] + 3, s
    assert not re.search(r"(stack map full|count map full|user stack gone|internal map error)",
                         p.stderr), p.stderr
    m = re.search(r"(\d+) user stacks carried across buffer flips", p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr


def test_task_table_evictions_are_accounted():
    with Waits(wl("waits"), LONG, "many", 64) as w:
        p = run_bpfprof(["--off-cpu", "--off-cpu-tasks", 16, "-p", w.pid, "-d", 2, "-o",
                         "/dev/null", "-v"])
    s = offcpu_line(p.stderr)
    assert s["evicted"] > 0, p.stderr
    assert "HINT: raise --off-cpu-tasks" in p.stderr
    m = re.search(r"(\d+) blocks followed, (\d+) resumed, (\d+) cut at the end, (\d+) replaced",
                  p.stderr)
    assert m, p.stderr
    assert s["waits"] == s["counted"] + s["short"] + s["lost"] + s["evicted"] + s["pending"], s


def test_command_and_the_processes_it_starts(tmp_path):
    """-- COMMAND: waits in a grandchild (sh runs waits) are followed too,
    from its first nap: the sleeper thread's waits add up to the time its
    sleep_loop ran, as the workload measured it. (The thread's own frame, not
    sleep_loop's: waits begun before the agent has read the new process's
    unwind tables are walked by frame pointers, which skip the caller of
    libc's frameless clock_nanosleep - sleep_loop - on a slow machine for
    half a second and more.)"""
    out = tmp_path / "w.folded"
    said = tmp_path / "waits.out"
    p = run_bpfprof(["--off-cpu", "--view", "off-cpu", "-o", out, "--", "sh", "-c",
                     f"{wl('waits')} 2 > {said}; true"])
    slept = float(re.search(r"^slept ([0-9.]+)$", said.read_text(), re.M).group(1)) * 1e6
    folded = parse_folded(out.read_text())
    sleeping = sum(v for k, v in folded.items() if "sleeper_thread" in k.split(";"))
    # Each of its ~100 naps is on the CPU for microseconds between waits; the
    # barrier wait before the loop adds up to a few ms under this frame.
    assert 0.97 * slept <= sleeping <= slept + 50e3, (slept, sleeping, folded, p.stderr)
    assert offcpu_line(p.stderr)["counted"] > 0


def test_whole_machine_excludes_idle_and_itself(tmp_path):
    path, comm = uwl("waits")
    out = tmp_path / "a.pb.gz"
    with Waits(path, LONG):
        proc = subprocess.Popen([str(BPFPROF), "--off-cpu", "-a", "-d", "3", "-o", str(out)],
                                stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    prof = pprof.decode(out.read_bytes())
    vi = index_of(prof, "off_cpu")
    waited = {}
    for s in prof["sample"]:
        key = (s["label"].get("comm"), s["label"].get("pid"))
        waited[key] = waited.get(key, 0) + s["value"][vi]
    assert not [k for k in waited if k[1] == proc.pid and waited[k]], "bpfprof counted itself"
    assert not [k for k in waited if k[0] and k[0].startswith("swapper") and waited[k]]
    mine = sum(v for k, v in waited.items() if k[0] == comm)
    assert mine > 2 * 2.5e9, waited  # three threads waiting ~3 s each


def test_cpu_filter_counts_waits_that_began_on_those_cpus():
    path, comm = uwl("waits")
    with Waits(path, LONG, prefix=("taskset", "-c", "1")) as w:
        p0 = run_bpfprof(["--off-cpu", "-a", "-C", "0", "-d", 2, "--view", "off-cpu"])
        p1 = run_bpfprof(["--off-cpu", "-a", "-C", "1", "-d", 2, "--view", "off-cpu"])
    on0 = sum(v for k, v in parse_folded(p0.stdout).items() if k.startswith(comm + ";"))
    on1 = sum(v for k, v in parse_folded(p1.stdout).items() if k.startswith(comm + ";"))
    assert on0 == 0 and on1 > 2e6, (on0, on1)


def test_cgroup_filter():
    root = cgroup2_root()
    cg = Path(root) / f"bpfprof-offcpu-{os.getpid()}"
    cg.mkdir(exist_ok=True)
    inside, ICOMM = uwl("waits")
    outside = Path(inside).with_name("waits_out")
    shutil.copy2(inside, outside)
    try:
        with Waits(inside, LONG) as a, Waits(str(outside), LONG):
            (cg / "cgroup.procs").write_text(str(a.pid))
            try:
                p = run_bpfprof(["--off-cpu", "-a", "--cgroup", "/" + cg.name, "-d", 2,
                                 "--view", "off-cpu"])
            finally:
                (Path(root) / "cgroup.procs").write_text(str(a.pid))
        comms = {k.split(";")[0] for k in parse_folded(p.stdout)}
        assert comms == {ICOMM}, comms
    finally:
        cg.rmdir()


def test_outputs_views_and_go_tool_pprof(tmp_path):
    pb = tmp_path / "w.pb.gz"
    with Waits(wl("waits"), LONG) as w:
        run_bpfprof(["--off-cpu", "-p", w.pid, "-d", 3, "-o", pb])
    prof = pprof.decode(pb.read_bytes())
    names = [pprof.strings(prof, t.get(1, 0)) for t in prof["sample_type"]]
    assert names == ["samples", "cpu", "off_cpu", "wall"], names
    # go tool pprof: cpu stays the default, -sample_index=off_cpu shows waiting.
    top = subprocess.run(["go", "tool", "pprof", "-sample_index=off_cpu", "-top", str(pb)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    assert "Type: off_cpu" in top.stdout and "__schedule" in top.stdout, top.stdout
    tree = subprocess.run(["go", "tool", "pprof", "-sample_index=off_cpu", "-traces", str(pb)],
                          capture_output=True, text=True, timeout=120).stdout
    assert "sleep_loop" in tree and "read_loop" in tree, tree
    deflt = subprocess.run(["go", "tool", "pprof", "-top", str(pb)], capture_output=True,
                           text=True, timeout=120).stdout
    assert "Type: cpu" in deflt, deflt
    # Folded views, converted from the pprof file (read back with both values).
    wall = parse_folded(run_bpfprof(["convert", pb, "-f", "folded"]).stdout)
    assert any(k.endswith(";[off-cpu]") and "sleep_loop" in k for k in wall), wall
    assert any("spin_loop" in k and not k.endswith("[off-cpu]") for k in wall), wall
    only = parse_folded(run_bpfprof(["convert", pb, "-f", "folded", "--view", "off-cpu"]).stdout)
    assert not any("[off-cpu]" in k or "spin_loop" in k.split(";")[-1] for k in only), only
    assert abs(sum(only.values()) - sum(folded_values(prof, "off_cpu").values()) / 1000) \
        <= len(only), (sum(only.values()), len(only))
    cpu = parse_folded(run_bpfprof(["convert", pb, "-f", "folded", "--view", "cpu"]).stdout)
    assert sum(cpu.values()) == sum(folded_values(prof, "samples").values())
    # SVG: the unit in the title, waiting marked.
    svg = tmp_path / "w.svg"
    run_bpfprof(["convert", pb, "-o", svg])
    text = svg.read_text()
    assert "Wall-clock time flame graph (\u00b5s)" in text and '"[off-cpu]"' in text
    # Report: both parts. Every row (--top 0): the reader's frames tie at a
    # third of the off-CPU time with the main thread's and the sleeper's, and
    # with 6.18's deeper pipe-read path they fell past the default 20 rows.
    rep = run_bpfprof(["report", "--top", "0", pb]).stdout
    assert "bpfprof report, on-CPU:" in rep and "bpfprof report, off-CPU:" in rep, rep
    assert "read_loop" in rep.split("off-CPU:")[1], rep


def test_record_view_options_need_off_cpu():
    p = run_bpfprof(["--view", "off-cpu", "-d", 1], check=False)
    assert p.returncode == 2 and "--view" in p.stderr
    p = run_bpfprof(["--off-cpu-min", "2ms", "-d", 1], check=False)
    assert p.returncode == 2 and "--off-cpu-min" in p.stderr
    p = run_bpfprof(["--off-cpu", "--off-cpu-min", "soon", "-d", 1], check=False)
    assert p.returncode == 2 and "invalid --off-cpu-min" in p.stderr


class _Ingest(http.server.BaseHTTPRequestHandler):
    requests = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.requests.append({"path": self.path, "body": body})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_push_sends_off_cpu_as_a_second_series():
    _Ingest.requests = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Ingest)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with Waits(wl("waits"), LONG) as w:
            run_bpfprof(["--off-cpu", "-p", w.pid, "--push", f"http://127.0.0.1:{srv.server_port}",
                         "--app-name", "svc", "--interval", 1, "-d", 3.5])
    finally:
        srv.shutdown()
    kinds = {}
    for r in _Ingest.requests:
        q = urllib.parse.parse_qs(urllib.parse.urlparse(r["path"]).query)
        # pprof: one name for both (Pyroscope's service_name), the type in the body
        assert q["format"] == ["pprof"] and re.match(r"svc\{", q["name"][0]), q
        prof = pprof.decode(r["body"])
        names = [pprof.strings(prof, t.get(1, 0)) for t in prof["sample_type"]]
        kind = "off_cpu" if q["units"] == ["nanoseconds"] else "cpu"
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "off_cpu":
            assert q["units"] == ["nanoseconds"] and names == ["off_cpu"], (q, names)
            assert sum(folded_values(prof, "off_cpu").values()) > 0
        else:
            assert kind == "cpu" and q["units"] == ["samples"], q
            assert names == ["samples", "cpu"], names
    assert kinds.get("off_cpu", 0) >= 3 and kinds.get("cpu", 0) >= 3, kinds


def test_debug_pprof_profile_carries_both():
    port = 16000 + os.getpid() % 1000
    with Waits(wl("waits"), LONG) as w:
        proc = subprocess.Popen([str(BPFPROF), "--off-cpu", "-p", str(w.pid), "--listen",
                                 str(port), "-d", "6"], stderr=subprocess.PIPE, text=True)
        try:
            wait_attached(proc)
            body = urllib.request.urlopen(
                f"http://127.0.0.1:{port}/debug/pprof/profile?seconds=2", timeout=30).read()
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                             timeout=30).read().decode()
        finally:
            proc.terminate()
            proc.communicate(timeout=60)
    prof = pprof.decode(body)
    names = [pprof.strings(prof, t.get(1, 0)) for t in prof["sample_type"]]
    assert names == ["samples", "cpu", "off_cpu", "wall"], names
    off = folded_values(prof, "off_cpu")
    assert sum(v for k, v in off.items() if "sleep_loop" in k.split(";")) > 1e9, off
    m = re.search(r'bpfprof_offcpu_waits_total\{result="counted"\} (\d+)', metrics)
    assert m and int(m.group(1)) > 0, metrics
    assert re.search(r"bpfprof_offcpu_seconds_total [0-9.]+", metrics), metrics

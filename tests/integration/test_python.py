# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Python frames (CPython 3.11, Debian's /usr/bin/python3.11): the thread's
Python frames walked in BPF, interleaved with the native frames, named from
code objects read out of the process (qualname, file, line).

The workloads are scripts written here with known shares; an in-process
reference sampler (a thread reading sys._current_frames() every few
milliseconds) cross-checks the shares bpfprof measures.
"""
import math
import os
import re
import subprocess
import time
from pathlib import Path

from conftest import (BPFPROF, Workload, count_with, cpu_seconds, parse_folded, run_bpfprof,
                      total)

PY = "/usr/bin/python3.11"
SECONDS = 5
HZ = 99

APP = """
import sys, threading, time, collections
def alpha_leaf(n):
    s = 0
    for i in range(n):
        s += i * 7
    return s
def beta_leaf(n):
    s = 0
    for i in range(n):
        s += i * 7
    return s
def driver(until):
    while time.time() < until:
        alpha_leaf(7000)
        beta_leaf(3000)
ref = collections.Counter()
main = threading.main_thread().ident
def reference(until):
    # What sys._current_frames() sees of the main thread, every 5 ms.
    while time.time() < until:
        f = sys._current_frames().get(main)
        if f is not None:
            ref[f.f_code.co_name] += 1
        time.sleep(0.005)
until = time.time() + float(sys.argv[1])
threading.Thread(target=reference, args=(until,), daemon=True).start()
driver(until)
print(ref["alpha_leaf"], ref["beta_leaf"], flush=True)
"""


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def py_frames(stack):
    return [f for f in stack.split(";") if f.endswith("_[py]")]


def line_of(text, needle):
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def test_shares_under_driver_and_py_runmain(tmp_path):
    app = script(tmp_path, "app.py", APP)
    proc = subprocess.Popen([PY, str(app), "30"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        t0 = cpu_seconds(proc.pid)
        p = run_bpfprof(["-U", "-d", SECONDS, "-p", proc.pid])
        want = (cpu_seconds(proc.pid) - t0) * HZ
    finally:
        proc.kill()
        proc.wait()
    folded = parse_folded(p.stdout)
    n = total(folded)
    assert n >= 0.6 * want and n >= 50, (n, want, p.stderr)
    a = count_with(folded, lambda s: s.endswith("driver (app.py)_[py];alpha_leaf (app.py)_[py]")
                   or ";driver (app.py)_[py];alpha_leaf (app.py)_[py];" in s)
    b = count_with(folded, lambda s: s.endswith("driver (app.py)_[py];beta_leaf (app.py)_[py]")
                   or ";driver (app.py)_[py];beta_leaf (app.py)_[py];" in s)
    assert a + b >= 0.9 * n, (a, b, n, sorted(folded.items(), key=lambda x: -x[1])[:8])
    # Under the driver, under the interpreter's entry point, native frames below.
    rooted = count_with(folded, lambda s: re.search(
        r";Py_RunMain;.*;<module> \(app\.py\)_\[py\];driver \(app\.py\)_\[py\];(alpha|beta)_leaf",
        s) is not None)
    assert rooted >= 0.9 * (a + b), rooted
    # 7:3 by design (the same loop, 7000 and 3000 times).
    share = a / (a + b)
    sd = math.sqrt(0.7 * 0.3 / (a + b))
    assert abs(share - 0.7) <= 4 * sd + 0.05, (share, a, b)


def test_reference_sampler_agrees(tmp_path):
    """The in-process sampler and bpfprof see the same split over the same window."""
    app = script(tmp_path, "app.py", APP)
    p = run_bpfprof(["-U", "--", PY, str(app), str(SECONDS)], timeout=120)
    folded = parse_folded("\n".join(l for l in p.stdout.splitlines() if ";" in l))
    mine = {s: c for s, c in folded.items() if s.startswith("python3.11;")}
    a = count_with(mine, lambda s: py_frames(s)[-1:] == ["alpha_leaf (app.py)_[py]"])
    b = count_with(mine, lambda s: py_frames(s)[-1:] == ["beta_leaf (app.py)_[py]"])
    out_lines = [l for l in p.stdout.splitlines() if re.fullmatch(r"\d+ \d+", l.strip())]
    assert out_lines, p.stdout[-2000:]
    ref_a, ref_b = map(int, out_lines[-1].split())
    assert a + b >= 50 and ref_a + ref_b >= 50, (a, b, ref_a, ref_b)
    pa, pr = a / (a + b), ref_a / (ref_a + ref_b)
    sd = math.sqrt(pa * (1 - pa) / (a + b) + pr * (1 - pr) / (ref_a + ref_b))
    assert abs(pa - pr) <= 4 * sd + 0.03, (pa, pr, a, b, ref_a, ref_b)


JSON_APP = """
import json, sys, time
big = {"k%d" % i: [i, str(i), {"x": i * 1.5, "y": [True, None, "s" * 20]}] for i in range(20000)}
def encode_hot(until):
    while time.time() < until:
        json.dumps(big)
encode_hot(time.time() + float(sys.argv[1]))
"""


def test_c_extension_frames_above_the_python_frame(tmp_path):
    app = script(tmp_path, "enc.py", JSON_APP)
    with Workload(PY, app, 30) as w:
        p = run_bpfprof(["-U", "-d", SECONDS, "-p", w.pid])
    folded = parse_folded(p.stdout)
    n = total(folded)
    assert n >= 50
    # json.dumps -> JSONEncoder.encode (-> iterencode) -> the C encoder or str.join:
    # their native frames come after (leafward of) the Python frame that called them.
    def c_above_python(s):
        fr = s.split(";")
        last = max(i for i, f in enumerate(fr) if f.endswith("_[py]")) if py_frames(s) else -1
        return (last >= 0 and last + 1 < len(fr) and
                "dumps (json/__init__.py)_[py];JSONEncoder.encode (encoder.py)_[py]" in s and
                any("_json" in f or "PyUnicode" in f for f in fr[last + 1:]))

    c_above = count_with(folded, c_above_python)
    assert c_above >= 0.5 * n, (c_above, n, sorted(folded.items(), key=lambda x: -x[1])[:5])


THREADS_APP = """
import sys, threading, time
def alpha_leaf(n):
    return sum(i * 7 for i in range(n))
def beta_leaf(n):
    return sum(i * 13 for i in range(n))
def thread_a(until):
    while time.time() < until:
        alpha_leaf(5000)
def thread_b(until):
    while time.time() < until:
        beta_leaf(5000)
until = time.time() + float(sys.argv[1])
ts = [threading.Thread(target=thread_a, args=(until,)), threading.Thread(target=thread_b, args=(until,))]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def test_two_threads_each_their_own_frames(tmp_path):
    app = script(tmp_path, "thr.py", THREADS_APP)
    p = run_bpfprof(["-U", "--", PY, app, SECONDS], timeout=120)
    folded = parse_folded(p.stdout)
    a = count_with(folded, lambda s: "thread_a (thr.py)_[py]" in s and "alpha_leaf" in s)
    b = count_with(folded, lambda s: "thread_b (thr.py)_[py]" in s and "beta_leaf" in s)
    crossed = count_with(folded, lambda s: ("thread_a" in s and "beta_leaf" in s) or
                         ("thread_b" in s and "alpha_leaf" in s))
    assert a >= 20 and b >= 20, (a, b, p.stdout[:3000])
    assert crossed == 0, crossed
    # The generator expressions the leaves run show under them (sum() in between).
    assert count_with(folded, lambda s: re.search(
        r"alpha_leaf \(thr\.py\)_\[py\];([^;]*;)*alpha_leaf\.<locals>\.<genexpr> \(thr\.py\)_\[py\]",
        s) is not None) > 0


def test_whole_machine_and_pprof_lines(tmp_path):
    app = script(tmp_path, "app.py", APP)
    out = tmp_path / "py.pb.gz"
    with Workload(PY, app, 30):
        run_bpfprof(["-a", "-U", "-d", SECONDS, "-o", out])
    top = subprocess.run(["go", "tool", "pprof", "-lines", "-top", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    body = {line_of(APP, "for i in range(n):"), line_of(APP, "s += i * 7")}
    seen = {int(m.group(1)) for m in re.finditer(r"alpha_leaf \S*app\.py:(\d+)", top.stdout)}
    assert seen & body, (seen, body, top.stdout[:3000])
    folded = run_bpfprof(["convert", "-f", "folded", "--lines", out]).stdout
    assert re.search(r"alpha_leaf \(app\.py:\d+\)_\[py\]", folded)


GEN_APP = """
import collections, sys, time
until = time.time() + float(sys.argv[1])
alive = collections.deque(maxlen=40)
i = 0
while time.time() < until:
    # A new function in a new file each time; the oldest is freed, and its
    # code object's memory (and its strings') is soon another's.
    src = "def f_%d(n):\\n    s = 0\\n    for j in range(n):\\n        s += j\\n    return s\\n" % i
    ns = {}
    exec(compile(src, "gen%d.py" % i, "exec"), ns)
    ns["f_%d" % i](100000)
    alive.append(ns)
    i += 1
"""


def test_freed_code_objects_never_misnamed(tmp_path):
    app = script(tmp_path, "gen.py", GEN_APP)
    p = run_bpfprof(["-U", "-v", "--", PY, app, SECONDS], timeout=120)
    folded = parse_folded(p.stdout)
    named = wrong = 0
    for s, c in folded.items():
        for f in py_frames(s):
            m = re.fullmatch(r"f_(\d+) \(gen(\d+)\.py\)_\[py\]", f)
            if m:
                named += c
                wrong += c if m.group(1) != m.group(2) else 0
            elif f not in ("<module> (gen.py)_[py]", "[unknown]_[py]") and \
                    not re.fullmatch(r"<module> \(gen\d+\.py\)_\[py\]", f):
                wrong += c
    assert named >= 10, (named, p.stdout[:2000])
    assert wrong == 0, wrong


def test_process_exiting_mid_profile(tmp_path):
    """Samples of a process that exited before the drain: named, or unknown - never wrong."""
    app = script(tmp_path, "app.py", APP)
    proc = subprocess.Popen([str(BPFPROF), "-U", "-a", "-d", "4"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    for _ in range(4):
        subprocess.run([PY, str(app), "0.3"], stdout=subprocess.DEVNULL, check=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    for s in parse_folded(out):
        for f in py_frames(s):
            assert f in ("[unknown]_[py]", "<module> (app.py)_[py]", "driver (app.py)_[py]",
                         "alpha_leaf (app.py)_[py]", "beta_leaf (app.py)_[py]",
                         "reference (app.py)_[py]") or "app.py" not in f, f


def test_python_in_a_pid_and_mount_namespace(tmp_path):
    """A containerised Python: its thread ids (what the interpreter records)
    are its namespace's, not the host's; its files are in its own mounts."""
    app = script(tmp_path, "app.py", APP)
    p = run_bpfprof(["-U", "--", "unshare", "--pid", "--fork", "--mount", "--mount-proc",
                     PY, app, SECONDS], timeout=120)
    folded = parse_folded("\n".join(l for l in p.stdout.splitlines() if ";" in l))
    mine = {s: c for s, c in folded.items() if s.startswith("python3.11;")}
    n = total(mine)
    named = count_with(mine, lambda s: re.search(r"driver \(app\.py\)_\[py\];(alpha|beta)_leaf",
                                                 s) is not None)
    assert n >= 50 and named >= 0.8 * n, (named, n, p.stderr[-2000:])

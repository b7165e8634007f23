# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Python frames (CPython 3.11, Debian's /usr/bin/python3.11): the thread's
Python frames walked in BPF, interleaved with the native frames, named from
code objects read out of the process (qualname, file, line).

The workloads are scripts written here with known shares; an in-process
reference sampler (a thread reading sys._current_frames() every few
milliseconds) cross-checks the shares bpfprof measures.
"""
import glob
import math
import os
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pprof
from conftest import (BPFPROF, OUT, WORKLOADS, Sampled, Workload, assert_count_at_least,
                      assert_most, assert_same_share, count_tolerance, count_with, cpu_seconds,
                      parse_folded, run_bpfprof, total, wait_for)

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
def driver(secs):
    # secs of the process's CPU time: as many samples on a busy machine, only later
    while time.process_time() < secs:
        alpha_leaf(7000)
        beta_leaf(3000)
ref = collections.Counter()
main = threading.main_thread().ident
done = threading.Event()
def reference():
    # What sys._current_frames() sees of the main thread, every 5 ms.
    while not done.is_set():
        f = sys._current_frames().get(main)
        if f is not None:
            ref[f.f_code.co_name] += 1
        time.sleep(0.005)
threading.Thread(target=reference, daemon=True).start()
driver(float(sys.argv[1]))
done.set()
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
    proc = subprocess.Popen([PY, str(app), "300"], stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: cpu_seconds(proc.pid) > 0.2, "python started")
        p = Sampled(["-U", "-d", 120, "-p", proc.pid], [proc.pid], until_cpu=SECONDS,
                    timeout=180)
        want = p.cpu[proc.pid] * HZ
    finally:
        proc.kill()
        proc.wait()
    folded = parse_folded(p.stdout)
    n = total(folded)
    assert_count_at_least(n, want, "python")
    a = count_with(folded, lambda s: s.endswith("driver (app.py)_[py];alpha_leaf (app.py)_[py]")
                   or ";driver (app.py)_[py];alpha_leaf (app.py)_[py];" in s)
    b = count_with(folded, lambda s: s.endswith("driver (app.py)_[py];beta_leaf (app.py)_[py]")
                   or ";driver (app.py)_[py];beta_leaf (app.py)_[py];" in s)
    assert_most(a + b, n, f"driver;*_leaf {sorted(folded.items(), key=lambda x: -x[1])[:8]}")
    # Under the driver, under the interpreter's entry point, native frames below.
    rooted = count_with(folded, lambda s: re.search(
        r";Py_RunMain;.*;<module> \(app\.py\)_\[py\];driver \(app\.py\)_\[py\];(alpha|beta)_leaf",
        s) is not None)
    assert_most(rooted, a + b, "under Py_RunMain")
    # 7:3 by design (the same loop, 7000 and 3000 times).
    share = a / (a + b)
    sd = math.sqrt(0.7 * 0.3 / (a + b))
    assert abs(share - 0.7) <= 4 * sd + 0.05, (share, a, b)


def test_reference_sampler_agrees(tmp_path):
    """The in-process sampler and bpfprof see the same split over the same window."""
    app = script(tmp_path, "app.py", APP)
    p = run_bpfprof(["-U", "--", PY, str(app), str(SECONDS)], timeout=300)
    folded = parse_folded("\n".join(l for l in p.stdout.splitlines() if ";" in l))
    mine = {s: c for s, c in folded.items() if s.startswith("python3.11;")}
    a = count_with(mine, lambda s: py_frames(s)[-1:] == ["alpha_leaf (app.py)_[py]"])
    b = count_with(mine, lambda s: py_frames(s)[-1:] == ["beta_leaf (app.py)_[py]"])
    out_lines = [l for l in p.stdout.splitlines() if re.fullmatch(r"\d+ \d+", l.strip())]
    assert out_lines, p.stdout[-2000:]
    ref_a, ref_b = map(int, out_lines[-1].split())
    # SECONDS of CPU time: ~500 samples each, however busy the machine.
    assert_count_at_least(a + b, 0.9 * HZ * SECONDS, "alpha_leaf and beta_leaf")
    assert ref_a + ref_b > 0, (ref_a, ref_b)
    pa, pr = a / (a + b), ref_a / (ref_a + ref_b)
    sd = math.sqrt(pa * (1 - pa) / (a + b) + pr * (1 - pr) / (ref_a + ref_b))
    assert abs(pa - pr) <= 4 * sd + 0.03, (pa, pr, a, b, ref_a, ref_b)


JSON_APP = """
import json, sys, time
big = {"k%d" % i: [i, str(i), {"x": i * 1.5, "y": [True, None, "s" * 20]}] for i in range(20000)}
def encode_hot(secs):
    while time.process_time() < secs:
        json.dumps(big)
encode_hot(float(sys.argv[1]))
"""


def test_c_extension_frames_above_the_python_frame(tmp_path):
    app = script(tmp_path, "enc.py", JSON_APP)
    with Workload(PY, app, 300) as w:
        p = Sampled(["-U", "-d", 120, "-p", w.pid], [w.pid], until_cpu=SECONDS, timeout=180)
    folded = parse_folded(p.stdout)
    n = total(folded)
    assert_count_at_least(n, HZ * p.cpu[w.pid], "python")
    # json.dumps -> JSONEncoder.encode (-> iterencode) -> the C encoder or str.join:
    # their native frames come after (leafward of) the Python frame that called them.
    def c_above_python(s):
        fr = s.split(";")
        last = max(i for i, f in enumerate(fr) if f.endswith("_[py]")) if py_frames(s) else -1
        return (last >= 0 and last + 1 < len(fr) and
                "dumps (json/__init__.py)_[py];JSONEncoder.encode (encoder.py)_[py]" in s and
                any("_json" in f or "PyUnicode" in f for f in fr[last + 1:]))

    c_above = count_with(folded, c_above_python)
    assert_most(c_above, n, f"C above Python {sorted(folded.items(), key=lambda x: -x[1])[:5]}",
                share=0.5)


THREADS_APP = """
import sys, threading, time
def alpha_leaf(n):
    return sum(i * 7 for i in range(n))
def beta_leaf(n):
    return sum(i * 13 for i in range(n))
def thread_a(secs):
    while time.thread_time() < secs:  # each thread's own CPU time
        alpha_leaf(5000)
def thread_b(secs):
    while time.thread_time() < secs:
        beta_leaf(5000)
secs = float(sys.argv[1])
ts = [threading.Thread(target=thread_a, args=(secs,)), threading.Thread(target=thread_b, args=(secs,))]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def test_two_threads_each_their_own_frames(tmp_path):
    app = script(tmp_path, "thr.py", THREADS_APP)
    p = run_bpfprof(["-U", "--", PY, app, SECONDS], timeout=300)
    folded = parse_folded(p.stdout)
    a = count_with(folded, lambda s: "thread_a (thr.py)_[py]" in s and "alpha_leaf" in s)
    b = count_with(folded, lambda s: "thread_b (thr.py)_[py]" in s and "beta_leaf" in s)
    crossed = count_with(folded, lambda s: ("thread_a" in s and "beta_leaf" in s) or
                         ("thread_b" in s and "alpha_leaf" in s))
    # SECONDS of CPU time each: ~500 samples, most in its own leaf.
    assert_count_at_least(a, 0.5 * HZ * SECONDS, "thread_a;alpha_leaf " + p.stdout[:3000])
    assert_count_at_least(b, 0.5 * HZ * SECONDS, "thread_b;beta_leaf " + p.stdout[:3000])
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


REGEN_APP = """
import sys, time
time.sleep(0.3)  # found and drained meanwhile: a first generation is not cut by the start-up
SRC = "def {n}(t):\\n    end = time.time() + t\\n    while time.time() < end:\\n        time.sleep(0.005)\\n"
for i in range(int(sys.argv[1])):
    n = "gen_%03d" % i
    ns = {"time": time}
    exec(compile(SRC.format(n=n), "gen.py", "exec"), ns)
    print(hex(id(ns[n].__code__)), flush=True)
    ns[n](float(sys.argv[2]))
    ns.clear()  # no cycle left: the code object is freed here, its memory the next one's
"""


def test_new_code_at_a_freed_code_objects_address_is_named(tmp_path):
    """A function made where a freed one's code object was (exec() of
    generated code, a module reloaded): its frames are named after it, not
    left unnamed by what the walker remembers of the freed one. Every
    generation sleeps in 5 ms waits, so each wait is one off-CPU sample."""
    gens, secs = 8, 0.25  # all within the 3 s of drains every 200 ms after a Python is found
    app = script(tmp_path, "regen.py", REGEN_APP)
    p = run_bpfprof(["--off-cpu", "--view", "off-cpu", "-o", tmp_path / "out.folded", "--",
                     PY, app, gens, secs], timeout=120)
    addrs = p.stdout.split()
    # The scenario happened: code objects were made at freed ones' addresses.
    assert len(addrs) == gens and len(set(addrs)) < gens - 2, addrs
    folded = parse_folded((tmp_path / "out.folded").read_text())
    named, unknown = {}, 0
    for s, c in folded.items():
        last = py_frames(s)[-1:]
        if "<module> (regen.py)_[py]" not in py_frames(s)[:-1]:
            continue
        m = re.fullmatch(r"(gen_\d+) \(gen\.py\)_\[py\]", last[0])
        if m:
            named[m.group(1)] = named.get(m.group(1), 0) + c
        elif last == ["[unknown]_[py]"]:
            unknown += c
    waits = {n: round(us / 5000) for n, us in named.items()}
    k, n = sum(waits.values()), sum(waits.values()) + round(unknown / 5000)
    assert_most(k, n, "waits of generated functions named", share=0.95)
    # Each generation is named for about its own time (secs of 5 ms waits).
    expect = secs / 0.005
    assert sorted(waits) == [f"gen_{i:03d}" for i in range(gens)], waits
    for name, w in waits.items():
        assert_count_at_least(w, 0.9 * expect, name)


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
                     PY, app, SECONDS], timeout=300)
    folded = parse_folded("\n".join(l for l in p.stdout.splitlines() if ";" in l))
    mine = {s: c for s, c in folded.items() if s.startswith("python3.11;")}
    n = total(mine)
    named = count_with(mine, lambda s: re.search(r"driver \(app\.py\)_\[py\];(alpha|beta)_leaf",
                                                 s) is not None)
    # SECONDS of CPU time ("app.py"): ~500 samples, however busy the machine.
    assert_count_at_least(n, 0.9 * HZ * SECONDS, "python3.11 " + p.stderr[-2000:])
    assert_most(named, n, "driver;*_leaf named", share=0.8)


COROUTINES_APP = """
import asyncio, sys, time
def produce(n):
    for i in range(n):
        s = 0
        for j in range(200):
            s += j * i
        yield s
def consume(until):
    t = 0
    while time.time() < until:
        for v in produce(500):
            t += v
    return t
async def inner_leaf(n):
    s = 0
    for j in range(n):
        s += j * 3
    await asyncio.sleep(0)
    return s
async def middle(until):
    while time.time() < until:
        await inner_leaf(20000)
async def outer(until):
    await middle(until)
secs = float(sys.argv[1])
consume(time.time() + secs)
asyncio.run(outer(time.time() + secs))
"""


def test_generators_and_coroutines_under_their_caller(tmp_path):
    """A generator resumed by its consumer's for loop, and a chain of
    coroutines awaiting each other under asyncio.run(): each runs in a call of
    the interpreter loop of its own (gen_iternext, the C Task's send), and its
    frame must show with its caller's Python frames below it."""
    app = script(tmp_path, "co.py", COROUTINES_APP)
    p = run_bpfprof(["-U", "--", PY, app, SECONDS / 2], timeout=120)
    folded = parse_folded(p.stdout)
    # Stacks whose native walk reached the interpreter's entry point (a
    # native walk cut short is the unwinder's business, tested elsewhere).
    whole = {s: c for s, c in folded.items() if ";Py_RunMain;" in s}
    assert total(whole) >= 0.8 * total(folded), (total(whole), total(folded))
    gen = {s: c for s, c in whole.items() if "produce (co.py)_[py]" in s}
    coro = {s: c for s, c in whole.items() if "inner_leaf (co.py)_[py]" in s}
    want_gen = ["<module> (co.py)_[py]", "consume (co.py)_[py]", "produce (co.py)_[py]"]
    # asyncio.run -> Runner.run -> run_until_complete -> run_forever -> _run_once
    # -> Handle._run -> (Context.run, the C Task's step: native) -> the
    # coroutines (and above inner_leaf, asyncio.sleep's when it awaits it).
    want_coro = ["BaseEventLoop._run_once (base_events.py)_[py]", "Handle._run (events.py)_[py]",
                 "outer (co.py)_[py]", "middle (co.py)_[py]", "inner_leaf (co.py)_[py]"]

    def coro_ok(s):
        fr = py_frames(s)
        fr = fr[:fr.index("inner_leaf (co.py)_[py]") + 1]
        return fr[:2] == ["<module> (co.py)_[py]", "run (runners.py)_[py]"] and \
            fr[-len(want_coro):] == want_coro

    bad_gen = {s: c for s, c in gen.items() if py_frames(s) != want_gen}
    bad_coro = {s: c for s, c in coro.items() if not coro_ok(s)}
    assert total(gen) >= 20 and total(coro) >= 20, (total(gen), total(coro))
    # The walk is exact: a sample can only lose its chain in the few
    # instructions where the loop sets up a new call.
    assert total(bad_gen) <= 0.02 * total(gen) + 1, (total(bad_gen), total(gen), bad_gen)
    assert total(bad_coro) <= 0.02 * total(coro) + 1, (total(bad_coro), total(coro), bad_coro)
    # Each resumed frame is its own call of the loop: native frames between
    # the consumer and the generator.
    assert count_with(gen, lambda s: re.search(
        r";consume \(co\.py\)_\[py\];[^;]*[^]];([^;]*;)*produce \(co\.py\)_\[py\]", s)
        is not None) >= 0.98 * total(gen) - 1


PARENT_APP = """
import subprocess, sys
def parent_wait(child, secs):
    subprocess.run([sys.executable, child, secs], check=True)
parent_wait(sys.argv[1], sys.argv[2])
"""

CHILD_APP = """
import sys, time
def child_leaf(n):
    s = 0
    for i in range(n):
        s += i * 7
    return s
def child_driver(until):
    while time.time() < until:
        child_leaf(5000)
t0 = time.process_time()
child_driver(time.time() + float(sys.argv[1]))
print("child-cpu", time.process_time() - t0, flush=True)
"""


def child_named(folded, kid):
    return count_with(folded, lambda s: re.search(
        r";<module> \(%s\)_\[py\];child_driver \(%s\)_\[py\];child_leaf \(%s\)_\[py\]" %
        ((re.escape(kid),) * 3), s) is not None)


def test_python_started_by_python(tmp_path):
    """subprocess.run() of python3.11 from a python3.11 script: the child is a
    new process (fork, exec of the interpreter) found and walked as its own,
    under `-- python3.11 parent.py` and under -a. Under -- the child runs for
    a second, as such children often do: named before it is gone."""
    kid = f"kid_{os.getpid()}.py"  # -a: no other test's child counts
    parent = script(tmp_path, "parent.py", PARENT_APP)
    child = script(tmp_path, kid, CHILD_APP)
    p = run_bpfprof(["-U", "--", PY, parent, child, 1], timeout=120)
    m = re.search(r"^child-cpu ([0-9.]+)$", p.stdout, re.M)
    assert m, p.stdout[-2000:]
    folded = parse_folded("\n".join(l for l in p.stdout.splitlines() if ";" in l))
    named, want = child_named(folded, kid), float(m.group(1)) * HZ
    # At least the child's CPU time in its driver (the kernel may throttle a
    # few samples on a busy machine: 10%, then the Poisson tolerance).
    assert named >= 0.9 * want - count_tolerance(want), (named, want, p.stderr[-1500:])
    assert count_with(folded, lambda s: "child_leaf" in s and kid not in s) == 0
    # Its frames were named while it ran: none (but a sample or two at its
    # very start or end) unknown.
    unknown = count_with(folded, lambda s: "[unknown]_[py]" in s)
    assert unknown <= 0.05 * named + 2, (unknown, named)

    # -a, the parent and child started before bpfprof.
    with Workload(PY, parent, child, 30) as w:
        deadline = time.monotonic() + 10
        kids = []
        while not kids and time.monotonic() < deadline:
            time.sleep(0.1)
            kids = Path(f"/proc/{w.pid}/task/{w.pid}/children").read_text().split()
        assert kids, "the parent did not start its child"
        time.sleep(0.3)
        s = Sampled(["-a", "-U", "-d", SECONDS], pids=[int(kids[0])])
    folded = parse_folded(s.stdout)
    named, want = child_named(folded, kid), s.cpu[int(kids[0])] * HZ
    assert named >= 0.9 * want - count_tolerance(want), (named, want, s.stderr[-1500:])


IDLE_APP = """
import os, sys, threading, time
def sleeper_wait(until):
    while time.time() < until:
        time.sleep(0)
def reader_wait(until):
    r, w = os.pipe()
    while time.time() < until:
        os.write(w, b"x")
        os.read(r, 1)
until = time.time() + float(sys.argv[1])
ts = [threading.Thread(target=f, args=(until,)) for f in (sleeper_wait, reader_wait)]
[t.start() for t in ts]
[t.join() for t in ts]
"""


PY_HOT = """
import sys, time
def py_hot(secs):
    end = time.process_time() + secs
    s = 0
    while time.process_time() < end:
        for i in range(10000):
            s += i
"""
EMBED_APP = PY_HOT + "py_hot(float(sys.argv[1]))\n"


def test_interpreter_loaded_after_the_process_was_seen(tmp_path):
    """A native program that dlopen()s libpython after a second of its own
    work (an application embedding Python): when bpfprof first looked at it
    it was no Python; the interpreter is a mapping that came later, and its
    frames are walked and named from then on, under the native caller."""
    app = script(tmp_path, "embed.py", EMBED_APP)
    p = run_bpfprof(["-F", HZ, "-U", "-v", "--", WORKLOADS / "pyembed", 1, app, 3], timeout=120)
    folded = parse_folded(p.stdout)
    assert count_with(folded, lambda s: ";native_spin" in s) >= 20, p.stderr
    # Once the interpreter runs the file (PyRun_SimpleString), py_hot is on top.
    running = {s: c for s, c in folded.items() if ";run_python;PyRun_SimpleString" in s}
    hot = count_with(running, lambda s: py_frames(s)[-1:] == ["py_hot (embed.py)_[py]"])
    assert_most(hot, total(running), "samples of the embedded interpreter in py_hot", share=0.9)
    assert re.search(r"\(1 Python walked", p.stderr), p.stderr


SPAWN_APP = PY_HOT + """
import os, subprocess
# A big environment: the vfork() child copies it for its execve() while it
# still runs in this process's memory, so it is sampled there.
env = dict(os.environ, **{f"E{i}": "" for i in range(100000)})
for _ in range(int(sys.argv[1])):
    subprocess.run(["/bin/true"], env=env, check=True)
py_hot(1)
"""


def test_vfork_children_of_a_python_are_not_taken_for_pythons(tmp_path):
    """subprocess.run() starts its child with vfork(): until the exec the
    child runs in the Python's memory, and looked like a Python to the
    probe. Each one then counted as a new Python (drains five times as
    often for 3 s: a Python service that runs commands kept the agent
    there for good), and one read after its exec was 'a Python 3.11
    without the layout bpfprof expects'. The BPF notice says the child is
    a vfork() one; it is not probed, its exec is noticed anew."""
    app = script(tmp_path, "spawn.py", SPAWN_APP)
    p = run_bpfprof(["-F", 999, "-v", "--", "/usr/bin/python3.11", app, 30], timeout=120)
    folded = parse_folded(p.stdout)
    m = re.search(r"(\d+) vfork children not probed", p.stderr)
    assert m and int(m.group(1)) >= 1, p.stderr
    assert re.search(r"\(1 Python walked", p.stderr), p.stderr
    assert "layout bpfprof expects" not in p.stderr, p.stderr
    hot = count_with(folded, lambda s: py_frames(s)[-1:] == ["py_hot (spawn.py)_[py]"])
    # py_hot runs for 1 s of its CPU time: 999 samples at 999 Hz (Poisson tolerance).
    assert_count_at_least(hot, 999, "samples in py_hot")


def test_python_with_a_shared_libpython(tmp_path):
    """A python3.11 built with --enable-shared (the python:3.x container
    images', pyenv's): the executable is main() only, the interpreter the
    libpython3.11.so the loader maps after the exec bpfprof first sees. A
    one-second script is walked and named from its start (999 Hz: a
    thousand samples, so a late find of even 0.1 s shows)."""
    app = script(tmp_path, "hot.py", EMBED_APP)
    shared = OUT / "fixtures" / "pyshared" / "python3.11"  # tests/unit/fixtures/pyshared.c
    p = run_bpfprof(["-F", 999, "-U", "-v", "--", shared, app, 1], timeout=120)
    folded = parse_folded(p.stdout)
    running = {s: c for s, c in folded.items() if ";PyEval_EvalCode;" in s}
    hot = count_with(running, lambda s: py_frames(s)[-1:] == ["py_hot (hot.py)_[py]"])
    assert_most(hot, total(running), "samples of the script in py_hot", share=0.95)
    # The scenario: the interpreter is the library's, not the executable's.
    assert "libpython3.11.so" in subprocess.run(["ldd", shared], capture_output=True,
                                                text=True).stdout


def test_waiting_thread_sampled_in_the_kernel(tmp_path):
    """Threads that spend their time in blocking system calls (time.sleep(0),
    os.read/os.write on a pipe), without the GIL, sampled on CPU in the
    kernel: the stack has the kernel frames on top of the Python frame the
    thread waits in (its own thread state, not the GIL holder's)."""
    app = script(tmp_path, "idle.py", IDLE_APP)
    p = run_bpfprof(["--", PY, app, SECONDS], timeout=120)
    folded = parse_folded(p.stdout)
    kernel = {s: c for s, c in folded.items() if s.endswith("_[k]")}
    top = sorted(kernel.items(), key=lambda x: -x[1])[:6]

    def user(s):
        return [f for f in s.split(";") if not f.endswith("_[k]")]

    # Stacks whose native walk reached the thread's start (a native walk cut
    # short, "[unknown];read", is the unwinder's business, tested elsewhere).
    whole = {s: c for s, c in kernel.items() if ";start_thread;" in s}
    syscalls = count_with(kernel, lambda s: {"read", "write", "clock_nanosleep"} & set(user(s)))
    assert count_with(whole, lambda s: {"read", "write", "clock_nanosleep"} & set(user(s))) >= \
        0.8 * syscalls, (total(whole), syscalls, top)
    # Samples in the kernel under libc's read/write (the reader) and
    # clock_nanosleep (the sleeper): the thread's own function, right thread.
    rw = {s: c for s, c in whole.items() if {"read", "write"} & set(user(s))}
    sl = {s: c for s, c in whole.items() if "clock_nanosleep" in user(s)}
    # (The sleeper's time is mostly its loop and the GIL: a few samples.)
    assert total(rw) >= 20 and total(sl) >= 3, (total(rw), total(sl), top)
    rw_bad = {s: c for s, c in rw.items() if py_frames(s)[-1:] != ["reader_wait (idle.py)_[py]"]}
    sl_bad = {s: c for s, c in sl.items() if py_frames(s)[-1:] != ["sleeper_wait (idle.py)_[py]"]}
    assert total(rw_bad) <= 0.02 * total(rw) + 1, (total(rw_bad), total(rw), rw_bad)
    assert total(sl_bad) <= 0.02 * total(sl) + 1, (total(sl_bad), total(sl), sl_bad)
    # Every sample in the kernel from one of these threads (also taking the
    # GIL back, whose native frames are unnamed in Debian's binary) has its
    # Python frame: no other Python function, no thread's mixed up.
    bad = {s: c for s, c in whole.items() if py_frames(s)[-1:] not in
           (["reader_wait (idle.py)_[py]"], ["sleeper_wait (idle.py)_[py]"])}
    assert total(bad) <= 0.02 * total(whole) + 1, (total(bad), total(whole), bad)


WAIT_APP = """
import sys, threading, time
lock = threading.Lock()
def sleeper_wait(until):
    while time.time() < until:
        time.sleep(0.02)
def locker_wait(until):
    while time.time() < until:
        with lock:
            pass
        time.sleep(0.001)
def holder(until):
    while time.time() < until:
        with lock:
            time.sleep(0.05)
        time.sleep(0.001)
until = time.time() + float(sys.argv[1])
ts = [threading.Thread(target=f, args=(until,)) for f in (sleeper_wait, locker_wait, holder)]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def test_waiting_thread_off_cpu(tmp_path):
    """--off-cpu: a thread asleep in time.sleep() and one blocked on a
    threading.Lock (the holder sleeps holding it) - their waits' stacks have
    the kernel frames they blocked in on top of the Python function that
    waits, for (nearly) all of the time they wait."""
    app = script(tmp_path, "wait.py", WAIT_APP)
    secs = 4
    p = run_bpfprof(["--off-cpu", "--view", "off-cpu", "--", PY, app, secs], timeout=120)
    folded = parse_folded(p.stdout)  # microseconds blocked
    threads = {s: c for s, c in folded.items() if ";start_thread;" in s}
    top = sorted(threads.items(), key=lambda x: -x[1])[:6]
    slept = count_with(threads, lambda s: py_frames(s)[-1:] == ["sleeper_wait (wait.py)_[py]"] and
                       ";clock_nanosleep;" in s and s.endswith("_[k]"))
    locked = count_with(threads, lambda s: py_frames(s)[-1:] == ["locker_wait (wait.py)_[py]"] and
                        ";PyThread_acquire_lock_timed;" in s and "futex" in s and
                        s.endswith("_[k]"))
    # The sleeper is asleep nearly all the time, the locker mostly waits for
    # the lock (held 50 ms at a time, free for 1 ms): not counted are the
    # waits that began before bpfprof had the new process's unwind tables
    # (their native walk is cut short, no start_thread) and the start-up.
    assert slept >= 0.7 * secs * 1e6, (slept, top)
    assert locked >= 0.5 * secs * 1e6, (locked, top)
    # Every wait of these threads with a whole native stack is in its thread's function.
    bad = {s: c for s, c in threads.items() if py_frames(s)[-1:] not in
           (["sleeper_wait (wait.py)_[py]"], ["locker_wait (wait.py)_[py]"],
            ["holder (wait.py)_[py]"])}
    assert total(bad) <= 0.02 * total(threads), \
        (total(bad), total(threads), [(c, py_frames(s), s.split(";")[3:8], s.split(";")[-4:])
                                      for s, c in bad.items()])


def test_continuous_mode_carries_python_frames(tmp_path):
    """--interval with --output-dir: every stored pprof interval has the
    Python functions with their files and lines."""
    app = script(tmp_path, "app.py", APP)
    d = tmp_path / "store"
    with Workload(PY, app, 30) as w:
        run_bpfprof(["-p", w.pid, "-U", "--interval", 2, "--output-dir", d, "-d", 5.5])
    files = sorted(f for f in glob.glob(f"{d}/bpfprof-*") if ".tmp." not in f)
    assert len(files) >= 2, files
    body = {line_of(APP, "for i in range(n):"), line_of(APP, "s += i * 7")}
    for path in files:
        prof = pprof.decode(Path(path).read_bytes())
        folded = pprof.to_folded(prof)
        n = total(folded)
        if n < 20:  # the last, partial interval
            continue
        named = count_with(folded, lambda s: re.search(
            r";<module>;driver;(alpha|beta)_leaf(;|$)", s) is not None)
        assert_most(named, n, f"{path}: <module>;driver;*_leaf "
                    f"{sorted(folded.items(), key=lambda x: -x[1])[:4]}")
        funcs = {pprof.strings(prof, f.get(2, 0)): pprof.strings(prof, f.get(4, 0))
                 for f in prof["function"].values()}
        assert funcs.get("alpha_leaf", "").endswith("/app.py"), funcs
        lines = {ln.get(2) for loc in prof["location"].values() for ln in loc["lines"]
                 if pprof.strings(prof, prof["function"][ln.get(1)].get(2, 0)) == "alpha_leaf"}
        assert lines & body, (lines, body)


def patched_interpreter(dst, minor):
    """A copy of Debian's python3.11 whose Py_Version (read by bpfprof, not by
    the interpreter: sys.hexversion is compiled in) says 3.<minor>."""
    shutil.copy2(PY, dst)
    data = Path(dst).read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    off = None
    for sec in secs:
        if sec[1] != 11:  # SHT_DYNSYM
            continue
        strs = secs[sec[6]][4]
        for e in range(sec[4], sec[4] + sec[5], 24):
            name, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, e)
            if data[strs + name:data.index(b"\0", strs + name)] == b"Py_Version":
                off = value - secs[shndx][3] + secs[shndx][4]
    assert off is not None, "no Py_Version in " + PY
    old, = struct.unpack_from("<I", data, off)
    assert old >> 16 == 0x030b, hex(old)
    with open(dst, "r+b") as f:
        f.seek(off)
        f.write(struct.pack("<I", (old & 0xff00ffff) | minor << 16))
    return str(dst)


FORKER_APP = """
import os, sys, time
def spin(until):
    s = 0
    while time.time() < until:
        s += 1
pid = os.fork()
if pid == 0:
    spin(time.time() + 0.5)  # the forked copy runs (and is sampled), then execs
    os.execv(sys.executable, [sys.executable] + sys.argv[1:])
spin(time.time() + 0.5)
os.waitpid(pid, 0)
"""


def test_unknown_version_native_frames_and_one_warning(tmp_path):
    """A Python whose version bpfprof has no layout for (Debian's interpreter
    with Py_Version saying 3.99): native frames as the same interpreter's with
    --no-python, and one warning for all its processes - also for a forked
    Python that execs the interpreter again, and over many drains."""
    py = patched_interpreter(tmp_path / "python3.99", 99)
    ref = tmp_path / "pyref3.11"  # unpatched, its own command name for -a
    shutil.copy2(PY, ref)
    child = script(tmp_path, "child.py", CHILD_APP)
    forker = script(tmp_path, "forker.py", FORKER_APP)
    warn = re.compile(r"warning: process (\d+) runs %s: Python 3\.99 has no layout bpfprof "
                      r"knows; its Python functions are not shown \(native frames only; said "
                      r"once for all processes of this file\)" % re.escape(py))

    def native(stdout, comm):
        """Samples of comm, and those with the interpreter loop under
        PyEval_EvalCode (what --no-python shows of a Python function)."""
        folded = parse_folded("\n".join(l for l in stdout.splitlines() if ";" in l))
        mine = {s: c for s, c in folded.items() if s.startswith(comm + ";")}
        assert count_with(mine, lambda s: "_[py]" in s) == 0
        n = total(mine)
        assert n >= 20, (comm, n)
        return n, count_with(mine, lambda s: ";Py_RunMain;" in s and
                             ";PyEval_EvalCode;_PyEval_EvalFrameDefault" in s)

    def check(p, procs, p_ref=None):
        # Said once for all the processes of one interpreter file.
        pids = [m.group(1) for m in warn.finditer(p.stderr)]
        assert len(pids) == 1, (procs, pids, p.stderr[-3000:])
        n, k = native(p.stdout, "python3.99")
        if p_ref is None:
            # A new process's first samples, before its unwind tables are
            # in, are cut short - as with --no-python: the rest are whole.
            assert k >= 0.5 * n, (k, n)
            return
        assert not re.search(r"warning: process \d+ runs", p_ref.stderr), p_ref.stderr
        n_ref, k_ref = native(p_ref.stdout, "pyref3.11")
        assert_same_share(k / n, n, k_ref / n_ref, n_ref, "complete native stacks, "
                          "unknown version vs --no-python")

    # The parent, its forked copy (sampled while it spins), the copy after exec.
    p = run_bpfprof(["-U", "--", py, forker, child, 3], timeout=120)
    check(p, 2)
    # Two running processes (their tables installed before sampling starts),
    # over five one-second drains, against the same interpreter with --no-python.
    with Workload(py, child, 30) as a, Workload(py, child, 30) as b:
        p = run_bpfprof(["-p", f"{a.pid},{b.pid}", "-U", "-d", 5])
    with Workload(ref, child, 30) as a, Workload(ref, child, 30) as b:
        p_ref = run_bpfprof(["-p", f"{a.pid},{b.pid}", "-U", "--no-python", "-d", 5])
    check(p, 2, p_ref)

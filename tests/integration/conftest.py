# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Helpers for the integration tests: run bpfprof and workloads, parse output.

These tests need root and real BPF. They never skip: on a machine where they
cannot run, they fail and say why.
"""
import contextlib
import json
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / os.environ.get("OUT", "build")
BPFPROF = OUT / "bpfprof"
WORKLOADS = OUT / "workloads"
WORKLOAD_SOURCES = ROOT / "tests" / "workloads"  # scripts run as they are (Lisp)
CLK_TCK = os.sysconf("SC_CLK_TCK")

sys.path.insert(0, str(ROOT / "tools"))
import benchlib  # noqa: E402  (tools/: the benchmarks' lock, shared with them)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test")
    # A login shell on Debian with libdebuginfod-common enabled has it set: bpfprof
    # would fetch debug files from the Internet. test_debuginfod.py sets its own.
    os.environ.pop("DEBUGINFOD_URLS", None)


@pytest.fixture(autouse=True)
def _need_root_and_binary():
    assert os.geteuid() == 0, "integration tests need root (BPF and perf_event_open)"
    assert BPFPROF.exists(), f"{BPFPROF} is missing: run make first"


def cgroup2_root():
    """Where the cgroup2 hierarchy is mounted."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.startswith("cgroup2 "):
                return pre.split()[4]
    pytest.fail("no cgroup2 mount on this machine")


@contextlib.contextmanager
def cgroup_v2(name):
    """A cgroup v2 cgroup of its own for the with block, NAME-PID under the
    mount: yields its path; afterwards its processes are killed (cgroup.kill,
    or SIGKILL each) and it is removed, waited for at most 10 s."""
    cg = os.path.join(cgroup2_root(), f"{name}-{os.getpid()}")
    os.mkdir(cg)
    try:
        yield cg
    except BaseException:
        try:
            remove_cgroup(cg)
        except AssertionError as e:  # the test's own error is the one to show; this too
            import warnings
            warnings.warn(str(e))
        raise
    remove_cgroup(cg)


def remove_cgroup(cg, timeout=10):
    """Kills cgroup cg's processes and removes it (an assertion if it stays)."""
    if not os.path.isdir(cg):
        return
    kill = os.path.join(cg, "cgroup.kill")
    deadline = time.monotonic() + timeout
    while True:
        if os.path.exists(kill):
            with contextlib.suppress(OSError):
                with open(kill, "w") as f:
                    f.write("1")
        else:  # before Linux 5.14
            with contextlib.suppress(OSError):
                for pid in open(os.path.join(cg, "cgroup.procs")).read().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
        try:
            os.rmdir(cg)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            assert time.monotonic() < deadline, f"cgroup {cg} not removed in {timeout} s: {e}"
        time.sleep(0.05)


def into_cgroup(cg):
    """A preexec_fn: the child into cgroup cg (before it execs, e.g. before
    setpriv drops root)."""
    def f():
        with open(os.path.join(cg, "cgroup.procs"), "w") as p:
            p.write(str(os.getpid()))
    return f


def wl(name):
    path = WORKLOADS / name
    assert path.exists(), f"{path} is missing: run make test-deps"
    return str(path)


def sbcl():
    """Debian's sbcl, for the SBCL tests (test_sbcl*.py); skipped without it."""
    path = shutil.which("sbcl")
    if not path:
        pytest.skip("no sbcl (apt-get install sbcl)")
    return path


@contextlib.contextmanager
def sample_rate(want):
    """A frequency the kernel accepts now, at most `want`, held for the test:
    a test or benchmark that changes kernel.perf_event_max_sample_rate holds
    /tmp/bpfprof-sysctl.lock exclusively, so a shared hold keeps it from
    moving under us (sysctl_lock: the wait bounded)."""
    with sysctl_lock(shared=True):
        with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
            limit = int(f.read())
        yield min(want, limit)


@contextlib.contextmanager
def bench_lock(timeout=None, path=benchlib.BENCH_LOCK, shared=False):
    """Holds /tmp/bpfprof-bench.lock (or path; shared: a shared hold) for the
    with block: the tests that measure on the host (-a traps every process's
    allocations) take it themselves - never run them under `flock` (this
    fails at once then, saying so). The wait is bounded (timeout s; None:
    BPFPROF_BENCH_LOCK_TIMEOUT, default 900): a benchmark stuck on the host
    fails the test naming the holder (its pid and command line, and what it
    wrote into the file) instead of stalling the run for ever
    (tools/benchlib.py bench_lock())."""
    what = os.environ.get("PYTEST_CURRENT_TEST", "a test").rsplit(" (", 1)[0]
    with contextlib.ExitStack() as held:
        failed = None
        try:
            held.enter_context(benchlib.bench_lock(timeout, path=path, what=what, shared=shared))
        except benchlib.BenchLockTimeout as e:
            failed = str(e)
        if failed:  # (outside the except: one message, not a chained traceback)
            pytest.fail(failed, pytrace=False)
        yield


def sysctl_lock(shared=False, timeout=None):
    """/tmp/bpfprof-sysctl.lock held for the with block: exclusively by a test
    that changes kernel.perf_event_max_sample_rate (and puts it back),
    shared by one that relies on it not moving. Waited for as bench_lock()
    waits (bounded, the holder named)."""
    return bench_lock(timeout, path=benchlib.SYSCTL_LOCK, shared=shared)


class Lines:
    """A child's output pipe (text) read line by line in a thread, so that a
    test waits for a line with a bound: a child that neither writes nor
    exits fails the test after the timeout instead of stalling it.
    self.text: all read so far."""

    def __init__(self, stream):
        import queue
        self._q = queue.Queue()
        self._eof = False
        self.text = ""

        def pump():
            for line in stream:
                self._q.put(line)
            self._q.put(None)
        threading.Thread(target=pump, daemon=True).start()

    def readline(self, timeout, what="a line"):
        """The next line ("" at the end); an assertion after timeout s."""
        import queue
        if self._eof:
            return ""
        try:
            line = self._q.get(timeout=max(timeout, 0))
        except queue.Empty:
            raise AssertionError(f"{what}: nothing within {timeout:.1f} s; read so far:\n"
                                 + self.text[-3000:]) from None
        if line is None:
            self._eof = True
            return ""
        self.text += line
        return line

    def until(self, pred, timeout, what):
        """Reads until pred(line) is true for a line read (at most timeout s
        in all); that line. An assertion at the end of the stream or after
        timeout s."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.readline(deadline - time.monotonic(), what)
            if not line:
                raise AssertionError(f"{what}: the stream ended first; read:\n"
                                     + self.text[-3000:])
            if pred(line):
                return line

    def rest(self, timeout, what="the end of the stream"):
        """Everything up to the end of the stream (at most timeout s)."""
        deadline = time.monotonic() + timeout
        while self.readline(deadline - time.monotonic(), what):
            pass
        return self.text


class Waiting:
    """A workload started in its `wait` mode (goalloc, goforge): its first
    line of stdout is {"waiting": PID} (waited for at most timeout s), then
    it waits for SIGUSR1 (go()). self.pid: that PID; its stdout is read by a
    Lines. Leaving the context (or a start that fails) kills it."""

    def __init__(self, argv, timeout=60):
        self.proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True)
        try:
            self.lines = Lines(self.proc.stdout)
            what = f"{os.path.basename(str(argv[0]))}'s {{\"waiting\"}} line"
            first = self.lines.readline(timeout, what)
            assert first.startswith('{"waiting"'), f"{what}: {first!r}"
            self.pid = json.loads(first)["waiting"]
            self._first = len(first)
        except BaseException:
            self.close()
            raise

    def go(self):
        os.kill(self.pid, signal.SIGUSR1)

    def output(self, timeout=60):
        """Its stdout after the waiting line, once it ends (at most timeout s)."""
        text = self.lines.rest(timeout, f"the end of {self.proc.args[0]}'s stdout")
        self.proc.wait(timeout=timeout)
        return text[self._first:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class WaitingProc:
    """A Waiting workload shaped as the Popen its callers keep: communicate()
    gives its stdout after the waiting line (bounded), poll/kill/wait."""

    def __init__(self, waiting):
        self.w = waiting

    def communicate(self, timeout=60):
        return self.w.output(timeout), None

    def poll(self):
        return self.w.proc.poll()

    def kill(self):
        self.w.proc.kill()

    def wait(self, timeout=None):
        return self.w.proc.wait(timeout)


def start_waiting(argv, timeout=60):
    """(a WaitingProc, its pid) of a workload started in its wait mode."""
    w = Waiting(argv, timeout)
    return WaitingProc(w), w.pid


def probes_in(err, timeout=60):
    """Reads bpfprof --alloc's stderr (a Lines) until it says "profiling
    allocations of" (its probes are in) or ends, at most timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        line = err.readline(deadline - time.monotonic(),
                            "bpfprof's \"profiling allocations of\" line")
        if not line or "profiling allocations of" in line:
            return


def alloc_attach(waiting, out, env=None, timeout=60):
    """bpfprof --alloc -v -o out -p (the Waiting workloads' pids) until they
    exit; they are let go (go()) once the probes are in. Every wait is
    bounded (timeout s). Returns (bpfprof's stderr, the workloads' stdouts,
    seconds from the go to their ends, bpfprof's exit code)."""
    bp = subprocess.Popen([str(BPFPROF), "--alloc", "-v", "-o", str(out), "-p",
                           ",".join(str(w.pid) for w in waiting)],
                          stderr=subprocess.PIPE, text=True, env=env)
    try:
        err = Lines(bp.stderr)
        probes_in(err, timeout)
        t0 = time.monotonic()
        for w in waiting:
            w.go()
        outs = [w.output(timeout) for w in waiting]
        took = time.monotonic() - t0
        stderr = err.rest(timeout, "the end of bpfprof's stderr")
        bp.wait(timeout=timeout)
    finally:
        if bp.poll() is None:
            bp.kill()
        bp.wait()
    return stderr, outs, took, bp.returncode


def json_line(text, key):
    """The value of the first line of text that is a JSON object of key
    (goalloc's, goforge's reports)."""
    for line in text.splitlines():
        if line.startswith('{"' + key + '"'):
            return json.loads(line)[key]
    raise AssertionError(f"no {key} line:\n{text}")


def go_sites(p, pid=None):
    """{innermost non-runtime function: [alloc_objects, alloc_space,
    inuse_objects, inuse_space]} of a Go heap profile p's samples (of pid's
    alone if given)."""
    import pprof
    out = {}
    for s in p["sample"]:
        if pid is not None and s["label"].get("pid") != pid:
            continue
        name = "[none]"
        for lid in s["location_id"]:
            lines = p["location"][lid]["lines"] if lid in p["location"] else []
            names = [pprof.strings(p, p["function"][ln.get(1)].get(2, 0)) for ln in lines]
            hit = [n for n in names if not n.startswith("runtime.")]
            if hit:
                name = hit[0]
                break
        v = out.setdefault(name, [0, 0, 0, 0])
        for i in range(4):
            v[i] += s["value"][i]
    return out


GO_SITES = ("main.makeBytes", "main.makeNode", "strconv.formatBits", "main.worker")
GO_MIN_SAMPLES = 20  # a site compared needs this many of the runtime's samples (a loaded
# host makes fewer); main.makeBytes, most of the bytes, always has them


def assert_go_sites(truth, v, rate=524288):
    """goalloc's sites in bpfprof's profile (v, go_sites()) against its
    runtime's own heap profile (truth, its memprof line's "sites"): the same
    samples, so alloc_space and alloc_objects per site within 10% (only the
    weighing of each sample by its own size differs), in-use bytes within 20%
    plus two samples (the bucket's counts, read up to a drain before the
    exit: as of the runtime's last GC)."""
    assert truth["main.makeBytes"][0] >= GO_MIN_SAMPLES, truth
    for site in GO_SITES:
        t = truth.get(site, [0] * 5)
        if t[0] < GO_MIN_SAMPLES:
            continue
        assert site in v, f"{site} missing from {sorted(v)}"
        assert abs(v[site][1] - t[2]) <= 0.10 * t[2], \
            f"{site} alloc_space: ours {v[site][1]}, the runtime's {t[2]:.0f}"
        assert abs(v[site][0] - t[1]) <= 0.10 * t[1], \
            f"{site} alloc_objects: ours {v[site][0]}, the runtime's {t[1]:.0f}"
        assert abs(v[site][3] - t[4]) <= 0.20 * t[4] + 2 * rate, \
            f"{site} inuse_space: ours {v[site][3]}, the runtime's {t[4]:.0f}"


def read_tty(master, timeout, proc=None):
    """All a terminal's master side master gets until its other end is closed
    (EOF or EIO), bytes; waits at most timeout s (select), then kills proc
    (if given) and fails."""
    out = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ready = select.select([master], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            if proc is not None and proc.poll() is None:
                proc.kill()
            raise AssertionError(f"the terminal not closed within {timeout} s; it showed:\n"
                                 + b"".join(out).decode(errors="replace")[-3000:])
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed its side
            break
        if not chunk:
            break
        out.append(chunk)
    return b"".join(out)


def run_on_tty(argv, stream="stdout", timeout=120, env=None, **kw):
    """Runs argv with its stdout (stream="stdout") or stderr ("stderr") on a
    new terminal, the other one a pipe, at most timeout s: (returncode, what
    the terminal showed (text), the other stream (text))."""
    import pty
    master, slave = pty.openpty()
    other = "stderr" if stream == "stdout" else "stdout"
    try:
        with open(os.devnull, "rb") as null:
            proc = subprocess.Popen([str(a) for a in argv], stdin=null, env=env,
                                    **{stream: slave, other: subprocess.PIPE}, **kw)
        os.close(slave)
        slave = None
        got = []
        reader = threading.Thread(
            target=lambda: got.append(getattr(proc, other).read()), daemon=True)
        reader.start()  # the pipe read meanwhile: a full pipe would stall the terminal
        try:
            shown = read_tty(master, timeout, proc)
            proc.wait(timeout=max(10, timeout / 4))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=30)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return proc.returncode, shown.decode(errors="replace"), \
        (got[0].decode(errors="replace") if got else "")


def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no build id"
    return m.group(1)


def strip_with_debug_file(full, prog, debug):
    """prog: the ELF file full stripped of everything (symbols, DWARF, debug
    link); debug: full's debug file (objcopy --only-keep-debug). Returns
    prog's build id, which both share."""
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    subprocess.run(["strip", "--strip-all", "-R", ".gnu_debuglink", "-o", str(prog), str(full)],
                   check=True)
    sections = subprocess.run(["readelf", "-SW", str(prog)], capture_output=True, text=True,
                              check=True).stdout
    assert ".debug_info" not in sections and ".symtab" not in sections, sections
    return build_id(prog)


_UNIQUE_DIR = None


def uwl(name):
    """A copy of workload `name` with a command name no other process on the
    machine has ("busy" -> "busy_1a2b"), for whole-machine (-a, -C) tests that
    must not count someone else's workload. Returns (path, comm)."""
    global _UNIQUE_DIR
    import shutil
    import tempfile
    if _UNIQUE_DIR is None:
        _UNIQUE_DIR = Path(tempfile.mkdtemp(prefix="bpfprof-wl-"))
        _UNIQUE_DIR.chmod(0o755)  # like /usr/bin: readable without CAP_DAC_READ_SEARCH
        for lib in WORKLOADS.glob("*.so"):
            shutil.copy2(lib, _UNIQUE_DIR / lib.name)
    comm = f"{name}_{os.getpid() % 0x10000:04x}"[:15]
    dst = _UNIQUE_DIR / comm
    if not dst.exists():
        shutil.copy2(wl(name), dst)
    return str(dst), comm


# --- the tenant: an unprivileged account of its own ----------------------------
#
# The threat model (../shared/threat-model.md) has the tenant as the attacker
# and root's bpfprof as the target. Attack tests run the attacker's programs
# and make its files as this user, never as root with a changed mind.
TENANT = "bpfprof-tenant"


def tenant():
    """The tenant's passwd entry; the account is made on first use."""
    import pwd
    try:
        return pwd.getpwnam(TENANT)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", TENANT], check=True,
                       capture_output=True)
        return pwd.getpwnam(TENANT)


def new_tenant_dir(prefix="bpfprof-tenant-"):
    """A new directory the tenant owns (mode 0755, under /tmp, reachable by
    it); the caller removes it (tenant_dir, the fixture, does)."""
    import tempfile
    pw = tenant()
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def tenant_program(d, source, name="attack.py"):
    """The tenant's program `source` written into its directory d (readable
    by it); its path."""
    prog = Path(d) / name
    prog.write_text(source)
    prog.chmod(0o644)
    return str(prog)


def libc_path():
    """The C library's file: the tenant's attacks copy it (a container's own)."""
    for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
              "/lib64/libc.so.6"):
        if os.path.exists(p):
            return p
    pytest.fail("no libc.so.6 in /lib/x86_64-linux-gnu, /lib/aarch64-linux-gnu or /lib64")


# The tenant's program that maps copies of the C library (as a container
# host's processes map their own): it copies LIBC N times into DIR
# (libc-I.so.6), maps the copies (mmap PROT_EXEC) 4 to a process of its own
# (a rescan pass probes at most 4 files of a process: each copy is looked at
# in one pass), then the FILEs, if any, all in one more process (looked at
# after the copies); says "ready" and sleeps until SIGTERM, which ends its
# processes. Started by start_libc_copies().
LIBC_COPIES = r'''
import mmap, os, shutil, signal, sys, time
d, libc, n, more = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
paths = []
for i in range(n):
    paths.append(os.path.join(d, "libc-%d.so.6" % i))
    shutil.copyfile(libc, paths[-1])
kids = []
for part in [paths[i:i + 4] for i in range(0, n, 4)] + ([more] if more else []):
    pid = os.fork()
    if not pid:
        ms = []
        for p in part:
            with open(p, "rb") as f:
                ms.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                                    prot=mmap.PROT_READ | mmap.PROT_EXEC))
        time.sleep(600)
        os._exit(0)
    kids.append(pid)
signal.signal(signal.SIGTERM, lambda *a: [os.kill(k, 9) for k in kids] and os._exit(0))
time.sleep(0.2)
print("ready", flush=True)
for k in kids:
    os.waitpid(k, 0)
'''


def start_libc_copies(d, n, more=(), **kw):
    """The tenant's LIBC_COPIES program, in its directory d: n copies of the
    C library mapped, then the files `more`; started in a session of its own
    (os.killpg ends it and its processes whenever it dies: before "ready" its
    SIGTERM handler is not in yet), its stdout a pipe (text)."""
    prog = tenant_program(d, LIBC_COPIES, "libc_copies.py")
    return subprocess.Popen(as_tenant(["/usr/bin/python3", prog, d, libc_path(), n] + list(more)),
                            stdout=subprocess.PIPE, text=True, start_new_session=True, **kw)


def tenant_copy(src, d):
    """src copied into the tenant's directory d (its mode kept), the
    tenant's own: the copy's path."""
    pw = tenant()
    dst = Path(d) / Path(src).name
    shutil.copy2(src, dst)
    os.chown(dst, pw.pw_uid, pw.pw_gid)
    return dst


def tenant_sbcl(d, script, *args):
    """Debian's sbcl running the Lisp workload `script` (tests/workloads/,
    copied into the tenant's directory d) as the tenant, with args: its
    Popen (stdout a pipe, text)."""
    exe = sbcl()
    path = tenant_copy(WORKLOAD_SOURCES / script, d)
    return subprocess.Popen(as_tenant([exe, "--script", path] + list(args)),
                            stdout=subprocess.PIPE, text=True)


def alloc_failed_attach_then_sbcl(d, out, **env):
    """bpfprof --alloc -v -o out -d 3 -p FAKE,SBCL, one SBCL slot
    (BPFPROF_TEST_ALLOC_SBCL_SLOTS=1) and the variables env: FAKE the
    tenant's fakesbcl_attach (copied into its directory d: an SBCL runtime
    whose attach fails), SBCL Debian's sbcl running lispbench.lisp's list
    after it in -p; both run 8 s (past bpfprof -p's start on a loaded host)
    and are killed after. Its CompletedProcess (it exited 0)."""
    exe = sbcl()
    fake = tenant_copy(wl("fakesbcl_attach"), d)
    procs = []
    try:
        procs.append(subprocess.Popen(as_tenant([fake, "8"]), stdout=subprocess.PIPE, text=True))
        procs.append(subprocess.Popen([exe, "--script", WORKLOAD_SOURCES / "lispbench.lisp",
                                       "list", "8"], stdout=subprocess.PIPE, text=True))
        f, s = procs
        assert Lines(f.stdout).readline(60, "the tenant's fake's ready line").strip() == "ready"
        env = dict(os.environ, BPFPROF_TEST_ALLOC_SBCL_SLOTS="1", **env)
        return run_bpfprof(["--alloc", "-v", "-o", out, "-d", "3", "-p", f"{f.pid},{s.pid}"],
                           timeout=60, env=env)
    finally:
        kill_all(*procs)


def as_tenant(argv):
    """argv, to be run as the tenant: its uid, gid and groups, no capabilities."""
    tenant()
    return ["setpriv", f"--reuid={TENANT}", f"--regid={TENANT}", "--init-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"] + [str(a) for a in argv]


def tenant_run(argv, **kw):
    """Runs argv as the tenant to completion; CompletedProcess (text)."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(as_tenant(argv), **kw)


@pytest.fixture
def tenant_dir():
    """A directory the tenant owns (mode 0755, under /tmp, reachable by it):
    where its programs and crafted files live. Removed afterwards."""
    d = new_tenant_dir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shared_dir():
    """A directory everyone may write to, sticky like /tmp (mode 1777, owned
    by root): where a tenant plants links, FIFOs and files for root's writes."""
    import shutil
    import tempfile
    tenant()
    d = Path(tempfile.mkdtemp(prefix="bpfprof-shared-", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run_bpfprof(args, timeout=120, check=True, **kw):
    """Runs bpfprof; returns CompletedProcess (text)."""
    p = subprocess.run([str(BPFPROF)] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"bpfprof {args} exited {p.returncode}\nstderr:\n{p.stderr}")
    return p


def http_get(url, timeout=10):
    """(status, body) of a GET of url; an HTTP error status is an answer too."""
    import urllib.error
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def profile_end(p):
    """A pprof profile's end (its time plus its duration), s since the epoch."""
    return (p["time_nanos"] + p["duration_nanos"]) / 1e9


def parse_folded(text):
    """{stack text: count}; the count is after the last space."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit(), f"malformed folded line: {line!r}"
        out[stack] = out.get(stack, 0) + int(count)
    return out


def folded_sum(text, name):
    """The values of the folded stacks (text) with a frame named name (an
    annotation such as _[lisp] left out)."""
    n = 0
    for line in text.splitlines():
        stack, _, v = line.rpartition(" ")
        if any(f.split("_[")[0] == name for f in stack.split(";")):
            n += int(v)
    return n


def go_release_edited(src, dst, release):
    """dst: the Go program src with its build information's go1.19 edited
    to `release` (6 characters, e.g. go1.23), its code unchanged; mode 0755."""
    data = bytearray(Path(src).read_bytes())
    at = data.find(b"\xff Go buildinf:")
    assert at >= 0, f"{src}: no build information"
    ver = data.find(b"go1.19", at, at + 64)
    assert ver > 0, data[at:at + 64]
    assert len(release) == 6, release
    data[ver:ver + 6] = release.encode()
    Path(dst).write_bytes(bytes(data))
    Path(dst).chmod(0o755)
    return dst


def total(folded, comm=None):
    return sum(c for s, c in folded.items() if comm is None or s.split(";")[0] == comm)


def frames_of(stack):
    return stack.split(";")


def count_with(folded, pred):
    return sum(c for s, c in folded.items() if pred(s))


def has_chain(stack, chain):
    """True if frames `chain` appear contiguously in stack, ending at the leaf."""
    fr = frames_of(stack)
    n = len(chain)
    return len(fr) >= n and fr[-n:] == list(chain)


def leaf(stack):
    return frames_of(stack)[-1]


def sampled_seconds(stderr):
    m = re.search(r"(\d+) samples? in ([0-9.]+) s", stderr)
    assert m, f"no summary line in stderr:\n{stderr}"
    return int(m.group(1)), float(m.group(2))


def command_cpu(stderr):
    """The CPU time bpfprof reports for its -- COMMAND (the last one in stderr)."""
    m = re.findall(r"exited with status \d+ after ([0-9.]+) s of CPU", stderr)
    assert m, stderr
    return float(m[-1])


def cpu_seconds(pid):
    """utime + stime of a whole process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Reaped:
    """A process a test started (self.proc, a Popen) as a context: leaving
    it kills the process if it still runs, and reaps it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Workload(Reaped):
    """Starts a workload process; kills it on exit."""

    def __init__(self, *argv, cpu=None):
        cmd = [str(a) for a in argv]
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        self.pid = self.proc.pid
        time.sleep(0.3)  # let it reach its hot loop
        assert self.proc.poll() is None, f"workload {argv} died at start"


def wait_attached(proc, timeout=60):
    """Reads proc's stderr (a text pipe nothing has read yet) until bpfprof
    says it is sampling; returns what it read. The wait is bounded (timeout
    s): a bpfprof stalled before sampling (an open that blocks) fails the
    test instead of hanging it. The pipe is read a byte at a time, beneath
    proc.stderr's buffer, so what follows stays there for the caller."""
    fd = proc.stderr.fileno()
    seen, line = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError(f"bpfprof did not start sampling within {timeout} s:\n"
                                 + seen.decode(errors="replace")[-3000:])
        b = os.read(fd, 1)
        if not b:
            break
        seen += b
        if b != b"\n":
            line += b
        elif b"sampling" in line:
            return seen.decode(errors="replace")
        else:
            line.clear()
    raise AssertionError("bpfprof never started sampling:\n" + seen.decode(errors="replace"))


# --- statistical tolerances ----------------------------------------------------
#
# Every tolerance on a sampled quantity comes from the sample counts: SIGMAS
# standard deviations of the quantity's sampling distribution, plus a small
# floor for what is not random (a sample more or less at each end of a window,
# CPU times read in 1/CLK_TCK steps). Binomial for a share of n samples,
# Poisson for a count - conservative for per-task events, whose timer fires
# every 1/F of the task's own CPU time. At 5 SIGMAS a test fails by chance
# less than once in a million runs; a real error that small goes unseen, so
# windows are long enough for the bound to stay tight (see each test).
SIGMAS = 5.0


def share_tolerance(p, n, floor=0.01):
    """SIGMAS binomial standard deviations of a share p over n samples, plus floor."""
    return SIGMAS * math.sqrt(max(p * (1 - p), 0.0) / max(n, 1)) + floor


def assert_share(share, expected, n, what, floor=0.01):
    tol = share_tolerance(expected, n, floor)
    assert abs(share - expected) <= tol, \
        f"{what}: {share:.3f} of {n} samples, expected {expected:.3f} +- {tol:.3f}"


def assert_same_share(p1, n1, p2, n2, what, floor=0.01):
    """Two measurements of one share (independent samples): their difference."""
    p = (p1 * n1 + p2 * n2) / max(n1 + n2, 1)
    tol = SIGMAS * math.sqrt(max(p * (1 - p), 0.0) * (1 / max(n1, 1) + 1 / max(n2, 1))) + floor
    assert abs(p1 - p2) <= tol, \
        f"{what}: {p1:.3f} of {n1} vs {p2:.3f} of {n2} samples, differ by more than {tol:.3f}"


def count_tolerance(expected, floor=5):
    """SIGMAS Poisson standard deviations of a count with this mean, plus floor."""
    return SIGMAS * math.sqrt(max(expected, 0.0)) + floor


def assert_count(n, expected, what, floor=5):
    tol = count_tolerance(expected, floor)
    assert abs(n - expected) <= tol, f"{what}: {n} samples, expected {expected:.0f} +- {tol:.0f}"


def assert_count_at_least(n, expected, what, floor=5):
    """One-sided: on a shared machine a workload may run less than measured
    around bpfprof, never more."""
    tol = count_tolerance(expected, floor)
    assert n >= expected - tol, f"{what}: {n} samples, expected at least {expected - tol:.0f}"


def assert_most(k, n, what, share=0.9, floor=0.01):
    """One-sided: k of n samples are consistent with a true share of at least
    `share` (SIGMAS binomial standard deviations below it, plus floor). For
    "nearly every sample is named/whole" checks: a fixed `k > 0.9 * n` fails
    by chance when a loaded machine leaves few samples, this only when the
    share is really lower. It still fails for a real bug (names or chains
    missing from most samples) once n is a few dozen: with n = 40 the bound is
    0.9 - 0.25, so k = 0 or a half fails; Sampled(until_cpu=...) gives the
    workload enough CPU time for n to be a few hundred."""
    tol = share_tolerance(share, n, floor)
    assert n > 0 and k / n >= share - tol, \
        f"{what}: {k} of {n} samples ({k / max(n, 1):.3f}), expected at least {share - tol:.3f}"


def assert_few(k, n, what, share=0.02, floor=0.01):
    """One-sided, the other way: k of n samples are consistent with a true
    share of at most `share` (for "hardly any sample is unnamed" checks)."""
    tol = share_tolerance(share, n, floor)
    assert k / max(n, 1) <= share + tol, \
        f"{what}: {k} of {n} samples ({k / max(n, 1):.3f}), expected at most {share + tol:.3f}"


# Heap profiles (--alloc): a Poisson process of mean P over the bytes samples
# an allocation of s bytes with probability p = 1 - exp(-s/P) and weighs it by
# w = 1/p. For a site of n allocations of s bytes (T = n s), the estimate
# s w K (K ~ Binomial(n, p)) is unbiased with variance n s^2 w^2 p (1 - p) =
# T s w (1 - p): a standard deviation of about sqrt(T P) bytes, 1/sqrt(expected
# samples) relative. assert_bytes allows SIGMAS of them.

def sd_bytes(total, size, period):
    """Standard deviation of a site's estimated bytes (n blocks of size bytes)."""
    p = -math.expm1(-size / period)
    return math.sqrt(total * size * (1 - p) / p)


def assert_bytes(est, total, size, period, what, floor=0.0):
    """A site's estimated bytes within SIGMAS x sd_bytes of its true total,
    plus floor (what is not random: a workload's pace, a window's edges)."""
    tol = SIGMAS * sd_bytes(total, size, period) + floor
    assert abs(est - total) <= tol, \
        f"{what}: estimated {est} bytes, truly {total} +- {tol:.0f}"


def sample_leaf(p, s):
    """The function name of pprof profile p's sample s's leaf ("[none]")."""
    import pprof
    loc = p["location"][s["location_id"][0]] if s["location_id"] else None
    if loc and loc["lines"]:
        return pprof.strings(p, p["function"][loc["lines"][-1].get(1)].get(2, 0))
    return "[none]"


def heap_by_pid(p):
    """A heap profile's values by pid label and leaf function: {pid: {leaf:
    [alloc_objects, alloc_space, inuse_objects, inuse_space]}}."""
    out = {}
    for s in p["sample"]:
        v = out.setdefault(s["label"].get("pid"), {}).setdefault(sample_leaf(p, s), [0, 0, 0, 0])
        for i in range(4):
            v[i] += s["value"][i]
    return out


def site_values(path):
    """A heap profile file (its four sample types and period type checked):
    (profile, {leaf function: [alloc_objects, alloc_space, inuse_objects,
    inuse_space]}), all processes together."""
    import pprof
    with open(path, "rb") as f:
        p = pprof.decode(f.read())
    types = [(pprof.strings(p, t.get(1, 0)), pprof.strings(p, t.get(2, 0)))
             for t in p["sample_type"]]
    assert types == [("alloc_objects", "count"), ("alloc_space", "bytes"),
                     ("inuse_objects", "count"), ("inuse_space", "bytes")], types
    pt = p["period_type"]
    assert (pprof.strings(p, pt.get(1, 0)), pprof.strings(p, pt.get(2, 0))) == \
        ("space", "bytes")
    out = {}
    for s in p["sample"]:
        v = out.setdefault(sample_leaf(p, s), [0, 0, 0, 0])
        for i in range(4):
            v[i] += s["value"][i]
    return p, out


def children_cpu_seconds():
    """utime + stime of every waited-for child of this process so far."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_for(cond, what, timeout=30, step=0.05):
    """Polls cond() until it is true; an assertion after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(step)


def _exited(pid):
    """True once process pid has exited, not yet reaped: a zombie with no
    other thread (a main thread that exited alone is a zombie too)."""
    with open(f"/proc/{pid}/stat") as f:
        zombie = f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    return zombie and len(os.listdir(f"/proc/{pid}/task")) <= 1


class Sampled:
    """A bpfprof run and the CPU time of processes over its sampling window:
    from the "sampling" line (after attach) to the summary line (after the
    last drain), so neither start-up nor the written output is counted.

    until_cpu=S: stop bpfprof (SIGINT, a normal stop) once `pids` together got
    S seconds of CPU time in the window, or when one of them exits; args then
    give a -d as the upper bound. A busy machine makes such a test slower,
    not weaker: the sample counts its bounds are derived from stay the same.
    wrap: a function of the command line that returns the one to run (e.g.
    under capsh); it must exec bpfprof in place, so the signal reaches it."""

    def __init__(self, args, pids=(), env=None, timeout=120, until_cpu=None, wrap=None):
        import threading
        cmd = [str(BPFPROF)] + [str(a) for a in args]
        proc = subprocess.Popen(wrap(cmd) if wrap else cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        out = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
        reader.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        cpu0, lines = {}, []
        started = threading.Event()
        self.cpu = {}

        def stop_at_cpu():
            started.wait()
            while proc.poll() is None:
                try:
                    got = sum(cpu_seconds(pid) - cpu0[pid] for pid in pids)
                    if any(_exited(pid) for pid in pids):
                        got = until_cpu  # nothing more to wait for
                except (OSError, IndexError, KeyError):
                    got = until_cpu  # a workload exited and was reaped
                if got >= until_cpu:
                    proc.send_signal(signal.SIGINT)
                    return
                time.sleep(0.05)
        stopper = None
        if until_cpu is not None:
            assert pids, "until_cpu needs the pids whose CPU time to wait for"
            stopper = threading.Thread(target=stop_at_cpu, daemon=True)
            stopper.start()
        try:
            for line in proc.stderr:
                lines.append(line)
                if not cpu0 and "sampling" in line:
                    cpu0 = {pid: cpu_seconds(pid) for pid in pids}
                    started.set()
                elif cpu0 and not self.cpu and re.search(r"\d+ samples? in [0-9.]+ s", line):
                    self.cpu = {pid: cpu_seconds(pid) - cpu0[pid] for pid in pids}
            proc.wait()
            reader.join()
        finally:
            timer.cancel()
            started.set()
            if stopper:
                stopper.join()
        self.stdout, self.stderr = "".join(out), "".join(lines)
        self.returncode = proc.returncode
        assert proc.returncode == 0, f"bpfprof {args} exited {proc.returncode}\n{self.stderr}"
        assert not pids or self.cpu, f"no sampling window in:\n{self.stderr}"


def metric(text, name):
    """The value of a metric without labels in Prometheus text, or None."""
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def metrics(port):
    """bpfprof --listen port's /metrics, waited for (up to 10 s) while it starts."""
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            return urllib.request.urlopen(base + "/metrics", timeout=1).read().decode()
        except OSError:
            time.sleep(0.1)
    raise AssertionError("no /metrics")


def kill_all(*procs, timeout=30):
    """Kills each process (a Popen, or None) that still runs, and reaps it."""
    for p in procs:
        if p is not None:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=timeout)


class Stoppable(Reaped):
    """A bpfprof run a test started: self.proc (its stderr a pipe) and
    self.head (what wait_attached read of it), set by the subclass. stop()
    ends it with SIGINT and returns its whole stderr; leaving the context
    kills it if it still runs."""
    stderr = None

    def stop(self):
        if self.stderr is None:
            self.proc.send_signal(signal.SIGINT)
            _, err = self.proc.communicate(timeout=60)
            self.stderr = self.head + err
        return self.stderr

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""benchlib.py - process and client set-up shared by the benchmarks, the soak
(tools/soak_hostile.py) and the hostile-input integration tests
(tests/integration/test_hostile.py imports it from here):

  * kill_groups(): ends workloads started in their own sessions, whole groups;
  * churn(): shell loops that start short processes, as a busy host does;
  * free_port(): a TCP port nothing listens on;
  * http_get(), wait_healthy(), interrupt(), cpu_s(), med(): a bpfprof run's
    plumbing - a GET on its --listen port, waited for until /healthz is ok,
    stopped with SIGINT (killed if it does not end), its CPU time, and a
    median (min - max) for the tables;
  * bench_lock(): /tmp/bpfprof-bench.lock held, waited for at most a bound
    (a stuck holder names itself in the error instead of stalling CI);
  * FailingIngest: a push server that fails every request;
  * Crowd: idle and trickling HTTP clients that keep their number;
  * HoldingClients: HTTP clients that send a request and never hang up;
  * HostileIngest: a push server whose answer never ends (header or body);
  * HugeJit, ManyMaps: the hostile processes (a ~232 MB perf map, tens of
    thousands of executable mappings), started and ready to be profiled;
  * HugePyCodes: Pythons whose code objects are as large as the agent reads
    (names, file names, line tables), run as the tenant.


  * make_go_lookalike(), make_fake_python(), StallFiles: tenant files that
    cost the agent super-linear or repeated work (a file that only looks
    like Go, fake python3.11 processes), made and run by a given user.
  * make_slow_unwind(), make_long_names(), SlowUnwind, LongNameFiles,
    DensePerfMaps: tenant files and processes that test the agent's caps at
    insertion and its table-build budget (an .eh_frame whose table costs the
    square of its FDEs' length, symbols named by overlapping long strings,
    perf maps of the shortest lines), made and run by a given user.

Standard library only: the tools run from a fresh checkout.
"""
import contextlib
import fcntl
import http.client
import http.server
import os
import signal
import socket
import statistics
import subprocess
import threading
import time


def kill_groups(procs):
    """SIGKILL the process group of each Popen (started with
    start_new_session=True, so its children go too) and reap it."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


CHURN = ("i=0; while :; do i=$((i+1)); "
         "sh -c 'n=0; while [ $n -lt $SPIN ]; do n=$((n+1)); done'; ls / >/dev/null; "
         "[ $((i % 5)) -eq 0 ] && python3 -c 'sum(range(100000))'; sleep $PAUSE; done")


@contextlib.contextmanager
def churn(loops=1, pause=0.1, spin=3000):
    """Process churn, as a busy container host has: `loops` shell loops,
    each starting ~2.2 short processes an iteration (a shell counting to
    `spin`, ~15 ms at 3000; ls; every fifth time a python3 -c) and then
    sleeping `pause` s - ~10 processes a second at the defaults. Each new
    program image is one a profiler sees for the first time at its first
    sample. The loops (whole process groups) are killed on the way out."""
    env = dict(os.environ, PAUSE=f"{pause:.3f}", SPIN=str(spin))
    procs = []
    try:
        for _ in range(loops):
            procs.append(subprocess.Popen(["sh", "-c", CHURN], env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
        yield procs
    finally:
        kill_groups(procs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=10):
    """GET 127.0.0.1:port path: (status, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_healthy(proc, port, timeout=60, ready=None):
    """Waits until bpfprof proc's /healthz on port is ok (and ready(), if
    given, is true), at most timeout s; RuntimeError if proc ends first or
    the time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if ready is None or ready():
            try:
                if http_get(port, "/healthz", timeout=1)[0] == 200:
                    return
            except OSError:
                pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{proc.args[0]} never ready on port {port} "
                               f"(exit {proc.poll()}, {timeout:g} s)")
        time.sleep(0.1)


def interrupt(proc, timeout=60):
    """Stops proc with SIGINT (if it still runs) and reaps it; killed if it
    has not ended within timeout s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_s(pid):
    """utime + stime of the process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def med(v, fmt="{:.0f}"):
    """"median (min - max)" of v's values (None left out; "-" if none), each
    formatted by fmt."""
    v = [x for x in v if x is not None]
    if not v:
        return "-"
    return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))} - {fmt.format(max(v))})"


# --- the benchmark lock ----------------------------------------------------------
#
# Benchmarks and timing-sensitive tests hold /tmp/bpfprof-bench.lock (flock,
# exclusive) while they measure. A holder that never lets go (a benchmark
# stuck on the host) must not stall whoever waits for ever: bench_lock()
# waits at most `timeout` seconds (BPFPROF_BENCH_LOCK_TIMEOUT, default 900:
# longer than any benchmark's round here, far shorter than "for ever"), then
# raises BenchLockTimeout naming the holder - from /proc/locks (whoever holds
# it, flock(1) and the command it runs too) and from what the last holder
# that took it through bench_lock() wrote into the file.

BENCH_LOCK = "/tmp/bpfprof-bench.lock"
# Held exclusively by whatever changes kernel.perf_event_max_sample_rate (and
# puts it back), shared by whatever relies on it not moving.
SYSCTL_LOCK = "/tmp/bpfprof-sysctl.lock"
BENCH_LOCK_TIMEOUT = 900.0


class BenchLockTimeout(TimeoutError):
    pass


def bench_lock_timeout():
    """The bound on a wait for the lock: BPFPROF_BENCH_LOCK_TIMEOUT seconds, or 900."""
    t = os.environ.get("BPFPROF_BENCH_LOCK_TIMEOUT")
    try:
        return float(t) if t else BENCH_LOCK_TIMEOUT
    except ValueError:
        raise ValueError(f"BPFPROF_BENCH_LOCK_TIMEOUT={t!r}: not a number of seconds") from None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(f.read().decode(errors="replace").replace("\0", " ").split())[:300]
    except OSError:
        return None


def _ancestors():
    """The pids above this process, up to init."""
    out, pid = [], os.getppid()
    while pid > 1:
        out.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def lock_holders(path=BENCH_LOCK):
    """The pids holding a flock() lock on path (/proc/locks), blocked waiters not."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = []
    for line in lines:
        f = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; a waiter: "1: -> FLOCK ..."
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == want and f[4].isdigit():
            pids.append(int(f[4]))
    return pids


def describe_holders(path=BENCH_LOCK):
    """Who holds path: each holder's pid and command line (and its children's:
    flock(1) runs the command that measures), and what the last bench_lock()
    holder wrote into the file."""
    said = []
    for pid in lock_holders(path):
        cmd = _cmdline(pid)
        if cmd is None:
            said.append(f"pid {pid} (gone; a child of its holds the lock)")
            continue
        kids = []
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        said.append(f"pid {pid} ({cmd})" + "".join(
            f", running pid {k} ({_cmdline(k) or 'gone'})" for k in kids[:3]))
    try:
        with open(path, errors="replace") as f:
            note = f.read(1000).strip()
    except OSError:
        note = ""
    if note:  # written by a bench_lock() holder, emptied as it lets go
        said.append(f"the file says: {note}")
    return "; ".join(said) or "no holder found in /proc/locks (it let go just now?)"


class _Expired(Exception):
    pass


def _flock_within(f, timeout, op=fcntl.LOCK_EX):
    """Takes f's lock (op: fcntl.LOCK_EX or LOCK_SH), waiting at most timeout
    seconds: True once taken. In the main thread the wait is flock(2)'s own, queued with the
    other waiters (flock(1)'s), and ended by a timer's SIGALRM; elsewhere
    (no signals there) a try every 0.1 s."""
    def on_alarm(signum, frame):
        raise _Expired
    if timeout > 0 and threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGALRM, on_alarm)
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            fcntl.flock(f, op)
            return True
        except _Expired:
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(f, op | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(0.1)


@contextlib.contextmanager
def bench_lock(timeout=None, path=BENCH_LOCK, what=None, shared=False):
    """Holds path (flock, exclusive; shared=True: shared) for the with block,
    waiting at most timeout seconds (None: bench_lock_timeout()) for it;
    BenchLockTimeout naming the holder otherwise - at once when the holder is
    an ancestor of this process (run under `flock PATH`: a wait that would
    never end). While held exclusively, the file says who holds it (pid,
    command line, `what`), for whoever waits to read; it is emptied before
    the lock is let go (a shared holder writes nothing: others share it).
    Any lock file: SYSCTL_LOCK, the ns_last_pid one, as well as BENCH_LOCK."""
    if timeout is None:
        timeout = bench_lock_timeout()
    op = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    f = open(path, "a+")
    try:
        try:
            fcntl.flock(f, op | fcntl.LOCK_NB)
        except BlockingIOError:
            mine = set(lock_holders(path)) & set(_ancestors())
            if mine:
                raise BenchLockTimeout(
                    f"{path} is held by pid {min(mine)}, an ancestor of this process "
                    f"({_cmdline(min(mine))}): the wait would never end (what takes the "
                    f"lock itself is run without flock)") from None
            if not _flock_within(f, timeout, op):
                raise BenchLockTimeout(f"{path} not taken within {timeout:g} s "
                                       f"(BPFPROF_BENCH_LOCK_TIMEOUT); held by "
                                       f"{describe_holders(path)}") from None
        if shared:
            yield
            return
        with contextlib.suppress(OSError):  # the note is a courtesy; the lock is what counts
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"
                    f"{', ' + what if what else ''} ({_cmdline(os.getpid())})\n")
            f.flush()
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                f.truncate(0)
    finally:
        f.close()  # lets go of the lock


class FailingIngest:
    """A Pyroscope double that fails every request: `status`, with
    Retry-After `retry_after` if given. Records when each request came
    (`times`); `userinfo` ("user:password") goes into `url`."""

    def __init__(self, status=500, retry_after=None, body=b"ingester unavailable\n",
                 userinfo=None):
        outer = self
        self.times = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.times.append(time.monotonic())
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", str(retry_after))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        auth = f"{userinfo}@" if userinfo else ""
        self.url = f"http://{auth}127.0.0.1:{self.srv.server_port}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    @property
    def requests(self):
        return len(self.times)

    def close(self):
        self.srv.shutdown()


class Crowd:
    """Hostile clients of an HTTP server on 127.0.0.1:port: `idle`
    connections that never send, `slow` ones that trickle one byte a second
    of a header that never ends. All connect at once; a connection the
    server closes (or one that could not be made) is opened again, so the
    crowd keeps its size. Runs until close() or until `stop` is set."""

    def __init__(self, port, idle, slow, stop=None):
        self.port, self.idle, self.slow = port, idle, slow
        self.stop = stop or threading.Event()
        self.reconnects = 0  # connections lost and opened again
        self.socks = [self._try_connect() for _ in range(idle + slow)]
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def _try_connect(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return None
        s.setblocking(False)
        return s

    def run(self):
        junk = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4096
        i = 0
        while not self.stop.is_set():
            for k, s in enumerate(self.socks):
                try:
                    if s is None:
                        raise OSError
                    if s.recv(4096) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    if s is not None:
                        s.close()
                        self.reconnects += 1
                    self.socks[k] = self._try_connect()
                    continue
                if k >= self.idle:
                    try:
                        s.send(junk[i % len(junk):i % len(junk) + 1])
                    except OSError:
                        pass
            i += 1
            self.stop.wait(1.0)

    def connected(self):
        return sum(s is not None for s in self.socks)

    def close(self):
        self.stop.set()
        self.t.join(timeout=10)
        for s in self.socks:
            if s is not None:
                s.close()


class HugeJit:
    """build/workloads/jitlike in its "huge" mode: a ~232 MB perf map (1.8M
    entries with 120-character names) around its real code; it runs
    jit_hot_loop, then after late() jit_hot_loop_late, whose entry is the
    map's first line. Returns once the map is written. prefix: e.g.
    ["nice", "-n", "19"] (it must exec the program in place)."""

    def __init__(self, exe, secs, prefix=()):
        self.proc = subprocess.Popen(list(prefix) + [str(exe), str(secs), "huge"],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if not line:
            self.close()
            raise RuntimeError(f"{exe} did not start")
        self.pid = int(line[0])
        self.map = f"/tmp/perf-{self.pid}.map"

    def late(self):
        self.proc.send_signal(signal.SIGUSR1)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if os.path.exists(self.map):
            os.unlink(self.map)


class FakeJvms:
    """build/workloads/fakejvm (issue 42) as a tenant runs it: one process in
    each mode - "hostile" (a code cache rewritten while read, a class name
    of 65535 control characters, a hop chain past the walk's cap), "tables"
    (4 Mi table entries, names without a NUL) and "unknown" (tables lacking
    CodeBlob::_name) - restarted every `every` seconds, so root's bpfprof
    keeps probing new "JVMs". prefix: e.g. the tenant's setpriv command line
    (it must exec the program in place)."""

    MODES = ("hostile", "tables", "unknown")

    def __init__(self, exe, prefix=(), every=20):
        self.exe, self.prefix, self.every = str(exe), list(prefix), every
        self.procs, self.stopping = [], threading.Event()
        self.thread = None

    def _spawn(self):
        return [subprocess.Popen(self.prefix + [self.exe, m, str(self.every + 5)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for m in self.MODES]

    def _run(self):
        while not self.stopping.is_set():
            old, self.procs = self.procs, self._spawn()
            for p in old:
                p.kill()
                p.wait()
            self.stopping.wait(self.every)

    def start(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        if self.thread:
            self.thread.join()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    close = stop  # soak_hostile.py closes every attacker


# A fork loop: each child allocates 1 MiB (sampled at any --alloc period up to
# that) and exits; the parent prints how many it made when SIGINT ends it.
PID_CHURN_PY = r'''
import os, sys, time
end, n = time.monotonic() + float(sys.argv[1]), 0
try:
    while time.monotonic() < end:
        pid = os.fork()
        if pid == 0:
            b = bytearray(1 << 20)
            os._exit(0)
        os.waitpid(pid, 0)
        n += 1
except KeyboardInterrupt:
    pass
print("forks", n, flush=True)
'''


class PidChurn:
    """--alloc -a's table of process names against a tenant (session 7, W1-D):
    one process forking short children one after the other, each allocating
    1 MiB and exiting - hundreds of new pids a second, each a new name. The
    table must keep only the live ones (bpfprof -v's "process names: N kept").
    prefix: e.g. the tenant's setpriv command line (it must exec python in
    place). stop() returns the forks made."""

    def __init__(self, prefix=(), secs=86400):
        self.argv = list(prefix) + ["/usr/bin/python3", "-c", PID_CHURN_PY, str(secs)]
        self.proc, self.forks = None, 0

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        return self

    def stop(self):
        if self.proc is None:
            return self.forks
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out = self.proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out = self.proc.communicate()[0]
        for line in (out or "").splitlines():
            if line.startswith("forks "):
                self.forks = int(line.split()[1])
        self.proc = None
        return self.forks

    close = stop  # soak_hostile.py closes every attacker


class ManyMaps:
    """build/workloads/manymaps: its own executable mapped n times, then
    main -> run -> spin_hot (with copy: spin_hot runs in the first copy).
    Returns once they are all mapped."""

    def __init__(self, exe, secs, n, copy=False, prefix=()):
        self.proc = subprocess.Popen(list(prefix) + [str(exe), str(secs), str(n)] +
                                     (["copy"] if copy else []),
                                     stdout=subprocess.PIPE, text=True)
        if not self.proc.stdout.readline().startswith("ready"):
            self.close()
            raise RuntimeError(f"{exe} did not start")
        self.pid = self.proc.pid

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# Python code objects as large as the agent reads: 3,000 functions made with
# code.replace(), 1,023-character qualnames and file names of 4-byte characters
# (4 KiB of UTF-8 each), 64 KiB line tables of long-form entries (25 bytes per
# code unit: every instruction past the 40th is beyond what the agent keeps of a
# table), called in chains of 60. "benign": the same functions, plain names.
HUGE_PY_CODES = r'''
import sys, types
N = int(sys.argv[1])
CHAIN = 60
BENIGN = sys.argv[2] == "benign"
E = "\U0001F600"
ENTRY = bytes([0xF0]) + bytes([0x40] * 5 + [0x00]) * 4
LT = (ENTRY * (65536 // len(ENTRY) + 1))[:65536 - 65536 % len(ENTRY)]

def template(k):
    if k % CHAIN != CHAIN - 1:
        return FUNCS[k + 1](k + 1)
    s = 0
    for i in range(300):
        s += i
    return s

FUNCS = []
for k in range(N):
    tag = "%05d" % k
    if BENIGN:
        code = template.__code__.replace(co_qualname="f" + tag, co_name="f" + tag)
    else:
        code = template.__code__.replace(co_qualname=E * 1018 + tag, co_name="f" + tag,
                                         co_filename="/" + E * 1014 + tag + ".py",
                                         co_linetable=LT)
    FUNCS.append(types.FunctionType(code, globals()))
print("ready", flush=True)
while True:
    for c in range(0, N, CHAIN):
        FUNCS[c](c)
'''


class HugePyCodes:
    """n python3.11 processes running HUGE_PY_CODES (written to script, a
    path the processes can read) with `functions` functions; mode "attack"
    or "benign". prefix: e.g. setpriv to the tenant (it must exec the
    program in place). Returns once every process has made its functions."""

    def __init__(self, script, n=1, functions=3000, mode="attack", prefix=(),
                 python="/usr/bin/python3.11"):
        with open(script, "w") as f:
            f.write(HUGE_PY_CODES)
        self.procs = []
        for _ in range(n):
            p = subprocess.Popen(list(prefix) + [python, str(script), str(functions), mode],
                                 stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            if p.stdout.readline().strip() != "ready":
                self.close()
                raise RuntimeError(f"{python} {script} did not start")
        self.pids = [p.pid for p in self.procs]

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


# The program behind HoldingClients, run as its own process (as the tenant):
# argv port hold rate keep seconds; prints one JSON line of counts when it ends.
HOLDING_CLIENTS = r'''
import collections, errno, json, select, signal, socket, sys, time
port, hold, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
keep, secs = float(sys.argv[4]), float(sys.argv[5])
REQ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
ep = select.epoll()
unsent = {}  # fd -> socket whose request waits for the connection
kept = collections.deque()  # (close at, socket, held), in opening order
n = dict(opened=0, failed=0, peak=0)
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))

def open_one(held, now):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        n["failed"] += 1
        return
    s.setblocking(False)
    if s.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
        s.close()
        n["failed"] += 1
        return
    # The request goes with the connection when it can (loopback connects at
    # once), so the server finds it whole when it accepts.
    try:
        s.send(REQ)
    except OSError:
        unsent[s.fileno()] = s
        ep.register(s.fileno(), select.EPOLLOUT)
    kept.append((now + keep, s, held))
    n["opened"] += 1
    n["peak"] = max(n["peak"], len(kept))

now = time.monotonic()
for _ in range(hold):
    open_one(True, now)
t_end = now + secs
due = now
while not stop and now < t_end:
    now = time.monotonic()
    due = max(due, now - 0.1)
    while rate and due <= now:
        open_one(False, now)
        due += 1.0 / rate
    # The answer is never read; the connection is closed only after keep s
    # (the server's FIN changes nothing), a held one then opened again.
    while kept and kept[0][0] <= now:
        _, s, held = kept.popleft()
        if unsent.pop(s.fileno(), None):
            ep.unregister(s.fileno())
        s.close()
        if held:
            open_one(True, now)
    for fd, ev in ep.poll(0.002):
        s = unsent.pop(fd, None)
        if s is not None:
            ep.unregister(fd)
            try:
                s.send(REQ)
            except OSError:
                pass
print(json.dumps(n), flush=True)
'''


class HoldingClients:
    """HTTP clients that send a whole request (GET /healthz) and do not
    hang up: `hold` connections kept open (each closed after `keep` s and
    opened again) plus `rate` new ones a second, each closed after `keep`
    s. Answers are never read, and the server's FIN changes nothing. One
    process (prefix: e.g. the tenant's setpriv, which must exec the program
    in place) for `secs` seconds or until stop(); stop() returns its counts
    (opened, failed, peak open at once). It needs hold + rate * keep
    descriptors: raise RLIMIT_NOFILE before starting it (it is inherited)."""

    def __init__(self, port, hold, rate, secs, keep=5.0, prefix=()):
        self.proc = subprocess.Popen(list(prefix) + ["/usr/bin/python3", "-c", HOLDING_CLIENTS,
                                                     str(port), str(hold), str(rate), str(keep),
                                                     str(secs)],
                                     stdout=subprocess.PIPE, text=True)

    def stop(self):
        import json
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        lines = out.strip().splitlines()
        return json.loads(lines[-1]) if lines else {}

    def close(self):
        self.stop()


# The program behind HostileIngest (as the tenant): argv mode; prints its
# port, then for each connection "sent N" once it can send no more.
HOSTILE_INGEST = r'''
import socket, sys, threading
mode = sys.argv[1]
limit = 50 * 1000 * 1000 if mode != "body" else 1 << 62
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print(ls.getsockname()[1], flush=True)

def serve(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        d = c.recv(65536)
        if not d:
            break
        body += d
    sent = 0
    try:
        if mode == "header":    # one header line that does not end (50 MB)
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Big: ")
            chunk = b"a" * 65536
        elif mode == "headers":  # header lines that do not end (50 MB)
            c.sendall(b"HTTP/1.1 200 OK\r\n")
            chunk = (b"X-A: " + b"a" * 1000 + b"\r\n") * 64
        else:                   # a body that does not end
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            chunk = b"a" * 65536
        while sent < limit:
            c.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    print("sent", sent, flush=True)
    c.close()

while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


class HostileIngest:
    """A push server (one process; prefix: e.g. the tenant's setpriv) that
    reads each request whole and answers with a response that never ends:
    mode "header" (one 50 MB header line), "headers" (50 MB of 1 KB header
    lines) or "body" (200 OK, then a body sent as fast as the client takes
    it). `sent()` lists, per connection, the bytes it managed to send (the
    status line not counted) before the client closed or it was done."""

    def __init__(self, mode, prefix=()):
        self.proc = subprocess.Popen(list(prefix) + ["/usr/bin/python3", "-c", HOSTILE_INGEST,
                                                     mode],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def sent(self):
        return [int(l.split()[1]) for l in list(self.lines) if l.startswith("sent ")]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.t.join(timeout=5)


# --- files that cost the agent super-linear or repeated work (issue 35) ------------

# A static x86-64 executable without section headers that spins (jmp .), with
# a read-only segment of MIB MiB in which every 8 bytes look like the header
# of a Go 1.20 pc-line table (magic f1ff ffff, quantum 1, pointer size 8)
# that never holds: what the agent searches when a Go binary's sections are
# gone. Usage: python3 -c GO_LOOKALIKE PATH MIB
GO_LOOKALIKE = r'''
import struct, sys
path, mib = sys.argv[1], int(sys.argv[2])
code_va, data_va, data_off = 0x400000, 0x10000000, 0x1000
code_off = 64 + 2 * 56
code = b"\xeb\xfe"
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

# A program that needs a libpython3.11.so.1.0 and spins without starting an
# interpreter.
FAKE_PY_MAIN = r'''
extern int Py_IsInitialized(void);
static volatile unsigned long sink;
int main(void)
{
	sink = (unsigned long)Py_IsInitialized();
	for (;;)
		sink++;
}
'''

# Copies ELF64 SRC to DST with N more STT_FUNC symbols in its .symtab, spread
# over .text and named like the interpreter's ("_PyRuntime_K": every name is
# compared). Usage: python3 -c ADD_SYMBOLS SRC DST N
ADD_SYMBOLS = r'''
import struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
img = bytearray(open(src, "rb").read())
shoff, = struct.unpack_from("<Q", img, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3a)
sh = [list(struct.unpack_from("<IIQQQQIIQQ", img, shoff + i * shentsize)) for i in range(shnum)]
def name(s):
    o = sh[shstrndx][4] + s[0]
    return bytes(img[o:img.index(0, o)]).decode()
text = next(i for i, s in enumerate(sh) if name(s) == ".text")
symtab = next(i for i, s in enumerate(sh) if s[1] == 2)
strtab = sh[symtab][6]
strs = bytearray(img[sh[strtab][4]:sh[strtab][4] + sh[strtab][5]])
syms = bytearray(img[sh[symtab][4]:sh[symtab][4] + sh[symtab][5]])
span = max(sh[text][5] - 1, 1)
for k in range(n):
    syms += struct.pack("<IBBHQQ", len(strs), 0x12, 0, text, sh[text][3] + k % span, 1)
    strs += b"_PyRuntime_%d\0" % k
def append(data):
    img.extend(bytes(-len(img) % 8))
    at = len(img)
    img.extend(data)
    return at
sh[strtab][4], sh[strtab][5] = append(strs), len(strs)
sh[symtab][4], sh[symtab][5] = append(syms), len(syms)
struct.pack_into("<Q", img, 0x28, append(b"".join(struct.pack("<IIQQQQIIQQ", *s) for s in sh)))
open(dst, "wb").write(img)
'''

PYTHON3 = "/usr/bin/python3"  # Debian's: any user can run it


def _run_as(prefix, argv):
    p = subprocess.run(list(prefix) + [str(a) for a in argv], capture_output=True, text=True,
                       timeout=300)
    if p.returncode:
        raise RuntimeError(f"{argv[:3]} failed: {p.stderr}")


def make_go_lookalike(path, mib=16, prefix=()):
    """Writes GO_LOOKALIKE's program of `mib` MiB at path, as `prefix` (e.g.
    setpriv to the tenant) runs it; returns the path."""
    _run_as(prefix, [PYTHON3, "-c", GO_LOOKALIKE, path, mib])
    _run_as(prefix, ["chmod", "755", path])
    return path


def make_fake_python(dir_, nsyms=500000, prefix=()):
    """dir_/python3.11: FAKE_PY_MAIN with `nsyms` more symbols (ADD_SYMBOLS),
    linked against dir_/libpython3.11.so.1.0, which has no interpreter (only
    Py_IsInitialized). Built by clang, as `prefix` runs it; returns the path."""
    d = str(dir_)
    write = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
    _run_as(prefix, [PYTHON3, "-c", write, f"{d}/main.c", FAKE_PY_MAIN])
    _run_as(prefix, [PYTHON3, "-c", write, f"{d}/stub.c",
                     "int Py_IsInitialized(void) { return 0; }\n"])
    _run_as(prefix, ["clang", "-shared", "-fPIC", "-Wl,-soname,libpython3.11.so.1.0",
                     f"{d}/stub.c", "-o", f"{d}/libpython3.11.so.1.0"])
    _run_as(prefix, ["clang", "-O1", f"{d}/main.c", "-o", f"{d}/base", "-L", d,
                     "-l:libpython3.11.so.1.0", f"-Wl,-rpath,{d}"])
    _run_as(prefix, [PYTHON3, "-c", ADD_SYMBOLS, f"{d}/base", f"{d}/python3.11", nsyms])
    _run_as(prefix, ["chmod", "755", f"{d}/python3.11"])
    return f"{d}/python3.11"


class StallFiles:
    """The files of issue 35 at work: in dir_ (writable by `prefix`'s user),
    a Go lookalike of `mib` MiB running once, and `pythons` processes of a
    fake python3.11 - made and run by `prefix` (e.g. setpriv to the tenant,
    ending in "--"). Before the fixes the first stalled the agent's main loop
    for hours (no drain, SIGTERM unheard) and the second kept it reading
    symbol tables. Returns once they run; close() kills them."""

    def __init__(self, dir_, prefix=(), mib=16, pythons=20):
        self.procs = []
        golike = make_go_lookalike(f"{dir_}/golike", mib, prefix)
        py = make_fake_python(dir_, prefix=prefix)
        try:
            for argv in [[golike]] + [[py]] * pythons:
                self.procs.append(subprocess.Popen(list(prefix) + argv,
                                                   stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL,
                                                   start_new_session=True))
            time.sleep(0.3)
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError("a stall file's program died at start")
        except BaseException:
            self.close()
            raise
        self.pids = [p.pid for p in self.procs]

    def close(self):
        kill_groups(self.procs)
        self.procs = []


class ShortTasks:
    """build/workloads/shortthreads: a process that works only in threads
    (mode "thread") or child processes ("fork") of ms milliseconds of CPU
    each, one after the other - how a tenant would hide its work from
    per-task events. prefix: e.g. conftest's as_tenant() setpriv line, or
    ["nice", "-n", "19"] (it must exec the program in place). At the end
    (close() after secs, or on its own) its stdout says "workers_cpu S"."""

    def __init__(self, exe, secs, ms, mode="thread", prefix=()):
        self.proc = subprocess.Popen(list(prefix) + [str(exe), str(secs), str(ms), mode],
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# --- issue 35, round three: caps at insertion and unwind-table budgets -----------------
#
# A program to make hostile files from: main -> hot, which spins. Its .text has
# a 4 MiB pad zone (padzone) that never runs, which the files below fill with
# symbols or CFI.
SPIN_C = r'''
asm(".text\n.globl padzone\n.type padzone,@function\npadzone:\n"
    ".skip 4194304, 0x90\nret\n.size padzone, .-padzone\n");
volatile unsigned long sink;
__attribute__((noinline)) void hot(void)
{
	for (unsigned long i = 0; i < 100000000; i++)
		sink += i;
}
int main(void)
{
	for (;;)
		hot();
}
'''

# The ELF plumbing shared by the two rewrites below: sections, the symbol table,
# padzone's address, and a writer that appends data and the section headers.
ELF_EDIT = r'''
import struct, sys
def load(src):
    img = bytearray(open(src, "rb").read())
    shoff, = struct.unpack_from("<Q", img, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3a)
    sh = [list(struct.unpack_from("<IIQQQQIIQQ", img, shoff + i * shentsize))
          for i in range(shnum)]
    return img, sh, shstrndx
def name(img, sh, shstrndx, s):
    o = sh[shstrndx][4] + s[0]
    return bytes(img[o:img.index(0, o)]).decode()
def padzone(img, sh):
    symtab = next(i for i, s in enumerate(sh) if s[1] == 2)
    strtab = sh[symtab][6]
    for i in range(sh[symtab][5] // 24):
        st_name, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", img, sh[symtab][4] + 24 * i)
        o = sh[strtab][4] + st_name
        if bytes(img[o:img.index(0, o)]) == b"padzone":
            return symtab, strtab, shndx, value
    raise SystemExit("no padzone")
def append(img, data):
    img.extend(bytes(-len(img) % 8))
    at = len(img)
    img.extend(data)
    return at
def save(img, sh, dst):
    struct.pack_into("<Q", img, 0x28, append(img, b"".join(struct.pack("<IIQQQQIIQQ", *s)
                                                          for s in sh)))
    open(dst, "wb").write(img)
'''

# argv: src dst fdes nops. Points the program's .eh_frame section header at a new
# .eh_frame of `fdes` FDEs over the pad zone (4 KiB each), each with `nops`
# DW_CFA_nop before 4,095 rule changes a byte apart: libdw runs an FDE's
# instructions from its start for every row, so each row costs the nops. The
# process runs as before (the dynamic loader and libgcc use .eh_frame_hdr's copy).
SLOW_CFI = ELF_EDIT + r'''
src, dst, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
img, sh, shstrndx = load(src)
eh = next(i for i, s in enumerate(sh) if name(img, sh, shstrndx, s) == ".eh_frame")
pad = padzone(img, sh)[3]
def uleb(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
# CIE: version 1, no augmentation (absolute pointers), caf 1, daf -8, ra 16;
# def_cfa rsp+8, ra at cfa-8.
cie = struct.pack("<IB", 0, 1) + b"\0" + uleb(1) + b"\x78" + uleb(16) + b"\x0c\x07\x08\x90\x01"
cie += bytes(-(len(cie) + 4) % 8)
sec = bytearray(struct.pack("<I", len(cie)) + cie)
insns = b"\0" * k + b"".join(b"\x41\x0e" + uleb(16 if r % 2 else 24) for r in range(4095))
for f in range(n):
    body = struct.pack("<I", len(sec) + 4) + struct.pack("<QQ", pad + f * 4096, 4096) + insns
    body += bytes(-(len(body) + 4) % 8)
    sec += struct.pack("<I", len(body)) + body
sec += b"\0\0\0\0"
sh[eh][4], sh[eh][5] = append(img, sec), len(sec)
save(img, sh, dst)
'''

# argv: src dst nsyms run. Adds to the program's .symtab `nsyms` function symbols
# 16 bytes apart in the pad zone, named by overlapping suffixes of one run of
# `run` 'A's: a few hundred KiB of file whose names, copied, were gigabytes.
LONG_NAMES = ELF_EDIT + r'''
src, dst, n, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
img, sh, shstrndx = load(src)
symtab, strtab, shndx, pad = padzone(img, sh)
strs = bytearray(img[sh[strtab][4]:sh[strtab][4] + sh[strtab][5]])
syms = bytearray(img[sh[symtab][4]:sh[symtab][4] + sh[symtab][5]])
base = len(strs)
strs += b"A" * run + b"\0"
for i in range(n):
    syms += struct.pack("<IBBHQQ", base + (i * 61) % (run - 64), 0x12, 0, shndx,
                        pad + 16 + 16 * i, 1)
sh[strtab][4], sh[strtab][5] = append(img, strs), len(strs)
sh[symtab][4], sh[symtab][5] = append(img, syms), len(syms)
save(img, sh, dst)
'''


def make_spin(dir_, prefix=()):
    """dir_/spin: SPIN_C built by clang, as `prefix` runs it; returns the path."""
    d = str(dir_)
    write = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
    _run_as(prefix, [PYTHON3, "-c", write, f"{d}/spin.c", SPIN_C])
    _run_as(prefix, ["clang", "-O1", f"{d}/spin.c", "-o", f"{d}/spin"])
    return f"{d}/spin"


def make_slow_unwind(path, prefix=(), fdes=300, nops=16384):
    """SPIN_C at path with SLOW_CFI's .eh_frame, as `prefix` makes it: its
    unwind table cost libdw 76 s of CPU to build with the defaults (12 MB)."""
    spin = make_spin(os.path.dirname(str(path)), prefix)
    _run_as(prefix, [PYTHON3, "-c", SLOW_CFI, spin, path, fdes, nops])
    _run_as(prefix, ["chmod", "755", path])
    return str(path)


def make_long_names(path, prefix=(), nsyms=24000, run=16384):
    """SPIN_C at path with LONG_NAMES's symbols, as `prefix` makes it: ~1 MB
    of file whose names are ~190 MiB copied whole, ~94 MiB cut at 4 KiB."""
    spin = make_spin(os.path.dirname(str(path)), prefix)
    _run_as(prefix, [PYTHON3, "-c", LONG_NAMES, spin, path, nsyms, run])
    _run_as(prefix, ["chmod", "755", path])
    return str(path)


def _start_all(prefix, argvs, env=None):
    procs = []
    try:
        for argv in argvs:
            procs.append(subprocess.Popen(list(prefix) + [str(a) for a in argv],
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, env=env,
                                          start_new_session=True))
        time.sleep(0.3)
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"{argvs[0][0]} died at start")
    except BaseException:
        kill_groups(procs)
        raise
    return procs


class LongNameFiles:
    """n distinct copies (inodes) of a LONG_NAMES program in dir_ (writable by
    `prefix`'s user), each run once by `prefix`: files whose symbols the agent
    holds, ~94 MiB each, so that n of them pass the 512 MiB cap on file
    symbols within one drain. mode "benign": copies of the plain SPIN_C.
    Returns once they run; close() kills them."""

    def __init__(self, dir_, n=8, prefix=(), mode="attack", nsyms=24000, run=16384):
        src = (make_long_names(f"{dir_}/longnames", prefix, nsyms, run) if mode == "attack"
               else make_spin(dir_, prefix))
        copies = [f"{dir_}/{mode}-{i}" for i in range(n)]
        for c in copies:
            _run_as(prefix, ["cp", src, c])
        self.procs = _start_all(prefix, [[c] for c in copies])
        self.pids = [p.pid for p in self.procs]

    def close(self):
        kill_groups(self.procs)
        self.procs = []


class DensePerfMaps:
    """n processes of build/workloads/jitlike in its "dense" mode, run by
    `prefix`: each writes a perf map just under the 8 MiB read whole and
    spins in the code it names. name=1: the shortest lines a map can have
    (~45 MiB of entries each, before one map had a cap of its own); name=60:
    ~100,000 entries, ~15 MiB each, just under that cap (16 MiB), so that a
    few pass the cap on all maps (64 MiB). mode "benign": ordinary maps.
    Returns once they run; close() kills them and removes their maps. They
    are started all at once: each writes its map, then says its pid and
    spins - one after the other, each map was written beside the spinning
    processes before it (24 maps: 13 s on a loaded machine, 0.4 s at once)."""

    def __init__(self, exe, n=12, prefix=(), mode="attack", name=1, mib=7.5, secs=3600):
        self.procs = []
        self.pids = []
        env = dict(os.environ, JITLIKE_NAME=str(name), JITLIKE_BYTES=str(int(mib * 2**20)))
        try:
            for _ in range(n):
                self.procs.append(
                    subprocess.Popen(list(prefix) + [str(exe), str(secs),
                                                     "dense" if mode == "attack" else "normal"],
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     start_new_session=True))
            for p in self.procs:
                line = p.stdout.readline().split()
                if not line:
                    raise RuntimeError(f"{exe} did not start")
                self.pids.append(int(line[0]))
        except BaseException:
            self.close()
            raise

    def close(self):
        pids = set(self.pids) | {p.pid for p in self.procs}  # (setpriv execs in place)
        kill_groups(self.procs)
        self.procs = []
        for pid in pids:
            with contextlib.suppress(OSError):
                os.unlink(f"/tmp/perf-{pid}.map")


class SlowUnwind:
    """A SLOW_CFI program in dir_ (writable by `prefix`'s user), run by
    `prefix`; every `every` seconds (0: never) a new copy (a new inode, so a
    new table to build) is started and the previous one stopped, so the agent
    pays its table-build budget again - for the soak. Returns once the first
    runs; close() kills them."""

    def __init__(self, dir_, prefix=(), every=30.0, fdes=300, nops=16384):
        self.dir, self.prefix, self.every = str(dir_), list(prefix), every
        self.src = make_slow_unwind(f"{dir_}/slowcfi", prefix, fdes, nops)
        self.copies = 0
        self.procs = _start_all(self.prefix, [[self.src]])
        self.pids = [p.pid for p in self.procs]
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        if every:
            self.t.start()

    def _run(self):
        while not self.stop.wait(self.every):
            self.copies += 1
            copy = f"{self.dir}/slowcfi-{self.copies}"
            try:
                _run_as(self.prefix, ["cp", self.src, copy])
                new = _start_all(self.prefix, [[copy]])
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                continue
            kill_groups(self.procs)
            self.procs = new
            self.pids = [p.pid for p in new]
            with contextlib.suppress(OSError):
                os.unlink(f"{self.dir}/slowcfi-{self.copies - 1}")

    def close(self):
        self.stop.set()
        if self.t.is_alive():
            self.t.join(timeout=30)
        kill_groups(self.procs)
        self.procs = []

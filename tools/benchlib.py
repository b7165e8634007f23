# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""benchlib.py - process and client set-up shared by the benchmarks, the soak
(tools/soak_hostile.py) and the hostile-input integration tests
(tests/integration/test_hostile.py imports it from here):

  * kill_groups(): ends workloads started in their own sessions, whole groups;
  * churn(): shell loops that start short processes, as a busy host does;
  * free_port(): a TCP port nothing listens on;
  * FailingIngest: a push server that fails every request;
  * Crowd: idle and trickling HTTP clients that keep their number;
  * HugeJit, ManyMaps: the hostile processes (a ~232 MB perf map, tens of
    thousands of executable mappings), started and ready to be profiled.

Standard library only: the tools run from a fresh checkout.
"""
import contextlib
import http.server
import os
import signal
import socket
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

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Debug files fetched from debuginfod servers (issue 41 item 2; src/sym/debuginfod.h).

A stripped copy of the busy workload (no .symtab, no debug link) whose debug
file exists nowhere on disk but in the directory Debian's own `debuginfod`
serves on loopback: with DEBUGINFOD_URLS (or --debuginfod) its functions are
named, without they are not; the second run takes the file from the cache
(the server sees one request). Servers that misbehave (never answer, an
endless or oversized body, another build's file) cost at most their caps and
the profile still comes out, with one warning. Attacks: a tenant's binary
with a crafted build id makes root ask for /buildid/HEX/debuginfo and nothing
else; a cache directory the tenant owns (with a debug file it planted) is
refused, never read.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import pprof
from conftest import (BPFPROF, Workload, as_tenant, assert_few, assert_share, build_id,
                      parse_folded, run_bpfprof, strip_with_debug_file, tenant, wait_attached,
                      wl)

HEX_PATH = re.compile(r"^/buildid/[0-9a-f]+/debuginfo$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def work():
    """A root-owned 0755 directory: the stripped program, the served
    directory, the cache (BPFPROF_CACHE_DIR), logs."""
    d = Path(tempfile.mkdtemp(prefix="bpfprof-dbgd-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def stripped(work):
    """(program, its debug file in work/srv/, build id): busy stripped of
    everything; the debug file is nowhere a local lookup looks."""
    prog, srv = work / "busy.s", work / "srv"
    srv.mkdir()
    bid = strip_with_debug_file(wl("busy"), prog, srv / "busy.debug")
    assert not Path(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug").exists()
    assert b"leaf_a" not in prog.read_bytes()
    return prog, srv / "busy.debug", bid


@pytest.fixture
def server(work, stripped):
    """Debian's debuginfod serving work/srv on loopback: (url, log path)."""
    port, log = free_port(), work / "debuginfod.log"
    with open(log, "w") as f:
        p = subprocess.Popen(["debuginfod", "-F", str(work / "srv"), "-p", str(port), "-d",
                              str(work / "db.sqlite"), "-vvv"], stdout=f, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # it scans the directory first
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                f"{url}/buildid/{stripped[2]}/debuginfo"], capture_output=True,
                               text=True)
            if r.stdout == "200":
                break
            assert p.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url, log
    finally:
        p.terminate()
        p.wait(10)


def requests_of(log, bid):
    """GETs of bid's debug file in a debuginfod log from a client other than curl."""
    return [line for line in log.read_text().splitlines()
            if f"GET /buildid/{bid}/debuginfo" in line and "UA:curl" not in line]


def record(prog, work, env_extra=None, args=(), seconds=3, timeout=120):
    """bpfprof -v on `prog SECONDS`: (folded, stderr, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env["BPFPROF_CACHE_DIR"] = str(work / "cache")
    env.update(env_extra or {})
    out = work / f"out-{time.monotonic_ns()}.folded"
    t0 = time.monotonic()
    p = run_bpfprof(["-v", "-o", out, *args, "--", prog, seconds], env=env, timeout=timeout)
    wall = time.monotonic() - t0
    return parse_folded(out.read_text()), p.stderr, wall


def shares(folded, comm="busy.s"):
    n = sum(c for s, c in folded.items() if s.startswith(comm + ";"))
    a = sum(c for s, c in folded.items() if s.startswith(comm + ";") and s.endswith(";leaf_a"))
    named = sum(c for s, c in folded.items()
                if s.startswith(comm + ";") and ";outer_loop;" in s + ";")
    return n, a, named


def unnamed_cache(work):
    return sorted(p.name for p in (work / "cache" / "debuginfod").glob("*"))


def test_named_from_debuginfod_and_cached(work, stripped, server):
    prog, _, bid = stripped
    url, log = server
    # Without a server: the stripped program's functions have no names.
    folded, err, _ = record(prog, work)
    n, a, named = shares(folded)
    assert n > 50 and a == 0 and named == 0, err
    # With DEBUGINFOD_URLS (perf's convention): named, leaf_a with 2/3 of the work.
    folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": url})
    n, a, named = shares(folded)
    assert_share(a / n, 2 / 3, n, "leaf_a's share, named from the fetched file", floor=0.03)
    assert_few(n - named, n, "busy.s samples outside a named outer_loop")
    assert re.search(r"debuginfod: 1 debug files used, 1 fetched", err), err
    assert len(requests_of(log, bid)) == 1
    cache = work / "cache" / "debuginfod"
    assert unnamed_cache(work) == [f"{bid}.debug"]
    st = cache.stat()
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700
    st = (cache / f"{bid}.debug").stat()
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o600
    # Again: from the cache, the server is not asked a second time.
    folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": url})
    n, a, _ = shares(folded)
    assert_share(a / n, 2 / 3, n, "leaf_a's share, named from the cache", floor=0.03)
    assert re.search(r"debuginfod: 1 debug files used, 0 fetched, 1 from the cache", err), err
    assert len(requests_of(log, bid)) == 1
    # --no-debuginfod wins over the environment: nothing asked, nothing named.
    shutil.rmtree(cache)
    folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": url}, ["--no-debuginfod"])
    assert shares(folded)[1] == 0 and "debuginfod:" not in err
    assert len(requests_of(log, bid)) == 1


def test_option_names_the_server(work, stripped, server):
    prog, _, bid = stripped
    url, log = server
    folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": "http://127.0.0.1:1"},
                            ["--debuginfod", url])
    n, a, _ = shares(folded)
    assert_share(a / n, 2 / 3, n, "leaf_a's share with --debuginfod", floor=0.03)
    assert "127.0.0.1:1" not in err


class FakeServer:
    """A loopback HTTP server answering every request with `answer(handler)`;
    keeps the request paths."""

    def __init__(self, answer):
        paths = self.paths = []

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                paths.append(self.path)
                try:
                    answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentServer:
    """Accepts connections and never says a word."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.stop = True
        self.sock.close()
        for c in self.conns:
            c.close()


def test_silent_server_costs_its_timeout(work, stripped):
    prog, _, bid = stripped
    srv = SilentServer()
    try:
        # Silent for longer than DEBUGINFOD_TIMEOUT: given up after it.
        folded, err, wall = record(prog, work, {"DEBUGINFOD_URLS": srv.url,
                                                "DEBUGINFOD_TIMEOUT": "3"}, seconds=1)
        assert shares(folded)[0] > 10, err
        assert re.search(r"warning: debuginfod http://127\.0\.0\.1:\d+: timed out", err), err
        assert err.count("warning: debuginfod") == 1, err
        assert re.search(r"debuginfod: 0 debug files used, 0 fetched, 0 from the cache, "
                         r"0 on no server, 1 transfers failed", err), err
        assert wall < 1 + 3 + 6, err  # the program, the silence, start-up and exit
        # Silent for longer than the end's wait: the run waits 10 s, no more.
        folded, err, wall = record(prog, work, {"DEBUGINFOD_URLS": srv.url,
                                                "DEBUGINFOD_TIMEOUT": "120"}, seconds=1)
        assert shares(folded)[0] > 10, err
        assert "waiting up to 10 s for 1 debug file from debuginfod" in err, err
        assert "1 debug file is still coming from debuginfod" in err, err
        assert 10 <= wall < 1 + 10 + 6, err
        assert unnamed_cache(work) == []
    finally:
        srv.close()


def endless(h):
    h.send_response(200)
    h.end_headers()
    chunk = b"\x7fELF" + b"\0" * 65532
    while True:
        h.wfile.write(chunk)


def oversized(h):
    h.send_response(200)
    h.send_header("Content-Length", str(1 << 40))
    h.end_headers()
    h.wfile.write(b"\x7fELF" + b"\0" * 60)


@pytest.mark.parametrize("answer", [endless, oversized])
def test_large_answer_cut_at_the_cap(work, stripped, answer):
    prog, _, bid = stripped
    srv = FakeServer(answer)
    try:
        folded, err, wall = record(prog, work, {"DEBUGINFOD_URLS": srv.url,
                                                "DEBUGINFOD_MAXSIZE": "2000000"}, seconds=1)
        assert shares(folded)[0] > 10, err
        assert re.search(r"warning: debuginfod http://127\.0\.0\.1:\d+: answer over the size "
                         r"cap \(2000000 bytes\)", err), err
        assert re.search(r"1 transfers failed", err), err
        assert wall < 1 + 6, err
        assert srv.paths == [f"/buildid/{bid}/debuginfo"]
        assert unnamed_cache(work) == []  # the temporary file too is gone
    finally:
        srv.close()


def test_file_of_another_build_refused(work, stripped):
    prog, _, bid = stripped
    other = work / "other.debug"
    subprocess.run(["objcopy", "--only-keep-debug", wl("shallow"), other], check=True)
    assert build_id(other) != bid
    body = other.read_bytes()

    def serve_other(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    srv = FakeServer(serve_other)
    try:
        folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": srv.url}, seconds=1)
        n, a, named = shares(folded)
        assert n > 10 and a == 0 and named == 0, err
        assert "served a file that is not the debug file of the build id asked for" in err, err
        assert re.search(r"0 transfers failed, 1 files refused", err), err
        assert unnamed_cache(work) == []
    finally:
        srv.close()


def test_continuous_names_from_the_interval_after(work, stripped):
    """--interval: the fetch never holds up a drain; intervals before the file
    arrives have the frames unnamed, those after have them named; /metrics
    counts the fetch."""
    import gzip
    import urllib.request
    prog, debug, bid = stripped
    body = debug.read_bytes()

    def slow(h):
        time.sleep(2.5)
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    srv = FakeServer(slow)
    store, port = work / "store", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env.update(BPFPROF_CACHE_DIR=str(work / "cache"), DEBUGINFOD_URLS=srv.url)
    try:
        with Workload(prog, 60) as w:
            proc = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "--interval", "1",
                                     "--output-dir", str(store), "--listen", str(port), "-d",
                                     "7.5", "-v"], stderr=subprocess.PIPE, text=True, env=env)
            head = wait_attached(proc)
            time.sleep(5)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                             timeout=10).read().decode()
            _, tail = proc.communicate(timeout=60)
        assert proc.returncode == 0, head + tail
    finally:
        srv.close()
    assert "bpfprof_debuginfod_fetched_total 1" in metrics, metrics
    assert "bpfprof_debuginfod_failed_total 0" in metrics, metrics
    files = sorted(store.glob("*.pb.gz"))
    assert len(files) >= 6, files
    per = [shares(pprof.to_folded(pprof.decode(gzip.decompress(f.read_bytes())))) for f in files]
    # The first interval ends before the answer (2.5 s) arrives: unnamed.
    assert per[0][0] > 10 and per[0][1] == 0, per
    # Named from the one after it arrives on: the last two whole intervals.
    for n, a, _ in per[-3:-1]:
        assert_share(a / n, 2 / 3, n, "leaf_a's share once the file is in", floor=0.05)
    assert srv.paths == [f"/buildid/{bid}/debuginfo"]


# --- the tenant ---------------------------------------------------------------------

CRAFTED_ID = b"/../../etc/passwd?a=b#c%00".ljust(32, b"/").hex()  # 32 bytes: aligned


def test_crafted_build_id_asks_for_hex_only(work, tenant_dir):
    """The tenant's stripped program carries a build id of path and URL
    characters; root's bpfprof asks the server for its hex, nothing else."""
    src = tenant_dir / "spin.c"
    src.write_text("volatile unsigned long s;\n"
                   "__attribute__((noinline)) void tenant_spin(void) { for (;;) s++; }\n"
                   "int main(void) { tenant_spin(); }\n")
    os.chown(src, tenant().pw_uid, tenant().pw_gid)
    prog = tenant_dir / "spin"
    r = subprocess.run(as_tenant(["gcc", "-O1", "-s", f"-Wl,--build-id=0x{CRAFTED_ID}", "-o",
                                  prog, src]), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert build_id(prog) == CRAFTED_ID
    srv = FakeServer(lambda h: (h.send_response(404), h.end_headers()))
    p = subprocess.Popen(as_tenant([prog]))
    try:
        time.sleep(0.3)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
        env.update(BPFPROF_CACHE_DIR=str(work / "cache"), DEBUGINFOD_URLS=srv.url)
        r = run_bpfprof(["-v", "-p", p.pid, "-d", "2", "-o", work / "t.folded"], env=env)
        assert srv.paths == [f"/buildid/{CRAFTED_ID}/debuginfo"], srv.paths
        assert all(HEX_PATH.match(x) for x in srv.paths)
        assert re.search(r"1 on no server", r.stderr), r.stderr
    finally:
        p.kill()
        p.wait()
        srv.close()


def test_tenant_cache_dir_refused(work, stripped, server, tenant_dir):
    """BPFPROF_CACHE_DIR pointing where the tenant writes (a mistake, or a
    tenant's doing): refused, with a warning; the debug file the tenant
    planted there (the right build id, its own names) is never read."""
    prog, debug, bid = stripped
    url, log = server
    planted = tenant_dir / "debuginfod"
    r = subprocess.run(as_tenant(["mkdir", "-m", "0700", planted]), capture_output=True)
    assert r.returncode == 0
    fake = work / "planted.debug"
    subprocess.run(["objcopy", "--redefine-sym", "leaf_a=planted_by_tenant", debug, fake],
                   check=True)
    subprocess.run(as_tenant(["cp", fake, planted / f"{bid}.debug"]), check=True)
    assert (planted / f"{bid}.debug").stat().st_uid == tenant().pw_uid
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env.update(BPFPROF_CACHE_DIR=str(tenant_dir), DEBUGINFOD_URLS=url)
    out = work / "t.folded"
    r = run_bpfprof(["-v", "-o", out, "--", prog, "1"], env=env)
    assert "planted_by_tenant" not in out.read_text()
    assert re.search(r"warning: debuginfod cache " + re.escape(str(tenant_dir)) +
                     r": owned by bpfprof-tenant .*: debug files are not fetched", r.stderr), \
        r.stderr
    assert requests_of(log, bid) == []
    # Nothing of root's was made in the tenant's directory.
    assert sorted(x.name for x in tenant_dir.iterdir()) == ["debuginfod"]
    assert sorted(x.name for x in planted.iterdir()) == [f"{bid}.debug"]


def test_inlined_frames_from_a_fetched_debug_file(work):
    """Issue 41's end to end: the -O2 -g C++ program stripped of everything
    (no symbols, no DWARF, no debug link), its debug file served only by
    debuginfod: with DEBUGINFOD_URLS its two inlined functions are frames of
    their own under bp_inl_outer with their shares (3/4, 1/4), as with the
    debug file on disk (test_native_inlines.py)."""
    from test_native_inlines import HEAVY, LIGHT, OUTER, check_shares
    prog, srv = work / "inlstrip", work / "srv"
    srv.mkdir()
    bid = strip_with_debug_file(wl("inlwork"), prog, srv / "inlstrip.debug")
    assert not Path(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug").exists()
    port, log = free_port(), work / "debuginfod.log"
    with open(log, "w") as f:
        srvp = subprocess.Popen(["debuginfod", "-F", str(srv), "-p", str(port), "-d",
                                 str(work / "db.sqlite")], stdout=f, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                              f"{url}/buildid/{bid}/debuginfo"], capture_output=True,
                             text=True).stdout != "200":
            assert srvp.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        plain, _, _ = record(prog, work, seconds=1)
        assert not any(OUTER in s for s in plain), plain
        folded, err, _ = record(prog, work, {"DEBUGINFOD_URLS": url}, seconds=4)
    finally:
        srvp.terminate()
        srvp.wait(10)
    assert any(s.endswith(f";{OUTER};{HEAVY}_[i]") for s in folded), err
    check_shares(folded, "inlstrip", "inlwork stripped, its DWARF from debuginfod")

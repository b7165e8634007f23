# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""The agent's HTTP endpoint and push client against the tenant (issue 35,
items 6, 7, 13 and 16; threat-model rules 6 and 7): /healthz is not ok
before the first drain or while a drain is overdue; clients that send a
request and never hang up cannot lock the operator out; a half-close is not
a hang-up; a push server's endless answer is cut at a cap and said so.
The flooding clients and the hostile push server run as the tenant."""
import gzip
import os
import re
import resource
import socket
import subprocess
import sys
import time

import pytest

from conftest import (BPFPROF, ROOT, Stoppable, Workload, as_tenant, http_get, metric, wait_attached,
                      wl)

sys.path.insert(0, str(ROOT / "tools"))
from benchlib import HoldingClients, HostileIngest, free_port  # noqa: E402


def raise_own_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def get(url, timeout=5):
    """(status, body); an HTTP error status is an answer too."""
    return http_get(url, timeout)


class Agent(Stoppable):
    """bpfprof --listen (and args), stopped with SIGINT. It profiles a busy
    workload of its own (-p), not the whole machine: what other processes on
    a shared test machine do to its drains is not what these tests are about."""

    def __init__(self, args, env=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.work = Workload("nice", "-n", "19", wl("busy"), 120)
        self.proc = subprocess.Popen([str(BPFPROF), "-p", str(self.work.pid), "--listen",
                                      str(self.port)] + [str(a) for a in args],
                                     stderr=subprocess.PIPE, text=True, env=env)
        try:
            self.head = wait_attached(self.proc)
        except BaseException:
            self.__exit__()
            raise

    def metrics(self):
        st, body = get(self.base + "/metrics")
        assert st == 200, (st, body)
        return body.decode()

    def wait_healthy(self, timeout=30):
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            st, body = get(self.base + "/healthz")
            if st == 200:
                return
            seen.append((st, body))
            time.sleep(0.1)
        raise AssertionError(f"/healthz never became ok: {seen[-3:]}")

    def __exit__(self, *exc):
        super().__exit__()
        self.work.__exit__()


# --- item 6: /healthz tells the truth ----------------------------------------

def test_healthz_is_503_until_the_first_drain_completes():
    """The first drain is held for 6 s (BPFPROF_TEST_DRAIN_STALL=1:6000, a
    sleep in the main loop, as a drain stuck on a file would be): /healthz
    answers at once, 503 with the reason, and /metrics says no drain
    happened; once the drain completes, 200 ok."""
    env = dict(os.environ, BPFPROF_TEST_DRAIN_STALL="1:6000")
    with Agent(["-d", 30], env=env) as a:
        t0 = time.monotonic()
        st, body = get(a.base + "/healthz", timeout=2)
        text = a.metrics()
        dt = time.monotonic() - t0
        assert st == 503, (st, body)
        assert body.startswith(b"not ready: no drain yet"), body
        assert dt < 2.0, f"/healthz and /metrics took {dt:.2f} s while the drain was stuck"
        assert metric(text, "bpfprof_drains_total") == 0, text
        assert metric(text, "bpfprof_healthy") == 0, text
        assert metric(text, "bpfprof_last_drain_age_seconds") is None, text
        a.wait_healthy(timeout=20)
        waited = time.monotonic() - t0
        st, body = get(a.base + "/healthz")
        text = a.metrics()
        a.stop()
    assert (st, body) == (200, b"ok\n")
    assert waited >= 4.0, f"ok after {waited:.1f} s, while the first drain was held 6 s"
    assert metric(text, "bpfprof_drains_total") >= 1, text
    assert metric(text, "bpfprof_healthy") == 1, text
    assert metric(text, "bpfprof_last_drain_age_seconds") < 2.0, text


def test_healthz_is_503_while_a_drain_is_overdue():
    """The third drain is held for 15 s: /healthz is ok before, 503
    "overdue" once no drain has completed for 2 periods + 10 s (12 s with
    the default 1 s period) - with the age in /metrics - and ok again after
    (503 for the last ~4 s of the hold, which began a drain period after the
    last drain: half a dozen probes, one every ~0.6 s)."""
    env = dict(os.environ, BPFPROF_TEST_DRAIN_STALL="3:15000")
    with Agent(["-d", 60], env=env) as a:
        a.wait_healthy()
        seen = []  # (t, status, body, age)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 40:
            st, body = get(a.base + "/healthz", timeout=2)
            age = metric(a.metrics(), "bpfprof_last_drain_age_seconds")
            seen.append((time.monotonic() - t0, st, body, age))
            if st == 200 and any(s[1] == 503 for s in seen):
                break
            time.sleep(0.5)
        a.stop()
    bad = [s for s in seen if s[1] == 503]
    assert bad, f"never 503 while the drain was held 15 s: {seen[-3:]}"
    assert all(b.startswith(b"stalled: no drain completed for ") and b"overdue" in b
               for _, _, b, _ in bad), bad
    assert all(age >= 12.0 for _, _, _, age in bad), bad
    # ok before (until 12 s without a drain), ok after the drain completed.
    oks = [s for s in seen if s[1] == 200]
    assert oks and oks[-1][0] > bad[-1][0], seen[-3:]
    assert all(age < 12.5 for _, _, _, age in oks), oks


# --- item 7: clients that send a request and never hang up ---------------------

def test_operator_probes_get_through_clients_that_never_hang_up():
    """The tenant holds 800 connections that each sent GET /healthz and
    never read or close (opened again when the server closes one), and opens
    2,000 more a second that do the same: more than the 1,024-connection
    cap lingers after its answer. The operator's 20 probes all get 200."""
    raise_own_nofile(16384)
    with Agent(["-d", 60]) as a:
        a.wait_healthy()
        flood = HoldingClients(a.port, 800, 2000, 30, prefix=as_tenant([]))
        try:
            time.sleep(4)
            probes, peak = [], 0
            for _ in range(20):
                t = time.monotonic()
                try:
                    st, body = get(a.base + "/healthz", timeout=10)
                except OSError as e:
                    st, body = None, repr(e).encode()
                probes.append((st, body, round(time.monotonic() - t, 3)))
                st, body = get(a.base + "/metrics")
                if st == 200:
                    peak = max(peak, metric(body.decode(), "bpfprof_http_connections"))
                time.sleep(0.25)
        finally:
            counts = flood.stop()
        text = a.metrics()
        a.stop()
    assert all(st == 200 and body == b"ok\n" for st, body, _ in probes), probes
    # The flood was there: the tenant made thousands of connections, the agent
    # held as many as its cap allows and let lingering ones go to make room.
    assert counts.get("opened", 0) >= 10000 and counts.get("peak", 0) >= 5000, counts
    assert peak >= 900, peak
    evicted = metric(text, 'bpfprof_http_connections_closed_total{reason="evicted"}')
    assert evicted >= 1000, text


# --- item 13: a half-close is not a hang-up ----------------------------------

def read_all(s, timeout):
    s.settimeout(timeout)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            return data
        data += d


def final_response(data):
    """The status line, headers and body of the last response in data,
    after any interim (1xx) ones."""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, data[:200]
        status = int(head.split(b" ", 2)[1])
        if status >= 200:
            return status, head, rest
        data = rest


def test_half_close_after_a_profile_request_gets_the_profile():
    """GET /debug/pprof/profile?seconds=2 and shutdown(SHUT_WR), as `nc -N`
    does: the client still reads, so it gets its profile (HTTP/1.1: after a
    '100 Continue' the agent sends to find out whether it is still there;
    HTTP/1.0: the profile only)."""
    with Agent(["-d", 30]) as a:
        a.wait_healthy()
        got = {}
        for version in ("1.1", "1.0"):
            with socket.create_connection(("127.0.0.1", a.port), timeout=5) as s:
                s.sendall(f"GET /debug/pprof/profile?seconds=2 HTTP/{version}\r\n"
                          "Host: x\r\n\r\n".encode())
                s.shutdown(socket.SHUT_WR)
                got[version] = read_all(s, 20)
        a.stop()
    for version, data in got.items():
        status, head, body = final_response(data)
        assert status == 200, (version, data[:300])
        length = int(re.search(rb"\r\nContent-Length: (\d+)", head).group(1))
        assert len(body) == length, (version, len(body), length)
        assert gzip.decompress(body), version
    assert got["1.1"].startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
    assert got["1.0"].startswith(b"HTTP/1.1 200 OK\r\n")


# --- item 16: a push server's answer is capped --------------------------------

@pytest.mark.parametrize("mode", ["header", "headers", "body"])
def test_push_answer_over_the_cap_is_cut_and_said(mode):
    """The tenant's push server answers with a header line that does not end
    ("header"), header lines that do not end ("headers") or a body that does
    not end ("body"). Each attempt stops at the cap (libcurl's 100 KiB for
    one header line, 64 KiB of headers, 1 MiB of body): what the server
    could send before the agent closed stays within the cap plus the
    sockets' buffers, instead of everything until the 10 s timeout; the
    warning and the counters say the answer was too large (not "Out of
    memory")."""
    srv = HostileIngest(mode, prefix=as_tenant([]))
    try:
        with Agent(["--interval", 1, "-d", 8, "--push", srv.url]) as a:
            a.wait_healthy()
            time.sleep(6)
            text = a.metrics()
            t = time.monotonic()
            stderr = a.stop()
            stop_s = time.monotonic() - t
        time.sleep(0.5)  # the server's last lines
    finally:
        srv.close()
    sent = srv.sent()
    rmem = int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[2])
    wmem = int(open("/proc/sys/net/ipv4/tcp_wmem").read().split()[2])
    cap = (1 << 20) if mode == "body" else 100 * 1024
    # Per attempt: the cap, what the two sockets buffer, curl's own buffer.
    bound = cap + rmem + wmem + 64 * 1024
    assert len(sent) >= 2, (sent, stderr)
    assert max(sent) <= bound, (sent, bound)
    assert re.search(r"push to http://127\.0\.0\.1:\d+ failed: .*response too large \(over "
                     r"\d+ bytes", stderr), stderr
    assert "Out of memory" not in stderr, stderr
    failed = metric(text, "bpfprof_push_failed_total")
    too_large = metric(text, "bpfprof_push_responses_too_large_total")
    assert failed >= 2 and too_large == failed, text
    assert re.search(r"attempts? failed \(\d+ with a response too large\)", stderr), stderr
    assert stop_s < 10, stop_s

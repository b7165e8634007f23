#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""soak_hostile.py - the always-on agent for MINUTES under a hostile process
set (issue 14's "Done when"):

  * jitlike in its "huge" mode: a ~232 MB perf map (1.8M entries);
  * manymaps: 33,000 executable mappings, over the walker's limit, its hot
    loop in one of the mappings left out;
  * 200 idle and 20 slow (a header byte a second) HTTP clients on --listen,
    reconnecting whenever the agent closes them;
  * a push server answering every request 500 with Retry-After: 30;
  * normal work: ~20 short-lived processes a second (tools/soak.sh's churn);
  * issue 35's tenant (an account of its own, as the tests' bpfprof-tenant):
    two Pythons of 3,000 huge code objects (HugePyCodes), 100 HTTP clients
    that send a request and never read or hang up plus 20 new ones a second
    (HoldingClients), a 16 MiB Go lookalike and 8 fake python3.11 of 500,000
    symbols (StallFiles), work hidden in short threads and in short child
    processes (ShortTasks), and the push server: a response body that never
    ends (HostileIngest "body"; --push-server failing: 500 + Retry-After).

The agent runs `bpfprof -F 99 -a --interval 10 --output-dir D --keep 30
--listen PORT --push URL`. Every SAMPLE seconds the script records its RSS
and the CPU it used since the last sample; /healthz is fetched every second
and its latency recorded. At the end it prints a table (start, 5, 10, 20,
30 minutes, min / max), the /healthz latencies, what the agent wrote and
said; the raw samples go to DIR/samples.csv.

Binaries are copied first, so rebuilding the tree during a soak changes
nothing. The hostile processes run at nice 19: the machine may be shared.

/healthz answers 503 until the first drain: the prober counts failures from
its first 200 on.

Usage: sudo tools/soak_hostile.py [--minutes 30] [--sample 30] [--dir DIR]
       [--bpfprof build/bpfprof] [--push-server hostile|failing] [--no-tenant]
"""
import argparse
import os
import pwd
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchlib import (Crowd, FailingIngest, FakeJvms, HoldingClients, HostileIngest, HugeJit,
                      HugePyCodes, ManyMaps, ShortTasks, StallFiles, free_port)

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
TENANT = "bpfprof-tenant"  # the tests' account (tests/integration/conftest.py)


def as_tenant():
    """setpriv's prefix to the tenant: its uid, gid and groups, no
    capabilities; the account is made on first use."""
    try:
        pwd.getpwnam(TENANT)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", TENANT], check=True,
                       capture_output=True)
    return ["setpriv", f"--reuid={TENANT}", f"--regid={TENANT}", "--init-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


class Prober:
    """GET /healthz once a second; keeps the latencies."""

    def __init__(self, port, stop):
        self.url = f"http://127.0.0.1:{port}/healthz"
        self.stop = stop
        self.lat = []
        self.failed = 0
        self.started = False  # 503 until the agent's first drain
        self.why = {}  # failure reason -> count
        self.first_fail = None  # seconds from the first 200
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            why = None
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    r.read()
                    ok = r.status == 200
            except urllib.error.HTTPError as e:
                ok, why = False, f"HTTP {e.code}: {e.read()[:80].decode(errors='replace').strip()}"
            except OSError as e:
                ok, why = False, type(e).__name__ + ": " + str(e)[:60]
            if not ok and self.started:
                self.why[why] = self.why.get(why, 0) + 1
                if self.first_fail is None:
                    self.first_fail = time.monotonic() - self.t0
            if ok:
                if not self.started:
                    self.t0 = time.monotonic()
                self.started = True
                self.lat.append(time.monotonic() - t)
            elif self.started:
                self.failed += 1
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - t)))


def churn(busy, stop, counter):
    """~20 short-lived processes a second, each ~10 ms of CPU."""
    while not stop.is_set():
        ps = [subprocess.Popen([busy, "0.01"], stdout=subprocess.DEVNULL) for _ in range(10)]
        for p in ps:
            p.wait()
        counter[0] += len(ps)
        stop.wait(0.5)


def cpu_ticks(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime, stime (fields 14, 15)


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--sample", type=float, default=30)
    ap.add_argument("--dir")
    ap.add_argument("--bpfprof", default=str(ROOT / "build/bpfprof"))
    ap.add_argument("--push-server", choices=("hostile", "failing"), default="hostile")
    ap.add_argument("--no-tenant", action="store_true", help="without issue 35's tenant")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak_hostile: run as root")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak_hostile: terminated"))
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/workloads/jitlike",
                    "build/workloads/manymaps", "build/workloads/busy",
                    "build/workloads/shortthreads", "build/workloads/fakejvm"], check=True)
    d = Path(a.dir or tempfile.mkdtemp(prefix="bpfprof-soak-"))
    d.mkdir(parents=True, exist_ok=True)
    bin_ = d / "bin"
    bin_.mkdir(exist_ok=True)
    for src in (a.bpfprof, ROOT / "build/workloads/jitlike", ROOT / "build/workloads/manymaps",
                ROOT / "build/workloads/busy", ROOT / "build/workloads/shortthreads",
                ROOT / "build/workloads/fakejvm"):
        shutil.copy2(src, bin_ / Path(src).name)
    secs = a.minutes * 60
    stop = threading.Event()
    nice = ["nice", "-n", "19"]
    jit = HugeJit(bin_ / "jitlike", int(secs + 120), prefix=nice)  # the map is written
    mm = ManyMaps(bin_ / "manymaps", int(secs + 120), 33000, copy=True, prefix=nice)
    hostile = [jit, mm]
    port = free_port()
    tenant = []
    if not a.no_tenant:
        t = as_tenant() + nice
        tdir = d / "tenant"
        tdir.mkdir(exist_ok=True)
        os.chown(tdir, pwd.getpwnam(TENANT).pw_uid, pwd.getpwnam(TENANT).pw_gid)
        os.chmod(d, 0o755)
        os.chmod(bin_, 0o755)
        tenant.append(HugePyCodes(tdir / "huge.py", n=2, functions=3000, prefix=t))
        tenant.append(StallFiles(tdir, prefix=t, mib=16, pythons=8))
        tenant.append(ShortTasks(bin_ / "shortthreads", int(secs + 120), 20, "thread", prefix=t))
        tenant.append(ShortTasks(bin_ / "shortthreads", int(secs + 120), 20, "fork", prefix=t))
        tenant.append(FakeJvms(bin_ / "fakejvm", prefix=t).start())  # issue 42's fake JVMs
    if a.push_server == "hostile" and not a.no_tenant:
        ingest = HostileIngest("body", prefix=as_tenant())
    else:
        ingest = FailingIngest(500, retry_after=30)
    hostile += tenant
    store = d / "store"
    cmd = [str(bin_ / "bpfprof"), "-F", "99", "-a", "--interval", "10", "--output-dir",
           str(store), "--keep", "30", "--listen", f"127.0.0.1:{port}", "--push", ingest.url]
    err = open(d / "agent.stderr", "w")
    agent = subprocess.Popen(cmd, stderr=err, stdout=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    print(f"soak: agent {agent.pid}: {' '.join(cmd)}", flush=True)
    print(f"soak: jitlike {jit.pid}, manymaps {mm.pid}, dir {d}", flush=True)
    crowd = Crowd(port, 200, 20, stop)
    prober = Prober(port, stop)
    holders = None
    if not a.no_tenant:
        # 100 held + 20 a second for 5 s each: the descriptors are inherited.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
        holders = HoldingClients(port, 100, 20, int(secs + 60), keep=5.0, prefix=as_tenant())
    spawned = [0]
    threading.Thread(target=churn, args=(str(bin_ / "busy"), stop, spawned), daemon=True).start()

    t0 = time.monotonic()
    last_t, last_c = t0, cpu_ticks(agent.pid)
    rows = []
    csv = open(d / "samples.csv", "w")
    csv.write("t_s,rss_kib,cpu_pct,fds,clients,healthz_max_ms\n")
    try:
        while time.monotonic() - t0 < secs:
            time.sleep(a.sample - ((time.monotonic() - t0) % a.sample))
            if agent.poll() is not None:
                sys.exit(f"soak: the agent exited ({agent.returncode})")
            now, c = time.monotonic(), cpu_ticks(agent.pid)
            cpu = 100.0 * (c - last_c) / TICK / (now - last_t)
            last_t, last_c = now, c
            fds = len(os.listdir(f"/proc/{agent.pid}/fd"))
            hz = max(prober.lat[-int(a.sample) - 2:] or [0]) * 1000
            row = (round(now - t0), rss_kib(agent.pid), cpu, fds, crowd.connected(), hz)
            rows.append(row)
            csv.write("%d,%d,%.1f,%d,%d,%.0f\n" % row)
            csv.flush()
            print("soak: %5d s  RSS %6.1f MiB  CPU %5.1f%%  fds %3d  clients %3d  healthz max %4.0f ms"
                  % (row[0], row[1] / 1024, cpu, fds, row[4], hz), flush=True)
    finally:
        stop.set()
        agent.terminate()
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()
        crowd.close()
        held = holders.stop() if holders else {}
        for p in hostile:
            p.close()  # and the perf map
        if hasattr(ingest, "proc"):
            ingest.proc.kill()
        err.close()

    def at(minute):
        want = minute * 60 if minute else a.sample
        return min(rows, key=lambda r: abs(r[0] - want))

    print()
    print("| time | agent RSS (MiB) | agent CPU (%% of a core, last %d s) |" % a.sample)
    print("|---|---|---|")
    for m in (0, 5, 10, 20, 30):
        if m * 60 > secs:
            continue
        r = at(m)
        print("| %s (%d s) | %.1f | %.1f |" % ("start" if not m else f"{m} min", r[0],
                                                 r[1] / 1024, r[2]))
    print("| min / max | %.1f / %.1f | %.1f / %.1f |" % (
        min(r[1] for r in rows) / 1024, max(r[1] for r in rows) / 1024,
        min(r[2] for r in rows), max(r[2] for r in rows)))
    lat = sorted(prober.lat)
    print()
    print("/healthz: %d answered, %d failed, max %.0f ms, p99 %.0f ms, over 1 s: %d" % (
        len(lat), prober.failed, lat[-1] * 1000 if lat else 0,
        lat[int(len(lat) * 0.99)] * 1000 if lat else 0, sum(x > 1.0 for x in lat)))
    for why, n in sorted(prober.why.items(), key=lambda x: -x[1])[:5]:
        print("  /healthz failed %d times: %s" % (n, why))
    if prober.first_fail is not None:
        print("  first failure %.0f s after the first 200" % prober.first_fail)
    if isinstance(ingest, HostileIngest):
        sent = ingest.sent()
        print("push: %d responses of a body that never ends, at most %d bytes taken of one" % (
            len(sent), max(sent or [0])))
    else:
        print("push: %d requests answered 500 (Retry-After: 30)" % ingest.requests)
    if held:
        print("holding clients: %d opened, %d failed, %d open at once at most" % (
            held.get("opened", 0), held.get("failed", 0), held.get("peak", 0)))
    print("clients: %d reconnects of the 220; short-lived processes: %d" % (
        crowd.reconnects, spawned[0]))
    print("interval files in the store: %d; fds max %d" % (
        len(list(store.glob("*"))), max(r[3] for r in rows)))
    lines = (d / "agent.stderr").read_text(errors="replace").splitlines()
    print("agent stderr: %d lines, %d without the bpfprof: prefix" % (
        len(lines), sum(not l.startswith("bpfprof:") for l in lines)))
    for l in sorted(set(l[:160] for l in lines))[:12]:
        print("  " + l)


if __name__ == "__main__":
    main()

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
  * normal work: ~20 short-lived processes a second (tools/soak.sh's churn).

The agent runs `bpfprof -F 99 -a --interval 10 --output-dir D --keep 30
--listen PORT --push URL`. Every SAMPLE seconds the script records its RSS
and the CPU it used since the last sample; /healthz is fetched every second
and its latency recorded. At the end it prints a table (start, 5, 10, 20,
30 minutes, min / max), the /healthz latencies, what the agent wrote and
said; the raw samples go to DIR/samples.csv.

Binaries are copied first, so rebuilding the tree during a soak changes
nothing. The hostile processes run at nice 19: the machine may be shared.

Usage: sudo tools/soak_hostile.py [--minutes 30] [--sample 30] [--dir DIR]
       [--bpfprof build/bpfprof]
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from benchlib import Crowd, FailingIngest, HugeJit, ManyMaps, free_port

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


class Prober:
    """GET /healthz once a second; keeps the latencies."""

    def __init__(self, port, stop):
        self.url = f"http://127.0.0.1:{port}/healthz"
        self.stop = stop
        self.lat = []
        self.failed = 0
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    r.read()
                    ok = r.status == 200
            except OSError:
                ok = False
            if ok:
                self.lat.append(time.monotonic() - t)
            else:
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
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak_hostile: run as root")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak_hostile: terminated"))
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/workloads/jitlike",
                    "build/workloads/manymaps", "build/workloads/busy"], check=True)
    d = Path(a.dir or tempfile.mkdtemp(prefix="bpfprof-soak-"))
    d.mkdir(parents=True, exist_ok=True)
    bin_ = d / "bin"
    bin_.mkdir(exist_ok=True)
    for src in (a.bpfprof, ROOT / "build/workloads/jitlike", ROOT / "build/workloads/manymaps",
                ROOT / "build/workloads/busy"):
        shutil.copy2(src, bin_ / Path(src).name)
    secs = a.minutes * 60
    stop = threading.Event()
    nice = ["nice", "-n", "19"]
    jit = HugeJit(bin_ / "jitlike", int(secs + 120), prefix=nice)  # the map is written
    mm = ManyMaps(bin_ / "manymaps", int(secs + 120), 33000, copy=True, prefix=nice)
    hostile = [jit, mm]
    ingest = FailingIngest(500, retry_after=30)
    port = free_port()
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
        for p in hostile:
            p.close()  # and the perf map
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
    print("push: %d requests answered 500 (Retry-After: 30)" % ingest.requests)
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

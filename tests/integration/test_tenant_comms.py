# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""--alloc -a's process names against a tenant (review-src finding 4): the
name the in-use blocks of an earlier interval carry comes from the engine's
table of names by pid, first seen. A tenant's process named "poison"
allocates (every block freed) and exits; a root process then gets its pid
(kernel.ns_last_pid) and keeps blocks across intervals. Its blocks must not
carry the tenant's name: fcf51cc kept a name until that pid's blocks were
deleted, so a process without blocks left its name, for good, to the next
process with its pid (and the table filled up with the pids of a busy host).

One run (4 s once the probes are in; -a's start took up to 15 s on the
loaded 2-core host): --alloc=1M -a --interval 1 with a
budget the host's allocations do not reach (the guard, engaged, would not
measure in-use); it holds /tmp/bpfprof-bench.lock (do not run it under flock).
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import BPFPROF, Lines, as_tenant, bench_lock, new_tenant_dir, wait_for, wl
import pprof

HOLD_INTERVALS = 2.5  # intervals of 1 s the victim's blocks stay after it allocated them
VICTIM = ("import time; b = [bytearray(1 << 20) for _ in range(32)]; "
          "print('held', flush=True); time.sleep(60)")


def _set_last_pid(pid):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid))


def _poison(d):
    """The tenant's poison: 0.3 s of 4 KiB malloc/free pairs (~24 sampled at
    1 MiB, all freed), under its own name; its pid."""
    r = subprocess.run(as_tenant([os.path.join(d, "poison"), "steady", "20000", "0.3"]),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])["pid"]


@pytest.fixture(scope="module")
def reuse_attack(tmp_path_factory):
    """(the victim's pid, when it held its blocks (ns, CLOCK_REALTIME), the profiles)."""
    d = str(new_tenant_dir())
    subprocess.run(as_tenant(["ln", "-s", wl("allocwork"), os.path.join(d, "poison")]),
                   check=True)
    out = tmp_path_factory.mktemp("comms")
    errpath = out / "stderr"
    b = victim = None
    try:
        with bench_lock(), open(errpath, "w") as err:
            b = subprocess.Popen([str(BPFPROF), "record", "--alloc=1M", "-a", "--interval", "1",
                                  "--alloc-budget", "1000000000", "--output-dir", str(out / "p")],
                                 stderr=err)
            wait_for(lambda: "profiling allocations of every process" in errpath.read_text(),
                     timeout=120, what="the probes in")
            for _ in range(10):
                pid = _poison(d)
                _set_last_pid(pid - 1)
                victim = subprocess.Popen([sys.executable, "-c", VICTIM],
                                          stdout=subprocess.PIPE, text=True)
                if victim.pid == pid:
                    break
                victim.kill()
                victim.wait()
            assert victim.pid == pid, "the victim never got the poison's pid"
            assert Lines(victim.stdout).readline(60, "the victim's blocks").strip() == "held"
            held = time.time_ns()
            time.sleep(HOLD_INTERVALS)
            b.send_signal(signal.SIGINT)
            b.wait(timeout=60)
    finally:
        for p in (victim, b):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    assert b.returncode == 0, errpath.read_text()[-3000:]
    profiles = []
    for f in sorted(glob.glob(str(out / "p" / "*.heap.pb.gz"))):
        with open(f, "rb") as fh:
            profiles.append(pprof.decode(fh.read()))
    return pid, held, profiles


def test_reused_pid_does_not_carry_the_tenants_name(reuse_attack):
    pid, held, profiles = reuse_attack
    # the intervals begun after the victim held its blocks: they are named
    # from the table (no allocation of the victim's in them)
    later = [p for p in profiles if p["time_nanos"] > held]
    assert later, "no interval began after the victim held its blocks"
    comms = [s["label"].get("comm") for p in later for s in p["sample"]
             if s["label"].get("pid") == pid and s["value"][3] > 0]
    assert comms, "the victim's blocks are in no later interval's in-use"
    assert set(comms) == {"python3"}, comms

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""The tenant against root's agent through Python frame naming (issue 35,
items 3 and 12). Every program here runs as the tenant (conftest.as_tenant)
under Debian's /usr/bin/python3.11; root's bpfprof names its frames.

Item 3: code objects as large as the agent reads - 3,000 functions made
with code.replace(), 4 KiB qualnames and file names, 64 KiB line tables
whose every instruction past the 40th lies beyond what the agent keeps,
called in chains of 60 - must leave the agent's peak RSS (VmHWM) under its
base (the same run with plain names) plus the documented per-process cache
cap (32 MiB) for each process: the caps hold at every insertion.

Item 12: the interpreter's thread list is searched for 64 threads only; a
Python with ~600 threads whose busy thread is the oldest (the list's last)
must have its Python frames named (the thread's state found through its
thread-specific data), and when the state cannot be found the samples are
counted all the same and the miss is reported (-v, /metrics).
"""
import glob
import re
import signal
import subprocess
import time
from pathlib import Path

import pprof
from conftest import (BPFPROF, as_tenant, assert_most, count_with, total)

PY = "/usr/bin/python3.11"
MIB = 1024

ATTACK = r'''
import sys, types
N = int(sys.argv[1])
CHAIN = 60
BENIGN = sys.argv[2] == "benign"
E = "\U0001F600"
# Long-form entries (code 14), 25 bytes for one code unit each: a 64 KiB table
# whose every instruction past the 40th is beyond what the agent keeps.
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
        # 1,023 characters of 4 bytes: as long as the agent reads a str.
        code = template.__code__.replace(co_qualname=E * 1018 + tag, co_name="f" + tag,
                                         co_filename="/" + E * 1014 + tag + ".py",
                                         co_linetable=LT)
    FUNCS.append(types.FunctionType(code, globals()))
print("ready", flush=True)
while True:
    for c in range(0, N, CHAIN):
        FUNCS[c](c)
'''


def start_tenant(argv):
    """A tenant program that prints "ready" when it is; the Popen."""
    p = subprocess.Popen(as_tenant(argv), stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.strip() == "ready", f"tenant program said {line!r}"
    return p


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def status_kib(pid, field):
    m = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(m.group(1))


def agent_run(pids, store, seconds, extra=()):
    """Root's bpfprof on pids, always on (--interval 1 into store), for
    `seconds`; its VmHWM (KiB) just before it is stopped, and its stderr."""
    args = [str(BPFPROF), "-p", ",".join(str(p) for p in pids), "--interval", "1",
            "--output-dir", str(store), "-v", *extra]
    a = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(seconds)
        assert a.poll() is None, a.communicate()[1]
        hwm = status_kib(a.pid, "VmHWM")
        a.send_signal(signal.SIGINT)
        err = a.communicate(timeout=60)[1]
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert a.returncode == 0, err
    return hwm, err


def stored(store):
    """All stored intervals: one folded profile (function names), and the
    functions' files {name: file}."""
    out, files = {}, {}
    for path in sorted(glob.glob(f"{store}/bpfprof-*")):
        if ".tmp." in path:
            continue
        prof = pprof.decode(Path(path).read_bytes())
        for stack, n in pprof.to_folded(prof).items():
            out[stack] = out.get(stack, 0) + n
        for f in prof["function"].values():
            files[pprof.strings(prof, f.get(2, 0))] = pprof.strings(prof, f.get(4, 0))
    return out, files


def attack_hwm(tenant_dir, tmp_path, nproc, mode, seconds=12):
    script = tenant_dir / "codes.py"
    script.write_text(ATTACK)
    procs = [start_tenant([PY, script, 3000, mode]) for _ in range(nproc)]
    store = tmp_path / f"store-{mode}"
    try:
        hwm, err = agent_run([p.pid for p in procs], store, seconds)
    finally:
        stop(procs)
    return (hwm, err, *stored(store))


def check_caps(tenant_dir, tmp_path, nproc):
    base, _, benign, _ = attack_hwm(tenant_dir, tmp_path, nproc, "benign")
    assert_most(count_with(benign, lambda s: re.search(r";f\d{5}(;|$)", s) is not None),
                total(benign), "benign samples in the tenant's named functions")
    hwm, err, folded, files = attack_hwm(tenant_dir, tmp_path, nproc, "attack")
    # The bound: the agent's base with the same processes named plainly, plus
    # the documented cap on one process's code-object cache for each of them
    # (32 MiB; all processes together: 128 MiB).
    bound = base + nproc * 32 * MIB
    print(f"{nproc} process(es): base VmHWM {base / MIB:.1f} MiB, attack {hwm / MIB:.1f} MiB, "
          f"bound {bound / MIB:.1f} MiB")
    assert hwm <= bound, (hwm, base, bound, err[-3000:])
    # Its frames are named all the same: qualnames cut to their first bytes,
    # "..." at the end; files to their last ("...", the base name kept).
    named = count_with(folded, lambda s: re.search("\U0001F600{100,}\\.\\.\\.(;|$)", s) is not None)
    assert_most(named, total(folded), "samples in the tenant's named functions")
    cut = [n for n in files if n.endswith("...")]
    assert cut and all(len(n.encode()) <= 512 for n in cut), cut[:2]
    assert all(re.fullmatch("\\.\\.\\.\U0001F600+\\d{5}\\.py", files[n]) and
               len(files[n].encode()) <= 1024 for n in cut), [files[n] for n in cut[:2]]
    assert re.search(r"python names: \d+ KiB of code objects cached", err), err[-2000:]


def test_huge_code_objects_one_process(tenant_dir, tmp_path):
    check_caps(tenant_dir, tmp_path, 1)


def test_huge_code_objects_two_processes(tenant_dir, tmp_path):
    check_caps(tenant_dir, tmp_path, 2)

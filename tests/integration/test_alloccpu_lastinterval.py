# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof --alloc --on-cpu in continuous mode: the run's last heap and CPU
intervals written at the stop each whatever the other did (the source
review's L6 of session 8: a heap take without memory skipped the CPU's
last interval too).

One run, its only interval the last one (--interval 600, -d 3), the
heap's take failing as without memory (BPFPROF_TEST_ALLOC_TOTAL_FAIL=1,
the run's first staging of its total): the failure said, the exit status
1, and the CPU's interval in --output-dir with busy's samples.
"""
import os
import signal
import subprocess

from conftest import BPFPROF, wait_for, wl
import pprof


def test_failed_heap_interval_keeps_the_cpu_one(tmp_path):
    busy = subprocess.Popen([wl("busy"), "30"], stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: "libc" in open(f"/proc/{busy.pid}/maps").read(), "busy's libc")
        r = subprocess.run([str(BPFPROF), "--alloc", "--on-cpu", "-F", "99", "--interval", "600",
                            "-d", "3", "--output-dir", tmp_path, "-p", str(busy.pid)],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, BPFPROF_TEST_ALLOC_TOTAL_FAIL="1"))
    finally:
        busy.send_signal(signal.SIGKILL)
        busy.wait(timeout=30)
    names = sorted(os.listdir(tmp_path))
    assert not [n for n in names if n.endswith(".heap.pb.gz")], names
    cpu = [n for n in names if n.startswith("bpfprof-") and n.endswith(".pb.gz")]
    assert len(cpu) == 1, (names, r.stderr)
    folded = pprof.to_folded(pprof.decode((tmp_path / cpu[0]).read_bytes()))
    n = sum(v for k, v in folded.items() if k.split(";")[0] == "busy")
    assert n > 0, (folded, r.stderr)
    assert "the last interval's heap profile could not be taken" in r.stderr, r.stderr
    assert r.returncode == 1, r.stderr

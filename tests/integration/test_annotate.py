# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof annotate: per-instruction samples of a known loop, against perf.

annloop (C) and anntpl (a C++ template method) divide in a loop, so one
instruction (the one after the div) holds far more samples than any other.
bpfprof annotate and perf record + perf annotate sample the same process
over the same seconds at the same rate; the hottest instruction must be the
same offset in both, with a share that agrees within four standard
deviations. Both binaries keep only their symbol tables: their DWARF is in a
separate debug file beside them (.gnu_debuglink), which is where the source
lines must come from.
"""
import math
import re
import subprocess
import time
from pathlib import Path

from conftest import BPFPROF, Workload, run_bpfprof, sample_rate, wl


INSN = re.compile(r"^(>>|  )\s+([\d.]+)%\s+(\d+)\s+\+0x([0-9a-f]+)\s+(\S.*)$")
SELF = re.compile(r"^\s+(\d+) self samples")
PERF_INSN = re.compile(r"^\s+([\d.]+)\s+:\s+([0-9a-f]+):\s")


def parse_listing(text):
    """(self samples, [(hot mark, share, samples, offset, text)])."""
    m = next((SELF.match(ln) for ln in text.splitlines() if SELF.match(ln)), None)
    assert m, f"no header in:\n{text}"
    insns = []
    for ln in text.splitlines():
        i = INSN.match(ln)
        if i:
            insns.append((i.group(1) == ">>", float(i.group(2)), int(i.group(3)),
                          int(i.group(4), 16), i.group(5)))
    assert insns, f"no instructions in:\n{text}"
    return int(m.group(1)), insns


def symbol_start(path, name):
    out = subprocess.run(["nm", "-C", path], capture_output=True, text=True).stdout
    for ln in out.splitlines():
        f = ln.split(" ", 2)
        if len(f) == 3 and f[2].startswith(name):
            return int(f[0], 16)
    raise AssertionError(f"{name} not in {path}")


def perf_annotate(data, symbol):
    """{offset-independent address: percent} of perf annotate --stdio."""
    p = subprocess.run(["perf", "annotate", "-i", str(data), "--stdio", "-s", symbol],
                       capture_output=True, text=True)
    rows = {}
    for ln in p.stdout.splitlines():
        m = PERF_INSN.match(ln)
        if m:
            rows[int(m.group(2), 16)] = float(m.group(1))
    assert rows, f"perf annotate printed nothing for {symbol}:\n{p.stdout}\n{p.stderr}"
    m = re.search(r"\((\d+) samples", p.stdout)
    return rows, int(m.group(1)) if m else 0


def annotate_side_by_side(tmp_path, workload, function, perf_symbol, src_line):
    binary = wl(workload)
    data = tmp_path / "perf.data"
    with sample_rate(999) as hz, Workload(binary, 30) as w:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-p",
                                 str(w.pid), "-o", str(data), "--", "sleep", "6"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # perf is attached
        p = run_bpfprof(["annotate", "-F", hz, "-p", w.pid, "-d", "5", function],
                        timeout=120)
        perf.wait(timeout=60)
    self_samples, insns = parse_listing(p.stdout)

    # Per-instruction counts add up to the function's self samples.
    assert sum(i[2] for i in insns) == self_samples, p.stdout
    assert "not shown" not in p.stdout, p.stdout
    assert self_samples > 300, p.stdout  # the machine may be busy: ~6% of a CPU
    # Source lines from the separate debug file.
    assert re.search(rf"source lines from .*{workload}\.debug \(separate debug file\)",
                     p.stdout), p.stdout
    assert src_line in p.stdout, p.stdout

    ours = max(insns, key=lambda i: i[2])
    assert ours[0], f"the hottest instruction is not marked: {ours}"
    rows, perf_n = perf_annotate(data, perf_symbol)
    start = symbol_start(binary, perf_symbol)
    hot_addr = max(rows, key=rows.get)
    assert hot_addr - start == ours[3], \
        f"perf's hottest is +{hot_addr - start:#x} ({rows[hot_addr]}%), ours +{ours[3]:#x} " \
        f"({ours[1]}%)\n{p.stdout}"
    # And about as hot in both.
    p1, p2 = ours[1] / 100, rows[hot_addr] / 100
    n1, n2 = self_samples, max(perf_n, 1)
    sigma = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    assert abs(p1 - p2) <= 4 * sigma, (p1, p2, n1, n2)


def test_annotate_c_function_matches_perf_annotate(tmp_path):
    annotate_side_by_side(tmp_path, "annloop", "div_loop", "div_loop",
                          "x = x / d + i * 977;")


def test_annotate_cxx_template_matches_perf_annotate(tmp_path):
    annotate_side_by_side(tmp_path, "anntpl", "ann::Divider<unsigned long>::run",
                          "ann::Divider<unsigned long>::run",
                          "x = x / d_ + static_cast<T>(i * 977);")


def test_annotate_saved_profile(tmp_path):
    prof, plain = tmp_path / "loop.pb.gz", tmp_path / "plain.pb.gz"
    with sample_rate(499) as hz, Workload(wl("annloop"), 30) as w:
        run_bpfprof(["-p", w.pid, "-d", "3", "-F", hz, "--addresses", "-o", prof])
        run_bpfprof(["-p", w.pid, "-d", "1", "-o", plain])
    p = run_bpfprof(["annotate", prof, "div_loop"])
    self_samples, insns = parse_listing(p.stdout)
    assert sum(i[2] for i in insns) == self_samples > 100, p.stdout
    assert "annloop.debug (separate debug file)" in p.stdout, p.stdout

    # A profile without addresses says how to get them.
    p = run_bpfprof(["annotate", plain, "div_loop"], check=False)
    assert p.returncode == 1 and "--addresses" in p.stderr, p.stderr
    # A name with no samples lists the hottest ones.
    p = run_bpfprof(["annotate", prof, "no_such_function"], check=False)
    assert p.returncode == 1 and "HINT: the hottest functions" in p.stderr, p.stderr
    assert "div_loop" in p.stderr
    # A binary that is not the one profiled is refused (build id).
    other = tmp_path / "root"
    (other / Path(wl("annloop")).parent.relative_to("/")).mkdir(parents=True)
    (other / Path(wl("annloop")).relative_to("/")).write_bytes(Path(wl("anntpl")).read_bytes())
    p = run_bpfprof(["annotate", "--symfs", other, prof, "div_loop"], check=False)
    assert p.returncode == 1 and "not the binary that was profiled" in p.stderr, p.stderr


def test_annotate_ambiguous_name_lists_the_candidates(tmp_path):
    prof = tmp_path / "mix.pb.gz"
    with sample_rate(499) as hz, Workload(wl("topmix"), 30) as w:
        # -U: a kernel function matching "_spin" (_raw_spin_unlock...) may be sampled too
        run_bpfprof(["-p", w.pid, "-d", "2", "-F", hz, "-U", "--addresses", "-o", prof])
    p = run_bpfprof(["annotate", prof, "_spin"], check=False)
    assert p.returncode == 1 and "matches 2 functions" in p.stderr, p.stderr
    assert "hot_spin" in p.stderr and "cold_spin" in p.stderr
    p = run_bpfprof(["annotate", prof, "hot_spin"])
    self_samples, insns = parse_listing(p.stdout)
    assert sum(i[2] for i in insns) == self_samples


def test_annotate_kernel_function(tmp_path):
    """Kernel text may not be readable (no /proc/kcore here): then the
    samples are printed per address, and still add up."""
    prof = tmp_path / "sys.pb.gz"
    with sample_rate(499) as hz, Workload(wl("syscalls"), 30) as w:
        run_bpfprof(["-p", w.pid, "-d", "3", "-F", hz, "--addresses", "-o", prof])
    report = run_bpfprof(["report", "--sort", "self", prof]).stdout
    kfn = next(ln.split()[-1] for ln in report.splitlines() if "[kernel]" in ln)
    p = run_bpfprof(["annotate", prof, kfn])
    m = SELF.search(p.stdout) or next(SELF.match(ln) for ln in p.stdout.splitlines()
                                      if SELF.match(ln))
    self_samples = int(m.group(1))
    if Path("/proc/kcore").exists():
        _, insns = parse_listing(p.stdout)
        assert sum(i[2] for i in insns) == self_samples, p.stdout
    else:
        assert "kernel text is not readable (this kernel has no /proc/kcore)" in p.stdout
        rows = re.findall(r"^\s+([\d.]+)%\s+(\d+)\s+\+0x[0-9a-f]+\s+0xffff[0-9a-f]+$",
                          p.stdout, re.M)
        assert rows and sum(int(r[1]) for r in rows) == self_samples, p.stdout


def test_annotate_usage_errors():
    for args, msg in ((["a.pb.gz", "f", "-p", "1"], "annotated as it is"),
                      ([], "which FUNCTION"),
                      (["--symfs", "/", "f"], "--symfs is for annotating a PROFILE")):
        p = subprocess.run([str(BPFPROF), "annotate"] + args, capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)

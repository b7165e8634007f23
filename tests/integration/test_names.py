# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""What a new user trips over (issue 37, items 3, 13, 15): an unnamed
function is one frame named at its start (its .eh_frame FDE), not one frame
per sampled address; annotate with an ambiguous name keeps the samples it
took and says how to annotate each candidate; a warning about a Python
bpfprof cannot walk is said once per interpreter file, not per process.
"""
import re
import shutil
import subprocess

from conftest import Workload, assert_most, parse_folded, run_bpfprof, total, wl
from test_python import CHILD_APP, patched_interpreter, script


def test_python_layout_warning_once_per_binary(tmp_path):
    """Four processes of one Python bpfprof has no layout for: one warning.
    A second copy of the interpreter (another file): one more."""
    py = patched_interpreter(tmp_path / "python3.99", 99)
    (tmp_path / "b").mkdir()
    other = tmp_path / "b" / "python3.99"  # the name says a Python: probed
    shutil.copy2(py, other)
    child = script(tmp_path, "child.py", CHILD_APP)
    warn = re.compile(r"warning: process \d+ runs (\S+): Python 3\.99 has no layout bpfprof "
                      r"knows; its Python functions are not shown")
    with Workload(py, child, 30) as a, Workload(py, child, 30) as b, \
            Workload(py, child, 30) as c, Workload(py, child, 30) as d, \
            Workload(other, child, 30) as e:
        pids = ",".join(str(w.pid) for w in (a, b, c, d, e))
        p = run_bpfprof(["-p", pids, "-U", "-d", 2])
    files = [m.group(1) for m in warn.finditer(p.stderr)]
    assert sorted(files) == sorted([str(py), str(other)]), p.stderr[-3000:]


def test_annotate_ambiguous_live_keeps_the_samples(tmp_path):
    """A live annotate whose FUNCTION names two functions: the candidates are
    listed, the samples saved, and each printed command annotates one of them
    from the saved profile, without sampling again."""
    with Workload(wl("topmix"), 30) as w:
        # -U: a kernel function matching "_spin" (_raw_spin_unlock...) may be sampled too
        p = run_bpfprof(["annotate", "-U", "-F", 199, "-p", w.pid, "-d", 2, "_spin"],
                        check=False, cwd=tmp_path)
    assert p.returncode == 1 and "matches 2 functions" in p.stderr, p.stderr
    cmds = re.findall(r"^  bpfprof annotate (\S+) '([^']+)'$", p.stderr, re.M)
    assert sorted(f for _, f in cmds) == ["cold_spin", "hot_spin"], p.stderr
    saved = tmp_path / cmds[0][0]
    assert saved.is_file() and saved.stat().st_size > 0, p.stderr
    # The workload is gone: these read the saved samples only.
    for path, func in cmds:
        q = run_bpfprof(["annotate", tmp_path / path, func])
        assert q.stdout.startswith(func + "  ("), q.stdout
        m = re.search(r"^\s+(\d+) self samples", q.stdout, re.M)
        assert m and int(m.group(1)) > 0, q.stdout


def test_unnamed_function_is_one_frame_at_its_fde_start(tmp_path):
    """A stripped binary's hot function has no symbol: all its samples land
    on one frame named at its start (its .eh_frame FDE, which is where the
    unstripped binary's symbol is), in folded, report and pprof alike."""
    full = wl("annloop")
    binary = tmp_path / "annloop-s"
    subprocess.run(["strip", "-s", "--remove-section=.gnu_debuglink", full, "-o", binary],
                   check=True)
    nm = subprocess.run(["nm", full], capture_output=True, text=True, check=True).stdout
    start = next(int(ln.split()[0], 16) for ln in nm.splitlines() if ln.endswith(" div_loop"))
    name = f"annloop-s+0x{start:x}"
    folded, pb = tmp_path / "p.folded", tmp_path / "p.pb.gz"
    with Workload(binary, 30) as w:
        run_bpfprof(["-p", w.pid, "-U", "-F", 199, "-d", 2, "-o", folded])
        run_bpfprof(["-p", w.pid, "-U", "-F", 99, "-d", 1, "-o", pb])
    stacks = parse_folded(folded.read_text())
    leaves = {}
    for s, c in stacks.items():
        leaves[s.split(";")[-1]] = leaves.get(s.split(";")[-1], 0) + c
    own = {f: c for f, c in leaves.items() if f.startswith("annloop-s+0x")}
    n = total(stacks)
    assert n >= 50, stacks
    # One frame for the hot function, not one per sampled address.
    assert own.get(name, 0) >= 0.9 * sum(own.values()), (name, own)
    assert_most(own.get(name, 0), n, f"samples on {name}")
    # The pprof keeps that name: its report and its folded conversion show it.
    for argv in (["report", pb], ["convert", "-f", "folded", pb]):
        r = run_bpfprof(argv)
        assert name in r.stdout, (argv, r.stdout[:2000])

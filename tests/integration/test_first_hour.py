# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""What a new user trips over in the first hour (issue 37): flame graph
labels of Python frames, output file names bpfprof cannot tell the format
of, several pids after -p, perf's files given to report/convert/diff (and
perf script's text, which they read), selecting processes in a report, and
what `make demo` shows.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (BPFPROF, OUT, ROOT, Workload, parse_folded, run_bpfprof, total, wl)

JS = ROOT / "tests" / "integration" / "js"
NODE_MODULES = ROOT / "tests" / "node_modules"
SVG_NS = "{http://www.w3.org/2000/svg}"


def need(tool):
    path = shutil.which(tool)
    assert path, f"{tool} is not installed: run tools/install-deps.sh (as root)"
    return path


def node(script, *args, timeout=120):
    need("node")
    assert (NODE_MODULES / "playwright-core").is_dir(), \
        "tests/node_modules is missing: run tools/install-deps.sh (npm ci --prefix tests)"
    return subprocess.run([need("node"), str(JS / script)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


# --- 4: flame graph labels shorten only C++ signatures ------------------------------

PY_SHORT = "json_work (app.py)"
PY_LONG = "make_docs.<locals>.<listcomp> (docs_builder.py)"
GO_LINE = "main.(*Server).handle (main.go:12)"
CXX = ("ns::Widget<std::vector<int, std::allocator<int> > >::draw(Canvas&, Rect const&) "
       "const")


def test_flame_graph_keeps_python_and_go_names(tmp_path):
    """Frames too narrow for their name: a C++ signature loses its template
    arguments and parameters (ns::Widget::draw() const), every other name is
    only cut at its end - a Python frame keeps "(app.py)" and "<locals>"
    (not "json_work ()", "make_docs.. ()"), a Go method its "(*Server)"."""
    src = tmp_path / "mixed.folded"
    # 10% of 1180 px holds ~15 characters: less than the Python and Go
    # names, more than what the C++ shortener made of them.
    src.write_text(f"app;main;{PY_SHORT}_[py] 10\n"
                   f"app;main;{PY_LONG}_[py] 10\n"
                   f"app;main;{GO_LINE} 10\n"
                   f"app;main;{CXX} 20\n"
                   "app;main;rest 50\n")
    svg = tmp_path / "mixed.svg"
    run_bpfprof(["convert", src, "--lines", "-o", svg])
    need("chromium")
    cases = [[PY_SHORT, 4], [PY_LONG, 4], [GO_LINE, 0], [CXX, 0],
             ["ns::f<int>(int) (x.cc:3)", 0], ["(anonymous namespace)::run(int)", 0],
             ["std::vector<int>::push_back(int const&)", 5], ["draw_all(Canvas&)", 2],
             ["bash (deleted)", 3], ["Lfoo/Bar;::baz", 2]]
    p = node("svg_labels.js", svg, json.dumps(cases))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["errors"] == [], r["errors"]
    assert r["shortened"] == [PY_SHORT, PY_LONG, GO_LINE, "ns::Widget::draw() const",
                              "ns::f() (x.cc:3)", "(anonymous namespace)::run()",
                              "std::vector::push_back()", "draw_all()", "bash (deleted)",
                              "Lfoo/Bar;::baz"], r["shortened"]
    drawn = {re.sub(r" \[(user|Python|JIT|kernel|inlined)\]$", "", f["name"]): f["text"]
             for f in r["frames"]}
    assert drawn[CXX] == "ns::Widget::draw() const", drawn
    for name in (PY_SHORT, PY_LONG, GO_LINE):
        text = drawn[name]
        assert text.endswith("\u2026") and name.startswith(text[:-1]) and len(text) > 3, \
            (name, text)


# --- 10: -p $(pgrep NAME) -----------------------------------------------------------

def test_several_pids_with_spaces_say_join_with_commas():
    """`-p $(pgrep busy)` with two matches: a usage error before sampling whose
    hint spells the list joined with commas, and how pgrep writes that; the
    quoted form (new lines inside one argument) too. Both work once joined."""
    with Workload(wl("busy"), 30) as a, Workload(wl("busy"), 30) as b:
        pids = [str(a.pid), str(b.pid)]
        for argv, cmd in ([["-p"] + pids + ["-d", "1"], []],
                          [["-p", "\n".join(pids) + "\n", "-d", "1"], []],
                          [["-p"] + pids + ["--stdio", "-d", "1"], ["top"]]):
            p = run_bpfprof(cmd + argv, check=False)
            assert p.returncode == 2, p.stderr
            assert "sampling" not in p.stderr, p.stderr
            lines = p.stderr.splitlines()
            assert len(lines) == 2 and lines[1] == (
                f'HINT: join the pids with commas: -p {",".join(pids)} '
                '(for pgrep: -p "$(pgrep -d, NAME)")'), p.stderr
        joined = subprocess.run(["pgrep", "-d,", "-f", f"^{wl('busy')} 30"], capture_output=True,
                                text=True).stdout.strip()
        assert sorted(joined.split(","), key=int) == sorted(pids, key=int)
        p = run_bpfprof(["-p", joined, "-d", "1"])
        assert "sampling 2 processes" in p.stderr, p.stderr

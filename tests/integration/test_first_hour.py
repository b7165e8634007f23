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


# --- 9: -o NAME: the format from its ending, or a usage error -----------------------

def serve_gzip_svg(path):
    """An HTTP server on 127.0.0.1 that sends path as a web server sends an
    .svgz: image/svg+xml with Content-Encoding: gzip. Returns (server, url)."""
    import http.server
    import threading
    body = Path(path).read_bytes()

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "image/svg+xml")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/{Path(path).name}"


def test_unknown_output_ending_is_a_usage_error_before_sampling(tmp_path):
    """-o x.png (or .data, .html, .gz) without -f: exit 2 before anything is
    sampled, the hint listing the endings bpfprof knows; the same in convert
    and diff. A name without an ending, or a numbered one (run.1), is folded
    (as perf writes its default format to any -o name)."""
    with Workload(wl("busy"), 30) as w:
        for name in ["x.png", "perf.data", "cpu.html", "cpu.folded.gz"]:
            p = run_bpfprof(["-p", w.pid, "-d", "1", "-o", tmp_path / name], check=False)
            assert p.returncode == 2, p.stderr
            assert "sampling" not in p.stderr and not (tmp_path / name).exists(), p.stderr
            err, hint = p.stderr.splitlines()
            assert err == (f"bpfprof: cannot tell the format of {tmp_path / name} from its "
                           f"ending '{os.path.splitext(name)[1]}'"), p.stderr
            assert hint.startswith("HINT: end the name in .folded .collapsed .stacks .svg .svgz "
                                   ".pb.gz .pprof .speedscope.json .json .txt .report, or "
                                   "choose with -f folded|svg|svgz|pprof|speedscope|report"), hint
        # -f decides whatever the name; no ending (or a number) is folded.
        for name, argv in [("profile", []), ("run.1", []), ("x.png", ["-f", "svg"])]:
            run_bpfprof(["-p", w.pid, "-d", "1", "-o", tmp_path / name] + argv)
        assert parse_folded((tmp_path / "profile").read_text())
        assert parse_folded((tmp_path / "run.1").read_text())
        assert ET.parse(tmp_path / "x.png").getroot().tag == SVG_NS + "svg"
    src = tmp_path / "run.1"
    p = run_bpfprof(["convert", src, "-o", tmp_path / "c.data"], check=False)
    assert p.returncode == 2 and "from its ending '.data'" in p.stderr, p.stderr
    p = run_bpfprof(["diff", src, src, "-o", tmp_path / "d.html"], check=False)
    assert p.returncode == 2 and "end the name in .svg .svgz .txt .report" in p.stderr, p.stderr
    run_bpfprof(["diff", src, src, "-o", tmp_path / "d"])
    assert (tmp_path / "d").read_text().startswith("bpfprof diff:")


def test_svgz_is_a_gzipped_svg_browsers_draw(tmp_path):
    """-o x.svgz writes the flame graph gzip-compressed (record, convert and
    diff): the very SVG -o x.svg writes, which Chromium draws when it is
    served as web servers serve .svgz (Content-Encoding: gzip)."""
    with Workload(wl("busy"), 30) as w:
        run_bpfprof(["-p", w.pid, "-d", "2", "-o", tmp_path / "rec.svgz"])
    rec = gzip.decompress((tmp_path / "rec.svgz").read_bytes())
    assert ET.fromstring(rec).tag == SVG_NS + "svg" and b"leaf_a" in rec
    src = tmp_path / "s.folded"
    src.write_text("app;main;leaf_a 20\napp;main;leaf_b 10\n")
    run_bpfprof(["convert", src, "-o", tmp_path / "s.svg"])
    run_bpfprof(["convert", src, "-o", tmp_path / "s.svgz"])
    run_bpfprof(["convert", src, "-f", "svgz", "-o", tmp_path / "forced"])
    svg = (tmp_path / "s.svg").read_bytes()
    assert gzip.decompress((tmp_path / "s.svgz").read_bytes()) == svg
    assert gzip.decompress((tmp_path / "forced").read_bytes()) == svg
    run_bpfprof(["diff", src, src, "-o", tmp_path / "d.svgz"])
    run_bpfprof(["diff", src, src, "-o", tmp_path / "d.svg"])
    assert gzip.decompress((tmp_path / "d.svgz").read_bytes()) == (tmp_path / "d.svg").read_bytes()
    need("chromium")
    srv, url = serve_gzip_svg(tmp_path / "s.svgz")
    try:
        p = node("svg_labels.js", url)
    finally:
        srv.shutdown()
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["errors"] == [] and {"leaf_a", "leaf_b"} <= {f["text"] for f in r["frames"]}, r

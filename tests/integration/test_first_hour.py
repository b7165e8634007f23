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
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (BPFPROF, OUT, ROOT, Workload, as_tenant, assert_share, parse_folded,
                      run_bpfprof, total, wait_for, wl)

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
                                   ".pb.gz .pprof .pb .speedscope.json .json .txt .report, or "
                                   "choose with -f folded|svg|svgz|pprof|pb|speedscope|report"), \
                hint
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


# --- 11: perf's files: perf.data says what to do, perf script's text is read --------

def perf(*args, **kw):
    return subprocess.run([need("perf")] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300, **kw)


def perf_record(out, *args):
    p = perf("record", "-q", "-o", out, *args)
    assert p.returncode == 0 and Path(out).exists(), p.stderr
    return out


def perf_script(data, *fields):
    p = perf("script", "-i", data, *fields)
    assert p.returncode == 0, p.stderr
    return p.stdout


def perf_events(text):
    """{event: samples} of perf script text, counted independently of bpfprof:
    one sample line (not a frame, not blank) per sample, its event last."""
    n = {}
    for line in text.splitlines():
        m = re.search(r"\s\d+\.\d+:\s+\d+\s+(\S+):\s*$", line)
        if m and not line.startswith("\t"):
            n[m.group(1)] = n.get(m.group(1), 0) + 1
    return n


def report_rows(text):
    """The function tables of a report: {function: (self, total)}."""
    rows = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0].replace(",", "").isdigit() and "." in cols[1]:
            rows[cols[-1]] = (int(cols[0].replace(",", "")), int(cols[2].replace(",", "")))
    return rows


def report_processes(text):
    """The "Samples by process" table: [(samples, pid or None, command)]."""
    out = []
    rows = text.split("Samples by process")[1].splitlines()[2:]
    for line in rows:
        m = re.match(r"\s*([\d,]+)\s+[\d.]+\s+(\d+|-)\s+(.*)$", line)
        if m:
            out.append((int(m.group(1).replace(",", "")),
                        None if m.group(2) == "-" else int(m.group(2)), m.group(3)))
    return out


@pytest.fixture(scope="module")
def perf_rec(tmp_path_factory):
    """Real perf recordings: busy under perf record -g with two events (its
    known split: leaf_a 2/3, leaf_b 1/3), and the whole machine (-a: kernel
    frames, [unknown], a process whose name has spaces and digits)."""
    d = tmp_path_factory.mktemp("perf")
    perf_record(d / "busy.data", "-e", "cpu-clock", "-e", "task-clock", "-F", "499", "-g",
                "--", wl("busy"), "3c")
    spaces = d / "spaces.py"
    spaces.write_text("import time\nopen('/proc/self/comm', 'w').write('my worker 1')\n"
                      "t = time.time()\nwhile time.time() - t < 30: pass\n")
    with Workload("/usr/bin/python3", spaces) as py, Workload(wl("syscalls"), 30):
        wait_for(lambda: Path(f"/proc/{py.pid}/comm").read_text() == "my worker 1\n",
                 "the Python workload to rename itself")
        perf_record(d / "all.data", "-a", "-g", "-F", "199", "--", "sleep", "2")
    return d


def test_perf_data_says_run_perf_script(perf_rec):
    """report/convert/diff of a perf.data file (its magic "PERFILE2", also on
    stdin): exit 1 with what it is and the perf script command to run."""
    data = perf_rec / "busy.data"
    for argv, kw in [(["report", data], {}), (["convert", data, "-o", perf_rec / "x.svg"], {}),
                     (["diff", data, data], {}),
                     (["report", "-"], {"input": data.read_bytes()})]:
        p = subprocess.run([str(BPFPROF)] + [str(a) for a in argv], capture_output=True,
                           timeout=60, **kw)
        err = p.stderr.decode()
        name = str(data) if "input" not in kw else "perf.data"
        assert p.returncode == 1, err
        assert "this is a perf.data file (perf record's binary format)" in err, err
        assert f"HINT: read perf script's text of it: perf script -i {name} > {name}.txt" in err
    assert not (perf_rec / "x.svg").exists()


def test_report_reads_perf_script(perf_rec):
    """perf script's default output, by path and piped: every sample of the
    event with the most is counted (and the other event named in a warning,
    then read with --event), with the workload's known split; convert and
    diff read it too."""
    text = perf_script(perf_rec / "busy.data")
    (perf_rec / "busy.txt").write_text(text)
    events = perf_events(text)
    assert set(events) == {"cpu-clock", "task-clock"}, events
    # The event with the most samples is read (a tie: the first in the file).
    order = [m.group(1) for m in re.finditer(r"\s\d+\.\d+:\s+\d+\s+(\S+):\s*$", text, re.M)]
    first = max(events, key=lambda e: (events[e], -order.index(e)))
    other = ({"cpu-clock", "task-clock"} - {first}).pop()
    p = run_bpfprof(["report", "--top", "0", perf_rec / "busy.txt"])
    assert f"bpfprof report: {events[first]:,} samples" in p.stdout, p.stdout
    assert (f"warning: {perf_rec / 'busy.txt'}: read the {events[first]} samples of {first}, "
            f"the event with the most; left out {other} {events[other]}") in p.stderr, p.stderr
    rows = report_rows(p.stdout)
    a, b = rows["leaf_a"][0], rows["leaf_b"][0]
    assert_share(a / (a + b), 2 / 3, a + b, "leaf_a's share in perf's samples", floor=0.02)
    assert rows["outer_loop"][1] >= a + b and rows["main"][1] >= a + b
    # --event reads the other; piped the same as by path.
    p = run_bpfprof(["report", "--event", other, "-"], input=text)
    assert f"bpfprof report: {events[other]:,} samples" in p.stdout and "warning" not in p.stderr
    # convert: folded with perf's frames, a flame graph; diff against itself.
    folded = parse_folded(run_bpfprof(["convert", perf_rec / "busy.txt"]).stdout)
    assert total(folded) == events[first]
    assert any(s.endswith("main;run;outer_loop;leaf_a") for s in folded), folded
    run_bpfprof(["convert", perf_rec / "busy.txt", "-o", perf_rec / "busy.svg"])
    assert b"leaf_a" in (perf_rec / "busy.svg").read_bytes()
    d = run_bpfprof(["diff", perf_rec / "busy.txt", perf_rec / "busy.txt"]).stdout
    assert "No function's share changed." in d, d


def test_report_reads_perf_script_of_the_whole_machine(perf_rec):
    """perf record -a -g: the CPU field, kernel frames ("_[k]"), [unknown]
    frames, and a command name with spaces and digits, with -F +pid its pid;
    --comm selects it, --pid needs perf script's pids."""
    text = perf_script(perf_rec / "all.data")
    (perf_rec / "all.txt").write_text(text)
    assert re.search(r"^\S.* \d+ \[\d{3}\] +\d+\.\d+:", text, re.M), text[:500]
    events = perf_events(text)
    folded = parse_folded(run_bpfprof(["convert", perf_rec / "all.txt"]).stdout)
    assert total(folded) == events["cpu-clock:ppp"], events
    assert any(f.endswith("_[k]") for s in folded for f in s.split(";")), "no kernel frames"
    assert any("[unknown]" in s.split(";") for s in folded)
    assert total(folded, "my worker 1") > 0 and total(folded, "syscalls") > 0
    # Default fields have thread ids only: --pid says how to get pids.
    p = run_bpfprof(["report", "--pid", "1", perf_rec / "all.txt"], check=False)
    assert p.returncode == 2, p.stderr
    assert "perf script printed thread ids only" in p.stderr
    assert "HINT: print the pids too: perf script -F +pid" in p.stderr
    with_pid = perf_script(perf_rec / "all.data", "-F", "+pid")
    p = run_bpfprof(["report", "--comm", "my worker 1", "-"], input=with_pid)
    procs = report_processes(p.stdout)
    assert procs and all(c == "my worker 1" and pid for _, pid, c in procs), p.stdout
    pid = procs[0][1]
    p = run_bpfprof(["report", "--pid", pid, "-"], input=with_pid)
    assert {c for _, _, c in report_processes(p.stdout)} == {"my worker 1"}, p.stdout
    assert sum(n for n, _, _ in report_processes(p.stdout)) == total(folded, "my worker 1")


def test_tenant_name_cannot_spoil_a_perf_script_report(tenant_dir, tmp_path):
    """Attack: a tenant's process renames itself, while perf records the
    machine, to a name with a new line and perf's own fields in it (the 15
    bytes "e\\nx 1 1.0: 9 e:"), which perf script prints as they are: "e" on
    one line, "x 1 1.0: 9 e:  PID [CPU] TIME: ..." on the next. root's report of that text still reads
    every sample of root's workload (counted independently here), leaves out
    only what it cannot read, and says how much; before, the first such
    line made the whole file unreadable, and a forged sample line first in
    the file chose the event read."""
    evil = tenant_dir / "evil.py"
    # It renames itself again and again, so that perf, whenever it starts,
    # records the name from the kernel as it is (not escaped, as /proc shows it).
    evil.write_text("import sys, time\nt = time.time()\nn = 0\n"
                    "while time.time() - t < 8:\n"
                    "    n += 1\n"
                    "    if n % 20000 == 0:\n"
                    "        open('/proc/self/comm', 'w').write(sys.argv[1 + n // 20000 % 2])\n")
    evil.chmod(0o755)
    data = tmp_path / "all.data"
    with Workload(wl("busy"), 30) as busy:
        attacker = subprocess.Popen(as_tenant(["/usr/bin/python3", evil, "e\nx 1 1.0: 9 e:",
                                                "evil"]))
        try:
            perf_record(data, "-a", "-g", "-F", "199", "--", "sleep", "3")
        finally:
            attacker.wait(timeout=60)
    text = perf_script(data, "-F", "+pid")
    assert "\nx 1 1.0: 9 e: " in text, "perf did not print the name as it is"
    # Root's workload, counted here: its sample lines ("busy PID/TID [CPU] TIME: ...").
    want = len(re.findall(rf"^busy\s+{busy.pid}/\d+\s+\[\d+\]\s+\d+\.\d+:", text, re.M))
    assert want > 50, want
    p = run_bpfprof(["report", "--top", "0", "-"], input=text)
    assert p.returncode == 0, p.stderr
    got = sum(n for n, pid, c in report_processes(p.stdout) if pid == busy.pid)
    assert got == want, (got, want, p.stderr)
    assert re.search(r"left out \d+ unreadable samples? \(first: line \d+: expected a sample",
                     p.stderr), p.stderr
    assert "the event with the most" not in p.stderr or "left out e " in p.stderr


def test_svg_and_speedscope_inputs_say_what_they_are(tmp_path):
    src = tmp_path / "a.folded"
    src.write_text("app;main;f 3\n")
    for name, needle in [("a.svg", "this is an SVG image (a bpfprof flame graph), which cannot "
                                   "be read back into a profile"),
                         ("a.svgz", "this is a gzip-compressed SVG image (a bpfprof flame graph)"),
                         ("a.speedscope.json", "this is a speedscope file, which bpfprof "
                                               "writes but does not read")]:
        run_bpfprof(["convert", src, "-o", tmp_path / name])
        p = run_bpfprof(["report", tmp_path / name], check=False)
        assert p.returncode == 1 and needle in p.stderr, p.stderr
        assert "HINT: read the profile it was" in p.stderr, p.stderr


# --- 14: report/convert/diff --pid and --comm ----------------------------------------

@pytest.fixture(scope="module")
def all_pb(tmp_path_factory):
    """A profile of several processes - two busy ones (one name, two pids)
    and syscalls - as -a makes them; -p keeps it to these three, so other
    work on the machine does not make it slow to write."""
    d = tmp_path_factory.mktemp("select")
    with Workload(wl("busy"), 30) as a, Workload(wl("busy"), 30) as b, \
            Workload(wl("syscalls"), 30) as s:
        run_bpfprof(["-p", f"{a.pid},{b.pid},{s.pid}", "-d", "3", "-o", d / "all.pb.gz"],
                    timeout=300)
        return d, a.pid, b.pid


def test_report_selects_pid_and_comm(all_pb):
    """--pid and --comm keep only those processes' samples, every one of them
    (the counts the unselected report shows), in report, convert and diff."""
    d, a, b = all_pb
    full = report_processes(run_bpfprof(["report", "--top", "0", d / "all.pb.gz"]).stdout)
    of = {pid: n for n, pid, c in full}
    assert of.get(a) and of.get(b), full
    p = run_bpfprof(["report", "--top", "0", "--pid", a, d / "all.pb.gz"])
    assert report_processes(p.stdout) == [(of[a], a, "busy")], p.stdout
    p = run_bpfprof(["report", "--top", "0", "--pid", f"{a},{b}", d / "all.pb.gz"])
    assert sorted(pid for _, pid, _ in report_processes(p.stdout)) == sorted([a, b])
    busy = sum(n for n, _, c in full if c == "busy")
    p = run_bpfprof(["report", "--top", "0", "--comm", "busy", d / "all.pb.gz"])
    assert sum(n for n, _, _ in report_processes(p.stdout)) == busy, p.stdout
    # Both: the samples that match both (as perf report combines them).
    p = run_bpfprof(["report", "--comm", "busy,syscalls", "--pid", b, d / "all.pb.gz"])
    assert [pid for _, pid, _ in report_processes(p.stdout)] == [b]
    # convert: the flame graph of one process; folded keeps the name.
    out = run_bpfprof(["convert", "--pid", a, d / "all.pb.gz"]).stdout
    assert total(parse_folded(out)) == of[a] and total(parse_folded(out), "busy") == of[a]
    run_bpfprof(["convert", "--pid", a, d / "all.pb.gz", "-o", d / "a.pb.gz"])
    again = report_processes(run_bpfprof(["report", d / "a.pb.gz"]).stdout)
    assert again == [(of[a], a, "busy")]
    # diff: one program of two whole-machine profiles.
    text = run_bpfprof(["diff", "--comm", "busy", d / "all.pb.gz", d / "a.pb.gz"]).stdout
    assert "bpfprof diff:" in text


def test_select_errors(all_pb, tmp_path):
    """--pid on folded text (no pids): exit 2, says why and what works; a pid
    not in the profile: exit 1, the hint lists the busiest processes."""
    d, a, b = all_pb
    folded = tmp_path / "all.folded"
    run_bpfprof(["convert", d / "all.pb.gz", "-o", folded])
    for cmd in (["report"], ["convert"], ["diff", folded]):
        p = run_bpfprof(cmd + ["--pid", a, folded], check=False)
        assert p.returncode == 2, p.stderr
        assert p.stderr.splitlines() == [
            f"bpfprof: --pid cannot select in {folded}: folded text has no process ids, "
            "only names",
            "HINT: --comm NAME selects by name; a pprof profile (-o x.pb.gz) keeps the pids"]
    p = run_bpfprof(["report", "--comm", "busy", folded])
    assert "busy" in p.stdout
    p = run_bpfprof(["report", "--pid", "4194304", d / "all.pb.gz"], check=False)
    assert p.returncode == 1, p.stderr
    assert "no samples of the processes --pid and --comm select" in p.stderr
    assert re.search(r"HINT: the busiest processes in it: .*busy \(pid \d+\)", p.stderr), p.stderr
    for bad, msg in [(["--pid", "x"], "invalid --pid 'x'"), (["--comm", ""], "invalid --comm ''"),
                     (["--comm", "a,,b"], "invalid --comm")]:
        p = run_bpfprof(["report"] + bad + [folded], check=False)
        assert p.returncode == 2 and msg in p.stderr, p.stderr
    p = run_bpfprof(["report", "--event", "cycles", folded], check=False)
    assert p.returncode == 2 and "--event chooses among the events of perf script" in p.stderr
    for cmd in ("report", "convert", "diff"):
        h = run_bpfprof([cmd, "--help"]).stdout
        assert "--pid PID[,PID...]" in h and "--comm NAME[,NAME...]" in h and "--event" in h


# --- 17: make demo ----------------------------------------------------------------------

def test_demo_report_shows_modules_and_pids(tmp_path):
    """tools/demo.sh (make demo): its report has each function's file and
    each process's pid (it reads the pprof profile, not the folded text, which
    has neither), and it still leaves the folded profile and the flame graph."""
    out = tmp_path / "demo.folded"
    p = subprocess.run([str(ROOT / "tools" / "demo.sh")], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env=dict(os.environ, DEMO_OUT=str(out)))
    assert p.returncode == 0, p.stdout + p.stderr
    text = p.stdout
    assert parse_folded(out.read_text()) and ET.parse(tmp_path / "demo.svg")
    rows = [ln for ln in text.split("by self samples")[1].split("Samples by process")[0]
            .splitlines() if re.match(r"\s*[\d,]+\s+[\d.]+\s", ln)]
    assert rows, text
    # Self % Total % Module Function, the module as wide as the header says (12-40).
    head = next(ln for ln in text.splitlines() if "  Module " in ln)
    mw = head.index("Function") - head.index("Module") - 2
    assert 12 <= mw <= 40, head
    cols = [re.match(r"\s*[\d,]+\s+[\d.]+\s+[\d,]+\s+[\d.]+  (.{%d})  (.*)$" % mw, ln)
            for ln in rows]
    assert all(cols), rows
    # (Other programs on the machine may have a leaf_a too, and [unknown] has no file.)
    named = [m for m in cols if m.group(2) != "[unknown]"]
    assert sum(1 for m in named if m.group(1).strip()) >= 0.8 * len(named), text
    assert not any(m.group(2) in ("leaf_a", "leaf_b") and not m.group(1).strip()
                   for m in cols), text
    # Every process has its pid (a busy machine may push busy out of the 15).
    procs = report_processes(text)
    assert procs and all(pid is not None for _, pid, _ in procs), text
    for line in [f"demo: folded profile: {out} ", f"demo: flame graph:    {tmp_path / 'demo.svg'} "]:
        assert line in text, text
    assert (tmp_path / "demo.pb.gz").read_bytes()[:2] == b"\x1f\x8b"

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Output formats on real recorded profiles, checked with the tools people use:
go tool pprof, headless Chromium, speedscope's own schema; plus report,
convert, diff, format selection, errors and the live status line.

The workload is build/workloads/busy: main;run;outer_loop;leaf_a (2/3 of the
time) and leaf_b (1/3). Tools that are missing make the tests fail saying how
to install them (tools/install-deps.sh), never skip.
"""
import gzip
import json
import os
import pty
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (BPFPROF, ROOT, Workload, count_with, has_chain, parse_folded, read_tty,
                      run_bpfprof, total, wl, assert_most, assert_share)

JS = ROOT / "tests" / "integration" / "js"
NODE_MODULES = ROOT / "tests" / "node_modules"
CHAIN = ["main", "run", "outer_loop"]
SVG_NS = "{http://www.w3.org/2000/svg}"


def need(tool):
    path = shutil.which(tool)
    assert path, f"{tool} is not installed: run tools/install-deps.sh (as root)"
    return path


def node(script, *args, timeout=120):
    need("node")
    assert (NODE_MODULES / "playwright-core").is_dir() and (NODE_MODULES / "ajv").is_dir(), \
        "tests/node_modules is missing: run tools/install-deps.sh (npm ci --prefix tests)"
    return subprocess.run([need("node"), str(JS / script)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def go_pprof(*args):
    p = subprocess.run([need("go"), "tool", "pprof"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=os.environ.get("HOME", "/root"),
                                PPROF_TMPDIR="/tmp"))
    assert p.returncode == 0, f"go tool pprof {args} failed:\n{p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    """One busy process recorded by five bpfprof runs at once, one per format
    (chosen by the -o extension), plus one with -f overriding the extension."""
    d = tmp_path_factory.mktemp("rec")
    names = ["busy.folded", "busy.pb.gz", "busy.svg", "busy.speedscope.json", "busy.txt"]
    with Workload(wl("busy"), 30) as w:
        # 8 s, ~800 samples: 5 sigmas of leaf_a's 2/3 share is +-0.08.
        procs = [subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "-d", "8", "-o", str(d / n)],
                                  stderr=subprocess.PIPE, text=True) for n in names]
        procs.append(subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "-d", "8", "-f", "pprof",
                                       "-o", str(d / "override.folded")],
                                      stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            assert "\r" not in err, "status line written to a non-terminal"
    return d


def leaf_split(folded):
    a = count_with(folded, lambda s: has_chain(s, CHAIN + ["leaf_a"]))
    b = count_with(folded, lambda s: has_chain(s, CHAIN + ["leaf_b"]))
    return a, b


def assert_leaf_a_share(a, b, what):
    """busy: leaf_a does 2/3 of the work (tolerance from the sample count)."""
    assert_share(a / (a + b), 2 / 3, a + b, f"leaf_a's share in {what}", floor=0.02)


def leaf_samples(rec):
    """leaf_a + leaf_b samples of a recording made at the same time, for
    outputs that show shares without counts (flame graph widths)."""
    return sum(leaf_split(parse_folded((rec / "busy.folded").read_text())))


# --- format selection --------------------------------------------------------------

def test_format_from_extension_and_override(rec):
    folded = parse_folded((rec / "busy.folded").read_text())
    a, b = leaf_split(folded)
    assert_most(a + b, total(folded), "leaf_a or leaf_b in busy.folded")
    assert_leaf_a_share(a, b, "busy.folded")
    assert (rec / "busy.pb.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert ET.parse(rec / "busy.svg").getroot().tag == SVG_NS + "svg"
    assert json.loads((rec / "busy.speedscope.json").read_text())["$schema"].startswith(
        "https://www.speedscope.app/")
    assert (rec / "busy.txt").read_text().startswith("bpfprof report:")
    # -f wins over the extension.
    assert (rec / "override.folded").read_bytes()[:2] == b"\x1f\x8b"


def test_help_lists_formats_and_commands():
    out = run_bpfprof(["--help"]).stdout
    for fmt in ["folded", "svg", "pprof", "speedscope", "report", ".pb.gz", ".speedscope.json"]:
        assert fmt in out
    for cmd in ["report", "convert", "diff"]:
        p = run_bpfprof([cmd, "--help"])
        assert p.stdout.startswith(f"Usage: bpfprof {cmd}") and "Examples:" in p.stdout


# --- pprof ---------------------------------------------------------------------------

def test_go_tool_pprof_reads_recorded_profile(rec):
    pb = rec / "busy.pb.gz"
    top = go_pprof("-top", "-nodefraction=0", "-sample_index=samples", pb)
    flat = {}
    for line in top.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+)%\s+[\d.]+%\s+(\d+)\s+([\d.]+)%\s+(\S+)$", line)
        if m:
            flat[m.group(5)] = (int(m.group(1)), float(m.group(2)), float(m.group(4)))
    assert "leaf_a" in flat and "leaf_b" in flat, top
    assert_leaf_a_share(flat["leaf_a"][0], flat["leaf_b"][0], "go tool pprof -top")
    for fn in CHAIN:
        assert flat[fn][2] >= 90, f"{fn} cum% {flat[fn][2]}:\n{top}"

    # The default sample type is cpu time: samples x 1e9/99 Hz.
    cpu = go_pprof("-top", pb)
    assert "Type: cpu" in cpu and re.search(r"Duration: 8", cpu), cpu

    # Call chains, leaf first, with the process labels.
    traces = go_pprof("-traces", pb)
    blocks = traces.split("-----------+-------------------------------------------------------")
    chains = []
    for blk in (b for b in blocks[1:] if b.strip()):
        frames = [ln.split()[-1] for ln in blk.strip().splitlines()
                  if ln.strip() and ":" not in ln.split()[0]]
        chains.append(frames)
        assert "comm:  busy" in blk and re.search(r"pid:  \d+", blk), blk
    assert any(c[:4] == ["leaf_a", "outer_loop", "run", "main"] for c in chains), traces
    assert any(c[:4] == ["leaf_b", "outer_loop", "run", "main"] for c in chains), traces


def test_pprof_matches_folded_of_same_profile(rec, tmp_path):
    """Same data both ways: pprof converted from the folded recording shows the
    folded counts exactly, per function."""
    folded = parse_folded((rec / "busy.folded").read_text())
    run_bpfprof(["convert", rec / "busy.folded", "-o", tmp_path / "c.pb.gz"])
    top = go_pprof("-top", "-nodecount=100000", "-nodefraction=0", tmp_path / "c.pb.gz")
    counts = {}
    for line in top.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(\S+)$", line)
        if m:
            counts[m.group(2)] = int(m.group(1))
    want = {}
    for stack, n in folded.items():
        leaf = stack.split(";")[-1]
        if ";" in stack:
            leaf = re.sub(r"_\[k\]$", "", leaf)
            want[leaf] = want.get(leaf, 0) + n
    assert {k: v for k, v in counts.items() if v} == want, top


def test_pprof_mappings_have_build_ids(rec):
    raw = go_pprof("-raw", rec / "busy.pb.gz")
    mappings = raw.split("Mappings")[1]
    line = next(ln for ln in mappings.splitlines() if ln.rstrip().endswith("busy") or "/busy " in ln)
    want = subprocess.run(["readelf", "-n", wl("busy")], capture_output=True, text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", want).group(1)
    assert bid in line, f"{line!r} lacks {bid}"


# --- SVG ------------------------------------------------------------------------------

def test_svg_well_formed_self_contained(rec):
    root = ET.parse(rec / "busy.svg").getroot()
    texts = {t.get("id"): "".join(t.itertext()) for t in root.iter(SVG_NS + "text")}
    assert texts["title"] == "CPU flame graph"
    sub = texts["subtitle"]
    assert os.uname().nodename in sub and "at 99 Hz" in sub and "samples" in sub, sub
    scripts = list(root.iter(SVG_NS + "script"))
    data = json.loads(next(s.text for s in scripts if s.get("id") == "fg-data"))
    assert {"leaf_a", "leaf_b", "outer_loop", "run", "main", "busy"} <= set(data["labels"])
    body = (rec / "busy.svg").read_text()
    assert "http://" not in body.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in body and "href" not in body


def test_svg_renders_zooms_and_searches_in_chromium(rec):
    need("chromium")
    p = node("svg_browser.js", rec / "busy.svg", "leaf_b", "leaf_a")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["errors"] == [] and r["requests"] == [], r
    init = r["initial"]
    assert not init["loading"], "the script did not run"
    names = {f["text"] for f in init["frames"]}
    assert {"all", "busy", "main", "run", "outer_loop", "leaf_a", "leaf_b"} <= names
    width = {f["text"]: f["width"] for f in init["frames"] if f["text"]}
    share = width["leaf_a"] / (width["leaf_a"] + width["leaf_b"])
    assert_share(share, 2 / 3, leaf_samples(rec), "leaf_a's width in the flame graph", floor=0.02)
    tip = next(f["title"] for f in init["frames"] if f["text"] == "leaf_a")
    assert re.search(r"^leaf_a \[user\]\n[\d,]+ samples, [\d.]+%$", tip), tip
    assert r["hover"].startswith("leaf_b [user] \u00b7 ") and "samples" in r["hover"]
    assert init["reset"] == "btn off"

    # Click on leaf_b: it fills the width, its ancestors are faded, leaf_a is gone.
    z = r["zoomed"]
    leaf_b = next(f for f in z["frames"] if f["text"] == "leaf_b")
    assert leaf_b["width"] >= 1170 and leaf_b["cls"] == ""
    assert all(f["cls"] == "anc" for f in z["frames"] if f["text"] in CHAIN)
    assert not any(f["text"] == "leaf_a" for f in z["frames"])
    assert z["reset"] == "btn"

    # Ctrl+F "leaf_a": the matched share is leaf_a's, recursion-free.
    m = re.match(r"Matched: ([\d.]+)% \(([\d,]+) of ([\d,]+) samples\)", r["searched"]["matched"])
    assert m, r["searched"]["matched"]
    assert 58 <= float(m.group(1)) <= 75
    assert r["searched"]["search"] == "Clear search"

    # Reset zoom: leaf_a is back, highlighted as a match; other frames are not.
    back = r["reset"]
    fills = {f["text"]: f["fill"] for f in back["frames"] if f["text"]}
    assert fills["leaf_a"] == "rgb(230,0,230)" and fills["leaf_b"] != "rgb(230,0,230)"
    assert back["reset"] == "btn off"


def test_svg_50k_stacks_stays_small_and_fast(tmp_path):
    """50,000 distinct stacks (synthetic, fixed seed): the file stays a few MB
    and Chromium draws it within seconds."""
    import random
    rnd = random.Random(7)
    names = [f"fn_{i}" for i in range(3000)]
    kids = {}  # a fixed random program: each call path has a few possible callees
    lines = {}
    while len(lines) < 50000:
        fr = [rnd.choice(["app", "db", "worker"])]
        h = 0
        for _ in range(rnd.randint(4, 30)):
            if h not in kids:
                kids[h] = [rnd.randrange(3000) for _ in range(rnd.choice([1, 2, 3, 5, 8]))]
            c = rnd.choice(kids[h])
            fr.append(names[c])
            h = hash((h, c))
        s = ";".join(fr)
        lines[s] = lines.get(s, 0) + max(1, int(rnd.paretovariate(1.2)))
    src = tmp_path / "big.folded"
    src.write_text("".join(f"{s} {n}\n" for s, n in lines.items()))
    t0 = time.time()
    run_bpfprof(["convert", src, "-o", tmp_path / "big.svg"])
    assert time.time() - t0 < 10
    size = (tmp_path / "big.svg").stat().st_size
    assert size < 8 << 20, f"{size} bytes"
    ET.parse(tmp_path / "big.svg")
    need("chromium")
    p = node("svg_browser.js", tmp_path / "big.svg", "app", "fn_1")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["errors"] == []
    assert len(r["initial"]["frames"]) < 20000
    assert r["loadMs"] < 15000, r["loadMs"]


# --- speedscope --------------------------------------------------------------------

def test_speedscope_validates_against_its_schema(rec, tmp_path):
    merged = tmp_path / "merged.speedscope.json"
    run_bpfprof(["convert", rec / "busy.folded", "--merge", "-o", merged])
    p = node("validate_speedscope.js", rec / "busy.speedscope.json", merged)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((rec / "busy.speedscope.json").read_text())
    prof = doc["profiles"][0]
    assert prof["type"] == "sampled" and re.match(r"busy \(pid \d+\)$", prof["name"])
    assert sum(prof["weights"]) == prof["endValue"]
    frames = [f["name"] for f in doc["shared"]["frames"]]
    stacks = [[frames[i] for i in s] for s in prof["samples"]]
    a = sum(w for s, w in zip(stacks, prof["weights"]) if s[-4:] == CHAIN + ["leaf_a"])
    b = sum(w for s, w in zip(stacks, prof["weights"]) if s[-4:] == CHAIN + ["leaf_b"])
    assert_leaf_a_share(a, b, "speedscope")
    m = json.loads(merged.read_text())
    assert len(m["profiles"]) == 1 and m["profiles"][0]["name"] == "all processes"


# --- report ----------------------------------------------------------------------------

def report_self_share(text, fn):
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[-1] == fn and cols[0].replace(",", "").isdigit():
            return float(cols[1])
    raise AssertionError(f"{fn} not in report:\n{text}")


def test_report_on_recorded_profile(rec):
    for text in [run_bpfprof(["report", rec / "busy.folded"]).stdout,
                 run_bpfprof(["report", rec / "busy.pb.gz"]).stdout,
                 (rec / "busy.txt").read_text()]:
        assert 58 <= report_self_share(text, "leaf_a") <= 75, text
        assert "Top" in text and "by total samples" in text and "Samples by process" in text
        assert all(len(line) <= 80 for line in text.splitlines())
    t = run_bpfprof(["report", "--top", "1", "--sort", "total", rec / "busy.folded"]).stdout
    assert "by self" not in t and "Top 1 function by total" in t


# --- convert ---------------------------------------------------------------------------

def test_convert_round_trip_folded_pprof_folded(rec, tmp_path):
    src = rec / "busy.folded"
    run_bpfprof(["convert", src, "-o", tmp_path / "a.pb.gz"])
    run_bpfprof(["convert", tmp_path / "a.pb.gz", "-o", tmp_path / "b.folded"])
    assert parse_folded((tmp_path / "b.folded").read_text()) == parse_folded(src.read_text())
    # Uncompressed pprof is detected too; several inputs add up; stdin works.
    (tmp_path / "raw.pprof").write_bytes(gzip.decompress((tmp_path / "a.pb.gz").read_bytes()))
    two = run_bpfprof(["convert", tmp_path / "raw.pprof", src]).stdout
    want = {k: 2 * v for k, v in parse_folded(src.read_text()).items()}
    assert parse_folded(two) == want
    p = run_bpfprof(["convert", "-", "-f", "folded"], input=src.read_text())
    assert parse_folded(p.stdout) == parse_folded(src.read_text())


def test_convert_reads_recorded_pprof(rec, tmp_path):
    out = run_bpfprof(["convert", rec / "busy.pb.gz"]).stdout
    folded = parse_folded(out)
    a, b = leaf_split(folded)
    assert_most(a + b, total(folded), "leaf_a or leaf_b in the converted pprof")
    assert_leaf_a_share(a, b, "the converted pprof")


# --- diff ----------------------------------------------------------------------------------

def test_diff_shows_changed_frame(rec, tmp_path):
    before = tmp_path / "before.folded"
    after = tmp_path / "after.folded"
    before.write_text("app;main;run;leaf_a 200\napp;main;run;leaf_b 100\n")
    after.write_text("app;main;run;leaf_a 100\napp;main;run;leaf_b 200\napp;main;new 30\n")
    text = run_bpfprof(["diff", before, after]).stdout
    rows = [ln for ln in text.splitlines() if ln.endswith(("leaf_a", "leaf_b", "new"))]
    assert rows[0].split()[-1] in ("leaf_a", "leaf_b"), text
    row = {ln.split()[-1]: ln.split() for ln in rows}
    assert float(row["leaf_a"][2]) < -30 and float(row["leaf_b"][2]) > 25, text
    assert float(row["new"][1]) > 9

    run_bpfprof(["diff", before, after, "-o", tmp_path / "d.svg"])
    root = ET.parse(tmp_path / "d.svg").getroot()
    data = json.loads(next(s.text for s in root.iter(SVG_NS + "script") if s.get("id") == "fg-data"))
    assert data["diff"] == 1
    # A real recording against the synthetic "before": busy's leaf_a grew.
    run_bpfprof(["diff", before, rec / "busy.folded", "-o", tmp_path / "real.txt"])
    real = (tmp_path / "real.txt").read_text()
    assert "bpfprof diff:" in real and "outer_loop" in real

    need("chromium")
    p = node("svg_browser.js", tmp_path / "d.svg", "leaf_b", "leaf_a")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    fills = {f["text"]: f["fill"] for f in r["initial"]["frames"] if f["text"]}
    red = lambda c: tuple(int(x) for x in re.findall(r"\d+", c))
    rb, gb, bb = red(fills["leaf_b"])
    ra, ga, ba = red(fills["leaf_a"])
    assert rb > bb, f"leaf_b grew but is {fills['leaf_b']}"
    assert ba > ra, f"leaf_a shrank but is {fills['leaf_a']}"
    tip = next(f["title"] for f in r["initial"]["frames"] if f["text"] == "leaf_a")
    assert "before: 200 samples" in tip and "change: -" in tip


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("args,code,needle", [
    (["convert"], 2, "no input files"),
    (["convert", "x.folded", "-f", "nope"], 2, "unknown format 'nope'"),
    (["convert", "/nonexistent/in.folded"], 1, "cannot read /nonexistent/in.folded: No such file"),
    (["report", "--sort", "middle", "x"], 2, "invalid --sort 'middle'"),
    (["report", "--top", "-3", "x"], 2, "invalid --top"),
    (["report", "-f", "svg", "x"], 2, "takes no -f"),
    (["diff", "only-one.folded"], 2, "expected two profiles"),
    (["diff", "a", "b", "-o", "x.html"], 2, "cannot tell the format of x.html"),
    (["diff", "a", "b", "-f", "pprof"], 2, "unknown diff format 'pprof'"),
    (["convert", "--bogus", "x"], 2, "unknown option '--bogus'"),
])
def test_offline_usage_and_input_errors(args, code, needle):
    p = run_bpfprof(args, check=False)
    assert p.returncode == code, (args, p.stderr)
    assert needle in p.stderr, p.stderr
    assert p.stderr.startswith("bpfprof: ")
    assert p.stdout == ""


def test_corrupt_input_names_file_and_writes_nothing(rec, tmp_path):
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes((rec / "busy.pb.gz").read_bytes()[:40])
    out = tmp_path / "out.svg"
    p = run_bpfprof(["convert", rec / "busy.folded", bad, "-o", out], check=False)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines()[0] == \
        f"bpfprof: cannot read {bad}: corrupt or truncated gzip data"
    assert not out.exists() and not list(tmp_path.glob("out.svg.tmp*"))
    txt = tmp_path / "bad.folded"
    txt.write_text("a;b 1\nbroken line\n")
    p = run_bpfprof(["report", txt], check=False)
    assert p.returncode == 1 and f"cannot read {txt}: line 2:" in p.stderr
    p = run_bpfprof(["convert", rec / "busy.folded", "-o", "/nonexistent-dir/x.svg"], check=False)
    assert p.returncode == 2 and "cannot write /nonexistent-dir/x.svg" in p.stderr


# --- live status ------------------------------------------------------------------------------

def test_live_status_on_a_terminal_only(tmp_path):
    with Workload(wl("busy"), 30) as w:
        master, slave = pty.openpty()
        p = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "-d", "3.5", "-o",
                              str(tmp_path / "s.folded")], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        try:
            out = read_tty(master, 60, p).decode()
        finally:
            os.close(master)
        p.wait(timeout=30)
    updates = re.findall(r"\r\x1b\[Kbpfprof: (\d+) s of 3.5 s, (\d+) samples?", out)
    assert len(updates) >= 2, repr(out)
    assert [int(s) for s, _ in updates] == sorted(int(s) for s, _ in updates)
    assert int(updates[-1][1]) > 0
    # The summary starts on a cleared line and is whole.
    assert re.search(r"\r\x1b\[Kbpfprof: \d+ samples? in [\d.]+ s, \d+ lost; \d+ distinct stacks\r?\n",
                     out), repr(out)
    assert p.returncode == 0

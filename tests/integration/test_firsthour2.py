# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""What a new user trips over in the first hour, round two (session 10):
`perf script | bpfprof report` without '-', report's Module column cut at 12
columns, an allocation profile with nothing in it written without a word,
Ctrl-C during the load sampling on, `.SVG` and `.pb` endings refused, a
silent convert, count's "no function matches" exit status, and "1 intervals".
"""
import os
import pty
import re
import subprocess

import pytest

from conftest import BPFPROF, run_bpfprof, wl

FOLDED = "app;main;work 30\napp;main;idle 10\n"
NO_FILE = "there is no default file, as perf.data is for perf report"
READING_STDIN = "no input file named: reading standard input (as 'bpfprof report -')"


def bpfprof(args, timeout=60, **kw):
    return subprocess.run([str(BPFPROF)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, **kw)


# --- 1. `... | bpfprof report` without '-' ------------------------------------------

def test_report_reads_a_pipe_without_dash():
    """perf script | bpfprof report: stdin read as if '-' were given, and said
    (a pipe nobody writes would otherwise look like a hang)."""
    p = bpfprof(["report"], input=FOLDED)
    assert p.returncode == 0, p.stderr
    assert READING_STDIN in p.stderr, p.stderr
    assert "bpfprof report: 40 samples" in p.stdout, p.stdout
    assert "work" in p.stdout and "idle" in p.stdout, p.stdout
    # -q: the report, not the note.
    p = bpfprof(["report", "-q"], input=FOLDED)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "bpfprof report: 40 samples" in p.stdout, p.stdout


def test_report_reads_a_redirected_file(tmp_path):
    """bpfprof report < cpu.folded: a file on stdin that is not empty is read;
    an empty one is no input (the no-file message, not an empty report)."""
    f = tmp_path / "cpu.folded"
    f.write_text(FOLDED)
    with open(f) as stdin:
        p = bpfprof(["report"], stdin=stdin)
    assert p.returncode == 0, p.stderr
    assert "bpfprof report: 40 samples" in p.stdout, p.stdout
    empty = tmp_path / "empty"
    empty.write_text("")
    with open(empty) as stdin:
        p = bpfprof(["report"], stdin=stdin)
    assert p.returncode == 2, p.stderr
    assert NO_FILE in p.stderr and READING_STDIN not in p.stderr, p.stderr
    assert p.stdout == "", p.stdout


def test_report_with_stdin_on_dev_null_says_there_is_no_file():
    """CI runs with stdin on /dev/null: no hang, no empty report, the message."""
    p = bpfprof(["report"], stdin=subprocess.DEVNULL, timeout=20)
    assert p.returncode == 2, p.stderr
    assert NO_FILE in p.stderr and READING_STDIN not in p.stderr, p.stderr
    assert p.stdout == "", p.stdout


def test_report_with_stdin_on_a_terminal_says_there_is_no_file():
    """Typed at a prompt (stdin a terminal): the no-file message at once, not
    a wait for text typed at the terminal."""
    master, slave = pty.openpty()
    try:
        p = bpfprof(["report"], stdin=slave, timeout=20)
    finally:
        os.close(slave)
        os.close(master)
    assert p.returncode == 2, p.stderr
    assert NO_FILE in p.stderr and READING_STDIN not in p.stderr, p.stderr


def test_report_with_an_empty_pipe_says_it_is_empty():
    """true | bpfprof report: stdin read (it is a pipe), and found empty: exit 1."""
    p = bpfprof(["report"], input="")
    assert p.returncode == 1, p.stderr
    assert READING_STDIN in p.stderr and "cannot read stdin: empty file" in p.stderr, p.stderr


# --- 3. bpfprof --alloc -- CMD with nothing sampled says why ------------------------

def test_alloc_with_no_allocation_call_says_why(tmp_path):
    """`true` calls no allocator once the probes are in: the profile is
    written (empty), and a warning says why, as record says of 0 samples."""
    out = tmp_path / "a.pb.gz"
    p = run_bpfprof(["--alloc", "-o", out, "--", "true"], check=False)
    assert p.returncode == 0, p.stderr
    assert out.exists()
    assert "no allocation was sampled: the allocator functions probed were never called" \
        in p.stderr, p.stderr


def test_alloc_below_the_sampling_period_says_why(tmp_path):
    """A few hundred small allocations against one sample per GiB (a chance
    below 1e-5 of one): the warning names the calls, the period and --alloc=."""
    out = tmp_path / "a.folded"
    p = run_bpfprof(["--alloc=1G", "-o", out, "--", "sleep", "0.1"], check=False)
    assert p.returncode == 0, p.stderr
    assert out.exists()
    assert "no allocation was sampled: " in p.stderr, p.stderr
    assert "fewer bytes in all than one sample takes (one every 1073741824 bytes on average)" \
        in p.stderr, p.stderr
    assert "a smaller --alloc=BYTES" in p.stderr, p.stderr


def test_alloc_with_samples_says_nothing_of_it(tmp_path):
    """One sample every 64 bytes: samples, and no such warning."""
    out = tmp_path / "a.folded"
    p = run_bpfprof(["--alloc=64", "-o", out, "--", "sleep", "0.1"], check=False)
    assert p.returncode == 0, p.stderr
    assert out.read_text().strip(), p.stderr
    assert "no allocation was sampled" not in p.stderr, p.stderr


# --- 6. bpfprof convert says what it wrote -------------------------------------------

def test_convert_says_what_it_wrote(tmp_path):
    """As record does: one line, what was written where, in which format;
    nothing with -q, nothing when the profile goes to stdout."""
    src = tmp_path / "in.folded"
    src.write_text(FOLDED)
    out = tmp_path / "out.svg"
    p = run_bpfprof(["convert", src, "-o", out])
    assert p.stderr == f"bpfprof: wrote 40 samples to {out} (svg)\n", p.stderr
    assert out.read_text().startswith("<?xml"), out.read_text()[:100]
    p = run_bpfprof(["convert", "-q", src, "-o", tmp_path / "q.folded"])
    assert p.stderr == "", p.stderr
    p = run_bpfprof(["convert", src])
    assert p.stderr == "" and sorted(p.stdout.splitlines()) == sorted(FOLDED.splitlines()), \
        (p.stdout, p.stderr)
    one = tmp_path / "one.folded"
    one.write_text("app;main 1\n")
    p = run_bpfprof(["convert", one, "-o", tmp_path / "one.pb.gz"])
    assert p.stderr == f"bpfprof: wrote 1 sample to {tmp_path / 'one.pb.gz'} (pprof)\n", \
        p.stderr
    # diff -o says it too (its two profiles' samples are in the file's title).
    p = run_bpfprof(["diff", src, one, "-o", tmp_path / "d.svg"])
    assert p.stderr == f"bpfprof: wrote {tmp_path / 'd.svg'} (svg)\n", p.stderr
    p = run_bpfprof(["diff", "-q", src, one, "-o", tmp_path / "e.svg"])
    assert p.stderr == "", p.stderr


# --- 4. Ctrl-C during the load ends the run, no sampling after it --------------------

def sigint_during_load(argv, timeout=60):
    """Runs bpfprof, sends SIGINT as soon as it catches SIGINT (stop.h's
    handler, installed just before the program load: far before sampling,
    which takes the load's 100 ms or more): (returncode, stdout, stderr, s
    from the signal to the exit)."""
    import signal
    import time
    # The load made 5 s longer (or until the stop): the signal lands in it
    # however fast this machine loads the program.
    p = subprocess.Popen([str(BPFPROF)] + [str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, BPFPROF_TEST_LOAD_DELAY_MS="5000"))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    cgt = next(ln for ln in f if ln.startswith("SigCgt:"))
            except (OSError, StopIteration):
                cgt = "SigCgt: 0"
            if int(cgt.split()[1], 16) & (1 << (signal.SIGINT - 1)):
                break
            time.sleep(0.0005)
        else:
            raise AssertionError("bpfprof never caught SIGINT")
        p.send_signal(signal.SIGINT)
        t = time.monotonic()
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out.decode(), err.decode(), time.monotonic() - t
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("fmt", ["folded", "pb.gz"])
def test_ctrl_c_during_the_load_samples_nothing_and_writes_the_profile(tmp_path, fmt):
    """perf record interrupted early still writes its file: so does bpfprof,
    with no sample taken after the Ctrl-C (it sampled on while kallsyms was
    read: 0.6-0.9 s of a busy machine's samples in a profile stopped during
    the load), and without "sampling ..." first."""
    out = tmp_path / f"p.{fmt}"
    rc, _, err, took = sigint_during_load(["-a", "-F", "999", "-d", "30", "-o", out])
    assert rc == 0, err
    assert "stopping on Interrupt: it came while the BPF program was loading, before " \
        "sampling started" in err, err
    assert "sampling 2 CPU" not in err and "Ctrl-C to stop" not in err, err
    assert "bpfprof: 0 samples in 0.0 s, 0 lost" in err, err
    assert "stopped before sampling started: the profile is written all the same" in err, err
    assert "no samples were collected" not in err, err
    assert took < 10, took
    if fmt == "folded":
        assert out.read_text() == "", out.read_text()[:300]
    else:
        from pprof import decode
        prof = decode(out.read_bytes())
        assert not prof.get("sample"), prof.get("sample")[:3]


def test_ctrl_c_during_the_load_does_not_start_the_command(tmp_path):
    """-- CMD: the command never runs (its side effect not there), no
    "exited with status 127", and bpfprof exits 0 with its (empty) profile."""
    marker = tmp_path / "ran"
    out = tmp_path / "p.folded"
    rc, _, err, _ = sigint_during_load(["-o", out, "--", "sh", "-c", f"touch {marker}; sleep 5"])
    assert rc == 0, err
    assert "the command was not started" in err, err
    assert "exited with status" not in err and "bpfprof ended it" not in err, err
    assert not marker.exists()
    assert out.exists() and out.read_text() == ""


# --- 5. -o endings in any case; .pb (pprof uncompressed) -----------------------------

def test_output_ending_in_capitals_names_the_format(tmp_path):
    """cpu.SVG and cpu.PB.GZ were refused ("cannot tell the format"): endings
    name formats in any case, in record and in convert."""
    src = tmp_path / "in.folded"
    src.write_text(FOLDED)
    run_bpfprof(["convert", src, "-o", tmp_path / "cpu.SVG"])
    assert (tmp_path / "cpu.SVG").read_text().startswith("<?xml")
    run_bpfprof(["convert", src, "-o", tmp_path / "cpu.Pb.Gz"])
    assert (tmp_path / "cpu.Pb.Gz").read_bytes()[:2] == b"\x1f\x8b"
    p = run_bpfprof(["-d", "1", "-o", tmp_path / "rec.SVG", "--", "sleep", "0.2"])
    assert (tmp_path / "rec.SVG").read_text().startswith("<?xml"), p.stderr


def test_pb_ending_writes_uncompressed_pprof(tmp_path):
    """.pb (as go tool pprof -proto writes): profile.proto uncompressed, read
    back by report and by the pprof decoder the tests use, same samples as
    .pb.gz; not poured onto a terminal."""
    import gzip
    from pprof import decode, to_folded
    src = tmp_path / "in.folded"
    src.write_text(FOLDED)
    p = run_bpfprof(["convert", src, "-o", tmp_path / "cpu.pb"])
    assert "(pb)" in p.stderr, p.stderr
    raw = (tmp_path / "cpu.pb").read_bytes()
    assert raw[:2] != b"\x1f\x8b" and raw, raw[:20]
    run_bpfprof(["convert", src, "-o", tmp_path / "cpu.pb.gz"])
    assert gzip.decompress((tmp_path / "cpu.pb.gz").read_bytes()) == raw
    assert to_folded(decode(raw)) == to_folded(decode((tmp_path / "cpu.pb.gz").read_bytes()))
    rep = run_bpfprof(["report", tmp_path / "cpu.pb"]).stdout
    assert "bpfprof report: 40 samples" in rep, rep
    from conftest import run_on_tty
    rc, shown, err = run_on_tty([BPFPROF, "convert", src, "-f", "pb"], timeout=60)
    assert rc == 2, err
    assert "pb is binary (profile.proto): it is not written to a terminal" in err, err


# --- 7. count: a pattern that matches no function is a usage error (2) ---------------

@pytest.mark.parametrize("pattern", ["bpfprof_no_such_fn_*", "nolib:malloc",
                                     "kernel:bpfprof_no_such_kfn_*"])
def test_count_pattern_matching_nothing_exits_2(pattern):
    """Exit 0 ok, 1 failure, 2 usage error (design.md): a pattern that names
    nothing is the user's argument, as a bad option is - it exited 1."""
    p = run_bpfprof(["count", pattern, "-p", os.getpid(), "-d", "1"], check=False)
    assert p.returncode == 2, p.stderr
    assert "function matches '" in p.stderr and "HINT: names are" in p.stderr, p.stderr
    # A process that is not there stays a failure (1), as in record.
    p = run_bpfprof(["count", "malloc", "-p", "4000000", "-d", "1"], check=False)
    assert p.returncode == 1 and "process 4000000 not found" in p.stderr, p.stderr


# --- 8. "1 interval", "1 function", not "1 intervals" --------------------------------

def test_one_interval_is_singular(tmp_path):
    """A 1 s run of 5 s intervals: one (partial) interval, one file - said so."""
    out = tmp_path / "od"
    p = run_bpfprof(["-a", "-F", "99", "--interval", "5", "--output-dir", out, "-d", "1"])
    assert re.search(r"bpfprof: \d+ samples in [0-9.]+ s, \d+ lost, 1 interval\n", p.stderr), \
        p.stderr
    assert f"bpfprof: 1 profile written to {out} (1 kept" in p.stderr, p.stderr
    assert "1 intervals" not in p.stderr and "1 profiles" not in p.stderr, p.stderr


def test_one_function_is_singular(tmp_path):
    """report's tables and count's probe line with one function."""
    one = tmp_path / "one.folded"
    one.write_text("app;main 5\n")
    rep = run_bpfprof(["report", one]).stdout
    assert "Top 1 function by self samples (running):" in rep, rep
    assert "Top 1 function by total samples" in rep, rep
    p = run_bpfprof(["count", "-v", "bp_a", "--", wl("countwork"), "calls"])
    assert re.search(r"bpfprof: 1 function, \d+ probes?: ", p.stderr), p.stderr


# --- also: perf's spellings a perf user types first ---------------------------------

def test_report_takes_perf_reports_dash_i_and_stdio(tmp_path):
    """perf report -i FILE --stdio: -i names an input (repeatable, first),
    --stdio is accepted (the report is text); convert takes -i too, not --stdio."""
    src = tmp_path / "in.folded"
    src.write_text(FOLDED)
    rep = run_bpfprof(["report", "--stdio", "-i", src]).stdout
    assert "bpfprof report: 40 samples" in rep, rep
    rep = run_bpfprof(["report", "-i", src, "--input", src, src]).stdout
    assert "bpfprof report: 120 samples" in rep, rep
    out = tmp_path / "o.folded"
    run_bpfprof(["convert", "-i", src, "-o", out])
    assert sorted(out.read_text().splitlines()) == sorted(FOLDED.splitlines())
    p = run_bpfprof(["convert", "--stdio", src], check=False)
    assert p.returncode == 2 and "--stdio is an option of 'bpfprof report'" in p.stderr, p.stderr
    p = run_bpfprof(["report", "-i", ""], check=False)
    assert p.returncode == 2 and "empty input file name" in p.stderr, p.stderr


@pytest.mark.parametrize("args", [["-e", "cycles"], ["-ecycles"], ["--event=cycles"],
                                  ["record", "-e", "cpu-clock"]])
def test_record_dash_e_says_the_one_event(args):
    """perf record -e cycles: said what bpfprof samples instead of a bare
    "unknown option", before anything is sampled (exit 2)."""
    p = run_bpfprof(args + ["-d", "1", "--", "true"], check=False)
    assert p.returncode == 2, p.stderr
    assert "bpfprof samples one event, the cpu-clock timer" in p.stderr, p.stderr
    assert "HINT: drop -e; the rate is -F HZ" in p.stderr, p.stderr
    assert "sampling" not in p.stderr.split("\n")[0], p.stderr

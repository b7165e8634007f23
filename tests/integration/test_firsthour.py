# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""What a new user trips over in the first hour, second pass (session 9):
a command after -- that cannot run is said before sampling starts (and
where it was looked for), a gzip-compressed format is not poured onto a
terminal, and `bpfprof count` without privileges says it needs root instead
of libbpf's RLIMIT_MEMLOCK lines.
"""
import gzip
import os
import stat
import subprocess

import pytest

from conftest import BPFPROF, run_bpfprof, run_on_tty, tenant_run

GZIP_MAGIC = b"\x1f\x8b"


# --- a command that cannot run: said before "sampling ..." --------------------------

@pytest.mark.parametrize("sub", [[], ["count", "main"]], ids=["record", "count"])
@pytest.mark.parametrize("kind", ["not-in-path", "no-file", "directory", "not-executable"])
def test_command_that_cannot_run_is_said_before_sampling(tmp_path, sub, kind):
    """`bpfprof -- CMD` with a CMD that cannot run: one error naming it, exit
    1 (as when the exec fails), and no probe was attached first - not
    "sampling 'CMD' ...; stops when it exits" and then "cannot run"."""
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    cmd = {"not-in-path": "bpfprof-no-such-command", "no-file": str(tmp_path / "nothere"),
           "directory": str(tmp_path), "not-executable": str(plain)}[kind]
    p = run_bpfprof(sub + ["-d", "5", "--", cmd], check=False, timeout=60)
    assert p.returncode == 1, p.stderr
    assert f"cannot run '{cmd}'" in p.stderr, p.stderr
    assert "sampling" not in p.stderr and "probing" not in p.stderr, p.stderr
    if kind == "not-in-path":
        assert "PATH" in p.stderr, p.stderr


def test_command_in_this_directory_hints_dot_slash(tmp_path):
    """A program in the current directory given by its bare name (as perf's
    users type `perf record mybench` and get "not found"): the hint says
    ./NAME; found through PATH, the same name runs."""
    prog = tmp_path / "mybench"
    prog.write_text("#!/bin/sh\nexit 7\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = dict(os.environ, PATH="/usr/bin:/bin")
    p = run_bpfprof(["-d", "5", "-o", tmp_path / "p.folded", "--", "mybench"], check=False,
                    cwd=tmp_path, env=env)
    assert p.returncode == 1, p.stderr
    assert "HINT: it is in this directory: run ./mybench" in p.stderr, p.stderr
    # An empty PATH entry is the current directory, as execvp() says.
    env["PATH"] = "/usr/bin:/bin:"
    p = run_bpfprof(["-d", "5", "-o", tmp_path / "p.folded", "--", "mybench"], check=False,
                    cwd=tmp_path, env=env)
    assert p.returncode == 7, p.stderr
    env["PATH"] = f"/usr/bin:{tmp_path}"
    p = run_bpfprof(["-d", "5", "-o", tmp_path / "q.folded", "--", "mybench"], check=False,
                    env=env)
    assert p.returncode == 7, p.stderr
    assert (tmp_path / "q.folded").exists()


# --- gzip-compressed formats are not written to a terminal --------------------------

@pytest.fixture
def folded(tmp_path):
    f = tmp_path / "in.folded"
    f.write_text("app;main;work 30\napp;main;idle 10\n")
    return f


@pytest.mark.parametrize("args,fmt", [
    (["-d", "5", "-f", "pprof"], "pprof"),
    (["-d", "5", "-f", "svgz", "-o", "-"], "svgz"),
    (["convert", "IN", "-f", "pprof"], "pprof"),
    (["convert", "IN", "-f", "svgz", "-o", "-"], "svgz"),
])
def test_binary_format_is_not_written_to_a_terminal(folded, args, fmt):
    """gzip's rule: -f pprof (or svgz) with stdout on a terminal is a usage
    error, before sampling, whose hint names a file; the screen gets none of
    the compressed bytes."""
    args = [folded if a == "IN" else a for a in args]
    rc, shown, err = run_on_tty([BPFPROF] + args, timeout=60)
    assert rc == 2, err
    assert f"{fmt} is gzip-compressed binary: it is not written to a terminal" in err, err
    assert "HINT: name a file with -o FILE" in err, err
    assert "sampling" not in err, err
    assert "\ufffd" not in shown and not shown.strip(), shown


def test_binary_format_to_a_file_is_written(folded, tmp_path):
    """The same options with stdout a file (or a pipe) write the profile."""
    out = tmp_path / "o.pb.gz"
    with open(out, "wb") as f:
        r = subprocess.run([str(BPFPROF), "convert", str(folded), "-f", "pprof"], stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data[:2] == GZIP_MAGIC and len(gzip.decompress(data)) > 0


# --- count without privileges -------------------------------------------------------

def test_count_without_privileges_says_it_needs_root():
    """As `bpfprof` and `bpfprof top` do: one line and a hint, not libbpf's
    "Failed to bump RLIMIT_MEMLOCK" and "Couldn't load trivial BPF program"."""
    p = tenant_run([BPFPROF, "count", "main", "--", "/bin/true"], timeout=60)
    assert p.returncode == 1, p.stderr
    assert "bpfprof count needs root (missing CAP_BPF and CAP_PERFMON)" in p.stderr, p.stderr
    assert "HINT: run it with sudo" in p.stderr, p.stderr
    assert "libbpf" not in p.stderr and "RLIMIT_MEMLOCK" not in p.stderr, p.stderr


# --- "idle samples excluded" only where --include-idle would keep them --------------

def test_pid_target_does_not_offer_idle_samples():
    """`bpfprof -p PID` of a process that sleeps: "no samples were collected"
    and no "N idle samples excluded (--include-idle keeps them)" - the idle
    task is no process of -p's, and --include-idle gives a -p run none. A run
    of the whole machine over the same seconds shows the idle samples were
    there to be (wrongly) offered."""
    import re
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        procs = [subprocess.Popen([str(BPFPROF), "-d", "3", "-o", "/dev/null"] + extra,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for extra in (["-p", str(sleeper.pid)], ["-a"], ["-p", str(sleeper.pid),
                                                                  "--include-idle"])]
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        sleeper.kill()
        sleeper.wait()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    pid_err, all_err, inc_err = (o[1] for o in outs)
    assert "idle samples excluded" not in pid_err, pid_err
    assert "no samples were collected" in pid_err, pid_err
    # --include-idle adds nothing to a -p run: what the line offered is not there.
    assert re.search(r"\b0 samples? in", inc_err), inc_err
    m = re.search(r"(\d+) idle samples excluded", all_err)
    print(f"idle samples the -a run excluded meanwhile: {m.group(1) if m else 0}")


# --- --listen says where it serves ------------------------------------------------

def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("extra,paths", [
    ([], ["/debug/pprof/profile?seconds=N", "/metrics", "/healthz"]),
    (["--alloc", "-a"], ["/debug/pprof/heap", "/debug/pprof/allocs", "/metrics"]),
])
def test_listen_says_the_url_it_serves(extra, paths):
    """`bpfprof --listen PORT` printed "sampling ...; Ctrl-C to stop" and
    nothing about where to point go tool pprof or curl: it now prints the
    URL (ADDR defaulted to 127.0.0.1) and the endpoints of what it profiles,
    and that URL answers."""
    import re
    import urllib.request
    port = free_port()
    proc = subprocess.Popen([str(BPFPROF), "--listen", str(port), "-d", "30"] + extra,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        while line and "serving" not in line and "sampling" not in line:
            line = proc.stderr.readline()
        m = re.match(r"bpfprof: serving on (http://[^: ]+:\d+): (.*)$", line.strip())
        assert m, line
        assert m.group(1) == f"http://127.0.0.1:{port}", line
        for path in paths:
            assert path in m.group(2), line
        # The URL answers (503 from /healthz until sampling has started).
        import time
        import urllib.error
        deadline, status = time.monotonic() + 30, None
        while status != 200 and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(m.group(1) + "/healthz", timeout=30) as r:
                    status = r.status
            except urllib.error.HTTPError as e:
                status = e.code
                time.sleep(0.2)
        assert status == 200, status
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert proc.returncode == 0


@pytest.mark.parametrize("arg", ["99999", "6060x", ":6060", "[::1]"])
def test_listen_is_checked_with_the_other_options(arg):
    """A bad --listen is a usage error of the option parser, before any BPF is
    loaded or sampling begins, said once ("--listen: invalid --listen" was
    said after the load); Go's ":6060" gets a hint naming both choices."""
    p = run_bpfprof(["--listen", arg, "-d", "5"], check=False, timeout=60)
    assert p.returncode == 2, p.stderr
    first = p.stderr.splitlines()[0]
    assert first == (f"bpfprof: invalid --listen '{arg}': expected [ADDR:]PORT "
                     "(6060, 0.0.0.0:6060, [::1]:6060)"), p.stderr
    assert "sampling" not in p.stderr and "libbpf" not in p.stderr, p.stderr
    if arg == ":6060":
        assert "HINT: name the address: 6060 alone is loopback, 0.0.0.0:6060 every interface" \
            in p.stderr, p.stderr


# --- `bpfprof report` alone, as `perf report` is typed -----------------------------

def test_report_without_input_says_there_is_no_default_file(tmp_path):
    """`perf report` reads ./perf.data; `bpfprof report` alone said only "no
    input files". It now says there is no default file and how to get one
    (and perf's way in), in the directory where a perf user types it."""
    (tmp_path / "perf.data").write_bytes(b"PERFILE2" + b"\0" * 64)
    # stdin on /dev/null, as in CI (a pipe with data is read: test_firsthour2.py).
    p = run_bpfprof(["report"], check=False, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert "there is no default file, as perf.data is for perf report" in p.stderr, p.stderr
    assert "-o app.pb.gz, then bpfprof report app.pb.gz" in p.stderr, p.stderr
    assert "perf script | bpfprof report -" in p.stderr, p.stderr


# --- -f against -o's ending --------------------------------------------------------

def test_format_against_the_files_ending_warns(folded, tmp_path):
    """`-f pprof -o x.svg` wrote gzip into x.svg without a word (a browser then
    shows garbage); -f still wins, but a warning says what went where. The
    same name and format agreeing (-f pprof -o x.pprof) says nothing."""
    out = tmp_path / "x.svg"
    p = run_bpfprof(["convert", folded, "-f", "pprof", "-o", out])
    assert "warning: -f pprof writes pprof into" in p.stderr and "ending says svg" in p.stderr, \
        p.stderr
    assert out.read_bytes()[:2] == GZIP_MAGIC
    p = run_bpfprof(["convert", folded, "-f", "pprof", "-o", tmp_path / "x.pprof"])
    assert "warning" not in p.stderr, p.stderr
    p = run_bpfprof(["-d", "0.3", "-f", "folded", "-o", tmp_path / "y.pb.gz"])
    assert "warning: -f folded writes folded into" in p.stderr, p.stderr

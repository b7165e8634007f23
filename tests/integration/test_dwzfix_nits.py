# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""review10's nits on firsthour2 (N1, N3).

- report with no INPUT does not read a socket on stdin (ssh's, a
  supervisor's: held open, it would be waited on forever): it says "no input
  files" (exit 2) at once, as for a terminal or /dev/null. A pipe still is read.
- count's -o ending chooses the format in any case, and .pb is the
  uncompressed profile.proto, as record's and convert's endings do.
"""
import gzip
import json
import socket
import subprocess

import pytest

from conftest import BPFPROF, run_bpfprof, wl


def test_report_does_not_wait_on_a_socket_stdin():
    a, b = socket.socketpair()
    try:
        # b stays open and silent: reading it would block until the timeout.
        p = subprocess.run([BPFPROF, "report"], stdin=a, capture_output=True, text=True,
                           timeout=20)
    finally:
        a.close()
        b.close()
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "no input" in p.stderr, p.stderr


def test_report_still_reads_a_pipe():
    p = subprocess.run([BPFPROF, "report"], input="app;main 5\n", capture_output=True,
                       text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert "bpfprof report: 5 samples" in p.stdout, p.stdout


@pytest.mark.parametrize("name,kind", [("CALLS.JSON", "json"), ("calls.Pb.Gz", "pprof"),
                                       ("calls.pb", "pb"), ("calls.PB", "pb")])
def test_count_output_ending_in_any_case(tmp_path, name, kind):
    out = tmp_path / name
    run_bpfprof(["count", "bp_a", "-o", out, "--", wl("countwork"), "calls"])
    data = out.read_bytes()
    if kind == "json":
        doc = json.loads(data)
        assert any(f["function"] == "bp_a" and f["calls"] > 0 for f in doc["functions"]), doc
    elif kind == "pprof":
        assert data[:2] == b"\x1f\x8b", data[:16]
        assert b"bp_a" in gzip.decompress(data)
    else:
        # profile.proto as is: field 1 (sample_type), length-delimited.
        assert data[:1] == b"\x0a", data[:16]
        assert b"bp_a" in data and b"calls" in data

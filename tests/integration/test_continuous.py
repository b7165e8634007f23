# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Continuous mode (root, real BPF): lossless interval draining, the local
store (rotation, retention, SIGTERM flush, full disk), container labels and
the --cgroup filter, Pyroscope push, and the HTTP endpoint."""
import glob
import http.server
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import pprof
from conftest import (wait_attached, BPFPROF, Workload, cpu_seconds, parse_folded, run_bpfprof, total, uwl, wl,
                      Sampled, assert_count, assert_most, assert_share, assert_same_share,
                      cgroup2_root, count_tolerance)

FREQ = 99
CID = "c0ffee" + "0123456789abcdef" * 3 + "abcdef0123"  # 64 hex digits


def read_profile(path):
    """{stack: count} and the per-sample labels of one stored interval."""
    data = Path(path).read_bytes()
    if path.endswith(".pb.gz") or data[:2] == b"\x1f\x8b":
        p = pprof.decode(data)
        return pprof.to_folded(p), [s["label"] for s in p["sample"]]
    return parse_folded(data.decode()), []


def stored(dir_):
    return sorted(f for f in glob.glob(f"{dir_}/bpfprof-*") if ".tmp." not in f)


def summary_samples(stderr):
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost, (\d+) intervals?", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def test_intervals_sum_to_one_long_run(tmp_path):
    """Across many drains and intervals no sample is lost or counted twice."""
    d = tmp_path / "store"
    with Workload(wl("busy"), 60) as w:
        # CPU time from the start of sampling: the agent's start-up (unwind
        # and kernel tables) is not sampled and must not be expected to be.
        proc = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "--interval", "1",
                                 "--output-dir", str(d), "-d", "6.5", "-v"],
                                stderr=subprocess.PIPE, text=True)
        head = wait_attached(proc)
        cpu0 = cpu_seconds(w.pid)
        _, tail = proc.communicate(timeout=60)
        cpu1 = cpu_seconds(w.pid)
    assert proc.returncode == 0, head + tail
    stderr = head + tail
    files = stored(d)
    assert len(files) >= 6, files
    n = sum(total(read_profile(f)[0]) for f in files)
    samples, lost, intervals = summary_samples(stderr)
    assert lost == 0
    assert intervals == len(files)
    # Exact: everything the kernel counted is in exactly one file.
    assert n == samples, f"files hold {n}, the kernel counted {samples}"
    assert_count(n, FREQ * (cpu1 - cpu0), f"{cpu1 - cpu0:.2f} CPU s over the intervals")
    # Interval files carry build ids too (read by the symbolizer while the process ran).
    if files[0].endswith(".pb.gz"):
        p = pprof.decode(Path(files[0]).read_bytes())
        maps = {pprof.strings(p, m.get(5, 0)): pprof.strings(p, m.get(6, 0))
                for m in p["mapping"].values()}
        want = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(
            ["readelf", "-n", wl("busy")], capture_output=True, text=True).stdout).group(1)
        assert maps.get(wl("busy")) == want, maps


def drain_stats(stderr):
    m = re.search(r"(\d+) drains, (\d+) of them emptied the kernel maps \(buffer flips\); "
                  r"(\d+) samples stored a new key", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def hot_hits(stderr):
    m = re.search(r"(\d+) were counted in per-CPU hot slots", stderr)
    assert m, stderr
    return int(m.group(1))


def test_drains_leave_hot_stacks_in_the_kernel(tmp_path):
    """A drain reads the counts in place: a stack counted once stays a known key
    in the kernel (cheap path) instead of being stored again after every drain,
    and the counts handed out are what each key gained, not its running total."""
    out = tmp_path / "keys.pb.gz"
    with Workload(wl("busy"), 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "-v", "--addresses", "-o", out], [w.pid],
                    until_cpu=8, timeout=180)
    drains, flips, new_keys = drain_stats(p.stderr)
    samples = int(re.search(r"(\d+) samples? in", p.stderr).group(1))
    assert drains >= 8 and flips == 1, p.stderr  # only the last drain empties the maps
    # Each distinct key is stored once: about as many new keys as the profile
    # has distinct stacks (with --addresses a leaf address is its own
    # location; keys that differ only above the leaf or in the kernel part
    # merge: 20-23 keys for 20 stacks seen). Stored again after every drain,
    # a key would be counted once per drain it appears in: with >= 8 drains
    # of ~100 samples over a few dozen keys, several times as many.
    prof = pprof.decode(out.read_bytes())
    keys = len({tuple(s["location_id"]) for s in prof["sample"]})
    assert new_keys <= 2 * keys + 2, f"{new_keys} new keys for {keys} distinct stacks"
    assert keys <= new_keys, f"{keys} distinct stacks from {new_keys} keys"
    n = sum(s["value"][0] for s in prof["sample"])
    assert n == samples, (n, samples)
    assert_count(n, FREQ * p.cpu[w.pid], "busy")


def test_hot_slots_count_exactly():
    """Most samples of a steady loop are counted in per-CPU slots, not in the
    counts map; the drains add the slots back: the same totals and the same
    split as with the map alone (BPFPROF_TEST_NO_HOT_SLOTS), every sample once.
    4 s each (~400 samples): 5 sigmas of the split is +-0.14 with its floor,
    the difference of the two +-0.18 - a slot counted for the wrong
    key, or not at all, moves leaf_a's 2/3 further; the totals are exact."""
    runs = {}
    for name, env in [("hot", None),
                      ("map only", dict(os.environ, BPFPROF_TEST_NO_HOT_SLOTS="1"))]:
        with Workload(wl("busy"), 300) as w:
            p = Sampled(["-p", w.pid, "-d", 120, "-v"], [w.pid], env=env, until_cpu=4,
                        timeout=180)
        folded = parse_folded(p.stdout)
        samples = int(re.search(r"(\d+) samples? in", p.stderr).group(1))
        n = total(folded)
        assert "accounting mismatch" not in p.stderr, p.stderr
        assert n == samples, (name, n, samples)
        assert_count(n, FREQ * p.cpu[w.pid], name)
        a = sum(c for s, c in folded.items() if s.endswith(";leaf_a"))
        b = sum(c for s, c in folded.items() if s.endswith(";leaf_b"))
        runs[name] = (hot_hits(p.stderr), samples, a / max(a + b, 1), a + b)
    (hot, samples, leaf_a, n_a), (hot_off, _, leaf_a_off, n_off) = runs["hot"], runs["map only"]
    assert_most(hot, samples, "samples in hot slots", share=0.7)
    assert hot_off == 0
    # busy: leaf_a does 2/3 of the work, whichever way it is counted.
    assert_share(leaf_a, 2 / 3, n_a, "leaf_a's share with hot slots", floor=0.02)
    assert_share(leaf_a_off, 2 / 3, n_off, "leaf_a's share with the map alone", floor=0.02)
    assert_same_share(leaf_a, n_a, leaf_a_off, n_off, "leaf_a's share, hot slots vs map")


def test_hot_slots_emptied_with_their_buffer_set():
    """Drains that flip again and again: each set's slots are emptied with it
    and claimed again when it is back in use. A slot left full would count a
    key the new set's map does not hold, and its samples would vanish.
    Every drain flips (BPFPROF_TEST_ALWAYS_FLIP): small maps alone flip only
    when a drain period brings 16 keys, and this workload's stacks, walked
    with its tables, are 10 - 12 - two flips in six drains as often as three
    (test_small_maps_flip_when_half_full checks that trigger)."""
    path, comm = uwl("syscalls")
    # 6 s of the workload's CPU time (~600 samples), however long a busy
    # machine takes to give it.
    with Workload(path, 300) as w:
        p = Sampled(["-p", w.pid, "-d", 120, "-v", "--max-entries", 64, "--max-stacks", 64],
                    [w.pid], until_cpu=6, timeout=180,
                    env=dict(os.environ, BPFPROF_TEST_ALWAYS_FLIP="1"))
    drains, flips, _ = drain_stats(p.stderr)
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost", p.stderr)
    samples, lost = int(m.group(1)), int(m.group(2))
    assert flips >= 3, p.stderr  # both sets back in use after being emptied
    assert_most(hot_hits(p.stderr), samples, "samples in hot slots " + p.stderr, share=0.3)
    assert "accounting mismatch" not in p.stderr, p.stderr
    assert total(parse_folded(p.stdout)) == samples - lost, p.stderr


def test_small_maps_flip_when_half_full():
    """With maps too small for the run the drains switch buffers whenever the
    active one is half full; every sample is still in the profile or counted
    as lost, never twice."""
    path, comm = uwl("syscalls")
    with Workload(path, 60), Workload(wl("busy"), 60):
        p = run_bpfprof(["-a", "-d", 6, "-v", "--max-entries", 64, "--max-stacks", 64])
    drains, flips, new_keys = drain_stats(p.stderr)
    m = re.search(r"(\d+) samples? in [0-9.]+ s, (\d+) lost", p.stderr)
    samples, lost = int(m.group(1)), int(m.group(2))
    assert flips >= 2, p.stderr  # the syscall workload's kernel stacks fill 16 keys fast
    assert hot_hits(p.stderr) > 0, p.stderr  # slots emptied and claimed again at flips
    assert "accounting mismatch" not in p.stderr, p.stderr
    assert total(parse_folded(p.stdout)) == samples - lost, p.stderr
    assert total(parse_folded(p.stdout), comm) > 0


def test_rotation_and_retention(tmp_path):
    d = tmp_path / "store"
    with Workload(wl("busy"), 30):
        run_bpfprof(["-a", "--interval", 1, "--output-dir", d, "--keep", 2, "-d", 5.5])
    files = stored(d)
    assert len(files) == 2, files
    names = [os.path.basename(f) for f in files]
    assert all(re.fullmatch(r"bpfprof-\d{8}T\d{6}Z(-\d+)?\.(pb\.gz|folded)", n) for n in names), names
    for f in files:
        assert total(read_profile(f)[0]) > 0


def test_sigterm_flushes_partial_interval(tmp_path):
    d = tmp_path / "store"
    with Workload(wl("busy"), 30) as w:
        proc = subprocess.Popen([str(BPFPROF), "-p", str(w.pid), "--interval", "300",
                                 "--output-dir", str(d)], stderr=subprocess.PIPE, text=True)
        wait_attached(proc)
        time.sleep(2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    files = stored(d)
    assert len(files) == 1, (files, err)
    folded, _ = read_profile(files[0])
    samples, lost, _ = summary_samples(err)
    assert samples > 0 and total(folded, "busy") == samples - lost, (folded, err)


def test_full_disk_keeps_agent_running(tmp_path):
    d = tmp_path / "tiny"
    d.mkdir()
    # mode=0755: a tmpfs is 1777 by default, which --output-dir refuses
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k,mode=0755", "tmpfs", str(d)],
                   check=True)
    try:
        with Workload(wl("busy"), 30), Workload(wl("syscalls"), 30):
            p = run_bpfprof(["-a", "--interval", 1, "--output-dir", d, "-d", 8, "-v"],
                            check=False)
        assert p.returncode == 0, p.stderr
        m = re.search(r"(\d+) profiles? written to .* (\d+) failed", p.stderr)
        assert m, p.stderr
        assert int(m.group(2)) > 0, "the disk never filled up: make the tmpfs smaller"
        assert "failed" in p.stderr and "No space left on device" in p.stderr
        # What is there is whole: every file parses, no temp file is left.
        files = stored(d)
        assert files
        for f in files:
            read_profile(f)
        assert not glob.glob(f"{d}/*.tmp.*")
    finally:
        subprocess.run(["umount", str(d)])


def test_container_label_and_cgroup_filter(tmp_path):
    """A docker-style cgroup: its tasks, also in a nested cgroup below it, get
    the container id label, and --cgroup keeps exactly them (in the kernel)."""
    root = cgroup2_root()
    rel = f"bpfprof-test.slice/docker-{CID}.scope"
    cg = Path(root) / rel
    nested = cg / "worker"
    nested.mkdir(parents=True, exist_ok=True)
    d = tmp_path / "store"
    (busy, BUSY), (sysc, SYSC) = uwl("busy"), uwl("syscalls")
    try:
        with Workload(busy, 30) as inside, Workload(sysc, 30) as below, \
                Workload(wl("busy"), 30):
            (cg / "cgroup.procs").write_text(str(inside.pid))
            (nested / "cgroup.procs").write_text(str(below.pid))
            assert CID in Path(f"/proc/{inside.pid}/cgroup").read_text()
            p = Sampled(["-a", "--cgroup", "/" + rel, "--interval", 2, "--output-dir", d,
                         "-d", 3], [inside.pid, below.pid])
            for pid in (inside.pid, below.pid):
                (Path(root) / "cgroup.procs").write_text(str(pid))
        files = stored(d)
        comms = {}
        labels = []
        for f in files:
            folded, labs = read_profile(f)
            for s, c in folded.items():
                comms[s.split(";")[0]] = comms.get(s.split(";")[0], 0) + c
            labels += labs
        # Only the cgroup's tasks and its descendants' (not the other busy).
        assert set(comms) == {BUSY, SYSC}, comms
        assert_count(comms[BUSY], FREQ * p.cpu[inside.pid], "in the cgroup")
        assert_count(comms[SYSC], FREQ * p.cpu[below.pid], "in a cgroup below it")
        assert labels, "pprof output carries labels"
        assert all(l.get("container_id") == CID for l in labels), labels[:3]
        assert {l.get("cgroup") for l in labels} == {"/" + rel, "/" + rel + "/worker"}, labels[:3]
    finally:
        nested.rmdir()
        cg.rmdir()
        cg.parent.rmdir()


def _multipart(ctype, body):
    """A multipart/form-data body's parts, {name: {"filename", "type", "data"}}, read as
    strictly as the layout Go's mime/multipart writes (what Pyroscope's clients send and
    its /ingest reads): CRLF lines, the boundary from ctype, a closing delimiter."""
    m = re.fullmatch(r"multipart/form-data; boundary=([0-9A-Za-z'()+_,\-./:=?]{1,70})", ctype)
    assert m, ctype
    delim = b"--" + m.group(1).encode()
    assert body.startswith(delim + b"\r\n"), body[:80]
    assert body.endswith(b"\r\n" + delim + b"--\r\n"), body[-80:]
    parts = {}
    for chunk in body[len(delim) + 2:-(len(delim) + 6)].split(b"\r\n" + delim + b"\r\n"):
        head, sep, data = chunk.partition(b"\r\n\r\n")
        assert sep, chunk[:80]
        hdrs = dict(line.split(": ", 1) for line in head.decode().split("\r\n"))
        cd = re.fullmatch(r'form-data; name="([^"]+)"(?:; filename="([^"]*)")?',
                          hdrs["Content-Disposition"])
        assert cd and cd.group(1) not in parts, hdrs
        parts[cd.group(1)] = {"filename": cd.group(2), "type": hdrs.get("Content-Type"), "data": data}
    return parts


class _Ingest(http.server.BaseHTTPRequestHandler):
    """A test double for Grafana Pyroscope's /ingest (no real server here). A multipart
    body (heap profiles) is split into "parts" (see _multipart); one it cannot read is
    answered 400 and kept with "bad" saying why."""
    requests = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ctype = self.headers.get("Content-Type", "")
        r = {"path": self.path, "headers": dict(self.headers), "body": body, "parts": None}
        if ctype.startswith("multipart/form-data"):
            try:
                r["parts"] = _multipart(ctype, body)
            except (AssertionError, KeyError, ValueError) as e:
                r["bad"] = repr(e)
        self.requests.append(r)
        self.send_response(400 if "bad" in r else 200)
        self.end_headers()

    def log_message(self, *a):
        pass


def ingest_double():
    """An _Ingest server on a port of its own (its requests emptied), serving
    in a thread: what --push sends to. shutdown() and server_close() it."""
    _Ingest.requests = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Ingest)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_ingest_double_reads_multipart():
    """_Ingest's reader on a body as Go's multipart writer lays one out (pyroscope-go's
    heap upload): parts by name, the file names, the bytes whole; and what it refuses."""
    cfg = b'{"alloc_space":{"units":"bytes"}}'
    body = (b"--b0\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n\x1f\x8b\r\n--b\x00\r\n"
            b"--b0\r\nContent-Disposition: form-data; name=\"sample_type_config\"; "
            b"filename=\"sample_type_config.json\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            + cfg + b"\r\n--b0--\r\n")
    parts = _multipart("multipart/form-data; boundary=b0", body)
    assert parts["profile"] == {"filename": "profile.pprof", "type": "application/octet-stream",
                                "data": b"\x1f\x8b\r\n--b\x00"}
    assert parts["sample_type_config"]["filename"] == "sample_type_config.json"
    assert json.loads(parts["sample_type_config"]["data"]) == {"alloc_space": {"units": "bytes"}}
    for ctype, b in (("multipart/form-data; boundary=b1", body), ("multipart/form-data", body),
                     ("multipart/form-data; boundary=b0", body[:-2])):
        with pytest.raises(AssertionError):
            _multipart(ctype, b)


def test_push_to_pyroscope_ingest(tmp_path):
    _Ingest.requests = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Ingest)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text("t0ps3cret\n")
    busy, BUSY = uwl("busy")
    try:
        with Workload(busy, 30) as w:
            p = Sampled(["-a", "--push", f"http://127.0.0.1:{srv.server_port}",
                         "--token-file", token, "--app-name", "fleet", "--interval", 1,
                         "-d", 3.5, "-v"], [w.pid])
    finally:
        srv.shutdown()
    reqs = _Ingest.requests
    assert len(reqs) >= 3, p.stderr
    assert "t0ps3cret" not in p.stderr and "t0ps3cret" not in p.stdout
    got = 0
    for r in reqs:
        u = urllib.parse.urlparse(r["path"])
        assert u.path == "/ingest"
        q = urllib.parse.parse_qs(u.query)
        # pprof: the type is in the body, the name is Pyroscope's service_name whole
        app = r"fleet" if q.get("format") == ["pprof"] else r"fleet\.cpu"
        assert re.fullmatch(app + r"\{hostname=[^,}]+(,container_id=[0-9a-f]{64})?\}",
                            q["name"][0]), q["name"]
        assert int(q["from"][0]) < int(q["until"][0])
        assert q["sampleRate"] == ["99"] and q["spyName"] == ["bpfprof"]
        assert q["units"] == ["samples"] and q["aggregationType"] == ["sum"]
        assert r["headers"].get("Authorization") == "Bearer t0ps3cret"
        # CPU series: the raw profile, not a multipart body (that is for heap profiles)
        assert r["headers"].get("Content-Type") == "application/octet-stream" and r["parts"] is None
        if q.get("format") == ["pprof"]:
            folded = pprof.to_folded(pprof.decode(r["body"]))
        else:
            folded = parse_folded(r["body"].decode())
        got += total(folded, BUSY)
    assert_count(got, FREQ * p.cpu[w.pid], "pushed")


def test_push_server_down_does_not_stop_agent(tmp_path):
    with Workload(wl("busy"), 30):
        p = run_bpfprof(["-a", "--push", "http://127.0.0.1:9", "--interval", 1, "-d", 2.5])
    assert "pushed 0 profiles" in p.stderr


def test_http_endpoint_metrics_health_and_profile():
    port = 16000 + os.getpid() % 1000
    busy, BUSY = uwl("busy")
    with Workload(busy, 30) as w:
        proc = subprocess.Popen([str(BPFPROF), "-a", "--listen", str(port), "-d", "12"],
                                stderr=subprocess.PIPE, text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            # Listening from start-up; /healthz is 503 until the first drain.
            for _ in range(300):
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            assert urllib.request.urlopen(base + "/healthz").read() == b"ok\n"
            time.sleep(2)
            metrics = urllib.request.urlopen(base + "/metrics").read().decode()
            c0 = cpu_seconds(w.pid)
            body = urllib.request.urlopen(base + "/debug/pprof/profile?seconds=2",
                                          timeout=20).read()
            c1 = cpu_seconds(w.pid)
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(base + "/debug/pprof/profile?seconds=0")
            assert e.value.code == 400
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    # Prometheus text: every sample line is "name{labels} value".
    names, values = set(), {}
    for line in metrics.splitlines():
        if line.startswith("#"):
            assert re.fullmatch(r"# (HELP|TYPE) bpfprof_\w+ .+", line), line
            continue
        m = re.fullmatch(r"(bpfprof_\w+)(\{[a-z_]+=\"[^\"]*\"(,[a-z_]+=\"[^\"]*\")*\})? (\S+)", line)
        assert m, line
        values[m.group(1)] = float(m.group(4))
        names.add(m.group(1))
    # Two seconds of drains had busy's samples: its process and files are cached.
    assert values.get("bpfprof_symbolizer_processes", 0) >= 1, metrics
    assert values.get("bpfprof_symbolizer_files", 0) >= 1, metrics
    for n in ("bpfprof_samples_total", "bpfprof_lost_samples_total", "bpfprof_drain_duration_seconds",
              "bpfprof_symbolizer_processes", "bpfprof_resident_memory_bytes"):
        assert n in names, n
    if body[:2] == b"\x1f\x8b":
        folded = pprof.to_folded(pprof.decode(body))
    else:
        folded = parse_folded(body.decode())
    n = total(folded, BUSY)
    # Two seconds of drains (one a second): the window holds from 1 to 2 drain
    # periods' samples of what the request waited for, plus noise.
    cpu = c1 - c0
    assert FREQ * cpu / 2 - count_tolerance(FREQ * cpu / 2) <= n, (n, cpu)
    assert n <= FREQ * cpu * 3 / 2 + count_tolerance(FREQ * cpu * 3 / 2), (n, cpu)

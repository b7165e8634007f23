# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Where root's bpfprof writes, attacked by a tenant (issue 35: items 4, 5,
10, 14, 15; threat model rules 2 and 5; src/proc/safewrite.h).

Every attack is made as the tenant (conftest's as_tenant: its own uid, no
capabilities): symlinks, FIFOs and directories it plants in a directory it
can write - a sticky 1777 one like /tmp, or its own - where root's -o or
--output-dir points, before the run or while it runs. Root's bpfprof must
follow and open none of them, never block in open(), refuse an output
directory others could write, and let retention remove only its own files.
"""
import glob
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (BPFPROF, TENANT, Workload, as_tenant, parse_folded, run_bpfprof, tenant,
                      tenant_run, wait_attached, wl)

import pprof



@pytest.fixture(scope="module")
def record():
    """bpfprof's options to profile one busy process (not the whole machine,
    whose symbols can take long on a machine shared with other tests)."""
    with Workload(wl("busy"), 900) as w:
        yield ["-p", w.pid, "-F", 49]


def tenant_ok(argv):
    p = tenant_run(argv)
    assert p.returncode == 0, (argv, p.stderr)


def start(args):
    return subprocess.Popen([str(BPFPROF)] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stored(d):
    return sorted(f for f in glob.glob(f"{d}/bpfprof-*") if ".tmp." not in f)


def summary_written(stderr):
    m = re.search(r"(\d+) profiles? written to .* (\d+) failed", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


@pytest.fixture
def loopdev(tmp_path):
    """A root-only block device (a loop device over a 1 MiB file of zeros in
    root's private directory): what a tenant's symlink points root's write at."""
    back = tmp_path / "loop.img"
    back.write_bytes(bytes(1 << 20))
    dev = subprocess.run(["losetup", "--find", "--show", str(back)], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev])


def untouched(dev):
    with open(dev, "rb") as f:
        return f.read(1 << 20) == bytes(1 << 20)


@pytest.fixture
def secret(tmp_path):
    """A root-only directory (0700) holding a root-owned file."""
    d = tmp_path / "secret"
    d.mkdir(mode=0o700)
    (d / "p.folded").write_text("root's own file\n")
    return d


# --- item 4: -o through a tenant's symlink, FIFO -------------------------------

@pytest.mark.parametrize("where", ["shared", "tenant"])
def test_o_symlink_to_a_device_is_not_followed(record, where, shared_dir, tenant_dir, loopdev):
    """The tenant's symlink at root's -o path, to a block device: in a sticky
    1777 directory, or in its own. Refused before sampling with the link's
    owner and the directory's mode; nothing reaches the device."""
    d = shared_dir if where == "shared" else tenant_dir
    link = d / "p.folded"
    tenant_ok(["ln", "-s", loopdev, link])
    t0 = time.monotonic()
    p = run_bpfprof(record + ["-d", 1, "-o", link], check=False, timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"cannot write {link}: it is a symbolic link owned by {TENANT}" in p.stderr, p.stderr
    assert "HINT:" in p.stderr
    assert time.monotonic() - t0 < 20
    assert untouched(loopdev), "the profile was written onto the device"
    assert link.is_symlink()


def test_o_symlink_planted_during_the_run(record, shared_dir, loopdev):
    """The path is free when bpfprof checks it; the tenant plants the link
    while it samples. The write at the end refuses it too (exit 1, a clear
    message): nothing reaches the device."""
    link = shared_dir / "p.folded"
    proc = start(record + ["-d", 3, "-o", link])
    seen = wait_attached(proc)
    tenant_ok(["ln", "-s", loopdev, link])
    _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 1, err
    assert f"writing {link} failed: it is a symbolic link owned by {TENANT}" in err, err
    assert untouched(loopdev), "the profile was written onto the device"


def test_o_symlinks_to_root_files_are_not_followed(record, shared_dir, secret):
    """A symlink to a root-owned file, and a symlinked directory leading into
    a root-only one: neither is followed; the root-owned file keeps its
    contents and nothing new appears beside it."""
    tenant_ok(["ln", "-s", secret / "p.folded", shared_dir / "p.folded"])
    tenant_ok(["ln", "-s", secret, shared_dir / "out"])
    src = shared_dir.parent / f"{shared_dir.name}-in.folded"
    src.write_text("app;main;work 5\n")
    try:
        for path in (shared_dir / "p.folded", shared_dir / "out" / "p.folded"):
            p = run_bpfprof(["convert", src, "-o", path], check=False)
            assert p.returncode == 2, (path, p.stderr)
            assert f"symbolic link owned by {TENANT}" in p.stderr, p.stderr
            assert "mode 1777" in p.stderr, p.stderr
        p = run_bpfprof(record + ["-d", 1, "-o", shared_dir / "out" / "p.folded"], check=False)
        assert p.returncode == 2, p.stderr
    finally:
        src.unlink()
    assert (secret / "p.folded").read_text() == "root's own file\n"
    assert sorted(os.listdir(secret)) == ["p.folded"]


def test_o_tenant_fifo_is_refused_promptly(record, shared_dir):
    """A FIFO the tenant made at the -o path, nobody reading it: bpfprof used
    to wait in open() forever. Now it says no at once."""
    fifo = shared_dir / "p.folded"
    tenant_ok(["mkfifo", "-m", "0666", fifo])
    t0 = time.monotonic()
    try:
        p = run_bpfprof(record + ["-d", 1, "-o", fifo], check=False, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("bpfprof blocked on the tenant's FIFO")
    assert p.returncode == 2, p.stderr
    assert f"it is a FIFO owned by {TENANT}" in p.stderr, p.stderr
    assert time.monotonic() - t0 < 20


def test_o_tenant_fifo_with_a_reader_gets_nothing(record, shared_dir):
    """The tenant reads its FIFO, waiting for root's profile (the whole
    machine's, in the attack as reported): it gets nothing."""
    fifo = shared_dir / "p.folded"
    loot = shared_dir.parent / f"{shared_dir.name}.loot"
    tenant_ok(["mkfifo", "-m", "0666", fifo])
    try:
        with open(loot, "wb") as out:
            thief = subprocess.Popen(as_tenant(["timeout", 40, "cat", fifo]), stdout=out)
            try:
                time.sleep(0.3)
                p = run_bpfprof(record + ["-d", 1, "-o", fifo], check=False, timeout=30)
                assert p.returncode == 2, p.stderr
                assert "FIFO owned by" in p.stderr, p.stderr
            finally:
                # Let the thief's open() return (a writer that writes nothing).
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
                thief.wait(timeout=60)
        stolen = loot.read_bytes()
    finally:
        loot.unlink()
    assert stolen == b"", stolen[:200]


def test_o_fifo_planted_during_the_run_does_not_stop_sigterm(record, shared_dir):
    """Root's run until SIGTERM, -o free at the start; the tenant makes a FIFO
    there meanwhile. SIGTERM ends the run, the write refuses the FIFO without
    blocking, and bpfprof exits (it used to hang in open(), deaf to signals)."""
    fifo = shared_dir / "p.folded"
    proc = start(record + ["-o", fifo])
    seen = wait_attached(proc)
    tenant_ok(["mkfifo", "-m", "0666", fifo])
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # a second request: "exit now"
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("bpfprof hung on the tenant's FIFO, deaf to SIGTERM")
    err = seen + err
    assert proc.returncode == 1, err
    assert f"it is a FIFO owned by {TENANT}" in err, err
    assert time.monotonic() - t0 < 15


def test_o_usual_targets_still_work(record, tmp_path, shared_dir):
    """/dev/null, /dev/stdout, a new file in /tmp-like directory, root's own
    symlink there, root's own FIFO with a reader: written as before."""
    src = tmp_path / "in.folded"
    src.write_text("app;main;work 5\napp;main;idle 2\n")
    run_bpfprof(["convert", src, "-o", "/dev/null"])
    p = run_bpfprof(["convert", src, "-o", "/dev/stdout"])
    assert parse_folded(p.stdout) == {"app;main;work": 5, "app;main;idle": 2}
    # A regular file behind /dev/stdout: written in place. (bpfprof used to
    # rename its temp file over /dev/stdout itself: a /dev of its own here.)
    with open(tmp_path / "stdout.txt", "w") as f:
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            'mount -t tmpfs -o mode=0755 none /dev && '
                            'ln -s /proc/self/fd/1 /dev/stdout && '
                            '"$0" convert "$1" -o /dev/stdout && test -L /dev/stdout',
                            str(BPFPROF), str(src)], stdout=f, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    assert parse_folded((tmp_path / "stdout.txt").read_text())["app;main;work"] == 5
    run_bpfprof(["convert", src, "-o", shared_dir / "new.folded"])
    assert parse_folded((shared_dir / "new.folded").read_text())["app;main;work"] == 5
    os.symlink("/dev/null", shared_dir / "mine.folded")  # root's own link
    run_bpfprof(["convert", src, "-o", shared_dir / "mine.folded"])
    fifo = tmp_path / "fifo.folded"
    os.mkfifo(fifo)
    with open(tmp_path / "from_fifo.folded", "w") as out:  # not a pipe: it could fill
        reader = subprocess.Popen(["cat", str(fifo)], stdout=out)
        time.sleep(0.3)
        run_bpfprof(record + ["-d", 1, "-o", fifo])
        reader.wait(timeout=30)
    got = (tmp_path / "from_fifo.folded").read_text()
    assert sum(parse_folded(got).values()) > 0, got


# --- item 5: a squatted or shared --output-dir ---------------------------------

def test_output_dir_squatted_by_the_tenant_is_refused(record, shared_dir):
    """The tenant made root's --output-dir first (/tmp/rt-store): refused at
    start, naming its owner and mode, as sshd's StrictModes does."""
    d = shared_dir / "rt-store"
    tenant_ok(["mkdir", "-m", "0755", d])
    p = run_bpfprof(record + ["--interval", 1, "--output-dir", d, "-d", 3], check=False,
                    timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"cannot use --output-dir {d}: owned by {TENANT} (uid {tenant().pw_uid}), mode 0755" \
        in p.stderr, p.stderr
    assert os.listdir(d) == []


def test_output_dir_others_can_write_is_refused(record, shared_dir):
    """A 1777 directory (root's, like /tmp) as --output-dir: refused."""
    p = run_bpfprof(record + ["--interval", 1, "--output-dir", shared_dir, "-d", 3],
                    check=False, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "owned by root (uid 0), mode 1777" in p.stderr, p.stderr
    assert not glob.glob(f"{shared_dir}/bpfprof-*")


def test_output_dir_swapped_while_running(record, tenant_dir, secret):
    """Root's --output-dir is a directory root made in the tenant's directory.
    While bpfprof runs, the tenant moves it aside and puts a symlink into a
    root-only directory in its place, then a directory of FIFOs named like
    the next files. Every write still goes into the directory bpfprof checked
    (its descriptor), none blocks, none lands in the root-only directory, and
    the summary counts what is really there."""
    d = tenant_dir / "store"
    proc = start(record + ["--interval", 1, "--output-dir", d, "-d", 5.5])
    seen = wait_attached(proc)
    assert d.stat().st_uid == 0
    time.sleep(1.5)
    tenant_ok(["mv", d, tenant_dir / "store.orig"])
    tenant_ok(["ln", "-s", secret, d])
    time.sleep(1.5)
    now = time.time()
    names = [time.strftime("bpfprof-%Y%m%dT%H%M%SZ.pb.gz", time.gmtime(now + i)) for i in range(-2, 6)]
    tenant_ok(["rm", d])
    tenant_ok(["mkdir", d])
    tenant_ok(["mkfifo"] + [d / n for n in names])
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("bpfprof blocked on the tenant's swapped directory")
    err = seen + err
    assert proc.returncode == 0, err
    written, failed = summary_written(err)
    files = stored(tenant_dir / "store.orig")
    assert written >= 3 and failed == 0, err
    assert len(files) == written, (files, err)
    for f in files:
        assert os.stat(f).st_uid == 0
        pprof.decode(Path(f).read_bytes())
    assert sorted(os.listdir(secret)) == ["p.folded"]
    assert (secret / "p.folded").read_text() == "root's own file\n"
    assert not any(f.startswith("bpfprof-") and not (d / f).is_fifo() for f in os.listdir(d))


# --- items 10, 14: retention removes only the agent's own files ---------------

def test_retention_spares_tenant_files(record, shared_dir):
    """Files the tenant planted while root's directory was still open to all
    (named like profiles from year 9999, and like temporary files), before
    the admin closed it (chmod 0755): --keep 3 counts and removes only
    root's own profiles - the newest real ones stay, the tenant's stay too."""
    planted = [f"bpfprof-9999123{i}T000000Z.pb.gz" for i in range(1, 6)]
    planted += ["bpfprof-20200101T000000Z.pb.gz.tmp.AbCdEf", "bpfprof-x.tmp.y"]
    for n in planted:
        tenant_ok(["sh", "-c", f"echo planted > {shared_dir / n}"])
    shared_dir.chmod(0o755)
    p = run_bpfprof(record + ["--interval", 1, "--output-dir", shared_dir, "--keep", 3,
                              "-d", 5.5], timeout=120)
    for n in planted:
        f = shared_dir / n
        assert f.exists(), f"retention removed the tenant's {n}"
        assert f.stat().st_uid == tenant().pw_uid and f.read_text() == "planted\n"
    written, failed = summary_written(p.stderr)
    mine = [f for f in stored(shared_dir) if os.stat(f).st_uid == 0]
    assert written >= 3 and failed == 0, p.stderr
    assert len(mine) == 3, (mine, p.stderr)
    for f in mine:
        pprof.decode(Path(f).read_bytes())
    assert f"({len(mine)} kept" in p.stderr, p.stderr


# --- item 15: no listing of the directory after every write -------------------

def test_prune_does_not_list_the_directory(record, tmp_path):
    """With --keep, the store lists its directory once at start and then
    remembers what it wrote: getdents64 on the directory does not grow with
    the intervals (it listed it after every write, 70% of a core with
    300,000 files at --interval 1)."""
    d = tmp_path / "store"
    d.mkdir()
    for i in range(2000):  # others' files: several getdents64 calls per listing
        (d / f"other-{i:05d}.txt").write_text("")
    log = tmp_path / "strace.log"
    p = subprocess.run(["strace", "-f", "--seccomp-bpf", "-y", "-e", "trace=getdents64",
                        "-o", str(log), str(BPFPROF)] + [str(a) for a in record] +
                       ["--interval", "1", "--output-dir", str(d), "--keep", "2", "-d", "5.5"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    written, _ = summary_written(p.stderr)
    assert written >= 3, p.stderr
    calls = [ln for ln in log.read_text().splitlines() if f"<{d}>" in ln]
    # One listing: a few calls until the end of the directory, whatever the intervals.
    assert 0 < len(calls) <= 6, "\n".join(calls)
    assert len(stored(d)) == 2

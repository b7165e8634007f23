# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof annotate against a tenant's binaries (threat model rule 1 and 3).

A binary's line table is the tenant's own bytes: `#line 1 "/etc/shadow"`
makes it name any file. Root's annotate must never print a file the
profiled process could not read (live, -p) or the binary's owner could not
read (a saved profile), nor read a root-only debug file a tenant's debug
link leads to; the tenant's own readable sources still show, and
--source-dir reads where the operator says, inside that directory. A
crafted 20 MB line program must not cost annotate gigabytes and seconds.

Every program here is built and run by the tenant, in a directory it owns.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BPFPROF, as_tenant, run_bpfprof, strip_with_debug_file, tenant, tenant_run

SECRET_TOKEN = "ROOT-ONLY-7f3a9c"

# Three hot loops: the tenant's own lines (first, so their numbers are the
# file's), then loops whose lines are /etc/shadow's and a root-only file's
# (and the code around them the tenant's file's again).
PROG = r"""
volatile unsigned long sink;
__attribute__((noinline)) void hot_own(void)
{
	for (unsigned long i = 0; i < 50000000UL; i++) {
		sink += i * 7919; /* tenant-visible-line */
		sink ^= i >> 2;
	}
}
__attribute__((noinline)) void hot_shadow(void)
{
#line 1 "/etc/shadow"
	for (unsigned long i = 0; i < 50000000UL; i++) { sink += i * 7;
	sink ^= i;
	sink += 3; }
}
#line 30 "@SRC@"
__attribute__((noinline)) void hot_secret(void)
{
#line 1 "@SECRET@"
	for (unsigned long i = 0; i < 50000000UL; i++) { sink += i * 11;
	sink ^= i >> 1;
	sink += 5; }
}
#line 40 "@SRC@"
int main(void)
{
	for (;;) {
		hot_shadow();
		hot_secret();
		hot_own();
	}
}
"""


@pytest.fixture
def secret_file():
    """A root-owned 0600 file of known content, in a directory anyone may search."""
    d = Path(root_dir())
    d.chmod(0o755)
    f = d / "secret.txt"
    f.write_text("".join(f"{SECRET_TOKEN} line {i}\n" for i in range(1, 10)))
    f.chmod(0o600)
    yield f
    shutil.rmtree(d, ignore_errors=True)


def root_dir():
    """A directory root makes (0700 until chmod)."""
    return tempfile.mkdtemp(prefix="bpfprof-rootonly-", dir="/tmp")


def build_as_tenant(tenant_dir, secret, name="prog", extra=()):
    """The tenant writes and compiles PROG in its directory; returns the binary's path."""
    src = tenant_dir / f"{name}.c"
    text = PROG.replace("@SRC@", str(src)).replace("@SECRET@", str(secret))
    r = tenant_run(["sh", "-c", f"cat > '{src}'"], input=text)
    assert r.returncode == 0, r.stderr
    out = tenant_dir / name
    r = tenant_run(["cc", "-g", "-O1", *extra, "-o", str(out), str(src)])
    assert r.returncode == 0, r.stderr
    return out


class TenantProcess:
    """A program the tenant runs, stopped (by its pid) at the end."""

    def __init__(self, argv):
        self.p = subprocess.Popen(as_tenant(argv))
        self.pid = self.p.pid
        time.sleep(0.3)
        assert self.p.poll() is None, "the tenant's program exited"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def shadow_lines():
    """/etc/shadow's lines as root reads them (the start of each: what a listing would show)."""
    lines = [ln[:24] for ln in Path("/etc/shadow").read_text().splitlines() if len(ln) > 8]
    assert lines
    return lines


def assert_no_leak(out):
    for ln in shadow_lines():
        assert ln not in out, f"a line of /etc/shadow ({ln!r}...) was printed:\n{out}"
    assert SECRET_TOKEN not in out, f"the root-only file was printed:\n{out}"


def test_live_annotate_withholds_files_the_process_cannot_read(tenant_dir, secret_file):
    binary = build_as_tenant(tenant_dir, secret_file)
    uid = tenant().pw_uid
    with TenantProcess([binary]) as t:
        for fn, path in (("hot_shadow", "/etc/shadow"), ("hot_secret", str(secret_file))):
            p = run_bpfprof(["annotate", "-F", "499", "-p", t.pid, "-d", "2", fn])
            assert_no_leak(p.stdout + p.stderr)
            # The listing is there, with the lines' numbers but not their text, and says why.
            assert re.search(rf"^\s+{os.path.basename(path)}:1\b", p.stdout, re.M), p.stdout
            assert (f"source withheld: {path} is not readable by pid {t.pid} (uid {uid})"
                    in p.stdout), p.stdout
            assert p.stdout.count("source withheld") == 1, p.stdout


def test_saved_profile_annotate_withholds_files_the_owner_cannot_read(tenant_dir, secret_file,
                                                                      tmp_path):
    binary = build_as_tenant(tenant_dir, secret_file)
    uid = tenant().pw_uid
    prof = tmp_path / "t.pb.gz"
    with TenantProcess([binary]) as t:
        run_bpfprof(["-p", t.pid, "-d", "3", "-F", "499", "--addresses", "-o", prof])
    for fn, path in (("hot_shadow", "/etc/shadow"), ("hot_secret", str(secret_file))):
        p = run_bpfprof(["annotate", prof, fn])
        assert_no_leak(p.stdout + p.stderr)
        assert (f"source withheld: {path} is not readable by uid {uid}, the owner of {binary}"
                in p.stdout), p.stdout
    # The tenant's own file shows, from the saved profile too.
    p = run_bpfprof(["annotate", prof, "hot_own"])
    assert "tenant-visible-line" in p.stdout, p.stdout
    assert "withheld" not in p.stdout, p.stdout


def test_tenant_own_source_shows_and_source_dir_is_the_operators(tenant_dir, secret_file):
    binary = build_as_tenant(tenant_dir, secret_file)
    # The tenant's source, 0600 and its own: readable by the process and the binary's owner.
    assert tenant_run(["chmod", "600", str(tenant_dir / "prog.c")]).returncode == 0
    # In the operator's directory (tenant-writable here), the tenant plants links to
    # root's files; they resolve inside that directory, never to the host's files.
    opdir = tenant_dir / "opdir"
    for cmd in (["mkdir", "-p", str(opdir / "etc")],
                ["ln", "-s", "/etc/shadow", str(opdir / "etc" / "shadow")],
                ["ln", "-s", str(secret_file), str(opdir / "secret.txt")]):
        assert tenant_run(cmd).returncode == 0
    with TenantProcess([binary]) as t:
        p = run_bpfprof(["annotate", "-F", "499", "-p", t.pid, "-d", "2", "hot_own"])
        assert "tenant-visible-line" in p.stdout, p.stdout
        assert "withheld" not in p.stdout, p.stdout
        for fn in ("hot_shadow", "hot_secret"):
            p = run_bpfprof(["annotate", "-F", "499", "-p", t.pid, "-d", "2",
                             "--source-dir", opdir, fn])
            assert_no_leak(p.stdout + p.stderr)
    # What the operator puts there is read, by the path's name (DIR/NAME).
    (tenant_dir / "opdir2").mkdir()
    (tenant_dir / "opdir2" / "shadow").write_text("operator-provided line one\nline two\n")
    with TenantProcess([binary]) as t:
        p = run_bpfprof(["annotate", "-F", "499", "-p", t.pid, "-d", "2",
                         "--source-dir", tenant_dir / "opdir2", "hot_shadow"])
    assert "operator-provided line one" in p.stdout, p.stdout
    assert_no_leak(p.stdout)
    p = subprocess.run([str(BPFPROF), "annotate", "--source-dir", tenant_dir / "none", "x"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--source-dir" in p.stderr, p.stderr


def test_debug_link_to_a_root_only_debug_file_is_not_followed(tenant_dir, tmp_path):
    """Root keeps a program's debug file private (0600); its stripped binary is
    public. The tenant copies the binary and links its debug link's name to
    root's debug file: neither record nor annotate may read it for the tenant."""
    rootdir = Path(root_dir())
    try:
        rootdir.chmod(0o755)
        src = rootdir / "app.c"
        src.write_text("volatile unsigned long sink;\n"
                       "__attribute__((noinline)) void private_name_4b1d(void)\n"
                       "{ for (unsigned long i = 0;; i++) sink += i * 13; }\n"
                       "int main(void) { private_name_4b1d(); }\n")
        full = rootdir / "app.full"
        subprocess.run(["cc", "-g", "-O1", "-o", full, src], check=True)
        strip_with_debug_file(full, rootdir / "app", rootdir / "app.debug")
        (rootdir / "app.debug").chmod(0o600)
        subprocess.run(["objcopy", "--add-gnu-debuglink=app.debug", rootdir / "app"],
                       check=True, cwd=rootdir)
        (rootdir / "app").chmod(0o755)
        # The tenant's copy, beside a link named as the debug link says.
        mine = tenant_dir / "app"
        assert tenant_run(["cp", rootdir / "app", mine]).returncode == 0
        assert tenant_run(["ln", "-s", rootdir / "app.debug",
                           tenant_dir / "app.debug"]).returncode == 0
        with TenantProcess([mine]) as t:
            p = run_bpfprof(["-p", t.pid, "-d", "2", "-F", "499"])
            assert "private_name_4b1d" not in p.stdout, p.stdout
            assert re.search(r"app\+0x[0-9a-f]+", p.stdout), p.stdout
            # annotate finds no function of that name: it is only in root's debug file.
            p = run_bpfprof(["annotate", "-p", t.pid, "-d", "2", "-F", "499",
                             "private_name_4b1d"], check=False)
            assert p.returncode == 1 and "no samples of a function named" in p.stderr, \
                p.stdout + p.stderr
            assert "separate debug file" not in p.stdout, p.stdout
    finally:
        shutil.rmtree(rootdir, ignore_errors=True)


GEN = r"""
import struct, subprocess, sys
def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
src, prog, nrows, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
syms = subprocess.run(["nm", "-S", prog], capture_output=True, text=True).stdout.split("\n")
addr, size = next((int(f[0], 16), int(f[1], 16)) for f in (l.split() for l in syms)
                  if len(f) == 4 and f[3] == "hot_own")
# DWARF 4: min_inst 1, max_ops 1, is_stmt 1, line_base -5, line_range 14, opcode_base 13
hdr = bytes([1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
hdr += b"\0" + src.encode() + b"\0" + uleb(0) * 3 + b"\0"
body = b"\x00" + uleb(9) + b"\x02" + struct.pack("<Q", addr) + b"\x01"
body += b"\x13" * nrows          # a row at the same address, the next line
body += b"\x02" + uleb(size) + b"\x00\x01\x01"
unit = struct.pack("<H", 4) + struct.pack("<I", len(hdr)) + hdr + body
open(out, "wb").write(struct.pack("<I", len(unit)) + unit)
"""


def test_huge_line_program_is_decoded_in_bounded_memory_and_time(tenant_dir, secret_file,
                                                                   tmp_path):
    """20 million rows at one address (20 MB of .debug_line): libdw's whole-unit
    decode took annotate 2 GB and 15 s; only the function's rows are kept now."""
    nrows = 20_000_000
    binary = build_as_tenant(tenant_dir, secret_file, extra=["-gdwarf-4"])
    line = tenant_dir / "line.bin"
    crafted = tenant_dir / "huge"
    r = tenant_run(["/usr/bin/python3", "-c", GEN, tenant_dir / "prog.c", binary, nrows, line])
    assert r.returncode == 0, r.stderr
    r = tenant_run(["objcopy", f"--update-section=.debug_line={line}", binary, crafted])
    assert r.returncode == 0, r.stderr
    assert crafted.stat().st_size > 20_000_000
    prof = tmp_path / "huge.pb.gz"
    with TenantProcess([crafted]) as t:
        run_bpfprof(["-p", t.pid, "-d", "3", "-F", "499", "--addresses", "-o", prof])
        live = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S %M", str(BPFPROF), "annotate",
                               "-p", str(t.pid), "-d", "2", "-F", "499", "hot_own"],
                              capture_output=True, text=True, timeout=120)
    saved = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S %M", str(BPFPROF), "annotate",
                            str(prof), "hot_own"], capture_output=True, text=True, timeout=120)
    for p in (live, saved):
        assert p.returncode == 0, p.stderr
        user, sys_, rss_kb = re.search(r"TIME ([\d.]+) ([\d.]+) (\d+)", p.stderr).groups()
        # The section itself is read (20 MB); its rows are not kept (they were 2 GB).
        assert int(rss_kb) < 100 * 1024, f"peak RSS {rss_kb} KB\n{p.stderr}"
        # CPU time, not wall time: the machine is shared. It was ~15 s.
        assert float(user) + float(sys_) < 4, p.stderr
        # The function's lines: the last row at its address is the line shown.
        assert f"prog.c:{nrows + 1}" in p.stdout, p.stdout
        assert "tenant-visible-line" not in p.stdout  # line 20000001 has no text

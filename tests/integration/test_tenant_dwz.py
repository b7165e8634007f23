# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""A tenant's dwz file (threat model rules 1 and 5).

dwz moves the DWARF that programs share into one file and leaves in each a
.gnu_debugaltlink naming it (a path and a build ID) and strings and
references into it (DW_FORM_GNU_strp_alt, _ref_alt). libdw opens that file
on its own at the first such string, by the path the program names, with a
blocking open(), as root, in bpfprof's mount namespace: a tenant whose
program named a FIFO stopped root's agent in its first drain, for good
(SIGINT and -d unheard). bpfprof now never lets libdw look for it: the
profile comes out on time, its frames named from the symbol table, and
annotate's lines too.

Split DWARF is the same: a skeleton unit names its .dwo (DW_AT_dwo_name,
beside DW_AT_comp_dir), and libdw opened it, blocking, as soon as the unit
walk asked for the split unit's DIE; bpfprof no longer asks (it skips split
units anyway).

The program is the tenant's, built by it with gcc -g and dwz -m, in a
directory it owns.
"""
import os
import shutil
import subprocess
import time

import pytest

from conftest import as_tenant, parse_folded, run_bpfprof, tenant_program, tenant_run

PROG = r"""
volatile double sink;
static inline __attribute__((always_inline)) double inner(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
__attribute__((noinline)) double hot(double x)
{
	return inner(x) + inner(x + 1);
}
int main(void)
{
	for (;;)
		sink += hot(sink);
}
"""

pytestmark = pytest.mark.skipif(not shutil.which("dwz"), reason="dwz not installed")


def build_dwz(d, altname):
    """Two copies of the tenant's program made dwz's (the second is what dwz
    needs to find something shared), their .gnu_debugaltlink naming
    altname; the first one's path."""
    src = tenant_program(d, PROG, "hot.c")
    a1, a2 = f"{d}/a1", f"{d}/a2"
    for out in (a1, a2):
        r = tenant_run(["gcc", "-O2", "-g", "-o", out, src])
        assert r.returncode == 0, r.stderr
    r = tenant_run(["dwz", "-m", f"{d}/common.dwz", "-M", altname, a1, a2])
    assert r.returncode == 0, r.stderr
    info = subprocess.run(["readelf", "--debug-dump=info", a1], capture_output=True,
                          text=True).stdout
    assert "alt indirect string" in info, "dwz moved no string: the test tests nothing"
    link = subprocess.run(["readelf", "-p", ".gnu_debugaltlink", a1], capture_output=True,
                          check=True).stdout
    assert altname.encode() in link, link
    return a1


@pytest.mark.parametrize("kind", ["fifo", "real"])
def test_dwz_file_a_tenant_names_is_never_opened(tenant_dir, tmp_path, kind):
    """kind fifo: the link names a FIFO the tenant made (before: the agent
    blocked in libdw's open() and never wrote its profile); kind real: the
    dwz file itself, which libdw does not open either (bpfprof reads it
    itself, safely: test_dwz_names.py): the profile is the same, hot's
    inlined calls under it."""
    d = str(tenant_dir)
    alt = f"{d}/fifo" if kind == "fifo" else f"{d}/common.dwz"
    a1 = build_dwz(d, alt)
    if kind == "fifo":
        r = tenant_run(["rm", "-f", f"{d}/common.dwz"])
        r = tenant_run(["mkfifo", alt])
        assert r.returncode == 0, r.stderr
    prog = subprocess.Popen(as_tenant([a1]))
    try:
        time.sleep(0.3)
        out = tmp_path / "out.folded"
        t0 = time.monotonic()
        p = run_bpfprof(["-p", prog.pid, "-d", "3", "-o", out], timeout=90)
        took = time.monotonic() - t0
        stacks = parse_folded(out.read_text())
        mine = {s: n for s, n in stacks.items() if s.startswith("a1;")}
        n = sum(mine.values())
        assert n > 0, (p.stderr, stacks)
        hot = sum(c for s, c in mine.items() if ";main;hot" in s)
        # A spinning program sampled for 3 s: nearly every sample in hot
        # (main's loop around it is a few instructions).
        assert hot >= 0.9 * n, (hot, n, mine)
        print(f"{kind}: {n} samples, {hot} in main;hot, {took:.1f} s")
        # annotate reads the same DWARF (its line table, through srcline):
        # hot's lines, with the tenant's source beside them.
        a = run_bpfprof(["annotate", "-F", "499", "-p", prog.pid, "-d", "2", "hot"], timeout=90)
        assert "x * 1.0000001 + 0.5" in a.stdout, a.stdout + a.stderr
    finally:
        prog.kill()
        prog.wait()
    if kind == "fifo":
        # Nobody opened the FIFO: a writer opening it without blocking finds
        # no reader.
        with pytest.raises(OSError):
            os.close(os.open(alt, os.O_WRONLY | os.O_NONBLOCK))


def test_split_dwarf_object_a_tenant_names_is_never_opened(tenant_dir, tmp_path):
    """-gsplit-dwarf: the tenant's hot.dwo replaced by a FIFO (before: the
    agent blocked in libdw's open() from dwarf_get_units())."""
    d = str(tenant_dir)
    src = tenant_program(d, PROG, "hot.c")
    r = tenant_run(["sh", "-c", f"cd {d} && gcc -O2 -g -gsplit-dwarf -c hot.c -o hot.o && "
                    f"gcc -o hot hot.o && rm hot.dwo && mkfifo hot.dwo"])
    assert r.returncode == 0, r.stderr
    info = subprocess.run(["readelf", "--debug-dump=info", f"{d}/hot"], capture_output=True,
                          check=True).stdout
    assert b"DW_AT_dwo_name" in info, "no skeleton unit: the test tests nothing"
    prog = subprocess.Popen(as_tenant([f"{d}/hot"]))
    try:
        time.sleep(0.3)
        out = tmp_path / "out.folded"
        p = run_bpfprof(["-p", prog.pid, "-d", "2", "-o", out], timeout=90)
        mine = {s: n for s, n in parse_folded(out.read_text()).items() if s.startswith("hot;")}
        n = sum(mine.values())
        hot = sum(c for s, c in mine.items() if ";main;hot" in s)
        assert n > 0 and hot >= 0.9 * n, (hot, n, mine, p.stderr)
        a = run_bpfprof(["annotate", "-F", "499", "-p", prog.pid, "-d", "2", "hot"], timeout=90)
        assert a.returncode == 0 and "hot" in a.stdout, a.stdout + a.stderr
    finally:
        prog.kill()
        prog.wait()
    with pytest.raises(OSError):
        os.close(os.open(f"{d}/hot.dwo", os.O_WRONLY | os.O_NONBLOCK))

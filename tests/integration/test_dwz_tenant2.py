# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""A tenant's debug file never makes bpfprof read a dwz file the tenant
could not read (threat model rule 1; review10 M1).

The program is root's (stripped, in a root-owned directory, readable by
all), so its owner could read anything. Its debug file is looked for in the
process's root first, and a tenant controls that: in its own user and mount
namespaces (unshare -Urm) it mounts a tmpfs on /usr/lib/debug and puts
there a debug file of the program's build ID whose .gnu_debugaltlink names
a root-only file (0600, in a 0700 directory) with the build ID that file
has. The names DWARF takes from there must not come out: the dwz file must
be readable by the debug file's owner (the tenant) as well as by the
binary's. The control: the same file readable by all is used (so the test
tests something).
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import as_tenant, parse_folded, run_bpfprof

PROG = r"""
volatile double sink;
static inline __attribute__((always_inline)) double secret_in_dwz(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
__attribute__((noinline)) double hot(double x)
{
	return secret_in_dwz(x) + secret_in_dwz(x + 1);
}
int main(void)
{
	for (;;)
		sink += hot(sink);
}
"""


def userns_ok():
    if not shutil.which("dwz") or not shutil.which("unshare"):
        return False
    r = subprocess.run(as_tenant(["unshare", "-Urm", "true"]), capture_output=True)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not userns_ok(),
                                reason="no dwz, or no unprivileged user namespaces")


@pytest.mark.parametrize("mode", ["private", "readable"])
def test_tenant_debug_file_cannot_name_a_root_only_dwz_file(tmp_path, mode):
    import tempfile
    # Root's: the program (readable by all) and the dwz file (private or not).
    pub = tempfile.mkdtemp(prefix="bpfprof-dwz2-pub-", dir="/tmp")
    priv = tempfile.mkdtemp(prefix="bpfprof-dwz2-priv-", dir="/tmp")
    try:
        os.chmod(pub, 0o755)
        os.chmod(priv, 0o700 if mode == "private" else 0o755)
        src = os.path.join(pub, "hot.c")
        with open(src, "w") as f:
            f.write(PROG)
        for out in ("a1", "a2"):
            subprocess.run(["gcc", "-O2", "-g", "-o", os.path.join(pub, out), src], check=True)
        target = os.path.join(priv, "common.dwz")
        subprocess.run(["dwz", "-m", "common.dwz", "-M", target, "a1", "a2"], check=True,
                       cwd=pub)
        shutil.move(os.path.join(pub, "common.dwz"), target)
        os.chmod(target, 0o600 if mode == "private" else 0o644)
        prog = os.path.join(pub, "prog")
        subprocess.run(["strip", "-s", os.path.join(pub, "a1"), "-o", prog], check=True)
        os.chmod(prog, 0o755)
        # The tenant's crafted debug file: a1 itself (its DWARF, its link).
        os.chmod(os.path.join(pub, "a1"), 0o644)
        assert b"secret_in_dwz" not in open(os.path.join(pub, "a1"), "rb").read()
        assert b"secret_in_dwz" in open(target, "rb").read()
        bid = re.search(r"Build ID: ([0-9a-f]+)",
                        subprocess.run(["readelf", "-n", prog], capture_output=True, text=True,
                                       check=True).stdout).group(1)
        script = os.path.join(pub, "run.sh")
        with open(script, "w") as f:
            f.write(f"""set -e
mount -t tmpfs none /usr/lib/debug
mkdir -p /usr/lib/debug/.build-id/{bid[:2]}
cp {pub}/a1 /usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug
if cat {target} >/dev/null 2>&1; then echo readable; else echo denied; fi
exec {prog}
""")
        os.chmod(script, 0o644)
        p = subprocess.Popen(as_tenant(["unshare", "-Urm", "sh", script]),
                             stdout=subprocess.PIPE, text=True)
        try:
            can = p.stdout.readline().strip()
            assert can == ("denied" if mode == "private" else "readable"), can
            time.sleep(0.3)
            folded = tmp_path / "out.folded"
            r = run_bpfprof(["-v", "-p", p.pid, "-d", "3", "-o", folded], timeout=90)
        finally:
            p.kill()
            p.wait()
        stacks = {s: n for s, n in parse_folded(folded.read_text()).items()
                  if s.startswith("prog;")}
        n = sum(stacks.values())
        assert n >= 10, (stacks, r.stderr)
        named = sum(c for s, c in stacks.items() if "secret_in_dwz" in s)
        # The tenant's debug file was read (its own DWARF: hot is there).
        assert sum(c for s, c in stacks.items() if ";main;hot" in s) >= 0.8 * n, stacks
        if mode == "private":
            assert named == 0, (stacks, r.stderr)
            assert re.search(r"files naming a dwz file: 0 read it, 1 not", r.stderr), r.stderr
        else:
            assert named >= 0.8 * n, (named, n, stacks, r.stderr)
            assert re.search(r"files naming a dwz file: 1 read it, 0 not", r.stderr), r.stderr
        print(f"{mode}: {named}/{n} samples named secret_in_dwz")
    finally:
        shutil.rmtree(pub, ignore_errors=True)
        shutil.rmtree(priv, ignore_errors=True)

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""A host without tracefs mounted (a fresh boot, a container's /sys): the
programs that stop a started command at its exec (--alloc -- COMMAND, count
-- COMMAND) attach as BTF-typed tracepoints, which need no tracefs, as the
CPU profile's already did. Before, both failed with "cannot attach to
sched_process_exec: No such file or directory" (libbpf reads a classic
tracepoint's id from tracefs).

Each run is in its own mount namespace with tracefs unmounted there (the
host's mounts are left as they are)."""
import json
import subprocess

from conftest import BPFPROF, parse_folded, wl


def without_tracefs(argv, timeout=120):
    """argv run in a new mount namespace where no tracefs is mounted and
    /sys/kernel/debug is an empty tmpfs (with debugfs mounted, reading
    /sys/kernel/debug/tracing would mount tracefs again: libbpf looks there
    first). Fails if a tracefs is mounted there after the run."""
    script = (
        "for m in $(awk '$3 == \"tracefs\" {print $2}' /proc/self/mounts | sort -r); do "
        "umount \"$m\" || exit 99; done; "
        "mount -t tmpfs none /sys/kernel/debug || exit 99; "
        "if awk '$3 == \"tracefs\"' /proc/self/mounts | grep -q .; then exit 98; fi; "
        "\"$@\"; rc=$?; "
        "if awk '$3 == \"tracefs\"' /proc/self/mounts | grep -q .; then exit 97; fi; "
        "exit $rc")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]
                       + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    assert p.returncode not in (98, 99), "tracefs could not be hidden: " + p.stderr
    assert p.returncode != 97, "the run mounted tracefs: " + p.stderr
    return p


def test_alloc_command_without_tracefs(tmp_path):
    out = tmp_path / "a.folded"
    p = without_tracefs([BPFPROF, "--alloc", "-o", out, "--", wl("allocwork"), "sites", "32"])
    assert p.returncode == 0, p.stderr
    assert "sched_process_exec" not in p.stderr
    own = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    folded = parse_folded(out.read_text())
    got = {}
    for stack, n in folded.items():
        leaf = stack.split(";")[-1]
        got[leaf] = got.get(leaf, 0) + n
    # every site of the workload profiled (32 MiB each: ~64 samples a site)
    for site in own["sites"]:
        assert got.get(site, 0) > 0, (site, sorted(got))


def test_count_command_without_tracefs(tmp_path):
    out = tmp_path / "c.json"
    p = without_tracefs([BPFPROF, "count", "-f", "json", "-o", out, "bp_a", "--",
                         wl("countwork")])
    assert p.returncode == 0, p.stderr
    assert "sched_process_exec" not in p.stderr
    doc = json.loads(out.read_text())
    fns = {f["function"]: f for f in doc["functions"]}
    assert fns["bp_a"]["calls"] == 1000

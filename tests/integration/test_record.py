# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bpfprof record on real processes with known call chains (root, real BPF)."""
import os
import re
import signal
import struct
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import (BPFPROF, wait_attached, Workload, cpu_seconds, uwl, count_with, frames_of, has_chain, leaf,
                      parse_folded, run_bpfprof, sampled_seconds, total, wl, Sampled, assert_count,
                      assert_count_at_least, assert_share, assert_same_share, command_cpu,
                      assert_most)

FREQ = 99


def test_pid_busy_thread_count_chain_and_split(tmp_path):
    """-p on one busy thread: F samples per CPU second, exact chain, 2:1 leaf
    split. 8 s (~800 samples): 5 sigmas of the split is then +-0.08."""
    with Workload(wl("busy"), 30) as w:
        p = Sampled(["-p", w.pid, "-d", 8], [w.pid])
    folded = parse_folded(p.stdout)
    n = total(folded, "busy")
    samples, secs = sampled_seconds(p.stderr)
    assert samples == n, "summary disagrees with the output"
    # The CPU time the process used while sampled, times F.
    assert_count(n, FREQ * p.cpu[w.pid], "busy")

    a = count_with(folded, lambda s: has_chain(s, ["main", "run", "outer_loop", "leaf_a"]))
    b = count_with(folded, lambda s: has_chain(s, ["main", "run", "outer_loop", "leaf_b"]))
    assert_most(a + b, n, f"main;run;outer_loop;leaf_*:\n{p.stdout}")
    assert_share(a / (a + b), 2 / 3, a + b, "leaf_a's share", floor=0.02)
    # Nothing else may appear: -p means this process only.
    assert set(s.split(";")[0] for s in folded) == {"busy"}


@pytest.mark.parametrize("prefill", [True, False], ids=["during-load", "after-load"])
def test_map_slots_filled_during_or_after_the_load(prefill):
    """The buffer sets and the first unwind-table chunk go into their
    map-in-map slots while the kernel verifies the program (maps made ahead
    and handed to libbpf) or, as after any failure there, after the load:
    either way every sample is counted and user stacks are walked with the
    tables in that first chunk."""
    env = dict(os.environ)
    if not prefill:
        env["BPFPROF_TEST_NO_PREFILL"] = "1"
    with Workload(wl("busy"), 30) as w:
        p = Sampled(["-p", w.pid, "-d", 3, "-v"], [w.pid], env=env)
    assert f"map slots filled {'during' if prefill else 'after'} it" in p.stderr, p.stderr
    folded = parse_folded(p.stdout)
    n = total(folded, "busy")
    assert_count(n, FREQ * p.cpu[w.pid], "busy")
    chain = count_with(folded, lambda s: ";main;run;outer_loop;leaf_" in s)
    assert_most(chain, n, f"main;run;outer_loop:\n{p.stdout}")
    # Several frames per sample come from tables: the first chunk is in its slot.
    m = re.search(r"unwind: (\d+) frames from tables", p.stderr)
    assert m and int(m.group(1)) >= n, p.stderr


def test_pid_multithreaded_counts_every_thread():
    with Workload(wl("busy"), 30, 2) as w:
        p = Sampled(["-p", w.pid, "-d", 3, "--per-thread"], [w.pid])
    folded = parse_folded(p.stdout)
    n = total(folded)
    _, secs = sampled_seconds(p.stderr)
    cpu = p.cpu[w.pid]
    assert_count(n, FREQ * cpu, f"two threads, {cpu:.2f} CPU s")
    assert count_with(folded, lambda s: has_chain(s, ["thread_main", "outer_loop", "leaf_a"])) > 0
    # Two threads on two CPUs: clearly more than one thread could produce alone.
    if cpu > 1.5 * secs:
        assert_count_at_least(n, 1.5 * FREQ * secs, "more than one thread's worth")


def test_all_cpus_sees_cpu_and_syscall_workloads():
    (busy, BUSY), (sysc, SYSC) = uwl("busy"), uwl("syscalls")
    with Workload(busy, 30) as b, Workload(sysc, 30) as s:
        p = Sampled(["-a", "-d", 3], [b.pid, s.pid])
    folded = parse_folded(p.stdout)
    # Each workload: F samples per CPU second it got (the machine may be shared).
    assert_count(total(folded, BUSY), FREQ * p.cpu[b.pid], BUSY)
    sys_total = total(folded, SYSC)
    assert_count(sys_total, FREQ * p.cpu[s.pid], SYSC)
    in_read = count_with(folded, lambda s: s.startswith(SYSC + ";") and "vfs_read_[k]" in s)
    assert_most(in_read, sys_total, "vfs_read_[k] in syscalls' samples", share=0.15)
    # Kernel frames sit leafward of user frames, entered through the syscall path.
    chain = next(s for s in folded if s.startswith(SYSC + ";") and "vfs_read_[k]" in s)
    fr = frames_of(chain)
    first_k = next(i for i, f in enumerate(fr) if f.endswith("_[k]"))
    assert all(f.endswith("_[k]") for f in fr[first_k:]), chain
    # User part: main, then libc's read (built without frame pointers, so the
    # walk skips its caller do_reads; see the README's limits).
    assert "main" in fr[:first_k], chain


def kwalk_stats(stderr):
    m = re.search(r"kernel stacks: (\d+) walked with the ORC table, (\d+) by bpf_get_stack\(\), "
                  r"(\d+) disagreed", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def test_kernel_stacks_walked_with_the_orc_table_match_the_kernel():
    """The program walks kernel stacks with the kernel's own ORC table. With
    BPFPROF_TEST_KWALK_VERIFY every walked stack is also taken with
    bpf_get_stack() and compared: none may differ. Syscalls, page faults (the
    faulter workload) and kernel threads on every CPU."""
    (sysc, SYSC), (flt, FLT) = uwl("syscalls"), uwl("faulter")
    env = dict(os.environ, BPFPROF_TEST_KWALK_VERIFY="1")
    # First the two workloads alone (-p): every kernel stack counted is theirs,
    # syscalls and page faults in vmlinux, which the ORC walk must take itself
    # (bpf_get_stack() is its fallback for modules, BPF and irq stacks). With
    # -a the machine's other processes set the ratio: a busy one fails a
    # fixed "walked > 4 x fallback" with no bug in bpfprof.
    with Workload(sysc, 300) as s, Workload(flt, 300) as f:
        p = Sampled(["-p", f"{s.pid},{f.pid}", "-d", 120, "-v"], [s.pid, f.pid], env=env,
                    until_cpu=2, timeout=180)
    walked, fallback, differ = kwalk_stats(p.stderr)
    assert differ == 0, p.stderr
    in_kernel = count_with(parse_folded(p.stdout), lambda s: "_[k]" in s)
    assert walked + fallback >= in_kernel, p.stderr  # every kernel stack went through the walk
    assert_most(walked, in_kernel, "their kernel stacks walked with the ORC table", share=0.95)
    with Workload(sysc, 30), Workload(flt, 30):
        p = run_bpfprof(["-a", "-d", 4, "-v"], env=env)
    assert "walked by the program with the kernel's ORC table" in p.stderr, p.stderr
    walked, fallback, differ = kwalk_stats(p.stderr)
    assert differ == 0, p.stderr
    # Kernel threads, interrupts, everything the machine runs: none disagreed.
    assert walked > 0, p.stderr
    folded = parse_folded(p.stdout)
    chain = next(s for s in folded if s.startswith(SYSC + ";") and "vfs_read_[k]" in s)
    assert re.search(r"entry_SYSCALL_64[a-z_]*_\[k\];do_syscall_64_\[k\];.*vfs_read_\[k\]", chain), chain
    assert count_with(folded, lambda s: s.startswith(FLT + ";") and "_[k]" in s) > 0

    # Switched off: the kernel's walk, and the same kernel frames.
    with Workload(sysc, 30):
        p = run_bpfprof(["-a", "-d", 2, "-v", "--kernel-unwind", "kernel"])
    assert "kernel stacks: bpf_get_stack() (not asked for)" in p.stderr, p.stderr
    assert "walked with the ORC table" not in p.stderr
    folded = parse_folded(p.stdout)
    assert any(s.startswith(SYSC + ";") and "vfs_read_[k]" in s for s in folded)


def korc_checksum(data, hdr):
    """unwind/korc_cache.c's checksum: bp_hash_step() over the header (its
    checksum field zero) and the payload, from BP_SEED_KEY ^ payload length."""
    m64 = (1 << 64) - 1
    z = bytearray(data)
    z[232:240] = bytes(8)
    h = 0x243f6a8885a308d3 ^ (len(z) - hdr)
    for (w,) in struct.iter_unpack("<Q", bytes(z)):
        h = ((h ^ w) * 0xbf58476d1ce4e5b9) & m64
        h ^= h >> 31
    h ^= h >> 30
    h = (h * 0x94d049bb133111eb) & m64
    h ^= h >> 31
    return h or 1


def test_kernel_orc_table_cache(tmp_path):
    """The reshaped ORC table is cached per kernel build: the first start builds
    and saves it, the next one reads it - and walks the same stacks
    (BPFPROF_TEST_KWALK_VERIFY compares every one with bpf_get_stack()). A
    damaged or unsafe file is refused and rebuilt, never used."""
    cache = tmp_path / "cache"
    env = dict(os.environ, BPFPROF_CACHE_DIR=str(cache), BPFPROF_TEST_KWALK_VERIFY="1")
    sysc, _ = uwl("syscalls")

    def run():
        with Workload(sysc, 30):
            p = run_bpfprof(["-a", "-d", 1.5, "-v"], env=env)
        walked, _, differ = kwalk_stats(p.stderr)
        assert walked > 20 and differ == 0, p.stderr
        return p.stderr

    assert "kernel ORC table: built (cache: none; saved)" in run()
    files = list(cache.glob("korc-*.bin"))
    assert len(files) == 1 and (files[0].stat().st_mode & 0o777) == 0o600, files
    assert "kernel ORC table: from the cache" in run()
    # One flipped byte: refused, rebuilt, saved again.
    data = bytearray(files[0].read_bytes())
    data[len(data) // 2] ^= 0x10
    files[0].write_bytes(bytes(data))
    assert "kernel ORC table: built (cache: Invalid argument; saved)" in run()
    assert "kernel ORC table: from the cache" in run()
    # A well-formed file with a correct checksum whose entries are not the
    # kernel's (rotated raw values): the spot checks against the kernel refuse it.
    data = bytearray(files[0].read_bytes())
    hdr, nents, nuniq = 240, *struct.unpack_from("<II", data, 220)
    uniq = hdr + 8 * nents
    vals = [data[uniq + 8 * i:uniq + 8 * i + 8] for i in range(nuniq)]
    data[uniq:uniq + 8 * nuniq] = b"".join(vals[1:] + vals[:1])
    struct.pack_into("<Q", data, 232, korc_checksum(data, hdr))
    files[0].write_bytes(bytes(data))
    assert "kernel ORC table: built (cache: Stale file handle; saved)" in run()
    # Writable by others, or in a directory others may write: never read.
    files[0].chmod(0o666)
    assert "kernel ORC table: built (cache: Operation not permitted; saved)" in run()
    os.chmod(cache, 0o777)
    assert "built (cache: Operation not permitted; not saved: Operation not permitted)" in run()


def test_user_only_and_kernel_only():
    with Workload(wl("syscalls"), 30) as w:
        pu = Sampled(["-p", w.pid, "-d", 2, "-U"], [w.pid])
        pk = Sampled(["-p", w.pid, "-d", 2, "-K"], [w.pid])
    u, k = parse_folded(pu.stdout), parse_folded(pk.stdout)
    # Every sample is kept in both modes: F per CPU second of the process.
    assert_count(total(u), FREQ * pu.cpu[w.pid], "-U")
    assert_count(total(k), FREQ * pk.cpu[w.pid], "-K")
    assert not any("_[k]" in s for s in u), "kernel frames with -U"
    assert any("do_reads" in s for s in u)
    for s in k:
        fr = frames_of(s)[1:]
        assert all(f.endswith("_[k]") for f in fr), f"user frame with -K: {s}"
    # -K keeps samples taken in user mode too: as a bare "comm" line.
    assert any(s == "syscalls" for s in k) or total(k) > 0


def test_cpu_list_restricts_cpus():
    if os.cpu_count() < 2:
        pytest.fail("this test needs 2 CPUs")
    busy, BUSY = uwl("busy")
    with Workload(busy, 30, cpu=1) as w:
        on0 = parse_folded(run_bpfprof(["-C", "0", "-d", 2]).stdout)
        p1 = Sampled(["-C", "1", "-d", 2], [w.pid])
    assert total(on0, BUSY) == 0
    assert_count(total(parse_folded(p1.stdout), BUSY), FREQ * p1.cpu[w.pid], "on CPU 1")


def test_command_pie_with_shared_library(tmp_path):
    out = tmp_path / "run.folded"
    p = run_bpfprof(["-o", out, "--", wl("pieapp"), 2])
    folded = parse_folded(out.read_text())
    n = total(folded, "pieapp")
    cpu = command_cpu(p.stderr)  # includes the exec before sampling starts: at most a sample
    assert_count(n, FREQ * cpu, "pieapp")
    exact = count_with(folded, lambda s: has_chain(s, ["main", "app_work", "wl_compute", "wl_leaf"])
                       or has_chain(s, ["main", "app_work", "wl_compute"]))
    assert exact > 0.6 * n, out.read_text()
    # The rest: the PLT stub between wl_compute and wl_leaf (libwl.so+0x...), whose
    # caller frame-pointer walking cannot see; still under main;app_work in libwl.so.
    in_lib = count_with(folded, lambda s: "main;app_work;" in s and
                        (s.split(";")[-1].startswith(("wl_", "libwl.so+0x")) or "_[k]" in s))
    assert in_lib > 0.95 * n, out.read_text()
    assert "samples in" in p.stderr


def test_command_follows_children(tmp_path):
    out = tmp_path / "children.folded"
    # 1.5 s of CPU each, however busy the machine (busy's "c").
    p = run_bpfprof(["-o", out, "--", "sh", "-c", f"{wl('busy')} 1.5c & {wl('busy')} 1.5c; wait"],
                    timeout=300)
    folded = parse_folded(out.read_text())
    # The shell's CPU time includes both children it waited for.
    cpu = command_cpu(p.stderr)
    assert cpu > 0.3, f"the two children did not run: {cpu} CPU s"
    n = total(folded, "busy")
    assert_count(n, FREQ * cpu, "both children (the shell's CPU time includes theirs)", floor=10)


def test_command_exit_status_and_missing_command():
    p = run_bpfprof(["--", "/nonexistent/cmd"], check=False)
    assert p.returncode == 1
    assert "cannot run '/nonexistent/cmd'" in p.stderr


def test_sigint_writes_profile(tmp_path):
    out = tmp_path / "sig.folded"
    with Workload(wl("busy"), 30) as w:
        proc = subprocess.Popen([str(run_bpfprof.__globals__["BPFPROF"]), "-p", str(w.pid), "-o",
                                 str(out)], stderr=subprocess.PIPE, text=True)
        wait_attached(proc)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopping on" in err
    samples, _ = sampled_seconds(err)
    assert samples > 0 and total(parse_folded(out.read_text()), "busy") == samples


def test_sigterm_writes_profile(tmp_path):
    out = tmp_path / "term.folded"
    with Workload(wl("busy"), 30) as w:
        proc = subprocess.Popen([str(run_bpfprof.__globals__["BPFPROF"]), "-p", str(w.pid), "-o",
                                 str(out)], stderr=subprocess.PIPE, text=True)
        wait_attached(proc)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert total(parse_folded(out.read_text()), "busy") > 0


def test_idle_excluded_by_default_and_included_on_request():
    """Idle samples are counted apart by default and kept with --include-idle.
    Both runs sample the same seconds at once: how many timer ticks an idle
    vCPU takes is up to the hypervisor - some windows give none at all with
    a CPU idle throughout (3 of 5 two-second runs, with the other CPU busy) -
    so each run's idle samples are checked against the other's, not against
    /proc/stat's idle time."""
    procs = [subprocess.Popen([str(BPFPROF), "-a", "-d", "3", "-v"] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for extra in ([], ["--include-idle"])]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    d, inc = parse_folded(outs[0][0]), parse_folded(outs[1][0])
    assert not any(s.startswith("swapper") for s in d)
    m = re.search(r"(\d+) idle samples excluded", outs[0][1])
    excluded = int(m.group(1)) if m else 0
    idle = sum(c for s, c in inc.items() if s.startswith("swapper/"))
    # The same window: idle ticks came to both runs' events, or to neither.
    if idle >= 10:
        assert excluded > 0, (idle, outs[0][1])
    if excluded >= 10:
        assert idle > 0, (excluded, inc)


def test_cross_check_against_perf(tmp_path):
    """Leaf shares agree with perf record -g on the same process, within 5
    sigmas of the difference of two shares: 10 s of the workload's CPU time,
    ~1000 samples each, so the bound is about +-0.11 (a fixed 0.05 failed a
    few runs in a hundred). Both profile it until it exits (perf's habit,
    `-p PID -- COMMAND`), so a busy machine makes the test slower, not weaker
    (10 wall-clock seconds gave perf 76 samples on a loaded machine)."""
    data = tmp_path / "perf.data"
    with Workload(wl("busy"), "10c") as w:
        # Reaped as it exits: `tail --pid` waits while even a zombie is left.
        threading.Thread(target=w.proc.wait, daemon=True).start()
        until_exit = ["--", "tail", f"--pid={w.pid}", "-f", "/dev/null"]
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", str(FREQ), "-g",
                                 "-p", str(w.pid), "-o", str(data)] + until_exit,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p = run_bpfprof(["-p", w.pid] + until_exit, timeout=600)
        perf.wait(timeout=60)
    ours = parse_folded(p.stdout)
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym"],
                            capture_output=True, text=True, timeout=300).stdout
    # perf script: each sample is a block of frame lines, leaf first.
    leaves = {}
    for block in script.strip().split("\n\n"):
        lines = [l.split() for l in block.strip().splitlines() if l.strip()]
        if lines and len(lines[0]) >= 2:
            sym = lines[0][1]
            leaves[sym] = leaves.get(sym, 0) + 1
    perf_n = sum(leaves.values())
    assert perf_n > 100, f"perf recorded only {perf_n} samples"
    our_n = total(ours)
    for fn in ("leaf_a", "leaf_b"):
        ours_share = count_with(ours, lambda s: leaf(s) == fn) / our_n
        perf_share = leaves.get(fn, 0) / perf_n
        assert_same_share(ours_share, our_n, perf_share, perf_n, f"{fn}: bpfprof vs perf")


def vdso_functions():
    """(start, end) of every function the running kernel's vDSO names in its
    .dynsym - read from this process's copy, the one every process maps."""
    with open("/proc/self/maps") as f:
        line = next(l for l in f if l.rstrip().endswith("[vdso]"))
    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
    with open("/proc/self/mem", "rb") as f:
        f.seek(lo)
        image = f.read(hi - lo)
    with tempfile.NamedTemporaryFile(suffix=".so") as so:
        so.write(image)
        so.flush()
        syms = subprocess.run(["readelf", "-W", "--dyn-syms", so.name], capture_output=True,
                              text=True, check=True).stdout
    ranges = []
    for l in syms.splitlines():
        f = l.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[0].endswith(":"):
            ranges.append((int(f[1], 16), int(f[1], 16) + int(f[2])))
    assert ranges, syms
    return ranges


def test_vdso_frames_are_named(tmp_path):
    out = tmp_path / "vdso.folded"
    run_bpfprof(["-o", out, "--", wl("vdsocall"), 2])
    folded = parse_folded(out.read_text())
    n = total(folded)
    named = count_with(folded, lambda s: "__vdso_clock_gettime" in s)
    assert named > 0.5 * n, out.read_text()
    # An address inside a function the vDSO names is named; only code no
    # symbol covers (a static helper the kernel's build did not inline, as
    # 6.18's vDSO has before __vdso_gettimeofday) stays [vdso]+0xOFFSET.
    funcs = vdso_functions()
    for s in folded:
        for off in re.findall(r"\[vdso\]\+0x([0-9a-f]+)", s):
            assert not any(lo <= int(off, 16) < hi for lo, hi in funcs), (off, out.read_text())


def test_perf_habits_command_with_a_target(tmp_path):
    """perf record's one-liner works: -g is accepted, and a COMMAND with -a
    (or -p) sets how long the target is sampled instead of being the target."""
    exe, comm = uwl("busy")
    out = tmp_path / "a.folded"
    with Workload(exe, 30):
        p = run_bpfprof(["-F", 99, "-a", "-g", "-o", out, "--", "sleep", 2])
    assert "while 'sleep' runs" in p.stderr, p.stderr
    _, secs = sampled_seconds(p.stderr)
    assert 1.9 <= secs < 15, p.stderr  # the command's 2 s (and a busy machine's delays)
    folded = parse_folded(out.read_text())
    assert total(folded, comm) > 0, "the whole machine was not sampled"
    assert not any(s.split(";")[0] == "sleep" and "busy" in s for s in folded)

    with Workload(wl("busy"), 30) as w:
        p = run_bpfprof(["-p", w.pid, "--call-graph", "dwarf,8192", "-v", "--", "sleep", 1.5])
    folded = parse_folded(p.stdout)
    assert total(folded) == total(folded, "busy") > 0, folded  # only the -p process
    assert "no stack copy is needed" in p.stderr, p.stderr
    assert "user stacks walked with --unwind dwarf" in p.stderr, p.stderr

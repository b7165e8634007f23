#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""bench_srcline.py - issue 41's benchmark: inlined frames and source lines of
the addresses perf sampled in a large -O2 -g C++ program, named by bpfprof's
reader against addr2line and perf script's srcline, in one run.

  1. generates and builds (g++ -O2 -g, PIE, --units files in parallel) a
     program of --functions functions, each with types of its own and so its
     own instantiations of std::map, std::unordered_map, std::sort with a
     lambda, std::string, std::vector: tens of MB of DWARF, most of the code
     inlined; its main runs them round-robin for --seconds;
  2. perf record -e cpu-clock:u -F 2999 (no call graph) of that run;
  3. the distinct sampled IPs in the program, as file addresses (the IP less
     the executable mapping's start, plus its file offset, to the virtual
     address of the LOAD segment holding that offset);
  4. each timed by /usr/bin/time (CPU = user + sys, its children included;
     peak RSS is the largest of the process and its waited-for children):
     (perf script with --dsos BIG: the program's samples only)
       perf script -F ip,sym                 samples read, names only
       perf script -F ip,sym,srcline         + perf's file:line (and
                                             --inline: inlined frames)
       addr2line -i -f -C -e BIG < ADDRS     binutils, each address once
       build/tools/inlbench BIG ADDRS        bpfprof's reader (dwinline):
                                             open + index + every address
       build/tools/inlbench -s BIG ADDRS     names from the symbol table
                                             alone (bpfprof without lines)
  and prints a Markdown table: CPU s, wall s, peak RSS, distinct addresses
  per CPU second, and the ratio of perf's srcline run to bpfprof's.

perf script on the whole recording can take long: --perf-timeout (s) stops
it, the row says so and its rate is then a bound; --seconds (fewer samples,
fewer distinct addresses) is the knob for a smaller set. Every tool gets the
same addresses.

Usage: tools/bench_srcline.py [--functions 120] [--units 8] [--seconds 30]
                              [--perf-timeout 900] [--keep DIR]
Needs build/tools/inlbench (make build/tools/inlbench), g++, perf, addr2line.
Run it alone (flock /tmp/bpfprof-bench.lock tools/bench_srcline.py).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = """#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
"""

# One function: its own key type (so its own instantiations), a value type
# from VALUES, the work of a few standard containers and algorithms.
FUNC = """
namespace g{i} {{
struct Key {{
	long a;
	std::string s;
	bool operator<(const Key &o) const {{ return a != o.a ? a < o.a : s < o.s; }}
	bool operator==(const Key &o) const {{ return a == o.a && s == o.s; }}
}};
struct Hash {{
	size_t operator()(const Key &k) const {{ return std::hash<std::string>()(k.s) ^ (size_t)k.a * {p}u; }}
}};
}}
long f{i}(unsigned seed)
{{
	using namespace g{i};
	std::vector<Key> v;
	for (int j = 0; j < {n}; j++) {{
		seed = seed * 1103515245u + {c}u;
		v.push_back(Key{{(long)(seed % {m}), std::to_string(seed >> {sh})}});
	}}
	std::sort(v.begin(), v.end(), [](const Key &x, const Key &y) {{
		return x.s.size() != y.s.size() ? x.s.size() < y.s.size() : y < x;
	}});
	std::map<Key, std::vector<{val}>> m;
	for (auto &k : v)
		m[k].push_back(({val})k.a * {p});
	std::unordered_map<Key, int, Hash> u;
	for (auto &k : v)
		u[k] += (int)k.s.size();
	std::string acc;
	for (auto &e : m)
		acc += e.first.s.substr(0, {sub}) + ":";
	long r = (long)acc.size() + (long)std::count(acc.begin(), acc.end(), '1');
	for (auto &e : u)
		r += e.second;
	return r;
}}
"""
VALUES = ["double", "float", "int", "long", "unsigned short", "char"]


def generate(d, functions, units):
    per = (functions + units - 1) // units
    srcs = []
    for u in range(units):
        lo, hi = u * per, min(functions, (u + 1) * per)
        text = [HEADER]
        for i in range(lo, hi):
            text.append(FUNC.format(i=i, p=2 * i + 1000003, n=48 + i % 17, c=12345 + i,
                                    m=97 + i % 50, sh=3 + i % 7, val=VALUES[i % len(VALUES)],
                                    sub=1 + i % 3))
        path = d / f"u{u}.cc"
        path.write_text("".join(text))
        srcs.append(path)
    decl = "".join(f"long f{i}(unsigned);\n" for i in range(functions))
    table = ", ".join(f"f{i}" for i in range(functions))
    (d / "main.cc").write_text(f"""#include <chrono>
#include <cstdio>
#include <cstdlib>
{decl}
static long (*const fns[])(unsigned) = {{{table}}};

int main(int argc, char **argv)
{{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
	long sum = 0;
	unsigned k = 0;

	while (std::chrono::steady_clock::now() < end)
		for (int j = 0; j < 64; j++, k++)
			sum += fns[k % {functions}](k);
	printf("%ld\\n", sum);
	return 0;
}}
""")
    srcs.append(d / "main.cc")
    return srcs


def build(d, srcs, jobs):
    procs, objs = [], []
    for s in srcs:
        o = s.with_suffix(".o")
        objs.append(str(o))
        procs.append(subprocess.Popen(["g++", "-O2", "-g", "-c", str(s), "-o", str(o)]))
        while len([p for p in procs if p.poll() is None]) >= jobs:
            time.sleep(0.2)
    for p in procs:
        if p.wait():
            sys.exit("g++ failed")
    big = d / "big"
    subprocess.run(["g++", "-O2", "-g", "-o", str(big)] + objs, check=True)
    return big


def load_segments(path):
    """(p_offset, p_vaddr, p_filesz) of each LOAD segment."""
    out = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True).stdout
    return [(int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
            for m in re.finditer(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+"
                                 r"(0x[0-9a-f]+)", out, re.M)]


def sampled_addresses(data, big):
    """The distinct sampled IPs in BIG as its virtual addresses, the number
    of samples in it, and each IP's address."""
    out = subprocess.run(["perf", "script", "-i", str(data), "--show-mmap-events",
                          "-F", "ip,dso"], capture_output=True, text=True).stdout
    maps = []
    ips = {}
    real = os.path.realpath(big)
    for line in out.splitlines():
        if "PERF_RECORD_MMAP" in line:
            # ... [0x55d0c0a01000(0x1b000) @ 0x1000 fd:01 1234 0]: r-xp /path
            m = re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0) .*\]: (\S+) (\S+)$",
                          line)
            if m and "x" in m.group(4) and os.path.realpath(m.group(5)) == real:
                maps.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)))
            continue
        m = re.match(r"\s*([0-9a-f]+) \((.*)\)$", line)
        if m and os.path.realpath(m.group(2)) == real:
            ip = int(m.group(1), 16)
            ips[ip] = ips.get(ip, 0) + 1
    if not maps:
        sys.exit("no executable mapping of the program in perf.data")
    segs = load_segments(big)
    of = {}
    for ip in ips:
        for start, size, pgoff in maps:
            if start <= ip < start + size:
                off = ip - start + pgoff
                for p_off, p_vaddr, p_filesz in segs:
                    if p_off <= off < p_off + p_filesz:
                        of[ip] = off - p_off + p_vaddr
                        break
                break
    return sorted(set(of.values())), sum(ips.values()), of


def agreement(perf_out, of, bench, big, af):
    """Of the addresses perf gave a file:line, how many bpfprof's innermost
    frame names with the same file (base name) and line: the check that
    both were asked about the same addresses."""
    perf = {}
    ip = None
    for line in perf_out.splitlines():
        m = re.match(r"\s+([0-9a-f]+) ", line)
        if m:
            ip = int(m.group(1), 16)
            continue
        m = re.match(r" +(\S+):(\d+)$", line)
        if m and ip in of and m.group(1) != "??":
            perf[of[ip]] = (m.group(1), int(m.group(2)))
        ip = None
    ours = {}
    out = subprocess.run([str(bench), "-p", str(big), str(af)], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        addr, _, rest = line.partition(" ")
        m = re.search(r" (\S+):(\d+);", rest.split(";", 1)[0] + ";")
        if m:
            ours[int(addr, 16)] = (os.path.basename(m.group(1)), int(m.group(2)))
    same = sum(1 for k, v in perf.items() if ours.get(k) == v)
    return same, len(perf)


def timed(cmd, stdin=None, timeout=None):
    """(stdout, cpu s, wall s, peak RSS MiB, timed out)."""
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-v"] + cmd, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        late = False
    except subprocess.TimeoutExpired:
        # SIGINT to the group: time reports the command's use so far
        os.killpg(p.pid, 2)
        out, err = p.communicate()
        late = True
    wall = time.monotonic() - t0

    def field(name):
        m = re.search(re.escape(name) + r": ([\d.]+)", err)
        return float(m.group(1)) if m else None
    user, sys_, rss = (field("User time (seconds)"), field("System time (seconds)"),
                       field("Maximum resident set size (kbytes)"))
    if user is None or (p.returncode and not late):
        sys.exit(f"{cmd[0]} failed: {err[-2000:]}")
    return out, user + sys_, wall, rss / 1024, late


def debug_mib(path):
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True).stdout
    return sum(int(m.group(1), 16) for m in re.finditer(
        r"\.z?debug_\S+\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", out)) / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--functions", type=int, default=120, help="generated functions (120)")
    ap.add_argument("--units", type=int, default=8, help="source files (8)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel g++ (2)")
    ap.add_argument("--seconds", type=float, default=30, help="profiled run (30)")
    ap.add_argument("--perf-timeout", type=float, default=900,
                    help="stop perf script after this many seconds (900)")
    ap.add_argument("--keep", help="build and record in DIR, and keep it (reused if built)")
    a = ap.parse_args()
    bench = ROOT / "build" / "tools" / "inlbench"
    if not bench.exists():
        sys.exit("build/tools/inlbench is missing: make build/tools/inlbench")
    d = Path(a.keep or tempfile.mkdtemp(prefix="bench_srcline."))
    d.mkdir(parents=True, exist_ok=True)
    big = d / "big"
    if not big.exists():
        t0 = time.monotonic()
        big = build(d, generate(d, a.functions, a.units), a.jobs)
        print(f"built {big} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    data = d / "perf.data"
    if not data.exists():
        subprocess.run(["perf", "record", "-q", "-N", "-e", "cpu-clock:u", "-F", "2999", "-o", str(data),
                        "--", str(big), str(a.seconds)], check=True, stdout=subprocess.DEVNULL)
    addrs, samples, of = sampled_addresses(data, big)
    af = d / "addrs"
    af.write_text("".join(f"{x:x}\n" for x in addrs))
    n = len(addrs)
    rows = []

    def row(name, res, note=""):
        out, cpu, wall, rss, late = res
        rate = f"{'>' if late else ''}{n / cpu:,.0f}" if cpu else ""
        rows.append((name, f"{'>' if late else ''}{cpu:.2f}", f"{wall:.2f}", f"{rss:.0f}", rate,
                     note + (" (stopped: timeout)" if late else "")))
        return cpu

    # --dsos: the program's samples only, as the other tools get (libc's
    # would be named from its own, far larger, debug file)
    pscript = ["perf", "script", "-i", str(data), "--dsos", big.name]
    base = row("perf script -F ip,sym", timed(pscript + ["-F", "ip,sym"]),
               f"{samples} samples")
    res = timed(pscript + ["-F", "ip,sym,srcline"], timeout=a.perf_timeout)
    lines = len(re.findall(r"^ +\S+:\d+$", res[0], re.M))
    perf_cpu = row("perf script -F ip,sym,srcline", res, f"{lines} file:line out")
    same, asked = agreement(res[0], of, bench, big, af)
    res = timed(pscript + ["-F", "ip,sym,srcline", "--inline"], timeout=a.perf_timeout)
    perf_inl_cpu = row("perf script -F ip,sym,srcline --inline", res,
                       f"{res[0].count('(inlined)')} (inlined) frames shown")
    with open(af) as f:
        res = timed(["addr2line", "-i", "-f", "-C", "-a", "-e", str(big)], stdin=f)
    a2l_cpu = row("addr2line -i -f -C", res, f"{res[0].count(chr(10))} lines out")
    res = timed([str(bench), str(big), str(af)])
    kv = dict(x.split("=") for x in res[0].split())
    bp_cpu = row("bpfprof reader (inlbench): open + index + every address", res,
                 f"{kv['frames']} frames, {kv['inlined']} inlined; open {kv['open_s']} s, "
                 f"cold {kv['cold_s']} s, warm {kv['warm_s']} s; held {kv['held_mib']} MiB")
    res = timed([str(bench), "-s", str(big), str(af)])
    kv = dict(x.split("=") for x in res[0].split())
    row("bpfprof without lines (inlbench -s): symbol table only", res,
        f"{kv['named']} named; lookups {kv['symtab_s']} s")

    print(f"\n{big}: {debug_mib(big):.1f} MiB of debug sections, "
          f"{os.path.getsize(big) / 2**20:.1f} MiB file; {samples} samples, "
          f"{n} distinct addresses; bpfprof's innermost file:line is perf's for {same} of "
          f"the {asked} addresses perf named\n")
    print("| | CPU s | wall s | peak RSS MiB | addresses / CPU s | |")
    print("|---|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nperf script -F ip,sym,srcline / bpfprof reader: {perf_cpu / bp_cpu:.1f}x CPU "
          f"(srcline's own part, less the run without it: {(perf_cpu - base) / bp_cpu:.1f}x); "
          f"with --inline: {perf_inl_cpu / bp_cpu:.1f}x; addr2line: {a2l_cpu / bp_cpu:.1f}x")


if __name__ == "__main__":
    main()

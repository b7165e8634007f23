#!/usr/bin/env bash
# tools/demo.sh - "make demo": installs what is missing, builds, and profiles
# this whole machine for 10 seconds while a small known workload runs, then
# prints the hottest functions and where the profile was written.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (BPF needs it): sudo make demo" >&2; exit 1; }
tools/install-deps.sh
make -s
make -s build/workloads/busy build/workloads/syscalls

out=${DEMO_OUT:-build/demo.folded}
echo "demo: profiling the whole machine for 10 s (a CPU-bound and a syscall-heavy workload run meanwhile)"
build/workloads/busy 12 >/dev/null &
busy=$!
build/workloads/syscalls 12 &
sys=$!
trap 'kill $busy $sys 2>/dev/null || true' EXIT
build/bpfprof -F 99 -a -d 10 -o "$out"
echo
echo "Top functions by self samples (leaf frames):"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); self[f[k]] += n; all += n }
     END { for (s in self) printf "%7d %5.1f%%  %s\n", self[s], 100 * self[s] / all, s }' "$out" |
	sort -rn | head -15
echo
echo "demo: the folded profile is in $out (flamegraph.pl, speedscope and inferno read it)"

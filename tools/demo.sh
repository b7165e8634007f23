#!/usr/bin/env bash
# tools/demo.sh - "make demo": installs what is missing, builds, and profiles
# this whole machine for 10 seconds while a small known workload runs, then
# prints the hottest functions and where the profile was written.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (BPF needs it): sudo make demo" >&2; exit 1; }
tools/install-deps.sh build
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
svg=${out%.folded}.svg
build/bpfprof convert "$out" -o "$svg" --title "bpfprof demo: $(hostname), 10 s"
echo
build/bpfprof report --top 15 --sort self "$out"
echo
echo "demo: folded profile: $out (flamegraph.pl, speedscope and inferno read it)"
echo "demo: flame graph:    $svg (open it in a browser: click to zoom, Ctrl-F to search)"

#!/usr/bin/env bash
# tools/demo.sh - "make demo": installs what is missing, builds, and profiles
# this whole machine for 10 seconds while a small known workload runs, then
# prints the hottest functions (with their files and processes' pids) and
# where the profile was written: build/demo.pb.gz, build/demo.folded and
# build/demo.svg (DEMO_OUT=DIR/NAME.folded puts them beside NAME.folded).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (BPF needs it): sudo make demo" >&2; exit 1; }
tools/install-deps.sh build
make -s
make -s build/workloads/busy build/workloads/syscalls

out=${DEMO_OUT:-build/demo.folded}
base=${out%.folded}
echo "demo: profiling the whole machine for 10 s (a CPU-bound and a syscall-heavy workload run meanwhile)"
build/workloads/busy 12 >/dev/null &
busy=$!
build/workloads/syscalls 12 &
sys=$!
trap 'kill $busy $sys 2>/dev/null || true' EXIT
# pprof keeps what folded text cannot - each frame's file, each process's
# pid, the time and frequency - so the report is made from it, and the
# folded profile and the flame graph are converted from it.
build/bpfprof -F 99 -a -d 10 -o "$base.pb.gz"
build/bpfprof convert -q "$base.pb.gz" -o "$out"
build/bpfprof convert -q "$base.pb.gz" -o "$base.svg" --title "bpfprof demo: $(hostname), 10 s"
echo
build/bpfprof report --top 15 --sort self "$base.pb.gz"
echo
echo "demo: pprof profile:  $base.pb.gz (go tool pprof; bpfprof report --pid PID $base.pb.gz)"
echo "demo: folded profile: $out (flamegraph.pl, speedscope and inferno read it)"
echo "demo: flame graph:    $base.svg (open it in a browser: click to zoom, Ctrl-F to search)"

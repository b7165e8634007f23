#!/usr/bin/env bash
# tools/soak.sh [MINUTES] - always-on soak: bpfprof -F 99 -a --interval 10
# --output-dir for MINUTES (default 30) while the host starts and ends
# thousands of short-lived processes. Every 10 s it records the agent's RSS
# and open fds; at the end it prints start / max / end and the process count.
# Flat RSS and fds mean the caches are bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
[ "$(id -u)" -eq 0 ] || { echo "soak: run as root" >&2; exit 1; }
make -s build/bpfprof build/workloads/busy
dir=$(mktemp -d /tmp/bpfprof-soak-XXXXXX)
build/bpfprof -F 99 -a --interval 10 --output-dir "$dir/store" --keep 30 -q &
agent=$!
trap 'kill $agent $churn 2>/dev/null || true; rm -rf "$dir"' EXIT
# Short-lived processes (~25 a second): each runs ~10 ms of CPU, so every one
# is a new process for the symbolizer and label caches.
(
	n=0
	while :; do
		for i in $(seq 1 10); do
			build/workloads/busy 0.01 >/dev/null &
		done
		sh -c 'true' ; /bin/true
		wait
		n=$((n + 12))
		echo "$n" > "$dir/spawned"
		sleep 0.4
	done
) &
churn=$!
end=$(( $(date +%s) + minutes * 60 ))
echo "time_s rss_kib fds" > "$dir/log"
t0=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
	sleep 10
	rss=$(awk '/VmRSS/ {print $2}' /proc/$agent/status)
	fds=$(ls /proc/$agent/fd | wc -l)
	echo "$(( $(date +%s) - t0 )) $rss $fds" >> "$dir/log"
done
kill $churn; wait $churn 2>/dev/null || true
kill -TERM $agent; wait $agent || true
awk 'NR == 2 { r0 = $2; f0 = $3 } NR > 1 { if ($2 > rmax) rmax = $2; if ($3 > fmax) fmax = $3; r1 = $2; f1 = $3 }
     END { printf "RSS KiB: start %d, max %d, end %d; fds: start %d, max %d, end %d\n", r0, rmax, r1, f0, fmax, f1 }' "$dir/log"
echo "short-lived processes started: $(cat "$dir/spawned"); $(ls "$dir/store" | wc -l) interval files kept"

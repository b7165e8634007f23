#!/usr/bin/env bash
# tools/gen-vmlinux.sh OUT - regenerates vmlinux.h from the running kernel's BTF.
# CO-RE relocations make programs built against it run on other kernels too.
set -euo pipefail
out=${1:-vmlinux/x86/vmlinux.h}
btf=/sys/kernel/btf/vmlinux
[ -r "$btf" ] || { echo "gen-vmlinux: $btf is missing: this kernel has no BTF" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines) from $(uname -r)"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lint/headers.sh - every header compiles on its own, so none relies on
# what its includer happened to define first:
#   bpf/*.bpf.h  for the BPF target (each includes vmlinux.h and what it uses),
#                but offcpu.bpf.h, a part of profile.bpf.c included at its end;
#   bpf/*_abi.h  for the BPF target (after vmlinux.h, as programs include them)
#                and for the host, where their _Static_asserts pin the size of
#                every struct shared between BPF and userspace;
#   src/*/*.h    for the host.
# Prints one line per header that fails and "headers: ok".
set -u
cd "$(dirname "$0")/../.."
CLANG=${CLANG:-clang}
CC=${CC:-cc}
ARCH=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' \
	-e 's/s390x/s390/' -e 's/riscv64/riscv/' -e 's/loongarch64/loongarch/')
BPF=("$CLANG" -target bpf -D__TARGET_ARCH_$ARCH -Ivmlinux/$ARCH -Ibpf -Wall -Werror -fsyntax-only -x c)
HOST=("$CC" -std=gnu11 -D_GNU_SOURCE -Isrc -Ibpf -Wall -Werror -fsyntax-only -x c)
bad=0

check() { # label, command...
	local label=$1 out
	shift
	if ! out=$("$@" /dev/null 2>&1); then
		echo "headers: $label does not compile on its own:"
		echo "$out" | head -5
		bad=$((bad + 1))
	fi
}

for h in bpf/*.bpf.h; do
	[ "$ARCH" = x86 ] || [ "$h" != bpf/kwalk.bpf.h ] || continue # x86-64 only
	# profile.bpf.c's off-CPU part, included at its end: it uses the sampler's maps and functions
	[ "$h" != bpf/offcpu.bpf.h ] || continue
	check "$h (BPF)" "${BPF[@]}" -include "$h"
done
for h in bpf/*_abi.h; do
	check "$h (BPF)" "${BPF[@]}" -include "vmlinux/$ARCH/vmlinux.h" -include "$h"
	check "$h (host)" "${HOST[@]}" -include "$h"
done
for h in src/*/*.h; do
	# The skeletons are generated into the build directory.
	check "$h" "${HOST[@]}" -I"${OUT:-build}" -include "$h"
done
if [ "$bad" -gt 0 ]; then
	echo "headers: $bad header(s) do not stand alone"
	exit 1
fi
echo "headers: ok"

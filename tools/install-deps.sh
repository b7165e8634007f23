#!/usr/bin/env bash
# tools/install-deps.sh - installs the Debian 12 packages bpfprof needs to build,
# test and demo. Idempotent: runs apt-get only when something is missing.
set -euo pipefail

PACKAGES=(
	# build
	make gcc clang llvm libc6-dev pkg-config binutils
	libbpf-dev bpftool linux-libc-dev
	libelf-dev libdw-dev zlib1g-dev liblzma-dev libzstd-dev
	libiberty-dev g++ xz-utils
	# tests: unit (cmocka, sanitizers, libFuzzer), integration (pytest, perf, bpftrace)
	libcmocka-dev libclang-rt-14-dev
	python3 python3-pytest
	linux-perf bpftrace util-linux procps
	# tests: symbols (node --perf-basic-prof, capsh to drop CAP_SYS_ADMIN)
	nodejs libcap2-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

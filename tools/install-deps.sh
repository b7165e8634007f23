#!/usr/bin/env bash
# tools/install-deps.sh - installs the Debian 12 packages bpfprof needs to build,
# test and demo, and the test-only npm packages pinned in tests/package-lock.json.
# Idempotent: runs apt-get only when something is missing, npm only when
# tests/node_modules does not match the lock file.
#
#   tools/install-deps.sh          everything (build, tests, benchmarks)
#   tools/install-deps.sh build    only what building and running bpfprof needs
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
	# build
	make gcc clang llvm libc6-dev pkg-config binutils
	libbpf-dev bpftool linux-libc-dev
	libelf-dev libdw-dev zlib1g-dev liblzma-dev libzstd-dev
	libcurl4-openssl-dev libcap-dev ca-certificates
	libiberty-dev g++
	# annotate (capstone: disassembly) and top (ncurses: the full-screen view)
	libcapstone-dev libncurses-dev
	# make man, make install: the man pages' sources are reStructuredText (rst2man)
	python3-docutils
)
BUILD_ONLY=false
[ "${1:-}" = build ] && BUILD_ONLY=true
$BUILD_ONLY || PACKAGES+=(
	# tests: unit (cmocka, sanitizers, libFuzzer), integration (pytest, perf, bpftrace)
	libcmocka-dev libclang-rt-14-dev
	python3 python3-pytest
	linux-perf bpftrace util-linux procps curl
	# tests of debug files from debuginfod: a server on loopback
	debuginfod
	# tests of bpfprof top: a terminal to drive it in
	tmux
	# tests/lint/manpages.py: every page renders with man -l; tests/lint/format.sh:
	# the C sources as clang-format (Debian's, 14) writes them
	man-db clang-format
	# tests of the output formats: go tool pprof reads the pprof files, headless
	# Chromium draws the SVG flame graphs (with the monospace font they name);
	# Go also builds the Go workload (stripped Go binaries, .gopclntab)
	golang-go golang-1.19-go chromium fonts-dejavu-core
	# --unwind tests: Debian binaries without frame pointers, libc's debug symbols
	# (__libc_start_call_main is a local symbol) for perf and for the tests
	xz-utils sqlite3 libc6-dbg
	# tests: symbols (node --perf-basic-prof, capsh to drop CAP_SYS_ADMIN; bindfs:
	# a FUSE mount serving a program, whose daemon the test then stops)
	libcap2-bin bindfs
	# Python frames: Debian's interpreter and its headers (the 3.11 layout is
	# checked against them)
	python3.11 python3.11-dev
	# inlined frames of Rust (legacy and v0 names) built by test_native_inlines.py
	rustc
	# dwz'd programs: names read from their dwz file (test_dwz_names.py, the
	# fixtures/dwz unit fixture), a tenant's naming a FIFO (test_tenant_dwz.py)
	dwz
	# SBCL's Lisp frames named from its heap, its stacks walked (test_sbcl.py)
	sbcl
	# Java methods named from a HotSpot JVM's code cache (test_jvm.py: java, javac)
	openjdk-17-jdk-headless
)
# Node.js and npm (speedscope's schema, ajv, playwright-core): Debian's, unless a
# node and npm are already installed (e.g. from NodeSource, whose nodejs
# package conflicts with Debian's npm package).
if ! $BUILD_ONLY && { ! command -v node >/dev/null || ! command -v npm >/dev/null; }; then
	PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

$BUILD_ONLY && exit 0

# npm ci writes node_modules/.package-lock.json; when it equals the lock file
# (same packages, same versions) there is nothing to do.
lock=tests/package-lock.json
installed=tests/node_modules/.package-lock.json
if [ ! -f "$installed" ] ||
	! python3 - "$lock" "$installed" <<'PY'
import json, sys
want = {k: v.get("version") for k, v in json.load(open(sys.argv[1]))["packages"].items() if k}
have = {k: v.get("version") for k, v in json.load(open(sys.argv[2]))["packages"].items() if k}
sys.exit(want != have)
PY
then
	echo "install-deps: installing test npm packages (tests/package-lock.json)"
	npm ci --prefix tests --no-audit --no-fund --loglevel=error
fi

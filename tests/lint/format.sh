#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lint/format.sh - the C sources are as clang-format writes them with the
# tree's .clang-format (the files make format rewrites: src/, bpf/, tests/unit/,
# tests/fuzz/). Debian 12's clang-format 14 is the reference: another version
# may format differently. Prints the files that differ and "format: ok".
set -uo pipefail
cd "$(dirname "$0")/../.."
cf=$(command -v clang-format-14 || command -v clang-format) || {
	echo "format: clang-format is not installed (tools/install-deps.sh installs it)"
	exit 1
}
bad=0
for f in src/*/*.[ch] bpf/*.[ch] tests/unit/*.[ch] tests/fuzz/*.c; do
	if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "format: $f differs from clang-format's (make format rewrites it)"
		bad=$((bad + 1))
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "format: $bad file(s)"
	exit 1
fi
echo "format: ok"

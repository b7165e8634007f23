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
# One clang-format for all files (one a file: 17 s of CPU, most of it
# start-ups; 2 s so): it names each file that differs in its errors.
files=(src/*/*.[ch] bpf/*.[ch] tests/unit/*.[ch] tests/fuzz/*.c)
err=$("$cf" --dry-run --Werror "${files[@]}" 2>&1 >/dev/null)
rc=$?
bad=0
while read -r f; do
	[ -n "$f" ] || continue
	echo "format: $f differs from clang-format's (make format rewrites it)"
	bad=$((bad + 1))
done < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error: code should be clang-formatted' <<<"$err" |
	cut -d: -f1 | sort -u)
if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
	echo "$err" | head -20
	echo "format: clang-format failed ($rc)"
	exit 1
fi
if [ "$bad" -gt 0 ]; then
	echo "format: $bad file(s)"
	exit 1
fi
echo "format: ok"

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tests/lint/exports.py - every function a header under src/ declares is
used outside the file that defines it (by another source file or a test).
A function only its own file calls is `static` there, and one nobody calls
is removed: dead exports are interfaces nobody keeps true.

A declaration is a top-level prototype in src/**/*.h; a user is any mention
of its name in src/ or tests/ C sources and headers other than its own
header and its .c file of the same name. PENDING lists known exceptions
with the reason they wait (keep it empty).

Prints one line per violation and "exports: ok".
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PENDING = {}

PROTO = re.compile(r"^(?![ \t#/*}]|static\b|typedef\b|extern\b)[^;{}()\n]*?\b([a-z_][a-z0-9_]*)\s*"
                   r"\([^;{]*\)\s*(?:__attribute__\s*\(\([^;]*\)\))?\s*;", re.M)


def main():
    files = [p for d in ("src", "tests") for ext in ("*.c", "*.h")
             for p in (ROOT / d).rglob(ext)]
    text = {p: p.read_text(errors="replace") for p in files}
    # Each file's words: NAME (all word characters) is mentioned, r"\bNAME\b",
    # where it is one of them - a set lookup per name and file in place of a
    # regex search of the whole tree per name (22 s of CPU in all; 0.5 s).
    words = {p: set(re.findall(r"\w+", s)) for p, s in text.items()}
    bad = 0
    for h in sorted((ROOT / "src").rglob("*.h")):
        impl = h.with_suffix(".c")
        for m in PROTO.finditer(text[h]):
            name = m.group(1)
            if name in PENDING:
                continue
            if any(p not in (h, impl) and name in w for p, w in words.items()):
                continue
            word = re.compile(r"\b%s\b" % re.escape(name))
            own = len(word.findall(text.get(impl, "")))
            how = "make it static in" if own > 1 else "remove it from"
            print(f"exports: {h.relative_to(ROOT)}: {name}() is used by no other file: "
                  f"{how} {impl.relative_to(ROOT)}")
            bad += 1
    if bad:
        sys.exit(1)
    print("exports: ok")


if __name__ == "__main__":
    main()

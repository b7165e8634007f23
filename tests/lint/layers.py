#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tests/lint/layers.py - src/ is built in floors; a file may include headers
of its own folder and of the floors below it, never of a floor above or of a
sibling on the same floor; a folder's private header (NAME_int.h, such as
collector/collector_int.h) only of its own folder. Prints one line per
violation and "layers: ok".

    cmd        commands, option parsing: with session, the only code that prints
               to the user
    session    the run engine record, top and annotate drive (phases, samples
               into the profile, continuous mode's sinks, stop requests); it
               prints the run's progress and summary, as cmd does
    collector  the only libbpf user
    agent      continuous-mode sinks: store, push, HTTP endpoint, metrics
    format tui readers and writers of profile formats; the terminal toolkit
               (screen output, lines, colours, top's table) (siblings)
    sym unwind names for addresses; unwind tables (siblings: neither includes the other)
    lang       language runtimes both of those read: Go's pc-line table, CPython's layouts
    proc       everything a profiled process controls is read through here
    base       util, htab, log, profile
"""
import pathlib
import re
import sys

FLOORS = [["base"], ["proc"], ["lang"], ["sym", "unwind"], ["format", "tui"], ["agent"], ["collector"],
          ["session"], ["cmd"]]
FLOOR = {d: i for i, ds in enumerate(FLOORS) for d in ds}


def main():
    src = pathlib.Path(__file__).resolve().parents[2] / "src"
    bad = 0
    folders = {p.name for p in src.iterdir() if p.is_dir()}
    for d in sorted(folders - set(FLOOR)):
        print(f"layers: src/{d}/ is on no floor (add it to tests/lint/layers.py)")
        bad += 1
    for f in sorted(src.glob("*")):
        if f.is_file():
            print(f"layers: {f.relative_to(src.parent)} is outside every folder")
            bad += 1
    for f in sorted(src.glob("*/*.[ch]")):
        own = f.parent.name
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([a-z_]+)/([a-z_]+_int\.h)"', line)
            if m and m.group(1) != own:
                print(f"layers: {f.relative_to(src.parent)}:{n}: {m.group(1)}/{m.group(2)} is "
                      f"private to src/{m.group(1)}/")
                bad += 1
                continue
            m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
            if not m or m.group(1) not in FLOOR or own not in FLOOR:
                continue
            dep = m.group(1)
            if dep != own and FLOOR[dep] >= FLOOR[own]:
                print(f"layers: {f.relative_to(src.parent)}:{n}: {own}/ includes {dep}/ "
                      f"({'a sibling' if FLOOR[dep] == FLOOR[own] else 'a floor above'})")
                bad += 1
    if bad:
        print(f"layers: {bad} violation(s)")
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

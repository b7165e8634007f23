#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tests/lint/opens.py - nothing outside src/proc/ opens what a profiled process
controls. src/proc/ (ptab.h: the process table, its mapped files, perf maps,
roots, memory) is the one layer through which /proc/PID/*, mapped files,
perf maps and container roots are read, under the rules in ptab.h; this
check keeps it so:

1. A call that opens or inspects a path - open, openat, openat2, fopen,
   opendir, stat, lstat, statx, access, readlink, realpath, read_file,
   procmaps__read, mountinfo__read, elfsym__open - may appear outside
   src/proc/ only in the files of ALLOWED, each with the reason it is not
   process-controlled, and at most as many times as listed.
2. A string literal naming /proc/ outside src/proc/ must be one of the
   kernel's own files (GLOBAL_PROC), never a per-process one.
3. libelf handles are made only by src/proc/elffile.c (pread, never mmap;
   private copies of memory images): no elf_begin, elf_memory or
   elf_version anywhere else.

Prints one line per violation and "opens: ok".
"""
import pathlib
import re
import sys

CALLS = re.compile(r"(?<![\w.>])(open|openat|openat2|fopen|fdopen|opendir|stat|lstat|statx|access|"
                   r"readlink|realpath|read_file|procmaps__read|mountinfo__read|elfsym__open)\s*\(")

# file -> (allowed calls, why none of them reads what a profiled process controls)
ALLOWED = {
    "src/base/util.c": (3, "read_file() itself and the helpers behind it: callers are checked here"),
    "src/base/util.h": (1, "read_file()'s declaration"),
    "src/sym/elfsym.h": (1, "elfsym__open()'s declaration"),
    "src/format/readers.c": (1, "profiles the user names on the command line"),
    "src/format/writers.c": (2, "fdopen() of the output descriptors proc/safewrite.c opened "
                                "(the -o file the user names, --output-dir files)"),
    "src/sym/kallsyms.c": (3, "/proc/kallsyms, the kernel's (or a test's fake one)"),
    "src/sym/kbuildid.c": (1, "/sys/kernel/notes, the kernel's"),
    "src/collector/count.c": (2, "tracefs's available_filter_functions and /proc/kallsyms, the "
                                 "kernel's function names for count -k"),
    "src/sym/symbolizer.c": (1, "/proc/modules, the kernel's"),
    "src/sym/elfsym.c": (2, "elfsym__open(path): tools and tests name the file; processes' files come as mfile handles"),
    "src/collector/open_load.c": (1, "/sys/kernel/btf/vmlinux, the kernel's"),
    "src/collector/events.c": (1, "/sys/devices/system/cpu files, the kernel's"),
    "src/collector/cpustat.c": (1, "/proc/stat, the kernel's (or a test's fake one)"),
    "src/sym/debuginfod.c": (4, "the agent's own cache of fetched debug files (a directory "
                                "only it may write, opened once; names are hex build ids)"),
    "src/unwind/korc_cache.c": (2, "the agent's own cache of the kernel ORC table (root-only directory)"),
    "src/session/record_samples.c": (1, "/proc/sys/kernel/perf_event_max_sample_rate, the kernel's"),
    "src/session/sinks.c": (1, "--token-file, the operator's"),
    "src/cmd/annotate.c": (2, "the binary a saved profile names, opened as the user asks (--symfs), "
                              "and /proc/kcore, the kernel's; a live process's files come from the "
                              "symbolizer, debug and source files through safeopen"),
    "src/base/selfstat.c": (2, "the agent's own /proc/self/fd and /proc/self/statm"),
    "src/cmd/cli.c": (2, "stat() and access() of the -- COMMAND the operator names, looked up "
                         "in $PATH as execvp() then runs it: no process's file is opened"),
}

GLOBAL_PROC = re.compile(r'"/proc/(kallsyms|kcore|modules|self/[a-z]+|sys/[a-z_/]+|cpuinfo|stat|mounts)?"')


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main():
    top = pathlib.Path(__file__).resolve().parents[2]
    bad = 0
    for f in sorted((top / "src").glob("*/*.[ch]")):
        rel = str(f.relative_to(top))
        if rel.startswith("src/proc/"):
            continue
        text = strip_comments(f.read_text())
        calls = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in CALLS.finditer(text)]
        limit = ALLOWED.get(rel, (0, ""))[0]
        if len(calls) > limit:
            for line, name in calls:
                print(f"opens: {rel}:{line}: {name}() outside src/proc/"
                      + (f" ({len(calls)} calls, {limit} allowed)" if limit else ""))
            bad += 1
        for m in re.finditer(r"\b(elf_begin|elf_memory|elf_version)\s*\(", text):
            line = text.count("\n", 0, m.start()) + 1
            print(f"opens: {rel}:{line}: {m.group(1)}() outside src/proc/elffile.c: "
                  "use elffile__begin() and friends")
            bad += 1
        for m in re.finditer(r'"/proc/[^"]*"', text):
            if not GLOBAL_PROC.fullmatch(m.group(0)):
                line = text.count("\n", 0, m.start()) + 1
                print(f"opens: {rel}:{line}: {m.group(0)} names a process's /proc files "
                      "outside src/proc/")
                bad += 1
    if bad:
        print(f"opens: {bad} violation(s): read it through src/proc/ (ptab.h), or add the file "
              "to ALLOWED with the reason it is not process-controlled")
        return 1
    print("opens: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

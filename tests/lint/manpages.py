#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tests/lint/manpages.py - every command has a man page, the page names every
option its --help prints, and every page renders. Prints one line per problem
and "manpages: ok".

    commands   the table in src/cmd/main.c and the "bpfprof A|B|C ..." line of
               'bpfprof --help'; record's page is docs/bpfprof.1.rst, the
               others' docs/bpfprof-COMMAND.1.rst (a page for no command fails)
    options    each option 'bpfprof [COMMAND] --help' lists (at the start of a
               line) must be a term of the page's option lists (a line starting
               with **-), and every other -x or --long-name it prints must appear
               in the page
    rendering  rst2man --halt=warning (python3-docutils) must succeed, and
               man -l (man-db) must show the result with its NAME section

It runs $OUT/bpfprof (OUT defaults to build), so the binary must be built
first: make test builds it before it runs the suites.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BIN = ROOT / os.environ.get("OUT", "build") / "bpfprof"

# An option as --help prints it: "-a", "--all-cpus", not "x86-64", "Ctrl-C",
# "-top" (go tool pprof's), "--" alone or "-" (stdin).
OPTION = re.compile(r"(?<![\w\-/.'])(--[a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9]|-[a-zA-Z])(?![\w])")
# A line of --help that lists options: "  -a, --all-cpus  ...", "      --off-cpu ..."
LISTED = re.compile(r"^ {1,8}((?:-[a-zA-Z]|--[a-zA-Z][a-zA-Z0-9-]*)(?:, (?:-[a-zA-Z]|--[a-zA-Z][a-zA-Z0-9-]*))*)(?=[ ,]|$)")


def check_options(cmd, page, text, helptext, problems):
    terms = "\n".join(l for l in text.splitlines() if l.startswith("**-"))
    listed = set()
    for line in helptext.splitlines():
        m = LISTED.match(line)
        if m:
            listed |= set(OPTION.findall(m.group(1)))
    for opt in sorted(set(OPTION.findall(helptext))):
        where, what = (terms, "an option term (a line starting with **-)") if opt in listed else (text, "mentioned")
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", where):
            problems.append(f"{page.relative_to(ROOT)}: {opt} is not {what} "
                            f"('bpfprof {cmd} --help' prints it)")


def page_of(cmd):
    return DOCS / ("bpfprof.1.rst" if cmd == "record" else f"bpfprof-{cmd}.1.rst")


def commands(problems):
    cmds = {"record"}
    main_c = (ROOT / "src/cmd/main.c").read_text()
    table = set(re.findall(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*cmd_\w+\s*\}', main_c))
    if not table:
        problems.append("src/cmd/main.c: no command table found")
    cmds |= table
    out = run_help([], problems)
    m = re.search(r"^\s*bpfprof ([a-z|-]+) \.\.\.", out or "", re.M)
    if m:
        cmds |= set(m.group(1).split("|"))
    elif out is not None:
        problems.append("bpfprof --help: no 'bpfprof CMD|CMD ...' line naming the commands")
    return sorted(cmds)


def run_help(argv, problems):
    try:
        r = subprocess.run([str(BIN), *argv, "--help"], capture_output=True, text=True,
                           timeout=30)
    except OSError as e:
        problems.append(f"cannot run {BIN}: {e.strerror} (build it first: make)")
        return None
    if r.returncode != 0:
        problems.append(f"bpfprof {' '.join(argv + ['--help'])}: exit {r.returncode}")
        return None
    return r.stdout


def render(page, outdir, problems):
    rst2man = shutil.which("rst2man", path="/usr/bin:/bin") or shutil.which("rst2man")
    if not rst2man:
        problems.append("rst2man not found: install python3-docutils (tools/install-deps.sh)")
        return
    out = outdir / page.name.removesuffix(".rst")
    r = subprocess.run([rst2man, "--halt=warning", str(page), str(out)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        problems.append(f"{page.relative_to(ROOT)}: rst2man failed: {r.stderr.strip()}")
        return
    if not shutil.which("man"):
        problems.append("man not found: install man-db (tools/install-deps.sh)")
        return
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "-l", str(out)], capture_output=True, text=True, env=env)
    if r.returncode != 0 or not re.search(r"^NAME\s*$", r.stdout, re.M):
        problems.append(f"{page.relative_to(ROOT)}: man -l cannot show it: "
                        f"exit {r.returncode} {r.stderr.strip()[:200]}")


def main():
    problems = []
    cmds = commands(problems)
    with tempfile.TemporaryDirectory() as tmp:
        for cmd in cmds:
            page = page_of(cmd)
            if not page.exists():
                problems.append(f"command '{cmd}' has no man page: write {page.relative_to(ROOT)}")
                continue
            text = page.read_text()
            helptext = run_help([] if cmd == "record" else [cmd], problems)
            if helptext is not None:
                check_options(cmd, page, text, helptext, problems)
            render(page, pathlib.Path(tmp), problems)
        for page in sorted(DOCS.glob("bpfprof*.1.rst")):
            name = page.name.removesuffix(".1.rst")
            cmd = "record" if name == "bpfprof" else name.removeprefix("bpfprof-")
            if cmd not in cmds:
                problems.append(f"{page.relative_to(ROOT)}: a page for no command ('{cmd}')")
    for p in problems:
        print(f"manpages: {p}")
    if problems:
        print(f"manpages: {len(problems)} problem(s)")
        return 1
    print("manpages: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""SBCL (issue 38), part 2: executables saved with their core.

`save-lisp-and-die :executable t` appends the core to a copy of the runtime;
its spaces are mapped from the executable's own file, past its ELF
segments. Those addresses are named from the Lisp heap (src/lang/sbcl.c),
never after the file's C symbols (src/sym/symbolizer.c: only what a PT_LOAD
segment holds is the ELF's code).
"""
import re
import subprocess

from conftest import (Sampled, Workload, as_tenant, assert_few, assert_most, assert_share,
                      frames_of, parse_folded, sbcl, tenant_run, wl)

# Two hot functions in fixnum arithmetic (no calls), ALPHA-WORK twice the
# iterations of BETA-WORK, under DRIVE, under the executable's toplevel;
# ALPHA-WORK exported (LISPEXE:ALPHA-WORK as SBCL prints it), BETA-WORK not.
PROGRAM = """
(defpackage :lispexe (:use :cl) (:export #:alpha-work))
(in-package :lispexe)
(declaim (optimize (speed 1) (debug 1) (safety 1)))
(defun alpha-work (n)
  (declare (type (unsigned-byte 30) n))
  (let ((acc 0))
    (declare (type (unsigned-byte 24) acc))
    (dotimes (i (* 2 n) acc)
      (setf acc (logand (+ (* acc 31) i) #xffffff)))))
(defun beta-work (n)
  (declare (type (unsigned-byte 30) n))
  (let ((acc 0))
    (declare (type (unsigned-byte 24) acc))
    (dotimes (i n acc)
      (setf acc (logand (+ (* acc 31) i) #xffffff)))))
(defun drive (seconds)
  (let ((until (+ (get-internal-real-time) (* seconds internal-time-units-per-second)))
        (sink 0))
    (loop while (< (get-internal-real-time) until)
          do (setf sink (logxor sink (alpha-work 400000) (beta-work 400000))))
    sink))
(defun toplevel ()
  (drive (parse-integer (or (second sb-ext:*posix-argv*) "10")))
  (sb-ext:exit))
"""


def user_frames(stack):
    return [f for f in frames_of(stack) if not f.endswith("_[k]")]


def c_functions(exe):
    """The names of the executable's own C functions (its .dynsym: the
    runtime is linked --export-dynamic)."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(exe)], capture_output=True,
                         text=True, check=True).stdout
    return {l.split()[2] for l in out.splitlines() if len(l.split()) == 3 and
            l.split()[1] in "Tt"}


UNNAMED = re.compile(r"(\+0x[0-9a-f]+|^\[unknown\])$")


def test_an_executable_saved_with_its_core_is_named_from_its_heap(tmp_path):
    """An executable made by save-lisp-and-die :executable t, profiled with
    -p and no options: at least 95% of its samples free of unnamed frames;
    LISPEXE:ALPHA-WORK (exported: one colon) and LISPEXE::BETA-WORK named
    (Lisp frames: "_[lisp]") at 2:1 under DRIVE and its toplevel; no frame of its Lisp code (after call_into_lisp_) named after one of the
    executable's C functions but the runtime's own entry points."""
    src = tmp_path / "prog.lisp"
    src.write_text(PROGRAM)
    exe = tmp_path / "lispexe"
    r = subprocess.run([sbcl(), "--non-interactive", "--no-sysinit", "--no-userinit",
                        "--load", str(src), "--eval",
                        f'(sb-ext:save-lisp-and-die "{exe}" :executable t '
                        ":toplevel #'lispexe::toplevel)"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and exe.exists(), r.stdout[-2000:] + r.stderr[-2000:]
    with Workload(exe, "120") as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=4, timeout=120)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.split(";")[0] == "lispexe"}
    n = sum(folded.values())
    assert n >= 100, p.stderr[-2000:]
    unnamed = sum(c for s, c in folded.items() if any(UNNAMED.search(f) for f in user_frames(s)))
    assert_few(unnamed, n, f"samples with an unnamed frame {p.stdout[:3000]}", share=0.05)
    alpha = sum(c for s, c in folded.items() if "LISPEXE:ALPHA-WORK_[lisp]" in user_frames(s))
    beta = sum(c for s, c in folded.items() if "LISPEXE::BETA-WORK_[lisp]" in user_frames(s))
    assert not [s for s in folded if "LISPEXE::ALPHA-WORK" in s], "an external symbol's ::"
    assert_most(alpha + beta, n, "samples in ALPHA-WORK or BETA-WORK", share=0.85)
    assert_share(alpha / max(alpha + beta, 1), 2 / 3, alpha + beta, "ALPHA-WORK of the two")
    chain = ["LISPEXE::TOPLEVEL_[lisp]", "LISPEXE::DRIVE_[lisp]"]
    under = sum(c for s, c in folded.items()
                if chain == [f for f in user_frames(s) if f in chain]
                and "main" in user_frames(s))
    assert_most(under, n, "samples under TOPLEVEL, DRIVE and main", share=0.9)
    # The runtime's C functions Lisp calls into (allocation, the GC, callbacks).
    c_fns = c_functions(exe)
    entry = re.compile(r"^(call_into_lisp|alloc|lisp_alloc|.*gc|.*garbage|.*collect)",
                       re.IGNORECASE)
    wrong = {}
    for s, c in folded.items():
        fr = user_frames(s)
        if "call_into_lisp_" not in fr:
            continue
        for f in fr[fr.index("call_into_lisp_") + 1:]:
            if f in c_fns and not entry.match(f):
                wrong[s] = c
    assert not wrong, list(wrong.items())[:5]
    assert not [l for l in p.stderr.splitlines() if "warning" in l], p.stderr


def test_a_fake_sbcl_executable_gets_no_c_names_in_its_spaces(tenant_dir):
    """The tenant's fakesbcl_exe passes for an executable saved with its core:
    a text space mapped from its own file past its ELF segments, and a C
    function (decoy) whose addresses are that space's file offsets. Its three
    threads spin in the space: the code named "FAKE-LISP" is named so, the
    code with a corrupt trailer stays unnamed, the code behind a string of
    2^40 characters gets a name cut within SBCL_NAME_MAX; no frame is ever
    named decoy (without the rule, every one of them was)."""
    exe = tenant_dir / "fakesbcl_exe"
    r = tenant_run([wl("fakesbcl_exe"), "--make", exe])
    assert r.returncode == 0, r.stderr
    with Workload(*as_tenant([exe, "120"])) as w:
        p = Sampled(["-v", "-p", w.pid, "-d", 60], [w.pid], until_cpu=3, timeout=120)
    folded = {s: c for s, c in parse_folded(p.stdout).items() if s.startswith("fakesbcl_exe;")}
    n = sum(folded.values())
    leaves = {}
    for s, c in folded.items():
        fr = user_frames(s)
        leaves[fr[-1]] = leaves.get(fr[-1], 0) + c
    assert n >= 100, p.stderr[-2000:]
    assert not [s for s in folded if "decoy" in frames_of(s)], list(folded)[:5]
    named = leaves.get('"FAKE-LISP"_[lisp]', 0)
    cut = sum(c for f, c in leaves.items() if f.startswith('"AAAA') and f.endswith('..."_[lisp]'))
    unnamed = sum(c for f, c in leaves.items() if re.fullmatch(r"fakesbcl_exe\+0x[0-9a-f]+", f))
    assert_share(named / n, 1 / 3, n, "the thread in FAKE-LISP", floor=0.05)
    assert_share(cut / n, 1 / 3, n, "the thread in the long-named code", floor=0.05)
    assert_share(unnamed / n, 1 / 3, n, "the thread in the corrupt code", floor=0.05)
    assert all(len(f.encode()) < 512 for f in leaves), max(leaves, key=len)

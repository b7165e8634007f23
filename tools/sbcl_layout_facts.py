#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""tools/sbcl_layout_facts.py SBCL_GIT_DIR - for each SBCL release tag from
2.2.9 on (x86-64 Linux's default features), the facts src/lang/sbcl.c's
layout table depends on, read from SBCL's published sources; prints the first
tag and then only the tags where a fact changes, with the new value. A new
release with no line of its own has the layout of the range before it; a
line names what to add to the table (and to tests/unit/test_sbcl_versions.c).

  widetags     early-objdef.lisp's defenum (from #x11 by 4, features below)
  code         objdef.lisp's code slots (debug-info / fixups order)
  symbol       objdef.lisp's symbol definition (a hash: read it when it changes)
  fun-slots    code-slots-per-simple-fun, simple-fun-name-slot
  package      package.lisp's package slots (EXTERNAL-SYMBOLS' index)
  symtab       its table's slots and the CELLS slot's type (vector or cons)
  hash-table   hash-table.lisp's first slots (PAIRS is the fifth)
  card, sso    immobile-card-bytes; tlsf_page_sso's element type
  trailer      code.h's trailer readers (a hash)
  pkgid        where a symbol's package id is
  nil          nil-value and the space setup (hashes: NIL's address moves)
  kv-overhead  the hash-table key/value vector's leading slots

Slot lists are read naively: a constructor's argument list may show first
(package's "internal-symbols", hash-table's "flags"); read the source when
one changes.

Get the sources with: git clone https://github.com/sbcl/sbcl (tags sbcl-X.Y.Z).
"""
import hashlib, re, subprocess, sys
REPO = sys.argv[1]
def show(tag, path):
    try:
        return subprocess.run(["git", "-C", REPO, "show", f"{tag}:{path}"], capture_output=True, text=True, check=True).stdout
    except subprocess.CalledProcessError:
        return ""
def block(text, start_re, stop_re=r"^\("):
    out, on = [], False
    for line in text.splitlines():
        if not on and re.search(start_re, line):
            on = True; out.append(line); continue
        if on:
            if re.search(stop_re, line): break
            out.append(line)
    return out
def strip(lines):
    return [l.split(";")[0].rstrip() for l in lines if l.split(";")[0].strip()]
def h(x): return hashlib.md5("\n".join(x).encode()).hexdigest()[:6]
def feat(expr):
    # x86-64 linux default build features (those that matter here)
    on = {"64-bit", "x86-64", "sb-unicode", "sb-simd-pack", "sb-simd-pack-256", "little-endian", "sb-thread", "linux", "immobile-space", "gencgc", "compact-instance-header", "unix", "elf"}
    expr = expr.strip()
    if expr.startswith("("):
        toks = expr[1:-1].split()
        op, args = toks[0], toks[1:]
        vals = [a in on for a in args]
        return any(vals) if op == "or" else all(vals) if op == "and" else not vals[0]
    return expr in on
def widetags(tag):
    t = show(tag, "src/compiler/generic/early-objdef.lisp")
    lines = block(t, r"^\(defenum \(;; The first widetag", r"^\)\)")
    val, out = 0x11, {}
    for l in strip(lines)[1:]:
        l = l.strip()
        if l.startswith(":start") or l.startswith(":step") or l.startswith("("):
            continue
        m = re.match(r"#([+-])(\([^)]*\)|\S+)\s+(\S+)$", l)
        if m:
            ok = feat(m.group(2)); ok = ok if m.group(1) == "+" else not ok
            if not ok: continue
            name = m.group(3)
        else:
            name = l.split()[0]
        out[name] = val; val += 4
    keys = ["symbol-widetag", "code-header-widetag", "instance-widetag", "simple-fun-widetag", "filler-widetag", "simple-vector-widetag", "simple-base-string-widetag", "simple-character-string-widetag"]
    return " ".join(f"{k.replace('-widetag','')}={out.get(k,0):#x}" for k in keys)
def slots(lines):
    return " ".join(re.findall(r"^\s*(?:#[-+]\S+\s+)?\(([%a-z-]+)[\s)]", "\n".join(strip(lines)), re.M))
tags = sorted([t for t in subprocess.run(["git", "-C", REPO, "tag"], capture_output=True, text=True).stdout.split() if re.match(r"sbcl-2\.[2-6]\.\d+$", t)], key=lambda t: [int(x) for x in t[5:].split(".")])
tags = tags[tags.index("sbcl-2.2.9"):]
last = {}
for tag in tags:
    od = show(tag, "src/compiler/generic/objdef.lisp")
    pk = show(tag, "src/code/package.lisp")
    ht = show(tag, "src/code/hash-table.lisp")
    parms = show(tag, "src/compiler/x86-64/parms.lisp")
    imm = show(tag, "src/runtime/immobile-space.c")
    code_h = show(tag, "src/runtime/code.h")
    stls = show(tag, "src/runtime/symbol-tls.inc")
    gen = show(tag, "src/compiler/generic/genesis.lisp")
    f = {}
    f["widetags"] = widetags(tag)
    f["code"] = slots(block(od, r"define-primitive-object \(code"))
    f["symbol"] = h(strip(block(od, r"define-primitive-object \(symbol")))
    f["fun-slots"] = " ".join(re.findall(r"\(defconstant (?:code-slots-per-simple-fun|simple-fun-name-slot)\s+(\d+)", od))
    f["package"] = slots(block(pk, r"defstruct \(package$"))
    f["symtab"] = slots(block(pk, r"defstruct \((package-hashtable|symbol-hashset|symbol-table)$"))[:60] + " | " + (re.search(r"\(%?cells \(missing-arg\) :type ([^\n]*)", pk) or re.search(r"x()", "x")).group(1)[:40]
    f["hash-table"] = " ".join(slots(block(ht, r"^\(sb-xc:defstruct \(hash-table")).split()[:5])
    f["card"] = " ".join(re.findall(r"defconstant immobile-card-bytes (\S+)\)", parms))
    f["sso"] = " ".join(re.findall(r"^(.*)\btlsf_page_sso;", imm, re.M))
    f["trailer"] = h([l for l in code_h.splitlines() if "code_n_funs" in l or "code_trailer_len" in l or "code_fun_table" in l])
    f["pkgid"] = ("header (symbol-tls.inc " + h(block(stls, r"symbol_package_id", r"^}")) + ")"
                  if "symbol_package_id" in stls else
                  "name word's top bits (package-id-bits " + " ".join(re.findall(r"defconstant package-id-bits (\d+)", pk)) + ")")
    f["nil"] = h(strip(block(od, r"defconstant nil-value", r"^$"))) + " " + h(strip(block(parms, r"gc-space-setup #x", r"^$")))
    f["kv-overhead"] = " ".join(re.findall(r"defconstant kv-pairs-overhead-slots (\d+)", show(tag, "src/code/target-hash-table.lisp")))
    changed = {k: v for k, v in f.items() if last.get(k) != v}
    if changed:
        print(tag)
        for k, v in changed.items():
            print(f"  {k}: {v}")
    last = f

/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * demangle.h - C++ (Itanium ABI) and Rust (legacy and v0) symbol names made
 * readable, with libiberty's demangler (the one c++filt, gdb and perf use).
 *
 * Callers demangle once per symbol and cache the result (elfsym does it
 * lazily, the first time a symbol names a frame), never once per sample.
 */
#ifndef BPFPROF_DEMANGLE_H
#define BPFPROF_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Names longer than this are not demangled (the demangler's time and stack
 * grow with the input, and a name this long is not read by a person anyway).
 */
#define DEMANGLE_MAX_IN 4096
/* Results longer than this are cut, ending in "..." (template soup). */
#define DEMANGLE_MAX_OUT 1024

/* True if name looks mangled: "_Z..." (C++ and Rust legacy) or "_R..." (Rust v0). */
bool demangle__is_mangled(const char *name);

/*
 * The readable form of name as a malloc'd string, or NULL if name is not
 * mangled, not valid, or too long (then use name as it is). Types of the
 * parameters are kept ("ns::Box<int>::get(int) const"), as c++filt and perf
 * print them, so overloads stay apart; Rust hashes are dropped.
 */
char *demangle__name(const char *name);

#endif

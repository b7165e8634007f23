// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * demangle.c - see demangle.h. libiberty's cplus_demangle() with DMGL_AUTO
 * tries Rust first (legacy "_ZN...17h<hash>E" and v0 "_R...") and falls back
 * to the GNU v3 (Itanium) demangler; both keep their own recursion limits.
 */
#include "sym/demangle.h"

#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

bool demangle__is_mangled(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R') && name[2];
}

char *demangle__name(const char *name)
{
	char *out;
	size_t n;

	if (!demangle__is_mangled(name) || strnlen(name, DEMANGLE_MAX_IN + 1) > DEMANGLE_MAX_IN)
		return NULL;
	out = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!out)
		return NULL;
	n = strlen(out);
	if (!n) {
		free(out);
		return NULL;
	}
	if (n > DEMANGLE_MAX_OUT) {
		memcpy(out + DEMANGLE_MAX_OUT - 3, "...", 4);
	}
	return out;
}

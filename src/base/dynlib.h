/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * dynlib.h - a library loaded on first use (dlopen), for the two that only
 * some commands need: capstone (annotate's disassembly) and libcurl (push).
 * Linked normally, they and the ~30 libraries libcurl pulls in (TLS,
 * Kerberos, LDAP, SSH...) were mapped and relocated at every start: 7 MiB of
 * resident memory (capstone's relocated tables alone 3 MiB) and a few
 * milliseconds before main(), in an agent that mostly never pushes over TLS
 * and never disassembles. A caller keeps a struct of function pointers whose
 * members are declared with __typeof__ of the library's own prototypes, so
 * the compiler still checks every call against the library's header.
 */
#ifndef BPFPROF_DYNLIB_H
#define BPFPROF_DYNLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct dynlib {
	const char *soname;	  /* e.g. "libcapstone.so.4" */
	const char *const *names; /* the functions, in the order of fns' members */
	size_t nr;
	void *fns; /* a struct of nr function pointers, filled in */
	pthread_mutex_t lock;
	int state;     /* 0: not tried, 1: loaded, -errno: failed */
	char why[256]; /* dlerror()'s text when it failed */
};

#define DYNLIB_INIT(so, names_, fns_)                                                              \
	{                                                                                          \
		.soname = (so), .names = (names_), .nr = sizeof(names_) / sizeof((names_)[0]),     \
		.fns = (fns_), .lock = PTHREAD_MUTEX_INITIALIZER                                   \
	}

/*
 * Loads the library and every function once (thread-safe; later calls
 * return the first answer). 0, or -ELIBACC with why() telling what failed
 * (library missing, a function missing).
 */
int dynlib__load(struct dynlib *l);
const char *dynlib__why(const struct dynlib *l);

#endif

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* dynlib.c - libraries loaded on first use (see dynlib.h). */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int dynlib__load(struct dynlib *l)
{
	void *h;

	pthread_mutex_lock(&l->lock);
	if (l->state) {
		int st = l->state;

		pthread_mutex_unlock(&l->lock);
		return st > 0 ? 0 : st;
	}
	h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		snprintf(l->why, sizeof(l->why), "%s", e ? e : l->soname);
		l->state = -ELIBACC;
		goto out;
	}
	for (size_t i = 0; i < l->nr; i++) {
		void *f = dlsym(h, l->names[i]);

		if (!f) {
			snprintf(l->why, sizeof(l->why), "%s has no %s", l->soname, l->names[i]);
			l->state = -ELIBACC;
			dlclose(h);
			goto out;
		}
		/* fns is a struct of nr function pointers, in order. */
		memcpy((char *)l->fns + i * sizeof(f), &f, sizeof(f));
	}
	l->state = 1; /* kept open for the rest of the run */
out:
	pthread_mutex_unlock(&l->lock);
	return l->state > 0 ? 0 : l->state;
}

const char *dynlib__why(const struct dynlib *l)
{
	return l->why[0] ? l->why : "not loaded";
}

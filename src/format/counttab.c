// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * counttab.c - bpfprof count's patterns and writers (counttab.h). Function
 * and file names come from the target's files: every one written goes
 * through writer__clean_utf8() or writer__json_string().
 */
#include "format/counttab.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "format/writer.h"

int counttab__pat_parse(const char *arg, struct count_pat *p)
{
	const char *colon = NULL;

	memset(p, 0, sizeof(*p));
	for (const char *s = arg; *s; s++) {
		if (*s != ':')
			continue;
		if (s[1] == ':') { /* "::" belongs to the name */
			s++;
			continue;
		}
		colon = s;
		break;
	}
	if (colon) {
		if (colon == arg || !colon[1])
			return -EINVAL;
		p->lib = strndup(arg, (size_t)(colon - arg));
		p->func = strdup(colon + 1);
	} else {
		if (!*arg)
			return -EINVAL;
		p->func = strdup(arg);
	}
	if (!p->func || (colon && !p->lib)) {
		counttab__pat_free(p);
		return -ENOMEM;
	}
	if (p->lib && !strcmp(p->lib, "kernel")) {
		free(p->lib);
		p->lib = NULL;
		p->kernel = true;
	}
	return 0;
}

void counttab__pat_free(struct count_pat *p)
{
	free(p->lib);
	free(p->func);
	p->lib = p->func = NULL;
}

bool counttab__lib_match(const char *lib, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(lib);

	if (strchr(lib, '/'))
		return !fnmatch(lib, path, 0);
	base = base ? base + 1 : path;
	if (!fnmatch(lib, base, 0))
		return true;
	return !strncmp(base, lib, n) && (base[n] == '.' || base[n] == '-');
}

bool counttab__kpat_match(const struct count_pat *p, const char *name)
{
	return p->kernel && !fnmatch(p->func, name, 0);
}

bool counttab__pat_match(const struct count_pat *p, const char *path, const char *name)
{
	if (p->kernel)
		return false;
	if (p->lib && !counttab__lib_match(p->lib, path))
		return false;
	return !fnmatch(p->func, name, 0);
}

int counttab__add_caller(struct count_fn *f, const char *caller, uint64_t n)
{
	struct count_caller *c;

	for (size_t i = 0; i < f->nr_callers; i++) {
		if (!strcmp(f->callers[i].function, caller)) {
			f->callers[i].calls += n;
			return 0;
		}
	}
	c = realloc(f->callers, (f->nr_callers + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	f->callers = c;
	c[f->nr_callers].function = strdup(caller);
	if (!c[f->nr_callers].function)
		return -ENOMEM;
	c[f->nr_callers++].calls = n;
	return 0;
}

static int cmp_caller(const void *a, const void *b)
{
	const struct count_caller *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->function, y->function);
}

static int cmp_fn(const void *a, const void *b)
{
	const struct count_fn *x = a, *y = b;
	int r;

	if (x->st.total_ns != y->st.total_ns)
		return x->st.total_ns < y->st.total_ns ? 1 : -1;
	if (x->st.calls != y->st.calls)
		return x->st.calls < y->st.calls ? 1 : -1;
	r = strcmp(x->function, y->function);
	return r ? r : strcmp(x->module, y->module);
}

void counttab__sort(struct count_fn *fns, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fns[i].nr_callers > 1)
			qsort(fns[i].callers, fns[i].nr_callers, sizeof(*fns[i].callers),
			      cmp_caller);
	if (n > 1)
		qsort(fns, n, sizeof(*fns), cmp_fn);
}

void counttab__fn_free(struct count_fn *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nr_callers; i++)
		free(f->callers[i].function);
	free(f->callers);
	free(f->function);
	free(f->module);
	memset(f, 0, sizeof(*f));
}

const char *counttab__dur(uint64_t ns, char *buf, size_t size)
{
	if (ns < 1000)
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	else if (ns < NS_PER_MS)
		snprintf(buf, size, "%.2f us", (double)ns / 1e3);
	else if (ns < NS_PER_SEC)
		snprintf(buf, size, "%.2f ms", (double)ns / NS_PER_MS_F);
	else
		snprintf(buf, size, "%.2f s", (double)ns / NS_PER_SEC_F);
	return buf;
}

static void write_hist(FILE *f, const struct count_stat *st)
{
	int lo = -1, hi = -1;
	uint64_t most = 0;

	for (int b = 0; b < COUNT_HIST_BUCKETS; b++) {
		if (!st->hist[b])
			continue;
		if (lo < 0)
			lo = b;
		hi = b;
		most = MAX(most, st->hist[b]);
	}
	if (lo < 0)
		return;
	fprintf(f, "%26s %-12s  distribution\n", "nsecs", ": count");
	for (int b = lo; b <= hi; b++) {
		char bar[41];
		int w = (int)(st->hist[b] * 40 / most);

		memset(bar, '*', (size_t)w);
		memset(bar + w, ' ', (size_t)(40 - w));
		bar[40] = 0;
		fprintf(f, "%12" PRIu64 " -> %-12" PRIu64 ": %-10llu |%s|\n",
			b ? (uint64_t)1 << b : 0, ((uint64_t)2 << b) - 1, st->hist[b], bar);
	}
}

int counttab__write_table(FILE *f, const struct count_fn *fns, size_t n,
			  const struct counttab_opts *o)
{
	uint64_t sum = 0;
	char name[512], mod[256], mn[32], mx[32];

	for (size_t i = 0; i < n; i++)
		sum += fns[i].st.total_ns;
	fprintf(f, "%12s %13s %14s %8s %10s %10s  %s\n", "calls", "seconds", "seconds/call",
		"% total", "min", "max", "function");
	for (size_t i = 0; i < n; i++) {
		const struct count_fn *fn = &fns[i];
		const struct count_stat *st = &fn->st;
		const char *base = strrchr(fn->module, '/');

		if (!st->calls && !o->all && !fn->detached)
			continue;
		writer__clean_utf8(fn->function, name, sizeof(name));
		writer__clean_utf8(base ? base + 1 : fn->module, mod, sizeof(mod));
		if (st->returns)
			fprintf(f, "%12llu %13.6f %14.9f %7.1f%% %10s %10s  %s (%s)%s\n", st->calls,
				(double)st->total_ns / NS_PER_SEC_F,
				(double)st->total_ns / NS_PER_SEC_F / (double)st->returns,
				sum ? 100.0 * (double)st->total_ns / (double)sum : 0.0,
				counttab__dur(st->min_ns, mn, sizeof(mn)),
				counttab__dur(st->max_ns, mx, sizeof(mx)), name, mod,
				fn->detached ? "  [detached by the guard]" : "");
		else
			fprintf(f, "%12llu %13s %14s %8s %10s %10s  %s (%s)%s\n", st->calls, "-",
				"-", "-", "-", "-", name, mod,
				fn->detached ? "  [detached by the guard]" : "");
		for (size_t c = 0; c < fn->nr_callers && c < o->max_callers; c++) {
			writer__clean_utf8(fn->callers[c].function, name, sizeof(name));
			fprintf(f, "%12" PRIu64 " %13s %14s %7.1f%% %21s  <- %s\n",
				fn->callers[c].calls, "", "",
				st->calls ? 100.0 * (double)fn->callers[c].calls / (double)st->calls
					  : 0.0,
				"", name);
		}
		if (fn->nr_callers > o->max_callers && o->max_callers)
			fprintf(f, "%71s  <- ... %zu more callers (-f json lists them all)\n", "",
				fn->nr_callers - o->max_callers);
		if (o->hist)
			write_hist(f, st);
	}
	return ferror(f) ? -EIO : 0;
}

int counttab__write_json(FILE *f, const struct count_fn *fns, size_t n, double seconds)
{
	fprintf(f, "{\"seconds\": %.6f, \"functions\": [", seconds);
	for (size_t i = 0; i < n; i++) {
		const struct count_fn *fn = &fns[i];
		const struct count_stat *st = &fn->st;
		int last = COUNT_HIST_BUCKETS - 1;

		fprintf(f, "%s\n  {\"function\": ", i ? "," : "");
		writer__json_string(f, fn->function);
		fprintf(f, ", \"module\": ");
		writer__json_string(f, fn->module);
		fprintf(f,
			", \"calls\": %llu, \"timed_calls\": %llu, \"total_ns\": %llu"
			", \"mean_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu",
			st->calls, st->returns, st->total_ns,
			st->returns ? st->total_ns / st->returns : 0, st->min_ns, st->max_ns);
		fprintf(f, ", \"detached\": %s", fn->detached ? "true" : "false");
		if (fn->detached)
			fprintf(f, ", \"detached_rate\": %.0f", fn->rate);
		while (last > 0 && !st->hist[last])
			last--;
		fprintf(f, ", \"hist\": [");
		for (int b = 0; b <= last; b++)
			fprintf(f, "%s%llu", b ? ", " : "", st->hist[b]);
		fprintf(f, "], \"callers\": [");
		for (size_t c = 0; c < fn->nr_callers; c++) {
			fprintf(f, "%s{\"function\": ", c ? ", " : "");
			writer__json_string(f, fn->callers[c].function);
			fprintf(f, ", \"calls\": %" PRIu64 "}", fn->callers[c].calls);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
	return ferror(f) ? -EIO : 0;
}

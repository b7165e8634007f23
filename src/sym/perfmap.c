// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * perfmap.c - perf map parser and lookup; see perfmap.h.
 *
 * Entries are kept as read (start, end, name, file order) and flattened
 * after each add into disjoint ranges, each naming the newest entry that
 * covers it: a sweep over the entries sorted by start with a max-heap (by
 * file order) of the entries open at the sweep point. O(n log n), at most 2n
 * ranges, and exact for any pattern of overlaps.
 */
#include "sym/perfmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"

struct pm_ent {
	uint64_t start, end; /* [start, end) */
	uint32_t name;	     /* offset in pool */
	uint32_t seq;	     /* file order: larger is newer */
};

struct pm_range {
	uint64_t start, end;
	uint32_t ent; /* index into ents */
};

struct pm_iv {
	uint64_t start, end;
};

/*
 * What an entry costs at most (perfmap.h): itself and the two ranges it may
 * become; in wanted mode also its line number in seqs (a hash entry) and its
 * code's interval in the cover.
 */
#define ENT_COST	(sizeof(struct pm_ent) + 2 * sizeof(struct pm_range))
#define WANTED_ENT_COST (ENT_COST + 64 + sizeof(struct pm_iv))
_Static_assert(ENT_COST <= 72 && WANTED_ENT_COST <= 152, "perfmap.h's entry caps");
/* Names: half of the map's cap. */
#define POOL_MAX (PERFMAP_MAX_BYTES / 2)
_Static_assert((POOL_MAX & (POOL_MAX - 1)) == 0, "array_grow's doubling ends on POOL_MAX");

/* Kept ranges are merged into the sorted cover this many at a time. */
#define COVER_RECENT 32
/* A name offset meaning "kept without a name": code a newer line claims but
 * that line could not be kept (a cap): nothing may be said about it. */
#define NO_NAME UINT32_MAX

struct perfmap {
	struct pm_ent *ents;
	size_t nr, cap;
	struct pm_range *ranges;
	size_t nr_ranges;
	char *pool;
	size_t pool_len, pool_cap;
	size_t consumed;
	size_t bad_lines;
	size_t flattened; /* entries the ranges were built from */
	/* Wanted mode: only entries some address needs; ages are line numbers. */
	bool wanted;
	bool broken;	     /* a line that had to be kept was not: name nothing */
	uint64_t lines;	     /* complete lines in [0, consumed) */
	size_t dropped;	     /* lines that had to be kept, kept without a name */
	struct htab *seqs;   /* line numbers kept (a rescan meets them again) */
	struct pm_iv *cover; /* union of kept code: sorted, disjoint */
	size_t nr_cover, cap_cover;
	struct pm_iv recent[COVER_RECENT]; /* kept since the last merge into cover */
	size_t nr_recent;
};

struct perfmap *perfmap__new(void)
{
	return calloc(1, sizeof(struct perfmap));
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	htab__free(pm->seqs);
	free(pm->cover);
	free(pm->ents);
	free(pm->ranges);
	free(pm->pool);
	free(pm);
}

static int pool_add(struct perfmap *pm, const char *s, size_t n, uint32_t *off)
{
	if (pm->pool_len + n + 1 > POOL_MAX)
		return -E2BIG;
	/* From 4 KiB, doubling: the capacity stays within POOL_MAX (a power of two). */
	if (array_grow((void **)&pm->pool, &pm->pool_cap, MAX(pm->pool_len + n + 1, 4096), 1))
		return -ENOMEM;
	*off = (uint32_t)pm->pool_len;
	memcpy(pm->pool + pm->pool_len, s, n);
	pm->pool[pm->pool_len + n] = '\0';
	pm->pool_len += n + 1;
	return 0;
}

/* A line's fields: [start, end) and the name [name, name_end). */
struct pm_line {
	uint64_t start, end;
	const char *name, *name_end;
};

/* One complete line without its '\n'. -EINVAL: malformed (counted by the caller). */
static int parse_fields(const char *p, const char *end, struct pm_line *l)
{
	const char *stok, *ztok, *name;
	size_t slen, zlen;
	uint64_t start, size;

	if (end > p && end[-1] == '\r')
		end--;
	if (memchr(p, '\0', (size_t)(end - p)))
		return -EINVAL;
	if (!next_token(&p, end, &stok, &slen) || !next_token(&p, end, &ztok, &zlen))
		return -EINVAL;
	if (parse_hex_n(stok, slen, &start) || parse_hex_n(ztok, zlen, &size))
		return -EINVAL;
	if (!start || !size || size > UINT64_MAX - start)
		return -EINVAL;
	/* The name: everything after the separator, without surrounding blanks. */
	name = p;
	while (name < end && is_blank(*name))
		name++;
	while (end > name && (is_blank(end[-1]) || end[-1] == '\r'))
		end--;
	if (name == end)
		return -EINVAL;
	l->start = start;
	l->end = start + size;
	l->name = name;
	l->name_end = end;
	return 0;
}

/* Keeps a parsed line as an entry of age seq. -E2BIG over a cap, -ENOMEM. */
static int keep(struct perfmap *pm, const struct pm_line *l, uint32_t seq)
{
	bool named = true;
	struct pm_ent *e;
	int err;

	if (pm->wanted) {
		/* Over the caps a line is kept without its name (it still hides
		 * what it overlaps); over twice the entry cap nothing is trusted. */
		if (pm->nr >= 2 * PERFMAP_MAX_KEPT)
			return -E2BIG;
		named = pm->nr < PERFMAP_MAX_KEPT &&
			pm->pool_len + (size_t)(l->name_end - l->name) + 1 <= POOL_MAX;
	} else if (pm->nr >= PERFMAP_MAX_ENTRIES) {
		return -E2BIG;
	}
	if (pm->nr == pm->cap) {
		size_t ncap = MIN(pm->cap ? pm->cap * 2 : 256,
				  pm->wanted ? 2 * (size_t)PERFMAP_MAX_KEPT : PERFMAP_MAX_ENTRIES);
		struct pm_ent *n = reallocarray(pm->ents, ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		pm->ents = n;
		pm->cap = ncap;
	}
	e = &pm->ents[pm->nr];
	if (named) {
		err = pool_add(pm, l->name, (size_t)(l->name_end - l->name), &e->name);
		if (err)
			return err;
	} else {
		e->name = NO_NAME;
		pm->dropped++;
	}
	e->start = l->start;
	e->end = l->end;
	e->seq = seq;
	pm->nr++;
	return 0;
}

/* -EINVAL a malformed line (counted by the caller), -E2BIG over the map's cap, -ENOMEM. */
static int parse_line(struct perfmap *pm, const char *p, const char *end)
{
	struct pm_line l;
	int err = parse_fields(p, end, &l);

	return err ? err : keep(pm, &l, (uint32_t)pm->nr);
}

static int ent_cmp(const void *a, const void *b)
{
	const struct pm_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Max-heap of entry indexes by seq. */
struct heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(struct heap *h, const struct pm_ent *ents, uint32_t i)
{
	size_t k = h->n++;

	h->v[k] = i;
	while (k) {
		size_t parent = (k - 1) / 2;

		if (ents[h->v[parent]].seq >= ents[h->v[k]].seq)
			break;
		uint32_t t = h->v[parent];
		h->v[parent] = h->v[k];
		h->v[k] = t;
		k = parent;
	}
}

static void heap_pop(struct heap *h, const struct pm_ent *ents)
{
	size_t k = 0;

	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * k + 1, r = l + 1, m = k;

		if (l < h->n && ents[h->v[l]].seq > ents[h->v[m]].seq)
			m = l;
		if (r < h->n && ents[h->v[r]].seq > ents[h->v[m]].seq)
			m = r;
		if (m == k)
			break;
		uint32_t t = h->v[m];
		h->v[m] = h->v[k];
		h->v[k] = t;
		k = m;
	}
}

static int flatten(struct perfmap *pm)
{
	struct pm_range *r;
	struct heap h;
	size_t i = 0, n = 0, cap_r = 2 * pm->nr + 1;
	uint64_t x = 0;

	qsort(pm->ents, pm->nr, sizeof(*pm->ents), ent_cmp);
	r = malloc(cap_r * sizeof(*r));
	h.v = malloc((pm->nr + 1) * sizeof(*h.v));
	h.n = 0;
	if (!r || !h.v) {
		free(r);
		free(h.v);
		return -ENOMEM;
	}
	while (i < pm->nr || h.n) {
		const struct pm_ent *top;
		uint64_t next;

		if (!h.n)
			x = pm->ents[i].start;
		while (i < pm->nr && pm->ents[i].start <= x)
			heap_push(&h, pm->ents, (uint32_t)i++);
		while (h.n && pm->ents[h.v[0]].end <= x)
			heap_pop(&h, pm->ents);
		if (!h.n)
			continue;
		top = &pm->ents[h.v[0]];
		next = top->end;
		if (i < pm->nr && pm->ents[i].start < next)
			next = pm->ents[i].start;
		if (n && r[n - 1].ent == h.v[0] && r[n - 1].end == x) {
			r[n - 1].end = next;
		} else {
			r[n].start = x;
			r[n].end = next;
			r[n].ent = h.v[0];
			n++;
		}
		x = next;
	}
	free(h.v);
	free(pm->ranges);
	/* Held as long as the map: no more than it uses. */
	array_trim((void **)&r, &cap_r, n + 1, sizeof(*r));
	pm->ranges = r;
	pm->nr_ranges = n;
	pm->flattened = pm->nr;
	return 0;
}

int perfmap__finish(struct perfmap *pm)
{
	if (!pm || (pm->flattened == pm->nr && (pm->ranges || !pm->nr)))
		return 0;
	return flatten(pm);
}

int perfmap__add(struct perfmap *pm, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	int err;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break; /* partial last line: wait for the rest */
		if ((size_t)(nl - p) > PERFMAP_MAX_LINE) {
			pm->bad_lines++;
		} else {
			const char *q = p;

			while (q < nl && (is_blank(*q) || *q == '\r'))
				q++;
			if (q < nl) {
				err = parse_line(pm, p, nl);
				if (err == -ENOMEM || err == -E2BIG)
					return err; /* that line not consumed */
				if (err)
					pm->bad_lines++;
			}
		}
		pm->consumed += (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	return 0;
}

struct perfmap *perfmap__new_wanted(void)
{
	struct perfmap *pm = perfmap__new();

	if (pm)
		pm->wanted = true;
	return pm;
}

/* Does [start, end) hold one of want[0..n) (sorted)? */
static bool covers_wanted(uint64_t start, uint64_t end, const uint64_t *want, size_t n)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (want[mid] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && want[lo] < end;
}

static int iv_cmp(const void *a, const void *b)
{
	const struct pm_iv *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Merges the recent ranges into the sorted, disjoint cover. 0 or -ENOMEM. */
static int cover_merge(struct perfmap *pm)
{
	size_t n = pm->nr_cover + pm->nr_recent, i = 0, j = 0, k = 0;
	struct pm_iv *out;

	if (!pm->nr_recent)
		return 0;
	qsort(pm->recent, pm->nr_recent, sizeof(*pm->recent), iv_cmp);
	out = malloc(n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (i < pm->nr_cover || j < pm->nr_recent) {
		struct pm_iv v = j >= pm->nr_recent || (i < pm->nr_cover &&
							pm->cover[i].start <= pm->recent[j].start)
					 ? pm->cover[i++]
					 : pm->recent[j++];

		if (k && v.start <= out[k - 1].end)
			out[k - 1].end = MAX(out[k - 1].end, v.end);
		else
			out[k++] = v;
	}
	free(pm->cover);
	pm->cover = out;
	pm->nr_cover = pm->cap_cover = k;
	pm->nr_recent = 0;
	return 0;
}

/* Does [start, end) overlap code a kept entry names? */
static bool covered(const struct perfmap *pm, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = pm->nr_cover;

	for (size_t i = 0; i < pm->nr_recent; i++)
		if (pm->recent[i].start < end && pm->recent[i].end > start)
			return true;
	/* The last interval starting before end. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->cover[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pm->cover[lo - 1].end > start;
}

/* Wanted mode: keeps line seq unless it is kept already. 0, -E2BIG, -ENOMEM. */
static int keep_wanted(struct perfmap *pm, const struct pm_line *l, uint32_t seq)
{
	struct htab_entry *e;
	bool created;
	int err;

	if (!pm->seqs && !(pm->seqs = htab__new()))
		return -ENOMEM;
	if (htab__find(pm->seqs, &seq, sizeof(seq)))
		return 0;
	err = keep(pm, l, seq);
	if (err)
		return err;
	e = htab__upsert(pm->seqs, &seq, sizeof(seq), &created);
	if (!e)
		return -ENOMEM;
	pm->recent[pm->nr_recent].start = l->start;
	pm->recent[pm->nr_recent++].end = l->end;
	return pm->nr_recent == COVER_RECENT ? cover_merge(pm) : 0;
}

size_t perfmap__scan(struct perfmap *pm, const char *buf, size_t len, uint64_t first_line,
		     const uint64_t *want, size_t nwant, bool overlaps, uint64_t *lines)
{
	const char *p = buf, *end = buf + len;
	uint64_t line = first_line;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct pm_line l;

		if (!nl)
			break; /* partial last line: wait for the rest */
		/*
		 * Lines are numbered whatever they hold: the same line has the
		 * same age in every scan of the file. A line over kept code is
		 * kept too (with overlaps), also when the code was kept earlier
		 * in this very scan: where it is newer it names that code.
		 */
		if ((size_t)(nl - p) <= PERFMAP_MAX_LINE && !parse_fields(p, nl, &l) &&
		    line <= UINT32_MAX &&
		    (covers_wanted(l.start, l.end, want, nwant) ||
		     (overlaps && covered(pm, l.start, l.end)))) {
			int err = keep_wanted(pm, &l, (uint32_t)line);

			if (err == -ENOMEM)
				break;
			if (err)
				pm->broken = true; /* it hides code an older entry would name */
		}
		line++;
		p = nl + 1;
	}
	*lines = line - first_line;
	return (size_t)(p - buf);
}

int perfmap__scan_tail(struct perfmap *pm, const char *buf, size_t len, const uint64_t *want,
		       size_t nwant)
{
	uint64_t lines;
	size_t used = perfmap__scan(pm, buf, len, pm->lines, want, nwant, true, &lines);

	pm->consumed += used;
	pm->lines += lines;
	return 0;
}

uint64_t perfmap__lines(const struct perfmap *pm)
{
	return pm ? pm->lines : 0;
}

size_t perfmap__dropped(const struct perfmap *pm)
{
	return pm ? pm->dropped : 0;
}

struct perfmap *perfmap__parse(const char *buf, size_t len)
{
	struct perfmap *pm = perfmap__new();
	int err;

	if (!pm)
		return NULL;
	err = perfmap__add(pm, buf ? buf : "", buf ? len : 0);
	if (!err)
		err = perfmap__finish(pm);
	if (err) {
		perfmap__free(pm);
		errno = -err;
		return NULL;
	}
	return pm;
}

const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi;
	const struct pm_range *r;
	const struct pm_ent *e;

	if (!pm || !pm->nr_ranges)
		return NULL;
	hi = pm->nr_ranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	r = &pm->ranges[lo - 1];
	if (addr >= r->end)
		return NULL;
	e = &pm->ents[r->ent];
	if (e->name == NO_NAME || pm->broken)
		return NULL;
	if (offset)
		*offset = addr - e->start;
	return pm->pool + e->name;
}

size_t perfmap__consumed(const struct perfmap *pm)
{
	return pm ? pm->consumed : 0;
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm ? pm->nr : 0;
}

size_t perfmap__bad_lines(const struct perfmap *pm)
{
	return pm ? pm->bad_lines : 0;
}

size_t perfmap__bytes(const struct perfmap *pm)
{
	if (!pm)
		return 0;
	return sizeof(*pm) + pm->cap * sizeof(*pm->ents) + pm->nr_ranges * sizeof(*pm->ranges) +
	       pm->pool_cap + pm->cap_cover * sizeof(*pm->cover) +
	       (pm->seqs ? htab__count(pm->seqs) * 64 : 0);
}

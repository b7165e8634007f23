// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * kallsyms.c - /proc/kallsyms parser and address lookup; see kallsyms.h.
 *
 * The file has ~120k lines and is re-read whenever modules change, so the
 * parser makes one pass over the text, copies names into a single string pool
 * (one allocation instead of one per symbol), and sorts once. Lines are parsed
 * with explicit lengths: nothing here relies on the input being NUL-terminated
 * or on a name fitting in a fixed buffer (Rust symbols reach KSYM_NAME_LEN,
 * 512 bytes; bcc #5468 was a stack smash from "%s" into 256 bytes).
 */
#include "sym/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

/* Reading /proc/kallsyms: ~5 MiB today; anything near this cap is not kallsyms. */
#define KSYMS_MAX_FILE (64u << 20)
/*
 * No kernel function is this large (the biggest are tens of KiB): an address
 * further than this past a symbol's start is not in that symbol.
 */
#define KSYMS_MAX_EXTENT (1u << 20)

struct ksym_ent {
	struct ksym sym; /* first: lookups hand out &ent->sym */
	uint32_t rank;	 /* lower is preferred among symbols at one address */
	uint32_t seq;	 /* line order, the final tiebreak: qsort is not stable */
};

struct ksyms {
	struct ksym_ent *ents; /* sorted by (addr, rank, seq) */
	size_t nr;
	char *pool; /* every name and module name, NUL-terminated */
	size_t bad_lines;
	bool restricted;
};

/*
 * Rank bits, most significant first: a marker loses to anything, weak loses to
 * strong, more leading underscores lose to fewer, local loses to global.
 */
#define RANK_MARKER	      (1u << 31)
#define RANK_WEAK	      (1u << 30)
#define RANK_UNDERSCORE_SHIFT 1
#define RANK_LOCAL	      (1u << 0)

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t pl = strlen(prefix);

	return n >= pl && !memcmp(s, prefix, pl);
}

static bool name_is(const char *s, size_t n, const char *what)
{
	return n == strlen(what) && !memcmp(s, what, n);
}

/*
 * Among aliases at one address, prefer roughly what perf's choose_best_symbol()
 * prefers: not weak, fewer leading underscores, global. Underscores come
 * before binding because section labels such as _stext and _sinittext are
 * global but are not the function that starts there (set_reset_devices,
 * a local, starts at _sinittext). End markers never win.
 */
static uint32_t ksym_rank(char type, const char *name, size_t n, bool marker)
{
	uint32_t rank = 0;
	size_t us = 0;

	if (marker)
		rank |= RANK_MARKER;
	if (type == 'w' || type == 'W')
		rank |= RANK_WEAK;
	if (type == 't' || type == 'w')
		rank |= RANK_LOCAL;
	while (us < n && name[us] == '_')
		us++;
	return rank | (uint32_t)MIN(us, 255u) << RANK_UNDERSCORE_SHIFT;
}

static int ksym_ent__cmp(const void *a, const void *b)
{
	const struct ksym_ent *x = a, *y = b;

	/* Compare, never subtract: a 64-bit difference does not fit an int. */
	if (x->sym.addr != y->sym.addr)
		return x->sym.addr < y->sym.addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

/*
 * /proc/kallsyms prints addresses in order, so usually only the runs of
 * aliases need ordering; anything else gets a full sort.
 */
static void ksyms__sort(struct ksyms *ks)
{
	for (size_t i = 1; i < ks->nr; i++) {
		if (ks->ents[i - 1].sym.addr > ks->ents[i].sym.addr) {
			qsort(ks->ents, ks->nr, sizeof(*ks->ents), ksym_ent__cmp);
			return;
		}
	}
	for (size_t i = 0; i < ks->nr;) {
		size_t j = i + 1;

		while (j < ks->nr && ks->ents[j].sym.addr == ks->ents[i].sym.addr)
			j++;
		if (j - i > 8) {
			qsort(&ks->ents[i], j - i, sizeof(*ks->ents), ksym_ent__cmp);
		} else {
			/* Runs of aliases are short: insertion sort, no qsort overhead. */
			for (size_t k = i + 1; k < j; k++) {
				struct ksym_ent tmp = ks->ents[k];
				size_t m = k;

				for (; m > i && ksym_ent__cmp(&ks->ents[m - 1], &tmp) > 0; m--)
					ks->ents[m] = ks->ents[m - 1];
				ks->ents[m] = tmp;
			}
		}
		i = j;
	}
}

struct parse_state {
	struct ksyms *ks;
	size_t cap; /* of ks->ents */
	char *pool; /* scratch pool, large enough for every name of the input */
	size_t pool_len;
	size_t mod_off; /* last module name written to the pool, to share it */
	size_t mod_len;
	bool have_mod;
	size_t valid;	  /* well-formed lines of any type */
	bool any_nonzero; /* some well-formed line had a non-zero address */
	uint32_t seq;
};

static size_t pool_add(struct parse_state *st, const char *s, size_t n)
{
	size_t off = st->pool_len;

	memcpy(st->pool + off, s, n);
	st->pool[off + n] = '\0';
	st->pool_len += n + 1;
	return off;
}

/* One line, without its terminator: "ADDR TYPE NAME" optionally followed by "[MODULE]". */
static bool kallsyms__parse_line(const char *p, const char *end, struct kallsyms_line *l)
{
	const char *atok, *ttok, *ntok, *mtok = NULL, *extra;
	size_t alen, tlen, nlen, mlen = 0, xlen;
	uint64_t addr;

	if (!next_token(&p, end, &atok, &alen) || !next_token(&p, end, &ttok, &tlen) ||
	    !next_token(&p, end, &ntok, &nlen))
		return false;
	if (parse_hex_n(atok, alen, &addr) || tlen != 1 || memchr(ntok, '\0', nlen))
		return false;
	if (next_token(&p, end, &mtok, &mlen)) {
		if (mlen < 3 || mtok[0] != '[' || mtok[mlen - 1] != ']' ||
		    memchr(mtok, '\0', mlen) || next_token(&p, end, &extra, &xlen))
			return false;
		mtok++;
		mlen -= 2;
	}
	l->addr = addr;
	l->type = ttok[0];
	l->name = ntok;
	l->name_len = nlen;
	l->module = mtok;
	l->module_len = mlen;
	return true;
}

long kallsyms__for_each(const char *buf, size_t len,
			int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx)
{
	const char *p = buf, *end = buf + len;
	struct kallsyms_line l;
	long bad = 0;
	int err;

	if (!buf)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = p;

		if (le > p && le[-1] == '\r')
			le--;
		while (q < le && is_blank(*q))
			q++;
		/* Blank lines carry nothing and are not counted as malformed. */
		if (q < le) {
			if (!kallsyms__parse_line(q, le, &l))
				bad++;
			else if ((err = cb(ctx, &l)) < 0)
				return err;
		}
		p = nl ? nl + 1 : end;
	}
	return bad;
}

/* Keeps a text symbol of a well-formed line. Pointers are stored as pool
 * offsets (cast through uintptr_t) until the pool has its final address. */
static int keep_line(void *ctx, const struct kallsyms_line *l)
{
	struct parse_state *st = ctx;
	struct ksym_ent *e;
	bool marker;
	char type = l->type;

	st->valid++;
	if (l->addr)
		st->any_nonzero = true;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	/*
	 * __pfx_ (and, with kCFI, __cfi_) symbols label the padding in front of
	 * every function; keeping them would only shadow the real names.
	 */
	if (has_prefix(l->name, l->name_len, "__pfx_") ||
	    has_prefix(l->name, l->name_len, "__cfi_"))
		return 0;

	e = &st->ks->ents[st->ks->nr++];
	marker = !l->module && (name_is(l->name, l->name_len, "_etext") ||
				name_is(l->name, l->name_len, "_einittext"));
	e->sym.addr = l->addr;
	e->sym.name = (const char *)(uintptr_t)pool_add(st, l->name, l->name_len);
	e->sym.module = NULL;
	e->rank = ksym_rank(type, l->name, l->name_len, marker);
	e->seq = st->seq++;
	if (l->module) {
		/* Module symbols come in runs; one copy of the name per run. */
		if (!st->have_mod || st->mod_len != l->module_len ||
		    memcmp(st->pool + st->mod_off, l->module, l->module_len)) {
			st->mod_off = pool_add(st, l->module, l->module_len);
			st->mod_len = l->module_len;
			st->have_mod = true;
		}
		/* +1 so that offset 0 still means "no module". */
		e->sym.module = (const char *)(uintptr_t)(st->mod_off + 1);
	}
	return 0;
}

struct ksyms *ksyms__parse(const char *buf, size_t len)
{
	struct parse_state st = { 0 };
	const char *end;
	size_t lines = 1;
	struct ksyms *ks;
	char *pool;

	if (!buf) {
		/* NULL + 0 is undefined behaviour in C; treat it as "". */
		buf = "";
		len = 0;
	}
	end = buf + len;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return NULL;
	for (const char *q = buf; q && q < end; lines++) {
		q = memchr(q, '\n', (size_t)(end - q));
		if (q)
			q++;
	}
	if (lines > UINT32_MAX) {
		/* seq is 32-bit; 4G lines is not a kallsyms file anyway. */
		free(ks);
		errno = EFBIG;
		return NULL;
	}
	st.ks = ks;
	st.cap = lines;
	ks->ents = malloc(lines * sizeof(*ks->ents));
	/* Every stored name + NUL is shorter than the line it came from. */
	st.pool = malloc(len + 1);
	if (!ks->ents || !st.pool)
		goto out_nomem;

	ks->bad_lines = (size_t)kallsyms__for_each(buf, len, keep_line, &st);
	ks->restricted = st.valid && !st.any_nonzero;

	/* Exact-size pool, then turn the stored offsets into pointers into it. */
	pool = malloc(st.pool_len ? st.pool_len : 1);
	if (!pool)
		goto out_nomem;
	memcpy(pool, st.pool, st.pool_len);
	free(st.pool);
	st.pool = NULL;
	ks->pool = pool;
	for (size_t i = 0; i < ks->nr; i++) {
		struct ksym *s = &ks->ents[i].sym;
		uintptr_t mod = (uintptr_t)s->module;

		s->name = pool + (uintptr_t)s->name;
		s->module = mod ? pool + (mod - 1) : NULL;
	}
	array_trim((void **)&ks->ents, &st.cap, ks->nr, sizeof(*ks->ents));
	ksyms__sort(ks);
	return ks;

out_nomem:
	free(st.pool);
	ksyms__free(ks);
	errno = ENOMEM;
	return NULL;
}

long kallsyms__parse(const char *path, size_t max,
		     int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx)
{
	char *buf = NULL;
	size_t len;
	long r;
	int err;

	err = read_file(path, max, &buf, &len);
	if (err)
		return err;
	r = kallsyms__for_each(buf, len, cb, ctx);
	free(buf);
	return r;
}

long kallsyms__parse_head(const char *path, size_t head,
			  int (*cb)(void *ctx, const struct kallsyms_line *l), void *ctx)
{
	char *buf = malloc(head ? head : 1);
	ssize_t n;
	char *nl;
	long r = 0;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(buf);
		return r;
	}
	n = read(fd, buf, head);
	if (n < 0)
		r = -errno;
	close(fd);
	nl = n > 0 ? memrchr(buf, '\n', (size_t)n) : NULL;
	if (nl)
		r = kallsyms__for_each(buf, (size_t)(nl - buf), cb, ctx);
	free(buf);
	return r;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *ks;
	size_t len;
	char *buf;
	int err;

	err = read_file(path, KSYMS_MAX_FILE, &buf, &len);
	if (err) {
		errno = -err;
		return NULL;
	}
	ks = ksyms__parse(buf, len);
	err = errno;
	free(buf);
	errno = err;
	return ks;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->ents);
	free(ks->pool);
	free(ks);
}

const struct ksym *ksyms__lookup(const struct ksyms *ks, uint64_t addr)
{
	size_t lo = 0, hi, i;
	const struct ksym_ent *e;

	if (!ks || ks->restricted || !ks->nr)
		return NULL;
	/* Find the last entry with entry.addr <= addr. */
	hi = ks->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->ents[mid].sym.addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	i = lo - 1;
	/* The preferred alias sorts first among entries with that address. */
	while (i > 0 && ks->ents[i - 1].sym.addr == ks->ents[i].sym.addr)
		i--;
	e = &ks->ents[i];
	/*
	 * Address 0 is never kernel text (a partially restricted file); an end
	 * marker means addr is past the end of a text region; and no function
	 * is larger than KSYMS_MAX_EXTENT, so an address further than that past
	 * the last symbol of a region (core kernel without _etext, a module,
	 * a BPF program, a trampoline page) is left unresolved rather than
	 * blamed on a far-away symbol.
	 */
	if (!e->sym.addr || (e->rank & RANK_MARKER) || addr - e->sym.addr >= KSYMS_MAX_EXTENT)
		return NULL;
	return &e->sym;
}

uint64_t ksyms__end(const struct ksyms *ks, const struct ksym *sym)
{
	const struct ksym_ent *e =
		(const struct ksym_ent *)sym; /* sym is an entry's first member */
	size_t i;
	uint64_t cap;

	if (!ks || !sym || e < ks->ents || e >= ks->ents + ks->nr)
		return 0;
	cap = sym->addr + KSYMS_MAX_EXTENT;
	for (i = (size_t)(e - ks->ents) + 1; i < ks->nr; i++)
		if (ks->ents[i].sym.addr > sym->addr)
			return ks->ents[i].sym.addr < cap ? ks->ents[i].sym.addr : cap;
	return cap;
}

const struct ksym *ksyms__find(const struct ksyms *ks, const char *name)
{
	if (!ks || !name)
		return NULL;
	/* Linear: names are looked up a handful of times, addresses millions. */
	for (size_t i = 0; i < ks->nr; i++)
		if (!strcmp(ks->ents[i].sym.name, name))
			return &ks->ents[i].sym;
	return NULL;
}

size_t ksyms__count(const struct ksyms *ks)
{
	return ks ? ks->nr : 0;
}

size_t ksyms__bad_lines(const struct ksyms *ks)
{
	return ks ? ks->bad_lines : 0;
}

bool ksyms__restricted(const struct ksyms *ks)
{
	return ks && ks->restricted;
}

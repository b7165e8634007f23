// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * pyname.c - Python frame names from code objects; see pyname.h.
 *
 * Reads go through the process table (bounded process_vm_readv): the code
 * object's checksum window and header, its qualname and filename str
 * objects, its line table bytes object. Each read is bounded and checked;
 * nothing read is trusted as a length or an offset before it is bounded.
 */
#include "sym/pyname.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/util.h"
#include "proc/ptab.h"

/* A line table read, at most (a 64 KiB table is a function of tens of thousands of lines). */
#define LINETABLE_MAX (64u << 10)
/* A str object read: its header and up to 1024 UCS-4 characters. */
#define STR_READ (256u + 4096u)
/* Lines past the kept start of a line table remembered per code object. */
#define LINE_MEMO 4
/* Heap overhead of one cached object beyond its bytes: malloc's, and its hash table entry. */
#define CODE_OVERHEAD 96

struct pycode {
	uint32_t csum;
	uint32_t firstlineno;
	uint64_t lt_addr; /* the line table (a bytes object), to read past what is kept */
	uint32_t lt_size; /* its length; lt_len of it kept (0: no table, or over LINETABLE_MAX) */
	uint16_t lt_len;
	uint8_t memo_next;
	struct {
		uint32_t instr, line; /* instr BP_PY_NO_INSTR: empty */
	} memo[LINE_MEMO];
	char *name, *file; /* into data; file NULL if unreadable */
	uint8_t *lt;	   /* into data */
	uint8_t data[];	   /* name, file, the table's start */
};

_Static_assert(sizeof(struct pycode) + PYNAME_NAME_MAX + PYNAME_FILE_MAX + 2 + PYNAME_LT_KEEP +
			       CODE_OVERHEAD <=
		       PYNAME_ITEM_MAX,
	       "PYNAME_ITEM_MAX");

struct pynamer {
	struct cpython_proc cp;
	struct htab *codes; /* code address -> pycode */
	size_t bytes;
	size_t max_codes, max_bytes;
	uint64_t resets;
};

static void free_codes(struct htab *h)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!h)
		return;
	while ((e = htab__next(h, &pos)))
		free(e->value);
	htab__free(h);
}

struct pynamer *pynamer__new(const struct cpython_proc *cp)
{
	struct pynamer *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->cp = *cp;
	n->codes = htab__new();
	if (!n->codes) {
		free(n);
		return NULL;
	}
	n->bytes = sizeof(*n);
	n->max_codes = PYNAME_MAX_CODES;
	n->max_bytes = PYNAME_MAX_BYTES;
	return n;
}

void pynamer__free(struct pynamer *n)
{
	if (!n)
		return;
	free_codes(n->codes);
	free(n);
}

void pynamer__set_caps(struct pynamer *n, size_t max_codes, size_t max_bytes)
{
	n->max_codes = max_codes;
	n->max_bytes = max_bytes;
}

size_t pynamer__bytes(const struct pynamer *n)
{
	return n ? n->bytes : 0;
}

size_t pynamer__count(const struct pynamer *n)
{
	return n ? htab__count(n->codes) : 0;
}

uint64_t pynamer__resets(const struct pynamer *n)
{
	return n ? n->resets : 0;
}

/* The start of a UTF-8 character at or after i. */
static size_t utf8_next(const char *s, size_t i)
{
	while ((s[i] & 0xc0) == 0x80)
		i++;
	return i;
}

/*
 * A str object at addr as UTF-8 into out (size > 4 bytes), at most size - 1
 * bytes: a longer one keeps its start and ends in "...", or with keep_tail
 * (a path, whose base name is what is shown) starts with "..." and keeps
 * its end. The length, or -1.
 */
static int read_str(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t addr, char *out,
		    size_t size, bool keep_tail)
{
	uint8_t buf[STR_READ];
	char text[4 * 1024 + 1];
	size_t len, cut;
	ssize_t got;
	int r;

	if (!addr)
		return -1;
	got = ptab__read_mem(t, p, addr, buf, sizeof(buf));
	if (got <= 0)
		return -1;
	r = cpython__str(&n->cp.l, buf, (size_t)got, text, sizeof(text));
	if (r < 0)
		return -1;
	len = (size_t)r;
	if (len < size) {
		memcpy(out, text, len + 1);
		return (int)len;
	}
	if (keep_tail) {
		cut = utf8_next(text, len - (size - 4));
		memcpy(out, "...", 3);
		memcpy(out + 3, text + cut, len - cut + 1);
		return (int)(3 + len - cut);
	}
	cut = size - 4;
	while (cut && (text[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(out, text, cut);
	memcpy(out + cut, "...", 4);
	return (int)(cut + 3);
}

/* The size of the line table (a bytes object at addr), or -1 (none, too large, unreadable). */
static int64_t table_size(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t addr)
{
	uint64_t size;

	if (!addr || ptab__read_mem(t, p, addr + n->cp.l.bytes_size, &size, 8) != 8 ||
	    size > LINETABLE_MAX)
		return -1;
	return (int64_t)size;
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Whether an object's reference count (its first word) is one: a freed
 * pymalloc block holds the free list's next pointer (or 0) there instead.
 * Immortal objects (3.12+) count 2^32 - 1 or so.
 */
static bool alive(const uint8_t *hdr)
{
	uint64_t refcnt = word(hdr);

	return refcnt > 0 && refcnt < (1ull << 40);
}

/* The checksum of the code object at code as it is now (python_abi.h), or -1. */
static int64_t csum_of(struct ptab *t, struct pproc *p, const struct pynamer *n, uint64_t code)
{
	__u64 window[BP_PY_CSUM_WORDS], hash;

	if (ptab__read_mem(t, p, code + n->cp.csum_off, window, sizeof(window)) !=
		    (ssize_t)sizeof(window) ||
	    ptab__read_mem(t, p, window[BP_PY_CSUM_WORDS - 1] + BP_PY_STR_HASH, &hash,
			   sizeof(hash)) != (ssize_t)sizeof(hash))
		return -1;
	return bp_py_csum(window, hash);
}

/* Whether the object at code is alive and still has checksum want. */
static bool still(struct ptab *t, struct pproc *p, const struct pynamer *n, uint64_t code,
		  uint32_t want)
{
	uint8_t hdr[8];

	return ptab__read_mem(t, p, code, hdr, 8) == 8 && alive(hdr) &&
	       csum_of(t, p, n, code) == (int64_t)want;
}

/* Reads the code object at code into one allocation; NULL with *err. */
static struct pycode *read_code(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code,
				uint32_t want, int *err)
{
	const struct cpython_layout *l = &n->cp.l;
	uint64_t type = 0, qualname, filename, linetable;
	char name[PYNAME_NAME_MAX + 1], file[PYNAME_FILE_MAX + 1];
	uint8_t hdr[512], lt[PYNAME_LT_KEEP];
	size_t need = (size_t)MAX(MAX(l->code_qualname, l->code_filename),
				  MAX(l->code_linetable, l->code_firstlineno)) +
		      8;
	int name_len, file_len;
	size_t lt_len = 0;
	int64_t lt_size;
	struct pycode *c;
	int32_t first;

	*err = -EINVAL;
	if (need > sizeof(hdr) || ptab__read_mem(t, p, code, hdr, need) != (ssize_t)need)
		return NULL;
	type = word(hdr + 8); /* ob_type */
	if (type != n->cp.code_type)
		return NULL;
	/* A freed object keeps its type, but its first word is the allocator's now. */
	if (!alive(hdr) || csum_of(t, p, n, code) != (int64_t)want) {
		*err = -ESTALE;
		return NULL;
	}
	qualname = word(hdr + l->code_qualname);
	filename = word(hdr + l->code_filename);
	linetable = word(hdr + l->code_linetable);
	memcpy(&first, hdr + l->code_firstlineno, 4);
	name_len = read_str(n, t, p, qualname, name, sizeof(name), false);
	file_len = read_str(n, t, p, filename, file, sizeof(file), true);
	lt_size = table_size(n, t, p, linetable);
	if (lt_size > 0) {
		lt_len = MIN((size_t)lt_size, sizeof(lt));
		if (ptab__read_mem(t, p, linetable + l->bytes_data, lt, lt_len) != (ssize_t)lt_len)
			lt_size = lt_len = 0;
	}
	/* Still the same live object now that its strings are read: they were its. */
	if (name_len < 0 || !still(t, p, n, code, want)) {
		*err = -ESTALE;
		return NULL;
	}
	c = calloc(1, sizeof(*c) + (size_t)name_len + 1 +
			      (file_len < 0 ? 0 : (size_t)file_len + 1) + lt_len);
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->csum = want;
	c->firstlineno = first > 0 ? (uint32_t)first : 0;
	c->name = (char *)c->data;
	memcpy(c->name, name, (size_t)name_len + 1);
	c->lt = (uint8_t *)c->name + name_len + 1;
	if (file_len >= 0) {
		c->file = c->name + name_len + 1;
		memcpy(c->file, file, (size_t)file_len + 1);
		c->lt = (uint8_t *)c->file + file_len + 1;
	}
	memcpy(c->lt, lt, lt_len);
	c->lt_len = (uint16_t)lt_len;
	c->lt_size = lt_size > 0 ? (uint32_t)lt_size : 0;
	c->lt_addr = linetable;
	for (size_t i = 0; i < LINE_MEMO; i++)
		c->memo[i].instr = BP_PY_NO_INSTR;
	return c;
}

static size_t code_bytes(const struct pycode *c)
{
	return sizeof(*c) + CODE_OVERHEAD + strlen(c->name) + 1 +
	       (c->file ? strlen(c->file) + 1 : 0) + c->lt_len;
}

void pynamer__reset(struct pynamer *n)
{
	struct htab *fresh = htab__new();

	if (!n || !fresh) {
		htab__free(fresh);
		return;
	}
	free_codes(n->codes);
	n->codes = fresh;
	n->bytes = sizeof(*n);
}

/*
 * The line of instruction instr of c, whose kept table ended before it:
 * remembered, or read from the process (the whole table, if the budget
 * covers it, and only if the object is still the one named) and then
 * remembered. 0 if unknown.
 */
static uint32_t line_past_kept(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code,
			       struct pycode *c, uint32_t instr, size_t *budget, bool *over)
{
	uint32_t line = 0;
	uint8_t *table;

	for (size_t i = 0; i < LINE_MEMO; i++)
		if (c->memo[i].instr == instr)
			return c->memo[i].line;
	if (!p)
		return 0;
	if (budget && *budget < c->lt_size) {
		*over = true;
		return 0; /* not remembered: a later call may have the budget */
	}
	table = malloc(c->lt_size);
	if (!table)
		return 0;
	if (budget)
		*budget -= c->lt_size;
	if (ptab__read_mem(t, p, c->lt_addr + n->cp.l.bytes_data, table, c->lt_size) !=
		    (ssize_t)c->lt_size ||
	    !still(t, p, n, code, c->csum)) {
		free(table);
		return 0;
	}
	if (cpython__line(table, c->lt_size, c->firstlineno, instr, &line))
		line = 0;
	free(table);
	c->memo[c->memo_next].instr = instr;
	c->memo[c->memo_next].line = line;
	c->memo_next = (uint8_t)((c->memo_next + 1) % LINE_MEMO);
	return line;
}

int pynamer__name(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code, uint32_t instr,
		  uint32_t csum, size_t *lt_budget, struct pyframe *out)
{
	struct htab_entry *e = htab__find(n->codes, &code, sizeof(code));
	struct pycode *c = e ? e->value : NULL;
	int err;

	memset(out, 0, sizeof(out[0]));
	if (!c || c->csum != csum) {
		/* New to us, or the address holds another object now: read it. */
		if (!p)
			return -ESRCH;
		c = read_code(n, t, p, code, csum, &err);
		if (!c)
			return err;
		if (e) {
			struct pycode *old = htab__remove(n->codes, &code, sizeof(code));

			n->bytes -= MIN(n->bytes, code_bytes(old));
			free(old);
		}
		/* Room first: the cap holds with the new object in. */
		if (htab__count(n->codes) >= n->max_codes ||
		    n->bytes + code_bytes(c) > n->max_bytes) {
			pynamer__reset(n);
			n->resets++;
		}
		e = htab__upsert(n->codes, &code, sizeof(code), NULL);
		if (!e) {
			free(c);
			return -ENOMEM;
		}
		e->value = c;
		n->bytes += code_bytes(c);
	}
	out->name = c->name;
	out->file = c->file;
	if (instr == BP_PY_NO_INSTR || !c->lt_size)
		return 0;
	err = cpython__line(c->lt, c->lt_len, c->firstlineno, instr, &out->line);
	if (err == -ERANGE && c->lt_len < c->lt_size)
		out->line = line_past_kept(n, t, p, code, c, instr, lt_budget, &out->over_budget);
	else if (err)
		out->line = 0;
	return 0;
}

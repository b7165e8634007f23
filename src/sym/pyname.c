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

struct pycode {
	uint32_t csum;
	uint32_t firstlineno;
	char *name, *file;
	uint8_t *lt;
	size_t lt_len;
};

struct pynamer {
	struct cpython_proc cp;
	struct htab *codes; /* code address -> pycode */
	size_t bytes;
	struct htab *retired; /* a cache that started over, freed at the sweep */
};

static void free_code(struct pycode *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->file);
	free(c->lt);
	free(c);
}

static void free_codes(struct htab *h)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!h)
		return;
	while ((e = htab__next(h, &pos)))
		free_code(e->value);
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
	return n;
}

void pynamer__free(struct pynamer *n)
{
	if (!n)
		return;
	free_codes(n->codes);
	free_codes(n->retired);
	free(n);
}

void pynamer__sweep(struct pynamer *n)
{
	if (!n)
		return;
	free_codes(n->retired);
	n->retired = NULL;
}

size_t pynamer__bytes(const struct pynamer *n)
{
	return n ? n->bytes : 0;
}

const struct cpython_proc *pynamer__proc(const struct pynamer *n)
{
	return &n->cp;
}

/* A str object at addr as UTF-8 (malloc'd), or NULL. */
static char *read_str(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t addr)
{
	uint8_t buf[STR_READ];
	char text[4 * 1024 + 1];
	ssize_t got;
	int len;

	if (!addr)
		return NULL;
	got = ptab__read_mem(t, p, addr, buf, sizeof(buf));
	if (got <= 0)
		return NULL;
	len = cpython__str(&n->cp.l, buf, (size_t)got, text, sizeof(text));
	if (len < 0)
		return NULL;
	return strdup(text);
}

/* The line table (a bytes object at addr), malloc'd, or NULL. */
static uint8_t *read_bytes(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t addr,
			   size_t *len)
{
	const struct cpython_layout *l = &n->cp.l;
	uint64_t size;
	uint8_t *data;

	if (!addr || ptab__read_mem(t, p, addr + l->bytes_size, &size, 8) != 8 ||
	    size > LINETABLE_MAX)
		return NULL;
	data = malloc(size ? size : 1);
	if (!data)
		return NULL;
	if (size && ptab__read_mem(t, p, addr + l->bytes_data, data, size) != (ssize_t)size) {
		free(data);
		return NULL;
	}
	*len = size;
	return data;
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

/* Reads the code object at code; NULL with *err. */
static struct pycode *read_code(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code,
				uint32_t want, int *err)
{
	const struct cpython_layout *l = &n->cp.l;
	uint64_t type = 0, qualname, filename, linetable;
	uint8_t hdr[512];
	size_t need = (size_t)MAX(MAX(l->code_qualname, l->code_filename),
				  MAX(l->code_linetable, l->code_firstlineno)) +
		      8;
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
	c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->csum = want;
	c->firstlineno = first > 0 ? (uint32_t)first : 0;
	c->name = read_str(n, t, p, qualname);
	c->file = read_str(n, t, p, filename);
	c->lt = read_bytes(n, t, p, linetable, &c->lt_len);
	/* Still the same live object now that its strings are read: they were its. */
	if (!c->name || ptab__read_mem(t, p, code, hdr, 8) != 8 || !alive(hdr) ||
	    csum_of(t, p, n, code) != (int64_t)want) {
		free_code(c);
		*err = -ESTALE;
		return NULL;
	}
	return c;
}

/*
 * Moves c to the retired set, freed at the sweep: its strings may be in a
 * frame handed out since. Out of memory, it is leaked rather than freed
 * under a reader.
 */
static void retire(struct pynamer *n, struct pycode *c)
{
	struct htab_entry *r;

	if (!c)
		return;
	if (!n->retired)
		n->retired = htab__new();
	r = n->retired ? htab__upsert(n->retired, &c, sizeof(c), NULL) : NULL;
	if (r)
		r->value = c;
}

static size_t code_bytes(const struct pycode *c)
{
	return sizeof(*c) + 32 + strlen(c->name) + (c->file ? strlen(c->file) : 0) + c->lt_len;
}

void pynamer__reset(struct pynamer *n)
{
	struct htab *fresh = htab__new();
	struct htab_entry *x;
	size_t pos = 0;

	if (!n || !fresh) {
		htab__free(fresh);
		return;
	}
	while ((x = htab__next(n->codes, &pos))) {
		retire(n, x->value);
		x->value = NULL;
	}
	htab__free(n->codes);
	n->codes = fresh;
	n->bytes = sizeof(*n);
}

int pynamer__name(struct pynamer *n, struct ptab *t, struct pproc *p, uint64_t code, uint32_t instr,
		  uint32_t csum, struct pyframe *out)
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
		if (htab__count(n->codes) >= PYNAME_MAX_CODES || n->bytes > PYNAME_MAX_BYTES) {
			pynamer__reset(n);
			e = NULL;
		}
		if (e) {
			/* Its strings may be in use until the sweep: keep it there. */
			n->bytes -= MIN(n->bytes, code_bytes(e->value));
			retire(n, e->value);
		} else {
			e = htab__upsert(n->codes, &code, sizeof(code), NULL);
			if (!e) {
				free_code(c);
				return -ENOMEM;
			}
		}
		e->value = c;
		n->bytes += code_bytes(c);
	}
	out->name = c->name;
	out->file = c->file;
	if (instr != BP_PY_NO_INSTR && c->lt &&
	    cpython__line(c->lt, c->lt_len, c->firstlineno, instr, &out->line))
		out->line = 0;
	return 0;
}

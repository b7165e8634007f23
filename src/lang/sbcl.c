// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * sbcl.c - SBCL's heap read from outside: code objects and function names
 * (layout and rules in sbcl.h).
 */
#include "lang/sbcl.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/htab.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "proc/ptab.h"

#define LOWTAG_MASK  15u
#define LOWTAG_LIST  7u
#define LOWTAG_INST  3u
#define LOWTAG_OTHER 15u
#define FREE_BIT     (1u << 8) /* a free TLSF block (text space) */
#define WORD	     8u

/*
 * The layouts, oldest first. 2.2.9 is Debian 12's, verified on the real
 * runtime (tests/unit/test_sbcl.c's recorded heap). The others are from
 * SBCL's published sources at each release's tag (github.com/sbcl/sbcl,
 * x86-64 Linux's default features: immobile-space, sb-unicode,
 * sb-simd-pack(-256), compact-instance-header), a range where none of the
 * facts below changes:
 *   widetags      src/compiler/generic/early-objdef.lisp (the defenum from
 *                 #x11 by 4): the filler's moves from #x6d to #x71 in 2.6.7
 *                 (simd-pack-512's slot before it); the others are the same
 *   code header   src/compiler/generic/objdef.lisp (code): boxed-size,
 *                 debug-info, fixups up to 2.3.11; boxed-size, fixups,
 *                 debug-info from 2.4.0; constants (simple-fun names, 4
 *                 slots each) from word 4 in all; the trailer
 *                 (src/runtime/code.h) is the same in all
 *   symbol        objdef.lisp (symbol): hash value fdefn info name, the name
 *                 word 5 in all; its package id the name's high 16 bits
 *                 (compact-symbol, genesis.lisp's symbol_package_id) up to
 *                 2.4.6, a uint16 at header byte 1 from 2.4.7
 *                 (src/runtime/symbol-tls.inc)
 *   package       src/code/package.lisp: %NAME slot 1; EXTERNAL-SYMBOLS slot
 *                 9, then 8 from 2.3.2 (NICKNAMES and USE-LIST became KEYS);
 *                 its table's CELLS slot 1, a simple-vector up to 2.2.11, a
 *                 cons (hash-fun . simple-vector) from 2.3.0
 *   hash-table    src/code/hash-table.lisp: PAIRS slot 5 in all (the
 *                 assembly routines' table)
 *   TLSF pages    src/compiler/x86-64/parms.lisp's immobile-card-bytes: 4096,
 *                 2048 from 2.6.4; src/runtime/immobile-space.c's
 *                 tlsf_page_sso: 16 bits a page, 32 from 2.6.2
 *   NIL           objdef.lisp's nil-value and parms.lisp's space setup move
 *                 it in 2.3.5, 2.3.6, 2.3.7, 2.4.0, 2.4.7, 2.4.10 and 2.5.4:
 *                 past 2.2.x it is known by its shape (see is_nil)
 * The per-PC debug-function maps packed in 2.4.5 are not read here (names
 * come from the simple-fun table).
 */
#define L_COMMON                                                                                   \
	.code_widetag = 0x35, .fun_widetag = 0x41, .symbol_widetag = 0x2d,                         \
	.base_string_widetag = 0xe1, .char_string_widetag = 0xe5, .vector_widetag = 0x89,          \
	.instance_widetag = 0x39, .name_slot = 5, .pkg_name_slot = 1, .fun_names_word = 4,         \
	.fun_slots = 4, .ht_pairs_word = 5, .pht_cells_word = 1

static const struct sbcl_layout layouts[] = {
	{ L_COMMON, .version = "2.2.9", .last = "2.2.9", .verified = true, .nil = 0x50000117,
	  .filler_widetag = 0x6d, .debug_info_word = 2, .pkg_ext_slot = 9, .card_bytes = 4096,
	  .sso_bytes = 2, .gc_page_bytes = 32768, .gc_card_shift = 10, .fin_widetag = 0x3d,
	  /* Debian's 2.2.9 (objdump of alloc, alloc_list; src/runtime/thread.h's
	   * mixed_tlab, cons_tlab, sys_mixed_tlab, sys_cons_tlab;
	   * src/runtime/gencgc-internal.h's LARGE_OBJECT_SIZE, 4 pages) */
	  .tlab = { { 0x70, 0x118 }, { 0x58, 0x130 } }, .large_bytes = 4 * 32768 },
	{ L_COMMON, .version = "2.2.10", .last = "2.2.11", .nil = 0x50000117,
	  .filler_widetag = 0x6d, .debug_info_word = 2, .pkg_ext_slot = 9, .card_bytes = 4096,
	  .sso_bytes = 2 },
	{ L_COMMON, .version = "2.3.0", .last = "2.3.1", .filler_widetag = 0x6d,
	  .debug_info_word = 2, .pkg_ext_slot = 9, .cells_in_cdr = true, .card_bytes = 4096,
	  .sso_bytes = 2 },
	{ L_COMMON, .version = "2.3.2", .last = "2.3.11", .filler_widetag = 0x6d,
	  .debug_info_word = 2, .pkg_ext_slot = 8, .cells_in_cdr = true, .card_bytes = 4096,
	  .sso_bytes = 2 },
	{ L_COMMON, .version = "2.4.0", .last = "2.4.6", .filler_widetag = 0x6d,
	  .debug_info_word = 3, .pkg_ext_slot = 8, .cells_in_cdr = true, .card_bytes = 4096,
	  .sso_bytes = 2 },
	{ L_COMMON, .version = "2.4.7", .last = "2.6.1", .filler_widetag = 0x6d,
	  .pkg_id_in_header = true, .debug_info_word = 3, .pkg_ext_slot = 8, .cells_in_cdr = true,
	  .card_bytes = 4096, .sso_bytes = 2 },
	{ L_COMMON, .version = "2.6.2", .last = "2.6.3", .filler_widetag = 0x6d,
	  .pkg_id_in_header = true, .debug_info_word = 3, .pkg_ext_slot = 8, .cells_in_cdr = true,
	  .card_bytes = 4096, .sso_bytes = 4 },
	{ L_COMMON, .version = "2.6.4", .last = "2.6.6", .filler_widetag = 0x6d,
	  .pkg_id_in_header = true, .debug_info_word = 3, .pkg_ext_slot = 8, .cells_in_cdr = true,
	  .card_bytes = 2048, .sso_bytes = 4 },
	{ L_COMMON, .version = "2.6.7", .last = "2.6.7", .filler_widetag = 0x71,
	  .pkg_id_in_header = true, .debug_info_word = 3, .pkg_ext_slot = 8, .cells_in_cdr = true,
	  .card_bytes = 2048, .sso_bytes = 4 },
};

/* "2.4.7" and what may follow a release's number ("2.2.9.debian",
 * "2.4.7-1"): its three numbers; false for anything else, a development
 * build ("2.4.7.45-abcdef") among them. */
static bool parse_version(const char *s, unsigned v[3])
{
	for (int i = 0; i < 3; i++) {
		unsigned n = 0;
		int digits = 0;

		for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
			n = n * 10 + (unsigned)(*s - '0');
		if (!digits || (*s >= '0' && *s <= '9'))
			return false;
		v[i] = n;
		if (i < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0' || *s == '-' || (*s == '.' && !(s[1] >= '0' && s[1] <= '9') && s[1]);
}

static int version_cmp(const unsigned a[3], const unsigned b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

const struct sbcl_layout *sbcl__layout(const char *version)
{
	unsigned v[3], first[3], last[3];

	if (!version || !parse_version(version, v))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
		if (!parse_version(layouts[i].version, first) ||
		    !parse_version(layouts[i].last, last))
			continue;
		if (version_cmp(v, first) >= 0 && version_cmp(v, last) <= 0)
			return &layouts[i];
	}
	return NULL;
}

const char *sbcl__known_versions(void)
{
	return "2.2.9 to 2.6.7";
}

static int rd(struct sbcl_heap *h, uint64_t addr, void *buf, size_t len)
{
	if (h->max_bytes && h->bytes_read + len > h->max_bytes)
		return -E2BIG;
	h->bytes_read += len;
	return h->read(h->ctx, addr, buf, len);
}

static int rd_word(struct sbcl_heap *h, uint64_t addr, uint64_t *w)
{
	uint8_t b[WORD];
	int err = rd(h, addr, b, sizeof(b));

	if (!err)
		*w = rd64(b, false);
	return err;
}

/* The size in bytes of the text-space object whose header is hdr; 0 if
 * hdr is no object text space holds (code, filler, free block). */
static uint64_t text_obj_size(const struct sbcl_layout *l, uint64_t hdr, bool *code)
{
	uint64_t words = hdr >> 32;
	uint8_t wt = (uint8_t)hdr;

	*code = wt == l->code_widetag && !(hdr & FREE_BIT);
	if (wt != l->code_widetag && wt != l->filler_widetag)
		return 0;
	if (words < 2 || (words & 1) || words * WORD > SBCL_MAX_CODE)
		return 0;
	return words * WORD;
}

/* The end of the core's text (its pseudo-static part): the TLSF pages after. */
static uint64_t core_text_end(const struct sbcl_heap *h)
{
	if (h->tlsf_start > h->text_start && h->tlsf_start < h->text_end)
		return h->tlsf_start;
	return h->text_end;
}

/* Builds h's index of the core's text; 0 or -errno (-E2BIG over
 * SBCL_MAX_TEXT, -EINVAL for a walk that does not end where the space does). */
static int sbcl_index(struct sbcl_heap *h)
{
	enum { CHUNK = 1 << 20 };
	uint64_t end = core_text_end(h), a = h->text_start, base = 0, blen = 0;
	uint32_t npages;
	uint8_t *buf;
	int err = 0;

	if (h->index)
		return 0;
	if (!h->l || end <= h->text_start || (h->text_start & (SBCL_PAGE_BYTES - 1)))
		return -EINVAL;
	if (end - h->text_start > SBCL_MAX_TEXT)
		return -E2BIG;
	npages = (uint32_t)((end - h->text_start + SBCL_PAGE_BYTES - 1) / SBCL_PAGE_BYTES);
	h->index = calloc(npages, sizeof(*h->index));
	buf = malloc(CHUNK);
	if (!h->index || !buf) {
		err = -ENOMEM;
		goto out;
	}
	while (a < end) {
		uint64_t hdr, size;
		bool code;

		if (!blen || a < base || a + WORD > base + blen) {
			base = a;
			blen = end - a < CHUNK ? end - a : CHUNK;
			if (blen < WORD || (err = rd(h, base, buf, blen)))
				goto out;
		}
		hdr = rd64(buf + (a - base), false);
		size = text_obj_size(h->l, hdr, &code);
		if (!size || size > end - a) {
			err = -EINVAL;
			goto out;
		}
		/* Every page whose first byte is in [a, a + size). */
		for (uint64_t p = (a - h->text_start + SBCL_PAGE_BYTES - 1) / SBCL_PAGE_BYTES;
		     p < npages && h->text_start + p * SBCL_PAGE_BYTES < a + size; p++)
			h->index[p] = (uint32_t)(a - h->text_start);
		a += size;
	}
	h->nr_index = npages;
out:
	free(buf);
	if (err) {
		free(h->index);
		h->index = NULL;
		h->nr_index = 0;
	}
	return err;
}

void sbcl__release(struct sbcl_heap *h)
{
	free(h->index);
	h->index = NULL;
	h->nr_index = 0;
}

/* A TLSF page's scan start at or below pc: the lowest object start on the
 * nearest page at or before pc's that has one (and, on pc's page, not
 * above pc). Pages of l->card_bytes, scan starts of l->sso_bytes (a page
 * without an object start: all ones). */
static int tlsf_scan_start(struct sbcl_heap *h, uint64_t pc, uint64_t *start)
{
	uint8_t b[4 * SBCL_MAX_SCAN];
	uint32_t card = h->l->card_bytes, w = h->l->sso_bytes;
	uint64_t page, first, n;
	int err;

	if (!h->sso || !card || (w != 2 && w != 4))
		return -ENOENT;
	page = (pc - h->tlsf_start) / card;
	first = page >= SBCL_MAX_SCAN - 1 ? page - (SBCL_MAX_SCAN - 1) : 0;
	n = page - first + 1;
	if ((err = rd(h, h->sso + w * first, b, w * n)))
		return err;
	for (uint64_t i = n; i-- > 0;) {
		uint32_t sso = (uint32_t)rd_le(b + w * i, w);
		uint64_t at = h->tlsf_start + (first + i) * card + sso;

		if (sso >= card || (sso & LOWTAG_MASK) || at > pc)
			continue;
		*start = at;
		return 0;
	}
	return -ENOENT;
}

/* Whether addr is in dynamic space, and its code is named (a layout that says how). */
static bool in_dyn(const struct sbcl_heap *h, uint64_t addr)
{
	return h->l && h->l->gc_page_bytes && h->page_table && addr >= h->dyn_start &&
	       addr - h->dyn_start < h->dyn_size;
}

#define PAGE_TYPE_MASK 15u
#define PAGE_TYPE_CODE 7u
#define SSO_MAX	       0xffffffffu /* a scan start further back than 32 bits say */

/* The size in bytes of an object on a dynamic-space code page (code, a
 * funcallable instance, a filler), 0 if hdr is none of these. */
static uint64_t dyn_obj_size(const struct sbcl_layout *l, uint64_t hdr, bool *code)
{
	uint64_t words = hdr >> 32;
	uint8_t wt = (uint8_t)hdr;

	*code = wt == l->code_widetag;
	if (wt == l->fin_widetag)
		return WORD * (1 + (((hdr >> 8) & 0x7fff) | 1)); /* SBCL's size_instance */
	if (wt != l->code_widetag && wt != l->filler_widetag)
		return 0;
	if (words < 2 || (words & 1) || words * WORD > SBCL_MAX_CODE)
		return 0;
	return words * WORD;
}

/*
 * Whether a dynamic-space walk may read bytes more this second. A tenant's
 * page_table can send every lookup 4 MiB back over objects none of which is
 * code, at a new pc every sample (a sled): unnamed, so never kept, so
 * walked again; the budget bounds what that costs the agent.
 */
static bool dyn_walk_spend(struct sbcl_heap *h, uint64_t bytes)
{
	uint64_t now = now_ns();

	if (!h->dyn_walk_ns || now - h->dyn_walk_ns >= NS_PER_SEC) {
		h->dyn_walk_ns = now;
		h->dyn_walk_left = SBCL_DYN_BUDGET;
	}
	if (bytes > h->dyn_walk_left) {
		h->dyn_over++;
		return false;
	}
	h->dyn_walk_left -= bytes;
	h->dyn_walked += bytes;
	return true;
}

/*
 * The object of a dynamic-space code page holding pc: from the scan start
 * of pc's page (page_table's entry: a 32-bit offset back from the page, in
 * words or, with its low bit set, in halves of a card), object after
 * object, read in pieces of 64 KiB. What moves under the walk (a GC)
 * gives a header that is none of these objects, or a code object that is
 * checked again when named.
 */
static int dyn_find_code(struct sbcl_heap *h, uint64_t pc, uint64_t *code)
{
	enum { CHUNK = 64 << 10 };
	const struct sbcl_layout *l = h->l;
	uint64_t page = (pc - h->dyn_start) / l->gc_page_bytes, page_addr, back, a, base = 0,
		 blen = 0;
	uint8_t e[8], *buf;
	uint32_t sso;
	int err = -ENOENT;

	if ((err = rd(h, h->page_table + 8 * page, e, sizeof(e))))
		return err;
	sso = rd32(e, false);
	if ((e[6] & PAGE_TYPE_MASK) != PAGE_TYPE_CODE || sso == SSO_MAX)
		return -ENOENT;
	back = (uint64_t)(sso & ~1u) << (sso & 1 ? l->gc_card_shift - 1 : 3);
	page_addr = h->dyn_start + page * l->gc_page_bytes;
	if (back > SBCL_MAX_DYN_WALK || back > page_addr - h->dyn_start)
		return -ENOENT;
	a = page_addr - back;
	if (!(buf = malloc(CHUNK)))
		return -ENOMEM;
	err = -ENOENT;
	for (uint32_t step = 0; step < SBCL_MAX_STEPS && a <= pc; step++) {
		uint64_t hdr, size;
		bool is_code;

		if (!blen || a < base || a + WORD > base + blen) {
			base = a;
			blen = h->dyn_start + h->dyn_size - a < CHUNK
				       ? h->dyn_start + h->dyn_size - a
				       : CHUNK;
			/* Not past pc's page: the rest may be unmapped. */
			if (base + blen > page_addr + l->gc_page_bytes)
				blen = page_addr + l->gc_page_bytes - base;
			if (blen >= WORD && !dyn_walk_spend(h, blen)) {
				err = -EBUSY;
				break;
			}
			if (blen < WORD || (err = rd(h, base, buf, blen)))
				break;
		}
		hdr = rd64(buf + (a - base), false);
		size = dyn_obj_size(l, hdr, &is_code);
		if (!size) {
			err = -EINVAL;
			break;
		}
		if (pc < a + size) {
			err = is_code ? 0 : -ENOENT;
			if (is_code)
				*code = a;
			break;
		}
		a += size;
		err = -ENOENT;
	}
	free(buf);
	return err;
}

int sbcl__find_code(struct sbcl_heap *h, uint64_t pc, uint64_t *code)
{
	uint64_t a, end = core_text_end(h);
	int err;

	if (in_dyn(h, pc))
		return dyn_find_code(h, pc, code);
	if (!h->l || pc < h->text_start || pc >= h->text_end)
		return -ENOENT;
	if (pc < end) {
		uint64_t page = (pc - h->text_start) / SBCL_PAGE_BYTES;

		if ((err = sbcl_index(h)))
			return err;
		if (page >= h->nr_index)
			return -ENOENT;
		a = h->text_start + h->index[page];
	} else if ((err = tlsf_scan_start(h, pc, &a))) {
		return err;
	}
	for (uint32_t step = 0; step < SBCL_MAX_STEPS && a < h->text_end; step++) {
		uint64_t hdr, size;
		bool is_code;

		if ((err = rd_word(h, a, &hdr)))
			return err;
		size = text_obj_size(h->l, hdr, &is_code);
		if (!size)
			return -EINVAL;
		if (pc < a + size) {
			if (!is_code)
				return -ENOENT;
			*code = a;
			return 0;
		}
		a += size;
	}
	return -ENOENT;
}

/* --- printing names ---------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, used;
	bool cut;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->used + n >= o->len) {
		n = o->len - 1 - o->used;
		o->cut = true;
	}
	memcpy(o->buf + o->used, s, n);
	o->used += n;
	o->buf[o->used] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A string object's characters as UTF-8 (at most SBCL_STRING_MAX); length or -errno. */
static int read_string(struct sbcl_heap *h, uint64_t obj, char *dst, size_t cap, bool *cut)
{
	uint8_t hd[2 * WORD], raw[4 * SBCL_STRING_MAX];
	uint64_t len, n;
	size_t w = 0;
	bool wide;
	int err;

	*cut = false;
	if ((obj & LOWTAG_MASK) != LOWTAG_OTHER)
		return -EINVAL;
	obj -= LOWTAG_OTHER;
	if ((err = rd(h, obj, hd, sizeof(hd))))
		return err;
	if (hd[0] != h->l->base_string_widetag && hd[0] != h->l->char_string_widetag)
		return -EINVAL;
	wide = hd[0] == h->l->char_string_widetag;
	len = rd64(hd + WORD, false);
	if (len & 1)
		return -EINVAL; /* not a fixnum */
	len >>= 1;
	n = len > SBCL_STRING_MAX ? SBCL_STRING_MAX : len;
	*cut = n < len;
	if (n && (err = rd(h, obj + 2 * WORD, raw, n * (wide ? 4 : 1))))
		return err;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = wide ? rd32(raw + 4 * i, false) : raw[i];
		char u[4];
		size_t k;

		if (c < 0x20 || c == 0x7f) {
			u[0] = '?';
			k = 1;
		} else if (c < 0x80) {
			u[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			u[0] = (char)(0xc0 | c >> 6);
			u[1] = (char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000 && (c < 0xd800 || c > 0xdfff)) {
			u[0] = (char)(0xe0 | c >> 12);
			u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
			u[2] = (char)(0x80 | (c & 0x3f));
			k = 3;
		} else if (c >= 0x10000 && c < 0x110000) {
			u[0] = (char)(0xf0 | c >> 18);
			u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
			u[3] = (char)(0x80 | (c & 0x3f));
			k = 4;
		} else {
			u[0] = '?';
			k = 1;
		}
		if (w + k >= cap) {
			*cut = true;
			break;
		}
		memcpy(dst + w, u, k);
		w += k;
	}
	dst[w] = '\0';
	return (int)w;
}

/* Whether SBCL's printer writes a symbol name between bars (|foo|). */
static bool needs_bars(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || strchr(" ()'\";|:`,#\\", *s))
			return true;
	return false;
}

/* Whether symbol sym (tagged) is one of package pkg's (tagged) external
 * symbols: in the cells of its EXTERNAL-SYMBOLS package-hashtable. */
static bool is_external(struct sbcl_heap *h, uint64_t pkg, uint64_t sym)
{
	enum { CHUNK = 512 };
	uint8_t b[CHUNK * WORD];
	uint64_t ht, cells, vh[2], n;

	if (!h->l->pkg_ext_slot || rd_word(h, pkg - LOWTAG_INST + WORD * h->l->pkg_ext_slot, &ht) ||
	    (ht & LOWTAG_MASK) != LOWTAG_INST ||
	    rd_word(h, ht - LOWTAG_INST + WORD * h->l->pht_cells_word, &cells) ||
	    (h->l->cells_in_cdr && ((cells & LOWTAG_MASK) != LOWTAG_LIST ||
				    rd_word(h, cells - LOWTAG_LIST + WORD, &cells))) ||
	    (cells & LOWTAG_MASK) != LOWTAG_OTHER || rd_word(h, cells - LOWTAG_OTHER, &vh[0]) ||
	    (uint8_t)vh[0] != h->l->vector_widetag ||
	    rd_word(h, cells - LOWTAG_OTHER + WORD, &vh[1]) || (vh[1] & 1))
		return false;
	n = vh[1] >> 1;
	n = n < SBCL_MAX_EXT ? n : SBCL_MAX_EXT;
	for (uint64_t i = 0; i < n; i += CHUNK) {
		uint64_t k = n - i < CHUNK ? n - i : CHUNK;

		if (rd(h, cells - LOWTAG_OTHER + 2 * WORD + WORD * i, b, k * WORD))
			return false;
		for (uint64_t j = 0; j < k; j++)
			if (rd64(b + WORD * j, false) == sym)
				return true;
	}
	return false;
}

static void print_symbol(struct sbcl_heap *h, uint64_t obj, struct out *o)
{
	char name[4 * SBCL_STRING_MAX + 1], pkg[4 * SBCL_STRING_MAX + 1];
	uint64_t w, id, vec, vhdr[2], p, pname;
	bool cut, pcut = false;
	int n;

	if (rd_word(h, obj - LOWTAG_OTHER + WORD * h->l->name_slot, &w) ||
	    (h->l->pkg_id_in_header && rd_word(h, obj - LOWTAG_OTHER, &id)) ||
	    (n = read_string(h, h->l->pkg_id_in_header ? w : w & 0xffffffffffffull, name,
			     sizeof(name), &cut)) < 0) {
		puts_(o, "?");
		return;
	}
	/* The package id: header bytes 1-2 (2.4.7 on), else the name word's top 16 bits. */
	id = h->l->pkg_id_in_header ? (id >> 8) & 0xffff : w >> 48;
	pkg[0] = '\0';
	vec = h->package_vector;
	if (id && (vec & LOWTAG_MASK) == LOWTAG_OTHER &&
	    !rd_word(h, vec - LOWTAG_OTHER, &vhdr[0]) && (uint8_t)vhdr[0] == h->l->vector_widetag &&
	    !rd_word(h, vec - LOWTAG_OTHER + WORD, &vhdr[1]) && !(vhdr[1] & 1) &&
	    id < vhdr[1] >> 1 && !rd_word(h, vec - LOWTAG_OTHER + WORD * (2 + id), &p) &&
	    (p & LOWTAG_MASK) == LOWTAG_INST &&
	    !rd_word(h, p - LOWTAG_INST + WORD * h->l->pkg_name_slot, &pname))
		read_string(h, pname, pkg, sizeof(pkg), &pcut);
	if (!id)
		puts_(o, "#:");
	else if (!strcmp(pkg, "KEYWORD"))
		puts_(o, ":");
	else if (!pkg[0])
		puts_(o, "?::");
	else if (strcmp(pkg, "COMMON-LISP") && strcmp(pkg, "COMMON-LISP-USER")) {
		puts_(o, pkg);
		puts_(o, is_external(h, p, obj) ? ":" : "::");
	}
	if (needs_bars(name)) {
		puts_(o, "|");
		puts_(o, name);
		puts_(o, "|");
	} else {
		puts_(o, name);
	}
	if (cut)
		puts_(o, "...");
}

static void print_obj(struct sbcl_heap *h, uint64_t obj, struct out *o, unsigned depth,
		      bool lambda_list);

/*
 * Whether obj is NIL: the layout's address, or (a layout without it) by its
 * shape, which nothing else in a heap has: a cons whose car and cdr are
 * itself, in a symbol (the word before it a symbol header).
 */
static bool is_nil(struct sbcl_heap *h, uint64_t obj)
{
	uint8_t b[3 * WORD];

	if (h->l->nil)
		return obj == h->l->nil;
	if ((obj & LOWTAG_MASK) != LOWTAG_LIST || obj < LOWTAG_LIST + WORD ||
	    rd(h, obj - LOWTAG_LIST - WORD, b, sizeof(b)))
		return false;
	return (uint8_t)rd64(b, false) == h->l->symbol_widetag && rd64(b + WORD, false) == obj &&
	       rd64(b + 2 * WORD, false) == obj;
}

static void print_list(struct sbcl_heap *h, uint64_t obj, struct out *o, unsigned depth)
{
	bool lambda = false;

	if (depth >= SBCL_DEPTH_MAX) {
		puts_(o, "(...)");
		return;
	}
	puts_(o, "(");
	for (unsigned i = 0; !o->cut; i++) {
		uint64_t cell[2];
		uint8_t b[2 * WORD];
		size_t mark;

		if (i == SBCL_LIST_MAX) {
			puts_(o, " ...");
			break;
		}
		if (rd(h, obj - LOWTAG_LIST, b, sizeof(b))) {
			puts_(o, "?");
			break;
		}
		cell[0] = rd64(b, false);
		cell[1] = rd64(b + WORD, false);
		if (i)
			puts_(o, " ");
		mark = o->used;
		print_obj(h, cell[0], o, depth + 1, lambda && i == 1);
		if (i == 0)
			lambda = !strcmp(o->buf + mark, "LAMBDA");
		if (is_nil(h, cell[1]))
			break;
		if ((cell[1] & LOWTAG_MASK) != LOWTAG_LIST) {
			puts_(o, " . ");
			print_obj(h, cell[1], o, depth + 1, false);
			break;
		}
		obj = cell[1];
	}
	puts_(o, ")");
}

static void print_obj(struct sbcl_heap *h, uint64_t obj, struct out *o, unsigned depth,
		      bool lambda_list)
{
	char s[4 * SBCL_STRING_MAX + 1];
	uint64_t hdr;
	bool cut;

	if (!(obj & 1)) { /* a fixnum */
		snprintf(s, sizeof(s), "%lld", (long long)((int64_t)obj >> 1));
		puts_(o, s);
		return;
	}
	if (is_nil(h, obj)) {
		puts_(o, lambda_list ? "()" : "NIL");
		return;
	}
	switch (obj & LOWTAG_MASK) {
	case LOWTAG_LIST:
		print_list(h, obj, o, depth);
		return;
	case LOWTAG_OTHER:
		if (rd_word(h, obj - LOWTAG_OTHER, &hdr))
			break;
		if ((uint8_t)hdr == h->l->symbol_widetag) {
			print_symbol(h, obj, o);
			return;
		}
		if (read_string(h, obj, s, sizeof(s), &cut) >= 0) {
			puts_(o, "\"");
			puts_(o, s);
			puts_(o, cut ? "...\"" : "\"");
			return;
		}
		break;
	default:
		break;
	}
	puts_(o, "?");
}

static int fun_name(struct sbcl_heap *h, uint64_t code, uint64_t pc, char *buf, size_t len)
{
	uint8_t hd[2 * WORD], tr[WORD], offs[4 * SBCL_MAX_FUNS];
	uint64_t hdr, size, boxed, text_off, tl, nfun, best = UINT64_MAX, best_off = 0, name, fhdr;
	struct out o = { .buf = buf, .len = len };
	int err;

	if (!h->l || len < 8 || (code & LOWTAG_MASK))
		return -EINVAL;
	buf[0] = '\0';
	if ((err = rd(h, code, hd, sizeof(hd))))
		return err;
	hdr = rd64(hd, false);
	/* FREE_BIT: a free TLSF block, in text space only. */
	if ((uint8_t)hdr != h->l->code_widetag || ((hdr & FREE_BIT) && !in_dyn(h, code)))
		return -EINVAL;
	size = (hdr >> 32) * WORD;
	boxed = rd64(hd + WORD, false) & 0xffffffffu;
	if (size < 4 * WORD || size > SBCL_MAX_CODE || (boxed & (WORD - 1)) ||
	    boxed < WORD * (h->l->fun_names_word + h->l->fun_slots) || boxed >= size)
		return -EINVAL;
	if (pc < code + boxed || pc >= code + size)
		return -ENOENT;
	if ((err = rd(h, code + size - WORD, tr, sizeof(tr))))
		return err;
	tl = (uint64_t)(tr[6] | tr[7] << 8);
	nfun = (uint64_t)(tr[4] | tr[5] << 8) >> 5;
	if (!nfun || nfun > SBCL_MAX_FUNS || tl < 4 + 4 * nfun || tl > size - boxed ||
	    WORD * (h->l->fun_names_word + h->l->fun_slots * nfun) > boxed)
		return -EINVAL;
	text_off = pc - code - boxed;
	if (text_off >= size - boxed - tl)
		return -ENOENT; /* in the trailer */
	if ((err = rd(h, code + size - 4 - 4 * nfun, offs, 4 * nfun)))
		return err;
	/* offset[i] at end - 8 - 4i: the table runs backwards from the trailer. */
	for (uint64_t i = 0; i < nfun; i++) {
		uint64_t off = rd32(offs + 4 * (nfun - 1 - i), false);

		if (off >= size - boxed - tl || ((boxed + off) & LOWTAG_MASK))
			return -EINVAL;
		if (off <= text_off && (best == UINT64_MAX || off >= best_off)) {
			best = i;
			best_off = off;
		}
	}
	if (best == UINT64_MAX)
		return -ENOENT; /* before the first simple-fun */
	if ((err = rd_word(h, code + boxed + best_off, &fhdr)))
		return err;
	if ((uint8_t)fhdr != h->l->fun_widetag)
		return -EINVAL;
	if ((err = rd_word(h, code + WORD * (h->l->fun_names_word + h->l->fun_slots * best),
			   &name)))
		return err;
	print_obj(h, name, &o, 0, false);
	if (o.cut && o.used >= 3)
		memcpy(buf + o.used - 3, "...", 3);
	return (int)o.used;
}

#define ASM_MAX_PAIRS 1024u /* entries read of the assembly routines' table */

/*
 * The assembly routines (GENERIC-+, ALLOC-TRAMP...) share one code object
 * without simple-funs: its debug-info is (a cons of) a hash table of
 * routine name -> (start end . index), offsets from the code's text. Named after the
 * routine whose [start, end] holds pc; -ENOENT if none, -EINVAL if the
 * object is not that.
 */
static int asm_name(struct sbcl_heap *h, uint64_t code, uint64_t pc, char *buf, size_t len)
{
	uint8_t hd[4 * WORD], vh[2 * WORD], kv[2 * WORD * ASM_MAX_PAIRS];
	uint64_t hdr, boxed, size, di, pairs, n, off;
	struct out o = { .buf = buf, .len = len };
	int err;

	if (len < 8)
		return -EINVAL;
	if ((err = rd(h, code, hd, sizeof(hd))))
		return err;
	hdr = rd64(hd, false);
	size = (hdr >> 32) * WORD;
	boxed = rd64(hd + WORD, false) & 0xffffffffu;
	if (h->l->debug_info_word < 2 || h->l->debug_info_word > 3)
		return -EINVAL;
	/* Word 2 up to 2.3.11, 3 (after the fixups) from 2.4.0. */
	di = rd64(hd + WORD * h->l->debug_info_word, false);
	if ((uint8_t)hdr != h->l->code_widetag || boxed < 4 * WORD || boxed >= size ||
	    size > SBCL_MAX_CODE || pc < code + boxed || pc >= code + size)
		return -EINVAL;
	/* 2.2.9 keeps (table . 0) there. */
	if ((di & LOWTAG_MASK) == LOWTAG_LIST && (err = rd_word(h, di - LOWTAG_LIST, &di)))
		return err;
	if ((di & LOWTAG_MASK) != LOWTAG_INST)
		return -EINVAL;
	off = pc - code - boxed;
	if ((err = rd_word(h, di - LOWTAG_INST + WORD * h->l->ht_pairs_word, &pairs)))
		return err;
	if ((pairs & LOWTAG_MASK) != LOWTAG_OTHER ||
	    (err = rd(h, pairs - LOWTAG_OTHER, vh, sizeof(vh))))
		return err ? err : -EINVAL;
	n = rd64(vh + WORD, false);
	if (vh[0] != h->l->vector_widetag || (n & 1))
		return -EINVAL;
	n >>= 1;
	n = n < 2 * ASM_MAX_PAIRS + 2 ? n : 2 * ASM_MAX_PAIRS + 2;
	if (n <= 2)
		return -ENOENT;
	/* Elements 0 and 1 are the table's own; then key, value pairs. */
	if ((err = rd(h, pairs - LOWTAG_OTHER + 4 * WORD, kv, (n - 2) / 2 * 2 * WORD)))
		return err;
	for (uint64_t i = 0; i + 1 < n - 2; i += 2) {
		uint64_t key = rd64(kv + WORD * i, false), val = rd64(kv + WORD * (i + 1), false);
		uint64_t start, rest, end;

		if ((val & LOWTAG_MASK) != LOWTAG_LIST || rd_word(h, val - LOWTAG_LIST, &start) ||
		    rd_word(h, val - LOWTAG_LIST + WORD, &rest) ||
		    (rest & LOWTAG_MASK) != LOWTAG_LIST || rd_word(h, rest - LOWTAG_LIST, &end) ||
		    (start & 1) || (end & 1))
			continue;
		if ((start >> 1) <= off && off <= (end >> 1)) {
			buf[0] = '\0';
			print_obj(h, key, &o, 0, false);
			if (o.cut && o.used >= 3)
				memcpy(buf + o.used - 3, "...", 3);
			return (int)o.used;
		}
	}
	return -ENOENT;
}

/* The name of code's function at pc: a simple-fun's, else (code that is no
 * simple-funs' object) an assembly routine's. */
static int code_name(struct sbcl_heap *h, uint64_t code, uint64_t pc, char *buf, size_t len)
{
	int n = fun_name(h, code, pc, buf, len), m;

	if (n >= 0 || n != -EINVAL)
		return n;
	m = asm_name(h, code, pc, buf, len);
	return m == -EINVAL ? n : m;
}

int sbcl__fun_range(struct sbcl_heap *h, uint64_t pc, uint64_t *start, uint64_t *end)
{
	uint8_t hd[2 * WORD], tr[WORD], offs[4 * SBCL_MAX_FUNS];
	uint64_t code, hdr, size, boxed, tl, nfun, text, text_end, lo = 0, hi;
	bool found = false;
	int err;

	if ((err = sbcl__find_code(h, pc, &code)) || (err = rd(h, code, hd, sizeof(hd))))
		return err;
	hdr = rd64(hd, false);
	size = (hdr >> 32) * WORD;
	boxed = rd64(hd + WORD, false) & 0xffffffffu;
	if ((uint8_t)hdr != h->l->code_widetag || size < 4 * WORD || size > SBCL_MAX_CODE ||
	    (boxed & (WORD - 1)) || !boxed || boxed >= size)
		return -EINVAL;
	if ((err = rd(h, code + size - WORD, tr, sizeof(tr))))
		return err;
	tl = (uint64_t)(tr[6] | tr[7] << 8);
	nfun = (uint64_t)(tr[4] | tr[5] << 8) >> 5;
	if (!nfun || nfun > SBCL_MAX_FUNS || tl < 4 + 4 * nfun || tl > size - boxed)
		return -EINVAL;
	text = code + boxed;
	text_end = code + size - tl;
	if (pc < text || pc >= text_end)
		return -ENOENT;
	if ((err = rd(h, code + size - 4 - 4 * nfun, offs, 4 * nfun)))
		return err;
	/* The simple-fun at or below pc, up to the next one or the text's end. */
	hi = text_end - text;
	for (uint64_t i = 0; i < nfun; i++) {
		uint64_t off = rd32(offs + 4 * i, false);

		if (off >= text_end - text)
			return -EINVAL;
		if (off <= pc - text && (!found || off >= lo)) {
			lo = off;
			found = true;
		}
	}
	if (!found)
		return -ENOENT;
	for (uint64_t i = 0; i < nfun; i++) {
		uint64_t off = rd32(offs + 4 * i, false);

		if (off > lo && off < hi)
			hi = off;
	}
	/* Its instructions: past the simple-fun's header and self words. */
	*start = text + lo + 2 * WORD;
	*end = text + hi;
	return *end > *start && pc >= *start ? 0 : -ENOENT;
}

int sbcl__name_pc(struct sbcl_heap *h, uint64_t pc, char *buf, size_t len)
{
	uint64_t code;
	int err = sbcl__find_code(h, pc, &code);

	return err ? err : code_name(h, code, pc, buf, len);
}

/* --- a process ------------------------------------------------------------------- */

enum {
	V_TEXT_START,
	V_TEXT_HWM,
	V_TLSF_START,
	V_TLSF_SSO,
	V_PACKAGES,
	V_REQUIRED, /* those above: a runtime; those below: dynamic space's code */
	V_DYN_START = V_REQUIRED,
	V_DYN_SIZE,
	V_PAGE_TABLE,
	V_N_GCS, /* optional: GCs so far (sbcl__new_drain) */
	V_NR,
};

static const char *const var_names[V_NR] = {
	"TEXT_SPACE_START",
	"text_space_highwatermark",
	"tlsf_mem_start",
	"tlsf_page_sso",
	"lisp_package_vector",
	"DYNAMIC_SPACE_START",
	"dynamic_space_size",
	"page_table",
	"n_gcs",
};

#define MAX_SYMS    (1u << 20) /* symbols looked at in one file */
#define MAX_RODATA  (64u << 20)
#define PROBE_FILES 4

/* What one file holds (its memo, MFILE_MEMO_SBCL). */
struct sbclfile {
	bool runtime;
	uint64_t var[V_NR];
	const struct sbcl_layout *l; /* NULL: a version without a layout */
	char version[32];	     /* what its .rodata says, "" if nothing */
	bool warned;		     /* -ENOTSUP's why given (once per runtime file) */
	bool alloc_warned;	     /* ... and --alloc's (sbcl__file_layout) */
};

/* Whether s (len bytes, not NUL-terminated) is an SBCL version: "2.2.9", "2.2.9.debian". */
static bool version_like(const char *s, size_t len)
{
	unsigned dots = 0;

	if (len < 5 || len > 31 || s[0] < '1' || s[0] > '9')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.')
			dots++;
		else if (dots < 3 && (s[i] < '0' || s[i] > '9'))
			return false;
		else if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	}
	return dots >= 2;
}

const struct sbcl_layout *sbcl__rodata_layout(const char *b, size_t len, char *version,
					      size_t version_len)
{
	const struct sbcl_layout *found = NULL;
	char first[32] = "", with[32] = "", without[32] = "";
	bool doubt = false;

	for (size_t i = 0, start = 0; i < len; i++) {
		const struct sbcl_layout *l;
		char v[32];

		if (b[i])
			continue;
		if (version_like(b + start, i - start)) {
			memcpy(v, b + start, i - start);
			v[i - start] = '\0';
			l = sbcl__layout(v);
			if (!first[0])
				snprintf(first, sizeof(first), "%s", v);
			if (l && !found)
				snprintf(with, sizeof(with), "%s", v);
			if (!l && v[0] == layouts[0].version[0] && v[1] == '.') {
				doubt = true; /* SBCL's major version, no layout */
				if (!without[0])
					snprintf(without, sizeof(without), "%s", v);
			}
			if (l && found && l != found)
				doubt = true;
			if (l)
				found = l;
		}
		start = i + 1;
	}
	if (doubt)
		found = NULL;
	if (version_len)
		snprintf(version, version_len, "%s", found ? with : without[0] ? without : first);
	return found;
}

/* The runtime's version string and layout (sbcl__rodata_layout) from its .rodata. */
static void find_version(Elf *elf, struct sbclfile *f)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(name, ".rodata") ||
		    sh.sh_size > MAX_RODATA || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		f->l = sbcl__rodata_layout(d->d_buf, d->d_size, f->version, sizeof(f->version));
		return;
	}
}

static void find_vars(Elf *elf, struct sbclfile *f)
{
	bool found[V_NR] = { 0 };

	elffile__find_syms(elf, var_names, V_NR, ELFFILE_OBJECTS, MAX_SYMS, NULL, found, f->var,
			   NULL);
	f->runtime = true;
	for (int k = 0; k < V_REQUIRED; k++)
		f->runtime = f->runtime && found[k];
}

static const struct sbclfile *file_vars(struct mfile *mf, unsigned *left)
{
	const struct sbclfile *memo = mfile__memo(mf, MFILE_MEMO_SBCL);
	struct sbclfile *f;
	Elf *elf;

	if (memo)
		return memo;
	if (!*left || !(elf = mfile__elf(mf)))
		return NULL;
	(*left)--;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	find_vars(elf, f);
	if (f->runtime)
		find_version(elf, f);
	mfile__set_memo(mf, MFILE_MEMO_SBCL, f);
	return f;
}

int sbcl__file_layout(struct mfile *mf, const struct sbcl_layout **l, char *version,
		      size_t version_len, bool *warn)
{
	unsigned left = 1;
	struct sbclfile *f = (struct sbclfile *)file_vars(mf, &left);

	*l = NULL;
	*warn = false;
	if (!f || !f->runtime)
		return -ENOENT;
	snprintf(version, version_len, "%s", f->version[0] ? f->version : "(version not found)");
	if (!f->l || !f->l->tlab[0][0]) {
		*warn = !f->alloc_warned;
		f->alloc_warned = true;
		return -ENOTSUP;
	}
	*l = f->l;
	return 0;
}

/* A 32-bit displacement at b. */
static int32_t disp32(const uint8_t *b)
{
	int32_t v;

	memcpy(&v, b, 4);
	return v;
}

int sbcl__tls_offset_ok(Elf *elf, int64_t tpoff)
{
	size_t n;

	if (!elf || elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t align, size;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_TLS)
			continue;
		align = ph.p_align ? ph.p_align : 1;
		if (ph.p_memsz > (1u << 20) || align > (1u << 20) || (align & (align - 1)))
			return -EINVAL;
		size = (ph.p_memsz + align - 1) & ~(align - 1);
		/* an 8-byte pointer wholly inside the block below the thread pointer */
		return tpoff < 0 && tpoff >= -(int64_t)size && !(tpoff & 7) ? 0 : -EINVAL;
	}
	return -EINVAL;
}

int sbcl__alloc_code(const struct sbcl_layout *l, bool list, const uint8_t *code, size_t len,
		     uint64_t va, uint64_t *got)
{
	/* mov %fs:(%rax),%rsi; lea D32(%rsi),%rax; lea D8(%rsi),%r12; cmovne %rax,%r12 */
	static const uint8_t fs[] = { 0x64, 0x48, 0x8b, 0x30 }, lea_rax[] = { 0x48, 0x8d, 0x86 },
			     lea_r12[] = { 0x4c, 0x8d, 0x66 }, cmov[] = { 0x4c, 0x0f, 0x45, 0xe0 };
	unsigned k = list ? 1 : 0;

	if (!l || !l->tlab[k][0] || l->tlab[k][0] > 127)
		return -ENOTSUP;
	/* mov GOT(%rip),%rax within the prologue, then the above at most 4 bytes on */
	for (size_t p = 0; p + 7 <= len && p < 48; p++) {
		size_t q = p + 7;

		if (code[p] != 0x48 || code[p + 1] != 0x8b || code[p + 2] != 0x05)
			continue;
		for (size_t s = q; s <= q + 4 && s + 19 <= len; s++) {
			const uint8_t *c = code + s;

			if (memcmp(c, fs, 4) || memcmp(c + 4, lea_rax, 3) ||
			    (uint32_t)disp32(c + 7) != l->tlab[k][1] ||
			    memcmp(c + 11, lea_r12, 3) || c[14] != l->tlab[k][0] ||
			    memcmp(c + 15, cmov, 4))
				continue;
			*got = va + q + (uint64_t)(int64_t)disp32(code + p + 3);
			return 0;
		}
	}
	return -ENOTSUP;
}

int sbcl__alloc_large_exit(const uint8_t *code, size_t len, uint64_t va, uint64_t large,
			   uint64_t *at)
{
	static const uint8_t seq[] = { 0x48, 0x83, 0xc4, 0x10, 0x48, 0x89, 0xdf,
				       0xbe, 0x03, 0x00, 0x00, 0x00, 0x5b, 0x41,
				       0x5c, 0x41, 0x5d, 0x41, 0x5e, 0x5d, 0xe9 };
	unsigned found = 0;

	for (size_t p = 0; p + sizeof(seq) + 4 <= len; p++) {
		uint64_t jmp = va + p + sizeof(seq) - 1;

		if (memcmp(code + p, seq, sizeof(seq)) ||
		    jmp + 5 + (uint64_t)(int64_t)disp32(code + p + sizeof(seq)) != large)
			continue;
		*at = jmp;
		found++;
	}
	return found == 1 ? 0 : -ENOTSUP;
}

/* -ESRCH once the process is gone (its memory with it), else -EFAULT for what cannot be read. */
static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct sbcl_proc *sp = ctx;
	ssize_t n = ptab__read_mem(sp->t, sp->p, addr, buf, len);

	return n == (ssize_t)len ? 0 : n == -ESRCH ? -ESRCH : -EFAULT;
}

int sbcl__probe(struct ptab *t, struct pproc *p, struct sbcl_proc *out, char *why, size_t why_len)
{
	struct pmaps *pm = ptab__maps(t, p);
	unsigned left = PROBE_FILES;
	const char *no_runtime = NULL;
	int err = -ENOENT;

	why[0] = '\0';
	if (!pm)
		return -ENOENT;
	for (size_t i = 0; i < pm->m.nr && err == -ENOENT; i++) {
		const struct procmap *m = &pm->m.maps[i];
		const struct sbclfile *f;
		uint64_t bias, v[V_NR];
		struct mfile *mf;

		if (!m->path || !(m->perms & PROCMAP_X) || m->path[0] != '/')
			continue;
		if (no_runtime && !strcmp(no_runtime, m->path))
			continue; /* the same file: not readable, or no runtime in it */
		if (ptab__file(t, p, m, &mf)) {
			no_runtime = m->path;
			continue;
		}
		f = file_vars(mf, &left);
		if (!f || !f->runtime || !mfile__elf(mf)) {
			no_runtime = m->path;
			mfile__put(t, mf);
			continue;
		}
		/* An executable saved with its core (save-lisp-and-die
		 * :executable t) maps the core's spaces from past its ELF
		 * segments too: the runtime's variables are where a segment is. */
		if (elffile__load_bias(mfile__elf(mf), m->start, m->offset, &bias)) {
			mfile__put(t, mf);
			continue;
		}
		mfile__put(t, mf);
		if (!f->l) {
			err = -ENOTSUP;
			if (f->warned)
				break;
			/* The memo is this module's: one warning per runtime file. */
			((struct sbclfile *)f)->warned = true;
			snprintf(why, why_len,
				 "SBCL %s: a version whose heap layout bpfprof does not know "
				 "(it knows %s): its Lisp functions are not named",
				 f->version[0] ? f->version : "(version not found)",
				 sbcl__known_versions());
			break;
		}
		memset(out, 0, sizeof(*out));
		out->t = t;
		out->p = p;
		out->h.l = f->l;
		out->h.read = proc_read;
		out->h.ctx = out;
		out->h.max_bytes = SBCL_MAX_BYTES;
		err = 0;
		for (int k = 0; k < V_REQUIRED && !err; k++)
			err = rd_word(&out->h, f->var[k] + bias, &v[k]);
		if (err) {
			err = -EAGAIN;
			break;
		}
		out->gc_var = f->var[V_N_GCS] ? f->var[V_N_GCS] + bias : 0;
		/* Dynamic space: all three, or its code is not named. */
		for (int k = V_REQUIRED; k < V_N_GCS; k++)
			if (!f->var[k] || rd_word(&out->h, f->var[k] + bias, &v[k]))
				v[V_PAGE_TABLE] = 0;
		if (v[V_PAGE_TABLE] && !(v[V_DYN_START] & (SBCL_PAGE_BYTES - 1)) &&
		    v[V_DYN_SIZE] <= SBCL_MAX_DYN_SPACE) {
			out->h.dyn_start = v[V_DYN_START];
			out->h.dyn_size = v[V_DYN_SIZE];
			out->h.page_table = v[V_PAGE_TABLE];
		}
		out->h.text_start = v[V_TEXT_START];
		out->h.text_end = v[V_TEXT_HWM];
		out->h.tlsf_start = v[V_TLSF_START];
		out->h.sso = v[V_TLSF_SSO];
		out->h.package_vector = v[V_PACKAGES];
		out->packages_var = f->var[V_PACKAGES] + bias;
		out->hwm_var = f->var[V_TEXT_HWM] + bias;
		if (out->h.text_end <= out->h.text_start) {
			snprintf(why, why_len, "SBCL %s: its text space is not set up", f->version);
			err = -EAGAIN;
		}
	}
	pmaps__put(pm);
	return err;
}

struct sbcl_name {
	uint64_t code, id[3]; /* the code object and its identity (code_id) */
	char name[];
};

/*
 * A code object's identity: its header's widetag and size (not the GC's
 * bits between them), its boxed-size word, and the first word of its
 * instructions, whose high 32 bits are its serial number (globally unique:
 * code compiled later at the same place, or moved there by a GC, has
 * another). 0 or -errno.
 */
static int code_id(struct sbcl_heap *h, uint64_t code, uint64_t id[3])
{
	uint8_t b[2 * WORD];
	uint64_t boxed;
	int err;

	if ((err = rd(h, code, b, sizeof(b))))
		return err;
	id[0] = rd64(b, false) & 0xffffffff000000ffull;
	id[1] = rd64(b + WORD, false);
	boxed = id[1] & 0xffffffffu;
	if (!boxed || boxed > SBCL_MAX_CODE || (id[0] >> 32) * WORD <= boxed)
		return -EINVAL;
	return rd_word(h, code + boxed, &id[2]);
}

void sbcl__new_drain(struct sbcl_proc *sp)
{
	uint8_t b[4];
	uint32_t n;

	sp->serial_floor = sp->max_serial;
	sp->gc_window = 0;
	sp->h.bytes_read = 0;
	if (!sp->gc_var || rd(&sp->h, sp->gc_var, b, sizeof(b))) {
		sp->gcs_known = false; /* gone, or not exported: nothing to compare with */
		return;
	}
	n = rd32(b, false);
	if (sp->gcs_known)
		sp->gc_window = n - sp->gcs;
	sp->gcs = n;
	sp->gcs_known = true;
}

/* Code at pc may have moved there, or been made where freed code was, at a GC. */
static bool movable(const struct sbcl_heap *h, uint64_t pc)
{
	return in_dyn(h, pc) || (pc >= h->tlsf_start && pc < h->text_end);
}

const char *sbcl__name(struct sbcl_proc *sp, uint64_t pc)
{
	uint64_t hwm;
	struct htab_entry *e;
	struct sbcl_name *n;
	uint64_t id[3];
	char buf[SBCL_NAME_MAX];
	uint64_t code;
	bool created;
	int len;

	if (!sp->names && !(sp->names = htab__new()))
		return NULL;
	sp->h.bytes_read = 0; /* SBCL_MAX_BYTES: per name */
	e = htab__find(sp->names, &pc, sizeof(pc));
	n = e ? e->value : NULL;
	if (n) {
		int err = code_id(&sp->h, n->code, id);

		/* Checked again; or the process is gone (the last drain of a
		 * command that exited): its code cannot change any more, and
		 * the name holds as of its last check (sbcl.h). */
		if (!err && !memcmp(id, n->id, sizeof(id))) {
			if ((uint32_t)(id[2] >> 32) > sp->max_serial)
				sp->max_serial = (uint32_t)(id[2] >> 32);
			return n->name;
		}
		if (err == -ESRCH)
			return n->name;
	}
	/* The vector of packages as it is now (read at the probe: moved since). */
	if (sp->packages_var)
		rd_word(&sp->h, sp->packages_var, &sp->h.package_vector);
	/* Text space grown since (it only grows): its new end. */
	if (pc >= sp->h.text_end && sp->hwm_var && !rd_word(&sp->h, sp->hwm_var, &hwm) &&
	    hwm > sp->h.text_end)
		sp->h.text_end = hwm;
	if (sbcl__find_code(&sp->h, pc, &code) ||
	    (len = code_name(&sp->h, code, pc, buf, sizeof(buf))) < 0 || code_id(&sp->h, code, id))
		return NULL;
	/* A GC since the last drain: two may have moved old code to pc's place
	 * too; after one, only code made since (a higher serial number) can
	 * have taken the place of what was sampled. */
	if (sp->gc_window && movable(&sp->h, pc) &&
	    (sp->gc_window > 1 || (uint32_t)(id[2] >> 32) > sp->serial_floor)) {
		sp->gc_dropped++;
		return NULL;
	}
	if ((uint32_t)(id[2] >> 32) > sp->max_serial)
		sp->max_serial = (uint32_t)(id[2] >> 32);
	if (n) {
		/* Replaced: the old name may still be in use until the process goes. */
		if (array_grow((void **)&sp->retired, &sp->cap_retired, sp->nr_retired + 1,
			       sizeof(*sp->retired)))
			return NULL;
		sp->retired[sp->nr_retired++] = n;
		e->value = NULL;
	}
	if (sp->nr_names + sp->nr_retired >= SBCL_MAX_NAMES ||
	    sp->name_bytes + sizeof(*n) + (size_t)len + 1 > SBCL_MAX_NAME_BYTES)
		return NULL;
	n = malloc(sizeof(*n) + (size_t)len + 1);
	if (!n)
		return NULL;
	n->code = code;
	memcpy(n->id, id, sizeof(id));
	memcpy(n->name, buf, (size_t)len + 1);
	e = htab__upsert(sp->names, &pc, sizeof(pc), &created);
	if (!e) {
		free(n);
		return NULL;
	}
	if (created)
		sp->nr_names++;
	e->value = n;
	sp->name_bytes += sizeof(*n) + (size_t)len + 1;
	return n->name;
}

void sbcl__proc_free(struct sbcl_proc *sp)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!sp)
		return;
	while (sp->names && (e = htab__next(sp->names, &pos)))
		free(e->value);
	htab__free(sp->names);
	for (size_t i = 0; i < sp->nr_retired; i++)
		free(sp->retired[i]);
	free(sp->retired);
	sbcl__release(&sp->h);
	memset(sp, 0, sizeof(*sp));
}

int sbcl__read_code(struct sbcl_heap *h, uint64_t addr, void *buf, size_t len)
{
	if (len > SBCL_MAX_CODE)
		return -E2BIG;
	return h->read(h->ctx, addr, buf, len);
}

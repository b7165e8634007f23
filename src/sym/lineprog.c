// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * lineprog.c - DWARF line-number programs decoded as they are read; see
 * lineprog.h. The header layout and the opcodes are DWARF 5's section 6.2
 * (versions 2 to 4 differ only in the header's directory and file tables).
 */
#include "sym/lineprog.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* dwarf.h's names, kept here: the values are the format's. */
enum {
	LNS_copy = 1,
	LNS_advance_pc,
	LNS_advance_line,
	LNS_set_file,
	LNS_set_column,
	LNS_negate_stmt,
	LNS_set_basic_block,
	LNS_const_add_pc,
	LNS_fixed_advance_pc,
	LNS_set_prologue_end,
	LNS_set_epilogue_begin,
	LNS_set_isa,
	LNE_end_sequence = 1,
	LNE_set_address,
	LNE_define_file,
	LNCT_path = 1,
	LNCT_directory_index,
	FORM_block2 = 0x03,
	FORM_block4 = 0x04,
	FORM_data2 = 0x05,
	FORM_data4 = 0x06,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_block = 0x09,
	FORM_block1 = 0x0a,
	FORM_data1 = 0x0b,
	FORM_sdata = 0x0d,
	FORM_strp = 0x0e,
	FORM_udata = 0x0f,
	FORM_strx = 0x1a,
	FORM_data16 = 0x1e,
	FORM_line_strp = 0x1f,
	FORM_strx1 = 0x25,
	FORM_strx2,
	FORM_strx3,
	FORM_strx4,
};

struct name {
	const char *s; /* NUL-terminated, in a section; NULL: unreadable */
	uint64_t dir;
};

struct lineprog {
	unsigned version, offset_size;
	unsigned min_insn_len, max_ops, line_range, opcode_base;
	int line_base;
	const uint8_t *std_lens; /* opcode_base - 1 operand counts */
	/* What each special opcode adds to the operation advance and to the line. */
	uint8_t spec_adv[256];
	int16_t spec_line[256];
	const uint8_t *prog, *end;
	const char **dirs;
	size_t nr_dirs, cap_dirs;
	struct name *files;
	size_t nr_files, cap_files;
	char *comp_dir;
};

/* A bounded reader: a read past the end sets bad and gives 0. */
struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd(struct cur *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static void skip(struct cur *c, uint64_t n)
{
	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return;
	}
	c->p += n;
}

/* A LEB128 number, signed or not: 0, and c->bad, when the bytes end first. */
static uint64_t leb128(struct cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (is_signed && shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

static uint64_t uleb(struct cur *c)
{
	return leb128(c, false);
}

static uint64_t sleb(struct cur *c)
{
	return leb128(c, true);
}

/* An inline string: its bytes up to the NUL (skipped), NULL if longer than a name may be. */
static const char *cstr(struct cur *c)
{
	const uint8_t *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
	const char *s = (const char *)c->p;

	if (!nul) {
		c->bad = true;
		c->p = c->end;
		return NULL;
	}
	c->p = nul + 1;
	return nul - (const uint8_t *)s < LINEPROG_MAX_NAME ? s : NULL;
}

/* A string at off of a string section, NULL unless it ends within LINEPROG_MAX_NAME bytes. */
static const char *sec_str(const uint8_t *sec, size_t size, uint64_t off)
{
	size_t n;

	if (!sec || off >= size)
		return NULL;
	n = size - (size_t)off;
	if (n > LINEPROG_MAX_NAME)
		n = LINEPROG_MAX_NAME;
	return memchr(sec + off, 0, n) ? (const char *)sec + off : NULL;
}

/* One attribute of an entry (DWARF 5): a string form sets *str, others *num. false: unknown form.
 */
static bool read_form(struct cur *c, const struct lineprog_sections *s, unsigned offset_size,
		      uint64_t form, const char **str, uint64_t *num)
{
	*str = NULL;
	*num = 0;
	switch (form) {
	case FORM_string:
		*str = cstr(c);
		return true;
	case FORM_line_strp:
		*str = sec_str(s->line_str, s->line_str_size, rd(c, offset_size));
		return true;
	case FORM_strp:
		*str = sec_str(s->str, s->str_size, rd(c, offset_size));
		return true;
	case FORM_strx: /* needs .debug_str_offsets: a name not read */
	case FORM_udata:
		*num = uleb(c);
		return true;
	case FORM_sdata:
		*num = sleb(c);
		return true;
	case FORM_data1:
	case FORM_strx1:
		*num = rd(c, 1);
		return true;
	case FORM_data2:
	case FORM_strx2:
		*num = rd(c, 2);
		return true;
	case FORM_strx3:
		*num = rd(c, 3);
		return true;
	case FORM_data4:
	case FORM_strx4:
		*num = rd(c, 4);
		return true;
	case FORM_data8:
		*num = rd(c, 8);
		return true;
	case FORM_data16:
		skip(c, 16);
		return true;
	case FORM_block:
		skip(c, uleb(c));
		return true;
	case FORM_block1:
		skip(c, rd(c, 1));
		return true;
	case FORM_block2:
		skip(c, rd(c, 2));
		return true;
	case FORM_block4:
		skip(c, rd(c, 4));
		return true;
	default:
		return false;
	}
}

static int add_dir(struct lineprog *lp, const char *s)
{
	if (lp->nr_dirs >= LINEPROG_MAX_FILES)
		return 0;
	if (array_grow((void **)&lp->dirs, &lp->cap_dirs, lp->nr_dirs + 1, sizeof(*lp->dirs)))
		return -ENOMEM;
	lp->dirs[lp->nr_dirs++] = s;
	return 0;
}

static int add_file(struct lineprog *lp, const char *s, uint64_t dir)
{
	if (lp->nr_files >= LINEPROG_MAX_FILES)
		return 0;
	if (array_grow((void **)&lp->files, &lp->cap_files, lp->nr_files + 1, sizeof(*lp->files)))
		return -ENOMEM;
	lp->files[lp->nr_files++] = (struct name){ s, dir };
	return 0;
}

/* DWARF 5's directory or file table: entry formats, then the entries. */
static int read_table_v5(struct lineprog *lp, struct cur *c, const struct lineprog_sections *s,
			 bool files)
{
	uint64_t fmt[255][2], count;
	unsigned nfmt = (unsigned)rd(c, 1);
	int err = 0;

	for (unsigned i = 0; i < nfmt; i++) {
		fmt[i][0] = uleb(c);
		fmt[i][1] = uleb(c);
	}
	count = uleb(c);
	for (uint64_t n = 0; n < count && !c->bad && !err; n++) {
		const uint8_t *before = c->p;
		const char *path = NULL;
		uint64_t dir = 0;

		for (unsigned i = 0; i < nfmt; i++) {
			const char *str;
			uint64_t num;

			if (!read_form(c, s, lp->offset_size, fmt[i][1], &str, &num))
				return -EINVAL;
			if (fmt[i][0] == LNCT_path)
				path = str;
			else if (fmt[i][0] == LNCT_directory_index)
				dir = num;
		}
		err = files ? add_file(lp, path, dir) : add_dir(lp, path);
		/* Entries of no bytes are all alike: the rest say nothing more. */
		if (c->p == before)
			break;
	}
	return c->bad ? -EINVAL : err;
}

int lineprog__open(const struct lineprog_sections *s, uint64_t off, const char *comp_dir,
		   struct lineprog **out)
{
	struct cur c = { s->line, s->line + s->line_size, false };
	struct lineprog *lp;
	uint64_t len, hlen;
	const uint8_t *unit_end, *hdr_end;
	int err = -EINVAL;

	*out = NULL;
	if (!s->line || off >= s->line_size)
		return -EINVAL;
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	if (comp_dir && *comp_dir && !(lp->comp_dir = strdup(comp_dir))) {
		free(lp);
		return -ENOMEM;
	}
	c.p += off;
	len = rd(&c, 4);
	lp->offset_size = 4;
	if (len == 0xffffffff) {
		len = rd(&c, 8);
		lp->offset_size = 8;
	} else if (len >= 0xfffffff0) {
		goto fail;
	}
	if (c.bad || len > (uint64_t)(c.end - c.p))
		goto fail;
	unit_end = c.p + len;
	c.end = unit_end;
	lp->version = (unsigned)rd(&c, 2);
	if (lp->version < 2 || lp->version > 5)
		goto fail;
	if (lp->version >= 5)
		skip(&c, 2); /* address_size, segment_selector_size: set_address says its size */
	hlen = rd(&c, lp->offset_size);
	if (c.bad || hlen > (uint64_t)(unit_end - c.p))
		goto fail;
	hdr_end = c.p + hlen;
	c.end = hdr_end;
	lp->min_insn_len = (unsigned)rd(&c, 1);
	lp->max_ops = lp->version >= 4 ? (unsigned)rd(&c, 1) : 1;
	if (!lp->max_ops)
		lp->max_ops = 1;
	skip(&c, 1); /* default_is_stmt: every row is handed out */
	lp->line_base = (int8_t)rd(&c, 1);
	lp->line_range = (unsigned)rd(&c, 1);
	lp->opcode_base = (unsigned)rd(&c, 1);
	if (c.bad || !lp->line_range || !lp->opcode_base)
		goto fail;
	lp->std_lens = c.p;
	skip(&c, lp->opcode_base - 1);
	if (c.bad)
		goto fail;
	for (unsigned op = lp->opcode_base; op < 256; op++) {
		lp->spec_adv[op] = (uint8_t)((op - lp->opcode_base) / lp->line_range);
		lp->spec_line[op] =
			(int16_t)(lp->line_base + (int)((op - lp->opcode_base) % lp->line_range));
	}
	if (lp->version >= 5) {
		err = read_table_v5(lp, &c, s, false);
		if (!err)
			err = read_table_v5(lp, &c, s, true);
		if (err)
			goto fail;
	} else {
		/* Include directories, then files, each list ended by an empty name. */
		while (!c.bad && c.p < c.end && *c.p) {
			err = add_dir(lp, cstr(&c));
			if (err)
				goto fail;
		}
		skip(&c, 1);
		while (!c.bad && c.p < c.end && *c.p) {
			const char *name = cstr(&c);
			uint64_t dir = uleb(&c);

			uleb(&c); /* mtime */
			uleb(&c); /* length */
			err = add_file(lp, name, dir);
			if (err)
				goto fail;
		}
		err = -EINVAL;
		if (c.bad)
			goto fail;
	}
	lp->prog = hdr_end;
	lp->end = unit_end;
	*out = lp;
	return 0;
fail:
	lineprog__free(lp);
	return err;
}

void lineprog__free(struct lineprog *lp)
{
	if (!lp)
		return;
	free(lp->dirs);
	free(lp->files);
	free(lp->comp_dir);
	free(lp);
}

size_t lineprog__nr_files(const struct lineprog *lp)
{
	return lp->nr_files;
}

const char *lineprog__file(const struct lineprog *lp, uint32_t file, char *buf, size_t size)
{
	const struct name *f;
	const char *dir = NULL;
	int n;

	if (lp->version < 5) {
		if (!file)
			return NULL;
		file--;
	}
	if (file >= lp->nr_files || !(f = &lp->files[file])->s || !*f->s)
		return NULL;
	if (f->s[0] != '/') {
		if (lp->version < 5)
			dir = !f->dir			 ? lp->comp_dir
			      : f->dir - 1 < lp->nr_dirs ? lp->dirs[f->dir - 1]
							 : NULL;
		else
			dir = f->dir < lp->nr_dirs ? lp->dirs[f->dir] : NULL;
	}
	if (dir && !*dir)
		dir = NULL;
	if (dir && dir[0] != '/' && lp->comp_dir && dir != lp->comp_dir)
		n = snprintf(buf, size, "%s/%s/%s", lp->comp_dir, dir, f->s);
	else if (dir)
		n = snprintf(buf, size, "%s/%s", dir, f->s);
	else
		n = snprintf(buf, size, "%s", f->s);
	return n < 0 || (size_t)n >= size ? NULL : buf;
}

/* --- running the program ----------------------------------------------------------- */

struct held {
	struct lineprog_row r;
	bool valid;
};

struct run {
	uint64_t lo, hi;
	int (*emit)(void *ctx, const struct lineprog_row *row);
	void *ctx;
	struct held below;   /* the sequence's last row under lo */
	struct held pending; /* its last row in range, until one at another address comes */
};

static int flush(struct run *r, struct held *h)
{
	if (!h->valid)
		return 0;
	h->valid = false;
	return r->emit(r->ctx, &h->r);
}

/* A row of the state machine (eos: the end of its sequence). */
static int row(struct run *r, uint64_t addr, uint64_t file, uint64_t line, bool eos)
{
	struct lineprog_row x = {
		.addr = addr,
		.file = file > UINT32_MAX ? UINT32_MAX : (uint32_t)file,
		.line = line > UINT32_MAX ? 0 : (uint32_t)line,
	};
	int err;

	if (eos || addr >= r->hi || addr < r->lo) {
		err = flush(r, &r->pending);
		/* The row under lo covers lo when the next one starts above it. */
		if (!err && r->below.valid && addr > r->lo)
			err = flush(r, &r->below);
		if (eos || addr >= r->lo)
			r->below.valid = false;
		else
			r->below = (struct held){ x, true };
		return err;
	}
	err = 0;
	if (r->below.valid && addr > r->lo)
		err = flush(r, &r->below);
	r->below.valid = false;
	if (r->pending.valid && r->pending.r.addr == addr) {
		r->pending.r = x; /* the earlier row covers no bytes */
		return err;
	}
	if (!err)
		err = flush(r, &r->pending);
	r->pending = (struct held){ x, true };
	return err;
}

int lineprog__run(struct lineprog *lp, uint64_t lo, uint64_t hi, uint64_t *budget,
		  int (*emit)(void *ctx, const struct lineprog_row *row), void *ctx)
{
	struct cur c = { lp->prog, lp->end, false };
	struct run r = { .lo = lo, .hi = hi, .emit = emit, .ctx = ctx };
	uint64_t addr = 0, op_index = 0, file = 1, line = 1;
	int err = 0;

	/* VLIW's op_index only where there are several operations an instruction. */
#define ADVANCE(n)                                                                                 \
	do {                                                                                       \
		uint64_t adv_ = (n);                                                               \
		if (lp->max_ops == 1) {                                                            \
			addr += lp->min_insn_len * adv_;                                           \
		} else {                                                                           \
			addr += lp->min_insn_len * ((op_index + adv_) / lp->max_ops);              \
			op_index = (op_index + adv_) % lp->max_ops;                                \
		}                                                                                  \
	} while (0)
#define RESET() (addr = 0, op_index = 0, file = 1, line = 1)

	while (!err && c.p < c.end) {
		uint8_t op;

		if (!*budget) {
			err = -ETIME;
			break;
		}
		(*budget)--;
		op = *c.p++;
		if (op >= lp->opcode_base) {
			ADVANCE(lp->spec_adv[op]);
			line += (uint64_t)(int64_t)lp->spec_line[op];
			err = row(&r, addr, file, line, false);
			continue;
		}
		switch (op) {
		case 0: {
			uint64_t len = uleb(&c);
			const uint8_t *next;
			struct cur sub;

			if (c.bad || len > (uint64_t)(c.end - c.p)) {
				c.p = c.end;
				break;
			}
			next = c.p + len;
			sub = (struct cur){ c.p, next, false };
			c.p = next;
			if (!len)
				break;
			switch (rd(&sub, 1)) {
			case LNE_end_sequence:
				err = row(&r, addr, file, line, true);
				RESET();
				break;
			case LNE_set_address:
				if (len >= 2 && len <= 9) {
					addr = rd(&sub, (size_t)len - 1);
					op_index = 0;
				}
				break;
			case LNE_define_file:
				if (lp->version < 5) {
					const char *name = cstr(&sub);
					uint64_t dir = uleb(&sub);

					if (!sub.bad)
						err = add_file(lp, name, dir);
				}
				break;
			default:
				break; /* set_discriminator, vendors': skipped by their length */
			}
			break;
		}
		case LNS_copy:
			err = row(&r, addr, file, line, false);
			break;
		case LNS_advance_pc:
			ADVANCE(uleb(&c));
			break;
		case LNS_advance_line:
			line += sleb(&c);
			break;
		case LNS_set_file:
			file = uleb(&c);
			break;
		case LNS_set_column:
		case LNS_set_isa:
			uleb(&c);
			break;
		case LNS_const_add_pc:
			ADVANCE((255u - lp->opcode_base) / lp->line_range);
			break;
		case LNS_fixed_advance_pc:
			addr += rd(&c, 2);
			op_index = 0;
			break;
		case LNS_negate_stmt:
		case LNS_set_basic_block:
		case LNS_set_prologue_end:
		case LNS_set_epilogue_begin:
			break;
		default:
			/* An opcode this does not know: its operands are ULEB128s, the header says
			 * how many. */
			for (unsigned i = 0; i < lp->std_lens[op - 1]; i++)
				uleb(&c);
			break;
		}
	}
#undef ADVANCE
#undef RESET
	/* A program cut short: its last row in range stands. */
	if (!err || err == -ETIME) {
		int e = flush(&r, &r.pending);

		if (e)
			err = e;
	}
	return err;
}

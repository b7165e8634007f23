// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * table.c - unwind tables from .eh_frame / .debug_frame via libdw; see
 * table.h for the format and unwind_abi.h for what each row kind means.
 *
 * libdw interprets the CFI programs (dwarf_cfi_addrframe executes the CIE's
 * and FDE's instructions up to a pc, dwarf_frame_info says how far that
 * state holds). The one thing libdw does not offer is a list of the FDEs
 * and their ranges: dwarf_next_cfi() walks the entries but leaves an FDE's
 * initial location encoded per its CIE's 'R' augmentation, so that one
 * field is decoded here (absolute or pc-relative, the two encodings
 * toolchains emit for it). .debug_frame FDEs only fill ranges .eh_frame
 * leaves uncovered.
 *
 * libdw never reads the file itself: it gets a private ELF image holding a
 * copy of one CFI section, from which every FDE the builder rejected has been
 * made invalid (see "libdw's image" below), so it can only run screened CFI.
 */
#include "unwind/table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/budget.h"
#include "base/bytes.h"
#include "base/util.h"
#include "proc/cfienc.h"
#include "proc/elffile.h"

#include "lang/gopclntab.h"

#define PAGE_SIZE_U    (1u << UNWIND_PAGE_SHIFT)
#define MAX_ENTRIES    (8u << 20) /* CIEs + FDEs read from one section */
#define UTABLE_PAD_GAP 31	  /* bytes between FDEs taken for padding */
#define X86_64_RSP     7
#define X86_64_RBP     6
#define X86_64_RA      16

/* Where an FDE's rows come from; at one address the lower wins. */
enum { SRC_EH = 0, SRC_GO = 1, SRC_DEBUG = 2 };

/* A Go pc-line table read for its pcsp tables: at most this large. */
#define GO_MAX_TABLE (256u << 20)

struct cie_info {
	uint64_t off;
	uint8_t enc; /* FDE pointer encoding, DW_EH_PE_* */
	bool ok;
	bool aug_z; /* FDEs carry self-sized augmentation data */
};

struct fde_info {
	uint64_t begin, end;
	uint8_t src;
	uint32_t go_func; /* SRC_GO: the function's index in the pc-line table */
	uint32_t insns;	  /* bytes of CFI instructions (capped): what one row may run */
};

struct build {
	Elf *elf;
	unsigned char ident[EI_NIDENT];
	struct utable *t;
	struct cie_info *cies;
	size_t nr_cies, cap_cies;
	struct fde_info *fdes;
	size_t nr_fdes, cap_fdes;
	size_t cap_rows;
	bool full; /* UTABLE_MAX_ROWS reached */
	struct gopclntab *go;
	struct budget budget; /* UTABLE_CPU_BUDGET_NS for the whole build */
};

/*
 * Budget units (budget.h: ~50 ns each) for running n bytes of CFI
 * instructions: libdw runs an FDE's from its start for every row it is asked
 * for, ~3 ns a byte on this VM, and the builder's screening ~1 ns a byte.
 */
#define UNITS_PER_ROW_BYTE  16
#define UNITS_PER_SCAN_BYTE 64

/* --- drop_fde --------------------------------------------------------------- */

/* --- CFI instruction screening ------------------------------------------------- */

/*
 * libdw sizes a frame's register-rule array by the largest register number an
 * instruction names, up to 2^28 - gigabytes, zeroed, for a crafted file (the
 * fuzzer found it: a 1.2 GB allocation from one FDE). Real code names fewer
 * than 128 DWARF registers on every architecture bpfprof walks, so an entry
 * whose instructions name a larger one (or that we cannot scan: DW_CFA_set_loc,
 * vendor opcodes, truncation) is skipped before libdw runs it; its range then
 * falls back to frame pointers.
 */
#define CFI_MAX_REG 128

static bool uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	for (int shift = 0; p < end && shift < 64; shift += 7) {
		uint8_t b = *p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*out = v;
			return true;
		}
	}
	return false;
}

static bool reg_ok(const uint8_t **pp, const uint8_t *end)
{
	uint64_t r;

	return uleb(pp, end, &r) && r < CFI_MAX_REG;
}

static bool skip_bytes(const uint8_t **pp, const uint8_t *end, uint64_t n)
{
	if ((uint64_t)(end - *pp) < n)
		return false;
	*pp += n;
	return true;
}

static bool skip_block(const uint8_t **pp, const uint8_t *end)
{
	uint64_t n;

	return uleb(pp, end, &n) && skip_bytes(pp, end, n);
}

static bool cfi_insns_sane(const uint8_t *p, const uint8_t *end)
{
	uint64_t v;

	if (!p || !end || end < p)
		return false;
	while (p < end) {
		uint8_t op = *p++;
		bool ok = true;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
		case 3: /* DW_CFA_restore: register in the low 6 bits */
			continue;
		case 2: /* DW_CFA_offset */
			ok = uleb(&p, end, &v);
			break;
		default:
			switch (op) {
			case 0x00: /* nop */
			case 0x0a: /* remember_state */
			case 0x0b: /* restore_state */
				break;
			case 0x02:
				ok = skip_bytes(&p, end, 1);
				break; /* advance_loc1 */
			case 0x03:
				ok = skip_bytes(&p, end, 2);
				break; /* advance_loc2 */
			case 0x04:
				ok = skip_bytes(&p, end, 4);
				break; /* advance_loc4 */
			case 0x05:     /* offset_extended */
			case 0x09:     /* register: reg, reg */
			case 0x0c:     /* def_cfa */
			case 0x11:     /* offset_extended_sf */
			case 0x12:     /* def_cfa_sf */
			case 0x14:     /* val_offset */
			case 0x15:     /* val_offset_sf */
			case 0x2f:     /* GNU_negative_offset_extended */
				ok = reg_ok(&p, end) &&
				     (op == 0x09 ? reg_ok(&p, end) : uleb(&p, end, &v));
				break;
			case 0x06: /* restore_extended */
			case 0x07: /* undefined */
			case 0x08: /* same_value */
			case 0x0d: /* def_cfa_register */
				ok = reg_ok(&p, end);
				break;
			case 0x0e: /* def_cfa_offset */
			case 0x13: /* def_cfa_offset_sf */
			case 0x2e: /* GNU_args_size */
				ok = uleb(&p, end, &v);
				break;
			case 0x0f: /* def_cfa_expression */
				ok = skip_block(&p, end);
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				ok = reg_ok(&p, end) && skip_block(&p, end);
				break;
			default: /* set_loc (operand size unknown here), vendor opcodes */
				return false;
			}
		}
		if (!ok)
			return false;
	}
	return true;
}

/* --- FDE enumeration ------------------------------------------------------- */

static const struct cie_info *find_cie(const struct build *b, uint64_t off)
{
	size_t lo = 0, hi = b->nr_cies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cies[mid].off == off)
			return &b->cies[mid];
		if (b->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool in_exec_segment(const struct utable *t, uint64_t begin, uint64_t end)
{
	for (size_t i = 0; i < t->nr_segs; i++) {
		const struct utable_seg *s = &t->segs[i];

		if (s->exec && begin >= s->vaddr && end <= s->vaddr + s->memsz)
			return true;
	}
	return false;
}

static int add_fde(struct build *b, uint64_t begin, uint64_t end, uint8_t src, size_t insns)
{
	if (array_grow((void **)&b->fdes, &b->cap_fdes, b->nr_fdes + 1, sizeof(*b->fdes)))
		return -ENOMEM;
	b->fdes[b->nr_fdes++] =
		(struct fde_info){ .begin = begin,
				   .end = end,
				   .src = src,
				   .insns = (uint32_t)MIN(insns, (size_t)UINT32_MAX) };
	return 0;
}

/* Forgets the FDEs taken from one source (its CFI did not open in libdw). */
static void drop_src(struct build *b, uint8_t src)
{
	size_t n = 0;

	for (size_t i = 0; i < b->nr_fdes; i++)
		if (b->fdes[i].src != src)
			b->fdes[n++] = b->fdes[i];
	b->nr_fdes = n;
}

/*
 * Makes the FDE at off invalid in libdw's copy of its section: the CIE
 * pointer becomes a CIE id, and the "CIE" then has version 0, which
 * dwarf_next_cfi refuses. The entry's length is kept, so the walk over the
 * section is unchanged. dwarf_next_cfi has already checked that the entry
 * holds a byte past the pointer.
 */
static void drop_fde(Elf_Data *data, uint64_t off, bool eh)
{
	uint8_t *p = (uint8_t *)data->d_buf + off;
	size_t id_size = 4;

	if (rd_le(p, 4) == 0xffffffffu) {
		id_size = 8;
		p += 8;
	}
	p += 4;
	memset(p, eh ? 0x00 : 0xff, id_size);
	p[id_size] = 0;
}

/*
 * Reads every entry of one CFI section: CIEs first (their offsets and FDE
 * encodings), then the FDEs' ranges. sec_addr is the section's vaddr, for
 * pc-relative initial locations. data is libdw's copy: each FDE not taken is
 * dropped from it, and *used says how much of it the walk reached.
 */
static int collect_fdes(struct build *b, Elf_Data *data, bool eh, uint64_t sec_addr, uint8_t src,
			size_t *used)
{
	Dwarf_CFI_Entry ent;
	Dwarf_Off off;
	int err;

	*used = data->d_size;
	for (int pass = 0; pass < 2; pass++) {
		size_t n = 0;

		off = 0;
		while (off != (Dwarf_Off)-1) {
			Dwarf_Off next = (Dwarf_Off)-1;
			int r;

			if (n++ >= MAX_ENTRIES) {
				*used = off;
				break;
			}
			if (budget__over(&b->budget))
				return budget__err(&b->budget);
			r = dwarf_next_cfi(b->ident, data, eh, off, &next, &ent);
			if (r > 0)
				break;
			if (r < 0) {
				if (pass == 1)
					b->t->st.fdes_bad++;
				if (next == (Dwarf_Off)-1 || next <= off) {
					*used = off; /* cannot resync */
					break;
				}
				off = next;
				continue;
			}
			if (next <= off) {
				*used = off;
				break;
			}
			/* Each entry's instructions are screened: linear in its size. */
			if (budget__spend(&b->budget, (next - off) / UNITS_PER_SCAN_BYTE))
				return budget__err(&b->budget);
			if (dwarf_cfi_cie_p(&ent)) {
				if (pass == 0) {
					struct cie_info *nc;

					if (array_grow((void **)&b->cies, &b->cap_cies,
						       b->nr_cies + 1, sizeof(*b->cies)))
						return -ENOMEM;
					nc = b->cies;
					nc[b->nr_cies].off = off;
					nc[b->nr_cies].ok =
						cfienc__cie_fde_encoding(&ent.cie,
									 &nc[b->nr_cies].enc) &&
						cfi_insns_sane(ent.cie.initial_instructions,
							       ent.cie.initial_instructions_end);
					nc[b->nr_cies].aug_z = ent.cie.augmentation &&
							       ent.cie.augmentation[0] == 'z';
					b->nr_cies++;
				}
			} else if (pass == 1) {
				const struct cie_info *ci = find_cie(b, ent.fde.CIE_pointer);
				const uint8_t *p = ent.fde.start;
				uint64_t begin, range;
				uint64_t faddr =
					sec_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);

				if (!ci || !ci->ok ||
				    cfienc__read(ci->enc, &p, ent.fde.end, true, faddr, &begin) ||
				    cfienc__read(ci->enc & 0x0f, &p, ent.fde.end, false, 0,
						 &range) ||
				    (ci->aug_z && !skip_block(&p, ent.fde.end)) ||
				    !cfi_insns_sane(p, ent.fde.end) || range == 0 ||
				    range > UTABLE_MAX_SPAN || begin + range < begin ||
				    !in_exec_segment(b->t, begin, begin + range)) {
					b->t->st.fdes_skipped++;
					drop_fde(data, off, eh);
				} else {
					err = add_fde(b, begin, begin + range, src,
						      (size_t)(ent.fde.end - p));
					if (err)
						return err;
				}
			}
			off = next;
		}
	}
	b->nr_cies = 0; /* CIE offsets are per section (and increasing: find_cie bisects) */
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_info *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1; /* .eh_frame first */
	return x->end < y->end ? 1 : x->end > y->end ? -1 : 0;
}

/* Sorts FDEs and drops every one overlapping an earlier kept one. */
static void settle_fdes(struct build *b)
{
	size_t w = 0;
	uint64_t last_end = 0;

	if (b->nr_fdes)
		qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
	for (size_t i = 0; i < b->nr_fdes; i++) {
		if (w && b->fdes[i].begin < last_end) {
			b->t->st.fdes_skipped++;
			continue;
		}
		b->fdes[w++] = b->fdes[i];
		last_end = b->fdes[i].end;
	}
	b->nr_fdes = w;
	for (size_t i = 0; i < w; i++) {
		if (b->fdes[i].src == SRC_EH)
			b->t->st.fdes++;
		else if (b->fdes[i].src == SRC_GO)
			b->t->st.fdes_go++;
		else
			b->t->st.fdes_debug++;
	}
}

/* --- rule classification ----------------------------------------------------- */

static bool op_breg(const Dwarf_Op *op, int *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		if (op->number > 64)
			return false;
		*reg = (int)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* A register saved at CFA + off: libdw gives "call_frame_cfa [plus_uconst off]". */
static bool rule_at_cfa(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* A register saved at reg + off (DW_CFA_expression "bregN off"; libdw puts the
 * CFA push it implies in front). */
static bool rule_at_breg(const Dwarf_Op *ops, size_t n, int want_reg, int64_t *off)
{
	int reg;

	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		n--;
	}
	return n == 1 && op_breg(&ops[0], &reg, off) && reg == want_reg;
}

/* The PLT stub expression: rsp + A + ((rip & 15) >= K ? 8 : 0), written as
 * "breg7 A; breg16 0; lit15; and; litK; ge; lit3; shl; plus". */
static bool cfa_is_plt(const Dwarf_Op *ops, size_t n, int64_t *a, int *k)
{
	int reg;
	int64_t off;

	if (n != 9 || !op_breg(&ops[0], &reg, a) || reg != X86_64_RSP)
		return false;
	if (!op_breg(&ops[1], &reg, &off) || reg != X86_64_RA || off != 0)
		return false;
	if (ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and)
		return false;
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return false;
	*k = ops[4].atom - DW_OP_lit0;
	return ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 && ops[7].atom == DW_OP_shl &&
	       ops[8].atom == DW_OP_plus;
}

static struct bp_urow urow(uint8_t cfa_kind, uint8_t rbp_kind, int rbp, uint16_t cfa)
{
	struct bp_urow r = { .op = UROW_OP(cfa_kind, rbp_kind), .rbp = (int8_t)rbp, .cfa = cfa };

	return r;
}

static struct bp_urow unsupported(struct build *b)
{
	b->t->st.rows_unsupported++;
	return urow(UROW_CFA_UNSUPPORTED, UROW_RBP_SAME, 0, 0);
}

/* One libdw frame state -> one row (pc filled in by the caller). */
static struct bp_urow classify(struct build *b, Dwarf_Frame *fr, bool signal)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int reg, k = 0;
	int64_t off, a = 0, ra_off, rbp_off = 0;
	uint8_t kind, rbp_kind = UROW_RBP_SAME;

	/* Return address first: undefined marks the outermost frame. */
	if (dwarf_frame_register(fr, X86_64_RA, mem, &ops, &n))
		return unsupported(b);
	if (n == 0) {
		if (!ops)
			return unsupported(b); /* "same value": meaningless for the RA */
		b->t->st.rows_end++;
		return urow(UROW_CFA_END, UROW_RBP_SAME, 0, 0);
	}
	if (rule_at_cfa(ops, n, &ra_off)) {
		if (ra_off != -8 || signal)
			return unsupported(b);
	} else if (!(signal && rule_at_breg(ops, n, X86_64_RSP, &ra_off))) {
		return unsupported(b);
	}

	if (dwarf_frame_cfa(fr, &ops, &n) || n == 0)
		return unsupported(b);
	if (n == 1 && op_breg(&ops[0], &reg, &off)) {
		if ((reg != X86_64_RSP && reg != X86_64_RBP) || off < 0)
			return unsupported(b);
		kind = reg == X86_64_RSP ? UROW_CFA_RSP : UROW_CFA_RBP;
		a = off;
		if (off > UINT16_MAX) {
			/* A frame of 64 KiB or more (a big local array). */
			if (reg != X86_64_RSP || off % 8 || off / 8 > UINT16_MAX)
				return unsupported(b);
			kind = UROW_CFA_RSP_X8;
			a = off / 8;
		}
		if ((uint64_t)off > b->t->st.max_cfa)
			b->t->st.max_cfa = (uint32_t)MIN(off, (int64_t)UINT32_MAX);
	} else if (cfa_is_plt(ops, n, &a, &k)) {
		if (a < 0 || a > UINT16_MAX)
			return unsupported(b);
		b->t->st.rows_plt++;
		return urow(UROW_CFA_PLT, UROW_RBP_SAME, k, (uint16_t)a);
	} else if (n == 2 && op_breg(&ops[0], &reg, &off) && ops[1].atom == DW_OP_deref) {
		if (reg == X86_64_RBP && !signal && off >= INT16_MIN && off <= INT16_MAX) {
			kind = UROW_CFA_DEREF_RBP;
			a = (int16_t)off;
		} else if (reg == X86_64_RSP && signal && off >= 40 && off <= UINT16_MAX &&
			   ra_off == off + 8) {
			/* rt_sigframe: the interrupted rsp, rip and rbp are in the
			 * ucontext's gregs, in glibc's REG_RBP/RSP/RIP order. */
			if (dwarf_frame_register(fr, X86_64_RBP, mem, &ops, &n) ||
			    !rule_at_breg(ops, n, X86_64_RSP, &rbp_off) || rbp_off != off - 40)
				return unsupported(b);
			b->t->st.rows_signal++;
			return urow(UROW_CFA_SIGNAL, UROW_RBP_SAME, 0, (uint16_t)off);
		} else {
			return unsupported(b);
		}
	} else {
		return unsupported(b);
	}
	if (signal)
		return unsupported(b);

	if (dwarf_frame_register(fr, X86_64_RBP, mem, &ops, &n))
		return unsupported(b);
	if (n == 0) {
		rbp_kind = UROW_RBP_SAME; /* same value, or undefined: keep what we have */
	} else if (rule_at_cfa(ops, n, &rbp_off)) {
		rbp_kind = UROW_RBP_CFA;
	} else if (kind == UROW_CFA_DEREF_RBP && rule_at_breg(ops, n, X86_64_RBP, &rbp_off)) {
		rbp_kind = UROW_RBP_DEREF;
	} else {
		return unsupported(b);
	}
	if (rbp_kind != UROW_RBP_SAME) {
		if (rbp_off % 8 || rbp_off / 8 < INT8_MIN || rbp_off / 8 > INT8_MAX)
			return unsupported(b);
		rbp_off /= 8;
	}
	return urow(kind, rbp_kind, (int)rbp_off, (uint16_t)a);
}

/* --- rows ------------------------------------------------------------------ */

static bool same_rule(const struct bp_urow *x, const struct bp_urow *y)
{
	return x->op == y->op && x->rbp == y->rbp && x->cfa == y->cfa;
}

/* Appends a row at vaddr; merges with an equal predecessor. */
static int emit(struct build *b, uint64_t vaddr, struct bp_urow r)
{
	struct utable *t = b->t;

	if (b->full)
		return 0;
	r.pc = (uint32_t)(vaddr - t->base);
	if (t->nr_rows) {
		struct bp_urow *last = &t->rows[t->nr_rows - 1];

		if (last->pc == r.pc) {
			*last = r; /* a zero-length row: the later rule wins */
			if (t->nr_rows >= 2 && same_rule(&t->rows[t->nr_rows - 2], last))
				t->nr_rows--;
			return 0;
		}
		if (same_rule(last, &r))
			return 0;
	}
	if (t->nr_rows >= UTABLE_MAX_ROWS) {
		b->full = true;
		return 0;
	}
	if (array_grow((void **)&t->rows, &b->cap_rows, t->nr_rows + 1, sizeof(*t->rows)))
		return -ENOMEM;
	t->rows[t->nr_rows++] = r;
	return 0;
}

/* Walks one FDE's range row by row. */
static int walk_fde(struct build *b, Dwarf_CFI *cfi, const struct fde_info *f)
{
	uint64_t pc = f->begin;
	unsigned rows = 0;
	int err;

	while (pc < f->end && !b->full) {
		Dwarf_Addr start, end;
		Dwarf_Frame *fr;
		bool signal = false;
		struct bp_urow r;

		/* libdw runs the FDE's instructions from its start for each row:
		 * a long FDE costs its length per row (the hostile case). */
		if (budget__spend(&b->budget, 1 + f->insns / UNITS_PER_ROW_BYTE))
			return budget__err(&b->budget);
		if (rows++ >= UTABLE_MAX_FDE_ROWS || dwarf_cfi_addrframe(cfi, pc, &fr)) {
			if (rows == 1)
				b->t->st.fdes_bad++;
			return emit(b, pc, unsupported(b));
		}
		if (dwarf_frame_info(fr, &start, &end, &signal) < 0 || end <= pc || start > pc) {
			free(fr);
			return emit(b, pc, unsupported(b));
		}
		r = classify(b, fr, signal);
		free(fr);
		err = emit(b, pc, r);
		if (err)
			return err;
		pc = end < f->end ? end : f->end;
	}
	return 0;
}

/* --- Go ------------------------------------------------------------------------ */

static Elf_Data *cfi_section(Elf *elf, const char *name, uint64_t *addr);
static uint64_t section_addr(Elf *elf, const char *name);

/*
 * Functions whose caller cannot be found from their frame: goroutine and
 * thread entry points, and the ones that switch stacks (to the system stack
 * g0, for more stack, into cgo). The runtime's own traceback stops there.
 */
static bool go_outermost(const char *name)
{
	static const char *const top[] = {
		"runtime.goexit",      "runtime.mstart",
		"runtime.rt0_go",      "runtime.morestack",
		"runtime.systemstack", "runtime.mcall",
		"runtime.asmcgocall",  "runtime.cgocallback",
		"runtime.gogo",	       "runtime.sigtramp",
		"runtime.sigreturn",   "runtime.sigreturn__sigaction",
		"runtime.cgoSigtramp", "runtime.systemstack_switch",
	};
	size_t len;

	if (!name)
		return false;
	/* Assembly functions carry an ABI suffix since Go 1.17. */
	len = strlen(name);
	if (len > 5 && !strcmp(name + len - 5, ".abi0"))
		len -= 5;
	for (size_t i = 0; i < ARRAY_SIZE(top); i++)
		if (strlen(top[i]) == len && !strncmp(name, top[i], len))
			return true;
	return false;
}

struct go_walk {
	struct build *b;
	int err;
};

/*
 * One run of a Go function's stack-pointer delta: the return address is
 * just above what the function pushed (CFA = rsp + delta + 8), and once it
 * has a frame, Go keeps the caller's rbp right below the return address.
 */
static int go_run(uint64_t start, uint64_t end, int32_t delta, void *ctx)
{
	struct go_walk *w = ctx;
	uint64_t cfa = (uint64_t)delta + 8;
	struct bp_urow r;

	(void)end;
	if (budget__over(&w->b->budget)) {
		w->err = budget__err(&w->b->budget);
		return w->err;
	}
	if (delta < 0 || delta % 8 || cfa > 8ull * UINT16_MAX)
		r = unsupported(w->b);
	else if (cfa <= UINT16_MAX)
		r = urow(UROW_CFA_RSP, delta ? UROW_RBP_CFA : UROW_RBP_SAME, delta ? -2 : 0,
			 (uint16_t)cfa);
	else
		r = urow(UROW_CFA_RSP_X8, UROW_RBP_CFA, -2, (uint16_t)(cfa / 8));
	w->err = emit(w->b, start, r);
	return w->err;
}

static int walk_go(struct build *b, const struct fde_info *f)
{
	struct go_walk w = { .b = b };
	uint64_t start, end;
	const char *name;

	if (gopclntab__func(b->go, f->go_func, &start, &end, &name))
		return emit(b, f->begin, unsupported(b));
	if (go_outermost(name)) {
		b->t->st.rows_end++;
		return emit(b, f->begin, urow(UROW_CFA_END, UROW_RBP_SAME, 0, 0));
	}
	if (gopclntab__pcsp(b->go, f->go_func, go_run, &w))
		return w.err ? w.err : emit(b, f->begin, unsupported(b));
	return 0;
}

/* Go's functions: their ranges, as FDEs .eh_frame (cgo's C code) takes precedence over. */
static int collect_go(struct build *b, Elf *elf)
{
	uint64_t addr = 0, text = section_addr(elf, ".text");
	Elf_Data *d = cfi_section(elf, ".gopclntab", &addr);
	int err;

	if (!d || d->d_size > GO_MAX_TABLE)
		return 0;
	b->go = gopclntab__new(d->d_buf, d->d_size, addr, text);
	if (!b->go)
		return errno == ENOMEM ? -ENOMEM : 0;
	for (size_t i = 0; i < gopclntab__nr_funcs(b->go); i++) {
		uint64_t start, end;
		const char *name;

		if (budget__over(&b->budget))
			return budget__err(&b->budget);
		if (gopclntab__func(b->go, i, &start, &end, &name) || end <= start ||
		    end - start > UTABLE_MAX_SPAN || !in_exec_segment(b->t, start, end))
			continue;
		err = add_fde(b, start, end, SRC_GO, 0);
		if (err)
			return err;
		b->fdes[b->nr_fdes - 1].go_func = (uint32_t)i;
	}
	return 0;
}

/*
 * Page p covers [p * 4096, (p + 1) * 4096) of the table: its rows are the
 * one in force at the page start (if any) and every row starting inside.
 */
static int build_pages(struct utable *t)
{
	uint64_t span = t->end - t->base;
	size_t at_start = 0, before_end = 0; /* rows with pc <= page start, pc < page end */

	t->nr_pages = (size_t)((span + PAGE_SIZE_U - 1) >> UNWIND_PAGE_SHIFT);
	t->pages = calloc(t->nr_pages ? t->nr_pages : 1, sizeof(*t->pages));
	if (!t->pages)
		return -ENOMEM;
	for (size_t p = 0; p < t->nr_pages; p++) {
		uint64_t ps = (uint64_t)p << UNWIND_PAGE_SHIFT, pe = ps + PAGE_SIZE_U;
		size_t first;

		while (at_start < t->nr_rows && t->rows[at_start].pc <= ps)
			at_start++;
		if (before_end < at_start)
			before_end = at_start;
		while (before_end < t->nr_rows && t->rows[before_end].pc < pe)
			before_end++;
		if (at_start)
			first = at_start - 1;
		else if (before_end)
			first = 0;
		else
			continue; /* no row yet: count 0 */
		t->pages[p].first = (uint32_t)first;
		t->pages[p].count = (uint32_t)(before_end - first);
	}
	return 0;
}

/* --- ELF ---------------------------------------------------------------------- */

static int read_segments(struct build *b)
{
	size_t n;

	if (elf_getphdrnum(b->elf, &n) || n == 0 || n > 65535)
		return -EINVAL;
	b->t->segs = calloc(n, sizeof(*b->t->segs));
	if (!b->t->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_offset + ph.p_filesz < ph.p_offset)
			continue;
		b->t->segs[b->t->nr_segs++] = (struct utable_seg){
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return b->t->nr_segs ? 0 : -EINVAL;
}

/* A CFI section's data, or NULL if absent, empty, compressed or unreadable. */
static Elf_Data *cfi_section(Elf *elf, const char *name, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sn;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sn = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sn || strcmp(sn, name))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) || sh.sh_size == 0)
			return NULL;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size == 0)
			return NULL;
		*addr = sh.sh_addr;
		return d;
	}
	return NULL;
}

/* The address of a section, 0 if there is none of that name. */
static uint64_t section_addr(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sn;

		if (gelf_getshdr(scn, &sh) && (sn = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(sn, name))
			return sh.sh_addr;
	}
	return 0;
}

static int check_header(Elf *elf, unsigned char *ident)
{
	GElf_Ehdr eh;
	const char *id;

	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	id = elf_getident(elf, NULL);
	if (!id || !gelf_getehdr(elf, &eh))
		return -EINVAL;
	memcpy(ident, id, EI_NIDENT);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	return 0;
}

/* --- libdw's image ---------------------------------------------------------------- */

/*
 * Given the file itself, libdw runs CFI the builder never screened:
 * dwarf_getcfi_elf() follows PT_GNU_EH_FRAME to wherever .eh_frame_hdr says
 * .eh_frame is, its search table may name any offset as an FDE, and a linear
 * search takes the first FDE covering a pc, rejected or not (the fuzzer
 * found that one: a rejected FDE over a taken one's code, 1.6 GB of register
 * rules; tests/fuzz/corpus/unwind_table/libdw-register-rules). So
 * libdw gets an image of its own: an ELF header, one CFI section - a copy,
 * with rejected FDEs dropped and cut where the walk stopped - and no program
 * headers or .eh_frame_hdr, so its only way to an FDE is the linear walk the
 * builder made. The copy costs the section's size for the build's duration.
 */
#define CFI_SHSTRTAB "\0.eh_frame\0.debug_frame"
#define CFI_NAME_EH  1
#define CFI_NAME_DBG 11
#define CFI_STR_OFF  (sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Shdr))
#define CFI_DATA_OFF (CFI_STR_OFF + 32)

struct cfi_image {
	uint8_t *buf;
	Elf_Data data; /* the section's bytes in buf */
	Elf *elf;
	Dwarf *dw; /* .debug_frame: libdw reaches it through a Dwarf */
	Dwarf_CFI *cfi;
};

static int cfi_image_copy(struct cfi_image *ci, const Elf_Data *src)
{
	ci->buf = malloc(CFI_DATA_OFF + src->d_size);
	if (!ci->buf)
		return -ENOMEM;
	memcpy(ci->buf + CFI_DATA_OFF, src->d_buf, src->d_size);
	ci->data = (Elf_Data){
		.d_buf = ci->buf + CFI_DATA_OFF,
		.d_type = ELF_T_BYTE,
		.d_size = src->d_size,
		.d_version = EV_CURRENT,
	};
	return 0;
}

/* Wraps the first used bytes of the copy in an ELF header for libdw. */
static Dwarf_CFI *cfi_image_open(struct cfi_image *ci, const unsigned char *ident, bool eh,
				 uint64_t addr, size_t used)
{
	Elf64_Ehdr *eh_hdr = (Elf64_Ehdr *)ci->buf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(ci->buf + sizeof(*eh_hdr));

	_Static_assert(sizeof(CFI_SHSTRTAB) <= CFI_DATA_OFF - CFI_STR_OFF, "shstrtab fits");
	memset(ci->buf, 0, CFI_DATA_OFF);
	memcpy(eh_hdr->e_ident, ident, EI_NIDENT);
	eh_hdr->e_ident[EI_VERSION] = EV_CURRENT;
	eh_hdr->e_type = ET_DYN;
	eh_hdr->e_machine = EM_X86_64;
	eh_hdr->e_version = EV_CURRENT;
	eh_hdr->e_shoff = sizeof(*eh_hdr);
	eh_hdr->e_ehsize = sizeof(*eh_hdr);
	eh_hdr->e_shentsize = sizeof(*sh);
	eh_hdr->e_shnum = 3;
	eh_hdr->e_shstrndx = 2;
	sh[1] = (Elf64_Shdr){
		.sh_name = eh ? CFI_NAME_EH : CFI_NAME_DBG,
		.sh_type = SHT_PROGBITS,
		.sh_flags = eh ? SHF_ALLOC : 0,
		.sh_addr = addr,
		.sh_offset = CFI_DATA_OFF,
		.sh_size = used,
		.sh_addralign = 8,
	};
	sh[2] = (Elf64_Shdr){
		.sh_type = SHT_STRTAB,
		.sh_offset = CFI_STR_OFF,
		.sh_size = sizeof(CFI_SHSTRTAB),
		.sh_addralign = 1,
	};
	memcpy(ci->buf + CFI_STR_OFF, CFI_SHSTRTAB, sizeof(CFI_SHSTRTAB));
	ci->elf = elffile__adopt_mem(ci->buf, CFI_DATA_OFF + used);
	if (!ci->elf)
		return NULL;
	if (eh) {
		ci->cfi = dwarf_getcfi_elf(ci->elf);
	} else {
		ci->dw = dwarf_begin_elf(ci->elf, DWARF_C_READ, NULL);
		ci->cfi = ci->dw ? dwarf_getcfi(ci->dw) : NULL;
	}
	return ci->cfi;
}

static void cfi_image_end(struct cfi_image *ci)
{
	if (ci->dw)
		dwarf_end(ci->dw); /* and the CFI it owns */
	else if (ci->cfi)
		dwarf_cfi_end(ci->cfi);
	elffile__end(ci->elf, NULL);
	free(ci->buf);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct utable *build(Elf *elf)
{
	struct build b = { .elf = elf };
	struct cfi_image img_eh = { 0 }, img_dbg = { 0 };
	Dwarf_CFI *cfi_eh = NULL, *cfi_dbg = NULL;
	Elf_Data *eh, *dbg;
	size_t used;
	uint64_t eh_addr = 0, dbg_addr = 0, t0 = mono_ns();
	int err;

	budget__start(&b.budget, UTABLE_CPU_BUDGET_NS);
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t) {
		err = -ENOMEM;
		goto out;
	}
	err = check_header(elf, b.ident);
	if (err)
		goto out;
	err = read_segments(&b);
	if (err)
		goto out;
	b.t->build_id_len = elffile__build_id(elf, b.t->build_id);

	eh = cfi_section(elf, ".eh_frame", &eh_addr);
	dbg = cfi_section(elf, ".debug_frame", &dbg_addr);
	/* An FDE's rows are walked only if its section's image opened. */
	if (eh) {
		err = cfi_image_copy(&img_eh, eh);
		if (err)
			goto out;
		err = collect_fdes(&b, &img_eh.data, true, eh_addr, SRC_EH, &used);
		if (err)
			goto out;
		cfi_eh = cfi_image_open(&img_eh, b.ident, true, eh_addr, used);
		if (!cfi_eh)
			drop_src(&b, SRC_EH);
	}
	if (dbg) {
		err = cfi_image_copy(&img_dbg, dbg);
		if (err)
			goto out;
		err = collect_fdes(&b, &img_dbg.data, false, dbg_addr, SRC_DEBUG, &used);
		if (err)
			goto out;
		cfi_dbg = cfi_image_open(&img_dbg, b.ident, false, dbg_addr, used);
		if (!cfi_dbg)
			drop_src(&b, SRC_DEBUG);
	}
	err = collect_go(&b, elf);
	/* The sort cannot stop halfway: not begun when time is up. */
	if (!err && budget__over_now(&b.budget))
		err = budget__err(&b.budget);
	if (err)
		goto out;
	settle_fdes(&b);
	if (!b.nr_fdes) {
		err = -ENODATA;
		goto out;
	}
	b.t->base = b.fdes[0].begin & ~(uint64_t)(PAGE_SIZE_U - 1);
	b.t->end = b.fdes[b.nr_fdes - 1].end;
	if (b.t->end - b.t->base > UTABLE_MAX_SPAN) {
		err = -E2BIG;
		goto out;
	}
	for (size_t i = 0; i < b.nr_fdes && !b.full; i++) {
		const struct fde_info *f = &b.fdes[i];

		err = f->src == SRC_GO ? walk_go(&b, f)
				       : walk_fde(&b, f->src == SRC_EH ? cfi_eh : cfi_dbg, f);
		if (err)
			goto out;
		/*
		 * Bytes up to the next FDE (or past the last) have no CFI. A short
		 * gap is alignment padding that never runs (a return address just
		 * past a function is looked up at address - 1): let the last row
		 * cover it rather than spend a row.
		 */
		if (i + 1 == b.nr_fdes || b.fdes[i + 1].begin - f->end > UTABLE_PAD_GAP) {
			b.t->st.rows_gap++;
			err = emit(&b, f->end, urow(UROW_CFA_NONE, UROW_RBP_SAME, 0, 0));
			if (err)
				goto out;
		}
	}
	if (b.full) {
		err = -E2BIG;
		goto out;
	}
	err = build_pages(b.t);
	if (err)
		goto out;
	b.t->st.build_ns = mono_ns() - t0;
out:
	cfi_image_end(&img_eh);
	cfi_image_end(&img_dbg);
	free(b.cies);
	free(b.fdes);
	gopclntab__free(b.go);
	if (err) {
		utable__free(b.t);
		errno = -err;
		return NULL;
	}
	return b.t;
}

struct utable *utable__build_elf(Elf *elf)
{
	return build(elf);
}

struct utable *utable__build_fd(int fd)
{
	struct utable *t;
	Elf *elf = elffile__begin(fd);

	if (!elf)
		return NULL;
	t = build(elf);
	elffile__end(elf, NULL);
	return t;
}

struct utable *utable__build_mem(const void *image, size_t size)
{
	struct utable *t;
	void *copy;
	Elf *elf = elffile__begin_mem(image, size, &copy);
	int err;

	if (!elf)
		return NULL;
	t = build(elf);
	err = errno;
	elffile__end(elf, copy);
	errno = err;
	return t;
}

void utable__free(struct utable *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->pages);
	free(t->segs);
	free(t);
}

const struct bp_urow *utable__lookup(const struct utable *t, uint64_t vaddr)
{
	uint64_t off = vaddr - t->base;
	const struct utable_page *pg;
	uint32_t lo, n;

	if (vaddr < t->base || (off >> UNWIND_PAGE_SHIFT) >= t->nr_pages)
		return NULL;
	pg = &t->pages[off >> UNWIND_PAGE_SHIFT];
	if (!pg->count)
		return NULL;
	/* The walker's search: halve [lo, lo + n) keeping rows[lo].pc <= off. */
	lo = pg->first;
	n = pg->count;
	while (n > 1) {
		uint32_t half = n / 2;

		if (t->rows[lo + half].pc <= off)
			lo += half;
		n -= half;
	}
	return t->rows[lo].pc <= off ? &t->rows[lo] : NULL;
}

int utable__bias(const struct utable *t, uint64_t start, uint64_t offset, uint64_t *bias)
{
	const struct utable_seg *best = NULL;

	for (size_t i = 0; i < t->nr_segs; i++) {
		const struct utable_seg *s = &t->segs[i];
		uint64_t lo = s->offset & ~(uint64_t)4095;

		if (offset < lo || offset >= s->offset + (s->filesz ? s->filesz : 1))
			continue;
		if (!best || (s->exec && !best->exec))
			best = s;
	}
	if (!best)
		return -ENOENT;
	*bias = start - offset + best->offset - best->vaddr;
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * disasm.c - instructions as text with capstone; see disasm.h.
 *
 * capstone rather than binutils' libopcodes: libopcodes has no stable ABI
 * (Debian ships it as binutils-dev, tied to one binutils version, and its
 * printing goes through a fprintf callback), capstone is a plain library
 * with a versioned API and decodes one instruction per call without
 * allocating.
 */
#include "sym/disasm.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynlib.h"
#include "base/util.h"

#ifndef CAPSTONE_SONAME
#define CAPSTONE_SONAME "libcapstone.so.4" /* the Makefile passes the one linked against */
#endif

/* capstone, loaded on first use (base/dynlib.h: 3 MiB of RSS otherwise). */
#define CS_FNS(X)                                                                                  \
	X(cs_open) X(cs_option) X(cs_close) X(cs_malloc) X(cs_free) X(cs_disasm_iter) X(cs_version)
#define CS_PTR(f)  __typeof__(f) *f;
#define CS_NAME(f) #f,
static struct {
	CS_FNS(CS_PTR)
} capstone;
static const char *const capstone_names[] = { CS_FNS(CS_NAME) };
static struct dynlib capstone_lib = DYNLIB_INIT(CAPSTONE_SONAME, capstone_names, &capstone);
_Static_assert(sizeof(capstone) == ARRAY_SIZE(capstone_names) * sizeof(void *),
	       "capstone: one pointer per name");

/* 0, or -ELIBACC (disasm__unavailable() says why). */
static int capstone_load(void)
{
	return dynlib__load(&capstone_lib);
}

const char *disasm__unavailable(void)
{
	static char why[320];

	if (!capstone_load())
		return NULL;
	snprintf(why, sizeof(why),
		 "cannot load the disassembler (%s): install Debian's libcapstone4",
		 dynlib__why(&capstone_lib));
	return why;
}

struct disasm {
	csh cs;
	cs_insn *insn;
	bool x86;
};

struct disasm *disasm__new(int elf_machine, bool is64)
{
	struct disasm *d;
	cs_arch arch;
	cs_mode mode;

	switch (elf_machine) {
	case EM_X86_64:
	case EM_386:
		arch = CS_ARCH_X86;
		mode = elf_machine == EM_X86_64 && is64 ? CS_MODE_64 : CS_MODE_32;
		break;
	case EM_AARCH64:
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		break;
	default:
		errno = ENOTSUP;
		return NULL;
	}
	if (capstone_load()) {
		errno = ELIBACC;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (capstone.cs_open(arch, mode, &d->cs) != CS_ERR_OK) {
		free(d);
		errno = ENOTSUP;
		return NULL;
	}
	d->x86 = arch == CS_ARCH_X86;
	if (d->x86)
		capstone.cs_option(d->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	d->insn = capstone.cs_malloc(d->cs);
	if (!d->insn) {
		capstone.cs_close(&d->cs);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void disasm__free(struct disasm *d)
{
	if (!d)
		return;
	capstone.cs_free(d->insn, 1);
	capstone.cs_close(&d->cs);
	free(d);
}

/* A direct branch's target: the operand is one immediate (x86 "0x1146", arm64 "#0x1146"). */
static bool branch_target(const struct disasm *d, const cs_insn *in, uint64_t *target)
{
	const char *m = in->mnemonic, *op = in->op_str;
	char *end;

	if (d->x86 ? !(m[0] == 'j' || !strncmp(m, "call", 4) || !strncmp(m, "loop", 4))
		   : !(m[0] == 'b' || !strncmp(m, "cb", 2) || !strncmp(m, "tb", 2)))
		return false;
	/* arm64 cbz/tbz: the target is the last operand. */
	if (!d->x86 && strrchr(op, ' '))
		op = strrchr(op, ' ') + 1;
	if (*op == '#')
		op++;
	if (strncmp(op, "0x", 2))
		return false;
	*target = strtoull(op, &end, 16);
	return *end == '\0';
}

size_t disasm__one(struct disasm *d, const uint8_t *code, size_t len, uint64_t addr,
		   uint64_t func_start, uint64_t func_end, char *buf, size_t size)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t a = addr, target;
	int n;

	if (!len)
		return 0;
	if (!capstone.cs_disasm_iter(d->cs, &p, &left, &a, d->insn)) {
		snprintf(buf, size, ".byte 0x%02x", code[0]);
		return 1;
	}
	n = snprintf(buf, size, "%s%s%s", d->insn->mnemonic, d->insn->op_str[0] ? " " : "",
		     d->insn->op_str);
	if (n >= 0 && (size_t)n < size && func_end > func_start &&
	    branch_target(d, d->insn, &target) && target >= func_start && target < func_end)
		snprintf(buf + n, size - (size_t)n, " <+0x%" PRIx64 ">", target - func_start);
	return d->insn->size;
}

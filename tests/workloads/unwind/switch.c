// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * uw_switch - frames whose unwind rule the table walker cannot follow, as
 * SBCL's call_into_lisp (CFA = *rbp + 16, from a Lisp control stack of its
 * own). The trampolines keep a frame pointer but describe their CFA with
 * an expression the walker does not know (rbp + 8 + 8 as DWARF ops):
 *
 *     main -> sw_run -> sw_call_same -> same_outer -> same_leaf
 *     main -> sw_run -> sw_call_switch -> switched_outer -> switched_leaf
 *                       (runs its callee on an mmap()ed stack)
 *     main -> sw_run -> sw_call_bad -> bad_outer -> bad_leaf
 *                       (rbp = 0x1003 during the call: no frame pointer)
 *
 * --unwind auto walks the first two to main (a frame-pointer step from
 * the trampoline) and stops the third at sw_call_bad, counted as
 * "unsupported rule". Everything else: gcc -O2, no frame pointers, tables.
 * Usage: uw_switch SECONDS
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

void sw_call_same(void (*fn)(void));
void sw_call_switch(void (*fn)(void), void *stack_top);
void sw_call_bad(void (*fn)(void));

/* DW_CFA_def_cfa_expression: DW_OP_breg6 (rbp) 8; DW_OP_lit8; DW_OP_plus. */
#define CFA_RBP_EXPR ".cfi_escape 0x0f, 4, 0x76, 0x08, 0x38, 0x22\n"

__asm__(".text\n"
	".globl sw_call_same\n"
	".type sw_call_same, @function\n"
	"sw_call_same:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n" CFA_RBP_EXPR "call *%rdi\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size sw_call_same, .-sw_call_same\n"

	".globl sw_call_switch\n"
	".type sw_call_switch, @function\n"
	"sw_call_switch:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n" CFA_RBP_EXPR "mov %rsi, %rsp\n"
	"call *%rdi\n"
	"mov %rbp, %rsp\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size sw_call_switch, .-sw_call_switch\n"

	".globl sw_call_bad\n"
	".type sw_call_bad, @function\n"
	"sw_call_bad:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n" CFA_RBP_EXPR "push %rbp\n"
	"sub $8, %rsp\n"
	"mov $0x1003, %ebp\n"
	"call *%rdi\n"
	"add $8, %rsp\n"
	"pop %rbp\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size sw_call_bad, .-sw_call_bad\n");

static volatile unsigned long sink;

#define HOT(name)                                                                                  \
	__attribute__((noinline)) void name##_leaf(void)                                           \
	{                                                                                          \
		for (unsigned i = 0; i < 200000; i++)                                              \
			sink += i ^ (sink >> 3);                                                   \
	}                                                                                          \
	__attribute__((noinline)) void name##_outer(void)                                          \
	{                                                                                          \
		name##_leaf();                                                                     \
		sink++;                                                                            \
	}
HOT(same)
HOT(switched)
HOT(bad)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void sw_run(double until, char *stack_top)
{
	while (now() < until) {
		sw_call_same(same_outer);
		sw_call_switch(switched_outer, stack_top);
		sw_call_bad(bad_outer);
	}
}

int main(int argc, char **argv)
{
	size_t size = 1 << 20;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (stack == MAP_FAILED)
		return 1;
	sw_run(now() + (argc > 1 ? atof(argv[1]) : 5), stack + size);
	return 0;
}

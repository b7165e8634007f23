/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * freeprobe.h - where --alloc's uprobe on free, and on Go's runtime
 * functions, goes in an x86-64 file.
 *
 * A uprobe costs what the kernel does with the instruction it replaces: x86
 * emulates a few (a push of a register, jumps, calls) and single-steps the
 * rest out of line, which is several times dearer. glibc's free (2.36,
 * Debian 12) begins with its NULL test,
 *     48 85 ff             test %rdi,%rdi
 *     0f 84 xx xx xx xx    je   (return)       or 74 xx (je rel8)
 *     55                   push %rbp           <- free+9
 * and a probe on its first instruction, single-stepped, cost 9-15 us per
 * call where one on the push at free+9, emulated, costs 2-3 us. Every call
 * with a non-NULL pointer passes that push with %rdi unchanged (test and je
 * write only the flags), and --alloc ignores free(NULL): so the probe goes
 * there when the prologue is exactly that.
 *
 * Pure bytes in, an offset out: no libbpf, no file (cmd/alloc.c reads the
 * function's first bytes through sym/elfcode.h), unit-tested.
 */
#ifndef BPFPROF_FREEPROBE_H
#define BPFPROF_FREEPROBE_H

#include <stddef.h>
#include <stdint.h>

/* The bytes free's probe site is decided from (the longest prologue read). */
#define FREEPROBE_BYTES 16

/*
 * The offset from free's start at which to probe it, given the first len
 * bytes of its code: past the NULL test (5 after je rel8, 9 after je rel32)
 * when code begins "test %rdi,%rdi; je" and the instruction after it is a
 * push the kernel emulates (50-57: push %rax..%rdi; 41 50-57: push
 * %r8..%r15, the only prefix its emulation takes); else 0, the entry (any
 * other prologue, or fewer bytes than the match needs).
 */
size_t alloc_free_probe_offset(const uint8_t *code, size_t len);

/*
 * Go (ABIInternal, x86-64): the offset of the conditional jump of a
 * function's stack check to its morestack call, given its first len bytes:
 *     49 3b 66 10          cmp 0x10(%r14),%rsp      (g.stackguard0)
 *     76 xx | 0f 86 ...    jbe (morestack)          <- the offset
 * or, for a frame over a few hundred bytes, the same compare of %r12 (4d 3b
 * 66 10) after "lea -n(%rsp),%r12" (4c 8d 64 24 xx or 4c 8d a4 24 xx xx xx
 * xx). A jcc is emulated (about 1.2 us a trap on the test host) where the
 * first instruction with a frame, "mov %rbp,n(%rsp)", is single-stepped
 * (about 5.9 us); the arguments are in their registers there as at the
 * entry. The jump taken (CF or ZF set), the stack grows and the function
 * starts again: the BPF program skips that fire (ALLOC_COOKIE_GO_AT_CHECK).
 * 0: no such prologue (a function without a stack check, or fewer bytes).
 */
#define GOPROBE_BYTES 24
size_t alloc_go_probe_offset(const uint8_t *code, size_t len);

#endif

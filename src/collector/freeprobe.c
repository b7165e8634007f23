// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * freeprobe.c - where --alloc's uprobe on free goes (freeprobe.h).
 *
 * The kernel's x86 uprobe code (arch/x86/kernel/uprobes.c,
 * push_setup_xol_ops) emulates opcodes 0x50-0x57 alone or after the one REX
 * prefix 0x41, nothing else of the push family (no 48 5x, no 66 5x, no push
 * of memory or an immediate): only those are matched here.
 */
#include "collector/freeprobe.h"

/* A push of a register the kernel emulates at code[at], within len. */
static int emulated_push(const uint8_t *code, size_t len, size_t at)
{
	if (at < len && code[at] >= 0x50 && code[at] <= 0x57)
		return 1;
	return at + 1 < len && code[at] == 0x41 && code[at + 1] >= 0x50 && code[at + 1] <= 0x57;
}

size_t alloc_free_probe_offset(const uint8_t *code, size_t len)
{
	size_t at;

	if (!code || len < 3 || code[0] != 0x48 || code[1] != 0x85 || code[2] != 0xff)
		return 0; /* not test %rdi,%rdi (REX.W 85 /r, ModRM 11 111 111) */
	if (len >= 5 && code[3] == 0x74)
		at = 5; /* je rel8 */
	else if (len >= 9 && code[3] == 0x0f && code[4] == 0x84)
		at = 9; /* je rel32 */
	else
		return 0;
	return emulated_push(code, len, at) ? at : 0;
}

size_t alloc_go_probe_offset(const uint8_t *code, size_t len)
{
	size_t at = 0;
	uint8_t rex = 0x49; /* cmp 0x10(%r14),%rsp */

	if (!code)
		return 0;
	if (len >= 5 && code[0] == 0x4c && code[1] == 0x8d && code[2] == 0x64 && code[3] == 0x24) {
		at = 5; /* lea -n(%rsp),%r12 (disp8) */
		rex = 0x4d;
	} else if (len >= 8 && code[0] == 0x4c && code[1] == 0x8d && code[2] == 0xa4 &&
		   code[3] == 0x24) {
		at = 8; /* lea -n(%rsp),%r12 (disp32) */
		rex = 0x4d;
	}
	if (at + 4 > len || code[at] != rex || code[at + 1] != 0x3b || code[at + 2] != 0x66 ||
	    code[at + 3] != 0x10)
		return 0;
	at += 4;
	if (at + 2 <= len && code[at] == 0x76)
		return at; /* jbe rel8 */
	if (at + 6 <= len && code[at] == 0x0f && code[at + 1] == 0x86)
		return at; /* jbe rel32 */
	return 0;
}

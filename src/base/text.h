/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * text.h - text a profiled process controls, made safe to show.
 *
 * Function names (perf maps, symbol tables), command names, file paths and
 * source lines come from processes and their files. Written to a terminal
 * as they are, their bytes are instructions to it: ESC and the C1 controls
 * (U+0080 - U+009F, CSI and OSC among them, which many terminals obey in
 * their UTF-8 form too, and a raw 0x9b byte where 8-bit controls are on)
 * clear the screen, set the title or the clipboard, or answer back into
 * the input; the bidirectional formatting characters make a name read as
 * another (CVE-2021-42574). Every writer of such text - the terminal views,
 * the text and file formats, the log - replaces them with '?' here.
 */
#ifndef BPFPROF_TEXT_H
#define BPFPROF_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1 - 4; *cp its code point), or 0
 * (not UTF-8: a stray continuation byte, an overlong form, a surrogate, past
 * U+10FFFF, cut short by the NUL). */
size_t text__seq(const char *s, uint32_t *cp);

/* A control (C0, DEL, C1) or a bidirectional formatting character. */
bool text__is_control(uint32_t cp);

/*
 * Cleans s in place: each control and each byte that is not UTF-8 becomes
 * '?' (tabs and newlines too unless keep_space). Never longer than before;
 * returns the new length.
 */
size_t text__clean(char *s, bool keep_space);

#endif

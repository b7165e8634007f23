// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_text.c - text a process controls, made safe to show (base/text.h):
 * UTF-8 sequences decoded or refused (overlong, surrogates, past U+10FFFF,
 * stray continuation bytes, cut short); C0, DEL, C1 and the bidirectional
 * formatting characters are controls, printable text of any script is not;
 * cleaning in place turns each control and each byte that is not UTF-8
 * into one '?', keeps tabs and newlines only when asked, never grows; and
 * the writers built on it (folded labels, the report's and flame graphs'
 * clean copy: controls '?', bytes not UTF-8 U+FFFD; JSON strings: escaped)
 * leave no byte a terminal would obey.
 */
#include "testutil.h"

#include "base/profile.h"
#include "base/text.h"
#include "format/writer.h"

static void test_seq(void **state)
{
	uint32_t cp = 0;

	(void)state;
	assert_int_equal(text__seq("a", &cp), 1);
	assert_int_equal(cp, 'a');
	assert_int_equal(text__seq("\xc3\xa9", &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(text__seq("\xc2\x9b", &cp), 2);
	assert_int_equal(cp, 0x9b);
	assert_int_equal(text__seq("\xe2\x80\xae", &cp), 3);
	assert_int_equal(cp, 0x202e);
	assert_int_equal(text__seq("\xf0\x9f\x94\xa5", &cp), 4);
	assert_int_equal(cp, 0x1f525);
	/* Not UTF-8. */
	assert_int_equal(text__seq("\x9b", &cp), 0);		 /* a stray continuation byte */
	assert_int_equal(text__seq("\xc0\x80", &cp), 0);	 /* overlong NUL */
	assert_int_equal(text__seq("\xe0\x80\xaf", &cp), 0);	 /* overlong '/' */
	assert_int_equal(text__seq("\xed\xa0\x80", &cp), 0);	 /* a surrogate */
	assert_int_equal(text__seq("\xf4\x90\x80\x80", &cp), 0); /* past U+10FFFF */
	assert_int_equal(text__seq("\xe2\x80", &cp), 0);	 /* cut short by the NUL */
	assert_int_equal(text__seq("\xff", &cp), 0);
}

static void test_controls(void **state)
{
	static const uint32_t controls[] = { 0,	     0x09,   0x0a,   0x1b,   0x1f,   0x7f,
					     0x80,   0x9b,   0x9d,   0x9f,   0x061c, 0x200e,
					     0x200f, 0x202a, 0x202e, 0x2066, 0x2069 };
	static const uint32_t text[] = { ' ',	 '~',	 0xa0,	 0xe9,	 0x0416, 0x4e2d,
					 0x200d, 0x2030, 0x2065, 0x206a, 0x1f525 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(controls); i++)
		assert_true(text__is_control(controls[i]));
	for (size_t i = 0; i < ARRAY_SIZE(text); i++)
		assert_false(text__is_control(text[i]));
}

static void test_clean(void **state)
{
	char s[128];

	(void)state;
	/* A name from a hostile perf map: U+009B 2J, raw 0x9b 2J, OSC title, RLO. */
	snprintf(s, sizeof(s), "%s",
		 "evil\xc2\x9b"
		 "2J\x9b"
		 "2Jx\x1b]0;pwned\x07y\xe2\x80\xaeRLO");
	assert_int_equal(text__clean(s, false), strlen("evil?2J?2Jx?]0;pwned?y?RLO"));
	assert_string_equal(s, "evil?2J?2Jx?]0;pwned?y?RLO");
	/* Text of any script is kept as it is. */
	snprintf(s, sizeof(s), "%s", "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x94\xa5 std::vector<int>");
	assert_int_equal(text__clean(s, false),
			 strlen("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x94\xa5 std::vector<int>"));
	assert_string_equal(s, "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x94\xa5 std::vector<int>");
	/* Tabs and newlines only when asked; an overlong form and a cut sequence are '?'. */
	snprintf(s, sizeof(s), "%s",
		 "a\tb\nc\xc0\x80"
		 "d\xe2\x80");
	assert_string_equal((text__clean(s, true), s), "a\tb\nc??d??");
	snprintf(s, sizeof(s), "%s", "a\tb\nc");
	assert_string_equal((text__clean(s, false), s), "a?b?c");
	s[0] = '\0';
	assert_int_equal(text__clean(s, false), 0);
}

#define HOSTILE                                                                                    \
	"f\xc2\x9b"                                                                                \
	"2J\x9b;\x1b[31m\xe2\x80\xae"                                                              \
	"g\xc3\xa9"

/* No ESC, no C1 (UTF-8 or raw), no bidi override in what the writers make. */
static void assert_inert(const char *s)
{
	assert_null(strchr(s, '\x1b'));
	assert_null(strstr(s, "\xc2\x9b"));
	assert_null(strstr(s, "\xe2\x80\xae"));
}

static void test_writers(void **state)
{
	struct pframe f = { .name = HOSTILE, .kind = FRAME_JIT };
	char buf[256], *json = NULL;
	size_t len = 0;
	FILE *m;

	(void)state;
	writer__frame_label(&f, buf, sizeof(buf));
	assert_string_equal(buf, "f?2J\xef\xbf\xbd:?[31m?g\xc3\xa9_[j]");
	assert_inert(buf);
	writer__clean_utf8(HOSTILE, buf, sizeof(buf));
	/* Not UTF-8 is U+FFFD in the clean copy, controls '?'. */
	assert_string_equal(buf, "f?2J\xef\xbf\xbd;?[31m?g\xc3\xa9");
	assert_inert(buf);
	m = open_memstream(&json, &len);
	assert_non_null(m);
	writer__json_string(m, HOSTILE);
	fclose(m);
	assert_string_equal(json, "\"f\\u009b2J\\ufffd;\\u001b[31m\\u202eg\xc3\xa9\"");
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seq),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_writers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

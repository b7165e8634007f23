// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_push.c - the parts of the Pyroscope client a server controls: its
 * Retry-After header (honoured, but only up to PUSH_MAX_RETRY_AFTER), and
 * what the messages show of the URL (never a password).
 */
#include "testutil.h"

#include <time.h>

#include "agent/push.h"

static void test_retry_after(void **state)
{
	time_t now = 1700000000; /* Tue, 14 Nov 2023 22:13:20 GMT */

	assert_int_equal(pusher__retry_after("5", now), 5);
	assert_int_equal(pusher__retry_after(" 7 \r\n", now), 7);
	assert_int_equal(pusher__retry_after("0", now), 0);
	assert_int_equal(pusher__retry_after("99999", now), PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("999999999999", now), PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now), 30);
	assert_int_equal(pusher__retry_after("Wed, 15 Nov 2023 22:13:20 GMT", now),
			 PUSH_MAX_RETRY_AFTER);
	assert_int_equal(pusher__retry_after("Mon, 13 Nov 2023 22:13:20 GMT", now), 0);
	/* Not a number of seconds, not an IMF date: ignored (the backoff applies). */
	assert_int_equal(pusher__retry_after("", now), -1);
	assert_int_equal(pusher__retry_after("-1", now), -1);
	assert_int_equal(pusher__retry_after("1.5", now), -1);
	assert_int_equal(pusher__retry_after("5s", now), -1);
	assert_int_equal(pusher__retry_after("9999999999999", now), -1);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50", now), -1);
	assert_int_equal(pusher__retry_after("Tue, 14 Nov 2023 22:13:50 GMT junk", now), -1);
	assert_int_equal(pusher__retry_after("soon", now), -1);
}

static void test_shown_url(void **state)
{
	char out[256];

	pusher__shown_url("https://u:secret@host:4040/p", out, sizeof(out));
	assert_string_equal(out, "https://host:4040/p");
	pusher__shown_url("http://host/a@b", out, sizeof(out));
	assert_string_equal(out, "http://host/a@b");
	pusher__shown_url("u:secret@host", out, sizeof(out));
	assert_string_equal(out, "host");
	pusher__shown_url("http://host", out, sizeof(out));
	assert_string_equal(out, "http://host");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_shown_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of sim/base/err.c: a message longer than err_t's buffer keeps its
 * start (the file) and its end (the reason) with "[...]" between, whether
 * set whole, prefixed or made from a config line; a short one is unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "tests/fixtures/test_main.h"

/* A path of n bytes: "/data/" then 'd's, each 50th a '/'. */
static void long_path(char *p, size_t n)
{
	memcpy(p, "/data/", 6);
	for (size_t i = 6; i < n; i++)
		p[i] = i % 50 ? 'd' : '/';
	p[n] = '\0';
}

static void assert_kept(const err_t *e, const char *start, const char *end)
{
	size_t n = strlen(e->msg), m = strlen(end);
	assert_true(n < sizeof e->msg);
	assert_true(n > sizeof e->msg - 16); /* shortened to fit, not cut short */
	assert_memory_equal(e->msg, start, strlen(start));
	assert_non_null(strstr(e->msg, "[...]"));
	assert_true(n >= m);
	assert_string_equal(e->msg + n - m, end);
}

static void test_long_message_keeps_its_place_and_its_reason(void **st)
{
	(void)st;
	char p[3001];
	long_path(p, 3000);
	err_t e = {0};
	assert_int_equal(err_set(&e, KS_EINPUT, "%s:12: hash_ids: not an array", p), KS_EINPUT);
	assert_int_equal(e.code, KS_EINPUT);
	assert_kept(&e, "/data/ddd", "ddd:12: hash_ids: not an array");
	/* prefixed: the prefix and the reason both stay */
	err_set(&e, KS_EIO, "%s: cannot open: No space left on device", p);
	err_prefix(&e, "[output] dir");
	assert_kept(&e, "[output] dir: /data/ddd", ": cannot open: No space left on device");
	/* a short message is as it was */
	err_set(&e, KS_EINPUT, "%s: bad", "x.ini");
	err_prefix(&e, "here");
	assert_string_equal(e.msg, "here: x.ini: bad");
}

/* A multi-byte character at either cut is kept whole or dropped whole. */
static void test_shortened_message_cuts_no_utf8_character(void **st)
{
	(void)st;
	char s[2400];
	size_t n = 0;
	while (n + 2 < sizeof s - 1) {
		s[n++] = (char)0xc3; /* é */
		s[n++] = (char)0xa9;
	}
	s[n] = '\0';
	char out[64];
	for (size_t cap = 16; cap < sizeof out; cap++) {
		err_fit(out, cap, s, n);
		size_t m = strlen(out), head = strstr(out, "[...]") - out;
		assert_true(m < cap);
		assert_true(head % 2 == 0 && (m - head - 5) % 2 == 0);
	}
}

/* A config line with a long key: the line's place and the reason stay. */
static void test_config_error_on_a_long_line_keeps_its_reason(void **st)
{
	(void)st;
	char text[2200];
	size_t n = (size_t)snprintf(text, sizeof text, "[cluster]\n");
	memset(text + n, 'k', 1800);
	snprintf(text + n + 1800, sizeof text - n - 1800, " = 1\n");
	cfg_schema_t *s = cfg_schema_new();
	static const cfg_key_t key = {"cluster", "nodes", CFG_INT, "4", 1, 64, NULL, "", "n", NULL};
	assert_int_equal(cfg_schema_add(s, &key, 1), 0);
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	assert_non_null(c);
	assert_int_equal(cfg_load_string(c, "exp.ini", text, &e), KS_EINPUT);
	assert_memory_equal(e.msg, "exp.ini:2: [cluster] kkk", 24);
	assert_non_null(strstr(e.msg, "[...]"));
	assert_non_null(strstr(e.msg, "kkk: unknown key"));
	cfg_free(c);
	cfg_schema_free(s);
}

TEST_MAIN(cmocka_unit_test(test_long_message_keeps_its_place_and_its_reason),
          cmocka_unit_test(test_shortened_message_cuts_no_utf8_character),
          cmocka_unit_test(test_config_error_on_a_long_line_keeps_its_reason))

/* The JSONL scanner's id arrays (traces/tr_jscan.c id_value): plain ids are
 * read in place, and exactly the ids a JSON integer reading accepts are
 * accepted: leading zeros, a 19th digit, a fraction or an exponent right
 * after the digits fall back (jansson decides), a negative zero is 0, and
 * long arrays of random ids read back as written. Arrays written as the
 * traces write them ("1, 22, 333") take the eight-bytes-at-a-time path;
 * at its edges it gives jansson's values or falls back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/rng.h"
#include "traces/tr_int.h"

static const char *const keys[] = {"hash_ids"};

/* Scans {"hash_ids": ARRAY}; the scanner's answer. */
static int scan_ids(const char *array, uint64_t **ids, size_t *cap, size_t *n)
{
	char line[8192];
	int len = snprintf(line, sizeof line, "{\"hash_ids\": %s}", array);
	assert_true(len > 0 && (size_t)len < sizeof line);
	tr_jv_t v;
	int rc = tr_jscan_row(line, (size_t)len, keys, 1, 0, &v, ids, cap);
	if (rc == TR_JSCAN_OK) {
		assert_int_equal(v.type, TR_JV_ARRAY);
		*n = v.n;
	}
	return rc;
}

static void test_id_edges_read_as_json_integers(void **st)
{
	(void)st;
	uint64_t *ids = NULL;
	size_t cap = 0, n = 0;
	assert_int_equal(scan_ids("[0,7,-0 , 999999999999999999]", &ids, &cap, &n), TR_JSCAN_OK);
	assert_int_equal(n, 4);
	assert_true(ids[0] == 0 && ids[1] == 7 && ids[2] == 0 &&
		    ids[3] == 999999999999999999ULL);
	static const char *const fall[] = {
	    "[01]", "[00]", "[1000000000000000000]", "[1.0]", "[1e3]", "[2E1]",
	    "[0.5]", "[0e0]", "[-1]", "[1,]", "[1 2]", "[+1]", "[1", "[a]",
	};
	for (size_t i = 0; i < sizeof fall / sizeof fall[0]; i++) {
		if (scan_ids(fall[i], &ids, &cap, &n) != TR_JSCAN_FALLBACK)
			fail_msg("%s was accepted", fall[i]);
	}
	free(ids);
}

static void test_long_random_id_arrays_read_back(void **st)
{
	(void)st;
	uint64_t *ids = NULL, want[300];
	size_t cap = 0;
	char buf[8000];
	for (uint64_t t = 0; t < 40; t++) {
		size_t n = (size_t)(t * 7 % 300), len = 1;
		buf[0] = '[';
		for (size_t i = 0; i < n; i++) {
			/* 1 to 18 digits */
			uint64_t r = rng_splitmix64(t * 1000 + i), d = 1 + r % 18, m = 1;
			for (uint64_t k = 0; k < d; k++)
				m *= 10;
			want[i] = (r >> 7) % m;
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu", i ? (i % 3 ? "," : " , ") : "",
						(unsigned long long)want[i]);
		}
		snprintf(buf + len, sizeof buf - len, "]");
		size_t got = 0;
		assert_int_equal(scan_ids(buf, &ids, &cap, &got), TR_JSCAN_OK);
		assert_int_equal(got, n);
		if (n)
			assert_memory_equal(ids, want, n * sizeof want[0]);
	}
	free(ids);
}

/* The scanner on `array` agrees with jansson: accepted arrays hold
 * jansson's non-negative integers; returns the scanner's answer. */
static int scan_as_jansson(const char *array)
{
	uint64_t *ids = NULL;
	size_t cap = 0, n = 0;
	int rc = scan_ids(array, &ids, &cap, &n);
	json_error_t je;
	json_t *a = json_loads(array, 0, &je);
	if (rc == TR_JSCAN_OK) {
		if (!a || !json_is_array(a) || json_array_size(a) != n)
			fail_msg("%s: scanned, jansson differs", array);
		for (size_t i = 0; i < n; i++) {
			json_t *x = json_array_get(a, i);
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    (uint64_t)json_integer_value(x) != ids[i])
				fail_msg("%s: element %zu scanned as %llu", array, i,
					 (unsigned long long)ids[i]);
		}
	}
	json_decref(a);
	free(ids);
	return rc;
}

static void test_comma_space_arrays_read_as_jansson(void **st)
{
	(void)st;
	static const char *const ok[] = {
	    "[0, 1, 22, 333, 4444, 55555, 666666, 7777777, 88888888, 999999999]",
	    "[1234567, 0, 7654321, 10, 100]", "[12345678, 1]", "[999999999999999999, 3]",
	    "[ 5 ,\n 6 ,  7]", "[5,\t6,\r\n7 ]", "[]", "[ ]", "[-0, 0, 1]", "[1,  2, 3]",
	    "[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]",
	};
	/* outside the subset: jansson decides */
	static const char *const fall[] = {
	    "[9223372036854775807, 1]",  /* 2^63-1: a 19th digit */
	    "[18446744073709551616, 1]", /* 2^64 */
	    "[01, 2, 3]", "[1, 02, 3]", "[00, 1]", "[-3, 4, 5]", "[1, -4, 5]", "[1e2, 3, 4]",
	    "[12e1, 3, 4]", "[1.5, 2, 3]", "[12.0, 2, 3]", "[1E2, 2, 3]", "[1, , 2]",
	    "[1, 2, ]", "[1, 2x, 3]", "[1, \"2\", 3]", "[1, [2], 3]", "[1, 2, 3",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (scan_as_jansson(ok[i]) != TR_JSCAN_OK)
			fail_msg("%s fell back", ok[i]);
	}
	for (size_t i = 0; i < sizeof fall / sizeof fall[0]; i++)
		if (scan_as_jansson(fall[i]) != TR_JSCAN_FALLBACK)
			fail_msg("%s was accepted", fall[i]);
}

TEST_MAIN(cmocka_unit_test(test_id_edges_read_as_json_integers),
          cmocka_unit_test(test_comma_space_arrays_read_as_jansson),
          cmocka_unit_test(test_long_random_id_arrays_read_back))

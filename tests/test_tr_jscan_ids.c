/* The JSONL scanner's id arrays (traces/tr_jscan.c id_value): plain ids are
 * read in place, and exactly the ids a JSON integer reading accepts are
 * accepted: leading zeros, a 19th digit, a fraction or an exponent right
 * after the digits fall back (jansson decides), a negative zero is 0, and
 * long arrays of random ids read back as written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/test_main.h"

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

TEST_MAIN(cmocka_unit_test(test_id_edges_read_as_json_integers),
          cmocka_unit_test(test_long_random_id_arrays_read_back))

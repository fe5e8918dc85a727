/* The JSONL scanner (traces/tr_jscan.c): the usual Mooncake and Bailian rows
 * are scanned with the values jansson gives; every shape outside its subset
 * falls back (so jansson decides); and whole traces read the same, requests
 * and errors, with and without it (the fuzz target fuzz_jscan_diff does the
 * same on random input). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "tests/fixtures/tr_fixture.h"
#include "traces/tr_int.h"

static const char *const keys[] = {"timestamp", "input_length", "hash_ids", "type"};
enum { K_TS, K_IN, K_IDS, K_TYPE, NK };

static int scan(const char *line, tr_jv_t *v, uint64_t **ids, size_t *cap)
{
	return tr_jscan_row(line, strlen(line), keys, NK, K_IDS, v, ids, cap);
}

static void test_usual_rows_scan_to_jansson_values(void **st)
{
	(void)st;
	tr_jv_t v[NK];
	uint64_t *ids = NULL;
	size_t cap = 0;
	assert_int_equal(scan(" {\"timestamp\": 27.5e-1, \"input_length\" :1100,\"hash_ids\": "
			      "[0, 46, 123456789012345678] , \"type\": \"text\"}\r",
			      v, &ids, &cap),
			 TR_JSCAN_OK);
	assert_int_equal(v[K_TS].type, TR_JV_REAL);
	assert_true(v[K_TS].d == 2.75);
	assert_int_equal(v[K_IN].type, TR_JV_INT);
	assert_int_equal(v[K_IN].i, 1100);
	assert_int_equal(v[K_IDS].type, TR_JV_ARRAY);
	assert_int_equal(v[K_IDS].n, 3);
	assert_int_equal(v[K_IDS].bad, 3);
	assert_true(ids[0] == 0 && ids[1] == 46 && ids[2] == 123456789012345678ULL);
	assert_int_equal(v[K_TYPE].type, TR_JV_OTHER);
	/* absent keys, an empty array, -0 */
	assert_int_equal(scan("{\"hash_ids\": [], \"timestamp\": -0}", v, &ids, &cap), TR_JSCAN_OK);
	assert_int_equal(v[K_IN].type, TR_JV_MISSING);
	assert_int_equal(v[K_IDS].n, 0);
	assert_int_equal(v[K_TS].type, TR_JV_INT);
	assert_int_equal(v[K_TS].i, 0);
	free(ids);
}

static void test_other_shapes_fall_back(void **st)
{
	(void)st;
	static const char *const lines[] = {
	    "{\"timestamp\": 1, \"timestamp\": 2}",           /* repeated key */
	    "{\"other\": 1}",                                  /* unknown key */
	    "{\"type\": \"a\\\"b\"}",                          /* escape */
	    "{\"type\": \"\xc3\xa9\"}",                        /* non-ASCII */
	    "{\"type\": \"a\tb\"}",                            /* control character */
	    "{\"timestamp\": 1234567890123456789}",            /* 19 digits */
	    "{\"timestamp\": 1e400}",                          /* real overflow */
	    "{\"timestamp\": 01}",                             /* leading zero */
	    "{\"timestamp\": 1.}",                             /* no fraction digits */
	    "{\"timestamp\": +1}",                             /* plus sign */
	    "{\"hash_ids\": [1, -2]}",                         /* negative id */
	    "{\"hash_ids\": [1, 2.0]}",                        /* real id */
	    "{\"hash_ids\": [1, [2]]}",                        /* nesting */
	    "{\"input_length\": [1]}",                         /* array elsewhere */
	    "{\"type\": {\"a\": 1}}",                          /* object value */
	    "{\"timestamp\": 1,}",                             /* trailing comma */
	    "{\"timestamp\": 1} x",                            /* trailing text */
	    "[1, 2]",                                          /* not an object */
	    "{\"timestamp\": tru}",                            /* bad literal */
	    "{\"timestamp\" 1}",                               /* no colon */
	    "{\"timestamp\": 1",                               /* unterminated */
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		tr_jv_t v[NK];
		uint64_t *ids = NULL;
		size_t cap = 0;
		if (scan(lines[i], v, &ids, &cap) != TR_JSCAN_FALLBACK)
			fail_msg("scanned, should fall back: %s", lines[i]);
		free(ids);
	}
}

/* Reads text as kind with and without the scanner: the same requests, or
 * the same error message. Returns the number of rows. */
static uint64_t both_ways(tr_kind_t kind, const char *text, char *msg, size_t cap)
{
	const char *path = tf_write("jsonl", text);
	uint64_t rows[2];
	char m[2][sizeof(((err_t *)0)->msg)];
	int rc[2];
	tr_request_t q[2][8];
	uint64_t blocks[2][8][8] = {{{0}}};
	for (int slow = 0; slow < 2; slow++) {
		tr_opts_t o;
		tr_opts_default(&o);
		o.kind = kind;
		o.path = path;
		o.json_slow = slow;
		tr_reader_t *r;
		err_t e = {0};
		rows[slow] = 0;
		assert_int_equal(tr_open(&o, kind == TR_KIND_MOONCAKE ? 512 : 16, 1, &r, &e), 0);
		while ((rc[slow] = tr_next(r, &q[slow][rows[slow] % 8], &e)) > 0) {
			tr_request_t *x = &q[slow][rows[slow] % 8];
			assert_true(x->n_blocks <= 8);
			memcpy(blocks[slow][rows[slow] % 8], x->blocks, x->n_blocks * sizeof(uint64_t));
			x->blocks = NULL;
			rows[slow]++;
		}
		snprintf(m[slow], sizeof m[slow], "%s", rc[slow] ? e.msg : "");
		tr_close(r);
	}
	assert_int_equal(rc[0], rc[1]);
	assert_string_equal(m[0], m[1]);
	assert_int_equal(rows[0], rows[1]);
	size_t n = rows[0] < 8 ? rows[0] : 8;
	for (size_t i = 0; i < n; i++) { /* field by field: padding is not part of it */
		const tr_request_t *a = &q[0][i], *b = &q[1][i];
		assert_true(a->id == b->id && a->arrival_ns == b->arrival_ns &&
		            a->input_len == b->input_len && a->output_len == b->output_len &&
		            a->n_blocks == b->n_blocks && a->status == b->status &&
		            a->session_id == b->session_id && a->block_tokens == b->block_tokens &&
		            a->n_out_blocks == b->n_out_blocks);
	}
	assert_memory_equal(blocks[0], blocks[1], sizeof blocks[0]);
	snprintf(msg, cap, "%s", m[0]);
	return rows[0];
}

static void test_traces_read_the_same_either_way(void **st)
{
	(void)st;
	char msg[sizeof(((err_t *)0)->msg)];
	assert_int_equal(both_ways(TR_KIND_MOONCAKE,
				   "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 10, "
				   "\"hash_ids\": [1, 2, 3]}\n"
				   "{\"timestamp\": 1000.5, \"input_length\": 1024, \"output_length\": "
				   "5, \"hash_ids\": [1, 2]}\n",
				   msg, sizeof msg),
			 2);
	assert_string_equal(msg, "");
	assert_int_equal(both_ways(TR_KIND_BAILIAN,
				   "{\"chat_id\": 5, \"parent_chat_id\": -1, \"timestamp\": 0.5, "
				   "\"input_length\": 20, \"output_length\": 2, \"type\": \"text\", "
				   "\"turn\": 1, \"hash_ids\": [1, 2]}\n"
				   "{\"chat_id\": 6, \"parent_chat_id\": 5, \"timestamp\": 1.5, "
				   "\"input_length\": 40, \"output_length\": 2, \"type\": \"t\\u00e9\", "
				   "\"turn\": 2, \"hash_ids\": [1, 2, 3]}\n",
				   msg, sizeof msg),
			 2);
	/* errors found by the row checks, after either parser */
	static const char *const bad[][2] = {
	    {"{\"timestamp\": 0, \"input_length\": -3, \"output_length\": 1, \"hash_ids\": []}\n",
	     "negative length"},
	    {"{\"timestamp\": 0, \"input_length\": 3.5, \"output_length\": 1, \"hash_ids\": [1]}\n",
	     "not an integer"},
	    {"{\"timestamp\": \"0\", \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1]}\n",
	     "not a number"},
	    {"{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [-1]}\n",
	     "hash_ids[0]"},
	    {"{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": 7}\n",
	     "not an array"},
	    {"{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}\n", "hash_ids: missing"},
	    {"{\"timestamp\": 0, \"timestamp\": 0}\n", "duplicate key"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		both_ways(TR_KIND_MOONCAKE, bad[i][0], msg, sizeof msg);
		if (!strstr(msg, bad[i][1]))
			fail_msg("'%s': wanted '%s'", msg, bad[i][1]);
	}
}

TEST_MAIN(cmocka_unit_test(test_usual_rows_scan_to_jansson_values),
          cmocka_unit_test(test_other_shapes_fall_back),
          cmocka_unit_test(test_traces_read_the_same_either_way))

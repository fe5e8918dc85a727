/* The block chaining keeps the leading blocks the previous row's shared
 * segments gave (traces/tr_read.c chain_blocks): a row read after rows that
 * share its prefix must get exactly the ids it gets after rows that share
 * nothing with it. Random Mooncake rows, each a random prefix of the row
 * before plus new ids, partial last blocks and output blocks, at block sizes
 * below, between and above the trace's 512 tokens; row i of the whole file
 * is compared with the last row of a file of i unrelated rows then row i
 * (the same serial, so the same ids for its own blocks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gsl/gsl_rng.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tr_fixture.h"

enum { ROWS = 24, MAX_IDS = 8, MAX_BLK = 64 };

/* The ids (prompt, then output blocks) of every row of text, at block size
 * S; returns the number of rows. */
static size_t read_ids(const char *text, uint32_t S, uint64_t ids[][MAX_BLK], uint32_t *n)
{
	tr_opts_t o = tf_opts("jsonl", text);
	o.kind = TR_KIND_MOONCAKE;
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, S, 7, &r, &e), 0);
	tr_request_t q;
	size_t i = 0;
	int rc;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		assert_true(i < ROWS && q.n_blocks + q.n_out_blocks <= MAX_BLK);
		n[i] = q.n_blocks + q.n_out_blocks;
		memcpy(ids[i], q.blocks, n[i] * sizeof *q.blocks);
		i++;
	}
	if (rc)
		fail_msg("%s", e.msg);
	tr_close(r);
	return i;
}

static size_t row_text(char *b, size_t cap, int64_t t, uint32_t in, uint32_t out,
                       const uint64_t *ids, uint32_t n)
{
	size_t len = (size_t)snprintf(b, cap, "{\"timestamp\": %lld, \"input_length\": %u, "
	                              "\"output_length\": %u, \"hash_ids\": [",
	                              (long long)t, in, out);
	for (uint32_t k = 0; k < n; k++)
		len += (size_t)snprintf(b + len, cap - len, "%s%llu", k ? ", " : "",
		                        (unsigned long long)ids[k]);
	len += (size_t)snprintf(b + len, cap - len, "]}\n");
	assert_true(len < cap);
	return len;
}

static void test_kept_blocks_equal_blocks_chained_afresh(void **st)
{
	(void)st;
	static const uint32_t sizes[] = {128, 256, 1024};
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 5);
	for (int trial = 0; trial < 3; trial++) {
		uint64_t ids[ROWS][MAX_IDS];
		uint32_t nid[ROWS], in[ROWS], out[ROWS];
		uint64_t next = 1;
		char all[ROWS * 200];
		size_t len = 0;
		for (int i = 0; i < ROWS; i++) {
			/* a prefix of the row before (all of it, some, none), then new ids */
			uint32_t keep = i ? (uint32_t)gsl_rng_uniform_int(g, nid[i - 1] + 1) : 0;
			keep = keep < MAX_IDS ? keep : MAX_IDS - 1;
			nid[i] = keep + 1 + (uint32_t)gsl_rng_uniform_int(g, MAX_IDS - keep);
			for (uint32_t k = 0; k < nid[i]; k++)
				ids[i][k] = k < keep ? ids[i - 1][k] : next++;
			/* the last id's block full, partial, or barely begun */
			in[i] = (nid[i] - 1) * 512 + 1 + (uint32_t)gsl_rng_uniform_int(g, 512);
			out[i] = 1 + (uint32_t)gsl_rng_uniform_int(g, 700);
			len += row_text(all + len, sizeof all - len, i, in[i], out[i], ids[i], nid[i]);
		}
		for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
			uint32_t S = sizes[z], n_all[ROWS], n_one[ROWS];
			uint64_t b_all[ROWS][MAX_BLK], b_one[ROWS][MAX_BLK];
			assert_int_equal(read_ids(all, S, b_all, n_all), ROWS);
			for (int i = 0; i < ROWS; i++) {
				char one[ROWS * 200];
				size_t l = 0;
				for (int d = 0; d < i; d++) { /* unrelated rows: nothing shared */
					uint64_t u = 1000000 + (uint64_t)trial * 1000 + (uint64_t)d;
					l += row_text(one + l, sizeof one - l, d, 500, 3, &u, 1);
				}
				l += row_text(one + l, sizeof one - l, i, in[i], out[i], ids[i], nid[i]);
				assert_int_equal(read_ids(one, S, b_one, n_one), i + 1);
				assert_int_equal(n_one[i], n_all[i]);
				for (uint32_t k = 0; k < n_all[i]; k++)
					if (b_one[i][k] != b_all[i][k])
						fail_msg("trial %d, S %u, row %d, block %u differs", trial, S, i, k);
			}
		}
	}
	gsl_rng_free(g);
}

TEST_MAIN(cmocka_unit_test(test_kept_blocks_equal_blocks_chained_afresh))

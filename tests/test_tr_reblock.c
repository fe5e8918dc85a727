/* Trace blocks of another size than the simulator's (traces/tr_read.c
 * chain_blocks): a Mooncake trace hashes 512-token blocks; at 16-token
 * simulated blocks one shared 512-token block is 32 matching sub-blocks, its
 * partial tail hashes only the tokens it covers, and a shared prefix shorter
 * than 512 tokens, invisible at 512, hits at 16 in the simulator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "tests/sim_fixture.h"
#include "tests/tr_fixture.h"

/* A and B share trace block 1 only; C and D share a 300-token prefix (one
 * partial trace block, id 5) and differ after it (ids 6, 7); E repeats A. */
static const char *ROWS =
    "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 2, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 1000, \"input_length\": 700, \"output_length\": 2, \"hash_ids\": [1, 4]}\n"
    "{\"timestamp\": 2000, \"input_length\": 300, \"output_length\": 2, \"hash_ids\": [5]}\n"
    "{\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [5, 6]}\n"
    "{\"timestamp\": 4000, \"input_length\": 1100, \"output_length\": 2, \"hash_ids\": [1, 2, "
    "3]}\n";

typedef struct rows {
	uint32_t n_blocks[8];
	uint64_t blocks[8][128];
	size_t n;
} rows_t;

static rows_t read_at(uint32_t S)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = tf_write("jsonl", ROWS);
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, S, 1, &r, &e), 0);
	rows_t v = {0};
	tr_request_t q;
	int rc;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		assert_true(v.n < 8 && q.n_blocks <= 128);
		v.n_blocks[v.n] = q.n_blocks;
		memcpy(v.blocks[v.n], q.blocks, q.n_blocks * sizeof *q.blocks);
		v.n++;
	}
	assert_int_equal(rc, 0);
	tr_close(r);
	return v;
}

static uint32_t common(const rows_t *v, size_t a, size_t b)
{
	uint32_t k = 0;
	while (k < v->n_blocks[a] && k < v->n_blocks[b] && v->blocks[a][k] == v->blocks[b][k])
		k++;
	return k;
}

static void test_trace_block_splits_into_matching_sim_blocks(void **st)
{
	(void)st;
	rows_t v = read_at(16);
	assert_int_equal(v.n, 5);
	assert_int_equal(v.n_blocks[0], 1100 / 16);
	assert_int_equal(common(&v, 0, 1), 512 / 16); /* block 1: 32 sub-blocks */
	assert_int_equal(common(&v, 0, 4), 1100 / 16); /* the partial tail (76 tokens) too */
	assert_int_equal(common(&v, 2, 3), 300 / 16);  /* 300 shared tokens: 18 full blocks */
	/* the 32 sub-blocks of one trace block are distinct prefixes */
	for (uint32_t k = 1; k < 32; k++)
		assert_true(v.blocks[0][k] != v.blocks[0][k - 1]);
	rows_t w = read_at(512);
	assert_int_equal(w.n_blocks[2], 0); /* shorter than a block: nothing to match */
	assert_int_equal(common(&w, 0, 1), 1);
	assert_int_equal(common(&w, 2, 3), 0);
}

/* The same trace through the simulator, one instance: D finds C's 300
 * tokens (18 blocks) at block_tokens 16 and nothing at 512; B finds A's
 * 512-token block at both. */
static void test_prefix_shorter_than_a_block_hits_only_under_smaller_blocks(void **st)
{
	(void)st;
	char path_set[160];
	snprintf(path_set, sizeof path_set, "trace.path=%s", tf_write("jsonl", ROWS));
	for (int small = 0; small < 2; small++) {
		const char *sets[] = {"cluster.nodes=1",	  "cluster.gpus_per_node=4",
				      "trace.kind=mooncake", path_set,
				      small ? "kvcache.block_tokens=16" : "kvcache.block_tokens=512"};
		sim_results_t r = sf_run(NULL, sets, 5);
		assert_int_equal(r.n_req, 5);
		assert_int_equal(sf_request(r.req, r.n_req, 1)->tok_local, 512);
		assert_int_equal(sf_request(r.req, r.n_req, 3)->tok_local, small ? 288 : 0);
		assert_int_equal(sf_request(r.req, r.n_req, 4)->tok_local, small ? 1088 : 1024);
		sim_results_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_block_splits_into_matching_sim_blocks),
	    cmocka_unit_test(test_prefix_shorter_than_a_block_hits_only_under_smaller_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

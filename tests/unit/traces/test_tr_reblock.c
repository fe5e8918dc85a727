/* Block ids at the simulated block size (traces/tr_read.c make_blocks,
 * chain_blocks). A Mooncake trace hashes 512-token blocks; at 16-token
 * simulated blocks one shared 512-token block is 32 matching sub-blocks, its
 * partial tail hashes only the tokens it covers, and a shared prefix shorter
 * than 512 tokens, invisible at 512, hits at 16 in the simulator. The full
 * blocks ending inside a request's output get ids too: a session's next
 * turn repeats them as prompt ids; where the trace's own ids stop (Mooncake
 * hash_ids name prompt blocks only) they belong to the request alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/tr_fixture.h"

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
	uint32_t n_blocks[8], n_out[8];
	uint64_t blocks[8][128]; /* prompt ids, then output ids */
	size_t n;
} rows_t;

static rows_t read_rows(const char *ext, const char *text, uint32_t S)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = tf_write(ext, text);
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(&o, S, 1, &r, &e), 0);
	rows_t v = {0};
	tr_request_t q;
	int rc;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		assert_true(v.n < 8 && q.n_blocks + q.n_out_blocks <= 128);
		v.n_blocks[v.n] = q.n_blocks;
		v.n_out[v.n] = q.n_out_blocks;
		memcpy(v.blocks[v.n], q.blocks, (q.n_blocks + q.n_out_blocks) * sizeof *q.blocks);
		v.n++;
	}
	assert_int_equal(rc, 0);
	tr_close(r);
	return v;
}

static rows_t read_at(uint32_t S)
{
	return read_rows("jsonl", ROWS, S);
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
	assert_int_equal(common(&v, 0, 1), 512 / 16);  /* block 1: 32 sub-blocks */
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
		const char *sets[] = {
		    "cluster.nodes=1", "cluster.gpus_per_node=4", "trace.kind=mooncake", path_set,
		    small ? "kvcache.block_tokens=16" : "kvcache.block_tokens=512"};
		sim_results_t r = sf_run(NULL, sets, 5);
		assert_int_equal(r.n_req, 5);
		assert_int_equal(sf_request(r.req, r.n_req, 1)->tok_local, 512);
		assert_int_equal(sf_request(r.req, r.n_req, 3)->tok_local, small ? 288 : 0);
		assert_int_equal(sf_request(r.req, r.n_req, 4)->tok_local, small ? 1088 : 1024);
		sim_results_free(&r);
	}
}

/* BurstGPT release 3: s1's turn 1 (100 in, 60 out) is the history of its
 * turn 2 (200 in): at 16 tokens, turn 1 has 6 prompt blocks and 160 / 16 -
 * 6 = 4 blocks ending in its output, and turn 2's blocks 6..9 are those. */
static void test_next_turn_repeats_the_output_block_ids(void **st)
{
	(void)st;
	rows_t v = read_rows("csv",
	                     "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log "
	                     "Type,Session ID,Elapsed time\n"
	                     "1,ChatGPT,100,60,160,Conversation log,s1,2.5\n"
	                     "2,ChatGPT,90,10,100,Conversation log,s2,1.0\n"
	                     "3,ChatGPT,200,10,210,Conversation log,s1,3.0\n",
	                     16);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.n_blocks[0], 6);
	assert_int_equal(v.n_out[0], 4);
	assert_int_equal(v.n_out[2], 210 / 16 - 200 / 16);
	for (uint32_t j = 0; j < 10; j++)
		assert_true(v.blocks[2][j] == v.blocks[0][j]);
	assert_true(v.blocks[1][6] != v.blocks[0][6]);
}

/* Two Mooncake rows with the same hash ids: equal prompt blocks, but the
 * output after them is unknown, so no output id is shared (nor equals a
 * prompt id), and a partial last trace block does not reach past the
 * prompt: 1100 tokens at 16 are 68 blocks, then 1150 / 16 - 68 = 3. */
static void test_output_after_trace_ids_is_the_requests_own(void **st)
{
	(void)st;
	const char *rows = "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 50, "
	                   "\"hash_ids\": [1, 2, "
			   "3]}\n"
			   "{\"timestamp\": 1, \"input_length\": 1100, \"output_length\": 50, "
	                   "\"hash_ids\": [1, 2, "
			   "3]}\n";
	rows_t v = read_rows("jsonl", rows, 16);
	assert_int_equal(v.n_blocks[0], 68);
	assert_int_equal(v.n_out[0], 3);
	for (uint32_t j = 0; j < 68; j++)
		assert_true(v.blocks[0][j] == v.blocks[1][j]);
	for (uint32_t j = 68; j < 71; j++) {
		assert_true(v.blocks[0][j] != v.blocks[1][j]);
		for (uint32_t k = 0; k < j; k++)
			assert_true(v.blocks[0][j] != v.blocks[0][k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_block_splits_into_matching_sim_blocks),
	    cmocka_unit_test(test_prefix_shorter_than_a_block_hits_only_under_smaller_blocks),
	    cmocka_unit_test(test_next_turn_repeats_the_output_block_ids),
	    cmocka_unit_test(test_output_after_trace_ids_is_the_requests_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

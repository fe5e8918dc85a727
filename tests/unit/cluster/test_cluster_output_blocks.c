/* Output blocks become cache blocks (sim/cluster/cluster_iter.c
 * cache_full_blocks): once a block's KV is computed, whether prompt or
 * output, it is matchable under its chained id, so a session's next turn
 * hits its history, answers included; the block holding the last token,
 * whose KV is never computed, is not. Checked on a bare cluster per mode and
 * through the simulator on a BurstGPT session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/cluster/cluster.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/toy_cluster.h"
#include "tests/fixtures/tr_fixture.h"

static int64_t unit_cost(void *ctx, const sim_batch_t *b)
{
	(void)ctx;
	(void)b;
	return 1000;
}

/* Turn 1 (8 in, out_len out, prompt ids 1-2, output ids 3-4 at 4-token
 * blocks) runs alone; then turn 2 (20 in, ids 1-5) arrives. Returns turn
 * 2's local hit in tokens. */
static uint32_t next_turn_hit(int mode, uint32_t out_len)
{
	/* the toy with a flat 1000 ns per iteration, one byte a block, a
	 * 64-token budget, chunked prefill in every mode and SGLang's default
	 * conservativeness */
	cluster_params_t p = toy_params(mode);
	p.cost = unit_cost;
	p.block_bytes = 1;
	p.max_batched_tokens = 64;
	p.chunked_prefill = 1;
	p.conservativeness = 1;
	toy_t t;
	toy_start(&t, &p);
	ev_engine_t *eng = t.eng;
	cluster_t *c = &t.cl;
	const uint64_t ids[] = {1, 2, 3, 4, 5};
	sim_req_t *r;
	assert_int_equal(cluster_enqueue(c, 0, 1, 8, out_len, ids, 2, &r), 0);
	assert_int_equal(cluster_req_output_ids(c, r, ids + 2, (8 + out_len) / 4 - 2), 0);
	assert_int_equal(cluster_kick(c, 0), 0);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(cluster_submit(c, 0, 2, 20, 1, ids, 5), 0);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(cluster_check(c), 0);
	assert_int_equal(t.res.n_req, 2);
	uint32_t hit = t.res.req[1].id == 2 ? t.res.req[1].tok_local : t.res.req[0].tok_local;
	toy_free(&t);
	return hit;
}

static void test_next_turn_hits_the_full_output_blocks(void **st)
{
	(void)st;
	for (int mode = SCHED_VLLM; mode <= SCHED_SGLANG; mode++) {
		if (mode == SCHED_BTB)
			continue;
		/* 9 out: KV of 16 tokens exists at the end, blocks 3 and 4 are full */
		assert_int_equal(next_turn_hit(mode, 9), 16);
		/* 8 out: the 16th token was never fed back, block 4 is not full */
		assert_int_equal(next_turn_hit(mode, 8), 12);
	}
}

/* BurstGPT session s1: turn 1 (100 in, 60 out) then turn 2 (200 in), 16-
 * token blocks, one instance: turn 2 finds turn 1's 6 prompt blocks and the
 * 3 full output blocks whose KV was computed (159 tokens: 9 blocks). */
static void test_session_turn_reuses_the_answer_through_the_simulator(void **st)
{
	(void)st;
	char path_set[160];
	snprintf(path_set, sizeof path_set, "trace.path=%s",
	         tf_write("csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log "
	                         "Type,Session ID,Elapsed time\n"
	                         "1,ChatGPT,100,60,160,Conversation log,s1,2.5\n"
	                         "30,ChatGPT,200,10,210,Conversation log,s1,3.0\n"));
	const char *sets[] = {"cluster.nodes=1", "cluster.gpus_per_node=4", "trace.kind=burstgpt",
	                      path_set, "kvcache.block_tokens=16"};
	sim_results_t r = sf_run(NULL, sets, 5);
	assert_int_equal(r.n_req, 2);
	assert_int_equal(sf_request(r.req, r.n_req, 1)->tok_local, 9 * 16);
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_next_turn_hits_the_full_output_blocks),
          cmocka_unit_test(test_session_turn_reuses_the_answer_through_the_simulator))

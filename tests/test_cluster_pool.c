/* Requests are reused (sim/cluster/cluster.h: req_pool, n_req_alloc): a run
 * of many requests allocates as many as are ever in the system at once, not
 * one per request, and a reused request starts from a clean slate (its
 * results equal those of a fresh one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/cluster/cluster.h"
#include "sim/engine/ev_engine.h"

/* 1000 ns per prefill token plus 100 ns per decode sequence. */
static int64_t toy_cost(void *ctx, const sim_batch_t *b)
{
	(void)ctx;
	int64_t t = 0;
	for (uint32_t i = 0; i < b->n_pre; i++)
		t += 1000 * (int64_t)b->pre_new[i];
	return t + 100 * (int64_t)b->n_dec;
}

typedef struct toy {
	ev_engine_t *eng;
	cluster_t cl;
} toy_t;

static void toy_init(toy_t *t)
{
	cluster_params_t p = {0};
	p.n_instances = 1;
	p.block_tokens = 4;
	p.kv_blocks = 1000;
	p.block_bytes = 4096;
	p.max_num_seqs = 8;
	p.max_batched_tokens = 4096;
	p.chunked_prefill = 1;
	p.busy_rule = BUSY_WAIT;
	p.sched_mode = SCHED_VLLM;
	p.cost = toy_cost;
	t->eng = ev_engine_new(64);
	assert_non_null(t->eng);
	assert_int_equal(cluster_init(&t->cl, &p, t->eng), 0);
}

/* Submits request id (16-token prompt of 4 private blocks, out tokens) now
 * and runs until the cluster is empty. */
static void one(toy_t *t, uint64_t id, uint32_t out)
{
	uint64_t b[4] = {id * 16 + 1, id * 16 + 2, id * 16 + 3, id * 16 + 4};
	assert_int_equal(cluster_submit(&t->cl, 0, id, 16, out, b, 4), 0);
	assert_int_equal(ev_engine_run(t->eng, INT64_MAX), 0);
	assert_int_equal(t->cl.n_live, 0);
}

static void test_sequential_requests_reuse_one_allocation(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t);
	for (uint64_t id = 0; id < 200; id++)
		one(&t, id, 1 + (uint32_t)(id % 7) * 5);
	assert_int_equal(t.cl.n_res, 200);
	/* one request in the system at a time: one allocation in all */
	assert_int_equal(t.cl.n_req_alloc, 1);
	cluster_free(&t.cl);
	ev_engine_free(t.eng);
}

static void test_concurrent_requests_allocate_their_peak(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t);
	for (int round = 0; round < 10; round++) {
		for (uint64_t k = 0; k < 5; k++) {
			uint64_t id = (uint64_t)round * 5 + k;
			uint64_t b[4] = {id * 16 + 1, id * 16 + 2, id * 16 + 3, id * 16 + 4};
			assert_int_equal(cluster_submit(&t.cl, 0, id, 16, 3, b, 4), 0);
		}
		assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	}
	assert_int_equal(t.cl.n_res, 50);
	assert_int_equal(t.cl.n_req_alloc, 5);
	cluster_free(&t.cl);
	ev_engine_free(t.eng);
}

/* A reused request (long output first, then a short one) records what a
 * fresh cluster records for the short one: no gap, block or counter of the
 * earlier request leaks into it. */
static void test_reused_request_starts_clean(void **st)
{
	(void)st;
	toy_t a, b;
	toy_init(&a);
	toy_init(&b);
	one(&a, 7, 40);
	one(&a, 8, 3);
	one(&b, 8, 3);
	assert_int_equal(a.cl.n_req_alloc, 1);
	/* every field but the arrival time (the reused one came later) */
	res_request_t ra = a.cl.res[1], rb = b.cl.res[0];
	assert_int_equal(ra.id, 8);
	assert_int_equal(ra.output_tokens, 3);
	assert_true(ra.tbt_p90_ns > 0);
	ra.arrival_ns = rb.arrival_ns = 0;
	assert_memory_equal(&ra, &rb, sizeof ra);
	cluster_free(&a.cl);
	ev_engine_free(a.eng);
	cluster_free(&b.cl);
	ev_engine_free(b.eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential_requests_reuse_one_allocation),
		cmocka_unit_test(test_concurrent_requests_allocate_their_peak),
		cmocka_unit_test(test_reused_request_starts_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

#include "tests/fixtures/test_main.h"

#include "tests/fixtures/toy_cluster.h"

static void toy_init(toy_t *t)
{
	cluster_params_t p = toy_params(SCHED_VLLM);
	p.kv_blocks = 1000;
	toy_start(t, &p);
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
	assert_int_equal(t.res.n_req, 200);
	/* one request in the system at a time: one allocation in all */
	assert_int_equal(t.cl.n_req_alloc, 1);
	toy_free(&t);
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
	assert_int_equal(t.res.n_req, 50);
	assert_int_equal(t.cl.n_req_alloc, 5);
	toy_free(&t);
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
	res_request_t ra = a.res.req[1], rb = b.res.req[0];
	assert_int_equal(ra.id, 8);
	assert_int_equal(ra.output_tokens, 3);
	assert_true(ra.tbt_p90_ns > 0);
	ra.arrival_ns = rb.arrival_ns = 0;
	assert_memory_equal(&ra, &rb, sizeof ra);
	toy_free(&a);
	toy_free(&b);
}

/* A reused request's block buffer keeps its capacity right when output ids
 * are appended (cluster_req_output_ids): a short request with output ids
 * after a long one, then a long one again, writes within the buffer
 * (checked byte by byte under the sanitizer build). */
static void test_output_ids_keep_the_reused_buffer_in_bounds(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t);
	uint64_t big[20], out[1] = {999};
	for (int k = 0; k < 20; k++)
		big[k] = 500 + (uint64_t)k;
	sim_req_t *r;
	assert_int_equal(cluster_submit(&t.cl, 0, 1, 80, 1, big, 20), 0);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	uint64_t small[2] = {7, 8};
	assert_int_equal(cluster_enqueue(&t.cl, 0, 2, 8, 5, small, 2, &r), 0);
	assert_int_equal(cluster_req_output_ids(&t.cl, r, out, 1), 0);
	assert_true(r->cap_blocks >= r->n_ids);
	assert_int_equal(cluster_kick(&t.cl, 0), 0);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	for (int k = 0; k < 20; k++)
		big[k] += 1000;
	assert_int_equal(cluster_enqueue(&t.cl, 0, 3, 80, 1, big, 20, &r), 0);
	assert_true(r->cap_blocks >= 20);
	assert_true(r->blocks[19] == big[19]);
	assert_int_equal(cluster_kick(&t.cl, 0), 0);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	assert_int_equal(t.cl.n_req_alloc, 1);
	toy_free(&t);
}

TEST_MAIN(cmocka_unit_test(test_sequential_requests_reuse_one_allocation),
          cmocka_unit_test(test_concurrent_requests_allocate_their_peak),
          cmocka_unit_test(test_reused_request_starts_clean),
          cmocka_unit_test(test_output_ids_keep_the_reused_buffer_in_bounds))

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

/* An instance keeps its first CL_RUN_INLINE running requests in its own
 * lines and moves the list to the heap past them, up to the sequence cap:
 * with a cap of 20, 21 requests at once run 20 together and the 21st
 * waits, under every scheduler; the list never holds more room
 * than the cap (cluster_bytes counts that much). */
static void test_running_list_outgrows_the_instance_up_to_the_cap(void **st)
{
	(void)st;
	for (int mode = 0; mode < SCHED_N; mode++) {
		toy_t t;
		cluster_params_t p = toy_params(mode);
		p.kv_blocks = 1000;
		p.max_num_seqs = 20;
		p.resv_tokens_cap = 1000000;
		toy_start(&t, &p);
		for (uint64_t id = 0; id < 21; id++) {
			uint64_t b[4] = {id * 16 + 1, id * 16 + 2, id * 16 + 3, id * 16 + 4};
			assert_int_equal(cluster_submit(&t.cl, 0, id, 16, 5, b, 4), 0);
		}
		/* the first request's 16-token prefill ends at 16 us; the next
		 * iteration takes the other 19 beside it */
		assert_int_equal(ev_engine_run(t.eng, 16001), 0);
		assert_int_equal(t.cl.inst[0].n_run, 20);
		assert_int_equal(t.cl.inst[0].n_wait, 1);
		assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
		assert_int_equal(t.res.n_req, 21);
		assert_true(t.cl.inst[0].cap_run >= 20 && t.cl.inst[0].cap_run <= 20);
		assert_true(t.cl.inst[0].run != t.cl.inst[0].run_inl);
		toy_free(&t);
	}
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
	    cmocka_unit_test(test_running_list_outgrows_the_instance_up_to_the_cap),
          cmocka_unit_test(test_reused_request_starts_clean),
          cmocka_unit_test(test_output_ids_keep_the_reused_buffer_in_bounds))

/* The placement and replication bound (sim/run/bound.h): per instance
 * min(MIN + copy budget, lookups - the cluster's first touches), on a hand
 * scenario worked out below, and in a run: with unlimited bandwidth it is
 * the cluster's compulsory-miss bound, with none it is MIN, and the
 * network's cost is their difference. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/run/bound.h"
#include "tests/fixtures/sim_fixture.h"

/* Two instances of 4 blocks, requests in this order:
 *   10 -> 0: look up 1 2          first touches of 1, 2: misses anywhere
 *   11 -> 1: look up 1 2          MIN misses (not here before); reusable 2
 *   12 -> 0: look up 1 2, put 3   MIN hits 2
 *   13 -> 0: look up 2            never admitted: not counted
 *   15 -> 1: look up 3            reusable (put on 0 before); MIN misses
 * Instance 0: L 4, first 2, MIN 2; instance 1: L 3, first 0, MIN 0. With
 * one copy each: min(2+1, 2) + min(0+1, 3) = 3; unlimited: 2 + 3 = 5;
 * none: MIN's 2. */
static bound_stream_t *hand_stream(void)
{
	bound_stream_t *b = bound_new(2);
	assert_non_null(b);
	const uint64_t x[] = {1, 2, 3};
	assert_int_equal(bound_record(b, 0, 10, 0, x, 2, 0), 0);
	assert_int_equal(bound_record(b, 1, 11, 1, x, 2, 0), 0);
	assert_int_equal(bound_record(b, 0, 12, 2, x, 2, 1), 0);
	assert_int_equal(bound_record(b, 0, 13, 3, x + 1, 1, 0), 0);
	assert_int_equal(bound_record(b, 1, 15, 4, x + 2, 1, 0), 0);
	assert_int_equal(bound_record(b, 2, 16, 5, x, 2, 0), KS_EINPUT);
	return b;
}

static void test_place_bound_hand_scenario(void **st)
{
	(void)st;
	bound_stream_t *b = hand_stream();
	res_request_t rows[5] = {{.id = 10, .queue_ns = 0},
	                         {.id = 11, .queue_ns = 5},
	                         {.id = 12, .queue_ns = 0},
	                         {.id = 13, .queue_ns = -1},
	                         {.id = 15, .queue_ns = 1}};
	const uint32_t cap[2] = {4, 4};
	const double budget[] = {1, 1.9, -1, 0};
	const uint64_t place[] = {3, 3, 5, 2};
	for (int k = 0; k < 4; k++) {
		bound_out_t o;
		assert_int_equal(bound_compute(b, rows, 5, cap, budget[k], &o), 0);
		assert_int_equal(o.lookups, 7);
		assert_int_equal(o.min_hits, 2);
		assert_int_equal(o.reusable, 5);
		assert_int_equal(o.place_hits, place[k]);
	}
	/* a request with no admitted row is left out of everything */
	rows[4].queue_ns = -1;
	bound_out_t o;
	assert_int_equal(bound_compute(b, rows, 5, cap, -1, &o), 0);
	assert_int_equal(o.lookups, 6);
	assert_int_equal(o.reusable, 4);
	bound_free(b);
}

static void assert_near(double a, double b, double eps)
{
	if (!(fabs(a - b) <= eps))
		fail_msg("%.17g is not within %g of %.17g", a, eps, b);
}

/* 12 sequential requests on 2 instances sharing 20 blocks, each with one
 * of its own: 252 lookups, 32 distinct blocks, so one infinite cache hits
 * 220 of them whatever the routing. */
static sim_results_t run_shared(const char *bw)
{
	sf_prefix_t p = sf_prefix(12, 20, 7000, 90000, 8);
	p.gap_ns = 2000000000;
	sim_source_t src = {sf_prefix_next, &p, "seq"};
	const char *sets[] = {"cluster.nodes=1",
	                      "cluster.gpus_per_node=2",
	                      "cluster.tp=1",
	                      "cluster.kv_blocks=4000",
	                      "kvcache.block_tokens=16",
	                      "policy.routing.name=round_robin",
	                      "output.oracle_bound=true",
	                      bw};
	return sf_run_source(NULL, sets, 8, &src);
}

static void test_place_bound_in_a_run_spans_min_to_compulsory(void **st)
{
	(void)st;
	sim_results_t unl = run_shared("output.bound_bw_gbps=0");
	sim_results_t tiny = run_shared("output.bound_bw_gbps=1e-12"); /* < one block in the run */
	double first_touch = 220.0 / 252.0;
	assert_near(sim_results_get(&unl, "bound.place_unlimited_hit_rate_blocks"), first_touch,
	            1e-12);
	assert_near(sim_results_get(&unl, "bound.place_hit_rate_blocks"), first_touch, 1e-12);
	assert_near(sim_results_get(&unl, "bound.network_cost_blocks"), 0, 0);
	/* round robin splits the prefix over both instances: MIN on each
	 * misses it once per instance, copies could save the second */
	double min = sim_results_get(&tiny, "bound.belady_hit_rate_blocks");
	assert_near(min, 200.0 / 252.0, 1e-12);
	assert_near(sim_results_get(&tiny, "bound.place_hit_rate_blocks"), min, 1e-12);
	assert_near(sim_results_get(&tiny, "bound.network_cost_blocks"), first_touch - min, 1e-12);
	assert_near(sim_results_get(&tiny, "bound.place_gap_blocks"),
	            min - sim_results_get(&tiny, "hit_rate_blocks"), 1e-12);
	sim_results_free(&unl);
	sim_results_free(&tiny);
}

TEST_MAIN(cmocka_unit_test(test_place_bound_hand_scenario),
          cmocka_unit_test(test_place_bound_in_a_run_spans_min_to_compulsory))

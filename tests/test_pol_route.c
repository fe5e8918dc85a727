/* Routing policies on hand-built clusters whose right answer is worked out
 * in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/pol_fake.h"

static pol_handle_t open_route(const char *name, const char *over)
{
	pol_handle_t h;
	err_t e = {0};
	int rc = pol_open(NULL, POL_ROUTING, name, over, 7, &h, &e);
	if (rc)
		fail_msg("%s", e.msg);
	return h;
}

static uint32_t route(pol_handle_t *h, fake_t *f, const pol_req_t *r, int *rc)
{
	const struct pol_routing_ops *o = (const void *)h->ops;
	uint32_t inst = UINT32_MAX;
	int x = o->route(h->state, &f->v, r, &inst);
	if (rc)
		*rc = x;
	else
		assert_int_equal(x, POL_ACCEPT);
	return inst;
}

static uint64_t R[8];
static pol_req_t req8(void)
{
	fk_chain(R, 8, 1000);
	return (pol_req_t){1, 0, R, 8, 128, 16, 0};
}

static void test_round_robin_cycles(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_handle_t h = open_route("round_robin", NULL);
	pol_req_t r = req8();
	uint32_t want[] = {0, 1, 2, 0, 1};
	for (int i = 0; i < 5; i++)
		assert_int_equal(route(&h, &f, &r, NULL), want[i]);
	pol_close(&h);
}

static void test_random_is_seeded_and_in_range(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 5, 16, 1);
	pol_handle_t a = open_route("random", NULL), b = open_route("random", NULL);
	pol_req_t r = req8();
	int seen[5] = {0};
	for (int i = 0; i < 200; i++) {
		uint32_t x = route(&a, &f, &r, NULL), y = route(&b, &f, &r, NULL);
		assert_int_equal(x, y);
		assert_true(x < 5);
		seen[x]++;
	}
	for (int i = 0; i < 5; i++)
		assert_true(seen[i] > 10);
	pol_close(&a);
	pol_close(&b);
}

static void test_least_load_metrics(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_req_t r = req8();
	/* requests: 5, 2, 3; tokens: 100, 900, 50; delay: 30, 20, 10 */
	f.inst[0] = (pol_inst_t){.waiting = 5, .prefill_tokens = 100, .queue_delay_ns = 30};
	f.inst[1] = (pol_inst_t){.running = 2, .decode_tokens = 900, .queue_delay_ns = 20};
	f.inst[2] = (pol_inst_t){.waiting = 3, .prefill_tokens = 50, .queue_delay_ns = 10};
	pol_handle_t h = open_route("least_load", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
	h = open_route("least_load", "load_metric=tokens");
	assert_int_equal(route(&h, &f, &r, NULL), 2);
	pol_close(&h);
	h = open_route("least_load", "load_metric=delay");
	assert_int_equal(route(&h, &f, &r, NULL), 2);
	pol_close(&h);
}

/* Instance 1 holds the whole 8-block prompt, instance 0 nothing. */
static void test_cache_aware_switches_to_least_load_exactly_past_abs_threshold(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 8);
	pol_handle_t h = open_route("cache_aware", NULL); /* abs 32, rel 1.0001 */
	f.inst[0].waiting = 8;
	f.inst[1].waiting = 40; /* max - min = 32: not > 32, balanced: cache wins */
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	f.inst[1].waiting = 41; /* 33 > 32 and 41 > 8.0008: imbalanced */
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
}

static void test_cache_aware_relative_threshold_must_also_hold(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 8);
	pol_handle_t h =
	    open_route("cache_aware", "balance_abs_threshold=0,balance_rel_threshold=2");
	f.inst[0].running = 10;
	f.inst[1].running = 20; /* 20 > 2 x 10? no: balanced */
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	f.inst[1].running = 21; /* 21 > 20: imbalanced */
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
}

static void test_cache_aware_low_match_goes_to_smallest_tree(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 4); /* ratio 4/8 = 0.5: not > 0.5 */
	f.inst[0].kv_used_blocks = 300;
	f.inst[1].kv_used_blocks = 200;
	f.inst[2].kv_used_blocks = 100;
	pol_handle_t h = open_route("cache_aware", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 2);
	f.held_n[1][0] = 5; /* 5/8 > 0.5: longest match */
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
}

/* 128-token prompt (8 blocks of 16). Instance 0: nothing cached, idle:
 * cost = 8 + 0. Instance 1: all cached, 160 active tokens = 10 blocks:
 * cost = 0 + 10. Weight 1 picks 0; weight 2 makes 0 cost 16 and picks 1. */
static void test_kv_cost_weighs_prefill_against_active_blocks(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 8);
	f.inst[1].decode_tokens = 100;
	f.inst[1].prefill_tokens = 60;
	pol_handle_t h = open_route("kv_cost", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
	h = open_route("kv_cost", "overlap_score_weight=2");
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
}

/* inst 0: queue 0 -> 1, kv free 1, prefix 0: 2 + 2 + 0 = 4.
 * inst 1: queue 10 -> 0, kv free 0.6, prefix 1: 0 + 1.2 + 3 = 4.2 -> 1.
 * prefix weight 1: inst 1 scores 2.2 < 4 -> 0. */
static void test_weighted_score_sums_llmd_scorers(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 8);
	f.inst[1].waiting = 10;
	f.inst[1].kv_used_blocks = 400;
	pol_handle_t h = open_route("weighted_score", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
	h = open_route("weighted_score", "prefix_weight=1");
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
}

/* 128-token prompt. 5 cached blocks = 80 tokens > 48 new: exploit inst 1
 * however loaded. 3 cached = 48 < 80 new: explore by queue + prefill:
 * inst 0 = 0 + 128 x 100 = 12800, inst 1 = 10000 + 80 x 100 = 18000. */
static void test_preble_exploits_only_when_cached_exceeds_new(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 5);
	f.inst[1].waiting = 50;
	f.inst[1].queue_delay_ns = 10000;
	pol_handle_t h = open_route("preble", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	f.held_n[1][0] = 3;
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
}

/* inst 0 holds the prompt but queues 20000 ns: TTFT 20000. inst 1 is idle:
 * recompute 12800 or fetch 8 blocks (8000) + no prefill = 8000: picks 1.
 * With early rejection and SLO 5000 the best 8000 misses: rejected. */
static void test_min_ttft_prefers_fetch_and_rejects_past_slo(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 0, R, 8);
	f.inst[0].queue_delay_ns = 20000;
	pol_handle_t h = open_route("min_ttft", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
	h = open_route("min_ttft", "ttft_early_reject=true,ttft_slo_ms=0.005");
	int rc;
	route(&h, &f, &r, &rc);
	assert_int_equal(rc, POL_REJECT);
	r.slo_ttft_ns = 10000; /* the request's own SLO wins */
	assert_int_equal(route(&h, &f, &r, &rc), 1);
	assert_int_equal(rc, POL_ACCEPT);
	pol_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_robin_cycles),
	    cmocka_unit_test(test_random_is_seeded_and_in_range),
	    cmocka_unit_test(test_least_load_metrics),
	    cmocka_unit_test(test_cache_aware_switches_to_least_load_exactly_past_abs_threshold),
	    cmocka_unit_test(test_cache_aware_relative_threshold_must_also_hold),
	    cmocka_unit_test(test_cache_aware_low_match_goes_to_smallest_tree),
	    cmocka_unit_test(test_kv_cost_weighs_prefill_against_active_blocks),
	    cmocka_unit_test(test_weighted_score_sums_llmd_scorers),
	    cmocka_unit_test(test_preble_exploits_only_when_cached_exceeds_new),
	    cmocka_unit_test(test_min_ttft_prefers_fetch_and_rejects_past_slo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

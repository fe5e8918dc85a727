/* Routing policies on hand-built clusters whose right answer is worked out
 * in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/fixtures/cfg_fixture.h"
#include "tests/fixtures/pol_fake.h"

static pol_handle_t open_route_seed(const char *name, const char *over, uint64_t seed)
{
	return fk_open(POL_ROUTING, name, over, seed);
}

static pol_handle_t open_route(const char *name, const char *over)
{
	return open_route_seed(name, over, 7);
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
	/* two routers from the same seed draw the same instances */
	pol_handle_t h[2] = {open_route("random", NULL), open_route("random", NULL)};
	pol_req_t r = req8();
	int seen[5] = {0};
	for (int i = 0; i < 200; i++) {
		uint32_t x = route(&h[0], &f, &r, NULL), y = route(&h[1], &f, &r, NULL);
		assert_int_equal(x, y);
		assert_true(x < 5);
		seen[x]++;
	}
	for (int i = 0; i < 5; i++)
		assert_true(seen[i] > 10);
	for (int k = 0; k < 2; k++)
		pol_close(&h[k]);
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

static uint64_t tree_sizes(void *c, uint32_t i)
{
	(void)c;
	return 10 * (uint64_t)(i + 1); /* 10, 20, 30: the reverse of kv_used below */
}

/* The smallest tree is the view's held_blocks (the routers' own tree in the
 * routed view, as sgl-router's get_smallest_tenant), not resident KV; a view
 * without held_blocks (ABI 1) falls back to kv_used_blocks. */
static void test_cache_aware_smallest_tree_reads_the_view(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_req_t r = req8();
	f.inst[0].kv_used_blocks = 300;
	f.inst[1].kv_used_blocks = 200;
	f.inst[2].kv_used_blocks = 100;
	f.v.held_blocks = tree_sizes;
	pol_handle_t h = open_route("cache_aware", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 0);
	f.v.held_blocks = NULL;
	assert_int_equal(route(&h, &f, &r, NULL), 2);
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
	h = open_route("min_ttft", "ttft_early_reject=true");
	int rc;
	r.slo_ttft_ns = 0; /* no SLO: nothing to miss */
	assert_int_equal(route(&h, &f, &r, &rc), 1);
	assert_int_equal(rc, POL_ACCEPT);
	r.slo_ttft_ns = 5000; /* [slo] ttft_ms, carried by the request */
	route(&h, &f, &r, &rc);
	assert_int_equal(rc, POL_REJECT);
	r.slo_ttft_ns = 10000;
	assert_int_equal(route(&h, &f, &r, &rc), 1);
	assert_int_equal(rc, POL_ACCEPT);
	pol_close(&h);
}

/* Copies cost 1000 ns a block per instance of distance |s - d| + 1. */
static int64_t xfer_by_distance(void *c, uint32_t s, uint32_t d, uint32_t n)
{
	(void)c;
	return (int64_t)n * 1000 * (1 + (s > d ? s - d : d - s));
}

/* The best prefix (8 blocks) is held on 0 and 2, half of it on 1, none on
 * 3; prefill 1000 ns a token. 3 fetches from its nearest holder, 2
 * (8 x 2000 = 16000, not 32000 from 0), 1 fetches its missing half from
 * either (4 x 2000 = 8000 < 64 x 1000); the holders hold it all (0). */
static void test_ttft_estimates_fetch_from_the_nearest_best_holder(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	f.ns_per_token = 1000;
	f.v.xfer_ns = xfer_by_distance;
	pol_req_t r = req8();
	fk_hold(&f, 0, R, 8);
	fk_hold(&f, 1, R, 4);
	fk_hold(&f, 2, R, 8);
	uint32_t m[4], h[4];
	int64_t est[4];
	assert_int_equal(pol_view_ttft_all(&f.v, &r, m, est, h), 0);
	assert_int_equal(pol_view_best_holders(&f.v, m, 8, h), 2);
	assert_int_equal(h[0], 0);
	assert_int_equal(h[1], 2);
	int64_t want[4] = {0, 8000, 0, 16000};
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(est[i], want[i]);
		assert_int_equal(pol_view_ttft_ns(&f.v, &r, m, 8, h, 2, i, 0), want[i]);
	}
	assert_int_equal(pol_view_best_holders(&f.v, m, 0, h), 0); /* no prefix: none */
}

/* Every router that breaks ties at random (all but round_robin). */
static const char *const tie_routers[] = {"least_load", "cache_aware", "kv_cost", "weighted_score",
                                          "preble",     "min_ttft",    "random",  "power_of_two"};
#define N_TIE_ROUTERS (sizeof tie_routers / sizeof tie_routers[0])

/* Four identical idle instances, nothing cached, 4000 requests: each
 * router spreads them uniformly (chi-square with 3 degrees of freedom below
 * 16.27, p = 0.001), instance 0 does not take them all (the old strict
 * comparisons sent every one there), and the choices depend only on the
 * seed: the same seed repeats them, another seed does not. */
static void test_every_router_spreads_equal_instances_uniformly(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	pol_req_t r = req8();
	const unsigned n = 4000;
	for (size_t k = 0; k < N_TIE_ROUTERS; k++) {
		static const uint64_t seed[3] = {5, 5, 6}; /* the same twice, then another */
		pol_handle_t h[3];
		for (int s = 0; s < 3; s++)
			h[s] = open_route_seed(tie_routers[k], NULL, seed[s]);
		unsigned cnt[4] = {0}, differ = 0;
		for (unsigned j = 0; j < n; j++) {
			uint32_t x = route(&h[0], &f, &r, NULL);
			assert_true(x < 4);
			assert_int_equal(route(&h[1], &f, &r, NULL), x);
			differ += route(&h[2], &f, &r, NULL) != x;
			cnt[x]++;
		}
		double e = n / 4.0, chi2 = 0;
		for (int i = 0; i < 4; i++)
			chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
		printf("%-15s %u %u %u %u chi2 %.2f\n", tie_routers[k], cnt[0], cnt[1], cnt[2],
		       cnt[3], chi2);
		assert_true(cnt[0] < n);
		assert_true(chi2 < 16.27);
		assert_true(differ > 0);
		for (int s = 0; s < 3; s++)
			pol_close(&h[s]);
	}
}

/* power_of_two on loads 0 < 1 < 2 < 3 (running requests), 6000 requests.
 * Of the 6 equally likely pairs of distinct instances, 0 wins the 3 it is
 * in, 1 wins {1,2} and {1,3}, 2 wins {2,3}: shares 1/2, 1/3, 1/6, 0 (chi-square,
 * 2 degrees of freedom, below 13.82 at p = 0.001). The most loaded never
 * wins, as it would if both samples could be the same instance. With equal
 * loads it is among tie_routers above. One instance: that one. */
static void test_power_of_two_takes_the_less_loaded_of_two_distinct_samples(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	for (uint32_t i = 0; i < 4; i++)
		f.inst[i].running = i;
	pol_req_t r = req8();
	pol_handle_t h = open_route("power_of_two", NULL);
	const unsigned n = 6000;
	unsigned cnt[4] = {0};
	for (unsigned j = 0; j < n; j++)
		cnt[route(&h, &f, &r, NULL)]++;
	pol_close(&h);
	const double p[3] = {3 / 6.0, 2 / 6.0, 1 / 6.0};
	double chi2 = 0;
	for (int i = 0; i < 3; i++)
		chi2 += (cnt[i] - n * p[i]) * (cnt[i] - n * p[i]) / (n * p[i]);
	printf("power_of_two %u %u %u %u chi2 %.2f\n", cnt[0], cnt[1], cnt[2], cnt[3], chi2);
	assert_int_equal(cnt[3], 0);
	assert_true(chi2 < 13.82);
	fk_init(&f, 1, 16, 1);
	h = open_route("power_of_two", NULL);
	for (int j = 0; j < 10; j++)
		assert_int_equal(route(&h, &f, &r, NULL), 0);
	pol_close(&h);
}

/* A built-in router's name reaches [policy.routing] name's choices from the
 * built-in list alone, and a config naming it opens it. */
static void test_power_of_two_is_selectable_from_a_config(void **st)
{
	(void)st;
	const char *sets[] = {"policy.routing.name=power_of_two"};
	cfg_schema_t *s;
	cfg_t *c = cf_default_with(&s, sets, 1);
	err_t e = {0};
	pol_handle_t h;
	assert_int_equal(pol_open_cfg(NULL, POL_ROUTING, c, 9, &h, &e), 0);
	assert_string_equal(h.ops->name, "power_of_two");
	pol_close(&h);
	cfg_free(c);
	cfg_schema_free(s);
}

/* Instances equal on every router's own score but for their request
 * counts (3, 1, 3, 2 running, nothing waiting, no tokens): the one with the
 * fewest requests wins, before any draw. */
static void test_ties_go_to_the_lower_load_first(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 4, 16, 1);
	pol_req_t r = req8();
	uint32_t running[4] = {3, 1, 3, 2};
	for (int i = 0; i < 4; i++)
		f.inst[i].running = running[i];
	const char *const names[] = {"kv_cost", "weighted_score", "cache_aware", "preble",
	                             "min_ttft"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		pol_handle_t h = open_route(names[k], NULL);
		for (int j = 0; j < 50; j++)
			assert_int_equal(route(&h, &f, &r, NULL), 1);
		pol_close(&h);
	}
	pol_handle_t h = open_route("least_load", "load_metric=tokens");
	for (int j = 0; j < 50; j++)
		assert_int_equal(route(&h, &f, &r, NULL), 1);
	pol_close(&h);
}

/* Two instances holding the prompt equally: the less loaded one gets it,
 * and with equal loads both get requests. */
static void test_cache_aware_equal_matches_go_by_load_then_at_random(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 1, R, 8);
	fk_hold(&f, 2, R, 8);
	f.inst[1].waiting = 4;
	f.inst[2].waiting = 3;
	pol_handle_t h = open_route("cache_aware", NULL);
	assert_int_equal(route(&h, &f, &r, NULL), 2);
	f.inst[1].waiting = 3;
	unsigned c[3] = {0};
	for (int j = 0; j < 200; j++)
		c[route(&h, &f, &r, NULL)]++;
	assert_int_equal(c[0], 0);
	assert_true(c[1] > 50 && c[2] > 50);
	pol_close(&h);
}

#define BTB "balance_rule=btb,balance_abs_threshold=64,balance_rel_threshold=1.5"

/* Loads 65 (holding the prompt) and 40: max - min = 25 is not past 64, so
 * sglang's rule stays balanced and follows the cache; btb's compares the
 * absolute max: 65 > 64 and 65 > 1.5 x 40 = 60, imbalanced: least load.
 * At 59 on instance 1, 65 < 88.5: balanced again, the cache wins. */
static void test_cache_aware_btb_imbalance_uses_absolute_max(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 0, R, 8);
	f.inst[0].waiting = 65;
	f.inst[1].waiting = 40;
	pol_handle_t s = open_route(
	    "cache_aware", "balance_abs_threshold=64,balance_rel_threshold=1.5,cache_threshold=0");
	pol_handle_t b = open_route("cache_aware", BTB);
	assert_int_equal(route(&s, &f, &r, NULL), 0);
	assert_int_equal(route(&b, &f, &r, NULL), 1);
	f.inst[1].waiting = 59;
	assert_int_equal(route(&b, &f, &r, NULL), 0);
	pol_close(&s);
	pol_close(&b);
}

/* Nothing matches anywhere: btb goes to the least loaded instance (1),
 * where sglang's rule picks the smallest tree (2). A one-block match of an
 * eight-block prompt (ratio 1/8, below sglang's cache_threshold) still wins
 * under btb, which has no threshold. */
static void test_cache_aware_btb_unmatched_goes_to_least_loaded(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	pol_req_t r = req8();
	f.inst[0].running = 5;
	f.inst[1].running = 2;
	f.inst[2].running = 7;
	f.inst[0].kv_used_blocks = 300;
	f.inst[1].kv_used_blocks = 200;
	f.inst[2].kv_used_blocks = 100;
	pol_handle_t s = open_route("cache_aware", NULL);
	pol_handle_t b = open_route("cache_aware", BTB);
	assert_int_equal(route(&s, &f, &r, NULL), 2);
	assert_int_equal(route(&b, &f, &r, NULL), 1);
	fk_hold(&f, 0, R, 1);
	assert_int_equal(route(&s, &f, &r, NULL), 2);
	assert_int_equal(route(&b, &f, &r, NULL), 0);
	pol_close(&s);
	pol_close(&b);
}

/* Instance 0 holds 3 blocks in HBM; instance 1 holds 2 in HBM and blocks
 * 2..5 in its node's host tier: a leading run of 6 present in either tier.
 * btb counts both and picks 1; sglang's rule (HBM only) picks 0. Without
 * match_host (a view built before ABI 2) btb falls back to HBM: 0. */
static void test_cache_aware_btb_counts_host_tier_match(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	pol_req_t r = req8();
	fk_hold(&f, 0, R, 3);
	fk_hold(&f, 1, R, 2);
	static uint64_t H[6];
	for (int i = 0; i < 6; i++)
		H[i] = i >= 2 ? R[i] : 0; /* positions 0, 1 not in host */
	fk_hold_host(&f, 1, H, 6);
	pol_handle_t s = open_route("cache_aware", "cache_threshold=0");
	pol_handle_t b = open_route("cache_aware", BTB);
	assert_int_equal(route(&s, &f, &r, NULL), 0);
	assert_int_equal(route(&b, &f, &r, NULL), 1);
	f.v.match_host = NULL;
	assert_int_equal(route(&b, &f, &r, NULL), 0);
	pol_close(&s);
	pol_close(&b);
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
	    cmocka_unit_test(test_cache_aware_smallest_tree_reads_the_view),
	    cmocka_unit_test(test_kv_cost_weighs_prefill_against_active_blocks),
	    cmocka_unit_test(test_weighted_score_sums_llmd_scorers),
	    cmocka_unit_test(test_preble_exploits_only_when_cached_exceeds_new),
	    cmocka_unit_test(test_min_ttft_prefers_fetch_and_rejects_past_slo),
	    cmocka_unit_test(test_ttft_estimates_fetch_from_the_nearest_best_holder),
	    cmocka_unit_test(test_every_router_spreads_equal_instances_uniformly),
	    cmocka_unit_test(test_ties_go_to_the_lower_load_first),
	    cmocka_unit_test(test_cache_aware_equal_matches_go_by_load_then_at_random),
	    cmocka_unit_test(test_cache_aware_btb_imbalance_uses_absolute_max),
	    cmocka_unit_test(test_cache_aware_btb_unmatched_goes_to_least_loaded),
	    cmocka_unit_test(test_cache_aware_btb_counts_host_tier_match),
	    cmocka_unit_test(test_power_of_two_takes_the_less_loaded_of_two_distinct_samples),
	    cmocka_unit_test(test_power_of_two_is_selectable_from_a_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* least_load and cache_aware read the view's least_loaded (policies/pol.h)
 * when the simulator gives it: least_load by requests picks among the
 * instances it returns, one uniform draw from its own stream among them,
 * without reading any instance; other metrics keep the scan;
 * cache_aware's imbalance rule takes its min and max load from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "policies/pol.h"
#include "tests/fixtures/cfg_fixture.h"
#include "tests/fixtures/pol_fake.h"
#include "tests/fixtures/test_main.h"

/* A least-loaded answer that disagrees with the fake's instances, so a
 * router reading the instances instead is caught. */
static uint32_t ll_set[4] = {5, 2, 7, 3};
static uint32_t ll_n;
static uint64_t ll_min, ll_max;
static int ll_calls;

static const uint32_t *fk_least(void *c, uint32_t *count, uint64_t *mn, uint64_t *mx)
{
	(void)c;
	ll_calls++;
	*count = ll_n;
	*mn = ll_min;
	*mx = ll_max;
	return ll_set;
}

static void fk_inst_unread(void *c, uint32_t i, pol_inst_t *out)
{
	(void)c;
	(void)i;
	(void)out;
	fail_msg("least_load by requests read an instance despite least_loaded");
}

/* least_load (seed) on 8 fake instances the router must not read, with
 * least_loaded set. */
static pol_handle_t open_unread(fake_t *f, uint64_t seed)
{
	fk_init(f, 8, 16, 1);
	f->v.least_loaded = fk_least;
	f->v.inst = fk_inst_unread;
	return fk_open(POL_ROUTING, "least_load", NULL, seed);
}

static uint32_t route_once(pol_handle_t *h, fake_t *f)
{
	static uint64_t b[2] = {1, 2};
	pol_req_t r = {1, 0, b, 2, 64, 8, 0};
	uint32_t inst = UINT32_MAX;
	const struct pol_routing_ops *o = (const void *)h->ops;
	assert_int_equal(o->route(h->state, &f->v, &r, &inst), POL_ACCEPT);
	return inst;
}

/* Over 3,000 routes every one of the four tied instances wins, each about
 * a quarter of the time; one tied instance wins always (no draw needed). */
static void test_least_load_picks_uniformly_among_the_views_least_loaded(void **st)
{
	(void)st;
	fake_t f;
	pol_handle_t h = open_unread(&f, 7);
	ll_n = 4;
	uint32_t wins[8] = {0};
	for (int k = 0; k < 3000; k++)
		wins[route_once(&h, &f)]++;
	for (uint32_t i = 0; i < 8; i++) {
		int tied = i == 5 || i == 2 || i == 7 || i == 3;
		if (!tied)
			assert_int_equal(wins[i], 0);
		else
			assert_true(wins[i] > 600 && wins[i] < 900);
	}
	ll_n = 1;
	for (int k = 0; k < 10; k++)
		assert_int_equal(route_once(&h, &f), 5);
	pol_close(&h);
}

/* The same seed gives the same picks, and the picks are those of one
 * gsl_rng_uniform_int over the tied set per route from the policy's seed
 * (mt19937, as pol_rng_new makes it). */
static void test_least_load_draws_once_per_route_from_its_seed(void **st)
{
	(void)st;
	fake_t f;
	pol_handle_t h = open_unread(&f, 9);
	gsl_rng *ref = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(ref);
	gsl_rng_set(ref, 9);
	ll_n = 3;
	for (int k = 0; k < 200; k++)
		assert_int_equal(route_once(&h, &f), ll_set[gsl_rng_uniform_int(ref, 3)]);
	gsl_rng_free(ref);
	pol_close(&h);
}

/* load_metric = tokens scans the instances (least_loaded counts requests). */
static void test_least_load_by_tokens_keeps_the_scan(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 3, 16, 1);
	f.v.least_loaded = fk_least;
	ll_n = 1; /* says 5: not an instance here */
	f.inst[0] = (pol_inst_t){.prefill_tokens = 100};
	f.inst[1] = (pol_inst_t){.decode_tokens = 900};
	f.inst[2] = (pol_inst_t){.prefill_tokens = 50};
	pol_handle_t h = fk_open(POL_ROUTING, "least_load", "load_metric=tokens", 7);
	ll_calls = 0;
	assert_int_equal(route_once(&h, &f), 2);
	assert_int_equal(ll_calls, 0);
	pol_close(&h);
}

/* cache_aware's imbalance rule reads min and max from least_loaded: the
 * instances say balanced (8 and 8), the view says 8 and 41 (imbalanced:
 * 33 > 32), and the least-loaded instance 0 wins over the cached 1. */
static void test_cache_aware_imbalance_reads_least_loaded(void **st)
{
	(void)st;
	fake_t f;
	fk_init(&f, 2, 16, 1);
	uint64_t b[8];
	fk_chain(b, 8, 1000);
	fk_hold(&f, 1, b, 8);
	f.inst[0].waiting = 8;
	f.inst[1].waiting = 9;
	pol_req_t r = {1, 0, b, 8, 128, 16, 0};
	pol_handle_t h = fk_open(POL_ROUTING, "cache_aware", NULL, 7);
	const struct pol_routing_ops *o = (const void *)h.ops;
	uint32_t inst = UINT32_MAX;
	assert_int_equal(o->route(h.state, &f.v, &r, &inst), POL_ACCEPT);
	assert_int_equal(inst, 1); /* no least_loaded: the scan, balanced */
	f.v.least_loaded = fk_least;
	ll_n = 1;
	ll_min = 8;
	ll_max = 41;
	ll_calls = 0;
	assert_int_equal(o->route(h.state, &f.v, &r, &inst), POL_ACCEPT);
	assert_int_equal(inst, 0);
	assert_true(ll_calls > 0);
	pol_close(&h);
}

TEST_MAIN(cmocka_unit_test(test_least_load_picks_uniformly_among_the_views_least_loaded),
          cmocka_unit_test(test_least_load_draws_once_per_route_from_its_seed),
          cmocka_unit_test(test_least_load_by_tokens_keeps_the_scan),
          cmocka_unit_test(test_cache_aware_imbalance_reads_least_loaded))

/* The view's candidates (policies/pol.h pol_view_t.candidates): when the
 * view names the instances that may hold a prefix, pol_view_best_match,
 * pol_view_holders and the routers' match scan (cache_aware) ask only
 * those instances, and answer as a scan of every instance does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/fixtures/pol_fake.h"
#include "tests/fixtures/test_main.h"

#define N 16

static unsigned match_calls;
static const uint32_t holders[] = {5, 11};
static uint32_t n_holders = 2;

static uint32_t counted_match(void *c, uint32_t i, const uint64_t *b, uint32_t n)
{
	match_calls++;
	return fk_match(c, i, b, n);
}

static const uint32_t *fk_candidates(void *c, const uint64_t *b, uint32_t n, uint32_t *count)
{
	(void)c;
	(void)b;
	(void)n;
	*count = n_holders;
	return n_holders ? holders : NULL;
}

static uint64_t R[8];

/* N idle instances; R's 8 blocks on 5 (all) and 11 (the first 4). */
static void fake(fake_t *f, int with_candidates)
{
	fk_init(f, N, 16, 1);
	fk_chain(R, 8, 700);
	fk_hold(f, 5, R, 8);
	fk_hold(f, 11, R, 4);
	f->v.match = counted_match;
	f->v.candidates = with_candidates ? fk_candidates : NULL;
	n_holders = 2;
	match_calls = 0;
}

static void test_best_match_asks_only_candidates(void **st)
{
	(void)st;
	fake_t f;
	uint32_t inst;
	fake(&f, 1);
	assert_int_equal(pol_view_best_match(&f.v, R, 8, &inst), 8);
	assert_int_equal(inst, 5);
	assert_int_equal(match_calls, 2);
	/* without candidates every instance is asked in order, each first for
	 * the one block that would beat the best so far (instances 0-4: one
	 * call each), 5 then for the whole prefix, and once a holder of all 8
	 * is found nobody else can beat it */
	fake(&f, 0);
	assert_int_equal(pol_view_best_match(&f.v, R, 8, &inst), 8);
	assert_int_equal(inst, 5);
	assert_int_equal(match_calls, 5 + 2);
}

static void test_holders_from_candidates(void **st)
{
	(void)st;
	fake_t f;
	uint32_t out[4];
	fake(&f, 1);
	assert_int_equal(pol_view_holders(&f.v, R, 8, 1, out, 4), 2);
	assert_int_equal(out[0], 5);
	assert_int_equal(out[1], 11);
	assert_int_equal(match_calls, 2);
	assert_int_equal(pol_view_holders(&f.v, R, 8, 8, out, 4), 1);
	/* no candidate: nobody holds it, and nobody is asked */
	n_holders = 0;
	match_calls = 0;
	assert_int_equal(pol_view_best_match(&f.v, R, 8, &out[0]), 0);
	assert_int_equal(out[0], UINT32_MAX);
	assert_int_equal(match_calls, 0);
}

/* cache_aware picks the longest match; with candidates it asks 2
 * instances instead of N and picks the same one for the same seed. */
static void test_cache_aware_scans_candidates_only(void **st)
{
	(void)st;
	uint32_t pick[2];
	unsigned calls[2];
	for (int c = 0; c < 2; c++) {
		fake_t f;
		fake(&f, c);
		pol_handle_t h = fk_open(POL_ROUTING, "cache_aware", NULL, 3);
		const struct pol_routing_ops *ro = (const void *)h.ops;
		pol_req_t r = {1, 0, R, 8, 128, 16, 0};
		assert_int_equal(ro->route(h.state, &f.v, &r, &pick[c]), POL_ACCEPT);
		calls[c] = match_calls;
		pol_close(&h);
	}
	assert_int_equal(pick[0], 5);
	assert_int_equal(pick[1], 5);
	assert_int_equal(calls[0], N);
	assert_int_equal(calls[1], 2);
}

/* pol_view_best_match and pol_view_holds, which ask one block before a
 * whole prefix, answer as full matches of every instance do: random
 * prefixes of one chain (and some of their blocks dropped, so that an
 * instance holds a block without those before it) on every instance. */
static void test_shortcuts_answer_as_full_matches(void **st)
{
	(void)st;
	static uint64_t chain[24], gappy[N][24];
	uint64_t x = 12345;
	fk_chain(chain, 24, 900);
	for (int trial = 0; trial < 200; trial++) {
		fake_t f;
		fk_init(&f, N, 16, 1);
		for (uint32_t i = 0; i < N; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			uint32_t len = (uint32_t)(x >> 33) % 25, drop = (uint32_t)(x >> 20) % 30;
			memcpy(gappy[i], chain, sizeof chain);
			if (drop < len)
				gappy[i][drop] = 1; /* a hole: blocks after it held alone */
			if (len)
				fk_hold(&f, i, gappy[i], len);
		}
		uint32_t n = 1 + (uint32_t)(x >> 40) % 24, best = 0, where = UINT32_MAX, inst;
		for (uint32_t i = 0; i < N; i++) {
			uint32_t m = fk_match(&f, i, chain, n);
			if (m > best) {
				best = m;
				where = i;
			}
			assert_int_equal(pol_view_holds(&f.v, fk_match, i, chain, n), m >= n);
		}
		assert_int_equal(pol_view_best_match(&f.v, chain, n, &inst), best);
		assert_int_equal(inst, where);
	}
}

TEST_MAIN(cmocka_unit_test(test_best_match_asks_only_candidates),
          cmocka_unit_test(test_shortcuts_answer_as_full_matches),
          cmocka_unit_test(test_holders_from_candidates),
          cmocka_unit_test(test_cache_aware_scans_candidates_only))

/* The load index (sim/run/sim_load.h): after any sequence of +1/-1 its
 * least-loaded group is exactly the instances of the least load, its min
 * and max are those of the loads, and its permutation, positions and group
 * starts stay consistent (sim_load_check); every change costs O(1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <gsl/gsl_rng.h>

#include "sim/run/sim_load.h"
#include "tests/fixtures/test_main.h"

/* The index against a plain array of loads: the least group as a set, the
 * least and the largest load. */
static void assert_index_is(const sim_load_t *l, const uint32_t *want, uint32_t n)
{
	assert_int_equal(sim_load_check(l), 0);
	uint32_t mn = UINT32_MAX, mx = 0, ties = 0;
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(sim_load_of(l, i), want[i]);
		mn = want[i] < mn ? want[i] : mn;
		mx = want[i] > mx ? want[i] : mx;
	}
	for (uint32_t i = 0; i < n; i++)
		ties += want[i] == mn;
	uint32_t count;
	uint64_t lo, hi;
	const uint32_t *c = sim_load_least(l, &count, &lo, &hi);
	assert_int_equal(lo, mn);
	assert_int_equal(hi, mx);
	assert_int_equal(count, ties);
	for (uint32_t k = 0; k < count; k++)
		assert_int_equal(want[c[k]], mn);
}

static void test_load_starts_with_every_instance_tied_at_zero(void **st)
{
	(void)st;
	uint32_t want[5] = {0};
	sim_load_t *l = sim_load_new(5);
	assert_non_null(l);
	assert_index_is(l, want, 5);
	sim_load_dec(l, 3); /* stays 0 */
	assert_index_is(l, want, 5);
	sim_load_free(l);
}

/* The least group shrinks to the one instance left at 0, then grows back
 * as the others return; the largest load follows the last to leave it. */
static void test_load_least_group_follows_increments_and_decrements(void **st)
{
	(void)st;
	uint32_t want[4] = {0};
	sim_load_t *l = sim_load_new(4);
	assert_non_null(l);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(sim_load_inc(l, i), 0);
		want[i]++;
		assert_index_is(l, want, 4);
	}
	uint32_t count;
	uint64_t lo, hi;
	const uint32_t *c = sim_load_least(l, &count, &lo, &hi);
	assert_int_equal(count, 1);
	assert_int_equal(c[0], 3);
	assert_int_equal(sim_load_inc(l, 1), 0);
	want[1]++;
	assert_index_is(l, want, 4);
	sim_load_dec(l, 1);
	want[1]--;
	assert_index_is(l, want, 4); /* the largest falls back to 1 */
	sim_load_dec(l, 0);
	want[0]--;
	assert_index_is(l, want, 4);
	sim_load_free(l);
}

/* 200,000 random changes on 64 instances (loads up to ~40), each checked
 * against the plain array. */
static void test_load_random_walk_matches_a_plain_array(void **st)
{
	(void)st;
	enum { N = 64 };
	uint32_t want[N] = {0};
	sim_load_t *l = sim_load_new(N);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_true(l && r);
	gsl_rng_set(r, 11);
	for (int step = 0; step < 200000; step++) {
		uint32_t i = (uint32_t)gsl_rng_uniform_int(r, N);
		/* a slight upward drift while loads are low keeps many groups alive */
		if (gsl_rng_uniform(r) < (want[i] < 20 ? 0.55 : 0.45)) {
			assert_int_equal(sim_load_inc(l, i), 0);
			want[i]++;
		} else {
			sim_load_dec(l, i);
			want[i] -= want[i] > 0;
		}
		if (step % 97 == 0)
			assert_index_is(l, want, N);
	}
	assert_index_is(l, want, N);
	gsl_rng_free(r);
	sim_load_free(l);
}

TEST_MAIN(cmocka_unit_test(test_load_starts_with_every_instance_tied_at_zero),
          cmocka_unit_test(test_load_least_group_follows_increments_and_decrements),
          cmocka_unit_test(test_load_random_walk_matches_a_plain_array))

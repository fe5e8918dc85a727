/* tok_hist (sim/cluster/tok_hist.h) against a brute-force exact sort of the
 * same gaps: ranks never below the exact value and less than 2^-10 relative
 * above it, exact when each bin holds one value, merging equal to adding one
 * at a time, counts conserved, and reserved room that never reallocates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "sim/cluster/tok_hist.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* A gap stream: kind 0 log-uniform over 1 ns .. 1 s; kind 1 iteration-like,
 * 20 ms +- 2% (many gaps per bin); kind 2 small values, below 4096 ns. */
static int64_t draw(gsl_rng *g, int kind)
{
	if (kind == 0)
		return (int64_t)exp(gsl_rng_uniform(g) * log(1e9));
	if (kind == 1)
		return 20000000 + (int64_t)((gsl_rng_uniform(g) - 0.5) * 800000);
	return (int64_t)gsl_rng_uniform_int(g, 4096);
}

/* a and b hold the same runs: bins, counts and exact extremes. */
static void assert_same_hist(const tok_hist_t *a, const tok_hist_t *b)
{
	assert_int_equal(a->n_run, b->n_run);
	for (uint32_t i = 0; i < b->n_run; i++) {
		assert_int_equal(a->run[i].bin, b->run[i].bin);
		assert_int_equal(a->run[i].count, b->run[i].count);
		assert_int_equal(a->run[i].min, b->run[i].min);
		assert_int_equal(a->run[i].max, b->run[i].max);
	}
}

static void check_counts(const tok_hist_t *h, uint32_t n)
{
	uint64_t sum = 0;
	assert_int_equal(h->n, n);
	for (uint32_t i = 0; i < h->n_run; i++) {
		const tok_run_t *r = &h->run[i];
		assert_true(r->count > 0);
		assert_true(r->min <= r->max);
		assert_int_equal(tok_hist_bin(r->min), r->bin);
		assert_int_equal(tok_hist_bin(r->max), r->bin);
		if (i)
			assert_true(h->run[i - 1].bin < r->bin);
		sum += r->count;
	}
	assert_int_equal(sum, n);
}

static void test_bins_are_monotone_and_narrower_than_2_pow_minus_10(void **st)
{
	(void)st;
	for (int64_t v = 0; v < TOK_HIST_EXACT_BELOW; v++)
		assert_int_equal(tok_hist_bin(v), v); /* one bin per value */
	for (int e = 11; e < 62; e++) {
		int64_t p = (int64_t)1 << e;
		/* 1024 bins per power of two, tiled without gap or overlap */
		assert_int_equal(tok_hist_bin(2 * p) - tok_hist_bin(p), 1024);
		assert_int_equal(tok_hist_bin(p) - tok_hist_bin(p - 1), 1);
	}
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 7);
	for (int i = 0; i < 200000; i++) {
		int64_t a = draw(g, i % 3), b = a + (int64_t)gsl_rng_uniform_int(g, 1 + a / 256);
		assert_true(tok_hist_bin(a) <= tok_hist_bin(b));
		if (tok_hist_bin(a) == tok_hist_bin(b))
			assert_true((double)(b - a) < ldexp((double)a, -10) || a == b);
	}
	gsl_rng_free(g);
}

static void test_rank_is_never_below_exact_and_within_resolution(void **st)
{
	(void)st;
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 11);
	int64_t *v = malloc(4000 * sizeof *v);
	assert_non_null(v);
	int inexact = 0;
	for (int trial = 0; trial < 600; trial++) {
		uint32_t n = 1 + (uint32_t)gsl_rng_uniform_int(g, trial < 300 ? 40 : 4000);
		tok_hist_t h = {0};
		for (uint32_t i = 0; i < n; i++) {
			v[i] = draw(g, trial % 3);
			assert_int_equal(tok_hist_add(&h, v[i], 1), 0);
		}
		check_counts(&h, n);
		qsort(v, n, sizeof *v, cmp_i64);
		uint32_t ks[] = {1, (n + 1) / 2, (uint32_t)((9ull * n + 9) / 10), n};
		for (int j = 0; j < 4; j++) {
			int64_t exact = v[ks[j] - 1], got = tok_hist_rank(&h, ks[j]);
			assert_true(got >= exact);
			assert_true((double)(got - exact) < ldexp((double)exact, -10) ||
			            got == exact);
			inexact += got != exact;
		}
		assert_int_equal(tok_hist_rank(&h, 0), -1);
		assert_int_equal(tok_hist_rank(&h, n + 1), -1);
		tok_hist_free(&h);
	}
	assert_true(inexact > 0); /* the streams do put unequal gaps in one bin */
	free(v);
	gsl_rng_free(g);
}

static void test_rank_is_exact_when_each_bin_holds_one_value(void **st)
{
	(void)st;
	/* five values in five different bins (each 1.5x the last) */
	const int64_t vals[] = {15000000, 22500000, 33750000, 50625000, 75937500};
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 3);
	int64_t v[300];
	tok_hist_t h = {0};
	for (uint32_t i = 0; i < 300; i++) {
		v[i] = vals[gsl_rng_uniform_int(g, 5)];
		assert_int_equal(tok_hist_add(&h, v[i], 1), 0);
	}
	assert_true(h.n_run <= 5);
	qsort(v, 300, sizeof *v, cmp_i64);
	for (uint32_t k = 1; k <= 300; k++)
		assert_int_equal(tok_hist_rank(&h, k), v[k - 1]);
	tok_hist_free(&h);
	gsl_rng_free(g);
}

static void test_merge_equals_adding_one_at_a_time(void **st)
{
	(void)st;
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 5);
	for (int trial = 0; trial < 300; trial++) {
		tok_hist_t one = {0}, dst = {0}, src = {0};
		uint32_t na = (uint32_t)gsl_rng_uniform_int(g, 300),
			 nb = (uint32_t)gsl_rng_uniform_int(g, 300);
		for (uint32_t i = 0; i < na; i++) {
			int64_t x = draw(g, trial % 3);
			assert_int_equal(tok_hist_add(&one, x, 1), 0);
			assert_int_equal(tok_hist_add(&dst, x, 1), 0);
		}
		for (uint32_t i = 0; i < nb; i++) {
			int64_t x = draw(g, (trial + i) % 3);
			assert_int_equal(tok_hist_add(&one, x, 1), 0);
			assert_int_equal(tok_hist_add(&src, x, 1), 0);
		}
		assert_int_equal(tok_hist_merge(&dst, &src), 0);
		check_counts(&dst, na + nb);
		assert_same_hist(&dst, &one);
		tok_hist_free(&one);
		tok_hist_free(&dst);
		tok_hist_free(&src);
	}
	gsl_rng_free(g);
}

/* tok_hist_add_diffs of end times is tok_hist_add of each consecutive
 * difference (a negative one counting as 0), on top of what h held, with
 * runs that hit the last bin and runs that open new ones. */
static void test_add_diffs_equals_adding_each_difference(void **st)
{
	(void)st;
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 11);
	int64_t t[400];
	for (int trial = 0; trial < 300; trial++) {
		tok_hist_t a = {0}, b = {0};
		uint32_t pre = (uint32_t)gsl_rng_uniform_int(g, 50);
		for (uint32_t i = 0; i < pre; i++) {
			int64_t x = draw(g, trial % 3);
			assert_int_equal(tok_hist_add(&a, x, 1), 0);
			assert_int_equal(tok_hist_add(&b, x, 1), 0);
		}
		uint32_t n = (uint32_t)gsl_rng_uniform_int(g, 400);
		t[0] = 1000;
		for (uint32_t j = 1; j < n; j++)
			t[j] = t[j - 1] + (j % 97 == 5 ? -3 : draw(g, (trial + j / 50) % 3));
		assert_int_equal(tok_hist_add_diffs(&a, t, n), 0);
		for (uint32_t j = 1; j < n; j++)
			assert_int_equal(tok_hist_add(&b, t[j] - t[j - 1], 1), 0);
		check_counts(&a, pre + (n ? n - 1 : 0));
		assert_same_hist(&a, &b);
		tok_hist_free(&a);
		tok_hist_free(&b);
	}
	gsl_rng_free(g);
}

/* tok_hist_bin_bounds(b) is exactly the set of gaps of bin b: its ends
 * are in b and their outer neighbours are not, for every bin from 0 to
 * gaps of 2^40 ns, and the bins tile the values (each starts one after
 * the last one's end). */
static void test_bin_bounds_are_exactly_the_bins_values(void **st)
{
	(void)st;
	int64_t next = 0;
	for (uint32_t b = 0; b <= tok_hist_bin((int64_t)1 << 40); b++) {
		int64_t lo, hi;
		tok_hist_bin_bounds(b, &lo, &hi);
		assert_true(lo <= hi);
		assert_int_equal(lo, next);
		assert_int_equal(tok_hist_bin(lo), b);
		assert_int_equal(tok_hist_bin(hi), b);
		if (lo > 0)
			assert_int_not_equal(tok_hist_bin(lo - 1), b);
		assert_int_not_equal(tok_hist_bin(hi + 1), b);
		next = hi + 1;
	}
}

/* Gaps just inside and just outside the last run's bin, in a row: the
 * fast path of tok_hist_add_diffs leaves the run at the first gap outside
 * its bin, as adding each gap does. */
static void test_add_diffs_at_bin_edges_equals_adding_each(void **st)
{
	(void)st;
	int64_t gaps[64], t[65];
	uint32_t n = 0;
	for (uint32_t b = 2040; b < 2060; b += 3) {
		int64_t lo, hi;
		tok_hist_bin_bounds(b * 5, &lo, &hi);
		int64_t v[] = {lo, hi, hi + 1, lo, lo - 1, hi, lo};
		for (size_t i = 0; i < sizeof v / sizeof *v && n < 64; i++)
			gaps[n++] = v[i];
	}
	t[0] = 0;
	for (uint32_t j = 0; j < n; j++)
		t[j + 1] = t[j] + gaps[j];
	tok_hist_t a = {0}, b = {0};
	assert_int_equal(tok_hist_add_diffs(&a, t, n + 1), 0);
	for (uint32_t j = 0; j < n; j++)
		assert_int_equal(tok_hist_add(&b, gaps[j], 1), 0);
	assert_int_equal(a.n, n);
	assert_same_hist(&a, &b);
	tok_hist_free(&a);
	tok_hist_free(&b);
}

/* A count of c in one call is c gaps of that value. */
static void test_add_with_a_count_equals_repeated_adds(void **st)
{
	(void)st;
	tok_hist_t a = {0}, b = {0};
	assert_int_equal(tok_hist_add(&a, 1234567, 7), 0);
	assert_int_equal(tok_hist_add(&a, 99, 0), 0); /* nothing */
	for (int i = 0; i < 7; i++)
		assert_int_equal(tok_hist_add(&b, 1234567, 1), 0);
	check_counts(&a, 7);
	assert_int_equal(a.n_run, 1);
	assert_int_equal(b.n_run, 1);
	assert_int_equal(a.run[0].count, b.run[0].count);
	assert_int_equal(tok_hist_rank(&a, 7), 1234567);
	tok_hist_free(&a);
	tok_hist_free(&b);
}

/* After tok_hist_reserve(h, m), m new bins do not reallocate (so they
 * cannot fail); clear keeps the buffer and empties the counts. */
static void test_reserved_room_never_reallocates_and_clear_keeps_it(void **st)
{
	(void)st;
	tok_hist_t h = {0};
	assert_int_equal(tok_hist_add(&h, 5000, 1), 0);
	assert_int_equal(tok_hist_reserve(&h, 100), 0);
	tok_run_t *buf = h.run;
	tok_hist_t src = {0};
	for (int i = 0; i < 50; i++)
		assert_int_equal(tok_hist_add(&src, 3000000 + 100000 * i, 1), 0);
	assert_int_equal(src.n_run, 50);
	for (int i = 0; i < 50; i++)
		assert_int_equal(tok_hist_add(&h, 10 + i, 1), 0);
	assert_int_equal(tok_hist_merge(&h, &src), 0);
	assert_ptr_equal(h.run, buf);
	assert_int_equal(h.n_run, 101);
	check_counts(&h, 101);
	tok_hist_clear(&h);
	assert_ptr_equal(h.run, buf);
	assert_int_equal(h.n, 0);
	assert_int_equal(h.n_run, 0);
	assert_int_equal(tok_hist_rank(&h, 1), -1);
	tok_hist_free(&h);
	tok_hist_free(&src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bins_are_monotone_and_narrower_than_2_pow_minus_10),
	    cmocka_unit_test(test_rank_is_never_below_exact_and_within_resolution),
	    cmocka_unit_test(test_rank_is_exact_when_each_bin_holds_one_value),
	    cmocka_unit_test(test_merge_equals_adding_one_at_a_time),
	    cmocka_unit_test(test_add_diffs_equals_adding_each_difference),
	    cmocka_unit_test(test_bin_bounds_are_exactly_the_bins_values),
	    cmocka_unit_test(test_add_diffs_at_bin_edges_equals_adding_each),
	    cmocka_unit_test(test_add_with_a_count_equals_repeated_adds),
	    cmocka_unit_test(test_reserved_room_never_reallocates_and_clear_keeps_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

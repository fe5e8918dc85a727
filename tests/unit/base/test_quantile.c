/* quantile_select gives the same double as GSL's quantile of the sorted
 * data, for every n up to 40 and random n to 100,000, with ties, at the
 * quantiles the summary reports and at the ends; +inf propagates where
 * GSL's arithmetic would give NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/quantile.h"

static void check(const double *a, size_t n)
{
	static const double qs[] = {0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0};
	double *s = malloc(n * sizeof *s), *b = malloc(n * sizeof *b);
	assert_non_null(s);
	assert_non_null(b);
	memcpy(s, a, n * sizeof *s);
	gsl_sort(s, 1, n);
	memcpy(b, a, n * sizeof *b);
	for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
		double want = gsl_stats_quantile_from_sorted_data(s, 1, n, qs[k]);
		/* b keeps the reordering of earlier calls, as the summary's does */
		double got = quantile_select(b, n, qs[k]);
		assert_memory_equal(&got, &want, sizeof got);
	}
	gsl_sort(b, 1, n); /* the values are kept */
	assert_memory_equal(b, s, n * sizeof *b);
	free(s);
	free(b);
}

static void test_equals_sorted_quantile(void **st)
{
	(void)st;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	gsl_rng_set(r, 7);
	double a[40];
	for (size_t n = 1; n <= 40; n++) {
		for (size_t i = 0; i < n; i++)
			a[i] = (double)(gsl_rng_get(r) % 5) / 3.0; /* many ties */
		check(a, n);
		for (size_t i = 0; i < n; i++)
			a[i] = gsl_rng_uniform(r) * 1e3;
		check(a, n);
	}
	for (int t = 0; t < 20; t++) {
		size_t n = 1 + gsl_rng_get(r) % 100000;
		double *big = malloc(n * sizeof *big);
		assert_non_null(big);
		for (size_t i = 0; i < n; i++)
			big[i] = t % 2 ? (double)(gsl_rng_get(r) % 1000) : gsl_rng_uniform(r) * 1e6;
		check(big, n);
		free(big);
	}
	gsl_rng_free(r);
}

static void test_inf_propagates_where_the_interpolation_touches_it(void **st)
{
	(void)st;
	double a[] = {INFINITY, 3, 1, 4, 2};              /* sorted: 1 2 3 4 inf */
	assert_true(quantile_select(a, 5, 0.5) == 3);     /* index 2 */
	assert_true(quantile_select(a, 5, 0.625) == 3.5); /* 2.5: 3 and 4 */
	assert_true(quantile_select(a, 5, 0.75) == 4);    /* 3 exactly: not inf's */
	assert_true(isinf(quantile_select(a, 5, 0.9)));   /* 3.6: 4 and inf */
	assert_true(isinf(quantile_select(a, 5, 1.0)));   /* the last */
	double b[] = {INFINITY, INFINITY, INFINITY};      /* every request shed */
	for (int k = 0; k <= 4; k++) {
		double v = quantile_select(b, 3, k / 4.0);
		assert_true(isinf(v) && v > 0);
	}
}

TEST_MAIN(cmocka_unit_test(test_equals_sorted_quantile),
          cmocka_unit_test(test_inf_propagates_where_the_interpolation_touches_it))

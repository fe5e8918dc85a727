/* Tests of traces/tr_util.c: tr_cdf_index, the inverse-CDF draw the Zipf
 * length distribution and the shared-prompt picker both use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "traces/tr_int.h"

static void test_cdf_index_is_the_first_entry_reaching_u(void **st)
{
	(void)st;
	const double cdf[] = {0.1, 0.4, 0.4, 0.9, 1.0};
	assert_int_equal(tr_cdf_index(cdf, 5, 0.0), 0);
	assert_int_equal(tr_cdf_index(cdf, 5, 0.1), 0);
	assert_int_equal(tr_cdf_index(cdf, 5, 0.1000001), 1);
	assert_int_equal(tr_cdf_index(cdf, 5, 0.4), 1); /* ties: the first of them */
	assert_int_equal(tr_cdf_index(cdf, 5, 0.5), 3);
	assert_int_equal(tr_cdf_index(cdf, 5, 0.95), 4);
}

static void test_cdf_index_stays_inside_the_table(void **st)
{
	(void)st;
	const double short_cdf[] = {0.2, 0.7}; /* rounding left the last below 1 */
	assert_int_equal(tr_cdf_index(short_cdf, 2, 0.99), 1);
	const double one[] = {1.0};
	assert_int_equal(tr_cdf_index(one, 1, 0.5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cdf_index_is_the_first_entry_reaching_u),
		cmocka_unit_test(test_cdf_index_stays_inside_the_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for analysis/kvsim_stats.py, the paired statistics of the study's
 * comparisons: each test runs one check of tests/system/check_stats.py, which
 * compares the module with values computed there by other means (a hand
 * data set, Student's t with 3 degrees of freedom in closed form, exact
 * bootstrap distributions, a textbook Holm example). Skipped as a whole
 * (exit 77) when /usr/bin/python3 lacks numpy or scipy. */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/tmp_fixture.h"

static void check(const char *what)
{
	assert_int_equal(tmp_sh("/usr/bin/python3 tests/system/check_stats.py %s", what), 0);
}

/* The paired t interval of the hand set (gains 0.1, 0.1, 0.05, 0.2: mean
 * 0.1125, sd 0.0629153, t(0.975; 3) = 3.18245) is [0.0123877, 0.2126123];
 * pairs go by replicate id, ids on one side only are listed as unpaired;
 * higher-is-better flips the gain's sign. */
static void test_paired_t_interval_matches_the_hand_computation(void **st)
{
	(void)st;
	check("t_interval");
}

/* The bootstrap interval is a function of data, B and seed; with two
 * replicates its ends are exactly the two gains; on 400 normal draws its
 * ends lie within 5% of the t interval's half-width of the t interval's. */
static void test_bootstrap_is_seeded_and_converges_to_the_t_interval(void **st)
{
	(void)st;
	check("bootstrap");
}

/* TOST's p-value equals max(1 - F3((m + d)/se), F3((m - d)/se)) from the
 * closed-form t CDF; a tight set around 0.5% passes at d = 5% and fails at
 * 1%, an 11% gain fails; p < alpha exactly when the 90% t interval lies
 * inside (-d, d). */
static void test_tost_passes_and_fails_where_it_must(void **st)
{
	(void)st;
	check("tost");
}

/* better / worse / equivalent / inconclusive, in that order of tests, on
 * given bounds and through compare(). */
static void test_verdict_orders_better_worse_equivalent_inconclusive(void **st)
{
	(void)st;
	check("verdict");
}

/* Both sides +inf: tie; only the baseline: +1; only the policy: -1; a zero
 * baseline capped likewise; each counted as censored; NaN, -inf and +inf in
 * a higher-is-better metric raise an error naming the replicate. */
static void test_infinite_values_are_capped_and_counted(void **st)
{
	(void)st;
	check("infinite");
}

/* The baseline is chosen on the tuning replicates only (a case where all
 * replicates would choose the other one), and the comparison runs on the
 * held-out ones. */
static void test_best_baseline_is_chosen_on_tuning_replicates_only(void **st)
{
	(void)st;
	check("baseline");
}

/* The tuning/reported split: sizes, disjoint, sorted, independent of the
 * ids' order, a function of the seed (the smallest SHA-256 of "seed:id"). */
static void test_replicate_split_is_deterministic(void **st)
{
	(void)st;
	check("split");
}

/* Holm on the four-hypothesis textbook example (p 0.01, 0.04, 0.03, 0.005:
 * adjusted 0.03, 0.06, 0.06, 0.02; H1 and H4 rejected at 0.05). */
static void test_holm_on_the_textbook_example(void **st)
{
	(void)st;
	check("holm");
}

/* --selftest passes; compare and holm on the command line give the API's
 * numbers; a NaN exits 1 naming the replicate. */
static void test_cli_selftest_compare_and_holm(void **st)
{
	(void)st;
	check("cli");
}

int main(void)
{
	if (access("/usr/bin/python3", X_OK) ||
	    system("/usr/bin/python3 -c 'import numpy, scipy.stats' >/dev/null 2>&1")) {
		fprintf(stderr, "test_analysis_stats: /usr/bin/python3 with numpy and scipy needed\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paired_t_interval_matches_the_hand_computation),
	    cmocka_unit_test(test_bootstrap_is_seeded_and_converges_to_the_t_interval),
	    cmocka_unit_test(test_tost_passes_and_fails_where_it_must),
	    cmocka_unit_test(test_verdict_orders_better_worse_equivalent_inconclusive),
	    cmocka_unit_test(test_infinite_values_are_capped_and_counted),
	    cmocka_unit_test(test_best_baseline_is_chosen_on_tuning_replicates_only),
	    cmocka_unit_test(test_replicate_split_is_deterministic),
	    cmocka_unit_test(test_holm_on_the_textbook_example),
	    cmocka_unit_test(test_cli_selftest_compare_and_holm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

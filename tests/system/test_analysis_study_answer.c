/* Tests for analysis/study_answer.py, the study's paired comparisons, on
 * hand-made catalog frames (tests/system/check_study_answer.py; no kvsim run).
 * Skipped when /usr/bin/python3 lacks numpy, pandas, scipy or matplotlib. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static void check(const char *what)
{
	if (!tmp_kvsim_with_python("numpy, pandas, scipy, matplotlib"))
		skip();
	assert_int_equal(tmp_sh("/usr/bin/python3 tests/system/check_study_answer.py %s", what), 0);
}

/* The best fair baseline is chosen on the tuning replicates only (a
 * baseline better on every held-out replicate but worse on the tuning ones
 * is not chosen), and the gain is the paired mean over the held-out ones. */
static void test_best_baseline_is_chosen_on_tuning_replicates(void **st)
{
	(void)st;
	check("tuning");
}

/* A baseline that sheds every replicate's tail (+inf p95) loses to a policy
 * that serves: gain +100%, every pair counted as censored. */
static void test_shed_baseline_counts_as_infinite_latency(void **st)
{
	(void)st;
	check("inf");
}

/* A preset's own knobs tuned: "added to PRESET" is against the preset's
 * baseline variant best on the tuning replicates, and a baseline's
 * predictor key (held in the catalog though it does not act) is no
 * condition of it. */
static void test_added_to_a_preset_takes_its_best_tuned_baseline(void **st)
{
	(void)st;
	check("baseline_knobs");
}

/* A condition that acts under one generator only is blank elsewhere. */
static void test_condition_blank_where_it_does_not_act(void **st)
{
	(void)st;
	check("acts_only");
}

/* The break-even map's verdicts are Holm-adjusted over its cells. */
static void test_map_verdicts_are_holm_adjusted(void **st)
{
	(void)st;
	check("holm_map");
}

/* Baseline rows that did not grid a condition pair with each of its values. */
static void test_baseline_without_condition_pairs_with_every_condition(void **st)
{
	(void)st;
	check("conditions");
}

/* A capacity search that fails at the lowest load keeps that bound. */
static void test_capacity_search_failing_at_the_lowest_load_keeps_it(void **st)
{
	(void)st;
	check("capacity_lo_fails");
}

/* A capacity search under two variants of a family: the one best on the
 * tuning seeds is compared (not the one best on the held-out ones). */
static void test_capacity_takes_the_variant_tuned_on_tuning_seeds(void **st)
{
	(void)st;
	check("capacity_variants");
}

/* The route hint as a score against the override, paired per condition
 * and preset over every replicate, other tuned knobs at their defaults. */
static void test_route_hint_is_compared_at_default_knobs(void **st)
{
	(void)st;
	check("route_hint");
}

TEST_MAIN(cmocka_unit_test(test_route_hint_is_compared_at_default_knobs),
          cmocka_unit_test(test_capacity_takes_the_variant_tuned_on_tuning_seeds),
          cmocka_unit_test(test_best_baseline_is_chosen_on_tuning_replicates),
          cmocka_unit_test(test_shed_baseline_counts_as_infinite_latency),
          cmocka_unit_test(test_baseline_without_condition_pairs_with_every_condition),
          cmocka_unit_test(test_added_to_a_preset_takes_its_best_tuned_baseline),
          cmocka_unit_test(test_map_verdicts_are_holm_adjusted),
          cmocka_unit_test(test_condition_blank_where_it_does_not_act),
          cmocka_unit_test(test_capacity_search_failing_at_the_lowest_load_keeps_it))

/* Tests for sim/engine/ev_bench.c and sim/cli/cli_bench.c: PHOLD and hold runs are
 * deterministic, honour their stop rules and parameters, and the command line
 * refuses bad input with exit status 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim/cli/cli.h"
#include "sim/base/err.h"
#include "sim/engine/ev_bench.h"

/* The default PHOLD but for its size: lps LPs of events_per_lp events
 * each, stopping after max_events. */
static ev_phold_params_t phold_of(uint32_t lps, uint32_t events_per_lp, uint64_t max_events)
{
	ev_phold_params_t p;
	ev_phold_defaults(&p);
	p.lps = lps;
	p.events_per_lp = events_per_lp;
	p.max_events = max_events;
	return p;
}

static ev_phold_params_t small_phold(void)
{
	ev_phold_params_t p = phold_of(64, 4, 20000);
	p.seed = 42;
	return p;
}

static void test_phold_commits_exactly_the_requested_events(void **state)
{
	(void)state;
	ev_phold_params_t p = small_phold();
	ev_phold_result_t r;
	err_t e = {0};
	assert_int_equal(ev_phold_run(&p, &r, &e), 0);
	assert_int_equal(r.committed, 20000);
	assert_true(r.sim_end_ns > 0);
	assert_true(r.wall_s >= 0);
}

static void test_phold_same_seed_same_run_other_seed_differs(void **state)
{
	(void)state;
	ev_phold_params_t p = small_phold();
	ev_phold_result_t a, b, c;
	assert_int_equal(ev_phold_run(&p, &a, NULL), 0);
	assert_int_equal(ev_phold_run(&p, &b, NULL), 0);
	p.seed = 43;
	assert_int_equal(ev_phold_run(&p, &c, NULL), 0);
	assert_int_equal(a.checksum, b.checksum);
	assert_int_equal(a.sim_end_ns, b.sim_end_ns);
	assert_int_equal(a.remote_sent, b.remote_sent);
	assert_int_not_equal(a.checksum, c.checksum);
}

static void test_phold_end_time_and_event_count_stops_agree(void **state)
{
	(void)state;
	ev_phold_params_t p = small_phold();
	p.max_events = 0;
	p.end_ns = 50000;
	ev_phold_result_t by_time, by_count;
	assert_int_equal(ev_phold_run(&p, &by_time, NULL), 0);
	assert_int_equal(by_time.sim_end_ns, 50000);
	assert_true(by_time.committed > 1000);
	/* Stopping after the same number of events replays the same prefix. */
	p.end_ns = INT64_MAX;
	p.max_events = by_time.committed;
	assert_int_equal(ev_phold_run(&p, &by_count, NULL), 0);
	assert_int_equal(by_count.checksum, by_time.checksum);
	assert_true(by_count.sim_end_ns <= 50000);
}

static void test_phold_remote_probability_extremes(void **state)
{
	(void)state;
	ev_phold_params_t p = small_phold();
	ev_phold_result_t r;
	p.remote = 0;
	assert_int_equal(ev_phold_run(&p, &r, NULL), 0);
	assert_int_equal(r.remote_sent, 0);
	p.remote = 1;
	assert_int_equal(ev_phold_run(&p, &r, NULL), 0);
	assert_int_equal(r.remote_sent, r.committed);
	p.remote = 0.25;
	assert_int_equal(ev_phold_run(&p, &r, NULL), 0);
	/* Binomial(20000, 0.25): sd ~61; allow 6 sd. */
	assert_in_range(r.remote_sent, 5000 - 370, 5000 + 370);
}

static void test_phold_mean_delay_is_lookahead_plus_exponential(void **state)
{
	(void)state;
	/* One LP, one event: a single chain, so sim time / events = mean delay. */
	ev_phold_params_t p = phold_of(1, 1, 200000);
	p.lookahead_ns = 400;
	p.mean_ns = 1000;
	ev_phold_result_t r;
	assert_int_equal(ev_phold_run(&p, &r, NULL), 0);
	double mean = (double)r.sim_end_ns / (double)r.committed;
	/* sd of the mean: 600 / sqrt(2e5) ~ 1.3 ns; allow 6 ns. */
	assert_true(mean > 994 && mean < 1006);
}

static void test_phold_rejects_bad_parameters(void **state)
{
	(void)state;
	ev_phold_result_t r;
	err_t e = {0};
	ev_phold_params_t p = small_phold();
	p.mean_ns = p.lookahead_ns;
	assert_int_equal(ev_phold_run(&p, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "--mean"));
	p = small_phold();
	p.remote = 1.5;
	assert_int_equal(ev_phold_run(&p, &r, &e), KS_EINPUT);
	p = small_phold();
	p.lps = 0;
	assert_int_equal(ev_phold_run(&p, &r, &e), KS_EINPUT);
	p = small_phold();
	p.max_events = 0;
	assert_int_equal(ev_phold_run(&p, &r, &e), KS_EINPUT); /* would never stop */
}

static void test_hold_runs_requested_ops_deterministically(void **state)
{
	(void)state;
	ev_hold_params_t p;
	ev_hold_defaults(&p);
	p.size = 500;
	p.ops = 30000;
	for (int d = EV_HOLD_EXP; d <= EV_HOLD_BIMODAL; d++) {
		p.dist = (ev_hold_dist_t)d;
		ev_hold_result_t a, b;
		assert_int_equal(ev_hold_run(&p, &a, NULL), 0);
		assert_int_equal(ev_hold_run(&p, &b, NULL), 0);
		assert_int_equal(a.ops, 30000);
		assert_int_equal(a.checksum, b.checksum);
	}
	p.size = 0;
	ev_hold_result_t r;
	assert_int_equal(ev_hold_run(&p, &r, NULL), KS_EINPUT);
}

/* Arguments of `kvsim bench` (NULL-terminated) and the exit status they
 * must give. */
typedef struct cli_case {
	int status;
	const char *argv[10];
} cli_case_t;

/* Runs every case; the first wrong status fails the test, naming it. */
static void expect_cli(const cli_case_t *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int argc = 0;
		while (cases[i].argv[argc])
			argc++;
		if (cli_bench_main(argc, (char **)cases[i].argv) != cases[i].status)
			fail_msg("case %zu (%s %s ...): exit status is not %d", i, cases[i].argv[0],
			         argc > 1 ? cases[i].argv[1] : "", cases[i].status);
	}
}

static void test_bench_cli_refuses_bad_input_with_status_2(void **state)
{
	(void)state;
	static const cli_case_t cases[] = {
	    {2, {"bench"}},                                                /* no kind */
	    {2, {"bench", "nosuch"}},                                      /* unknown kind */
	    {2, {"bench", "phold", "--bogus"}},                            /* unknown option */
	    {2, {"bench", "phold", "--lps", "12x"}},                       /* not a number */
	    {2, {"bench", "phold", "--remote", "2"}},                      /* out of range */
	    {2, {"bench", "phold", "--mean", "50", "--lookahead", "100"}}, /* mean <= lookahead */
	    {2, {"bench", "phold", "--lps"}},                              /* value missing */
	    {2, {"bench", "hold", "--dist", "pareto"}},                    /* unknown choice */
	    {2, {"bench", "hold", "stray"}},                               /* extra argument */
	};
	expect_cli(cases, sizeof cases / sizeof cases[0]);
}

static void test_bench_cli_runs_small_phold_and_hold(void **state)
{
	(void)state;
	static const cli_case_t cases[] = {
	    {0, {"bench", "phold", "--lps", "16", "--events", "1000", "--json"}},
	    {0, {"bench", "phold", "--lps=16", "--end=20000", "--seed=3"}},
	    {0, {"bench", "hold", "--size", "100", "--ops", "1000", "--dist", "bimodal"}},
	    {0, {"bench", "--help"}},
	    {0, {"bench", "phold", "--help"}},
	};
	expect_cli(cases, sizeof cases / sizeof cases[0]);
	fflush(stdout);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phold_commits_exactly_the_requested_events),
		cmocka_unit_test(test_phold_same_seed_same_run_other_seed_differs),
		cmocka_unit_test(test_phold_end_time_and_event_count_stops_agree),
		cmocka_unit_test(test_phold_remote_probability_extremes),
		cmocka_unit_test(test_phold_mean_delay_is_lookahead_plus_exponential),
		cmocka_unit_test(test_phold_rejects_bad_parameters),
		cmocka_unit_test(test_hold_runs_requested_ops_deterministically),
		cmocka_unit_test(test_bench_cli_refuses_bad_input_with_status_2),
		cmocka_unit_test(test_bench_cli_runs_small_phold_and_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

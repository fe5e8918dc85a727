/* Per-window summaries (sim/run/metrics.h metrics_windows): every /summary
 * metric over the request rows that arrived in a window, by the same
 * definitions; the parser of [output] windows. Hand-built rows, expected
 * values worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#include "sim/base/results.h"
#include "sim/run/metrics.h"
#include "sim/run/recorder.h"

#define MS 1000000LL
#define S 1000000000LL

static const metrics_opts_t slo = {.ttft_slo_ns = 100 * MS,
				   .tpot_slo_ns = 50 * MS,
				   .blocks_total = 40,
				   .blocks_hit = 10};

static res_request_t req(int64_t arrival_s, int status, int64_t ttft_ms, int64_t e2e_ms)
{
	int done = status == REQ_COMPLETED;
	return (res_request_t){.arrival_ns = arrival_s * S,
			       .status = status,
			       .ttft_ns = done ? ttft_ms * MS : -1,
			       .tpot_ns = done ? 10 * MS : -1,
			       .tbt_p90_ns = done ? 10 * MS : -1,
			       .e2e_ns = done ? e2e_ms * MS : -1,
			       .queue_ns = done ? 0 : -1,
			       .input_tokens = 100,
			       .output_tokens = 10,
			       .tok_local = 50,
			       .decode_instance = -1,
			       .handoff_wait_ns = -1};
}

/* Window w's value of metric name (NaN when absent: the test fails). */

static void near(double got, double want, const char *what)
{
	if (!(fabs(got - want) <= 1e-12 * fmax(1, fabs(want))))
		fail_msg("%s: got %.17g, want %.17g", what, got, want);
}

static sim_results_t rows_of(const res_request_t *rows, size_t n)
{
	sim_results_t r = {0};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rec_request(&r, &rows[i]), 0);
	return r;
}

/* Five requests; windows [0, 2 s) and [2 s, 10 s).
 *   window 0: arrivals 0 s (TTFT 10 ms, e2e 500 ms) and 1 s (30 ms, 700 ms):
 *     requests 2, completed 2, ttft_completed_mean 20 ms, e2e_mean 600 ms,
 *     ttft_p50 over offered = 20 ms (interpolated), offered_rps = 2 / (1 s)
 *     = 2, span = 0 s .. 1.7 s = 1.7 s, throughput 2 / 1.7, hit rate 0.5,
 *     hit_rate_blocks NaN (the cluster's blocks are not per request).
 *   window 1: arrivals 2 s (TTFT 50 ms, e2e 1 s), 4 s (rejected for
 *     overload), 6 s (TTFT 150 ms: over the 100 ms SLO, e2e 2 s):
 *     requests 3, completed 2, rejected 1, offered 3, completed share 2/3,
 *     ttft_completed_mean 100 ms, ttft_p50 over offered = the middle of
 *     {50, 150, +inf} = 150 ms, ttft_p90 +inf, offered_rps 3 / 4 s = 0.75,
 *     slo_ttft_attainment 1/3 (the rejected one a miss). */
static void test_each_window_summarizes_the_rows_that_arrived_in_it(void **st)
{
	(void)st;
	const res_request_t rows[] = {
	    req(0, REQ_COMPLETED, 10, 500), req(1, REQ_COMPLETED, 30, 700),
	    req(2, REQ_COMPLETED, 50, 1000), req(4, REQ_REJECTED_OVERLOAD, 0, 0),
	    req(6, REQ_COMPLETED, 150, 2000)};
	sim_results_t r = rows_of(rows, 5);
	const int64_t edges[] = {0, 2 * S, 10 * S};
	assert_int_equal(metrics_windows(&r, &slo, edges, 3, RES_WIN_OUTPUT), 0);
	assert_int_equal(r.n_win % 2, 0);
	assert_int_equal(r.win[0].t0_ns, 0);
	assert_int_equal(r.win[0].t1_ns, 2 * S);
	assert_int_equal(r.win[0].kind, RES_WIN_OUTPUT);
	near(sf_window(&r, 0, "requests"), 2, "w0 requests");
	near(sf_window(&r, 0, "completed"), 2, "w0 completed");
	near(sf_window(&r, 0, "ttft_completed_mean_ms"), 20, "w0 ttft mean");
	near(sf_window(&r, 0, "e2e_mean_ms"), 600, "w0 e2e mean");
	near(sf_window(&r, 0, "ttft_p50_ms"), 20, "w0 ttft p50");
	near(sf_window(&r, 0, "offered_rps"), 2, "w0 offered_rps");
	near(sf_window(&r, 0, "span_s"), 1.7, "w0 span");
	near(sf_window(&r, 0, "throughput_rps"), 2 / 1.7, "w0 throughput");
	near(sf_window(&r, 0, "hit_rate_tokens"), 0.5, "w0 hit rate");
	assert_true(isnan(sf_window(&r, 0, "hit_rate_blocks")));
	near(sf_window(&r, 1, "requests"), 3, "w1 requests");
	near(sf_window(&r, 1, "completed"), 2, "w1 completed");
	near(sf_window(&r, 1, "rejected"), 1, "w1 rejected");
	near(sf_window(&r, 1, "offered"), 3, "w1 offered");
	near(sf_window(&r, 1, "completed_share"), 2.0 / 3, "w1 completed share");
	near(sf_window(&r, 1, "ttft_completed_mean_ms"), 100, "w1 ttft mean");
	near(sf_window(&r, 1, "ttft_p50_ms"), 150, "w1 ttft p50");
	assert_true(isinf(sf_window(&r, 1, "ttft_p90_ms")));
	near(sf_window(&r, 1, "offered_rps"), 0.75, "w1 offered_rps");
	near(sf_window(&r, 1, "slo_ttft_attainment"), 1.0 / 3, "w1 slo ttft");
	sim_results_free(&r);
}

/* One window over every row gives /summary's values, metric for metric, in
 * its order, hit_rate_blocks included (a window of every row is the run). */
static void test_a_window_over_every_row_equals_the_summary(void **st)
{
	(void)st;
	const res_request_t rows[] = {
	    req(0, REQ_COMPLETED, 10, 500), req(1, REQ_COMPLETED, 30, 700),
	    req(2, REQ_COMPLETED, 50, 1000), req(4, REQ_UNFINISHED, 0, 0),
	    req(6, REQ_COMPLETED, 150, 2000)};
	sim_results_t r = rows_of(rows, 5);
	assert_int_equal(metrics_summarize(&r, &slo), 0);
	const int64_t edges[] = {0, 7 * S};
	assert_int_equal(metrics_windows(&r, &slo, edges, 2, RES_WIN_OUTPUT), 0);
	assert_int_equal(r.n_win, r.n_metric);
	for (size_t i = 0; i < r.n_metric; i++) {
		assert_string_equal(r.win[i].name, r.metric[i].name);
		assert_string_equal(r.win[i].unit, r.metric[i].unit);
		double a = r.win[i].value, b = r.metric[i].value;
		if (!(a == b || (isnan(a) && isnan(b))))
			fail_msg("%s: window %.17g, summary %.17g", r.win[i].name, a, b);
	}
	near(sf_window(&r, 0, "hit_rate_blocks"), 0.25, "hit_rate_blocks");
	sim_results_free(&r);
}

/* A window nothing arrived in still has every metric: counts 0, the rest
 * NaN as for an empty run. */
static void test_an_empty_window_has_zero_counts(void **st)
{
	(void)st;
	const res_request_t rows[] = {req(0, REQ_COMPLETED, 10, 500)};
	sim_results_t r = rows_of(rows, 1);
	const int64_t edges[] = {0, S, 2 * S};
	assert_int_equal(metrics_windows(&r, &slo, edges, 3, RES_WIN_STAGE), 0);
	near(sf_window(&r, 1, "requests"), 0, "requests");
	near(sf_window(&r, 1, "offered"), 0, "offered");
	assert_true(isnan(sf_window(&r, 1, "ttft_completed_mean_ms")));
	assert_int_equal(r.win[r.n_win - 1].kind, RES_WIN_STAGE);
	sim_results_free(&r);
}

static void test_windows_parse(void **st)
{
	(void)st;
	int64_t *v;
	size_t n;
	err_t e = {0};
	assert_int_equal(metrics_windows_parse("0, 1.5,10", &v, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 1500000000LL);
	assert_int_equal(v[2], 10 * S);
	free(v);
	assert_int_equal(metrics_windows_parse("", &v, &n, &e), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	static const char *const bad[] = {"5", "1,1", "2,1", "0,x", "-1,2", "0,,2", "0,2,"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		e = (err_t){0};
		assert_int_equal(metrics_windows_parse(bad[i], &v, &n, &e), KS_EINPUT);
		assert_non_null(strstr(e.msg, "[output] windows: "));
		assert_null(v);
	}
}

TEST_MAIN(cmocka_unit_test(test_each_window_summarizes_the_rows_that_arrived_in_it),
	  cmocka_unit_test(test_a_window_over_every_row_equals_the_summary),
	  cmocka_unit_test(test_an_empty_window_has_zero_counts),
	  cmocka_unit_test(test_windows_parse))

/* Metrics over offered requests (sim/run/metrics.h): every request but
 * failed_in_trace is offered; a rejected or unfinished one is an SLO miss
 * and a +inf TTFT, so a policy that sheds load cannot look faster than one
 * that serves everything. Hand-built results, expected values worked out in
 * the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/results.h"
#include "sim/run/metrics.h"
#include "sim/run/recorder.h"
#include "tests/fixtures/sim_fixture.h"

#define MS 1000000LL
#define S 1000000000LL

static const metrics_opts_t slo = {.ttft_slo_ns = 100 * MS, .tpot_slo_ns = 50 * MS};

static res_request_t req(int64_t arrival_s, int status, int64_t ttft_ms, int64_t tpot_ms)
{
	int done = status == REQ_COMPLETED;
	return (res_request_t){.arrival_ns = arrival_s * S,
	                       .status = status,
	                       .ttft_ns = done ? ttft_ms * MS : -1,
	                       .tpot_ns = done ? tpot_ms * MS : -1,
	                       .tbt_p90_ns = done ? tpot_ms * MS : -1,
	                       .e2e_ns = done ? 1 * S : -1,
	                       .queue_ns = done ? 0 : -1,
	                       .input_tokens = 100,
	                       .output_tokens = 10,
	                       .decode_instance = -1,
	                       .handoff_wait_ns = -1};
}

static sim_results_t summarize(const res_request_t *rows, size_t n)
{
	sim_results_t r = {0};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rec_request(&r, &rows[i]), 0);
	assert_int_equal(metrics_summarize(&r, &slo), 0);
	return r;
}

static void expect_near(const sim_results_t *r, const char *name, double want)
{
	double got = sf_metric(r, name);
	if (!(fabs(got - want) <= 1e-12 * fmax(1, fabs(want))))
		fail_msg("%s: got %.17g, want %.17g", name, got, want);
}

static void expect_inf(const sim_results_t *r, const char *name)
{
	double got = sf_metric(r, name);
	if (!(isinf(got) && got > 0))
		fail_msg("%s: got %.17g, want +inf", name, got);
}

static void expect_nan(const sim_results_t *r, const char *name)
{
	double got = sf_metric(r, name);
	if (!isnan(got))
		fail_msg("%s: got %.17g, want NaN", name, got);
}

/* Ten offered requests arriving at 0..9 s and one failed in the trace at
 * 20 s; SLOs 100 ms TTFT, 50 ms TPOT; each completed one takes 1 s. */
static void test_shed_and_unfinished_requests_count_as_misses(void **st)
{
	(void)st;
	const res_request_t rows[] = {
	    req(0, REQ_COMPLETED, 10, 20),  /* both SLOs met */
	    req(1, REQ_COMPLETED, 20, 20),  /* both */
	    req(2, REQ_COMPLETED, 30, 60),  /* TPOT missed */
	    req(3, REQ_COMPLETED, 40, 20),  /* both */
	    req(4, REQ_COMPLETED, 150, 20), /* TTFT missed */
	    req(5, REQ_COMPLETED, 60, 20),  /* both; the last completion, at 6 s */
	    req(6, REQ_REJECTED_TOO_LONG, 0, 0),
	    req(7, REQ_REJECTED_SLO, 0, 0),
	    req(8, REQ_REJECTED_OVERLOAD, 0, 0),
	    req(9, REQ_UNFINISHED, 0, 0),
	    req(20, REQ_FAILED_IN_TRACE, 0, 0), /* not offered: neither counted nor a miss */
	};
	sim_results_t r = summarize(rows, sizeof rows / sizeof rows[0]);
	expect_near(&r, "requests", 11);
	expect_near(&r, "offered", 10);
	expect_near(&r, "rejected", 3);
	expect_near(&r, "admitted_share", 0.7);   /* (10 - 3) / 10 */
	expect_near(&r, "completed_share", 0.6);  /* 6 / 10 */
	expect_near(&r, "offered_rps", 10.0 / 9); /* 10 offered over arrivals 0 .. 9 s */
	/* offered TTFT sorted: 10 20 30 40 60 150 inf inf inf inf (n 10);
	 * p50 at index 4.5: (60 + 150) / 2; p90 at 8.1, p95 at 8.55, p99 at
	 * 8.91: between two infs */
	expect_near(&r, "ttft_p50_ms", 105);
	expect_inf(&r, "ttft_p90_ms");
	expect_inf(&r, "ttft_p95_ms");
	expect_inf(&r, "ttft_p99_ms");
	/* completed TTFT: 10 20 30 40 60 150; mean 310 / 6, p50 at index 2.5,
	 * p90 at 4.5: (60 + 150) / 2 */
	expect_near(&r, "ttft_completed_mean_ms", 310.0 / 6);
	expect_near(&r, "ttft_completed_p50_ms", 35);
	expect_near(&r, "ttft_completed_p90_ms", 105);
	/* TTFT met by 0 1 2 3 5, TPOT by 0 1 3 4 5, both by 0 1 3 5 */
	expect_near(&r, "slo_ttft_attainment", 0.5); /* 5 / 10 */
	expect_near(&r, "slo_tpot_attainment", 0.5); /* 5 / 10 */
	expect_near(&r, "slo_attainment", 0.4);      /* 4 / 10 */
	expect_near(&r, "slo_attainment_completed", 4.0 / 6);
	/* span: first arrival (0 s) to the last completion (6 s) */
	expect_near(&r, "span_s", 6);
	expect_near(&r, "goodput_rps", 4.0 / 6);
	expect_near(&r, "throughput_rps", 1);
	sim_results_free(&r);
}

static void test_shedding_every_request_is_inf_and_zero_not_nan(void **st)
{
	(void)st;
	const res_request_t rows[] = {
	    req(0, REQ_REJECTED_OVERLOAD, 0, 0),
	    req(1, REQ_REJECTED_SLO, 0, 0),
	    req(2, REQ_REJECTED_TOO_LONG, 0, 0),
	    req(4, REQ_REJECTED_OVERLOAD, 0, 0),
	};
	sim_results_t r = summarize(rows, sizeof rows / sizeof rows[0]);
	expect_near(&r, "offered", 4);
	expect_near(&r, "admitted_share", 0);
	expect_near(&r, "completed_share", 0);
	expect_near(&r, "offered_rps", 1); /* 4 over 0 .. 4 s */
	expect_inf(&r, "ttft_p50_ms");
	expect_inf(&r, "ttft_p90_ms");
	expect_inf(&r, "ttft_p95_ms");
	expect_inf(&r, "ttft_p99_ms");
	expect_near(&r, "slo_ttft_attainment", 0);
	expect_near(&r, "slo_tpot_attainment", 0);
	expect_near(&r, "slo_attainment", 0);
	expect_near(&r, "goodput_rps", 0);
	/* over completed requests there is nothing to say */
	expect_nan(&r, "slo_attainment_completed");
	expect_nan(&r, "ttft_completed_mean_ms");
	expect_nan(&r, "ttft_completed_p99_ms");
	sim_results_free(&r);
}

static void test_unfinished_at_the_end_are_admitted_but_inf(void **st)
{
	(void)st;
	const res_request_t rows[] = {
	    req(0, REQ_COMPLETED, 10, 10),
	    req(1, REQ_UNFINISHED, 0, 0),
	    req(2, REQ_UNFINISHED, 0, 0),
	};
	sim_results_t r = summarize(rows, sizeof rows / sizeof rows[0]);
	expect_near(&r, "admitted_share", 1);
	expect_near(&r, "completed_share", 1.0 / 3);
	/* sorted 10 inf inf: p50 at index 1 falls on an inf */
	expect_inf(&r, "ttft_p50_ms");
	expect_near(&r, "ttft_completed_p50_ms", 10);
	expect_near(&r, "slo_attainment", 1.0 / 3);
	expect_near(&r, "slo_attainment_completed", 1);
	sim_results_free(&r);
}

static void test_nothing_offered_or_one_arrival_is_nan(void **st)
{
	(void)st;
	const res_request_t failed[] = {req(0, REQ_FAILED_IN_TRACE, 0, 0),
	                                req(3, REQ_FAILED_IN_TRACE, 0, 0)};
	sim_results_t r = summarize(failed, 2);
	expect_near(&r, "offered", 0);
	expect_nan(&r, "admitted_share");
	expect_nan(&r, "completed_share");
	expect_nan(&r, "offered_rps"); /* the failed arrivals do not count */
	expect_nan(&r, "ttft_p50_ms");
	expect_nan(&r, "slo_attainment");
	sim_results_free(&r);
	const res_request_t one[] = {req(5, REQ_COMPLETED, 10, 10)};
	r = summarize(one, 1);
	expect_nan(&r, "offered_rps"); /* a rate needs two arrival times */
	expect_near(&r, "ttft_p99_ms", 10);
	sim_results_free(&r);
}

/* The recorder lists the offered and the completed-only families side by
 * side, each saying which requests it covers. */
static void test_docs_say_which_requests(void **st)
{
	(void)st;
	for (int id = REC_TTFT_P50; id <= REC_TTFT_P99; id++)
		assert_non_null(strstr(rec_metric_def(id)->doc, "of offered requests"));
	for (int id = REC_TTFT_COMPLETED_MEAN; id <= REC_TTFT_NOSPEC_P99; id++)
		assert_non_null(strstr(rec_metric_def(id)->doc, "of completed requests"));
}

TEST_MAIN(cmocka_unit_test(test_shed_and_unfinished_requests_count_as_misses),
          cmocka_unit_test(test_shedding_every_request_is_inf_and_zero_not_nan),
          cmocka_unit_test(test_unfinished_at_the_end_are_admitted_but_inf),
          cmocka_unit_test(test_nothing_offered_or_one_arrival_is_nan),
          cmocka_unit_test(test_docs_say_which_requests))

/* The summary of streamed rows (sim_results_stream: rows spilled in blocks
 * and read back, sim/run/metrics.h) is exact: the same metrics, bit for bit,
 * as over the rows kept in memory, and the percentiles worked out by hand
 * below; per-window summaries likewise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/results.h"
#include "sim/run/metrics.h"
#include "sim/run/recorder.h"

#define MS 1000000LL
#define S 1000000000LL

static const metrics_opts_t slo = {.ttft_slo_ns = 10 * MS, .tpot_slo_ns = 50 * MS,
				   .blocks_total = 40, .blocks_hit = 10};

/* Request i of 25: i < 20 completed with TTFT i + 1 ms, arriving at i s;
 * the last 5 rejected (too long), arriving at 20 .. 24 s. */
static res_request_t row(int i)
{
	res_request_t q;
	memset(&q, 0, sizeof q);
	int done = i < 20;
	q.id = (uint64_t)i;
	q.arrival_ns = i * S;
	q.status = done ? REQ_COMPLETED : REQ_REJECTED_TOO_LONG;
	q.ttft_ns = done ? (i + 1) * MS : -1;
	q.tpot_ns = done ? 5 * MS : -1;
	q.tbt_p90_ns = done ? 6 * MS : -1;
	q.e2e_ns = done ? 100 * MS : -1;
	q.queue_ns = done ? 0 : -1;
	q.input_tokens = 100;
	q.output_tokens = 10;
	q.tok_spec_hit = i % 2 ? 16 : 0;
	q.decode_instance = -1;
	q.handoff_wait_ns = -1;
	return q;
}

static void fill(sim_results_t *r, size_t block)
{
	memset(r, 0, sizeof *r);
	sim_results_stream(r, block);
	for (int i = 0; i < 25; i++) {
		res_request_t q = row(i);
		assert_int_equal(rec_request(r, &q), 0);
	}
}

static void same_metrics(const res_metric_t *a, size_t na, const res_metric_t *b, size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(a[i].name, b[i].name);
		if (memcmp(&a[i].value, &b[i].value, sizeof a[i].value))
			fail_msg("%s: %.17g streamed, %.17g in memory", a[i].name, b[i].value,
				 a[i].value);
	}
}

static void test_streamed_summary_equals_the_in_memory_one_and_exact_values(void **st)
{
	(void)st;
	sim_results_t a, b;
	fill(&a, 0);
	fill(&b, 3); /* 8 blocks of 3 spilled, 1 row in memory */
	assert_int_equal(b.spilled[RES_T_REQ], 24);
	assert_int_equal(metrics_summarize(&a, &slo), 0);
	assert_int_equal(metrics_summarize(&b, &slo), 0);
	same_metrics(a.metric, a.n_metric, b.metric, b.n_metric);
	/* offered TTFT: 1 .. 20 ms and 5 x +inf; p50 at rank 0.5 x 24 = 12:
	 * 13 ms; p90 at 21.6, between two +inf: +inf */
	assert_true(sim_results_get(&b, "ttft_p50_ms") == 13);
	assert_true(isinf(sim_results_get(&b, "ttft_p90_ms")));
	/* completed TTFT 1 .. 20 ms: mean 10.5; p99 at 0.99 x 19 = 18.81:
	 * 19 + 0.81 x (20 - 19) */
	assert_true(sim_results_get(&b, "ttft_completed_mean_ms") == 10.5);
	assert_true(fabs(sim_results_get(&b, "ttft_completed_p99_ms") - 19.81) < 1e-12);
	/* without a speculative hit: the even i, TTFT 1, 3, .., 19 ms */
	assert_true(sim_results_get(&b, "ttft_nospec_mean_ms") == 10);
	assert_true(sim_results_get(&b, "requests") == 25);
	assert_true(sim_results_get(&b, "rejected") == 5);
	/* SLO 10 ms: TTFT 1 .. 10 of the 25 offered */
	assert_true(sim_results_get(&b, "slo_ttft_attainment") == 10.0 / 25);
	assert_true(sim_results_get(&b, "hit_rate_blocks") == 0.25);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_streamed_windows_equal_the_in_memory_ones(void **st)
{
	(void)st;
	sim_results_t a, b;
	fill(&a, 0);
	fill(&b, 4);
	const int64_t edges[] = {0, 7 * S, 21 * S, 30 * S};
	assert_int_equal(metrics_windows(&a, &slo, edges, 4, RES_WIN_OUTPUT), 0);
	assert_int_equal(metrics_windows(&b, &slo, edges, 4, RES_WIN_OUTPUT), 0);
	assert_int_equal(a.n_win, b.n_win);
	assert_int_equal(a.n_win, 3 * (size_t)(REC_TTFT_NOSPEC_P99 - REC_REQUESTS + 1));
	for (size_t i = 0; i < a.n_win; i++) {
		assert_string_equal(a.win[i].name, b.win[i].name);
		assert_memory_equal(&a.win[i].value, &b.win[i].value, sizeof a.win[i].value);
	}
	/* window 0 holds requests 0 .. 6: TTFT 1 .. 7 ms, median 4 ms */
	for (size_t i = 0; i < b.n_win; i++)
		if (b.win[i].window == 0 && !strcmp(b.win[i].name, "ttft_p50_ms"))
			assert_true(b.win[i].value == 4);
	sim_results_free(&a);
	sim_results_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_streamed_summary_equals_the_in_memory_one_and_exact_values),
          cmocka_unit_test(test_streamed_windows_equal_the_in_memory_ones))

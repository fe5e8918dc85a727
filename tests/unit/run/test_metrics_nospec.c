/* ttft_nospec_*: the TTFT of the completed requests that no speculative
 * copy served (tok_spec_hit == 0), E3's "TTFT of non-replicated requests".
 * Recomputed here from the run's own rows, on a run whose replication does
 * serve some requests (so both groups are non-empty), and equal to ttft_*
 * where nothing is replicated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/results.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"

static void test_nospec_ttft_is_the_mean_over_requests_without_a_spec_hit(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
	                      "experiment.until_s=60"};
	sim_results_t r = sf_run(NULL, sets, 3);
	double sum = 0;
	size_t n = 0, served = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		if (q->status != REQ_COMPLETED)
			continue;
		if (q->tok_spec_hit) {
			served++;
			continue;
		}
		sum += (double)q->ttft_ns / 1e6;
		n++;
	}
	assert_true(served > 0); /* the two groups differ here */
	assert_true(n > 0);
	double want = sum / (double)n, got = sim_results_get(&r, "ttft_nospec_mean_ms");
	assert_true(fabs(got - want) <= 1e-9 * want);
	assert_true(got != sim_results_get(&r, "ttft_completed_mean_ms"));
	sim_results_free(&r);
}

static void test_nospec_ttft_equals_ttft_without_replication(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=none", "experiment.until_s=30"};
	sim_results_t r = sf_run(NULL, sets, 2);
	static const char *q[] = {"mean", "p50", "p90", "p95", "p99"};
	for (size_t k = 0; k < 5; k++) {
		char a[64], b[64];
		snprintf(a, sizeof a, "ttft_completed_%s_ms", q[k]);
		snprintf(b, sizeof b, "ttft_nospec_%s_ms", q[k]);
		assert_true(sim_results_get(&r, a) == sim_results_get(&r, b));
	}
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_nospec_ttft_is_the_mean_over_requests_without_a_spec_hit),
          cmocka_unit_test(test_nospec_ttft_equals_ttft_without_replication))

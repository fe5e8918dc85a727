/* scheduler.frontend_ms: the time a request spends outside the engine is on
 * its TTFT and end-to-end latency and nowhere else, and its default follows
 * the engine (sim_params_frontend_ns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/run/sim_params.h"
#include "tests/fixtures/sim_fixture.h"

#define SMALL "trace.limit=300"

static sim_results_t run2(const char *a, const char *b)
{
	const char *sets[] = {SMALL, a, b};
	return sf_run(NULL, sets, b ? 3 : 2);
}

/* Rows of x and y are the same requests, with TTFT and E2E d_ns apart
 * wherever they were measured, and every other field equal. */
static void assert_shifted(const sim_results_t *x, const sim_results_t *y, int64_t d_ns)
{
	assert_int_equal(x->n_req, y->n_req);
	size_t measured = 0;
	for (size_t i = 0; i < x->n_req; i++) {
		res_request_t a = x->req[i], b = y->req[i];
		assert_int_equal(a.id, b.id);
		assert_int_equal(a.ttft_ns < 0, b.ttft_ns < 0);
		assert_int_equal(a.e2e_ns < 0, b.e2e_ns < 0);
		if (a.ttft_ns >= 0) {
			assert_int_equal(b.ttft_ns - a.ttft_ns, d_ns);
			b.ttft_ns = a.ttft_ns;
			measured++;
		}
		if (a.e2e_ns >= 0) {
			assert_int_equal(b.e2e_ns - a.e2e_ns, d_ns);
			b.e2e_ns = a.e2e_ns;
		}
		assert_memory_equal(&a, &b, sizeof a); /* TPOT, queueing, tokens, ... */
	}
	assert_true(measured > 100);
}

static void test_frontend_time_moves_ttft_and_e2e_only(void **st)
{
	(void)st;
	sim_results_t a = run2("scheduler.frontend_ms=0", NULL);
	sim_results_t b = run2("scheduler.frontend_ms=25", NULL);
	assert_shifted(&a, &b, 25000000);
	/* the summary's TTFT moves by the same, its TPOT not at all */
	assert_true(fabs(sim_results_get(&b, "ttft_completed_mean_ms") -
	                 sim_results_get(&a, "ttft_completed_mean_ms") - 25) < 1e-6);
	assert_true(sim_results_get(&b, "tpot_mean_ms") == sim_results_get(&a, "tpot_mean_ms"));
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_default_follows_the_engine(void **st)
{
	(void)st;
	/* vLLM (the default experiment) and SGLang: the fitted value */
	sim_results_t a = run2("scheduler.frontend_ms=0", NULL);
	sim_results_t b = run2("scheduler.frontend_ms=-1", NULL);
	assert_shifted(&a, &b, (int64_t)(SIM_FRONTEND_MS * 1e6 + 0.5));
	sim_results_free(&a);
	sim_results_free(&b);
	a = run2("scheduler.mode=sglang", "scheduler.frontend_ms=0");
	b = run2("scheduler.mode=sglang", "scheduler.frontend_ms=-1");
	assert_shifted(&a, &b, (int64_t)(SIM_FRONTEND_MS * 1e6 + 0.5));
	sim_results_free(&a);
	sim_results_free(&b);
	/* the original study's scheduler: the engine's own times */
	a = run2("scheduler.mode=btb", "scheduler.frontend_ms=0");
	b = run2("scheduler.mode=btb", "scheduler.frontend_ms=-1");
	assert_shifted(&a, &b, 0);
	sim_results_free(&a);
	sim_results_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frontend_time_moves_ttft_and_e2e_only),
	    cmocka_unit_test(test_default_follows_the_engine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The predictors on the first 600 s of the Mooncake conversation trace
 * (skipped when ../shared/traces/mooncake is absent), under speculative
 * replication on the study's experiment. Why the statistical ones stay
 * silent there, from `kvsim trace reuse FILE --set trace.end_s=600`: every
 * request shares the one-block system prompt, and of the ~476 requests that
 * share more with an earlier one only 2 come within 10 s of the last
 * request holding it (median think time 63 to 100 s). So no prefix of >= 4
 * blocks is in 3 arrivals within 10 s (repeat_count's X = 3 in Z = 10 s),
 * and each turn extends the previous turn's prompt, so it opens a new,
 * deeper shared-prefix group instead of adding to one: no group's decayed
 * count reaches ewma's 2, and the groups hawkes reports (a second arrival
 * soon after the first) are never the whole shared prefix of a later
 * request (recall 0). The lookahead predictor forecasts the finished turn's
 * context, which is that later request's shared prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#define CONFIG "analysis/experiments/mooncake_conversation.ini"
#define TRACE "../shared/traces/mooncake/conversation_trace.jsonl"

static sim_results_t run_pred(const char *pred)
{
	char ps[64];
	snprintf(ps, sizeof ps, "policy.predictor.name=%s", pred);
	const char *sets[] = {"trace.end_s=600", "policy.replication.name=speculative", ps};
	return sf_run(CONFIG, sets, 3);
}

static void test_repeat_count_and_ewma_forecast_nothing_on_mooncake(void **st)
{
	(void)st;
	if (access(TRACE, R_OK))
		skip();
	const char *preds[] = {"repeat_count", "ewma"};
	for (int k = 0; k < 2; k++) {
		sim_results_t r = run_pred(preds[k]);
		print_message("%s: forecast entries %.0f, triggers %.0f\n", preds[k],
		              sim_results_get(&r, "forecast.entries"),
		              sim_results_get(&r, "spec.triggers"));
		assert_true(sim_results_get(&r, "forecast.entries") == 0);
		assert_true(sim_results_get(&r, "spec.triggers") == 0);
		sim_results_free(&r);
	}
}

static void test_hawkes_reports_but_recalls_nothing_on_mooncake(void **st)
{
	(void)st;
	if (access(TRACE, R_OK))
		skip();
	sim_results_t r = run_pred("hawkes");
	assert_true(sim_results_get(&r, "forecast.entries") > 0);
	assert_true(sim_results_get(&r, "forecast.recall") == 0);
	sim_results_free(&r);
}

static void test_lookahead_recalls_next_turns_on_mooncake(void **st)
{
	(void)st;
	if (access(TRACE, R_OK))
		skip();
	sim_results_t r = run_pred("lookahead");
	double rec = sim_results_get(&r, "forecast.recall");
	print_message("lookahead: precision %.4f recall %.4f\n",
	              sim_results_get(&r, "forecast.precision"), rec);
	assert_true(rec > 0.5);
	assert_true(sim_results_get(&r, "spec.replicas_used") > 0);
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_repeat_count_and_ewma_forecast_nothing_on_mooncake),
          cmocka_unit_test(test_hawkes_reports_but_recalls_nothing_on_mooncake),
          cmocka_unit_test(test_lookahead_recalls_next_turns_on_mooncake))

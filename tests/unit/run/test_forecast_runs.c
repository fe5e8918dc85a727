/* Forecast accuracy measured in whole runs (sim/run/forecast.h fed by
 * sim_core.c and sim_copy.c): the oracle with injected error measures the
 * error it was given, realistic predictors give shares in [0, 1] that repeat
 * run to run, and a run that asks no forecast reports NaN. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* G prefix groups of K requests each: a group's requests share its P blocks
 * and have one block of their own. Arrivals every GAP_NS from 1 s on (after
 * the first tick, 100 ms, so every arrival has forecasts before it), the
 * groups interleaved (request n is of group n % G), so each group spans
 * (K - 1) x G x GAP = 12 s. */
enum { G = 400, K = 4, P = 4, BT = 16 };
#define GAP_NS 10000000LL

typedef struct groups {
	int n;
	uint64_t ids[P + 1];
} groups_t;

static int groups_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	groups_t *g = ctx;
	if (g->n == G * K)
		return 0;
	uint64_t grp = (uint64_t)(g->n % G);
	for (int i = 0; i < P; i++) /* chained: block i names the group's first i + 1 */
		g->ids[i] = (grp + 1) << 20 | (uint64_t)i;
	g->ids[P] = (1ULL << 40) + (uint64_t)g->n;
	*a = (sim_arrival_t){.id = (uint64_t)g->n,
			     .arrival_ns = 1000000000LL + g->n * GAP_NS,
			     .in_len = (P + 1) * BT,
			     .out_len = 8,
			     .n_blocks = P + 1,
			     .blocks = g->ids};
	g->n++;
	return 1;
}

/* The groups trace under speculative replication and the oracle with the
 * given recall and false-positive rate. */
static sim_results_t run_oracle(const char *recall, const char *fp)
{
	char r[96], f[96];
	snprintf(r, sizeof r, "policy.predictor.oracle_recall=%s", recall);
	snprintf(f, sizeof f, "policy.predictor.oracle_fp_rate=%s", fp);
	const char *sets[] = {"kvcache.block_tokens=16", "policy.replication.name=speculative",
			      "policy.predictor.name=oracle", r, f};
	groups_t g = {0};
	sim_source_t src = {groups_next, &g, "groups"};
	return sf_run_source(NULL, sets, 5, &src);
}

static double get(const sim_results_t *r, const char *name)
{
	return sim_results_get(r, name);
}

/* Every group's first request shares nothing; the other K - 1 share P blocks. */
static void test_oracle_recall_half_measures_half(void **st)
{
	(void)st;
	sim_results_t r = run_oracle("0.5", "0");
	double rec = get(&r, "forecast.recall");
	printf("oracle_recall 0.5 on %d groups: forecast.recall %.4f\n", G, rec);
	assert_true(get(&r, "forecast.requests_eligible") == G * (K - 1));
	/* each group is reported with probability 1/2, drawn once: recall is
	 * Binomial(G, 1/2) / G, sd 0.5 / sqrt(G) = 0.025; within 4 sd */
	assert_true(fabs(rec - 0.5) <= 4 * 0.5 / sqrt((double)G));
	/* what is reported is true */
	assert_true(get(&r, "forecast.precision") == 1);
	sim_results_free(&r);
}

static void test_oracle_exact_gives_precision_and_recall_one(void **st)
{
	(void)st;
	sim_results_t r = run_oracle("1", "0");
	assert_true(get(&r, "forecast.requests_eligible") == G * (K - 1));
	assert_true(get(&r, "forecast.entries") > G);
	assert_true(get(&r, "forecast.recall") == 1);
	assert_true(get(&r, "forecast.recall_partial") == 1);
	assert_true(get(&r, "forecast.recall_x4") == 1);
	assert_true(get(&r, "forecast.precision") == 1);
	assert_true(get(&r, "forecast.precision_x4") == 1);
	sim_results_free(&r);
}

/* One false entry per true one, each naming a group with nothing in the
 * horizon: half the entries are false. Recall is untouched. */
static void test_oracle_fp_rate_one_halves_precision(void **st)
{
	(void)st;
	sim_results_t r = run_oracle("1", "1");
	double p = get(&r, "forecast.precision");
	printf("oracle_fp_rate 1: forecast.precision %.4f\n", p);
	assert_true(fabs(p - 0.5) < 0.05);
	assert_true(get(&r, "forecast.recall") == 1);
	/* a longer window catches some false entries' later requests */
	assert_true(get(&r, "forecast.precision_x4") >= p);
	sim_results_free(&r);
}

static const char *const forecast_names[] = {
    "forecast.entries",         "forecast.precision",     "forecast.precision_h4",
    "forecast.precision_x4",    "forecast.requests_eligible", "forecast.recall",
    "forecast.recall_h4",       "forecast.recall_x4",     "forecast.recall_partial",
    "forecast.placement_requests", "forecast.placement_acc",
    "forecast.leads",           "forecast.lead_mean_s",   "forecast.lead_p50_s",
};
#define N_NAMES (sizeof forecast_names / sizeof forecast_names[0])

static int is_share(const char *name)
{
	return strstr(name, "precision") || strstr(name, "recall") || strstr(name, "_acc");
}

static void test_realistic_predictors_give_reproducible_shares(void **st)
{
	(void)st;
	const char *preds[] = {"oracle", "repeat_count", "ewma", "holt", "hawkes"};
	for (size_t k = 0; k < sizeof preds / sizeof preds[0]; k++) {
		char p[64];
		snprintf(p, sizeof p, "policy.predictor.name=%s", preds[k]);
		const char *sets[] = {"policy.replication.name=speculative", p};
		sim_results_t a = sf_run(NULL, sets, 2), b = sf_run(NULL, sets, 2);
		assert_true(get(&a, "forecast.entries") > 0);
		assert_true(get(&a, "forecast.requests_eligible") > 0);
		/* the lead samples are the replicas used */
		assert_true(get(&a, "forecast.leads") == get(&a, "spec.replicas_used"));
		for (size_t i = 0; i < N_NAMES; i++) {
			double x = get(&a, forecast_names[i]), y = get(&b, forecast_names[i]);
			if (is_share(forecast_names[i]) && !isnan(x))
				assert_true(x >= 0 && x <= 1);
			if (!isnan(x) && strstr(forecast_names[i], "lead_"))
				assert_true(x >= 0);
			assert_true(x == y || (isnan(x) && isnan(y)));
		}
		printf("%-12s precision %.3f recall %.3f placement %.3f lead p50 %.3f s\n", preds[k],
		       get(&a, "forecast.precision"), get(&a, "forecast.recall"),
		       get(&a, "forecast.placement_acc"), get(&a, "forecast.lead_p50_s"));
		sim_results_free(&a);
		sim_results_free(&b);
	}
}

/* The default experiment replicates nothing, so no forecast is asked. */
static void test_run_without_forecast_reports_nan(void **st)
{
	(void)st;
	sim_results_t r = sf_run(NULL, NULL, 0);
	for (size_t i = 0; i < N_NAMES; i++) {
		int found = 0;
		for (size_t j = 0; j < r.n_metric; j++)
			if (!strcmp(r.metric[j].name, forecast_names[i])) {
				found = 1;
				assert_true(isnan(r.metric[j].value));
			}
		assert_true(found);
	}
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_oracle_recall_half_measures_half),
          cmocka_unit_test(test_oracle_exact_gives_precision_and_recall_one),
          cmocka_unit_test(test_oracle_fp_rate_one_halves_precision),
          cmocka_unit_test(test_realistic_predictors_give_reproducible_shares),
          cmocka_unit_test(test_run_without_forecast_reports_nan))

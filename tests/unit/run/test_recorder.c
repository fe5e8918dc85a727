/* The recorder (sim/run/recorder.h) holds every summary metric's name: the
 * default experiment's /summary lists exactly the recorder's metrics, each
 * once, in its order and with its unit; names are unique; every row of a run
 * went through it (the request count matches the cluster's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/run/recorder.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

static void test_names_are_unique_and_ids_bounded(void **st)
{
	(void)st;
	for (int i = 0; i < REC_N_METRICS; i++) {
		const rec_metric_def_t *d = rec_metric_def(i);
		assert_non_null(d);
		assert_true(strlen(d->name) > 0 && strlen(d->name) < 48 && strlen(d->unit) < 16);
		assert_true(strlen(d->doc) > 0);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(d->name, rec_metric_def(j)->name);
	}
	assert_null(rec_metric_def(-1));
	assert_null(rec_metric_def(REC_N_METRICS));
	sim_results_t r = {0};
	assert_int_equal(rec_metric(&r, REC_N_METRICS, 1), KS_EINPUT);
	assert_int_equal(r.n_metric, 0);
	assert_int_equal(rec_metric(&r, REC_TTFT_P99, 2.5), 0);
	assert_string_equal(r.metric[0].name, "ttft_p99_ms");
	assert_string_equal(r.metric[0].unit, "ms");
	sim_results_free(&r);
}

static void test_summary_is_the_recorders_list(void **st)
{
	(void)st;
	/* the tiers' family only where a tier below host memory is on, the
	 * bound's only with output.oracle_bound, the view's only with
	 * output.view_quality, the cold join's only with cluster.join_instances,
	 * the forecasts' per-prefix pair only where a policy asks a forecast */
	const char *tiers[] = {"kvcache.nvme_kv_gb=100",   "kvcache.pool_kv_gb=100",
			       "output.oracle_bound=true", "output.view_quality=true",
			       "cluster.join_instances=1", "cluster.join_every_s=5",
			       "policy.replication.name=speculative", "experiment.until_s=20"};
	for (int on = 0; on < 2; on++) {
		sim_results_t res = sf_run(NULL, tiers, on ? 8 : 0);
		int n_tier = REC_LINK_BUSY_BG_POOL - REC_TOK_FETCHED_NVME + 1;
		int n_bound = REC_BOUND_NETWORK_COST_BLOCKS - REC_BOUND_LOOKUPS_BLOCKS + 1;
		int n_view = REC_VIEW_DELAY_MEAN_MS - REC_VIEW_MISROUTED_SHARE + 1;
		int n_join = REC_JOIN_LAST_S - REC_JOIN_INSTANCES + 1;
		int n_fp = REC_FORECAST_PREFIX_PRECISION - REC_FORECAST_PREFIXES + 1;
		assert_int_equal(res.n_metric,
				 REC_N_METRICS - (on ? 0 : n_tier + n_bound + n_view + n_join + n_fp));
		for (int i = 0, j = 0; i < REC_N_METRICS; i++) {
			if (!on && i >= REC_TOK_FETCHED_NVME && i <= REC_LINK_BUSY_BG_POOL)
				continue;
			if (!on && i >= REC_BOUND_LOOKUPS_BLOCKS && i <= REC_BOUND_NETWORK_COST_BLOCKS)
				continue;
			if (!on && i >= REC_VIEW_MISROUTED_SHARE && i <= REC_VIEW_DELAY_MEAN_MS)
				continue;
			if (!on && i >= REC_JOIN_INSTANCES && i <= REC_JOIN_LAST_S)
				continue;
			if (!on && i >= REC_FORECAST_PREFIXES && i <= REC_FORECAST_PREFIX_PRECISION)
				continue;
			assert_string_equal(res.metric[j].name, rec_metric_def(i)->name);
			assert_string_equal(res.metric[j++].unit, rec_metric_def(i)->unit);
		}
		assert_true(res.n_req > 0);
		assert_true(sim_results_get(&res, "requests") == (double)res.n_req);
		sim_results_free(&res);
	}
}

TEST_MAIN(cmocka_unit_test(test_names_are_unique_and_ids_bounded),
          cmocka_unit_test(test_summary_is_the_recorders_list))

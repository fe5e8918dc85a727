/* Predictors are fed arrivals only when a replication policy reads their
 * forecasts (sim/run/sim_arrival.c sim_on_arrival; pol.h: a timing with horizon_ns
 * 0 ignores forecasts): under replication = none the predictor sees no
 * arrival at all, under speculative (horizon 10 s) it sees every one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/test_main.h"

/* A predictor that only counts the arrivals it is shown. */
static uint64_t observed;

static int cnt_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)params;
	(void)seed;
	(void)e;
	*state = &observed;
	return 0;
}

static void cnt_free(void *st)
{
	(void)st;
}

static int cnt_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	(void)a;
	(void)e;
	++*(uint64_t *)st;
	return 0;
}

static int cnt_forecast(void *st, int64_t now, int64_t horizon_ns, pol_forecast_t *out, err_t *e)
{
	(void)st;
	(void)now;
	(void)horizon_ns;
	(void)e;
	*out = (pol_forecast_t){0};
	return 0;
}

static const struct pol_predictor_ops counter = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "observe_counter", "Counts observed arrivals.",
             NULL, 0, 0, cnt_init, cnt_free}, /* no parameters */
    .observe = cnt_observe,
    .forecast = cnt_forecast,
};

/* Runs the default experiment's first 5 s under the counting predictor and
 * replication policy repl; returns the requests in the results. */
static size_t run_counted(const char *repl)
{
	pol_registry_t *reg = pol_registry_new();
	err_t e = {0};
	assert_non_null(reg);
	assert_int_equal(pol_registry_add(reg, &counter.base, &e), 0);
	char rs[64];
	snprintf(rs, sizeof rs, "policy.replication.name=%s", repl);
	const char *sets[] = {"trace.duration_s=5", "policy.predictor.name=observe_counter", rs};
	cfg_t *cfg = NULL;
	int rc = cli_load_config_ex(NULL, sets, 3, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	sim_results_t r;
	observed = 0;
	if ((rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg}, &r, &e)))
		fail_msg("%s", e.msg);
	size_t n = r.n_req;
	sim_results_free(&r);
	cli_config_free(cfg);
	pol_registry_free(reg);
	return n;
}

static void test_predictor_not_fed_without_replication(void **st)
{
	(void)st;
	assert_true(run_counted("none") > 0);
	assert_int_equal(observed, 0);
}

static void test_predictor_fed_every_arrival_under_speculative(void **st)
{
	(void)st;
	size_t n = run_counted("speculative");
	assert_true(n > 0);
	assert_int_equal(observed, n);
}

TEST_MAIN(cmocka_unit_test(test_predictor_not_fed_without_replication),
          cmocka_unit_test(test_predictor_fed_every_arrival_under_speculative))

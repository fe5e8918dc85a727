/* The simulator tells an ABI 4 predictor each routed request's later life
 * (pol.h "request life"; sim/run/sim_arrival.c on_admit, on_result): STARTED
 * once, at its first admission (arrival + its result row's queue_ns), on the
 * instance it was routed to, and ENDED once, at its row, completed or not.
 * ROUTED once, at its arrival, with its prompt's blocks.
 * A version 3 table's on_request is past its end for the host: never
 * called. And the lookahead predictor, fed so, forecasts in a whole run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>

#include "policies/pol.h"
#include "sim/base/results.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/test_main.h"

#define MAXR 4096

/* What the probe saw of each request id. */
typedef struct seen {
	int routed, started, ended, completed;
	uint32_t n_blocks;
	int32_t inst, start_inst, end_inst;
	int64_t arrival, t_start;
} seen_t;

static seen_t seen[MAXR];
static uint64_t n_events;

static int pr_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)params;
	(void)seed;
	(void)e;
	*state = seen;
	return 0;
}

static void pr_free(void *st)
{
	(void)st;
}

static uint64_t n_observed;

static int pr_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	(void)st;
	(void)a;
	(void)e;
	n_observed++;
	return 0;
}

static int pr_forecast(void *st, int64_t now, int64_t horizon_ns, pol_forecast_t *out, err_t *e)
{
	(void)st;
	(void)now;
	(void)horizon_ns;
	(void)e;
	*out = (pol_forecast_t){0};
	return 0;
}

static int pr_on_request(void *st, const pol_req_event_t *ev, err_t *e)
{
	(void)st;
	(void)e;
	assert_true(ev->id < MAXR);
	seen_t *x = &seen[ev->id];
	n_events++;
	if (ev->phase == POL_REQ_ROUTED) {
		x->routed++;
		x->inst = ev->inst;
		x->arrival = ev->t_ns;
		x->n_blocks = ev->n_blocks;
	} else if (ev->phase == POL_REQ_STARTED) {
		x->started++;
		x->start_inst = ev->inst;
		x->t_start = ev->t_ns;
	} else {
		x->ended++;
		x->end_inst = ev->inst;
		x->completed = ev->completed;
	}
	return 0;
}

static struct pol_predictor_ops probe = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "life_probe", "Records request lives.", NULL, 0, 0,
             pr_init, pr_free},
    .observe = pr_observe,
    .forecast = pr_forecast,
    .on_request = pr_on_request,
};

/* The default experiment's first `secs` s under predictor pred (the probe
 * registered with ABI version `version`) and speculative replication. */
static void run_with(const char *pred, int version, double secs, const char *extra,
                     sim_results_t *r)
{
	pol_registry_t *reg = pol_registry_new();
	err_t e = {0};
	assert_non_null(reg);
	probe.base.version = version;
	assert_int_equal(pol_registry_add(reg, &probe.base, &e), 0);
	char ps[64], ds[64];
	snprintf(ps, sizeof ps, "policy.predictor.name=%s", pred);
	snprintf(ds, sizeof ds, "trace.duration_s=%g", secs);
	const char *sets[] = {ds, ps, "policy.replication.name=speculative", extra};
	cfg_t *cfg = NULL;
	int rc =
	    cli_load_config_ex(NULL, sets, extra ? 4 : 3, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	memset(seen, 0, sizeof seen);
	n_events = n_observed = 0;
	if ((rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg}, r, &e)))
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	pol_registry_free(reg);
}

static void test_predictor_sees_each_request_start_and_end(void **st)
{
	(void)st;
	sim_results_t r;
	run_with("life_probe", POL_ABI_VERSION, 5, NULL, &r);
	assert_true(r.n_req > 10 && r.n_req < MAXR);
	size_t done = 0, with_blocks = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		const seen_t *x = &seen[q->id];
		if (q->instance < 0) { /* never routed: nothing after its arrival */
			assert_int_equal(x->routed + x->started + x->ended, 0);
			continue;
		}
		assert_int_equal(x->routed, 1);
		assert_int_equal(x->inst, q->instance);
		assert_true(x->arrival == q->arrival_ns);
		with_blocks += x->n_blocks > 0;
		assert_int_equal(x->ended, 1);
		assert_int_equal(x->end_inst, q->instance);
		assert_int_equal(x->completed, q->status == REQ_COMPLETED);
		if (q->queue_ns >= 0) { /* admitted: left its queue once, then */
			assert_int_equal(x->started, 1);
			assert_int_equal(x->start_inst, q->instance);
			assert_true(x->t_start == q->arrival_ns + q->queue_ns);
		}
		done += q->status == REQ_COMPLETED;
	}
	assert_true(done > 10);
	assert_true(with_blocks > 10);
	assert_true(n_observed == r.n_req); /* every arrival is still observed */
	sim_results_free(&r);
}

static void test_version_3_predictor_gets_no_request_events(void **st)
{
	(void)st;
	sim_results_t r;
	run_with("life_probe", 3, 5, NULL, &r);
	assert_true(r.n_req > 10);
	assert_true(n_events == 0);
	sim_results_free(&r);
}

/* The lookahead predictor in a whole run of the default experiment: its
 * forecasts are scored (forecast.precision is a number, not NaN: entries
 * were made) and the run is a pure function of its inputs. */
static void test_lookahead_forecasts_in_a_run(void **st)
{
	(void)st;
	sim_results_t r, r2;
	run_with("lookahead", POL_ABI_VERSION, 20, NULL, &r);
	run_with("lookahead", POL_ABI_VERSION, 20, NULL, &r2);
	double p = sim_results_get(&r, "forecast.precision");
	print_message("lookahead: forecast.precision %.4f recall %.4f\n", p,
	              sim_results_get(&r, "forecast.recall"));
	assert_false(isnan(p));
	assert_true(p == sim_results_get(&r2, "forecast.precision"));
	sim_results_free(&r);
	sim_results_free(&r2);
}

TEST_MAIN(cmocka_unit_test(test_predictor_sees_each_request_start_and_end),
          cmocka_unit_test(test_version_3_predictor_gets_no_request_events),
          cmocka_unit_test(test_lookahead_forecasts_in_a_run))

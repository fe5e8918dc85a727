/* Placement accuracy and lead time in a whole run, on a hand scenario with
 * known answers: two instances, round-robin routing, and a replication
 * policy that copies one request's prefix from instance 0 to 1 at its first
 * tick (1 s). Requests 1..4 then alternate 1, 0, 1, 0: two of the four that
 * arrive while the replica exists land on it, and the first of them (5 s,
 * on an idle instance) is its first use. A copy cancelled at once makes no
 * replica. Checks the hooks in sim_core.c and sim_copy.c that feed
 * sim/run/forecast.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#define S 1000000000LL
enum { SHARED = 4, BASE = 1000 };

static struct {
	int fired, cancel;
	uint64_t copy;
} once;

static int once_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)params;
	(void)seed;
	(void)e;
	*state = &once;
	return 0;
}

static void once_free(void *st)
{
	(void)st;
}

static pol_repl_timing_t once_timing(const void *st)
{
	(void)st;
	return (pol_repl_timing_t){1 * S, 10 * S};
}

static int once_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                     const pol_forecast_t *fc, err_t *e)
{
	(void)st;
	(void)fc;
	(void)e;
	if (once.fired)
		return 0;
	once.fired = 1;
	const uint64_t b[SHARED] = {BASE, BASE + 1, BASE + 2, BASE + 3};
	assert_int_equal(a->copy(a->ctx, b, SHARED, 0, 1, POL_BG, &once.copy), POL_COPY_OK);
	assert_int_equal(v->now(v->ctx), 1 * S);
	if (once.cancel)
		assert_int_equal(a->cancel(a->ctx, once.copy), 0);
	return 0;
}

static const struct pol_replication_ops once_ops = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "copy_once",
             "Copies one prefix from instance 0 to 1 at the first tick.", NULL, 0, 0, once_init,
             once_free},
    .timing = once_timing,
    .on_tick = once_tick,
};

static sim_results_t run_once(int cancel)
{
	pol_registry_t *reg = pol_registry_new();
	err_t e = {0};
	assert_non_null(reg);
	assert_int_equal(pol_registry_add(reg, &once_ops.base, &e), 0);
	const char *sets[] = {"cluster.nodes=1",       "cluster.gpus_per_node=8",
	                      "cluster.tp=4",          "kvcache.block_tokens=16",
	                      "policy.routing.name=round_robin",
	                      "policy.replication.name=copy_once"};
	cfg_t *cfg = NULL;
	int rc = cli_load_config_ex(NULL, sets, 6, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	static const int64_t t[] = {0, 5 * S, 6 * S, 7 * S, 8 * S};
	sf_prefix_t p = sf_prefix(5, SHARED, BASE, 1 << 20, 8);
	p.t = t;
	sim_source_t src = {sf_prefix_next, &p, "prefix"};
	once.fired = 0;
	once.cancel = cancel;
	sim_results_t r;
	if ((rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg, .source = &src}, &r, &e)))
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	pol_registry_free(reg);
	return r;
}

static void test_placement_and_lead_of_one_replica(void **st)
{
	(void)st;
	sim_results_t r = run_once(0);
	assert_int_equal(r.n_req, 5);
	assert_true(sf_request(r.req, r.n_req, 1)->instance == 1);
	/* the copy lands when its last shard's flow ends */
	int64_t landed = -1;
	for (size_t i = 0; i < r.n_xfer; i++)
		if (r.xfer[i].klass == XFER_BACKGROUND && r.xfer[i].end_ns > landed)
			landed = r.xfer[i].end_ns;
	assert_true(landed > 1 * S && landed < 5 * S);
	assert_true(sim_results_get(&r, "forecast.placement_requests") == 4);
	assert_true(sim_results_get(&r, "forecast.placement_acc") == 0.5);
	assert_true(sim_results_get(&r, "forecast.leads") == 1);
	assert_true(sim_results_get(&r, "spec.replicas_used") == 1);
	double lead = (double)(5 * S - landed) / 1e9;
	printf("replica landed at %.9f s, lead %.9f s\n", (double)landed / 1e9, lead);
	assert_true(sim_results_get(&r, "forecast.lead_mean_s") == lead);
	assert_true(sim_results_get(&r, "forecast.lead_p50_s") == lead);
	sim_results_free(&r);
}

static void test_cancelled_copy_makes_no_replica(void **st)
{
	(void)st;
	sim_results_t r = run_once(1);
	assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
	assert_true(sim_results_get(&r, "forecast.placement_requests") == 0);
	assert_true(isnan(sim_results_get(&r, "forecast.placement_acc")));
	assert_true(sim_results_get(&r, "forecast.leads") == 0);
	assert_true(isnan(sim_results_get(&r, "forecast.lead_mean_s")));
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_placement_and_lead_of_one_replica),
          cmocka_unit_test(test_cancelled_copy_makes_no_replica))

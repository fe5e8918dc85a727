/* What routers see inside whole runs (sim/run/sim_view.c with policy.routing.view):
 * the computed view shows a replica while its copy is still in flight but
 * not a prefix still being prefilled; the routed view shows what was routed
 * at once, so a burst sharing a prefix stays on one instance under
 * cache_aware, where the computed view scatters it; the choices are the
 * same for the same seed. */
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
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* Runs b's requests (a prefix of b->shared blocks plus one block of their
 * own, arriving at b->t) under sets. */
static sim_results_t run_burst(const char **sets, int n_sets, const pol_registry_t *reg,
                               sf_prefix_t *b)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config_ex(NULL, sets, n_sets, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	sim_source_t src = {sf_prefix_next, b, "burst"};
	sim_results_t r;
	if ((rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg, .source = &src}, &r, &e)))
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	return r;
}

/* ---- a probe router: routes by plan and records what the view shows ---- */

static const uint32_t *probe_plan;
static uint32_t probe_seen[8][2]; /* [request][instance] matched blocks */

static int probe_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)st;
	for (uint32_t i = 0; i < 2; i++)
		probe_seen[r->id][i] = v->match(v->ctx, i, r->blocks, r->n_blocks);
	*inst = probe_plan[r->id];
	return POL_ACCEPT;
}

static const struct pol_routing_ops probe_ops = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "probe", "Routes by a test's plan.", NULL, 0, 0, NULL,
             NULL},
    .route = probe_route,
};

/* Two single-GPU instances, 20 shared blocks of 16 tokens, fetch always.
 * r0 (t = 0) computes the prefix on 0; r1 (1 us) arrives mid-prefill; r2
 * (500 ms, the prefix long computed) goes to 1, which fetches it from 0;
 * r3 (1 us later) arrives while that copy is in flight. */
static void run_probe(const char *view)
{
	static const int64_t t[] = {0, 1000, 500000000, 500001000};
	static const uint32_t plan[] = {0, 0, 1, 1};
	char vset[64];
	snprintf(vset, sizeof vset, "policy.routing.view=%s", view);
	const char *sets[] = {"model.name=Llama-3-8B",     "cluster.nodes=1",
	                      "cluster.gpus_per_node=2",   "cluster.tp=1",
	                      "kvcache.block_tokens=16",   "kvcache.fetch=always",
	                      "policy.routing.name=probe", vset};
	pol_registry_t *reg = pol_registry_new();
	err_t e = {0};
	if (pol_registry_add(reg, &probe_ops.base, &e))
		fail_msg("%s", e.msg);
	probe_plan = plan;
	memset(probe_seen, 0xff, sizeof probe_seen);
	sf_prefix_t b = sf_prefix(4, 20, 7000, 90000, 20);
	b.t = t;
	sim_results_t r = run_burst(sets, 8, reg, &b);
	for (size_t i = 0; i < r.n_req; i++)
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
	/* the copy really carried r3's prefix to instance 1 */
	assert_true(sim_results_get(&r, "tok_fetched_peer") >= 20 * 16);
	sim_results_free(&r);
	pol_registry_free(reg);
}

static void test_computed_view_shows_copy_in_flight_not_prefill_running(void **st)
{
	(void)st;
	run_probe("computed");
	assert_int_equal(probe_seen[0][0], 0);
	assert_int_equal(probe_seen[1][0], 0);  /* r0 still computing it */
	assert_int_equal(probe_seen[2][0], 20); /* computed */
	assert_int_equal(probe_seen[2][1], 0);
	assert_int_equal(probe_seen[3][0], 20);
	assert_int_equal(probe_seen[3][1], 20); /* in flight to 1: visible */
}

static void test_routed_view_shows_what_was_routed_at_once(void **st)
{
	(void)st;
	run_probe("routed");
	assert_int_equal(probe_seen[0][0], 0);
	assert_int_equal(probe_seen[1][0], 20); /* r0's prefix, mid-prefill */
	assert_int_equal(probe_seen[1][1], 0);
	assert_int_equal(probe_seen[2][1], 0); /* the fetch does not teach the router */
	assert_int_equal(probe_seen[3][1], 20);
}

/* Eight requests sharing a 40-block prefix, 10 us apart on four idle
 * instances: all arrive long before the first prefill ends. */
static sim_results_t run_ca_burst(const char *view, const char *seed)
{
	static const int64_t t[] = {0, 10000, 20000, 30000, 40000, 50000, 60000, 70000};
	char vset[64], sset[64];
	snprintf(vset, sizeof vset, "policy.routing.view=%s", view);
	snprintf(sset, sizeof sset, "experiment.seed=%s", seed);
	const char *sets[] = {"model.name=Llama-3-8B",
	                      "cluster.nodes=1",
	                      "cluster.gpus_per_node=4",
	                      "cluster.tp=1",
	                      "kvcache.block_tokens=16",
	                      "policy.routing.name=cache_aware",
	                      vset,
	                      sset};
	sf_prefix_t b = sf_prefix(8, 40, 7000, 90000, 20);
	b.t = t;
	return run_burst(sets, 8, NULL, &b);
}

static uint32_t distinct_instances(const sim_results_t *r, int32_t *first)
{
	uint32_t seen = 0, n = 0;
	for (size_t i = 0; i < r->n_req; i++) {
		assert_true(r->req[i].instance >= 0 && r->req[i].instance < 4);
		if (r->req[i].id == 0)
			*first = r->req[i].instance;
		if (!(seen & (1u << r->req[i].instance)))
			n++;
		seen |= 1u << r->req[i].instance;
	}
	return n;
}

static void test_cache_aware_routed_view_keeps_burst_on_one_instance(void **st)
{
	(void)st;
	int32_t first[3];
	const char *seeds[] = {"1", "2", "3"};
	for (int k = 0; k < 3; k++) {
		sim_results_t r = run_ca_burst("routed", seeds[k]);
		assert_int_equal(r.n_req, 8);
		assert_int_equal(distinct_instances(&r, &first[k]), 1);
		/* later requests wait for the prefix and hit it */
		for (size_t i = 0; i < r.n_req; i++)
			if (r.req[i].id > 0)
				assert_int_equal(r.req[i].tok_local, 40 * 16);
		sim_results_free(&r);
	}
	/* where the burst lands is a seeded draw among equal instances */
	assert_true(first[0] != first[1] || first[1] != first[2]);
	/* auto is routed for cache_aware */
	sim_results_t a = run_ca_burst("auto", "1"), b = run_ca_burst("routed", "1");
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_cache_aware_computed_view_scatters_burst(void **st)
{
	(void)st;
	int32_t first;
	sim_results_t r = run_ca_burst("computed", "1");
	assert_int_equal(distinct_instances(&r, &first), 4);
	sim_results_t again = run_ca_burst("computed", "1");
	assert_memory_equal(r.req, again.req, r.n_req * sizeof *r.req);
	sim_results_free(&r);
	sim_results_free(&again);
}

TEST_MAIN(cmocka_unit_test(test_computed_view_shows_copy_in_flight_not_prefill_running),
          cmocka_unit_test(test_routed_view_shows_what_was_routed_at_once),
          cmocka_unit_test(test_cache_aware_routed_view_keeps_burst_on_one_instance),
          cmocka_unit_test(test_cache_aware_computed_view_scatters_burst))

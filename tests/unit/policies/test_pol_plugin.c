/* Loads the example plugin ($BUILD/plugins/example_plugin.so), routes with
 * it, and exposes it to the config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/pol_fake.h"
#include "tests/fixtures/sim_fixture.h"
#include "sim/run/sim_schema.h"

static char so_path[4096];

static void test_plugin_loads_and_routes(void **st)
{
	(void)st;
	pol_registry_t *r = pol_registry_new();
	assert_non_null(r);
	assert_null(pol_find(r, POL_ROUTING, "most_free_kv"));
	err_t e = {0};
	if (pol_registry_load(r, so_path, &e))
		fail_msg("%s", e.msg);
	const pol_base_t *o = pol_find(r, POL_ROUTING, "most_free_kv");
	assert_non_null(o);
	assert_null(pol_find(NULL, POL_ROUTING, "most_free_kv")); /* built-ins unchanged */
	char *names = pol_names(r, POL_ROUTING);
	assert_non_null(strstr(names, ",most_free_kv"));
	free(names);

	fake_t f;
	fk_init(&f, 3, 16, 1);
	f.inst[0].kv_used_blocks = 500;
	f.inst[1].kv_used_blocks = 100;
	f.inst[2].kv_used_blocks = 300;
	pol_handle_t h;
	assert_int_equal(pol_open(r, POL_ROUTING, "most_free_kv", NULL, 1, &h, &e), 0);
	uint64_t b[1] = {1};
	pol_req_t q = {1, 0, b, 1, 16, 1, 0};
	uint32_t inst;
	const struct pol_routing_ops *ro = (const void *)h.ops;
	assert_int_equal(ro->route(h.state, &f.v, &q, &inst), POL_ACCEPT);
	assert_int_equal(inst, 1);
	pol_close(&h);
	/* its parameter goes through the same checks as built-ins' */
	assert_int_equal(pol_open(r, POL_ROUTING, "most_free_kv", "free_kv_reserve=-1", 1, &h, &e),
	                 KS_EINPUT);

	/* loading it twice is a duplicate name */
	assert_int_equal(pol_registry_load(r, so_path, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "already registered"));

	/* the config learns its name and parameter */
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	assert_int_equal(pol_cfg_register_plugins(s, r, &e), 0);
	cfg_t *c = cfg_new(s);
	assert_non_null(c);
	assert_int_equal(cfg_set(c, "policy.routing.name=most_free_kv", &e), 0);
	assert_int_equal(cfg_set(c, "policy.routing.free_kv_reserve=450", &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	assert_int_equal(pol_open_cfg(r, POL_ROUTING, c, 1, &h, &e), 0);
	ro = (const void *)h.ops;
	f.inst[1].kv_used_blocks = 600; /* free: 500, 400, 700: reserve 450 leaves 0 and 2 */
	assert_int_equal(ro->route(h.state, &f.v, &q, &inst), POL_ACCEPT);
	assert_int_equal(inst, 2);
	pol_close(&h);
	cfg_free(c);
	cfg_schema_free(s);
	pol_registry_free(r);
}

static void test_missing_plugin_is_an_input_error(void **st)
{
	(void)st;
	pol_registry_t *r = pol_registry_new();
	err_t e = {0};
	assert_int_equal(pol_registry_load(r, "/nonexistent/plugin.so", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "/nonexistent/plugin.so"));
	pol_registry_free(r);
}

/* ---- policies that fail without saying why, or answer out of contract ---- */

static int g_init_rc, g_route_rc;

/* init fails as the example plugin does when malloc fails: a code, no message */
static int bad_init(const void *p, uint64_t seed, void **state, err_t *e)
{
	(void)p;
	(void)seed;
	(void)e;
	if (g_init_rc)
		return g_init_rc;
	*state = malloc(sizeof(uint32_t));
	return *state ? 0 : KS_ENOMEM;
}

static int bad_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)v;
	(void)r;
	*inst = *(uint32_t *)st * 0; /* reads the state init made */
	return g_route_rc;
}

static const struct pol_routing_ops bad_ops = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "bad_plugin", "Test: fails on demand.", NULL, 0, 0,
             bad_init, free},
    .route = bad_route,
};

/* A whole run of 4 requests routed by bad_plugin: its code, e filled. */
static int run_bad(err_t *e)
{
	pol_registry_t *reg = pol_registry_new();
	assert_non_null(reg);
	assert_int_equal(pol_registry_add(reg, &bad_ops.base, e), 0);
	const char *sets[] = {"model.name=Llama-3-8B",   "cluster.nodes=1",
	                      "cluster.gpus_per_node=2", "cluster.tp=1",
	                      "kvcache.block_tokens=16", "policy.routing.name=bad_plugin"};
	cfg_t *cfg = NULL;
	if (cli_load_config_ex(NULL, sets, 6, 0, reg, &cfg, e))
		fail_msg("%s", e->msg);
	sf_prefix_t p = sf_prefix(4, 2, 100, 9000, 4);
	p.gap_ns = 1000000;
	sim_source_t src = {sf_prefix_next, &p, "seq"};
	sim_results_t res;
	int rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg, .source = &src}, &res, e);
	if (!rc)
		sim_results_free(&res);
	cli_config_free(cfg);
	pol_registry_free(reg);
	return rc;
}

static void test_silent_init_failure_stops_the_run_naming_the_policy(void **st)
{
	(void)st;
	err_t e = {0};
	g_route_rc = POL_ACCEPT;
	g_init_rc = 0;
	assert_int_equal(run_bad(&e), 0); /* the policy itself works */
	g_init_rc = KS_ENOMEM;            /* was taken as success, then NULL state: SIGSEGV */
	assert_int_equal(run_bad(&e), KS_ENOMEM);
	assert_non_null(strstr(e.msg, "routing policy 'bad_plugin'"));
	assert_non_null(strstr(e.msg, "init failed (out of memory) and gave no reason"));
	g_init_rc = 3; /* no such answer */
	assert_int_equal(run_bad(&e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, "routing policy 'bad_plugin': init returned 3"));
	g_init_rc = 0;
}

static void test_unknown_route_code_names_policy_call_and_code(void **st)
{
	(void)st;
	err_t e = {0};
	g_init_rc = 0;
	g_route_rc = 7;
	assert_int_equal(run_bad(&e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, "routing policy 'bad_plugin': route returned 7"));
	assert_null(strstr(e.msg, "simulation failed"));
	g_route_rc = -99;
	assert_int_equal(run_bad(&e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, "route returned -99"));
	g_route_rc = KS_EIO; /* a known code without a reason */
	assert_int_equal(run_bad(&e), KS_EIO);
	assert_non_null(strstr(e.msg, "routing policy 'bad_plugin': route failed (I/O error)"));
	g_route_rc = POL_ACCEPT;
}

int main(void)
{
	const char *build = getenv("BUILD");
	snprintf(so_path, sizeof so_path, "%s/plugins/example_plugin.so", build ? build : "build");
	FILE *f = fopen(so_path, "rb");
	if (!f) {
		fprintf(stderr, "test_pol_plugin: %s not built (make build-tests builds it)\n",
		        so_path);
		return 1;
	}
	fclose(f);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_loads_and_routes),
	    cmocka_unit_test(test_missing_plugin_is_an_input_error),
	    cmocka_unit_test(test_silent_init_failure_stops_the_run_naming_the_policy),
	    cmocka_unit_test(test_unknown_route_code_names_policy_call_and_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

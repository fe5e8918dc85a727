/* Tests for the run's typed parameters (sim/run/sim_params.h): the key
 * tables of sim_cfg.c and sim/net/net_cfg.c fill sim_params_t
 * with named C values for every enum (no magic ints, no string compares at
 * the point of use), and the merged idle-window threshold reaches the
 * network whichever way idle windows are asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/cluster/cluster.h"
#include "sim/net/net_topo.h"
#include "sim/run/sim_int.h"
#include "sim/run/sim_params.h"
#include "tests/fixtures/sim_fixture.h"

static void fill(const char *set, sim_params_t *p)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(NULL, set ? &set : NULL, set ? 1 : 0, &cfg, &e);
	if (!rc)
		rc = sim_params_fill(cfg, p, &e);
	if (rc)
		fail_msg("%s", e.msg);
	cli_config_free(cfg); /* the test reads no borrowed string */
}

/* One int field of sim_params_t: its default and its value after one --set. */
typedef struct int_case {
	const char *set;
	size_t off;
	int def, want;
} int_case_t;

#define F(m) offsetof(sim_params_t, m)
static const int_case_t int_cases[] = {
    {"kvcache.fetch=always", F(fetch), SIM_FETCH_NEVER, SIM_FETCH_ALWAYS},
    {"kvcache.host_fetch=never", F(host_fetch), SIM_FETCH_COST, SIM_FETCH_NEVER},
    {"kvcache.busy_rule=recompute", F(busy_rule), BUSY_WAIT, BUSY_RECOMPUTE},
    {"kvcache.copy_from=uncomputed", F(copy_uncomputed), 0, 1},
    {"scheduler.mode=btb", F(sched_mode), SCHED_VLLM, SCHED_BTB},
    {"network.fabric=single", F(net.fabric), NET_FABRIC_LEAF_SPINE, NET_FABRIC_SINGLE},
    {"network.bg_schedule=rate_cap", F(net.bg_schedule), NET_BG_IMMEDIATE, NET_BG_RATE_CAP},
    {"network.bg_share=weighted", F(net.bg_share), NET_SHARE_STRICT, NET_SHARE_WEIGHTED},
    {"network.contention=none", F(net.contention_none), 0, 1},
    {"network.copy_charge=target_compute", F(net.copy_charge_compute), 0, 1},
};
#undef F

static void test_sim_params_hold_named_enum_values(void **st)
{
	(void)st;
	sim_params_t d, p;
	fill(NULL, &d);
	for (size_t i = 0; i < sizeof int_cases / sizeof int_cases[0]; i++) {
		const int_case_t *c = &int_cases[i];
		fill(c->set, &p);
		assert_int_equal(*(const int *)((const char *)&d + c->off), c->def);
		assert_int_equal(*(const int *)((const char *)&p + c->off), c->want);
	}
	fill("output.compression=7", &p);
	assert_int_equal(p.out.compression, 7);
	fill("experiment.seed=42", &p);
	assert_true(p.seed == 42);
	fill("slo.ttft_ms=250", &p);
	assert_true(p.ttft_ms == 250 && d.ttft_ms == 2000);
}

/* The run's header names kvcache.fetch from the filled value: each of its
 * values comes back as the text that set it. */
static void test_fetch_value_names_itself(void **st)
{
	(void)st;
	static const char *const names[] = {"never", "cost", "always"};
	sim_params_t p;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char set[64];
		snprintf(set, sizeof set, "kvcache.fetch=%s", names[i]);
		fill(set, &p);
		assert_string_equal(sim_fetch_name(p.fetch), names[i]);
	}
	assert_string_equal(sim_fetch_name(-1), "");
}

/* The idle_window transfer policy has no threshold of its own: the run
 * takes [network] idle_threshold, the one key for both ways of asking for
 * idle windows; a plugin's own threshold still wins. */
static void test_idle_window_takes_the_network_threshold(void **st)
{
	(void)st;
	sim_params_t p;
	fill("network.idle_threshold=0.35", &p);
	pol_handle_t h;
	err_t e = {0};
	assert_int_equal(pol_open(NULL, POL_TRANSFER, "idle_window", NULL, 1, &h, &e), 0);
	pol_xfer_mode_t pm;
	double pparam, param;
	net_bg_mode_t mode;
	((const struct pol_transfer_ops *)(const void *)h.ops)->mode(h.state, &pm, &pparam);
	pol_close(&h);
	sim_bg_schedule(pm, pparam, &p.net, &mode, &param);
	assert_int_equal(mode, NET_BG_IDLE_WINDOW);
	assert_true(param == 0.35);
	sim_bg_schedule(POL_XFER_IDLE_WINDOW, 0.6, &p.net, &mode, &param);
	assert_true(param == 0.6);
	/* with an immediate policy, [network] bg_schedule decides, same key */
	fill("network.bg_schedule=idle_window", &p);
	sim_bg_schedule(POL_XFER_IMMEDIATE, 0, &p.net, &mode, &param);
	assert_int_equal(mode, NET_BG_IDLE_WINDOW);
	assert_true(param == 0.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sim_params_hold_named_enum_values),
	    cmocka_unit_test(test_fetch_value_names_itself),
	    cmocka_unit_test(test_idle_window_takes_the_network_threshold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for typed policy parameters (policies/pol.h, ABI 3): a policy's
 * key table carries offsets into its params struct, init receives that
 * struct filled from defaults, overrides or a config, enum parameters take
 * their choices from their maps, and the registry refuses tables of the
 * untyped ABI and fields outside params_size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim_schema.h"

typedef struct probe_params {
	uint32_t width;
	double share;
	int mode; /* probe_mode_map */
	char *label;
} probe_params_t;

static const cfg_enum_t probe_mode_map[] = {{"fast", 20}, {"slow", 10}, {NULL, 0}};

static const cfg_tkey_t probe_keys[] = {
    {{"policy.routing", "probe_width", CFG_INT, "3", 1, 64, NULL, "", "w", "probe"},
     CFG_AT(U32, probe_params_t, width)},
    {{"policy.routing", "probe_share", CFG_FLOAT, "0.5", 0, 1, NULL, "", "s", "probe"},
     CFG_AT(DOUBLE, probe_params_t, share)},
    {{"policy.routing", "probe_mode", CFG_ENUM, "slow", 0, 0, NULL, "", "m", "probe"},
     CFG_AT_ENUM(probe_params_t, mode, probe_mode_map)},
    {{"policy.routing", "probe_label", CFG_STR, "none", 0, 0, NULL, "", "l", "probe"},
     CFG_AT(STRDUP, probe_params_t, label)},
};

/* What init saw, copied out (the struct is the handle's). */
static probe_params_t seen;
static int seen_calls;

static int probe_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	(void)e;
	const probe_params_t *p = params;
	seen = *p;
	seen.label = NULL;
	seen_calls++;
	*state = NULL;
	/* the owned string lives as long as the handle; check it here */
	return strcmp(p->label, "none") && strcmp(p->label, "tagged") ? KS_EINPUT : 0;
}

static int probe_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)st;
	(void)v;
	(void)r;
	*inst = 0;
	return POL_ACCEPT;
}

static const struct pol_routing_ops probe_ops = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "probe", "A test policy with one key of each kind.",
             probe_keys, sizeof probe_keys / sizeof probe_keys[0], sizeof(probe_params_t),
             probe_init, NULL},
    .route = probe_route,
};

/* Every test gets a registry of the built-ins and probe. */
static int reg_setup(void **state)
{
	err_t e = {0};
	pol_registry_t *r = pol_registry_new();
	if (!r || pol_registry_add(r, &probe_ops.base, &e))
		return -1;
	*state = r;
	return 0;
}

static int reg_teardown(void **state)
{
	pol_registry_free(*state);
	return 0;
}

static void test_init_receives_the_filled_struct(void **st)
{
	pol_registry_t *r = *st;
	err_t e = {0};
	pol_handle_t h;
	assert_int_equal(pol_open(r, POL_ROUTING, "probe", NULL, 1, &h, &e), 0);
	assert_int_equal(seen.width, 3);
	assert_true(seen.share == 0.5);
	assert_int_equal(seen.mode, 10); /* the map's value for "slow" */
	pol_close(&h);
	assert_int_equal(pol_open(r, POL_ROUTING, "probe",
	                          "probe_width=9,probe_mode=fast,probe_label=tagged", 1, &h, &e),
	                 0);
	assert_int_equal(seen.width, 9);
	assert_int_equal(seen.mode, 20);
	assert_string_equal(pol_param_str(&h.params, "probe_label"), "tagged");
	assert_string_equal(pol_param_str(&h.params, "probe_mode"), "fast");
	assert_true(pol_param_num(&h.params, "probe_width") == 9);
	pol_close(&h);
}

/* Overrides are checked in the config's words. */
static void test_overrides_are_checked_like_config_values(void **st)
{
	pol_registry_t *r = *st;
	err_t e = {0};
	pol_handle_t h;
	assert_int_equal(pol_open(r, POL_ROUTING, "probe", "probe_mode=fastt", 1, &h, &e),
	                 KS_EINPUT);
	assert_string_equal(e.msg, "routing policy 'probe': [policy.routing] probe_mode: 'fastt' is "
	                           "not one of: fast,slow (did you mean 'fast'?)");
	assert_int_equal(pol_open(r, POL_ROUTING, "probe", "probe_width=65", 1, &h, &e), KS_EINPUT);
	assert_string_equal(e.msg, "routing policy 'probe': [policy.routing] probe_width: 65 is out "
	                           "of range [1, 64]");
}

/* The same struct from a config: the plugin's keys join the schema with
 * their map's choices. */
static void test_config_values_fill_the_struct(void **st)
{
	pol_registry_t *r = *st;
	err_t e = {0};
	cfg_schema_t *s = cfg_schema_default();
	assert_int_equal(pol_cfg_register_plugins(s, r, &e), 0);
	assert_string_equal(cfg_schema_choices(s, "policy.routing", "probe_mode"), "fast,slow");
	cfg_t *c = cfg_new(s);
	assert_int_equal(cfg_load_string(c, "p.ini",
	                                 "[policy.routing]\nname = probe\nprobe_share = 0.125\n"
	                                 "probe_mode = fast\n",
	                                 &e),
	                 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	pol_handle_t h;
	assert_int_equal(pol_open_cfg(r, POL_ROUTING, c, 7, &h, &e), 0);
	assert_true(seen.share == 0.125);
	assert_int_equal(seen.mode, 20);
	assert_int_equal(seen.width, 3);
	pol_close(&h);
	cfg_free(c);
	cfg_schema_free(s);
}

static void test_registry_refuses_untyped_abi_and_stray_fields(void **st)
{
	pol_registry_t *r = *st;
	err_t e = {0};
	struct pol_routing_ops t = probe_ops; /* checked before the name is (a duplicate) */
	t.base.version = 2; /* untyped parameters: its table's layout differs */
	assert_int_equal(pol_registry_add(r, &t.base, &e), KS_EINPUT);
	char want[64]; /* the range grows with appended hooks (pol.h) */
	snprintf(want, sizeof want, "ABI version 2, host supports %d..%d", POL_ABI_MIN,
	         POL_ABI_VERSION);
	assert_non_null(strstr(e.msg, want));
	assert_non_null(strstr(e.msg, "rebuild"));
	t.base.version = POL_ABI_VERSION;
	t.base.params_size = offsetof(probe_params_t, label); /* label lies past it */
	assert_int_equal(pol_registry_add(r, &t.base, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "'probe_label' lies outside params_size"));
}

/* Built-in enum parameters take their choices from their maps too. */
static void test_builtin_enum_parameters_list_their_map(void **st)
{
	pol_registry_t *r = *st;
	cfg_schema_t *s = cfg_schema_default();
	assert_string_equal(cfg_schema_choices(s, "policy.routing", "balance_rule"), "sglang,btb");
	assert_string_equal(cfg_schema_choices(s, "policy.routing", "load_metric"),
	                    "requests,tokens,delay");
	assert_string_equal(cfg_schema_choices(s, "trace", "kind"),
	                    "auto,mooncake,bailian,burstgpt,azure,native,servegen,gen,spec");
	cfg_schema_free(s);
	pol_handle_t h;
	err_t e = {0};
	assert_int_equal(pol_open(r, POL_ROUTING, "cache_aware", "balance_rule=btb", 1, &h, &e), 0);
	assert_string_equal(pol_param_str(&h.params, "balance_rule"), "btb");
	pol_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_receives_the_filled_struct),
	    cmocka_unit_test(test_overrides_are_checked_like_config_values),
	    cmocka_unit_test(test_config_values_fill_the_struct),
	    cmocka_unit_test(test_registry_refuses_untyped_abi_and_stray_fields),
	    cmocka_unit_test(test_builtin_enum_parameters_list_their_map),
	};
	return cmocka_run_group_tests(tests, reg_setup, reg_teardown);
}

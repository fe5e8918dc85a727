/* Policy config sections, opening policies from a config, presets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pol.h"

static cfg_schema_t *S;

static int setup(void **st)
{
	(void)st;
	S = cfg_schema_default();
	return S ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	cfg_schema_free(S);
	return 0;
}

static void test_sections_list_every_builtin_and_its_parameters(void **st)
{
	(void)st;
	for (int f = 0; f < POL_NFAMILY; f++) {
		const cfg_key_t *k =
		    cfg_schema_find(S, pol_family_section((pol_family_t)f), "name");
		assert_non_null(k);
		char *names = pol_names(NULL, (pol_family_t)f);
		assert_string_equal(k->choices, names);
		free(names);
	}
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++)
		for (size_t i = 0; i < b->ops->n_params; i++) {
			const cfg_key_t *k =
			    cfg_schema_find(S, b->ops->params[i].section, b->ops->params[i].name);
			assert_non_null(k);
			assert_string_equal(k->owner, b->ops->name);
		}
}

static void test_parameter_of_unselected_policy_is_rejected(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	assert_int_equal(cfg_set(c, "policy.routing.name=least_load", &e), 0);
	assert_int_equal(cfg_set(c, "policy.routing.cache_threshold=0.7", &e), 0);
	assert_int_equal(cfg_finalize(c, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "cache_aware"));
	cfg_free(c);
}

static int view_routed(const char *name, const char *view)
{
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	char a[96];
	snprintf(a, sizeof a, "policy.routing.name=%s", name);
	assert_int_equal(cfg_set(c, a, &e), 0);
	if (view) {
		snprintf(a, sizeof a, "policy.routing.view=%s", view);
		assert_int_equal(cfg_set(c, a, &e), 0);
	}
	assert_int_equal(cfg_finalize(c, &e), 0); /* family-wide: valid with any router */
	int r = pol_routing_view_routed(c);
	cfg_free(c);
	return r;
}

/* auto is routed for cache_aware only (SGLang's router); explicit values
 * hold for every router; view_blocks 0 means the pool size. */
static void test_routing_view_auto_is_routed_for_cache_aware_only(void **st)
{
	(void)st;
	assert_true(view_routed("cache_aware", NULL));
	assert_true(view_routed("cache_aware", "auto"));
	assert_false(view_routed("least_load", NULL));
	assert_false(view_routed("kv_cost", "auto"));
	assert_false(view_routed("cache_aware", "computed"));
	assert_true(view_routed("least_load", "routed"));
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	assert_int_equal(cfg_finalize(c, &e), 0);
	assert_int_equal(pol_routing_view_blocks(c, 873), 873);
	assert_int_equal(cfg_set(c, "policy.routing.view_blocks=100", &e), 0);
	assert_int_equal(pol_routing_view_blocks(c, 873), 100);
	assert_int_equal(cfg_set(c, "policy.routing.view=guess", &e), KS_EINPUT);
	cfg_free(c);
}

static void test_open_from_config_uses_its_values(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	const char *text = "[policy.routing]\nname = cache_aware\ncache_threshold = 0.7\n"
			   "[policy.replication]\nname = speculative\nspec_saved_basis = min\n";
	assert_int_equal(cfg_load_string(c, "t.ini", text, &e), 0);
	assert_int_equal(cfg_set(c, "policy.replication.spec_vram_frac=0.2", &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	pol_handle_t h;
	assert_int_equal(pol_open_cfg(NULL, POL_ROUTING, c, 1, &h, &e), 0);
	assert_string_equal(h.ops->name, "cache_aware");
	assert_true(pol_param_num(&h.params, "cache_threshold") == 0.7);
	assert_true(pol_param_num(&h.params, "balance_abs_threshold") == 32);
	pol_close(&h);
	assert_int_equal(pol_open_cfg(NULL, POL_REPLICATION, c, 1, &h, &e), 0);
	assert_true(pol_param_num(&h.params, "spec_vram_frac") == 0.2);
	assert_string_equal(pol_param_str(&h.params, "spec_saved_basis"), "min");
	pol_close(&h);
	assert_int_equal(pol_open_cfg(NULL, POL_EVICTION, c, 1, &h, &e), 0);
	assert_string_equal(h.ops->name, "lru");
	pol_close(&h);
	cfg_free(c);
}

static void test_preset_sets_defaults_but_never_user_values(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	assert_int_equal(pol_preset_apply(c, "vllm", &e), 0);
	assert_int_equal(cfg_int(c, "kvcache", "block_tokens"), 16);
	assert_non_null(strstr(cfg_origin(c, "kvcache", "block_tokens"), "preset vllm"));
	cfg_free(c);

	c = cfg_new(S);
	assert_int_equal(cfg_set(c, "kvcache.block_tokens=64", &e), 0);
	assert_int_equal(pol_preset_apply(c, "sglang", &e), 0);
	assert_int_equal(cfg_int(c, "kvcache", "block_tokens"), 64);
	assert_string_equal(cfg_str(c, "policy.eviction", "name"), "lru");
	assert_int_equal(pol_preset_apply(c, "nope", &e), KS_EINPUT);
	cfg_free(c);
	/* every preset applies to the default schema */
	for (size_t i = 0; i < pol_presets_n; i++) {
		c = cfg_new(S);
		if (pol_preset_apply(c, pol_presets[i].name, &e))
			fail_msg("%s: %s", pol_presets[i].name, e.msg);
		assert_int_equal(cfg_finalize(c, &e), 0);
		cfg_free(c);
	}
}

static void test_set_opens_every_family_with_independent_seeds(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	assert_int_equal(cfg_set(c, "policy.routing.name=random", &e), 0);
	assert_int_equal(cfg_set(c, "policy.replication.name=speculative", &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	pol_set_t set;
	assert_int_equal(pol_set_open_cfg(NULL, c, 42, &set, &e), 0);
	for (int f = 0; f < POL_NFAMILY; f++)
		assert_non_null(set.h[f].ops);
	assert_string_equal(POL_SET_OPS(&set, POL_ROUTING, pol_routing_ops)->base.name, "random");
	pol_repl_timing_t t =
	    POL_SET_OPS(&set, POL_REPLICATION, pol_replication_ops)->timing(set.h[1].state);
	assert_int_equal(t.tick_ns, 100000000);
	pol_set_close(&set);
	for (int f = 0; f < POL_NFAMILY; f++)
		for (int g = 0; g < f; g++)
			assert_true(pol_seed(42, (pol_family_t)f) != pol_seed(42, (pol_family_t)g));
	assert_true(pol_seed(42, POL_ROUTING) == pol_seed(42, POL_ROUTING));
	assert_true(pol_seed(43, POL_ROUTING) != pol_seed(42, POL_ROUTING));
	cfg_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sections_list_every_builtin_and_its_parameters),
	    cmocka_unit_test(test_parameter_of_unselected_policy_is_rejected),
	    cmocka_unit_test(test_open_from_config_uses_its_values),
	    cmocka_unit_test(test_routing_view_auto_is_routed_for_cache_aware_only),
	    cmocka_unit_test(test_preset_sets_defaults_but_never_user_values),
	    cmocka_unit_test(test_set_opens_every_family_with_independent_seeds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

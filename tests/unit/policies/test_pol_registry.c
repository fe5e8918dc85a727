/* The registry, parameter parsing and the ABI checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policies/pol.h"
#include "policies/pol_int.h"

/* Each family lists exactly its entries of pol_builtins, in their order,
 * with and without a registry; nothing else names them. */
static void test_every_family_has_its_builtins(void **st)
{
	(void)st;
	pol_registry_t *r = pol_registry_new();
	assert_non_null(r);
	for (int f = 0; f < POL_NFAMILY; f++) {
		char want[1024] = "";
		for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++) {
			assert_int_equal(b->family, b->ops->family);
			if (b->family != (pol_family_t)f)
				continue;
			if (*want)
				strcat(want, ",");
			strcat(want, b->ops->name);
		}
		assert_true(*want);
		char *a = pol_names(NULL, (pol_family_t)f), *n = pol_names(r, (pol_family_t)f);
		assert_string_equal(a, want);
		assert_string_equal(n, want);
		free(a);
		free(n);
	}
	assert_non_null(pol_find(r, POL_ROUTING, "cache_aware"));
	assert_null(pol_find(r, POL_ROUTING, "lru"));
	assert_null(pol_find(r, POL_NFAMILY, "lru"));
	pol_registry_free(r);
}

static void test_every_builtin_opens_with_defaults_and_documents_itself(void **st)
{
	(void)st;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++) {
		const pol_base_t *o = b->ops;
		assert_int_equal(o->version, POL_ABI_VERSION);
		assert_true(o->doc && strlen(o->doc) > 20);
		for (size_t i = 0; i < o->n_params; i++)
			assert_true(o->params[i].key.doc && *o->params[i].key.doc);
		pol_handle_t h;
		err_t e = {0};
		if (pol_open(NULL, o->family, o->name, NULL, 1, &h, &e))
			fail_msg("%s: %s", o->name, e.msg);
		pol_close(&h);
	}
}

static void test_params_check_type_range_and_choices(void **st)
{
	(void)st;
	pol_handle_t h;
	err_t e = {0};
	assert_int_equal(
	    pol_open(NULL, POL_ROUTING, "cache_aware", "cache_threshold=0.7", 1, &h, &e), 0);
	assert_true(pol_param_num(&h.params, "cache_threshold") == 0.7);
	assert_true(pol_param_num(&h.params, "balance_abs_threshold") == 32);
	pol_close(&h);
	assert_int_equal(
	    pol_open(NULL, POL_ROUTING, "cache_aware", "cache_threshold=1.5", 1, &h, &e),
	    KS_EINPUT);
	assert_non_null(strstr(e.msg, "cache_threshold"));
	assert_int_equal(
	    pol_open(NULL, POL_ROUTING, "cache_aware", "cache_threshold=abc", 1, &h, &e),
	    KS_EINPUT);
	assert_int_equal(pol_open(NULL, POL_ROUTING, "cache_aware", "no_such=1", 1, &h, &e),
	                 KS_EINPUT);
	assert_int_equal(pol_open(NULL, POL_ROUTING, "least_load", "load_metric=bogus", 1, &h, &e),
	                 KS_EINPUT);
	assert_int_equal(pol_open(NULL, POL_PREDICTOR, "repeat_count", "rc_repeats=2.5", 1, &h, &e),
	                 KS_EINPUT);
	assert_int_equal(pol_open(NULL, POL_ROUTING, "nope", NULL, 1, &h, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "cache_aware")); /* lists the valid names */
}

static int dummy_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)st;
	(void)v;
	(void)r;
	*inst = 0;
	return POL_ACCEPT;
}

typedef struct dummy_params {
	uint32_t x;
} dummy_params_t;
static const cfg_tkey_t good_param[] = {
    {{"policy.routing", "dummy_x", CFG_INT, "1", 0, 9, NULL, "", "x", "dummy"},
     CFG_AT(U32, dummy_params_t, x)},
};
static const cfg_tkey_t clash_param[] = {
    {{"policy.routing", "cache_threshold", CFG_FLOAT, "1", 0, 9, NULL, "", "x", "dummy2"},
     CFG_NOWHERE},
};
static const cfg_tkey_t wrong_owner[] = {
    {{"policy.routing", "dummy_y", CFG_INT, "1", 0, 9, NULL, "", "x", "someone"}, CFG_NOWHERE},
};

static void test_registry_rejects_bad_tables(void **st)
{
	(void)st;
	pol_registry_t *r = pol_registry_new();
	err_t e = {0};
	struct pol_routing_ops t = {
	    {POL_ABI_VERSION, POL_ROUTING, "dummy", "doc", good_param, 1, sizeof(dummy_params_t), NULL,
	     NULL},
	    dummy_route};
	assert_int_equal(pol_registry_add(r, &t.base, &e), 0);
	assert_int_equal(pol_registry_add(r, &t.base, &e), KS_EINPUT); /* duplicate */
	struct pol_routing_ops v = t;
	v.base.name = "future";
	v.base.version = POL_ABI_VERSION + 1; /* built against a newer ABI */
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "ABI"));
	v = t;
	v.base.name = "Bad Name";
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	v = t;
	v.base.name = "dummy2";
	v.base.params = clash_param; /* same key as cache_aware's */
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	v = t;
	v.base.name = "dummy3";
	v.base.params = wrong_owner;
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	v = t;
	v.base.name = "dummy4";
	v.base.n_params = 0;
	v.route = NULL; /* a required hook */
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	v.base.family = POL_EVICTION; /* table of another family's shape */
	assert_int_equal(pol_registry_add(r, &v.base, &e), KS_EINPUT);
	pol_registry_free(r);
}

static void test_family_names_parse(void **st)
{
	(void)st;
	pol_family_t f;
	err_t e;
	assert_int_equal(pol_family_parse("eviction", &f, &e), 0);
	assert_int_equal(f, POL_EVICTION);
	assert_string_equal(pol_family_section(f), "policy.eviction");
	assert_int_equal(pol_family_parse("evict", &f, &e), KS_EINPUT);
	assert_null(pol_family_name(POL_NFAMILY));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_family_has_its_builtins),
	    cmocka_unit_test(test_every_builtin_opens_with_defaults_and_documents_itself),
	    cmocka_unit_test(test_params_check_type_range_and_choices),
	    cmocka_unit_test(test_registry_rejects_bad_tables),
	    cmocka_unit_test(test_family_names_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

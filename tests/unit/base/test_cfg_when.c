/* When a key acts (cfg_when_t in sim/base/cfg.h): the condition language on a
 * small schema of its own, then the shipped conditions on the real schema —
 * a key set where it has no effect is said once, with the reason and the
 * key that would act, and nothing is said for values nobody set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "tests/fixtures/cfg_fixture.h"
#include "sim/run/sim_schema.h"

/* ---- the language, on a schema of its own -------------------------------- */

typedef struct toy {
	int64_t n, m;
	double k;
	int a;
} toy_t;

static const cfg_enum_t a_map[] = {{"x", 0}, {"y", 1}, {"z", 2}, {NULL, 0}};
static const cfg_when_t when_xy = {"t.a = x|y", "set t.a = x"};
static const cfg_when_t when_product = {"t.n < t.m*2", NULL};
static const cfg_when_t when_dnf = {"t.a = z or t.n >= 3 and t.a != x", NULL};
static const cfg_when_t when_flag = {"t.on = true", NULL};
static const cfg_tkey_t toy_keys[] = {
    {{"t", "a", CFG_ENUM, "x", 0, 0, NULL, "", "selector", NULL},
     CFG_AT_ENUM(toy_t, a, a_map)},
    {{"t", "n", CFG_INT, "1", 0, 100, NULL, "", "n", NULL}, CFG_AT(I64, toy_t, n)},
    {{"t", "m", CFG_INT, "1", 0, 100, NULL, "", "m", NULL}, CFG_AT(I64, toy_t, m)},
    {{"t", "on", CFG_BOOL, "false", 0, 0, NULL, "", "flag", NULL}, CFG_NOWHERE},
    {{"t", "only_xy", CFG_FLOAT, "0", 0, 1, NULL, "", "acts under x or y", NULL},
     CFG_AT_WHEN(DOUBLE, toy_t, k, &when_xy)},
    {{"t", "below", CFG_INT, "0", 0, 9, NULL, "", "acts while n < 2m", NULL},
     CFG_NOWHERE_WHEN(&when_product)},
    {{"t", "dnf", CFG_INT, "0", 0, 9, NULL, "", "z, or n >= 3 off x", NULL},
     CFG_NOWHERE_WHEN(&when_dnf)},
    {{"t", "flagged", CFG_INT, "0", 0, 9, NULL, "", "acts with on", NULL},
     CFG_NOWHERE_WHEN(&when_flag)},
};

typedef struct fx {
	cfg_schema_t *s;
	cfg_t *c;
	FILE *warn;
	char *buf;
	size_t len;
	err_t e;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof *f);
	f->s = cfg_schema_new();
	assert_int_equal(cfg_schema_add_typed(f->s, toy_keys, sizeof toy_keys / sizeof toy_keys[0]),
	                 0);
	assert_int_equal(cfg_schema_check_when(f->s), 0);
	f->warn = open_memstream(&f->buf, &f->len);
	cfg_schema_set_warnings(f->s, f->warn);
	f->c = cfg_new(f->s);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	cfg_free(f->c);
	cfg_schema_free(f->s);
	fclose(f->warn);
	free(f->buf);
	free(f);
	return 0;
}

static const char *warnings(fx_t *f)
{
	fflush(f->warn);
	return f->buf ? f->buf : "";
}

static void set(fx_t *f, const char *a)
{
	int rc = cfg_set(f->c, a, &f->e);
	if (rc)
		fprintf(stderr, "%s\n", f->e.msg);
	assert_int_equal(rc, 0);
}

static int inert(fx_t *f, const char *name, char *why, size_t n)
{
	return cfg_key_inert(f->c, "t", name, why, n);
}

static void test_key_outside_its_condition_warns_once_with_the_key_to_use(void **state)
{
	fx_t *f = *state;
	set(f, "t.a=z");
	set(f, "t.only_xy=0.5");
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f),
	                    "kvsim: warning: --set: [t] only_xy: no effect: it acts only when "
	                    "t.a = x|y (here t.a = z); otherwise set t.a = x\n");
	/* once per key per schema: a clone finalized again (a sweep point) is quiet */
	cfg_t *d = cfg_clone(f->c);
	assert_int_equal(cfg_finalize(d, &f->e), 0);
	cfg_free(d);
	assert_int_equal(strlen(warnings(f)), strlen("kvsim: warning: --set: [t] only_xy: no "
	                                             "effect: it acts only when t.a = x|y (here "
	                                             "t.a = z); otherwise set t.a = x\n"));
	/* under y it acts */
	char why[512] = "";
	set(f, "t.a=y");
	assert_int_equal(inert(f, "only_xy", why, sizeof why), 0);
	assert_string_equal(why, "");
}

static void test_key_inside_its_condition_says_nothing(void **state)
{
	fx_t *f = *state;
	set(f, "t.only_xy=0.5"); /* t.a defaults to x */
	set(f, "t.below=3");
	set(f, "t.flagged=1");
	set(f, "t.on=yes");
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f), "");
}

/* A product of keys on the right; the message gives both sides' values. */
static void test_comparison_against_a_product_names_both_sides(void **state)
{
	fx_t *f = *state;
	char why[512];
	set(f, "t.n=7");
	set(f, "t.m=4");
	assert_int_equal(inert(f, "below", why, sizeof why), 0); /* 7 < 8 */
	set(f, "t.n=9");
	assert_int_equal(inert(f, "below", why, sizeof why), 1);
	assert_string_equal(why, "no effect: it acts only when t.n < t.m*2 (here t.n = 9, "
	                         "t.m*2 = 8)");
	set(f, "t.n=8"); /* 8 < 8 fails too */
	assert_int_equal(inert(f, "below", why, sizeof why), 1);
}

/* "and" binds tighter than "or"; each failing conjunction names the first
 * clause that failed it, each key once. */
static void test_or_of_ands_names_the_first_failed_clause_of_each(void **state)
{
	fx_t *f = *state;
	char why[512];
	set(f, "t.n=1"); /* a = x: "a = z" fails, "n >= 3" fails first */
	assert_int_equal(inert(f, "dnf", why, sizeof why), 1);
	assert_string_equal(why, "no effect: it acts only when t.a = z or t.n >= 3 and t.a != x "
	                         "(here t.a = x, t.n = 1)");
	set(f, "t.n=5"); /* n >= 3 holds, a != x fails: a named once */
	assert_int_equal(inert(f, "dnf", why, sizeof why), 1);
	assert_string_equal(why, "no effect: it acts only when t.a = z or t.n >= 3 and t.a != x "
	                         "(here t.a = x)");
	set(f, "t.a=y");
	assert_int_equal(inert(f, "dnf", why, sizeof why), 0);
	set(f, "t.n=0");
	set(f, "t.a=z");
	assert_int_equal(inert(f, "dnf", why, sizeof why), 0);
}

/* Values nobody set (defaults) and a sweep axis's values (the sweep names
 * those) are not warned about; cfg_key_inert still answers for them. */
static void test_defaults_and_grid_values_are_not_warned(void **state)
{
	fx_t *f = *state;
	char why[512];
	set(f, "t.a=z");
	assert_int_equal(cfg_set_as(f->c, "t.only_xy=0.25", CFG_ORIGIN_GRID, &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f), "");
	assert_int_equal(inert(f, "only_xy", why, sizeof why), 1);
	assert_int_equal(inert(f, "flagged", why, sizeof why), 1); /* default, still inert */
}

/* A file's value is named by its place. */
static void test_file_value_is_named_by_file_and_line(void **state)
{
	fx_t *f = *state;
	assert_int_equal(cfg_load_string(f->c, "exp.ini", "[t]\na = z\nonly_xy = 0.5\n", &f->e), 0);
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_non_null(strstr(warnings(f), "kvsim: warning: exp.ini:3: [t] only_xy: no effect"));
}

/* A condition that names no key, uses an unknown operator, lists a value
 * its enum key does not have or is cut short is a programming error the
 * schema refuses. */
static void test_bad_condition_is_refused_by_the_schema(void **state)
{
	(void)state;
	static const cfg_when_t bad[] = {
	    {"t.nope = 1", NULL}, {"t.a ~ x", NULL},        {"t.a = w", NULL},
	    {"t.a = x and", NULL}, {"t.a = x but t.n = 1", NULL}, {"t.a < 3", NULL},
	    {"t.n < t.a", NULL},   {"t.n = two", NULL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cfg_tkey_t keys[] = {toy_keys[0], toy_keys[1],
		                     {{"t", "k", CFG_INT, "0", 0, 9, NULL, "", "k", NULL},
		                      CFG_NOWHERE_WHEN(&bad[i])}};
		cfg_schema_t *s = cfg_schema_new();
		assert_int_equal(cfg_schema_add_typed(s, keys, 3), 0);
		if (cfg_schema_check_when(s) != KS_EINPUT)
			fail_msg("accepted: %s", bad[i].cond);
		cfg_schema_free(s);
	}
}

/* A section's condition covers its keys, those added later included. */
static void test_section_condition_covers_keys_added_later(void **state)
{
	fx_t *f = *state;
	static const cfg_when_t w = {"t.on = true", "set t.on = true"};
	static const cfg_tkey_t later[] = {
	    {{"u", "p", CFG_INT, "0", 0, 9, NULL, "", "p", NULL}, CFG_NOWHERE}};
	assert_int_equal(cfg_schema_set_section_when(f->s, "u", &w), 0);
	assert_int_equal(cfg_schema_add_typed(f->s, later, 1), 0);
	assert_ptr_equal(cfg_key_when(f->s, "u", "p"), &w);
	assert_null(cfg_key_when(f->s, "t", "n"));
	set(f, "u.p=3");
	assert_int_equal(cfg_finalize(f->c, &f->e), 0);
	assert_string_equal(warnings(f), "kvsim: warning: --set: [u] p: no effect: it acts only "
	                                 "when t.on = true (here t.on = false); otherwise set t.on "
	                                 "= true\n");
}

/* ---- the shipped conditions ------------------------------------------------ */

/* The warnings of a config over the real schema: exp (NULL: none) loaded as
 * the default experiment's values, then sets applied. */
static char *default_warnings(const char *exp, const char *const *sets, size_t n)
{
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	char *buf = NULL;
	size_t len = 0;
	FILE *w = open_memstream(&buf, &len);
	cfg_schema_set_warnings(s, w);
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	if (exp)
		assert_int_equal(cfg_load_string(c, CFG_ORIGIN_DEFAULT_EXPERIMENT, exp, &e), 0);
	for (size_t i = 0; i < n; i++)
		if (cfg_set(c, sets[i], &e))
			fail_msg("%s", e.msg);
	assert_int_equal(cfg_finalize(c, &e), 0);
	fclose(w);
	cfg_free(c);
	cfg_schema_free(s);
	return buf;
}

#define WARNINGS(...)                                                                              \
	default_warnings(NULL, (const char *const[]){__VA_ARGS__},                                 \
	                 sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void expect(char *got, const char *want)
{
	if (!strstr(got, want))
		fail_msg("expected '%s' in:\n%s", want, got);
	free(got);
}

static void expect_none(char *got)
{
	if (*got)
		fail_msg("expected no warning, got:\n%s", got);
	free(got);
}

/* trace.rate on a trace file: the key that acts is trace.rate_scale. */
static void test_rate_on_a_trace_file_warns_naming_rate_scale(void **state)
{
	(void)state;
	expect(WARNINGS("trace.path=x.jsonl", "trace.rate=20"),
	       "kvsim: warning: --set: [trace] rate: no effect: it acts only when trace.kind = gen "
	       "and trace.gen = poisson|gamma|weibull|flash|diurnal (here trace.kind = auto); "
	       "otherwise use trace.rate_scale");
	expect(WARNINGS("trace.kind=mooncake", "trace.rate=20"), "(here trace.kind = mooncake)");
	expect_none(WARNINGS("trace.path=x.jsonl", "trace.rate_scale=2"));
	expect_none(WARNINGS("trace.kind=gen", "trace.gen=gamma", "trace.rate=20"));
	/* the generators that ignore it (the default experiment's fan-out) */
	expect(WARNINGS("trace.kind=gen", "trace.gen=fanout", "trace.rate=40"),
	       "(here trace.gen = fanout); otherwise use trace.rate_scale");
	expect(WARNINGS("trace.kind=gen", "trace.gen=mmpp", "trace.rate=40"),
	       "(here trace.gen = mmpp)");
}

/* All GPUs under one leaf (4 x 8 GPUs, 32 per leaf): oversubscription
 * cannot act; the warning says to lower gpus_per_leaf. */
static void test_oversubscription_under_one_leaf_warns_to_lower_gpus_per_leaf(void **state)
{
	(void)state;
	expect(WARNINGS("network.oversubscription=4"),
	       "kvsim: warning: --set: [network] oversubscription: no effect: it acts only when "
	       "network.fabric = leaf_spine and network.gpus_per_leaf < "
	       "cluster.nodes*cluster.gpus_per_node (here network.gpus_per_leaf = 32, "
	       "cluster.nodes*cluster.gpus_per_node = 32); otherwise lower network.gpus_per_leaf");
	expect_none(WARNINGS("network.oversubscription=4", "network.gpus_per_leaf=8"));
	expect_none(WARNINGS("network.oversubscription=4", "cluster.nodes=8"));
	expect(WARNINGS("network.fabric=single", "network.oversubscription=4"),
	       "(here network.fabric = single)");
}

/* A predictor, or a predictor's parameter, without a replication policy
 * that asks for forecasts. */
static void test_predictor_without_a_forecasting_replication_warns(void **state)
{
	(void)state;
	expect(WARNINGS("policy.predictor.name=holt"),
	       "kvsim: warning: --set: [policy.predictor] name: no effect: it acts only when "
	       "policy.replication.name != none|reactive_hotspot|full|early_rdma or "
	       "policy.replication.name = early_rdma and policy.replication.early_trigger = "
	       "forecast (here policy.replication.name = none); otherwise select a replication "
	       "policy that forecasts");
	expect(WARNINGS("policy.replication.name=early_rdma",
	                "policy.replication.early_trigger=arrival", "policy.predictor.name=hawkes"),
	       "(here policy.replication.name = early_rdma, policy.replication.early_trigger = "
	       "arrival)");
	expect(WARNINGS("policy.predictor.name=holt", "policy.predictor.holt_alpha=0.5"),
	       "[policy.predictor] holt_alpha: no effect");
	expect_none(WARNINGS("policy.replication.name=speculative", "policy.predictor.name=holt"));
	expect_none(WARNINGS("policy.replication.name=early_rdma", "policy.predictor.name=holt"));
	/* another predictor's parameter: the owner's warning, not a second one */
	char *w = WARNINGS("policy.predictor.holt_alpha=0.5");
	assert_non_null(strstr(w, "holt_alpha: ignored: parameter of 'holt'"));
	assert_null(strstr(w, "no effect"));
	free(w);
}

/* Keys of a generator other than the selected one, of the disaggregated
 * pools without disagg, of an events view under another view. */
static void test_keys_of_an_unselected_mode_warn(void **state)
{
	(void)state;
	expect(WARNINGS("trace.kind=gen", "trace.gen=fanout", "trace.crowd_size=8"),
	       "[trace] crowd_size: no effect: it acts only when trace.kind = gen and trace.gen = "
	       "crowd (here trace.gen = fanout)");
	expect(WARNINGS("trace.kind=gen", "trace.gen=flash", "trace.flash_tau_s=2"),
	       "(here trace.flash_shape = step)");
	expect(WARNINGS("trace.users=4"), "[trace] users: no effect");
	expect(WARNINGS("trace.in_dist=fixed", "trace.in_sigma=0.5"),
	       "[trace] in_sigma: no effect: it acts only when trace.in_dist = lognormal (here "
	       "trace.in_dist = fixed)");
	expect_none(WARNINGS("trace.out_dist=zipf", "trace.out_zipf_s=1.5"));
	expect(WARNINGS("cluster.handoff=after_prefill"),
	       "[cluster] handoff: no effect: it acts only when cluster.disagg = true (here "
	       "cluster.disagg = false)");
	expect(WARNINGS("policy.routing.event_loss=0.1"),
	       "(here policy.routing.view = auto)");
	expect(WARNINGS("network.idle_threshold=0.3"),
	       "[network] idle_threshold: no effect");
	expect_none(WARNINGS("policy.transfer.name=idle_window", "network.idle_threshold=0.3"));
	expect_none(WARNINGS("trace.kind=gen", "trace.gen=crowd", "trace.crowd_size=8"));
}

/* Only what someone set warns: the default experiment's own keys (fan-out)
 * and a preset's values say nothing when another choice leaves them idle. */
static void test_values_nobody_set_never_warn(void **state)
{
	(void)state;
	expect_none(WARNINGS("policy.preset=vllm"));
	expect_none(default_warnings("[trace]\nkind = gen\ngen = fanout\nfanout_size = 48\n",
	                             (const char *const[]){"trace.gen=poisson"}, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_key_outside_its_condition_warns_once_with_the_key_to_use, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_key_inside_its_condition_says_nothing, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_comparison_against_a_product_names_both_sides,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_or_of_ands_names_the_first_failed_clause_of_each,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_defaults_and_grid_values_are_not_warned, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_file_value_is_named_by_file_and_line, setup,
	                                    teardown),
	    cmocka_unit_test(test_bad_condition_is_refused_by_the_schema),
	    cmocka_unit_test_setup_teardown(test_section_condition_covers_keys_added_later, setup,
	                                    teardown),
	    cmocka_unit_test(test_rate_on_a_trace_file_warns_naming_rate_scale),
	    cmocka_unit_test(test_oversubscription_under_one_leaf_warns_to_lower_gpus_per_leaf),
	    cmocka_unit_test(test_predictor_without_a_forecasting_replication_warns),
	    cmocka_unit_test(test_keys_of_an_unselected_mode_warn),
	    cmocka_unit_test(test_values_nobody_set_never_warn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

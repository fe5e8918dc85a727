/* Policy config sections, opening policies from a config, presets
 * (policies/pol_cfg.c, policies/presets/): parameters of a policy not selected
 * are ignored with one warning, presets fill in what the user did not set,
 * in runs and in every point of a sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/pol.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/out/out_sweep.h"
#include "sim/run/sim.h"
#include "sim/run/sim_schema.h"
#include "tests/fixtures/capture_fixture.h"

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
			    cfg_schema_find(S, b->ops->params[i].key.section, b->ops->params[i].key.name);
			assert_non_null(k);
			assert_string_equal(k->owner, b->ops->name);
		}
}

/* ---- helpers ---------------------------------------------------------- */

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The built-in default experiment with sets, optionally from file text. */
static cfg_t *load(const char *text, const char **sets, int n, err_t *e, int *rc)
{
	char path[] = "/tmp/test_pol_cfg_XXXXXX";
	if (text) {
		int fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
	}
	cfg_t *c = NULL;
	*rc = cli_load_config(text ? path : NULL, sets, n, &c, e);
	if (text)
		unlink(path);
	return c;
}

static cfg_t *load_ok(const char *text, const char **sets, int n)
{
	err_t e = {0};
	int rc;
	cfg_t *c = load(text, sets, n, &e, &rc);
	if (rc)
		fail_msg("%s", e.msg);
	return c;
}

static sim_results_t run(const cfg_t *c)
{
	sim_results_t r;
	err_t e = {0};
	if (sim_run(c, NULL, &r, &e))
		fail_msg("%s", e.msg);
	return r;
}

static void assert_same_run(const sim_results_t *a, const sim_results_t *b)
{
	assert_string_equal(a->config_text, b->config_text);
	assert_int_equal(a->n_req, b->n_req);
	for (size_t i = 0; i < a->n_req; i++) {
		assert_int_equal(a->req[i].instance, b->req[i].instance);
		assert_int_equal(a->req[i].ttft_ns, b->req[i].ttft_ns);
		assert_int_equal(a->req[i].e2e_ns, b->req[i].e2e_ns);
	}
	assert_true(sim_results_get(a, "sim_events") == sim_results_get(b, "sim_events"));
}

/* Section and name of a preset key ("a.b.c" splits into "a.b", "c"). */
static void split(const char *key, char *sec, size_t n, const char **name)
{
	const char *dot = strrchr(key, '.');
	assert_non_null(dot);
	snprintf(sec, n, "%.*s", (int)(dot - key), key);
	*name = dot + 1;
}

/* ---- sweepable configs -------------------------------------------------- */

static void test_parameter_of_unselected_policy_warns_once_and_changes_nothing(void **st)
{
	(void)st;
	const char *with[] = {"policy.routing.cache_threshold=0.7"};
	capture(2);
	cfg_t *c = load_ok(NULL, with, 1);
	sim_results_t a = run(c);
	/* a sweep over the router with two seeds: one warning, in the parent */
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	assert_int_equal(out_grid_add(g, "policy.routing.name=least_load,cache_aware", 0, &e), 0);
	assert_int_equal(out_grid_set_seeds(g, 2, &e), 0);
	for (size_t i = 0; i < out_grid_points(g); i++) {
		out_point_t p;
		assert_int_equal(out_point_make(g, c, "experiment.seed", i, &p, &e), 0);
		int ca = !strcmp(cfg_str(p.cfg, "policy.routing", "name"), "cache_aware");
		if (ca)
			assert_true(cfg_float(p.cfg, "policy.routing", "cache_threshold") == 0.7);
		out_point_free(&p);
	}
	char *err = captured(2);
	assert_int_equal(count_lines(err), 1);
	assert_string_equal(err, "kvsim: warning: --set: [policy.routing] cache_threshold: "
	                         "ignored: parameter of 'cache_aware', but name = least_load\n");
	free(err);
	/* The run is the run without the key. */
	cfg_t *d = load_ok(NULL, NULL, 0);
	sim_results_t b = run(d);
	assert_same_run(&a, &b);
	sim_results_free(&a);
	sim_results_free(&b);
	out_grid_free(g);
	cli_config_free(c);
	cli_config_free(d);
}

static void test_typo_in_policy_parameter_is_an_error_with_suggestion(void **st)
{
	(void)st;
	const char *typo[] = {"policy.routing.cache_treshold=0.5"};
	err_t e = {0};
	int rc;
	assert_null(load(NULL, typo, 1, &e, &rc));
	assert_int_equal(rc, KS_EINPUT);
	assert_string_equal(e.msg, "--set: [policy.routing] cache_treshold: unknown key (did you "
	                           "mean 'cache_threshold'?)");
	assert_null(load("[policy.routing]\nname = cache_aware\ncache_threshhold = 0.5\n", NULL, 0,
	                 &e, &rc));
	assert_non_null(strstr(e.msg, ":3: [policy.routing] cache_threshhold: unknown key (did you "
	                              "mean 'cache_threshold'?)"));
}

/* A value only the policy can judge (spec_vram_frac: auto or a number in
 * [0, 1]) is refused when it opens, with the place the value was set. */
static void test_value_a_policy_refuses_names_file_and_line(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	const char *text = "[policy.replication]\nname = speculative\nspec_vram_frac = half\n";
	assert_int_equal(cfg_load_string(c, "t.ini", text, &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	pol_handle_t h;
	assert_int_equal(pol_open_cfg(NULL, POL_REPLICATION, c, 1, &h, &e), KS_EINPUT);
	assert_string_equal(e.msg, "t.ini:3: replication policy 'speculative': "
	                           "[policy.replication] spec_vram_frac: expected auto or a number "
	                           "in [0, 1], got 'half'");
	assert_int_equal(cfg_set(c, "policy.replication.spec_vram_frac=1.5", &e), 0);
	assert_int_equal(pol_open_cfg(NULL, POL_REPLICATION, c, 1, &h, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "--set: replication policy 'speculative': "));
	assert_int_equal(cfg_set(c, "policy.replication.spec_vram_frac=auto", &e), 0);
	assert_int_equal(pol_open_cfg(NULL, POL_REPLICATION, c, 1, &h, &e), 0);
	pol_close(&h);
	cfg_free(c);
}

/* ---- presets ------------------------------------------------------------ */

static void test_every_preset_key_exists_and_validates(void **st)
{
	(void)st;
	err_t e = {0};
	size_t np;
	const pol_preset_t *all = pol_presets(&np);
	assert_true(np >= 7);
	for (size_t i = 0; i < np; i++) {
		const pol_preset_t *p = &all[i];
		assert_true(p->n > 0);
		assert_non_null(p->doc);
		cfg_t *c = cfg_new(S);
		char set[512];
		snprintf(set, sizeof set, "policy.preset=%s", p->name);
		assert_int_equal(cfg_set(c, set, &e), 0);
		assert_int_equal(cfg_finalize(c, &e), 0);
		for (size_t j = 0; j < p->n; j++) {
			char sec[128];
			const char *name;
			split(p->kv[j].key, sec, sizeof sec, &name);
			if (!cfg_schema_find(S, sec, name))
				fail_msg("preset %s: %s is not in the schema", p->name,
				         p->kv[j].key);
			assert_true(strlen(p->kv[j].source) > 10);
			/* the value passes the key's own type, range and choices */
			cfg_t *one = cfg_new(S);
			snprintf(set, sizeof set, "%s=%s", p->kv[j].key, p->kv[j].value);
			if (cfg_set(one, set, &e))
				fail_msg("preset %s: %s", p->name, e.msg);
			/* and the preset gave it that value, unless it is a parameter
			 * of a policy the preset does not select (btb's early_rdma
			 * keys apply once a user picks early_rdma) */
			const cfg_key_t *k = cfg_schema_find(S, sec, name);
			if (k->owner && strcmp(cfg_str(c, sec, "name"), k->owner)) {
				cfg_free(one);
				continue;
			}
			char org[64];
			snprintf(org, sizeof org, "preset %s", p->name);
			assert_string_equal(cfg_origin(c, sec, name), org);
			assert_string_equal(cfg_str(c, sec, name), cfg_str(one, sec, name));
			cfg_free(one);
		}
		cfg_free(c);
	}
	/* The selector offers none and every preset, and nothing else. */
	char want[512] = "--set: [policy] preset: 'zzzzzz' is not one of: none";
	for (size_t i = 0; i < np; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), ",%s", all[i].name);
	cfg_t *c = cfg_new(S);
	assert_int_equal(cfg_set(c, "policy.preset=zzzzzz", &e), KS_EINPUT);
	assert_string_equal(e.msg, want);
	assert_string_equal(cfg_str(c, "policy", "preset"), "none");
	cfg_free(c);
}

static void test_explicit_keys_override_a_preset_in_any_order(void **st)
{
	(void)st;
	const char *after[] = {"policy.preset=vllm", "kvcache.block_tokens=64"};
	const char *before[] = {"kvcache.block_tokens=64", "policy.preset=vllm"};
	const char *set_only[] = {"kvcache.block_tokens=64"};
	const char *set_preset[] = {"policy.preset=vllm"};
	cfg_t *c[6] = {
	    load_ok(NULL, after, 2),
	    load_ok(NULL, before, 2),
	    load_ok("[kvcache]\nblock_tokens = 64\n[policy]\npreset = vllm\n", NULL, 0),
	    load_ok("[policy]\npreset = vllm\n[kvcache]\nblock_tokens = 64\n", NULL, 0),
	    load_ok("[policy]\npreset = vllm\n", set_only, 1),
	    load_ok("[kvcache]\nblock_tokens = 64\n", set_preset, 1),
	};
	for (int i = 0; i < 6; i++) {
		assert_int_equal(cfg_int(c[i], "kvcache", "block_tokens"), 64);
		assert_string_equal(cfg_str(c[i], "kvcache", "fetch"), "never");
		assert_string_equal(cfg_origin(c[i], "kvcache", "fetch"), "preset vllm");
		assert_string_equal(cfg_str(c[i], "policy.routing", "name"), "round_robin");
		assert_int_equal(cfg_int(c[i], "scheduler", "max_num_seqs"), 0); /* the GPU's default */
		cli_config_free(c[i]);
	}
}

static void test_preset_reaches_the_run(void **st)
{
	(void)st;
	const char *preset[] = {"policy.preset=vllm"};
	cfg_t *c = load_ok(NULL, preset, 1);
	sim_results_t a = run(c);
	assert_non_null(strstr(a.config_text, "\npreset = vllm\n"));
	assert_non_null(strstr(a.config_text, "\nblock_tokens = 16\n"));
	assert_non_null(strstr(a.config_text, "\nfetch = never\n"));
	assert_non_null(strstr(a.config_text, "\nmax_num_seqs = 0\n"));
	/* the same run as every preset key given by hand */
	const pol_preset_t *p = cfg_preset(c);
	assert_non_null(p);
	assert_string_equal(p->name, "vllm");
	char buf[64][256];
	const char *sets[64];
	for (size_t j = 0; j < p->n; j++) {
		snprintf(buf[j], sizeof buf[j], "%s=%s", p->kv[j].key, p->kv[j].value);
		sets[j] = buf[j];
	}
	cfg_t *d = load_ok(NULL, sets, (int)p->n);
	sim_results_t b = run(d);
	assert_int_equal(a.n_req, b.n_req);
	for (size_t i = 0; i < a.n_req; i++)
		assert_int_equal(a.req[i].ttft_ns, b.req[i].ttft_ns);
	/* and not the run without it */
	cfg_t *n = load_ok(NULL, NULL, 0);
	sim_results_t z = run(n);
	assert_true(sim_results_get(&z, "ttft_completed_mean_ms") !=
	            sim_results_get(&a, "ttft_completed_mean_ms"));
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&z);
	cli_config_free(c);
	cli_config_free(d);
	cli_config_free(n);
}

static void test_grid_over_preset_gives_each_point_its_own(void **st)
{
	(void)st;
	const char *sets[] = {"policy.preset=vllm", "scheduler.max_batched_tokens=4096"};
	cfg_t *base = load_ok(NULL, sets, 2);
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	assert_int_equal(out_grid_add(g, "policy.preset=vllm,sglang,none", 0, &e), 0);
	out_point_t p[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(out_point_make(g, base, "experiment.seed", (size_t)i, &p[i], &e),
		                 0);
	/* the explicit key holds everywhere */
	for (int i = 0; i < 3; i++)
		assert_int_equal(cfg_int(p[i].cfg, "scheduler", "max_batched_tokens"), 4096);
	assert_int_equal(cfg_int(p[0].cfg, "kvcache", "block_tokens"), 16);
	assert_string_equal(cfg_str(p[0].cfg, "policy.routing", "name"), "round_robin");
	assert_int_equal(cfg_int(p[1].cfg, "kvcache", "block_tokens"), 1);
	assert_string_equal(cfg_str(p[1].cfg, "policy.routing", "name"), "cache_aware");
	assert_true(cfg_float(p[1].cfg, "policy.routing", "cache_threshold") == 0.3);
	assert_string_equal(cfg_origin(p[1].cfg, "kvcache", "block_tokens"), "preset sglang");
	/* nothing of the base's vllm leaks into the others */
	const cfg_key_t *seqs = cfg_schema_find(cfg_schema(base), "scheduler", "max_num_seqs");
	assert_int_equal(cfg_int(p[1].cfg, "scheduler", "max_num_seqs"), atoi(seqs->def));
	const cfg_key_t *fetch = cfg_schema_find(cfg_schema(base), "kvcache", "fetch");
	assert_string_equal(cfg_str(p[2].cfg, "kvcache", "fetch"), fetch->def);
	assert_string_equal(cfg_origin(p[2].cfg, "kvcache", "block_tokens"), "default");
	assert_string_equal(cfg_str(p[2].cfg, "policy.routing", "name"),
	                    cfg_schema_find(cfg_schema(base), "policy.routing", "name")->def);
	assert_string_not_equal(p[0].id, p[1].id);
	assert_string_not_equal(p[1].id, p[2].id);
	for (int i = 0; i < 3; i++)
		out_point_free(&p[i]);
	out_grid_free(g);
	cli_config_free(base);
}

/* `kvsim policies` with and without --presets. */
static char *policies_output(int presets_only)
{
	char a0[] = "policies", a1[] = "--presets";
	char *argv[] = {a0, a1, NULL};
	capture(1);
	int rc = pol_cli_main(presets_only ? 2 : 1, argv);
	char *out = captured(1);
	assert_int_equal(rc, 0);
	return out;
}

static void test_policies_lists_every_preset_its_values_and_sources(void **st)
{
	(void)st;
	size_t np;
	const pol_preset_t *all = pol_presets(&np);
	for (int only = 0; only < 2; only++) {
		char *out = policies_output(only);
		assert_non_null(strstr(out, "[policy] preset = ..."));
		for (size_t i = 0; i < np; i++) {
			const pol_preset_t *p = &all[i];
			char line[512];
			snprintf(line, sizeof line, "\n  %s\n", p->name);
			const char *at = strstr(out, line);
			if (!at)
				fail_msg("no preset %s in: %s", p->name, out);
			for (size_t j = 0; j < p->n; j++) {
				/* each value, followed by the first word of its source */
				snprintf(line, sizeof line, "\n      %s = %s\n          %.*s",
				         p->kv[j].key, p->kv[j].value,
				         (int)strcspn(p->kv[j].source, " "), p->kv[j].source);
				at = strstr(at, line);
				if (!at)
					fail_msg("preset %s: no '%s'", p->name, line);
			}
		}
		/* the overview lists the policies too, --presets only the presets */
		assert_int_equal(strstr(out, "[policy.routing] name = ...") == NULL, only);
		free(out);
	}
}

static void test_unknown_preset_is_an_error_naming_file_and_line(void **st)
{
	(void)st;
	err_t e = {0};
	int rc;
	assert_null(load("[cluster]\nnodes = 4\n\n[policy]\npreset = vlm\n", NULL, 0, &e, &rc));
	assert_int_equal(rc, KS_EINPUT);
	assert_non_null(strstr(e.msg, ":5: [policy] preset: 'vlm' is not one of: none,vllm,"));
	assert_non_null(strstr(e.msg, "(did you mean 'vllm'?)"));
	assert_int_equal(strncmp(e.msg, "/tmp/test_pol_cfg_", 18), 0);
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

/* pol_cfg_name reads each family's own name key, and pol_cfg_preset the
 * preset: every family set to a built-in other than its default (its last
 * choice, else its first), with a preset whose own names the explicit ones
 * override. */
static void test_cfg_name_reads_each_familys_selection(void **st)
{
	(void)st;
	cfg_t *c = cfg_new(S);
	err_t e = {0};
	assert_int_equal(cfg_finalize(c, &e), 0);
	assert_string_equal(pol_cfg_preset(c), "none");
	for (int f = 0; f < POL_NFAMILY; f++)
		assert_string_equal(pol_cfg_name(c, (pol_family_t)f),
		                    cfg_schema_find(S, pol_family_section((pol_family_t)f), "name")->def);
	char want[POL_NFAMILY][64];
	assert_int_equal(cfg_set(c, "policy.preset=vllm", &e), 0);
	for (int f = 0; f < POL_NFAMILY; f++) {
		const char *sec = pol_family_section((pol_family_t)f);
		const char *ch = cfg_schema_choices(S, sec, "name"), *last = strrchr(ch, ',');
		const char *def = cfg_schema_find(S, sec, "name")->def;
		snprintf(want[f], sizeof want[f], "%s", last ? last + 1 : ch);
		if (!strcmp(want[f], def))
			snprintf(want[f], sizeof want[f], "%.*s", (int)strcspn(ch, ","), ch);
		char set[128];
		snprintf(set, sizeof set, "%s.name=%s", sec, want[f]);
		assert_int_equal(cfg_set(c, set, &e), 0);
	}
	assert_int_equal(cfg_finalize(c, &e), 0);
	assert_string_equal(pol_cfg_preset(c), "vllm");
	for (int f = 0; f < POL_NFAMILY; f++)
		assert_string_equal(pol_cfg_name(c, (pol_family_t)f), want[f]);
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
	assert_string_equal(pol_param_str(&h.params, "spec_vram_frac"), "0.2");
	assert_string_equal(pol_param_str(&h.params, "spec_saved_basis"), "min");
	pol_close(&h);
	assert_int_equal(pol_open_cfg(NULL, POL_EVICTION, c, 1, &h, &e), 0);
	assert_string_equal(h.ops->name, "lru");
	pol_close(&h);
	cfg_free(c);
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
	    cmocka_unit_test(test_parameter_of_unselected_policy_warns_once_and_changes_nothing),
	    cmocka_unit_test(test_typo_in_policy_parameter_is_an_error_with_suggestion),
	    cmocka_unit_test(test_value_a_policy_refuses_names_file_and_line),
	    cmocka_unit_test(test_every_preset_key_exists_and_validates),
	    cmocka_unit_test(test_explicit_keys_override_a_preset_in_any_order),
	    cmocka_unit_test(test_preset_reaches_the_run),
	    cmocka_unit_test(test_grid_over_preset_gives_each_point_its_own),
	    cmocka_unit_test(test_unknown_preset_is_an_error_naming_file_and_line),
	    cmocka_unit_test(test_policies_lists_every_preset_its_values_and_sources),
	    cmocka_unit_test(test_cfg_name_reads_each_familys_selection),
	    cmocka_unit_test(test_open_from_config_uses_its_values),
	    cmocka_unit_test(test_routing_view_auto_is_routed_for_cache_aware_only),
	    cmocka_unit_test(test_set_opens_every_family_with_independent_seeds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* Tests for the typed config keys of models/ (models/mdl_cfg.h): [gpu],
 * [model] and [compute] fill an mdl_cfg_t through cfg_fill, compute.model
 * takes its choices and C values from its map, and the spec tables
 * (models/mdl_field.h) are both the spec-file keys and the config
 * overrides, so an override and a spec-file line of one key set the same
 * member. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "models/mdl_cfg.h"
#include "models/mdl_prof.h"
#include "tests/fixtures/cfg_fixture.h"
#include "tests/fixtures/test_main.h"

/* A config over the default schema with sets applied; filled into *m. */
static cfg_t *fill_with(cfg_schema_t **s, const char *const *sets, size_t n, mdl_cfg_t *m)
{
	cfg_t *c = cf_default_with(s, sets, n);
	err_t e = {0};
	if (mdl_cfg_fill(c, m, &e))
		fail_msg("mdl_cfg_fill: %s", e.msg);
	return c;
}

static void free_both(cfg_t *c, cfg_schema_t *s)
{
	cfg_free(c);
	cfg_schema_free(s);
}

/* Spec row k read as a typed key of the spec struct (its member). */
static cfg_tkey_t member_of(const mdl_spec_key_t *k)
{
	return k->file.t;
}

/* The number in row k's member of the spec struct at src. */
static double member_number(const mdl_spec_key_t *k, const void *src)
{
	cfg_tkey_t t = member_of(k);
	double v = 0;
	assert_true(cfg_field_number(&t, src, &v));
	return v;
}

/* The override slot of spec key name in a table. */
static const mdl_over_t *slot(const mdl_over_t *over, const mdl_spec_key_t *keys, size_t n,
                              const char *name)
{
	const mdl_spec_key_t *k = mdl_spec_key_find(keys, n, name);
	assert_non_null(k);
	return &over[k - keys];
}

static double term(const mdl_compute_params_t *p, size_t i)
{
	return *(const double *)((const char *)p + mdl_term_keys[i].cfg.at.off);
}

static void test_defaults_fill_the_struct(void **st)
{
	(void)st;
	cfg_schema_t *s;
	mdl_cfg_t m;
	cfg_t *c = fill_with(&s, NULL, 0, &m);
	assert_string_equal(m.gpu_name, "H100-SXM");
	assert_string_equal(m.gpu_file, "");
	assert_string_equal(m.model_name, "Llama-3-70B");
	assert_string_equal(m.model_file, "");
	/* every override is "from the spec" */
	for (size_t i = 0; i < mdl_hw_keys_n; i++)
		assert_true(m.gpu[i].v == -1 && m.gpu[i].choice == MDL_OVER_SPEC);
	for (size_t i = 0; i < mdl_llm_keys_n; i++)
		assert_true(m.model[i].v == -1 && m.model[i].choice == MDL_OVER_SPEC);
	/* the [compute] keys' defaults are the struct's (mdl_cost.c) */
	const mdl_compute_params_t *d = &mdl_compute_params_default;
	assert_true(m.compute.mfu == d->mfu);
	assert_true(m.compute.mbu == d->mbu);
	assert_true(m.compute.allreduce_bw_eff == d->allreduce_bw_eff);
	assert_int_equal(m.compute.allreduce_lat_ns, d->allreduce_lat_ns);
	assert_int_equal(m.compute.iter_overhead_ns, d->iter_overhead_ns);
	assert_int_equal(m.compute.model, MDL_MODEL_ROOFLINE);
	for (size_t i = 0; i < mdl_term_keys_n; i++)
		assert_true(term(&m.terms, i) == -1); /* from the calibration */
	assert_string_equal(m.calibration, "auto");
	assert_string_equal(m.profile, "");
	assert_string_equal(m.allreduce_profile, "");
	free_both(c, s);
}

static void test_overrides_fill_the_struct(void **st)
{
	(void)st;
	static const char *const sets[] = {
	    "gpu.name=B200",          "gpu.hbm_bw=1e12",       "gpu.nic_lat_ns=42",
	    "model.file=m.ini",       "model.layers=16",       "model.attention=mla",
	    "compute.mfu=0.4",        "compute.model=linear",  "compute.iter_overhead_ns=7",
	    "compute.calibration=none", "compute.profile=a.csv,b.csv"};
	cfg_schema_t *s;
	mdl_cfg_t m;
	cfg_t *c = fill_with(&s, sets, sizeof sets / sizeof sets[0], &m);
	assert_string_equal(m.gpu_name, "B200");
	assert_string_equal(m.model_file, "m.ini");
	assert_true(slot(m.gpu, mdl_hw_keys, mdl_hw_keys_n, "hbm_bw")->v == 1e12);
	assert_true(slot(m.gpu, mdl_hw_keys, mdl_hw_keys_n, "nic_lat_ns")->v == 42);
	assert_true(slot(m.gpu, mdl_hw_keys, mdl_hw_keys_n, "hbm_bytes")->v == -1);
	assert_true(slot(m.model, mdl_llm_keys, mdl_llm_keys_n, "layers")->v == 16);
	assert_int_equal(slot(m.model, mdl_llm_keys, mdl_llm_keys_n, "attention")->choice,
	                 MDL_ATTN_MLA);
	assert_true(m.compute.mfu == 0.4);
	assert_int_equal(m.compute.model, MDL_MODEL_LINEAR);
	assert_int_equal(m.compute.iter_overhead_ns, 7);
	assert_string_equal(m.calibration, "none");
	assert_string_equal(m.profile, "a.csv,b.csv");
	free_both(c, s);
}

/* Each roofline term key, as a [compute] config key and as a line of a
 * calibration file, sets the same member of mdl_compute_params_t and no
 * other: the term table (mdl_term_keys) is both. */
static void test_term_key_and_calibration_line_set_the_same_member(void **st)
{
	(void)st;
	for (size_t i = 0; i < mdl_term_keys_n; i++) {
		const char *key = mdl_term_keys[i].cfg.key.name;
		char set[96], text[96];
		snprintf(set, sizeof set, "compute.%s=0.125", key);
		snprintf(text, sizeof text, "[compute]\n%s = 0.125\n", key);
		const char *sets[] = {"compute.calibration=none", set};
		cfg_schema_t *s;
		mdl_cfg_t m;
		cfg_t *c = fill_with(&s, sets, 2, &m);
		mdl_compute_params_t loaded, parsed = mdl_compute_params_default;
		err_t e = {0};
		if (mdl_load_cfg(c, NULL, NULL, &loaded, &e) ||
		    mdl_calib_parse("cal.ini", text, &parsed, &e))
			fail_msg("%s: %s", key, e.msg);
		for (size_t j = 0; j < mdl_term_keys_n; j++) {
			assert_true(term(&m.terms, j) == (i == j ? 0.125 : -1));
			assert_true(term(&loaded, j) == term(&parsed, j));
			assert_true((term(&loaded, j) == 0.125) == (i == j));
		}
		free_both(c, s);
	}
}

static void test_compute_model_choices_come_from_its_map(void **st)
{
	(void)st;
	static const struct {
		const char *name;
		int value;
	} want[] = {{"roofline", MDL_MODEL_ROOFLINE},
	            {"linear", MDL_MODEL_LINEAR},
	            {"profile", MDL_MODEL_PROFILE}};
	const cfg_tkey_t *row = NULL;
	for (size_t i = 0; i < mdl_compute_cfg_keys_n; i++)
		if (!strcmp(mdl_compute_cfg_keys[i].key.name, "model"))
			row = &mdl_compute_cfg_keys[i];
	assert_non_null(row);
	assert_null(row->key.choices); /* no hand-written list */
	char buf[128];
	assert_string_equal(cfg_tkey_choices(row, buf, sizeof buf), "roofline,linear,profile");
	cfg_schema_t *s;
	mdl_cfg_t m;
	cfg_t *c = fill_with(&s, NULL, 0, &m);
	assert_string_equal(cfg_schema_choices(s, "compute", "model"), "roofline,linear,profile");
	free_both(c, s);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char set[64];
		snprintf(set, sizeof set, "compute.model=%s", want[i].name);
		const char *sets[] = {set};
		c = fill_with(&s, sets, 1, &m);
		assert_int_equal(m.compute.model, want[i].value);
		assert_string_equal(cfg_field_text(row, &m), want[i].name);
		/* what kvsim model prints as cost_model, from the value */
		assert_string_equal(mdl_compute_model_name(m.compute.model), want[i].name);
		free_both(c, s);
	}
	assert_string_equal(mdl_compute_model_name(-1), "");
}

/* A GPU and a model whose every spec field differs from H100-SXM's and
 * Llama-3-70B's (the built-ins a default config loads), and which pass the
 * spec checks: an MLA mixture of experts with tied embeddings and 4-bit
 * weights. */
static void target_specs(mdl_hw_t *hw, mdl_llm_t *m)
{
	*hw = (mdl_hw_t){.name = "H100-SXM",
	                 .hbm_bytes = 100000000000ull,
	                 .hbm_bw = 1.5e12,
	                 .flops_bf16 = 3e14,
	                 .flops_fp8 = 7e14,
	                 .nvlink_bw = 2e11,
	                 .nvlink_lat_ns = 1234,
	                 .pcie_bw = 3e10,
	                 .pcie_lat_ns = 2345,
	                 .nic_bw = 2e10,
	                 .nic_lat_ns = 3456,
	                 .host_dram_bytes = 500000000000ull};
	*m = (mdl_llm_t){.name = "Llama-3-70B",
	                 .layers = 40,
	                 .hidden = 4096,
	                 .heads = 32,
	                 .kv_heads = 4,
	                 .head_dim = 64,
	                 .intermediate = 11008,
	                 .vocab = 32000,
	                 .dtype_bytes = 1,
	                 .weight_bytes = 0.5,
	                 .params_total = 50000000000ull,
	                 .params_active = 10000000000ull,
	                 .attention = MDL_ATTN_MLA,
	                 .mla_latent = 256,
	                 .mla_rope = 32,
	                 .experts = 16,
	                 .experts_active = 2,
	                 .tied_embeddings = 1,
	                 .expert_weight_bytes = 1,
	                 .embed_weight_bytes = 1,
	                 .shared_intermediate = 512,
	                 .dense_layers = 2,
	                 .layer_kind = MDL_LAYER_STATE,
	                 .full_period = 4,
	                 .full_offset = 1,
	                 .state_conv_dim = 1024,
	                 .state_conv_kernel = 4,
	                 .state_heads = 8,
	                 .state_head_dim = 64,
	                 .state_dim = 32,
	                 .state_dtype_bytes = 4};
	err_t e = {0};
	if (mdl_hw_check(hw, "target", &e) || mdl_llm_check(m, "target", &e))
		fail_msg("%s", e.msg);
}

/* The target model with sliding layers instead of state layers: the keys of
 * one layer kind are refused with the other, so window moves here. */
static void target_sliding(mdl_llm_t *m)
{
	mdl_hw_t hw;
	target_specs(&hw, m);
	m->layer_kind = MDL_LAYER_SLIDING;
	m->window = 512;
	m->state_conv_dim = m->state_conv_kernel = m->state_heads = 0;
	m->state_head_dim = m->state_dim = m->state_dtype_bytes = 0;
	err_t e = {0};
	if (mdl_llm_check(m, "target", &e))
		fail_msg("%s", e.msg);
}

/* "section.key=VALUE" setting every override of a spec table to src's
 * member, into sets[] (texts in buf); returns how many. */
static size_t override_all(const mdl_spec_key_t *keys, size_t n, const void *src,
                           const char **sets, char (*buf)[96])
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (keys[i].file.t.at.kind == CFG_F_NONE)
			continue; /* the name: no override */
		cfg_tkey_t t = member_of(&keys[i]);
		if (keys[i].file.t.at.kind == CFG_F_ENUM)
			snprintf(buf[k], 96, "%s.%s=%s", t.key.section, t.key.name,
			         cfg_field_text(&t, src));
		else
			snprintf(buf[k], 96, "%s.%s=%.17g", t.key.section, t.key.name,
			         member_number(&keys[i], src));
		sets[k] = buf[k];
		k++;
	}
	return k;
}

/* Row by row: a and b hold the same member, and (when base is given) base
 * another one, so the comparison proves the member moved. */
static void expect_same_members(const mdl_spec_key_t *keys, size_t n, const void *a,
                                const void *b, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		if (keys[i].file.t.at.kind == CFG_F_NONE) {
			assert_string_equal((const char *)a + keys[i].file.t.at.off,
			                    (const char *)b + keys[i].file.t.at.off);
			continue;
		}
		double x = member_number(&keys[i], a), y = member_number(&keys[i], b);
		if (x != y)
			fail_msg("[%s] %s: %.17g, want %.17g", keys[i].cfg.key.section,
			         mdl_spec_key_name(&keys[i]), x, y);
		if (base && member_number(&keys[i], base) == y)
			fail_msg("[%s] %s: the base spec has the target's value %.17g",
			         keys[i].cfg.key.section, mdl_spec_key_name(&keys[i]), y);
	}
}

/* Loads the default config with every override set to the target specs. */
static void load_overridden(mdl_hw_t *hw, mdl_llm_t *m, const mdl_hw_t *th, const mdl_llm_t *tm)
{
	const char *sets[2 * MDL_SPEC_KEYS_MAX];
	char buf[2 * MDL_SPEC_KEYS_MAX][96];
	size_t n = override_all(mdl_hw_keys, mdl_hw_keys_n, th, sets, buf);
	n += override_all(mdl_llm_keys, mdl_llm_keys_n, tm, sets + n, buf + n);
	cfg_schema_t *s;
	cfg_t *c = cf_default_with(&s, sets, n);
	err_t e = {0};
	if (mdl_load_cfg(c, hw, m, NULL, &e))
		fail_msg("mdl_load_cfg: %s", e.msg);
	free_both(c, s);
}

static void test_every_spec_override_reaches_the_spec_struct(void **st)
{
	(void)st;
	mdl_hw_t th, hw, bh;
	mdl_llm_t tm, m, bm;
	target_specs(&th, &tm);
	err_t e = {0};
	assert_int_equal(mdl_hw_builtin("H100-SXM", &bh, &e), 0);
	assert_int_equal(mdl_llm_builtin("Llama-3-70B", &bm, &e), 0);
	load_overridden(&hw, &m, &th, &tm);
	/* the name is the spec's: no override sets it */
	expect_same_members(mdl_hw_keys, mdl_hw_keys_n, &hw, &th, &bh);
	/* every row moves in one of the two targets and reaches the struct in both */
	mdl_llm_t ts, ms, moved = tm;
	target_sliding(&ts);
	load_overridden(&hw, &ms, &th, &ts);
	expect_same_members(mdl_llm_keys, mdl_llm_keys_n, &m, &tm, NULL);
	expect_same_members(mdl_llm_keys, mdl_llm_keys_n, &ms, &ts, NULL);
	moved.window = ts.window;
	expect_same_members(mdl_llm_keys, mdl_llm_keys_n, &moved, &moved, &bm);
}

/* The spec parser reads the text the writer makes of a spec: each key's
 * line lands in the member the same key's override sets. */
static void test_spec_file_line_and_override_set_the_same_member(void **st)
{
	(void)st;
	mdl_hw_t th, hw, ph;
	mdl_llm_t tm, m, pm;
	target_specs(&th, &tm);
	load_overridden(&hw, &m, &th, &tm);
	char *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(mdl_hw_write(&th, f), 0);
	fclose(f);
	err_t e = {0};
	if (mdl_hw_parse("hw.ini", text, &ph, &e))
		fail_msg("%s", e.msg);
	free(text);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(mdl_llm_write(&tm, f), 0);
	fclose(f);
	if (mdl_llm_parse("llm.ini", text, &pm, &e))
		fail_msg("%s", e.msg);
	free(text);
	expect_same_members(mdl_hw_keys, mdl_hw_keys_n, &ph, &hw, NULL);
	expect_same_members(mdl_llm_keys, mdl_llm_keys_n, &pm, &m, NULL);
}

TEST_MAIN(cmocka_unit_test(test_defaults_fill_the_struct),
          cmocka_unit_test(test_overrides_fill_the_struct),
          cmocka_unit_test(test_term_key_and_calibration_line_set_the_same_member),
          cmocka_unit_test(test_compute_model_choices_come_from_its_map),
          cmocka_unit_test(test_every_spec_override_reaches_the_spec_struct),
          cmocka_unit_test(test_spec_file_line_and_override_set_the_same_member))

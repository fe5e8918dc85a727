/* The disaggregated presets (policies/presets/: dynamo-disagg,
 * llm-d-disagg, mooncake-disagg): each is its base preset plus the pools,
 * its pool keys come from the preset with their sources (what `config show`
 * prints), the pool split follows cluster.prefill_share on any node count
 * (sim/run/sim_disagg.c), and a short run on each hands every request's KV
 * to a decode instance in /transfers rows of class handoff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/fixtures/sim_fixture.h"

static const pol_preset_t *preset(const char *name)
{
	size_t np;
	const pol_preset_t *all = pol_presets(&np);
	for (size_t i = 0; i < np; i++)
		if (!strcmp(all[i].name, name))
			return &all[i];
	fail_msg("no preset %s", name);
	return NULL;
}

static const char *value_of(const pol_preset_t *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->kv[i].key, key))
			return p->kv[i].value;
	return NULL;
}

static const struct {
	const char *name, *base, *handoff;
} variants[] = {{"dynamo-disagg", "dynamo", "after_prefill"},
		{"llm-d-disagg", "llm-d", "after_prefill"},
		{"mooncake-disagg", "mooncake", "layerwise"}};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

static void test_disagg_presets_extend_their_base_with_the_pools(void **st)
{
	(void)st;
	for (size_t v = 0; v < N_VARIANTS; v++) {
		const pol_preset_t *d = preset(variants[v].name), *b = preset(variants[v].base);
		for (size_t i = 0; i < b->n; i++) {
			const char *got = value_of(d, b->kv[i].key);
			if (!got || strcmp(got, b->kv[i].value))
				fail_msg("%s: %s is not %s's", d->name, b->kv[i].key, b->name);
		}
		assert_int_equal(d->n, b->n + 3);
		assert_string_equal(value_of(d, "cluster.disagg"), "true");
		assert_string_equal(value_of(d, "cluster.prefill_share"), "0.5");
		assert_string_equal(value_of(d, "cluster.handoff"), variants[v].handoff);
		assert_non_null(strstr(d->doc, "Engine rules: "));
	}
}

static cfg_t *load(const char *const *sets, int n)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	if (cli_load_config_ex(NULL, sets, n, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e))
		fail_msg("%s", e.msg);
	return cfg;
}

/* What `config show` writes: each pool key under a comment naming the
 * preset and the source of its value. */
static void test_disagg_presets_mark_their_pool_keys_as_from_the_preset(void **st)
{
	(void)st;
	for (size_t v = 0; v < N_VARIANTS; v++) {
		char set[64], origin[64];
		snprintf(set, sizeof set, "policy.preset=%s", variants[v].name);
		snprintf(origin, sizeof origin, "preset %s", variants[v].name);
		const char *sets[] = {set};
		cfg_t *cfg = load(sets, 1);
		assert_string_equal(cfg_origin(cfg, "cluster", "disagg"), origin);
		assert_string_equal(cfg_origin(cfg, "cluster", "prefill_share"), origin);
		assert_string_equal(cfg_origin(cfg, "cluster", "handoff"), origin);
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		assert_int_equal(cfg_write_ex(cfg, f, CFG_WRITE_ORIGINS), 0);
		fclose(f);
		const pol_preset_t *p = preset(variants[v].name);
		static const char *keys[] = {"cluster.disagg", "cluster.prefill_share",
					     "cluster.handoff"};
		for (size_t k = 0; k < 3; k++) {
			const char *src = NULL;
			for (size_t i = 0; i < p->n; i++)
				if (!strcmp(p->kv[i].key, keys[k]))
					src = p->kv[i].source;
			char want[1024];
			snprintf(want, sizeof want, "# from preset %s: %s\n%s = %s\n", p->name, src,
				 strchr(keys[k], '.') + 1, value_of(p, keys[k]));
			if (!strstr(text, want))
				fail_msg("%s: no '%s' in\n%s", p->name, want, text);
		}
		free(text);
		cli_config_free(cfg);
	}
}

/* 16 requests 5 ms apart, 8 shared blocks and one own, 4 output tokens. */
static sim_results_t run_preset(const char *name, const char *nodes, uint32_t block_tokens)
{
	char set[64];
	snprintf(set, sizeof set, "policy.preset=%s", name);
	const char *sets[] = {set, "model.name=Llama-3-8B", nodes, "cluster.gpus_per_node=8",
			      "cluster.tp=4"};
	cfg_t *cfg = load(sets, 5);
	sf_prefix_t b = sf_prefix(16, 8, 100, 9000, 4);
	b.block_tokens = block_tokens;
	b.gap_ns = 5000000;
	sim_source_t src = {sf_prefix_next, &b, "burst"};
	sim_results_t r;
	err_t e = {0};
	if (sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e))
		fail_msg("%s: %s", name, e.msg);
	cli_config_free(cfg);
	return r;
}

static void test_disagg_presets_run_with_handoff_rows(void **st)
{
	(void)st;
	for (size_t v = 0; v < N_VARIANTS; v++) {
		const pol_preset_t *p = preset(variants[v].name);
		uint32_t B = (uint32_t)atoi(value_of(p, "kvcache.block_tokens"));
		/* 3 nodes: 2 prefill (4 instances of TP4), 1 decode (2) */
		sim_results_t r = run_preset(p->name, "cluster.nodes=3", B);
		assert_int_equal(r.n_req, 16);
		uint64_t handoff = 0;
		for (size_t i = 0; i < r.n_req; i++) {
			const res_request_t *q = &r.req[i];
			if (q->status != REQ_COMPLETED)
				fail_msg("%s: request %zu status %d", p->name, i, q->status);
			assert_true(q->instance < 4);
			assert_true(q->decode_instance == 4 || q->decode_instance == 5);
			assert_true(q->handoff_wait_ns >= 0);
		}
		for (size_t i = 0; i < r.n_xfer; i++)
			if (r.xfer[i].klass == XFER_HANDOFF) {
				handoff++;
				assert_true(r.xfer[i].src_instance < 4);
				assert_true(r.xfer[i].dst_instance >= 4);
			}
		/* at least one flow per request, each of TP4 to TP4: 4 */
		assert_true(handoff >= 16 * 4);
		sim_results_free(&r);
	}
}

/* prefill_share = 0.5 rounds half up and keeps both pools non-empty. */
static void test_prefill_share_splits_the_nodes(void **st)
{
	(void)st;
	static const struct {
		const char *nodes;
		uint32_t n_prefill_inst; /* 2 instances of TP4 per node */
	} want[] = {{"cluster.nodes=2", 2}, {"cluster.nodes=3", 4}, {"cluster.nodes=5", 6}};
	for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
		sim_results_t r = run_preset("dynamo-disagg", want[w].nodes, 16);
		int32_t max_pre = -1, min_dec = 1 << 30;
		for (size_t i = 0; i < r.n_req; i++) {
			const res_request_t *q = &r.req[i];
			max_pre = q->instance > max_pre ? q->instance : max_pre;
			min_dec = q->decode_instance < min_dec ? q->decode_instance : min_dec;
		}
		assert_true(max_pre < (int32_t)want[w].n_prefill_inst);
		assert_true(min_dec >= (int32_t)want[w].n_prefill_inst);
		sim_results_free(&r);
	}
	/* one node cannot be split */
	const char *sets[] = {"policy.preset=mooncake-disagg", "cluster.nodes=1"};
	cfg_t *cfg = load(sets, 2);
	sf_prefix_t b = sf_prefix(1, 1, 1, 2, 2);
	sim_source_t src = {sf_prefix_next, &b, "burst"};
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "prefill_share"));
	assert_non_null(strstr(e.msg, "nodes >= 2"));
	cli_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_disagg_presets_extend_their_base_with_the_pools),
	    cmocka_unit_test(test_disagg_presets_mark_their_pool_keys_as_from_the_preset),
	    cmocka_unit_test(test_disagg_presets_run_with_handoff_rows),
	    cmocka_unit_test(test_prefill_share_splits_the_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

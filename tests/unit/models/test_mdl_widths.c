/* Per-component weight widths (models/mdl.h: weight_bytes for attention and
 * the rest, expert_weight_bytes for routed and shared experts,
 * embed_weight_bytes for the embedding table and LM head): the weights a GPU
 * holds, the weight read of each cost model, and the shared experts costed
 * with the routed ones.
 *
 * The model is a small Llama-4-shaped MoE worked by hand: hidden 64, 4
 * layers (2 dense, 2 MoE), 4 heads of 32, 2 KV heads, vocab 100, untied.
 * Per layer attention 64*128 + 2*64*64 + 128*64 = 24576 and two norms 128;
 * a dense MLP 3*64*256 = 49152; an MoE layer a router 256, a shared expert
 * 3*64*128 = 24576 and 4 routed experts of 24576. Total 4*24704 + 2*49152 +
 * 2*(256 + 24576 + 4*24576) + 2*6400 + 64 = 456256; active (1 of 4 routed)
 * 456256 - 2*3*24576 = 308800. One routed expert over the MoE layers X =
 * 49152; the shared experts 2*24576 = 49152. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "tests/fixtures/mdl_fixture.h"

static void tiny_moe(mdl_hw_t *hw, mdl_llm_t *m)
{
	mf_toy(hw, m, 4);
	m->head_dim = 32;
	m->intermediate = 128;
	m->experts = 4;
	m->experts_active = 1;
	m->params_total = 456256;
	m->params_active = 308800;
	m->shared_intermediate = 128;
	m->dense_layers = 2;
	m->weight_bytes = 2;
	m->expert_weight_bytes = 1; /* FP8 experts beside BF16 attention */
	m->embed_weight_bytes = 2;
	err_t e = {0};
	if (mdl_llm_check(m, "tiny", &e))
		fail_msg("%s", e.msg);
}

static void init(mdl_compute_t *c, const mdl_hw_t *hw, const mdl_llm_t *m,
                 const mdl_compute_params_t *p)
{
	err_t e = {0};
	if (mdl_compute_init(c, hw, m, 1, p, &e))
		fail_msg("%s", e.msg);
}

static double prefill_bytes(const mdl_hw_t *hw, const mdl_llm_t *m, const mdl_compute_params_t *p,
                            uint32_t n)
{
	static mdl_compute_t c;
	init(&c, hw, m, p);
	uint32_t cached = 0;
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	return r.bytes;
}

static double decode_bytes(const mdl_hw_t *hw, const mdl_llm_t *m, const mdl_compute_params_t *p,
                           uint32_t ctx)
{
	static mdl_compute_t c;
	init(&c, hw, m, p);
	mdl_batch_t b = {.n_decode = 1, .decode_ctx = &ctx};
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	return r.bytes;
}

/* embed 12800 x 2 + experts (4 x 49152 + 49152) x 1 + the rest 197696 x 2 */
static void test_weights_per_gpu_price_each_component_at_its_width(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	mdl_params_split_t s;
	mdl_params_split(&m, &s);
	assert_true(s.embed == 12800 && s.routed_one == 49152 && s.shared_experts == 49152);
	assert_true(s.experts == 245760 && s.other == 197696);
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 25600 + 245760 + 395392);
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 2), (25600 + 245760 + 395392) / 2);
	/* one width: the old product */
	m.expert_weight_bytes = 0;
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 456256 * 2);
}

/* A 4096-token prefill touches every expert: the separated terms read the
 * experts (4 X + shared = 245760 parameters) at 1 byte instead of 2. */
static void test_expert_width_prices_the_expert_weight_read(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	mdl_compute_params_t p = mf_terms(0.7, 1e9, 0.9, 1000, 1000, 0.7, 128, 0);
	double fp8 = prefill_bytes(&hw, &m, &p, 4096);
	m.expert_weight_bytes = 2;
	double bf16 = prefill_bytes(&hw, &m, &p, 4096);
	assert_true(fabs((bf16 - fp8) - 245760) < 1e-6 * bf16);
}

/* The shared experts are priced with the experts: with shared_intermediate
 * unset they fall into the rest at weight_bytes, 49152 parameters x 1 byte
 * more. */
static void test_shared_expert_is_costed_with_the_experts(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	mdl_compute_params_t p = mf_terms(0.7, 1e9, 0.9, 1000, 1000, 0.7, 128, 0);
	double with = prefill_bytes(&hw, &m, &p, 4096);
	m.shared_intermediate = 0;
	double without = prefill_bytes(&hw, &m, &p, 4096);
	assert_true(fabs((without - with) - 49152) < 1e-6 * with);
}

/* The LM head (100 x 64, one row per sequence) at the embed width: FP8
 * elsewhere, BF16 head: 6400 bytes more than an all-FP8 model. */
static void test_lm_head_read_at_the_embed_width(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	m.weight_bytes = 1;
	m.expert_weight_bytes = 1;
	m.embed_weight_bytes = 1;
	mdl_compute_params_t p = mf_terms(0.7, 1e9, 0.9, 1000, 1000, 0.7, 128, 0);
	double one = decode_bytes(&hw, &m, &p, 100);
	m.embed_weight_bytes = 2;
	double two = decode_bytes(&hw, &m, &p, 100);
	assert_true(fabs((two - one) - 6400) < 1e-9 * two);
}

/* The single-efficiency roofline's weight read (gemm_mfu 0) of a prefill
 * touching every expert: all weights but the untied embedding table, each
 * at its width: head 6400 x 2 + experts 245760 x 1 + rest 197696 x 2 =
 * 653952, plus KV written 1024 bytes x 4096 tokens. The linear model's
 * decode reads the active weights: 12800 x 2 + (49152 + 49152) x 1 +
 * 197696 x 2 = 519296, plus 1024 x 100 of context. */
static void test_roofline_and_linear_models_read_each_width(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	mdl_compute_params_t p = mdl_compute_params_default;
	p.gemm_mfu = 0;
	double b = prefill_bytes(&hw, &m, &p, 4096);
	assert_true(fabs(b - (653952 + 1024.0 * 4096)) < 1e-6 * b);
	p.model = MDL_MODEL_LINEAR;
	b = decode_bytes(&hw, &m, &p, 100);
	assert_true(fabs(b - (519296 + 102400)) < 1e-6 * b);
}

static double prefill_gemm_ns(const mdl_hw_t *hw, const mdl_llm_t *m,
                              const mdl_compute_params_t *p, uint32_t n)
{
	static mdl_compute_t c;
	init(&c, hw, m, p);
	uint32_t cached = 0;
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	/* the single-efficiency roofline has one compute side */
	return p->gemm_mfu > 0 ? r.t_gemm_ns : r.t_compute_ns;
}

/* On a GPU with FP8 tensor cores the 1-byte experts' GEMMs run at
 * flops_fp8 and the 2-byte attention at flops_bf16: giving the GPU an FP8
 * rate speeds up the GEMMs of the FP8-expert model, not those of the same
 * model with BF16 experts. The same holds for the single-efficiency
 * roofline. */
static void test_each_gemm_runs_at_its_width_rate(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	tiny_moe(&hw, &m);
	mdl_compute_params_t terms = mf_terms(0.7, 1e9, 0.9, 1000, 1000, 0.7, 128, 0);
	mdl_compute_params_t single = mdl_compute_params_default;
	single.gemm_mfu = 0;
	const mdl_compute_params_t *ps[] = {&terms, &single};
	for (size_t i = 0; i < 2; i++) {
		hw.flops_fp8 = 0;
		m.expert_weight_bytes = 1;
		double no_fp8 = prefill_gemm_ns(&hw, &m, ps[i], 4096);
		hw.flops_fp8 = 2 * hw.flops_bf16;
		double fp8 = prefill_gemm_ns(&hw, &m, ps[i], 4096);
		if (!(fp8 < no_fp8))
			fail_msg("params %zu: %g ns with FP8, %g without", i, fp8, no_fp8);
		m.expert_weight_bytes = 2;
		double bf16 = prefill_gemm_ns(&hw, &m, ps[i], 4096);
		hw.flops_fp8 = 0;
		assert_true(prefill_gemm_ns(&hw, &m, ps[i], 4096) == bf16);
		assert_true(bf16 == no_fp8); /* the width changes bytes, not BF16 FLOPs */
	}
}

/* The new keys are refused where they mean nothing or do not fit. */
static void test_width_and_shared_keys_checked(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m, base;
	tiny_moe(&hw, &base);
	err_t e = {0};
	m = base;
	m.dense_layers = 4;
	assert_int_equal(mdl_llm_check(&m, "t", &e), KS_EINPUT);
	assert_string_equal(e.msg, "t: dense_layers: 4 leaves no MoE layer of 4");
	m = base;
	m.shared_intermediate = 1000;
	assert_int_equal(mdl_llm_check(&m, "t", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "t: shared_intermediate: the shared experts' 384000 "));
	mf_toy(&hw, &m, 2);
	m.expert_weight_bytes = 1;
	assert_int_equal(mdl_llm_check(&m, "t", &e), KS_EINPUT);
	assert_string_equal(e.msg, "t: expert_weight_bytes: only valid with experts > 0");
	/* a spec file gives them as keys, written back the same */
	const char *ini = "[model]\nname = w\nlayers = 4\nhidden = 64\nheads = 4\nkv_heads = 2\n"
	                  "head_dim = 32\nintermediate = 128\nvocab = 100\ndtype_bytes = 2\n"
	                  "weight_bytes = 2\nparams_total = 456256\nparams_active = 308800\n"
	                  "attention = gqa\nexperts = 4\nexperts_active = 1\n"
	                  "expert_weight_bytes = 1\nembed_weight_bytes = 2\n"
	                  "shared_intermediate = 128\ndense_layers = 2\n";
	assert_int_equal(mdl_llm_parse("w.ini", ini, &m, &e), 0);
	assert_true(m.expert_weight_bytes == 1 && m.embed_weight_bytes == 2);
	assert_int_equal(m.shared_intermediate, 128);
	assert_int_equal(m.dense_layers, 2);
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 666752);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_weights_per_gpu_price_each_component_at_its_width),
	    cmocka_unit_test(test_expert_width_prices_the_expert_weight_read),
	    cmocka_unit_test(test_shared_expert_is_costed_with_the_experts),
	    cmocka_unit_test(test_lm_head_read_at_the_embed_width),
	    cmocka_unit_test(test_roofline_and_linear_models_read_each_width),
	    cmocka_unit_test(test_each_gemm_runs_at_its_width_rate),
	    cmocka_unit_test(test_width_and_shared_keys_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

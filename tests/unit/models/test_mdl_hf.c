/* models/mdl_hf.c: a Hugging Face config.json read into an LLM spec, the
 * parts it does not cost named, its errors naming the JSON field, and
 * `[model] hf_config` / `kvsim model cost --hf-config` using it.
 *
 * Small configs are written here and in tests/fixtures/hf/ (tiny-moe-fp8.json: a
 * Llama-4-shaped FP8 MoE worked by hand in tests/unit/models/test_mdl_widths.c); the
 * published ones are read from ../shared/reference/hf_configs and those
 * tests skip when it is absent. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "models/mdl_hf.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

#define TINY "tests/fixtures/hf/tiny-moe-fp8.json"
#define HF_DIR "../shared/reference/hf_configs"

/* The fields every small dense config below shares. */
#define DENSE                                                                                      \
	"\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "               \
	"\"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, "             \
	"\"torch_dtype\": \"bfloat16\""

static void parse_ok(const char *json, mdl_llm_t *m, mdl_hf_info_t *info)
{
	err_t e = {0};
	if (mdl_hf_parse("x.json", json, strlen(json), m, info, &e))
		fail_msg("%s", e.msg);
}

static int has_note(const mdl_hf_info_t *info, const char *want)
{
	for (size_t i = 0; i < info->n_uncosted; i++)
		if (strstr(info->uncosted[i], want))
			return 1;
	return 0;
}

/* See tests/unit/models/test_mdl_widths.c for the counts: attention (all four layers'
 * q/k/v/o in the ignore list) and router stay BF16, the experts FP8; two
 * of four layers MoE (interleave_moe_layer_step 2), the shared expert of
 * intermediate_size 128, the dense MLP of intermediate_size_mlp 256. */
static void test_llama4_shaped_fp8_moe_fixture(void **st)
{
	(void)st;
	mdl_llm_t m;
	mdl_hf_info_t info;
	err_t e = {0};
	if (mdl_hf_load_file(TINY, &m, &info, &e))
		fail_msg("%s", e.msg);
	assert_string_equal(m.name, "tiny-moe-fp8");
	assert_int_equal(m.layers, 4);
	assert_int_equal(m.head_dim, 32); /* given, not 64/4 */
	assert_int_equal(m.intermediate, 128);
	assert_int_equal(m.experts, 4);
	assert_int_equal(m.experts_active, 1);
	assert_int_equal(m.shared_intermediate, 128);
	assert_int_equal(m.dense_layers, 2);
	assert_int_equal(m.params_total, 456256);
	assert_int_equal(m.params_active, 308800);
	assert_true(m.weight_bytes == 2 && m.expert_weight_bytes == 1 && m.embed_weight_bytes == 2);
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 666752);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 2 * 4 * 2 * 32 * 2);
	/* the attention of the 4 layers: (64*128 + 2*64*64 + 128*64) each */
	assert_true(info.params_attn == 4 * 24576.0);
	assert_int_equal(info.n_uncosted, 3);
	assert_true(has_note(&info, "vision tower (vision_config: 2 layers of hidden 32): not "
	                            "costed"));
	assert_true(has_note(&info, "chunked local attention (attention_chunk_size 16 on 3 of 4 "
	                            "layers): costed as full attention"));
	assert_true(has_note(&info, "dense MLP layers (2): quantized as the experts"));
}

/* Qwen2: q/k/v biases, (4 + 2*2)*16 = 128 a layer; head_dim from hidden /
 * heads = 16; tied. Per layer 3*64*64 + 128 + 2*64 norms + 3*64*128 MLP =
 * 37120; total 2*37120 + 6400 + 64 = 80704; KV 2*2*2*16*2 = 256 bytes.
 * Mistral with head_dim 32 given (Mistral-Nemo's case): attention 64*128 +
 * 2*64*64 + 128*64 = 24576, KV 2*2*2*32*2 = 512, and a sliding_window makes
 * every layer sliding. */
static void test_biases_explicit_head_dim_and_sliding_window(void **st)
{
	(void)st;
	mdl_llm_t m;
	mdl_hf_info_t info;
	parse_ok("{\"model_type\": \"qwen2\", " DENSE ", \"tie_word_embeddings\": true}", &m, &info);
	assert_int_equal(m.head_dim, 16);
	assert_int_equal(m.params_total, 80704);
	assert_int_equal(m.params_active, 80704);
	assert_int_equal(m.tied_embeddings, 1);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 256);
	assert_int_equal(info.n_uncosted, 0);
	parse_ok("{\"model_type\": \"mistral\", " DENSE ", \"head_dim\": 32, \"sliding_window\": 4096}",
	         &m, &info);
	assert_int_equal(m.head_dim, 32);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 512);
	/* 2*(24576 + 128 + 24576) + 2*6400 + 64 */
	assert_int_equal(m.params_total, 111424);
	assert_int_equal(m.layer_kind, MDL_LAYER_SLIDING);
	assert_int_equal(m.window, 4096);
	assert_int_equal(mdl_layers_sliding(&m), 2);
}

/* DeepSeek-V2 style MLA (q_lora_rank null), first_k_dense_replace 1, two
 * shared experts: per layer q 64*4*24 = 6144, kv_a 64*40 = 2560 and its
 * norm 32, kv_b 32*4*32 = 4096, o 4*16*64 = 4096, norms 128: 17056; layer 0
 * dense 3*64*256 = 49152; layers 1, 2: router 512, shared 3*64*64 = 12288,
 * 8 experts of 3*64*32 = 6144. Total 3*17056 + 49152 + 2*(512 + 12288 +
 * 49152) + 12864 = 237088; active less 2*6 experts = 163360. KV: the latent
 * and rope key, 3*(32 + 8)*2 = 240 bytes. */
static void test_mla_with_dense_layers_and_shared_experts(void **st)
{
	(void)st;
	mdl_llm_t m;
	mdl_hf_info_t info;
	parse_ok("{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, \"num_hidden_layers\": 3, "
	         "\"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"intermediate_size\": 256, "
	         "\"moe_intermediate_size\": 32, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
	         "\"n_shared_experts\": 2, \"first_k_dense_replace\": 1, \"moe_layer_freq\": 1, "
	         "\"kv_lora_rank\": 32, \"q_lora_rank\": null, \"qk_nope_head_dim\": 16, "
	         "\"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"vocab_size\": 100, "
	         "\"torch_dtype\": \"bfloat16\", \"tie_word_embeddings\": false}",
	         &m, &info);
	assert_int_equal(m.attention, MDL_ATTN_MLA);
	assert_int_equal(m.mla_latent, 32);
	assert_int_equal(m.mla_rope, 8);
	assert_int_equal(m.head_dim, 16);
	assert_int_equal(m.params_total, 237088);
	assert_int_equal(m.params_active, 163360);
	assert_int_equal(m.shared_intermediate, 64);
	assert_int_equal(m.dense_layers, 1);
	assert_int_equal(m.intermediate, 32);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 240);
}

/* Parts not costed are read and named: an unknown architecture, an audio
 * tower, multi-token prediction layers, an indexed sparse attention. */
static void test_uncosted_parts_are_named(void **st)
{
	(void)st;
	mdl_llm_t m;
	mdl_hf_info_t info;
	parse_ok("{\"model_type\": \"gpt_neox\", " DENSE "}", &m, &info);
	assert_int_equal(info.n_uncosted, 1);
	assert_true(has_note(&info, "model_type 'gpt_neox': not an architecture this reader "
	                            "knows; read as a Llama-style decoder"));
	parse_ok("{\"model_type\": \"llama\", " DENSE ", \"num_nextn_predict_layers\": 1, "
	         "\"index_topk\": 64, \"audio_config\": {\"num_hidden_layers\": 2}}",
	         &m, &info);
	assert_int_equal(info.n_uncosted, 3);
	assert_true(has_note(&info, "audio tower (audio_config): not costed"));
	assert_true(has_note(&info, "multi-token prediction (num_nextn_predict_layers 1): not "
	                            "costed, its parameters not counted"));
	assert_true(has_note(&info, "indexed sparse attention (index_topk 64): costed as dense "
	                            "attention"));
}

/* Missing required fields and architecture kvsim cannot represent: errors
 * naming the JSON path. */
static void test_errors_name_the_json_field(void **st)
{
	(void)st;
	static const char *const bad[][2] = {
	    {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2}",
	     "x.json: hidden_size: missing (required)"},
	    {"{\"model_type\": \"llama4\", \"text_config\": {\"hidden_size\": 64, "
	     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 128}}",
	     "x.json: text_config.vocab_size: missing (required)"},
	    {"{" DENSE "}", "x.json: model_type: missing (required"},
	    {"{\"model_type\": \"qwen2\", " DENSE ", \"use_sliding_window\": true, "
	     "\"sliding_window\": 4096}",
	     "x.json: use_sliding_window: true: per-layer sliding windows (max_window_layers) are "
	     "not supported"},
	    {"{\"model_type\": \"llama\", " DENSE ", \"sliding_window\": 4096}",
	     "x.json: sliding_window: set for model_type 'llama': which layers slide is not known"},
	    {"{\"model_type\": \"llama\", " DENSE ", \"layer_types\": [\"full_attention\", "
	     "\"sliding_attention\"]}",
	     "x.json: layer_types: entry 1 is not full_attention"},
	    {"{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": {\"quant_method\": "
	     "\"bitsandbytes\"}}",
	     "x.json: quantization_config.quant_method: 'bitsandbytes' is not supported (known: "
	     "fp8, compressed-tensors, awq, gptq)"},
	    {"{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": {\"quant_method\": "
	     "\"fp8\", \"ignore\": [\"model.layers.0.self_attn.q_proj\"]}}",
	     "x.json: quantization_config.ignore: attention left unquantized in 1 of 2 layers"},
	    {"{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": {\"quant_method\": "
	     "\"fp8\", \"ignore\": [\"model.layers.0.self_attn.q_proj\", "
	     "\"model.layers.1.self_attn.q_proj\"]}}",
	     "x.json: quantization_config: attention and MLP at different widths in a dense model"},
	    {"{\"model_type\": \"mixtral\", " DENSE ", \"num_local_experts\": 8}",
	     "x.json: num_experts_per_tok: missing (required)"},
	    {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
	     "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
	     "\"torch_dtype\": \"int8\"}",
	     "x.json: torch_dtype: 'int8': expected bfloat16, float16 or float32"},
	    {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
	     "\"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"intermediate_size\": 128, "
	     "\"vocab_size\": 100, \"torch_dtype\": \"bfloat16\"}",
	     "x.json: num_key_value_heads: 3 must divide num_attention_heads 4"},
	    {"{\"model_type\": \"llama\",\n \"hidden_size\": }", "x.json:2: "},
	    {"[1]", "x.json: (root): expected a JSON object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		mdl_llm_t m;
		err_t e = {0};
		int rc = mdl_hf_parse("x.json", bad[i][0], strlen(bad[i][0]), &m, NULL, &e);
		if (rc != KS_EINPUT || strncmp(e.msg, bad[i][1], strlen(bad[i][1])))
			fail_msg("case %zu: rc %d: '%s', want '%s'", i, rc, e.msg, bad[i][1]);
	}
}

/* The spec's name is the file's (or its folder's, for config.json), or
 * "hf-config" when a spec file could not hold it back (a ';' first, a
 * control character): the spec writes back and reads back the same. */
static void test_name_from_the_path_round_trips(void **st)
{
	(void)st;
	static const char json[] = "{\"model_type\": \"llama\", " DENSE "}";
	static const char *const cases[][2] = {{"d/tiny.json", "tiny"},
	                                       {"d/Model-7B/config.json", "Model-7B"},
	                                       {"d/;x.json", "hf-config"},
	                                       {"d/a\x01b.json", "hf-config"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mdl_llm_t m, back;
		err_t e = {0};
		if (mdl_hf_parse(cases[i][0], json, strlen(json), &m, NULL, &e))
			fail_msg("%s", e.msg);
		assert_string_equal(m.name, cases[i][1]);
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(mdl_llm_write(&m, f), 0);
		fclose(f);
		if (mdl_llm_parse("w.ini", buf, &back, &e))
			fail_msg("%s", e.msg);
		assert_memory_equal(&m, &back, sizeof m);
		free(buf);
	}
}

/* An fp8 checkpoint without an ignore list (DeepSeek/GLM style): every
 * linear layer at 1 byte, embedding and LM head at the dtype; a
 * compressed-tensors KV scheme of 8 bits makes the KV cache 1 byte. */
static void test_fp8_widths_and_kv_scheme(void **st)
{
	(void)st;
	mdl_llm_t m;
	mdl_hf_info_t info;
	parse_ok("{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": "
	         "{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}}",
	         &m, &info);
	assert_true(m.weight_bytes == 1 && m.embed_weight_bytes == 2);
	assert_int_equal(m.dtype_bytes, 2);
	parse_ok("{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": "
	         "{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": "
	         "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8}}}, "
	         "\"kv_cache_scheme\": {\"num_bits\": 8, \"type\": \"float\"}}}",
	         &m, &info);
	assert_true(m.weight_bytes == 1);
	assert_int_equal(m.dtype_bytes, 1);
	parse_ok("{\"model_type\": \"llama\", " DENSE ", \"quantization_config\": "
	         "{\"quant_method\": \"awq\", \"bits\": 4}}",
	         &m, &info);
	assert_true(m.weight_bytes == 0.5 && m.embed_weight_bytes == 2);
	/* experts named in the ignore list stay at the dtype, attention FP8 */
	parse_ok("{\"model_type\": \"mixtral\", " DENSE ", \"num_local_experts\": 4, "
	         "\"num_experts_per_tok\": 1, \"quantization_config\": {\"quant_method\": "
	         "\"fp8\", \"modules_to_not_convert\": [\"model.layers.0.block_sparse_moe.experts\", "
	         "\"lm_head\"]}}",
	         &m, &info);
	assert_true(m.weight_bytes == 1 && m.expert_weight_bytes == 2 && m.embed_weight_bytes == 2);
}

/* ---- the published configs --------------------------------------------- */

static int hf_dir_or_skip(void)
{
	struct stat sb;
	if (stat(HF_DIR, &sb) || !S_ISDIR(sb.st_mode))
		skip();
	return 1;
}

static void load_published(const char *file, mdl_llm_t *m, mdl_hf_info_t *info)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", HF_DIR, file);
	err_t e = {0};
	if (mdl_hf_load_file(path, m, info, &e))
		fail_msg("%s", e.msg);
}

/* Counts from the shapes (exact, as the reader computes them), the KV bytes
 * per token at the dtype (GQA 2*layers*kv_heads*head_dim*2; MLA
 * layers*(kv_lora_rank + rope)*2), and the size each is published under
 * (model card or paper; total, active) with the deviation allowed. */
static const struct {
	const char *file;
	uint64_t total, active, kv;
	double pub_total, pub_active, tol;
} published[] = {
    /* LLaMA paper (Touvron et al. 2023, Table 2): 6.7B for these shapes */
    {"llama-2-7b-hf.json", 6738415616, 6738415616, 524288, 6.7e9, 6.7e9, 0.02},
    {"llama-3.1-8b-instruct.json", 8030261248, 8030261248, 131072, 8e9, 8e9, 0.02},
    {"llama-3.1-70b-instruct.json", 70553706496, 70553706496, 327680, 70e9, 70e9, 0.02},
    {"codellama-34b-instruct-hf.json", 33743970304, 33743970304, 196608, 34e9, 34e9, 0.02},
    {"yi-34b.json", 34388917248, 34388917248, 245760, 34e9, 34e9, 0.02},
    /* published as "12B": 12.25B is 2.1% above, beyond 2% (README) */
    {"mistral-nemo-instruct-2407.json", 12247782400, 12247782400, 163840, 12e9, 12e9, 0.021},
    /* model cards: 7.61B; 14.8B; 30.5B total, 3.3B activated */
    {"qwen2.5-7b-instruct.json", 7615616512, 7615616512, 57344, 7.61e9, 7.61e9, 0.02},
    {"qwen3-14b.json", 14768307200, 14768307200, 163840, 14.8e9, 14.8e9, 0.02},
    {"qwen3-30b-a3b.json", 30532122624, 3353032704, 98304, 30.5e9, 3.3e9, 0.02},
    /* 46.7B total, 12.9B active (as models/llm/Mixtral-8x7B.ini) */
    {"mixtral-8x7b-v0.1.json", 46702792704, 12879925248, 131072, 46.7e9, 12.9e9, 0.02},
    /* DeepSeek-V2 paper: 15.7B total, 2.4B activated; the active count
     * includes the 0.21B embedding table, which theirs leaves out (README) */
    {"deepseek-v2-lite.json", 15706484224, 2661150208, 31104, 15.7e9, 2.4e9 + 102400 * 2048.0,
     0.02},
    /* 109B total with the vision tower, 17B active: the language model
     * alone, 107.8B, is within 2% of 109B */
    {"llama-4-scout-17b-16e-instruct-fp8-dynamic.json", 107769861120, 17172894720, 196608,
     109e9, 17e9, 0.02},
};

static void test_published_configs_counts_and_kv_bytes(void **st)
{
	(void)st;
	hf_dir_or_skip();
	for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
		mdl_llm_t m;
		mdl_hf_info_t info;
		load_published(published[i].file, &m, &info);
		if (m.params_total != published[i].total || m.params_active != published[i].active ||
		    mdl_kv_bytes_per_token(&m) != published[i].kv)
			fail_msg("%s: %llu / %llu params, %llu KV bytes", published[i].file,
			         (unsigned long long)m.params_total, (unsigned long long)m.params_active,
			         (unsigned long long)mdl_kv_bytes_per_token(&m));
		double dt = fabs((double)m.params_total / published[i].pub_total - 1);
		double da = fabs((double)m.params_active / published[i].pub_active - 1);
		if (dt > published[i].tol || da > published[i].tol)
			fail_msg("%s: %.4f / %.4f off the published size", published[i].file, dt, da);
	}
}

/* Scout FP8: experts (routed and shared) at 1 byte, attention and router at
 * 2, the vision tower and chunked attention named; Mistral-Nemo's head_dim
 * 128 given where hidden/heads is 160; the Mixtral counts equal the
 * shipped spec's. */
static void test_published_widths_uncosted_and_builtin_agree(void **st)
{
	(void)st;
	hf_dir_or_skip();
	mdl_llm_t m, b;
	mdl_hf_info_t info;
	load_published("llama-4-scout-17b-16e-instruct-fp8-dynamic.json", &m, &info);
	assert_true(m.weight_bytes == 2 && m.expert_weight_bytes == 1 && m.embed_weight_bytes == 2);
	assert_int_equal(m.shared_intermediate, 8192);
	assert_int_equal(m.dense_layers, 0);
	/* at TP 2: embed 2*202048*5120 x 2 + experts x 1 + the rest x 2, over 2;
	 * with BF16 experts, every parameter x 2 over 2 */
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 2), 56431580160);
	m.expert_weight_bytes = 2;
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 2), 107769861120);
	assert_true(has_note(&info, "vision tower (vision_config: 34 layers of hidden 1408)"));
	assert_true(has_note(&info, "chunked local attention (attention_chunk_size 8192 on 36 of "
	                            "48 layers)"));
	load_published("mistral-nemo-instruct-2407.json", &m, &info);
	assert_int_equal(m.head_dim, 128);
	load_published("deepseek-v2-lite.json", &m, &info);
	assert_int_equal(m.dense_layers, 1);
	assert_int_equal(m.shared_intermediate, 2 * 1408);
	load_published("glm-5.2-fp8.json", &m, &info);
	assert_true(has_note(&info, "multi-token prediction (num_nextn_predict_layers 1)"));
	assert_true(has_note(&info, "indexed sparse attention (index_topk 2048)"));
	assert_true(m.weight_bytes == 1 && m.expert_weight_bytes == 1 && m.embed_weight_bytes == 2);
	load_published("mixtral-8x7b-v0.1.json", &m, &info);
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Mixtral-8x7B", &b, &e), 0);
	assert_int_equal(m.params_total, b.params_total);
	assert_int_equal(m.params_active, b.params_active);
	assert_int_equal(mdl_kv_bytes_per_token(&m), mdl_kv_bytes_per_token(&b));
}

/* ---- the command line and a run ----------------------------------------- */

static void expect_in(const char *out, const char *want)
{
	if (!strstr(out, want))
		fail_msg("output lacks '%s':\n%s", want, out);
}

static void test_model_cost_hf_config_prints_counts_widths_and_uncosted(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	cli_result_t r = cli_run(k, tmp_dir, "model", "cost", "--hf-config", TINY, "--tp", "2",
	                         "--decode", "4", "--context", "100", NULL);
	assert_int_equal(r.status, 0);
	expect_in(r.out, "model tiny-moe-fp8\n");
	expect_in(r.out, "params_total 456256\nparams_active 308800\n");
	expect_in(r.out, "weight_bytes attention_and_other 2 experts 1 embed 2\n");
	expect_in(r.out, "weights_bytes_per_gpu 333376\n"); /* 666752 / 2 */
	expect_in(r.out, "uncosted vision tower (vision_config: 2 layers of hidden 32)");
	expect_in(r.out, "kv_paged_bytes_per_token_gpu 512\n"); /* 1024 / 2 */
	expect_in(r.out, "\ntotal ");
	cli_result_free(&r);
	/* an error names the file and field, exit 2 */
	char bad[128];
	snprintf(bad, sizeof bad, "%s/bad.json", tmp_dir);
	tmp_write(bad, "{\"model_type\": \"llama\", \"hidden_size\": 64}\n");
	r = cli_run(k, tmp_dir, "model", "cost", "--hf-config", bad, "--decode", "1", "--context",
	            "1", NULL);
	assert_int_equal(r.status, 2);
	expect_in(r.err, "[model] hf_config: ");
	expect_in(r.err, "bad.json: num_hidden_layers: missing (required)");
	cli_result_free(&r);
}

/* [model] hf_config relative to the config file: a run uses it (the result
 * names the model) and warns once for each uncosted part; with [model]
 * file beside it, an error. */
static void test_run_with_hf_config_key_uses_it_and_warns_once(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	char dir[128], cfgp[160], json[160], trace[160], set[200], out[160];
	snprintf(dir, sizeof dir, "%s/exp", tmp_dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(json, sizeof json, "%s/tiny.json", dir);
	char *text = cli_slurp(TINY);
	assert_true(strlen(text) > 100);
	tmp_write(json, text);
	free(text);
	snprintf(cfgp, sizeof cfgp, "%s/exp.ini", dir);
	tmp_write(cfgp, "[model]\nhf_config = tiny.json\n");
	snprintf(trace, sizeof trace, "%s/t.tsv", tmp_dir);
	cli_result_t r = cli_run(k, tmp_dir, "trace", "gen", "poisson", "rate=5", "duration_s=5",
	                         "-o", trace, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	snprintf(set, sizeof set, "trace.path=%s", trace);
	snprintf(out, sizeof out, "%s/res", tmp_dir);
	r = cli_run(k, tmp_dir, "run", cfgp, "--set", set, "-o", out, NULL);
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err);
	const char *w = strstr(r.err, "uncosted: vision tower");
	if (!w || strstr(w + 1, "uncosted: vision tower"))
		fail_msg("want one vision-tower warning:\n%s", r.err);
	expect_in(r.err, "; uncosted: chunked local attention");
	/* the run's pool is the tiny model's (274657 blocks per instance), not
	 * the default Llama-3-70B's (875 with the same trace) */
	const char *kb = strstr(r.out, "KV blocks per instance");
	assert_non_null(kb);
	kb += strlen("KV blocks per instance");
	if (!(strtod(kb, NULL) > 200000))
		fail_msg("not the tiny model's pool:\n%s", r.out);
	cli_result_free(&r);
	r = cli_run(k, tmp_dir, "config", "show", cfgp, NULL);
	assert_int_equal(r.status, 0);
	expect_in(r.out, "hf_config = tiny.json");
	cli_result_free(&r);
	r = cli_run(k, tmp_dir, "model", "cost", cfgp, "--tp", "1", "--prefill", "16", NULL);
	assert_int_equal(r.status, 0);
	expect_in(r.out, "model tiny\n"); /* exp/tiny.json, by the config's path */
	cli_result_free(&r);
	tmp_write(cfgp, "[model]\nhf_config = tiny.json\nfile = x.ini\n");
	r = cli_run(k, tmp_dir, "run", cfgp, "--set", set, NULL);
	assert_int_equal(r.status, 2);
	expect_in(r.err, "[model] hf_config: set with [model] file: give one of them");
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_llama4_shaped_fp8_moe_fixture),
	    cmocka_unit_test(test_biases_explicit_head_dim_and_sliding_window),
	    cmocka_unit_test(test_mla_with_dense_layers_and_shared_experts),
	    cmocka_unit_test(test_uncosted_parts_are_named),
	    cmocka_unit_test(test_errors_name_the_json_field),
	    cmocka_unit_test(test_name_from_the_path_round_trips),
	    cmocka_unit_test(test_fp8_widths_and_kv_scheme),
	    cmocka_unit_test(test_published_configs_counts_and_kv_bytes),
	    cmocka_unit_test(test_published_widths_uncosted_and_builtin_agree),
	    cmocka_unit_test(test_model_cost_hf_config_prints_counts_widths_and_uncosted),
	    cmocka_unit_test(test_run_with_hf_config_key_uses_it_and_warns_once),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

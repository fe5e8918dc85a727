/* Per-layer KV sizing (models/mdl.h): sliding-window layers hold at most
 * their window, state layers a fixed state per sequence, full layers every
 * token. Each shipped spec of a new kind is pinned against a hand
 * computation from its model's published config.json ([HF]); full-attention
 * models keep their sizes; bad layer keys are refused with file:line: key;
 * and a run copies a hybrid model's prefix with its state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "models/mdl.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"

static mdl_llm_t builtin(const char *name)
{
	mdl_llm_t m;
	err_t e = {0};
	if (mdl_llm_builtin(name, &m, &e))
		fail_msg("%s", e.msg);
	return m;
}

/* The sequence lengths each model is pinned at: 1, around the window, 128K. */
static void expect_seq(const mdl_llm_t *m, const uint64_t n[5], const uint64_t want[5])
{
	for (int i = 0; i < 5; i++)
		if (mdl_kv_seq_bytes(m, n[i]) != want[i])
			fail_msg("%s: %llu tokens hold %llu bytes, want %llu", m->name,
			         (unsigned long long)n[i],
			         (unsigned long long)mdl_kv_seq_bytes(m, n[i]),
			         (unsigned long long)want[i]);
}

/* Gemma 2 27B: [HF] num_hidden_layers 46, local and global alternate
 * (modeling_gemma2.py: layer i sliding iff i % 2 == 0): 23 global, 23 local;
 * num_key_value_heads 16, head_dim 128, bfloat16: K and V = 2*16*128*2 =
 * 8192 bytes per token per layer; sliding_window 4096. */
static void test_gemma2_27b_local_layers_hold_at_most_4096_tokens(void **st)
{
	(void)st;
	mdl_llm_t m = builtin("Gemma-2-27B");
	assert_int_equal(mdl_layers_full(&m), 23);
	assert_int_equal(mdl_layers_sliding(&m), 23);
	assert_int_equal(mdl_layers_state(&m), 0);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 376832);        /* 46 * 8192 */
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 188416);  /* 23 * 8192 */
	assert_int_equal(mdl_kv_fixed_bytes_per_seq(&m), 771751936); /* 23 * 4096 * 8192 */
	const uint64_t n[5] = {1, 4095, 4096, 4097, 131072};
	const uint64_t want[5] = {
	    376832,         /* 1 token in all 46 layers */
	    1543127040ull,  /* 4095 * 376832 */
	    1543503872ull,  /* 4096 * 376832 */
	    1543692288ull,  /* 4097 * 188416 + 4096 * 188416 */
	    25467813888ull, /* 131072 * 188416 + 771751936 */
	};
	expect_seq(&m, n, want);
	/* tp 4: 16 KV heads, 4 per GPU: 2*4*128*2 = 2048 bytes per layer */
	assert_int_equal(mdl_kv_paged_bytes_per_token_gpu(&m, 4), 47104);      /* 23 * 2048 */
	assert_int_equal(mdl_kv_fixed_bytes_per_seq_gpu(&m, 4), 192937984ull); /* 23*4096*2048 */
	assert_int_equal(mdl_kv_seq_bytes_gpu(&m, 4, 131072), 6366953472ull);  /* /4 */
}

/* Gemma 3 27B: [HF] num_hidden_layers 62, sliding_window_pattern 6 (layer i
 * global iff (i + 1) % 6 == 0: 5, 11, ..., 59): 10 global, 52 local;
 * num_key_value_heads 16, head_dim 128, bfloat16: 8192 bytes per token per
 * layer; sliding_window 1024. */
static void test_gemma3_27b_five_local_layers_per_global_one(void **st)
{
	(void)st;
	mdl_llm_t m = builtin("Gemma-3-27B");
	assert_int_equal(mdl_layers_full(&m), 10);
	assert_int_equal(mdl_layers_sliding(&m), 52);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 507904);           /* 62 * 8192 */
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 81920);      /* 10 * 8192 */
	assert_int_equal(mdl_kv_fixed_bytes_per_seq(&m), 436207616ull); /* 52 * 1024 * 8192 */
	const uint64_t n[5] = {1, 1023, 1024, 1025, 131072};
	const uint64_t want[5] = {
	    507904,         /* 62 * 8192 */
	    519585792ull,   /* 1023 * 507904 */
	    520093696ull,   /* 1024 * 507904 */
	    520175616ull,   /* 1025 * 81920 + 436207616 */
	    11173625856ull, /* 131072 * 81920 + 436207616 */
	};
	expect_seq(&m, n, want);
}

/* Mistral 7B v0.1: every one of [HF] num_hidden_layers 32 layers slides over
 * sliding_window 4096; num_key_value_heads 8, head_dim 128, bfloat16:
 * 2*8*128*2 = 4096 bytes per token per layer, 131072 for the model. With no
 * full layer the sliding ones are what is paged (vLLM frees out-of-window
 * blocks), so nothing is fixed and a sequence stops growing at 4096 tokens. */
static void test_mistral_7b_every_layer_slides_and_is_paged(void **st)
{
	(void)st;
	mdl_llm_t m = builtin("Mistral-7B-v0.1");
	assert_int_equal(mdl_layers_full(&m), 0);
	assert_int_equal(mdl_layers_sliding(&m), 32);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 131072);
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 131072);
	assert_int_equal(mdl_kv_fixed_bytes_per_seq(&m), 0);
	const uint64_t n[5] = {1, 4095, 4096, 4097, 131072};
	const uint64_t want[5] = {131072, 536739840ull, 536870912ull, /* 4095, 4096 x 131072 */
	                          536870912ull, 536870912ull};        /* capped at 4096 */
	expect_seq(&m, n, want);
	/* [P] arXiv:2310.06825: the rolling buffer cache is W = 4096 tokens */
	assert_int_equal(mdl_kv_prefix_bytes(&m, 131072, 0), 536870912ull);
}

/* Jamba 1.5 Mini: [HF] num_hidden_layers 32, attn_layer_period 8 and
 * attn_layer_offset 4: layers 4, 12, 20, 28 are attention (num_key_value_heads
 * 8, head_dim 4096/32 = 128, bfloat16: 4096 bytes per token each), 28 Mamba-1.
 * One Mamba layer's state (vLLM mamba1 shapes): conv (mamba_d_conv 4 - 1) x
 * d_inner (mamba_expand 2 * hidden_size 4096 = 8192) x 2 bytes = 49152, SSM
 * d_inner 8192 x mamba_d_state 16 x 2 bytes = 262144: 311296 per layer,
 * 8716288 for 28 layers. */
static void test_jamba_mini_mamba_layers_hold_a_fixed_state(void **st)
{
	(void)st;
	mdl_llm_t m = builtin("Jamba-1.5-Mini");
	assert_int_equal(mdl_layers_full(&m), 4);
	assert_int_equal(mdl_layers_state(&m), 28);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 16384); /* 4 * 4096 */
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 16384);
	assert_int_equal(mdl_kv_state_bytes_per_seq(&m), 8716288);
	assert_int_equal(mdl_kv_fixed_bytes_per_seq(&m), 8716288);
	const uint64_t n[5] = {1, 4095, 4096, 4097, 131072};
	const uint64_t want[5] = {
	    8732672,       /* 16384 + 8716288 */
	    75808768,      /* 4095 * 16384 + 8716288 */
	    75825152,      /* 4096 * 16384 + 8716288 */
	    75841536,      /* 4097 * 16384 + 8716288 */
	    2156199936ull, /* 131072 * 16384 + 8716288 */
	};
	expect_seq(&m, n, want);
	/* the 32 layers a model without layer kinds would count: 8x the KV */
	assert_int_equal(32 * 4096 / mdl_kv_paged_bytes_per_token(&m), 8);
	/* tp 2: 4 KV heads (2048 bytes per layer); conv 4096 x 3 x 2 + SSM
	 * 4096 x 16 x 2 = 155648 per layer, 4358144 for 28 */
	assert_int_equal(mdl_kv_paged_bytes_per_token_gpu(&m, 2), 8192);
	assert_int_equal(mdl_kv_state_bytes_per_seq_gpu(&m, 2), 4358144);
}

/* Qwen3-Next 80B-A3B: [HF] num_hidden_layers 48, full_attention_interval 4:
 * 12 gated-attention layers (num_key_value_heads 2, head_dim 256, bfloat16:
 * 2*2*256*2 = 2048 bytes per token each), 36 Gated DeltaNet layers whose
 * state (vLLM gated_delta_net shapes) is conv (linear_conv_kernel_dim 4 - 1)
 * x (2 * linear_num_key_heads 16 * linear_key_head_dim 128 +
 * linear_num_value_heads 32 * linear_value_head_dim 128 = 8192) x 2 bytes =
 * 49152, plus 32 x 128 x 128 x 2 bytes = 1048576: 1097728 per layer. */
static void test_qwen3_next_deltanet_layers_hold_a_fixed_state(void **st)
{
	(void)st;
	mdl_llm_t m = builtin("Qwen3-Next-80B-A3B");
	assert_int_equal(mdl_layers_full(&m), 12);
	assert_int_equal(mdl_layers_state(&m), 36);
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 24576);  /* 12 * 2048 */
	assert_int_equal(mdl_kv_state_bytes_per_seq(&m), 39518208); /* 36 * 1097728 */
	const uint64_t n[5] = {1, 4095, 4096, 4097, 131072};
	const uint64_t want[5] = {
	    39542784,      /* 24576 + 39518208 */
	    140156928,     /* 4095 * 24576 + 39518208 */
	    140181504,     /* 4096 * 24576 + 39518208 */
	    140206080,     /* 4097 * 24576 + 39518208 */
	    3260743680ull, /* 131072 * 24576 + 39518208 */
	};
	expect_seq(&m, n, want);
	/* tp 4: 2 KV heads, one (replicated) per GPU: 1024 bytes per layer;
	 * conv 2048 x 3 x 2 + 8 value heads x 128 x 128 x 2 = 274432 per layer */
	assert_int_equal(mdl_kv_paged_bytes_per_token_gpu(&m, 4), 12288);
	assert_int_equal(mdl_kv_state_bytes_per_seq_gpu(&m, 4), 9879552); /* 36 * 274432 */
}

/* A prefix carries the state only when it ends at a saved state point. */
static void test_prefix_bytes_carry_the_state_only_at_a_state_point(void **st)
{
	(void)st;
	mdl_llm_t j = builtin("Jamba-1.5-Mini");
	assert_int_equal(mdl_kv_prefix_bytes(&j, 512, 0), 512 * 16384);
	assert_int_equal(mdl_kv_prefix_bytes(&j, 512, 1), 512 * 16384 + 8716288);
	assert_int_equal(mdl_kv_prefix_bytes_gpu(&j, 2, 512, 1), 512 * 8192 + 4358144);
	/* a sliding model's prefix moves at most the window of its local layers */
	mdl_llm_t g = builtin("Gemma-2-27B");
	assert_int_equal(mdl_kv_prefix_bytes(&g, 8192, 1),
	                 8192ull * 188416 + 4096ull * 188416); /* no state to add */
	assert_int_equal(mdl_kv_prefix_bytes(&g, 8192, 0), mdl_kv_prefix_bytes(&g, 8192, 1));
}

/* Llama-3-70B (320 KiB per token, tp 4: 80 KiB) and DeepSeek-V3 (MLA 70272
 * bytes on every rank) keep their sizes: every layer full, nothing fixed. */
static void test_full_attention_models_are_unchanged(void **st)
{
	(void)st;
	struct {
		const char *name;
		uint64_t tok, tok_tp4;
	} c[] = {{"Llama-3-70B", 327680, 81920}, {"DeepSeek-V3", 70272, 70272}};
	for (size_t i = 0; i < 2; i++) {
		mdl_llm_t m = builtin(c[i].name);
		assert_int_equal(m.layer_kind, MDL_LAYER_FULL);
		assert_int_equal(mdl_layers_full(&m), m.layers);
		assert_int_equal(mdl_kv_bytes_per_token(&m), c[i].tok);
		assert_int_equal(mdl_kv_paged_bytes_per_token(&m), c[i].tok);
		assert_int_equal(mdl_kv_paged_bytes_per_token_gpu(&m, 4), c[i].tok_tp4);
		assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 4), c[i].tok_tp4);
		assert_int_equal(mdl_kv_fixed_bytes_per_seq_gpu(&m, 4), 0);
		assert_int_equal(mdl_kv_seq_bytes(&m, 131072), 131072 * c[i].tok);
		assert_int_equal(mdl_kv_prefix_bytes_gpu(&m, 4, 512, 1), 512 * c[i].tok_tp4);
		assert_int_equal(mdl_kv_prefix_bytes_gpu(&m, 4, 512, 0), 512 * c[i].tok_tp4);
	}
}

/* Llama-3-8B's shipped spec (32 layers, 8 KV heads of 128, BF16) with
 * layer keys appended from line base_lines() + 1 on. */
static const char *base_text(void)
{
	const char *t = mdl_builtin_text("llm", "Llama-3-8B", NULL);
	assert_non_null(t);
	return t;
}

static int base_lines(void)
{
	int n = 0;
	for (const char *p = base_text(); *p; p++)
		n += *p == '\n';
	return n;
}

/* The spec refused with "v.ini:LINE: [model] want", LINE the base's lines + line. */
static void expect_refused(const char *tail, int line, const char *want)
{
	char text[4096], msg[256];
	snprintf(text, sizeof text, "%s%s", base_text(), tail);
	snprintf(msg, sizeof msg, "v.ini:%d: [model] %s", base_lines() + line, want);
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_parse("v.ini", text, &m, &e), KS_EINPUT);
	if (!strstr(e.msg, msg))
		fail_msg("'%s' for\n%s\nwant '%s'", e.msg, tail, msg);
}

static void test_bad_layer_keys_name_file_line_key(void **st)
{
	(void)st;
	expect_refused("layer_kind = local\n", 1,
	               "layer_kind: 'local' is not one of: full,sliding,state");
	expect_refused("layer_kind = sliding\nfull_period = 2\nfull_offset = 2\nwindow = 64\n", 3,
	               "full_offset: 2 must be below full_period 2");
	expect_refused("layer_kind = sliding\nfull_period = 33\nwindow = 64\n", 2,
	               "full_period: 33 exceeds layers 32");
	expect_refused("full_period = 2\n", 1,
	               "full_period: only valid with layer_kind = sliding or state");
	expect_refused("layer_kind = sliding\nfull_period = 2\n", 1, /* layer_kind's line */
	               "window: required (> 0) with layer_kind = sliding");
	expect_refused("layer_kind = sliding\nwindow = -4\n", 2, "window: -4 tokens is out of range [0, 4294967295]");
	expect_refused("layer_kind = state\nfull_period = 4\nwindow = 64\n", 3,
	               "window: only valid with layer_kind = sliding");
	expect_refused("layer_kind = sliding\nwindow = 64\nstate_dim = 16\n", 3,
	               "state_dim: only valid with layer_kind = state");
	expect_refused("layer_kind = state\nstate_conv_kernel = 4\nstate_heads = 8\n"
	               "state_head_dim = 1\nstate_dtype_bytes = 2\n",
	               1, "state_dim: required (> 0) with layer_kind = state");
	expect_refused("layer_kind = state\nstate_conv_kernel = 4\nstate_heads = 8\n"
	               "state_head_dim = 1\nstate_dim = 1.5\n",
	               5, "state_dim: expected an integer, got '1.5'");
	/* a good one, and the writer gives every layer key back */
	char text[4096];
	snprintf(text, sizeof text, "%s%s", base_text(),
	         "layer_kind = state\nfull_period = 4\nfull_offset = 3\nstate_conv_dim = 64\n"
	         "state_conv_kernel = 4\nstate_heads = 2\nstate_head_dim = 8\nstate_dim = 16\n"
	         "state_dtype_bytes = 4\n");
	mdl_llm_t m, back;
	err_t e = {0};
	assert_int_equal(mdl_llm_parse("v.ini", text, &m, &e), 0);
	/* 8 full layers (3, 7, ..., 31) of 2*8*128*2 = 4096 bytes; 24 state
	 * layers of 64*3*2 + 2*8*16*4 = 384 + 1024 */
	assert_int_equal(mdl_kv_paged_bytes_per_token(&m), 32768);
	assert_int_equal(mdl_kv_state_bytes_per_seq(&m), 24 * 1408);
	char *out;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	assert_int_equal(mdl_llm_write(&m, f), 0);
	fclose(f);
	assert_non_null(strstr(out, "layer_kind = state\n"));
	assert_int_equal(mdl_llm_parse("w.ini", out, &back, &e), 0);
	free(out);
	assert_int_equal(mdl_kv_seq_bytes(&back, 1000), mdl_kv_seq_bytes(&m, 1000));
	assert_int_equal(back.state_dtype_bytes, 4);
	assert_int_equal(back.full_offset, 3);
}

/* A whole run of a hybrid model: each block is its paged layers' bytes, and
 * every finished copy of k blocks moves k blocks of the attention layers plus
 * one state, per shard (mdl_kv_prefix_bytes_gpu with the state). */
static void test_run_copies_a_hybrid_prefix_with_its_state(void **st)
{
	(void)st;
	const char *sets[] = {"model.name=Jamba-1.5-Mini", "policy.replication.name=speculative",
	                      "experiment.until_s=60"};
	sim_results_t r = sf_run(NULL, sets, 3);
	mdl_llm_t m = builtin("Jamba-1.5-Mini");
	/* the default experiment: tp 4, 512-token blocks */
	uint64_t state = mdl_kv_state_bytes_per_seq_gpu(&m, 4), tok = 4096; /* 4 layers x 1024 */
	assert_int_equal(state, 2179072);
	size_t done = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		const res_transfer_t *x = &r.xfer[i];
		if (x->cancelled)
			continue;
		uint64_t shard = (uint64_t)x->blocks * 512 * tok + state;
		if (x->bytes != shard) /* one row per shard's flow */
			fail_msg("copy %zu of %u blocks moved %llu bytes, want %llu per shard", i,
			         x->blocks, (unsigned long long)x->bytes,
			         (unsigned long long)shard);
		done++;
	}
	printf("%zu finished copies of Jamba-1.5-Mini prefixes checked\n", done);
	assert_true(done > 0);
	sim_results_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gemma2_27b_local_layers_hold_at_most_4096_tokens),
	    cmocka_unit_test(test_gemma3_27b_five_local_layers_per_global_one),
	    cmocka_unit_test(test_mistral_7b_every_layer_slides_and_is_paged),
	    cmocka_unit_test(test_jamba_mini_mamba_layers_hold_a_fixed_state),
	    cmocka_unit_test(test_qwen3_next_deltanet_layers_hold_a_fixed_state),
	    cmocka_unit_test(test_prefix_bytes_carry_the_state_only_at_a_state_point),
	    cmocka_unit_test(test_full_attention_models_are_unchanged),
	    cmocka_unit_test(test_bad_layer_keys_name_file_line_key),
	    cmocka_unit_test(test_run_copies_a_hybrid_prefix_with_its_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

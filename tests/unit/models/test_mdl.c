/* Tests of models/: spec parsing, built-ins, KV sizes, the iteration cost
 * model (hand-computed cases, arithmetic in the comments) and config
 * overrides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "models/mdl.h"
#include "sim/base/cfg.h"
#include "sim/cluster/cluster.h"
#include "tests/fixtures/tmp_fixture.h"
#include "sim/run/sim_schema.h"
#include "sim/cluster/mdl_sim.h"

/* ---- helpers -------------------------------------------------------------- */

static const char TOY_HW[] = "[gpu]\n"
			     "name = toy\n"
			     "hbm_bytes = 1e9\n"
			     "hbm_bw = 2e11\n"
			     "flops_bf16 = 1e12\n"
			     "nvlink_bw = 1e10\n"
			     "nvlink_lat_ns = 100\n"
			     "pcie_bw = 1e9\n"
			     "pcie_lat_ns = 200\n"
			     "nic_bw = 1e9\n"
			     "nic_lat_ns = 300\n";

/* layers 2, hidden 64, heads 4, kv_heads 2, head_dim 16, vocab 100, BF16,
 * 1e6 parameters. Embedding + LM head = 2*100*64 = 12800 parameters. */
static const char TOY_LLM[] = "[model]\n"
			      "name = toy\n"
			      "layers = 2\n"
			      "hidden = 64\n"
			      "heads = 4\n"
			      "kv_heads = 2\n"
			      "head_dim = 16\n"
			      "intermediate = 128\n"
			      "vocab = 100\n"
			      "dtype_bytes = 2\n"
			      "params_total = 1000000\n"
			      "params_active = 1000000\n"
			      "attention = gqa\n";

static const mdl_compute_params_t IDEAL = {
    .mfu = 1, .mbu = 1, .allreduce_bw_eff = 1, .allreduce_lat_ns = 0, .iter_overhead_ns = 0};

static void toy(mdl_hw_t *hw, mdl_llm_t *llm)
{
	err_t e = {0};
	assert_int_equal(mdl_hw_parse("toy-hw", TOY_HW, hw, &e), 0);
	assert_int_equal(mdl_llm_parse("toy-llm", TOY_LLM, llm, &e), 0);
}

/* Parses TOY_LLM with one line replaced/added and returns the status. */
static int llm_variant(const char *text, err_t *e)
{
	mdl_llm_t m;
	memset(e, 0, sizeof *e);
	return mdl_llm_parse("v.ini", text, &m, e);
}

static void assert_msg(const err_t *e, const char *needle)
{
	if (!strstr(e->msg, needle))
		fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

/* ---- KV bytes pins -------------------------------------------------------- */

static void test_kv_bytes_per_token_llama3_8b_is_128_kib(void **st)
{
	(void)st;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Llama-3-8B", &m, &e), 0);
	/* 2 (K,V) * 32 layers * 8 kv heads * 128 dims * 2 bytes = 131072 */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 131072);
}

static void test_kv_bytes_per_token_llama3_70b_is_320_kib(void **st)
{
	(void)st;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Llama-3-70B", &m, &e), 0);
	/* 2 * 80 * 8 * 128 * 2 = 327680 = 320 KiB */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 327680);
	/* TP4 shards the 8 KV heads: 2 per GPU -> 327680 / 4 = 81920 */
	assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 4), 81920);
	assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 8), 40960);
	/* TP16 > 8 KV heads: one head replicated per GPU, 2*80*1*128*2 */
	assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 16), 40960);
}

static void test_kv_bytes_per_token_deepseek_v3_mla_latent_plus_rope(void **st)
{
	(void)st;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("DeepSeek-V3", &m, &e), 0);
	assert_int_equal(m.attention, MDL_ATTN_MLA);
	/* 61 layers * (512 latent + 64 rope) * 2 bytes = 61 * 1152 = 70272 */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 70272);
	/* the latent is replicated on every TP rank, not sharded */
	assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 8), 70272);
}

static void test_kv_bytes_per_token_mixtral_and_qwen(void **st)
{
	(void)st;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Mixtral-8x7B", &m, &e), 0);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 131072); /* 2*32*8*128*2 */
	assert_int_equal(mdl_llm_builtin("Qwen2.5-72B", &m, &e), 0);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 327680); /* 2*80*8*128*2 */
}

static void test_weights_llama3_70b_bf16_about_141_gb(void **st)
{
	(void)st;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Llama-3-70B", &m, &e), 0);
	/* 70,553,706,496 params * 2 bytes = 141,107,412,992 bytes */
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 141107412992ull);
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 4), 35276853248ull);
	/* H100 80e9 B * 0.9 = 72e9 - 35276853248 weights = 36723146752 B of KV
	 * per GPU / 81920 B per token = 448280.6 -> 448280 tokens */
	mdl_hw_t hw;
	assert_int_equal(mdl_hw_builtin("H100-SXM", &hw, &e), 0);
	assert_int_equal(mdl_kv_tokens_per_instance(&hw, &m, 4, 0.1), 448280);
	/* one H100 cannot hold the 141 GB of weights */
	assert_int_equal(mdl_kv_tokens_per_instance(&hw, &m, 1, 0.1), 0);
	assert_int_equal(mdl_llm_builtin("DeepSeek-V3", &m, &e), 0);
	/* 83.9 GB of FP8 weights per GPU do not fit an 80 GB H100 at TP8 */
	assert_int_equal(mdl_kv_tokens_per_instance(&hw, &m, 8, 0.1), 0);
	/* FP8 weights: 671,026,419,200 params * 1 byte, over 8 GPUs */
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 8), 83878302400ull);
}

/* ---- built-in specs ----------------------------------------------------------- */

static void test_every_builtin_hw_spec_loads_and_is_sane(void **st)
{
	(void)st;
	const char *want[] = {"A100-80GB", "B200", "H100-SXM", "H200"};
	size_t n = 0;
	const char *name;
	for (; (name = mdl_builtin_name("hw", n)); n++) {
		mdl_hw_t hw;
		err_t e = {0};
		assert_int_equal(mdl_hw_builtin(name, &hw, &e), 0);
		assert_string_equal(hw.name, name); /* file name matches its name key */
		assert_true(hw.hbm_bytes >= 40e9 && hw.hbm_bytes <= 300e9);
		assert_true(hw.hbm_bw >= 1e12 && hw.hbm_bw <= 10e12);
		assert_true(hw.flops_bf16 >= 100e12 && hw.flops_bf16 <= 5e15);
		/* per direction per GPU: NVLink beats PCIe beats nothing */
		assert_true(hw.nvlink_bw > hw.pcie_bw && hw.pcie_bw >= hw.nic_bw / 2);
		assert_true(hw.nic_bw >= 25e9 && hw.nic_bw <= 100e9);
		assert_true(hw.host_dram_bytes >= 1e12);
	}
	assert_int_equal(n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(mdl_builtin_name("hw", i), want[i]);
	mdl_hw_t h;
	err_t e = {0};
	assert_int_equal(mdl_hw_builtin("h100-sxm", &h, &e), 0); /* case-insensitive */
	/* datasheet numbers, dense BF16 */
	assert_true(h.flops_bf16 == 989.5e12 && h.hbm_bw == 3.35e12 && h.nvlink_bw == 450e9);
	assert_true(h.flops_fp8 == 2 * h.flops_bf16);
	assert_int_equal(mdl_hw_builtin("H800", &h, &e), KS_EINPUT);
	assert_msg(&e, "built-in: A100-80GB, B200, H100-SXM, H200");
}

static void test_every_builtin_llm_spec_loads_and_is_sane(void **st)
{
	(void)st;
	size_t n = 0;
	const char *name;
	for (; (name = mdl_builtin_name("llm", n)); n++) {
		mdl_llm_t m;
		err_t e = {0};
		assert_int_equal(mdl_llm_builtin(name, &m, &e), 0);
		assert_string_equal(m.name, name);
		assert_true(m.params_total >= 7e9 && m.params_total <= 700e9);
		assert_true(m.params_active <= m.params_total);
		uint64_t kv = mdl_kv_bytes_per_token(&m);
		/* hybrids keep per-token KV in a few layers (Jamba: 4 of 32) */
		assert_true(kv >= 8 * 1024 && kv <= 512 * 1024);
		/* parameters from the shapes: at least the attention+MLP of a layer */
		assert_true((double)m.params_active > (double)m.layers * m.hidden * m.intermediate);
	}
	assert_int_equal(n, 10);
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Mixtral-8x7B", &m, &e), 0);
	assert_int_equal(m.experts, 8);
	assert_int_equal(m.experts_active, 2);
	assert_int_equal(m.params_total, 46702792704ull);
	assert_int_equal(m.params_active, 12879925248ull);
	assert_int_equal(mdl_llm_builtin("GPT-5", &m, &e), KS_EINPUT);
	assert_msg(&e, "model 'GPT-5': no built-in spec");
}

/* ---- INI errors ----------------------------------------------------------------- */

static void test_ini_unknown_key_names_file_line_key(void **st)
{
	(void)st;
	err_t e;
	char text[1024];
	snprintf(text, sizeof text, "%slayerz = 3\n", TOY_LLM);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	/* TOY_LLM has 13 lines, the bad key is line 14 */
	assert_msg(&e, "v.ini:14: [model] layerz: unknown key (did you mean 'layers'?)");
	/* nothing close: the section's keys are listed */
	snprintf(text, sizeof text, "%sqqqqqqqq = 3\n", TOY_LLM);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini:14: [model] qqqqqqqq: unknown key (known: name, layers, hidden,");
}

static void test_ini_missing_required_key_is_reported(void **st)
{
	(void)st;
	err_t e;
	const char *t = strstr(TOY_LLM, "vocab");
	char text[1024];
	snprintf(text, sizeof text, "%.*s%s", (int)(t - TOY_LLM), TOY_LLM, strchr(t, '\n') + 1);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	/* named at the section's header */
	assert_msg(&e, "v.ini:1: [model] vocab: missing required key");
}

static void test_ini_bad_numbers_are_rejected(void **st)
{
	(void)st;
	const struct {
		const char *line, *msg;
	} bad[] = {
	    {"experts = abc\n", "v.ini:14: [model] experts: expected an integer, got 'abc'"},
	    {"experts = -3\n", "v.ini:14: [model] experts: -3 is out of range [0, 4294967295]"},
	    {"experts = 2.5\n", "v.ini:14: [model] experts: expected an integer, got '2.5'"},
	    {"experts = 1e10\n", "v.ini:14: [model] experts: 1e10 is out of range [0, 4294967295]"},
	    {"experts = nan\n", "v.ini:14: [model] experts: expected an integer, got 'nan'"},
	    {"experts = 0x10\n", "v.ini:14: [model] experts: expected an integer, got '0x10'"},
	    {"experts =\n", "v.ini:14: [model] experts: expected an integer, got ''"},
	    {"weight_bytes = inf\n", "v.ini:14: [model] weight_bytes: expected a finite number"},
	    {"layers = 3\n", "v.ini:14: [model] layers: duplicate key (first set on line 3)"},
	    {"[extra]\nx = 1\n", "v.ini:14: [extra]: unknown section (known: [model])"},
	    {"just words\n", "v.ini:14: malformed line (expected '[section]', 'key = value' or "
	                     "a comment): 'just words'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[1024];
		err_t e;
		snprintf(text, sizeof text, "%s%s", TOY_LLM, bad[i].line);
		assert_int_equal(llm_variant(text, &e), KS_EINPUT);
		assert_msg(&e, bad[i].msg);
	}
	/* the same checks on a hardware file */
	mdl_hw_t hw;
	err_t e = {0};
	char text[1024];
	snprintf(text, sizeof text, "%s", TOY_HW);
	char *p = strstr(text, "hbm_bw = 2e11");
	memcpy(p, "hbm_bw = 2e1x", 13);
	assert_int_equal(mdl_hw_parse("h.ini", text, &hw, &e), KS_EINPUT);
	assert_msg(&e, "h.ini:4: [gpu] hbm_bw: expected a number, got '2e1x'");
	/* a whole number in e-notation is one for an integer key ("80e9") */
	mdl_llm_t m;
	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "vocab = 100\n"), "vocab = 1e2\n", 12);
	assert_int_equal(mdl_llm_parse("v.ini", text, &m, &e), 0);
	assert_int_equal(m.vocab, 100);
}

static void test_ini_attention_and_cross_field_errors(void **st)
{
	(void)st;
	err_t e;
	char text[1024];
	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "= gqa"), "= mha", 5);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini:13: [model] attention: 'mha' is not one of: gqa,mla");

	snprintf(text, sizeof text, "%smla_latent = 512\n", TOY_LLM);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "mla_latent/mla_rope: only valid with attention = mla");

	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "params_active = 1000000"), "params_active = 2000000", 23);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "params_active: 2000000 exceeds params_total 1000000");

	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "kv_heads = 2"), "kv_heads = 3", 12);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "kv_heads: 3 does not divide heads 4");

	snprintf(text, sizeof text, "%sexperts = 4\n", TOY_LLM); /* no experts_active */
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "experts_active: must be in [1, experts - 1]");
}

/* Derived sizes are uint64 byte counts: a spec whose weights or KV bytes
 * per token would not fit is refused (the cast of 1e308 * params to uint64
 * was undefined), and the MLA per-token size adds latent and rope in 64
 * bits (3e9 + 3e9 wrapped around uint32). */
static void test_ini_sizes_beyond_64_bits_are_refused(void **st)
{
	(void)st;
	err_t e;
	char text[1024];
	snprintf(text, sizeof text, "%sweight_bytes = 1e20\n", TOY_LLM);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini: weight_bytes: params_total * weight_bytes = 1e+26 bytes is out of "
	               "range");
	/* K and V: 2 * 4e9 layers * 2 kv_heads * 4e9 head_dim * 2 bytes = 1.28e20 */
	const char *rest = strstr(TOY_LLM, "intermediate");
	snprintf(text, sizeof text,
	         "[model]\nname = toy\nlayers = 4000000000\nhidden = 64\nheads = 4\n"
	         "kv_heads = 2\nhead_dim = 4000000000\n%s",
	         rest);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini: dtype_bytes: KV cache bytes per token = 1.28e+20 is out of range");
	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "= gqa"), "= mla", 5);
	strcat(text, "mla_latent = 3000000000\nmla_rope = 3000000000\n");
	mdl_llm_t m;
	assert_int_equal(mdl_llm_parse("v.ini", text, &m, &e), 0);
	assert_int_equal(mdl_kv_bytes_per_token(&m), 2ull * 6000000000ull * 2);
}

static void test_ini_long_line_and_outside_section(void **st)
{
	(void)st;
	err_t e;
	char text[2048];
	char pad[400];
	memset(pad, 'x', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	/* a line past inih's buffer is read as any other (as in a config):
	 * a long comment is a comment, a long name is too long */
	snprintf(text, sizeof text, "%s; %s\n", TOY_LLM, pad);
	assert_int_equal(llm_variant(text, &e), 0);
	snprintf(text, sizeof text, "%s", TOY_LLM);
	snprintf(strstr(text, "name = toy"), sizeof text - (size_t)(strstr(text, "name") - text),
	         "name = %s\n%s", pad, strstr(TOY_LLM, "layers"));
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini:2: [model] name: 'xxxxxxxx");
	assert_msg(&e, "is too long (at most 63 characters)");
	assert_int_equal(llm_variant("layers = 2\n[model]\n", &e), KS_EINPUT);
	assert_msg(&e, "v.ini:1: layers: key outside any [section]");
	/* an indented line is an ordinary one, not the previous value's tail */
	snprintf(text, sizeof text, "%s  tied_embeddings = 1\n", TOY_LLM);
	mdl_llm_t t;
	assert_int_equal(mdl_llm_parse("v.ini", text, &t, &e), 0);
	assert_int_equal(t.tied_embeddings, 1);
	assert_int_equal(t.attention, MDL_ATTN_GQA);
	/* a failed parse leaves the output untouched */
	mdl_llm_t m = {.layers = 77};
	assert_int_equal(mdl_llm_parse("v.ini", "[model]\nlayers = 5\n", &m, &e), KS_EINPUT);
	assert_int_equal(m.layers, 77);
}

static void test_user_spec_file_loads_and_missing_file_fails(void **st)
{
	(void)st;
	char dir[] = "/tmp/kvsim_mdl_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/mine.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(TOY_LLM, f);
	fputs("weight_bytes = 0.5 ; 4-bit weights\n", f);
	fclose(f);
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_llm_load_file(path, &m, &e), 0);
	assert_true(m.weight_bytes == 0.5);
	assert_int_equal(m.dtype_bytes, 2);
	/* 1e6 params * 0.5 bytes */
	assert_int_equal(mdl_weights_bytes_per_gpu(&m, 1), 500000);
	unlink(path);
	rmdir(dir);
	assert_int_equal(mdl_llm_load_file(path, &m, &e), KS_EINPUT);
	assert_msg(&e, "cannot open");
}

static void test_written_specs_parse_back_identical(void **st)
{
	(void)st;
	for (size_t i = 0; mdl_builtin_name("llm", i); i++) {
		mdl_llm_t a, b;
		err_t e = {0};
		assert_int_equal(mdl_llm_builtin(mdl_builtin_name("llm", i), &a, &e), 0);
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(mdl_llm_write(&a, f), 0);
		fclose(f);
		assert_int_equal(mdl_llm_parse("w", buf, &b, &e), 0);
		free(buf);
		assert_memory_equal(&a, &b, sizeof a);
	}
	for (size_t i = 0; mdl_builtin_name("hw", i); i++) {
		mdl_hw_t a, b;
		err_t e = {0};
		assert_int_equal(mdl_hw_builtin(mdl_builtin_name("hw", i), &a, &e), 0);
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(mdl_hw_write(&a, f), 0);
		fclose(f);
		assert_int_equal(mdl_hw_parse("w", buf, &b, &e), 0);
		free(buf);
		assert_memory_equal(&a, &b, sizeof a);
	}
}

/* Writes a hardware (hw) or model spec into *buf; the writer's status. */
static int spec_text(int hw, const void *spec, char **buf, size_t *len)
{
	*buf = NULL;
	FILE *f = open_memstream(buf, len);
	assert_non_null(f);
	int rc = hw ? mdl_hw_write(spec, f) : mdl_llm_write(spec, f);
	fclose(f);
	return rc;
}

/* "name =;X" has no blank before the ';', so inih keeps it in the value, but
 * the writer's "name = ;X" reads back as an empty name: refused at input,
 * and by the writer for a struct filled in by hand. A ';' inside the name
 * round-trips and stays allowed. */
static void test_ini_name_starting_with_comment_char_is_refused(void **st)
{
	(void)st;
	char text[1024];
	snprintf(text, sizeof text, "%s", TOY_HW);
	memcpy(strstr(text, "name = toy"), "name =;toy", 10);
	mdl_hw_t hw, back;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_hw_parse("h.ini", text, &hw, &e), KS_EINPUT);
	assert_msg(&e, "h.ini:2: [gpu] name: value cannot begin with ';'");
	snprintf(text, sizeof text, "%s", TOY_LLM);
	memcpy(strstr(text, "name = toy"), "name =;toy", 10);
	assert_int_equal(llm_variant(text, &e), KS_EINPUT);
	assert_msg(&e, "v.ini:2: [model] name: value cannot begin with ';'");

	toy(&hw, &m);
	memcpy(hw.name, "t;y", 4);
	char *buf;
	size_t len;
	assert_int_equal(spec_text(1, &hw, &buf, &len), 0);
	assert_int_equal(mdl_hw_parse("w", buf, &back, &e), 0);
	assert_memory_equal(&hw, &back, sizeof hw);
	free(buf);

	memcpy(hw.name, ";y", 3);
	assert_int_equal(spec_text(1, &hw, &buf, &len), KS_EINPUT);
	assert_int_equal(len, 0);
	free(buf);
	memcpy(m.name, ";y", 3);
	assert_int_equal(spec_text(0, &m, &buf, &len), KS_EINPUT);
	assert_int_equal(len, 0);
	free(buf);
}

/* ---- compute cost: hand-computed cases ------------------------------------------ */

/* Toy GQA model on the toy GPU (1e12 FLOP/s, 2e11 B/s), tp 1, mfu = mbu = 1.
 * emb = vocab*hidden*2 = 12800, body = 1e6 - 12800 = 987200.
 * KV/token = 2*2*2*16*2 = 256 bytes. Weights read = (1e6 - 6400)*2 = 1987200.
 * Attention FLOPs per (query, key) pair: 4*layers*heads*head_dim = 512. */
static void test_iter_prefill_chunk_compute_bound_by_hand(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	/* 10 new tokens, nothing cached:
	 * matmul 2*987200*10 + 2*100*64*1 (LM head, 1 seq) = 19744000 + 12800
	 * pairs 10*11/2 = 55 -> attention 512*55 = 28160
	 * FLOPs 19784960 -> 19784.96 ns at 1e12
	 * bytes 1987200 + 256*10 (KV write) = 1989760 -> 9948.8 ns at 2e11
	 * compute-bound: ceil(19784.96) = 19785 */
	uint32_t pn = 10, pc = 0;
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &pn, .prefill_cached = &pc};
	mdl_iter_cost_t r;
	assert_int_equal(mdl_iter_cost(&c, &b, &r), 19785);
	assert_true(r.flops == 19784960.0);
	assert_true(r.bytes == 1989760.0);
	assert_int_equal(mdl_prefill_time_ns(&c, 10, 0), 19785);
	assert_int_equal(mdl_iter_time_ns(&c, &b), 19785);

	/* with 20 cached tokens: pairs 10*20 + 55 = 255 -> 130560 attention FLOPs
	 * FLOPs 19756800 + 130560 = 19887360 -> 19887.36 ns -> 19888 */
	pc = 20;
	assert_int_equal(mdl_iter_cost(&c, &b, &r), 19888);
	/* bytes 1987200 + 256*(20 read + 10 write) = 1994880 */
	assert_true(r.bytes == 1994880.0);
}

static void test_iter_decode_batch_memory_bound_by_hand(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	/* three decodes with contexts 100, 200, 300:
	 * matmul 2*987200*3 + 2*6400*3 = 5923200 + 38400 = 5961600
	 * pairs 101 + 201 + 301 = 603 -> 512*603 = 308736; FLOPs 6270336 -> 6270.336 ns
	 * bytes 1987200 + 256*(600 read + 3 write) = 2141568 -> 10707.84 ns
	 * memory-bound: ceil = 10708 */
	uint32_t ctx[] = {100, 200, 300};
	mdl_batch_t b = {.decode_ctx = ctx, .n_decode = 3};
	mdl_iter_cost_t r;
	assert_int_equal(mdl_iter_cost(&c, &b, &r), 10708);
	assert_true(r.flops == 6270336.0);
	assert_true(r.bytes == 2141568.0);
	/* equal contexts through the helper: 3 x ctx 200 has the same sums */
	assert_int_equal(mdl_decode_step_ns(&c, 3, 200), 10708);
	/* an empty batch costs nothing, not even the overhead */
	mdl_batch_t none = {0};
	assert_int_equal(mdl_iter_time_ns(&c, &none), 0);
}

static void test_iter_mixed_batch_tp2_with_allreduce_and_overhead_by_hand(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	mdl_compute_params_t p = {.mfu = 0.5,
	                          .mbu = 0.5,
	                          .allreduce_bw_eff = 0.5,
	                          .allreduce_lat_ns = 500,
	                          .iter_overhead_ns = 1000};
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 2, &p, &e), 0);
	/* prefill (10 new, 0 cached) + decodes (100, 200, 300); T = 13, S = 4
	 * matmul 2*987200*13 + 12800*4 = 25667200 + 51200 = 25718400
	 * attention 512*(55 + 603) = 336896; FLOPs 26055296
	 * FLOP rate 2 GPUs * 1e12 * 0.5 = 1e12 -> 26055.296 ns
	 * bytes/GPU: weights 1987200/2 = 993600; KV/token/GPU 128 (1 of 2 heads)
	 *   KV 128*(600 read + 13 write) = 78464 -> 1072064 at 2e11*0.5 -> 10720.64 ns
	 * all-reduce: message 13*64*2 = 1664 B; ring 2*(2-1)/2*1664 = 1664 B at
	 *   1e10*0.5 = 5e9 B/s = 332.8 ns + 500 = 832.8 ns; 2 per layer * 2 layers
	 *   = 3331.2 ns
	 * total 26055.296 + 3331.2 + 1000 = 30386.496 -> 30387 */
	uint32_t pn = 10, pc = 0;
	uint32_t ctx[] = {100, 200, 300};
	mdl_batch_t b = {.n_prefill = 1,
	                 .prefill_new = &pn,
	                 .prefill_cached = &pc,
	                 .decode_ctx = ctx,
	                 .n_decode = 3};
	mdl_iter_cost_t r;
	assert_int_equal(mdl_iter_cost(&c, &b, &r), 30387);
	assert_true(r.bytes == 1072064.0);
	assert_float_equal(r.t_comm_ns, 3331.2, 1e-6);
	assert_float_equal(r.t_memory_ns, 10720.64, 1e-6);
}

static void test_iter_moe_reads_expected_touched_experts(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	/* 4 experts, 1 active: X = (1e6 - 4e5)/3 = 2e5 per expert, shared 2e5 */
	m.experts = 4;
	m.experts_active = 1;
	m.params_active = 400000;
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	mdl_iter_cost_t r;
	uint32_t ctx[] = {0, 0};
	/* one decode: touched 4*(1 - 3/4) = 1 expert -> 4e5 params - 6400 untied
	 * embedding table = 393600 * 2 B = 787200, + 256 B KV write */
	mdl_batch_t one = {.decode_ctx = ctx, .n_decode = 1};
	mdl_iter_cost(&c, &one, &r);
	assert_float_equal(r.bytes, 787456.0, 1e-6);
	/* two decodes: 4*(1 - 9/16) = 1.75 experts -> 2e5 + 3.5e5 - 6400 = 543600
	 * * 2 = 1087200, + 512 B KV */
	mdl_batch_t two = {.decode_ctx = ctx, .n_decode = 2};
	mdl_iter_cost(&c, &two, &r);
	assert_float_equal(r.bytes, 1087712.0, 1e-6);
	/* FLOPs use active parameters: 2*(4e5 - 12800)*2 + 2*6400*2 + 512*2 pairs */
	assert_float_equal(r.flops, 1548800.0 + 25600.0 + 1024.0, 1e-6);
	/* a large prefill touches every expert: weights = (1e6 - 6400)*2 */
	uint32_t pn = 4096, pc = 0;
	mdl_batch_t big = {.n_prefill = 1, .prefill_new = &pn, .prefill_cached = &pc};
	mdl_iter_cost(&c, &big, &r);
	assert_float_equal(r.bytes, 1987200.0 + 256.0 * 4096, 1e-3);
}

static void test_iter_mla_absorbed_decode_and_naive_prefill_flops(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	m.attention = MDL_ATTN_MLA;
	m.mla_latent = 32;
	m.mla_rope = 8;
	/* KV/token = 2 layers * (32 + 8) * 2 B = 160, on every TP rank */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 160);
	assert_int_equal(mdl_kv_bytes_per_token_gpu(&m, 4), 160);
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	double mat1 = 2.0 * 987200 + 2.0 * 6400; /* one token, one sequence */
	mdl_iter_cost_t r;
	/* prefill 4 tokens after 6 cached: pairs 4*6 + 10 = 34
	 * naive: 2*L*H*(2*head_dim + rope) = 2*2*4*40 = 640 per pair -> 21760
	 * up-projection of 6 cached latents: 2 layers*6*2*32*4*2*16 = 98304 */
	uint32_t pn = 4, pc = 6;
	mdl_batch_t pf = {.n_prefill = 1, .prefill_new = &pn, .prefill_cached = &pc};
	mdl_iter_cost(&c, &pf, &r);
	assert_float_equal(r.flops - (2.0 * 987200 * 4 + 2.0 * 6400), 21760.0 + 98304.0, 1e-6);
	/* decode with ctx 9: 10 pairs * 2*L*H*(2*latent + rope) = 10*16*72 = 11520 */
	uint32_t ctx = 9;
	mdl_batch_t dec = {.decode_ctx = &ctx, .n_decode = 1};
	mdl_iter_cost(&c, &dec, &r);
	assert_float_equal(r.flops - mat1, 11520.0, 1e-6);
	/* bytes: weights 1987200 + 160*(9 read + 1 write) */
	assert_float_equal(r.bytes, 1987200.0 + 1600.0, 1e-6);
}

static void test_iter_fp8_weights_use_fp8_rate_for_matmuls_only(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	m.weight_bytes = 1;
	hw.flops_fp8 = 2e12;
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	/* prefill of 10: matmul 19756800 FLOPs at 2e12 = 9878.4 ns, attention
	 * 28160 at the BF16 1e12 = 28.16 ns -> 9906.56 ns; bytes (1e6 - 6400)*1
	 * + 2560 = 996160 at 2e11 = 4980.8 ns -> compute-bound, 9907 */
	assert_int_equal(mdl_prefill_time_ns(&c, 10, 0), 9907);
	/* without FP8 tensor cores the GEMMs run at the BF16 rate: 19785 */
	hw.flops_fp8 = 0;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	assert_int_equal(mdl_prefill_time_ns(&c, 10, 0), 19785);
	/* BF16 weights ignore flops_fp8 */
	hw.flops_fp8 = 2e12;
	m.weight_bytes = 2;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	assert_int_equal(mdl_prefill_time_ns(&c, 10, 0), 19785);
}

/* Llama-3-70B on H100-SXM at TP4, 64 decodes at context 1024, defaults
 * mfu 0.5, mbu 0.8, allreduce eff 0.8, 10 us per all-reduce, 0.5 ms overhead.
 *   weights/GPU = (70553706496 - 128256*8192)*2/4 = 69503033344*2/4
 *               = 34751516672 B
 *   KV/GPU/token = 81920; read 64*1024*81920 = 5368709120, write 64*81920
 *   = 5242880; bytes 40125468672 at 3.35e12*0.8 = 2.68e12 -> 14972189.80 ns
 *   FLOPs: (70553706496 - 2*1050673152)*2*64 + 2*1050673152*64
 *          + 4*80*64*128*64*1025 = 9068354732032 at 4*989.5e12*0.5
 *          -> 4582291.43 ns (memory-bound)
 *   all-reduce: msg 64*8192*2 = 1048576 B; 10000 + 1.5*1048576/3.6e11 s
 *          = 14369.07 ns; * 160 = 2299050.67 ns
 *   total 14972189.80 + 2299050.67 + 500000 = 17771240.47 -> 17771241 ns */
static void test_iter_llama3_70b_h100_tp4_decode_by_hand(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	err_t e = {0};
	assert_int_equal(mdl_hw_builtin("H100-SXM", &hw, &e), 0);
	assert_int_equal(mdl_llm_builtin("Llama-3-70B", &m, &e), 0);
	mdl_compute_params_t p = {.mfu = 0.5,
	                          .mbu = 0.8,
	                          .allreduce_bw_eff = 0.8,
	                          .allreduce_lat_ns = 10000,
	                          .iter_overhead_ns = 500000};
	mdl_compute_t c;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 4, &p, &e), 0);
	assert_int_equal(mdl_decode_step_ns(&c, 64, 1024), 17771241);
	mdl_iter_cost_t r;
	uint32_t ctx[64];
	for (int i = 0; i < 64; i++)
		ctx[i] = 1024;
	mdl_batch_t b = {.decode_ctx = ctx, .n_decode = 64};
	assert_int_equal(mdl_iter_cost(&c, &b, &r), 17771241);
	assert_true(r.flops == 9068354732032.0);
	assert_true(r.bytes == 40125468672.0);
}

static void test_sim_cost_adapter_matches_iter_time(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &IDEAL, &e), 0);
	/* the prefill + decode batch of the hand-computed cases, at tp 1 */
	uint32_t pn = 10, pc = 20, ctx[] = {100, 200, 300};
	sim_batch_t sb = {.n_pre = 1, .n_dec = 3, .pre_new = &pn, .pre_ctx = &pc, .dec_ctx = ctx};
	sim_cost_fn fn = mdl_sim_cost;
	mdl_batch_t b = {.n_prefill = 1,
	                 .prefill_new = &pn,
	                 .prefill_cached = &pc,
	                 .n_decode = 3,
	                 .decode_ctx = ctx};
	int64_t t = fn(&c, &sb);
	assert_true(t > 0);
	assert_int_equal(t, mdl_iter_time_ns(&c, &b));
}

static void test_compute_init_rejects_bad_tp_and_params(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	toy(&hw, &m);
	mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 0, &IDEAL, &e), KS_EINPUT);
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 3, &IDEAL, &e), KS_EINPUT);
	assert_msg(&e, "tp: 3 does not divide toy's 4 attention heads");
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 4, &IDEAL, &e), 0); /* tp > kv_heads */
	mdl_compute_params_t p = IDEAL;
	p.mfu = 0;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), KS_EINPUT);
	p = IDEAL;
	p.iter_overhead_ns = -1;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), KS_EINPUT);
}

static void test_iter_time_grows_with_context_and_tokens(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	err_t e = {0};
	mdl_compute_t c;
	assert_int_equal(mdl_hw_builtin("H200", &hw, &e), 0);
	const char *models[] = {"Llama-3-8B", "Llama-3-70B", "Qwen2.5-72B", "Mixtral-8x7B",
	                        "DeepSeek-V3"};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(mdl_llm_builtin(models[i], &m, &e), 0);
		assert_int_equal(mdl_compute_init(&c, &hw, &m, 8, &mdl_compute_params_default, &e),
		                 0);
		int64_t prev = 0;
		for (uint32_t ctx = 0; ctx <= 65536; ctx += 4096) {
			int64_t t = mdl_decode_step_ns(&c, 32, ctx);
			assert_true(t > prev);
			prev = t;
		}
		assert_true(mdl_prefill_time_ns(&c, 2048, 0) < mdl_prefill_time_ns(&c, 4096, 0));
		assert_true(mdl_prefill_time_ns(&c, 2048, 0) < mdl_prefill_time_ns(&c, 2048, 8192));
	}
}

/* ---- config: defaults and overrides ------------------------------------------ */

static cfg_t *new_cfg(void)
{
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	cfg_t *c = cfg_new(s);
	assert_non_null(c);
	return c;
}

static void free_cfg(cfg_t *c)
{
	cfg_schema_t *s = (cfg_schema_t *)cfg_schema(c);
	cfg_free(c);
	cfg_schema_free(s);
}

static void set_ok(cfg_t *c, const char *a)
{
	err_t e = {0};
	if (cfg_set(c, a, &e))
		fail_msg("cfg_set %s: %s", a, e.msg);
}

static void test_cfg_defaults_give_h100_llama3_70b_and_default_params(void **st)
{
	(void)st;
	cfg_t *c = new_cfg();
	mdl_hw_t hw;
	mdl_llm_t m;
	mdl_compute_params_t p;
	err_t e = {0};
	/* the struct's defaults are those without the GPU's shipped calibration
	 * (tests/unit/models/test_mdl_terms.c checks that one) */
	set_ok(c, "compute.calibration=none");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), 0);
	assert_string_equal(hw.name, "H100-SXM");
	assert_string_equal(m.name, "Llama-3-70B");
	assert_memory_equal(&p, &mdl_compute_params_default, sizeof p);
	/* the key table's default texts agree with the struct */
	const mdl_compute_params_t *d = &mdl_compute_params_default;
	assert_true(cfg_float(c, "compute", "mfu") == d->mfu);
	assert_true(cfg_float(c, "compute", "mbu") == d->mbu);
	assert_true(cfg_float(c, "compute", "allreduce_bw_eff") == d->allreduce_bw_eff);
	assert_int_equal(cfg_int(c, "compute", "allreduce_lat_ns"), d->allreduce_lat_ns);
	assert_int_equal(cfg_int(c, "compute", "iter_overhead_ns"), d->iter_overhead_ns);
	/* every override key names a spec field and defaults to "from the spec" */
	const cfg_schema_t *s = cfg_schema(c);
	for (size_t i = 0; i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if ((!strcmp(k->section, "gpu") || !strcmp(k->section, "model")) &&
		    strcmp(k->name, "name") && strcmp(k->name, "file") && strcmp(k->name, "hf_config"))
			assert_true(!strcmp(k->def, "-1") || !strcmp(k->def, "spec"));
	}
	free_cfg(c);
}

static void test_cfg_overrides_replace_spec_fields(void **st)
{
	(void)st;
	cfg_t *c = new_cfg();
	set_ok(c, "gpu.name=B200");
	set_ok(c, "gpu.hbm_bw=1e12");
	set_ok(c, "gpu.nic_lat_ns=42");
	set_ok(c, "model.name=llama-3-8b");
	set_ok(c, "model.layers=16");
	set_ok(c, "model.dtype_bytes=1"); /* FP8 KV cache, weights stay BF16 */
	set_ok(c, "compute.mfu=0.4");
	set_ok(c, "compute.iter_overhead_ns=0");
	mdl_hw_t hw;
	mdl_llm_t m;
	mdl_compute_params_t p;
	err_t e = {0};
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), 0);
	assert_string_equal(hw.name, "B200");
	assert_true(hw.hbm_bw == 1e12);
	assert_true(hw.flops_bf16 == 2.25e15); /* not overridden: from the spec */
	assert_int_equal(hw.nic_lat_ns, 42);
	assert_int_equal(m.layers, 16);
	/* 2 * 16 layers * 8 * 128 * 1 byte */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 32768);
	assert_true(m.weight_bytes == 2);
	assert_true(p.mfu == 0.4);
	assert_int_equal(p.iter_overhead_ns, 0);
	free_cfg(c);
}

static void test_cfg_override_turns_model_into_mla(void **st)
{
	(void)st;
	cfg_t *c = new_cfg();
	set_ok(c, "model.attention=mla");
	mdl_hw_t hw;
	mdl_llm_t m;
	err_t e = {0};
	/* MLA needs a latent rank: the cross-field check runs after overrides */
	assert_int_equal(mdl_load_cfg(c, &hw, &m, NULL, &e), KS_EINPUT);
	assert_msg(&e, "[model] after overrides: mla_latent: required");
	set_ok(c, "model.mla_latent=512");
	set_ok(c, "model.mla_rope=64");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, NULL, &e), 0);
	/* 80 layers * 576 * 2 bytes */
	assert_int_equal(mdl_kv_bytes_per_token(&m), 92160);
	free_cfg(c);
}

static void test_cfg_bad_overrides_and_names_are_input_errors(void **st)
{
	(void)st;
	err_t e = {0};
	mdl_hw_t hw;
	mdl_llm_t m;
	mdl_compute_params_t p = {0};
	cfg_t *c = new_cfg();
	set_ok(c, "gpu.hbm_bw=-0.5"); /* -5 is already out of the key range */
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), KS_EINPUT);
	assert_msg(&e, "--set: [gpu] hbm_bw: must be >= 0, or -1 for the spec's value");
	assert_true(p.mfu == 0); /* outputs untouched on error */
	free_cfg(c);

	c = new_cfg();
	set_ok(c, "model.params_total=1.5e11");
	set_ok(c, "model.params_active=1.5");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), KS_EINPUT);
	assert_msg(&e, "--set: [model] params_active: must be an integer");
	free_cfg(c);

	c = new_cfg();
	set_ok(c, "model.kv_heads=3");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), KS_EINPUT);
	assert_msg(&e, "kv_heads: 3 does not divide heads 64");
	free_cfg(c);

	c = new_cfg();
	set_ok(c, "gpu.name=H800");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, &p, &e), KS_EINPUT);
	assert_msg(&e, "--set: [gpu] name: gpu 'H800': no built-in spec");
	free_cfg(c);
}

/* [gpu] and [model] go through one loader: each names its own section in
 * every message (built-in name, spec file, check after overrides). */
static void test_cfg_gpu_and_model_errors_name_their_section(void **st)
{
	(void)st;
	static const struct {
		const char *set, *msg;
	} cases[] = {
	    {"model.name=Llama-9", "--set: [model] name: model 'Llama-9': no built-in spec"},
	    {"model.file=/nonexistent/m.ini", "--set: [model] file: /nonexistent/m.ini: cannot open"},
	    {"gpu.file=/nonexistent/g.ini", "--set: [gpu] file: /nonexistent/g.ini: cannot open"},
	    {"gpu.hbm_bytes=0", "[gpu] after overrides: hbm_bytes: must be greater than 0"},
	    {"model.layers=0", "[model] after overrides: layers"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cfg_t *c = new_cfg();
		set_ok(c, cases[i].set);
		mdl_hw_t hw;
		mdl_llm_t m;
		err_t e = {0};
		assert_int_equal(mdl_load_cfg(c, &hw, &m, NULL, &e), KS_EINPUT);
		assert_msg(&e, cases[i].msg);
		free_cfg(c);
	}
}

static void test_cfg_spec_file_relative_to_config_file(void **st)
{
	(void)st;
	char dir[] = "/tmp/kvsim_mdlcfg_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char spec[256], conf[256];
	snprintf(spec, sizeof spec, "%s/mine.ini", dir);
	snprintf(conf, sizeof conf, "%s/exp.ini", dir);
	tmp_write(spec, TOY_LLM);
	tmp_write(conf, "[model]\nfile = mine.ini\n[gpu]\nfile = missing.ini\n");
	cfg_t *c = new_cfg();
	err_t e = {0};
	assert_int_equal(cfg_load_file(c, conf, &e), 0);
	mdl_hw_t hw;
	mdl_llm_t m;
	/* the GPU file does not exist: the error names the config line */
	assert_int_equal(mdl_load_cfg(c, &hw, &m, NULL, &e), KS_EINPUT);
	char want[512];
	snprintf(want, sizeof want, "%s:4: [gpu] file: missing.ini: cannot open", conf);
	assert_msg(&e, want);
	set_ok(c, "gpu.file=");
	assert_int_equal(mdl_load_cfg(c, &hw, &m, NULL, &e), 0);
	assert_string_equal(m.name, "toy");
	assert_string_equal(hw.name, "H100-SXM");
	free_cfg(c);
	unlink(spec);
	unlink(conf);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kv_bytes_per_token_llama3_8b_is_128_kib),
	    cmocka_unit_test(test_kv_bytes_per_token_llama3_70b_is_320_kib),
	    cmocka_unit_test(test_kv_bytes_per_token_deepseek_v3_mla_latent_plus_rope),
	    cmocka_unit_test(test_kv_bytes_per_token_mixtral_and_qwen),
	    cmocka_unit_test(test_weights_llama3_70b_bf16_about_141_gb),
	    cmocka_unit_test(test_every_builtin_hw_spec_loads_and_is_sane),
	    cmocka_unit_test(test_every_builtin_llm_spec_loads_and_is_sane),
	    cmocka_unit_test(test_ini_unknown_key_names_file_line_key),
	    cmocka_unit_test(test_ini_missing_required_key_is_reported),
	    cmocka_unit_test(test_ini_bad_numbers_are_rejected),
	    cmocka_unit_test(test_ini_attention_and_cross_field_errors),
	    cmocka_unit_test(test_ini_long_line_and_outside_section),
	    cmocka_unit_test(test_ini_sizes_beyond_64_bits_are_refused),
	    cmocka_unit_test(test_user_spec_file_loads_and_missing_file_fails),
	    cmocka_unit_test(test_written_specs_parse_back_identical),
	    cmocka_unit_test(test_ini_name_starting_with_comment_char_is_refused),
	    cmocka_unit_test(test_iter_prefill_chunk_compute_bound_by_hand),
	    cmocka_unit_test(test_iter_decode_batch_memory_bound_by_hand),
	    cmocka_unit_test(test_iter_mixed_batch_tp2_with_allreduce_and_overhead_by_hand),
	    cmocka_unit_test(test_iter_moe_reads_expected_touched_experts),
	    cmocka_unit_test(test_iter_mla_absorbed_decode_and_naive_prefill_flops),
	    cmocka_unit_test(test_iter_fp8_weights_use_fp8_rate_for_matmuls_only),
	    cmocka_unit_test(test_iter_llama3_70b_h100_tp4_decode_by_hand),
	    cmocka_unit_test(test_sim_cost_adapter_matches_iter_time),
	    cmocka_unit_test(test_compute_init_rejects_bad_tp_and_params),
	    cmocka_unit_test(test_iter_time_grows_with_context_and_tokens),
	    cmocka_unit_test(test_cfg_defaults_give_h100_llama3_70b_and_default_params),
	    cmocka_unit_test(test_cfg_overrides_replace_spec_fields),
	    cmocka_unit_test(test_cfg_override_turns_model_into_mla),
	    cmocka_unit_test(test_cfg_bad_overrides_and_names_are_input_errors),
	    cmocka_unit_test(test_cfg_gpu_and_model_errors_name_their_section),
	    cmocka_unit_test(test_cfg_spec_file_relative_to_config_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

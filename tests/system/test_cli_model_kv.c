/* `kvsim model cost` and `kvsim config show` report a model's KV per GPU:
 * bytes per token of the paged layers and the fixed bytes a sequence holds
 * beyond them (sliding windows, state layers; models/mdl.h), and `kvsim
 * config doc` lists the layer keys of the spec table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static void expect_in(const char *out, const char *want)
{
	if (!strstr(out, want))
		fail_msg("output lacks '%s':\n%s", want, out);
}

/* Gemma-2-27B at tp 4: 4 of 16 KV heads per GPU, 2*4*128*2 = 2048 bytes per
 * token per layer; 23 global layers paged (47104), 23 local ones a 4096-token
 * window each (23 * 4096 * 2048 = 192937984). Jamba-1.5-Mini at tp 4: 4
 * attention layers of 2*2*128*2 = 1024 bytes (4096); 28 Mamba layers of
 * conv 2048 * 3 * 2 + SSM 2048 * 16 * 2 = 77824 bytes (2179072). */
static void test_model_cost_prints_paged_and_fixed_kv_per_gpu(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	struct {
		const char *model, *paged, *fixed;
	} c[] = {{"Gemma-2-27B", "kv_paged_bytes_per_token_gpu 47104\n",
	          "kv_fixed_bytes_per_seq_gpu 192937984\n"},
	         {"Jamba-1.5-Mini", "kv_paged_bytes_per_token_gpu 4096\n",
	          "kv_fixed_bytes_per_seq_gpu 2179072\n"},
	         {"Llama-3-70B", "kv_paged_bytes_per_token_gpu 81920\n", /* 327680 / 4 */
	          "kv_fixed_bytes_per_seq_gpu 0\n"}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		cli_result_t r = cli_run(k, tmp_dir, "model", "cost", "--model", c[i].model, "--tp",
		                         "4", "--decode", "8", "--context", "1000", NULL);
		assert_int_equal(r.status, 0);
		expect_in(r.out, c[i].paged);
		expect_in(r.out, c[i].fixed);
		cli_result_free(&r);
	}
}

static void test_config_show_closes_with_the_fixed_kv_of_a_layered_model(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	cli_result_t r =
	    cli_run(k, tmp_dir, "config", "show", "--set", "model.name=Qwen3-Next-80B-A3B", NULL);
	assert_int_equal(r.status, 0);
	/* tp 4 (the default experiment): 12 attention layers of one replicated
	 * KV head, 2*1*256*2 = 1024 bytes; 36 DeltaNet layers of conv 2048*3*2 +
	 * 8 value heads * 128 * 128 * 2 = 274432 bytes */
	expect_in(r.out, "#   KV per GPU at tp=4: 12288 bytes per token paged, 9879552 bytes fixed "
	                 "per sequence (layers: 12 full, 0 sliding with a 0-token window, 36 "
	                 "state;");
	cli_result_free(&r);
	/* a full-attention model adds no such line */
	r = cli_run(k, tmp_dir, "config", "show", NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "bytes fixed per sequence"));
	cli_result_free(&r);
	r = cli_run(k, tmp_dir, "config", "doc", NULL);
	assert_int_equal(r.status, 0);
	expect_in(r.out, "layer_kind");
	expect_in(r.out, "state_dtype_bytes");
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_model_cost_prints_paged_and_fixed_kv_per_gpu),
	    cmocka_unit_test(test_config_show_closes_with_the_fixed_kv_of_a_layered_model),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

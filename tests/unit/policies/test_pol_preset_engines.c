/* Presets and the engines' schedulers (policies/presets/): every preset
 * says which engine version its rules follow, and the vLLM- and
 * SGLang-based ones select that engine's scheduler mode and block size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"

static const char *value_of(const pol_preset_t *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->kv[i].key, key))
			return p->kv[i].value;
	return NULL;
}

static void test_every_preset_names_its_engine_rules(void **st)
{
	(void)st;
	size_t np;
	const pol_preset_t *all = pol_presets(&np);
	assert_true(np > 0);
	for (size_t i = 0; i < np; i++)
		if (!strstr(all[i].doc, "Engine rules: "))
			fail_msg("preset %s does not say which engine rules it follows",
			         all[i].name);
}

static void test_engine_presets_select_their_scheduler_and_block_size(void **st)
{
	(void)st;
	static const struct {
		const char *preset, *mode, *block;
	} want[] = {{"vllm", "vllm", "16"},
	            {"dynamo", "vllm", "16"},
	            {"llm-d", "vllm", "16"},
	            {"sglang", "sglang", "1"},
	            {"btb", "btb", "256"}};
	size_t np;
	const pol_preset_t *all = pol_presets(&np);
	for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
		const pol_preset_t *p = NULL;
		for (size_t i = 0; i < np; i++)
			if (!strcmp(all[i].name, want[w].preset))
				p = &all[i];
		assert_non_null(p);
		assert_non_null(value_of(p, "scheduler.mode"));
		assert_string_equal(value_of(p, "scheduler.mode"), want[w].mode);
		assert_string_equal(value_of(p, "kvcache.block_tokens"), want[w].block);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_preset_names_its_engine_rules),
	    cmocka_unit_test(test_engine_presets_select_their_scheduler_and_block_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* mdl_fixture — built-in hardware and model specs for the tests that need a
 * real GPU or LLM: the test fails with the loader's message when a name is
 * not built in. Header-only (static); for tests that include cmocka.h first. */
#ifndef KVSIM_TESTS_MDL_FIXTURE_H
#define KVSIM_TESTS_MDL_FIXTURE_H

#include <stdio.h>

#include "models/mdl.h"

/* Fills *hw with the built-in GPU hw_name and, when llm_name is set, *m with
 * the built-in model llm_name. */
__attribute__((unused)) static void mf_builtin(const char *hw_name, mdl_hw_t *hw,
                                               const char *llm_name, mdl_llm_t *m)
{
	err_t e = {0};
	int rc = mdl_hw_builtin(hw_name, hw, &e);
	if (!rc && llm_name)
		rc = mdl_llm_builtin(llm_name, m, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
}

#endif

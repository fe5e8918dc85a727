/* cfg_fixture — configs over the real schema (every module's keys) for the
 * tests of the modules that read them. Header-only (static); for tests that
 * include cmocka.h first. */
#ifndef KVSIM_TESTS_CFG_FIXTURE_H
#define KVSIM_TESTS_CFG_FIXTURE_H

#include <stddef.h>
#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/run/sim_schema.h"

/* A config over cfg_schema_default() with the n assignments of sets
 * ("section.key=value") applied and finalized; *s receives the schema. The
 * test fails with the config's message when one is refused. The caller
 * frees both (cfg_free, then cfg_schema_free). */
__attribute__((unused)) static cfg_t *cf_default_with(cfg_schema_t **s, const char *const *sets,
                                                      size_t n)
{
	*s = cfg_schema_default();
	assert_non_null(*s);
	cfg_t *c = cfg_new(*s);
	assert_non_null(c);
	err_t e = {0};
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = cfg_set(c, sets[i], &e);
	if (!rc)
		rc = cfg_finalize(c, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	return c;
}

#endif

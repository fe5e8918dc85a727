/* Helper shared by the whole-run tests: load a config and run it, failing
 * the test with the error message otherwise. Header-only (static). */
#ifndef KVSIM_SIM_FIXTURE_H
#define KVSIM_SIM_FIXTURE_H

#include <stdio.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim.h"

/* Runs CONFIG (NULL: the built-in default experiment) with n --set
 * overrides, on src's requests (NULL: the config's trace); the caller frees
 * the results with sim_results_free. */
__attribute__((unused)) static sim_results_t sf_run_source(const char *config,
                                                           const char *const *sets, int n,
                                                           sim_source_t *src)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(config, sets, n, &cfg, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	sim_results_t r;
	rc = src ? sim_run_source(cfg, src, &r, &e) : sim_run(cfg, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	cli_config_free(cfg);
	return r;
}

__attribute__((unused)) static sim_results_t sf_run(const char *config, const char *const *sets,
                                                    int n)
{
	return sf_run_source(config, sets, n, NULL);
}

#endif

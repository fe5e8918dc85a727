/* analysis/experiments/cluster_8192gpu_hour.ini, the production-scale point
 * of `make bench`: 8,192 GPUs (2,048 TP4 instances) under least_load, about
 * 10 M requests in its simulated hour, with prefix sharing that leaves the
 * replication policies work (a cache hit rate above 0, and speculative
 * copies under the oracle). Two simulated seconds stand for the hour here.
 * The binary is $KVSIM (or build/kvsim); the tests skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

#define EXP "analysis/experiments/cluster_8192gpu_hour.ini"

/* The number after "\n  label" and its padding in out (fails without one). */
static double row_number(const char *out, const char *label)
{
	char want[96];
	snprintf(want, sizeof want, "\n  %s  ", label);
	const char *l = strstr(out, want);
	if (!l)
		fail_msg("no row '%s' in:\n%s", label, out);
	return atof(l + strlen(want));
}

/* The value of key in `kvsim config show`'s output (a line "key = value"). */
static double key_number(const char *out, const char *key)
{
	char want[64];
	snprintf(want, sizeof want, "\n%s = ", key);
	const char *l = strstr(out, want);
	if (!l)
		fail_msg("no key '%s' in the resolved config", key);
	return atof(l + strlen(want));
}

/* The resolved config: 1,024 nodes x 8 GPUs at TP 4, rate x duration
 * about 10 M requests, half of the first turns with a shared prompt. */
static void test_config_is_8192_gpus_and_10_m_requests_with_sharing(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	cli_result_t r = cli_run(kvsim, tmp_dir, "config", "show", EXP, NULL);
	assert_int_equal(r.status, 0);
	assert_true(key_number(r.out, "nodes") * key_number(r.out, "gpus_per_node") == 8192);
	assert_true(key_number(r.out, "tp") == 4);
	double n = key_number(r.out, "rate") * key_number(r.out, "duration_s");
	assert_true(n > 9.5e6 && n < 10.5e6);
	assert_true(key_number(r.out, "prefix_shared_prob") > 0);
	assert_non_null(strstr(r.out, "\nsession_mode = synthetic\n"));
	cli_result_free(&r);
}

/* Two simulated seconds: 2,048 instances routed by least_load hit the cache
 * (shared prompts, session turns), and speculative with the oracle copies. */
static void test_short_runs_share_prefixes_and_replicate(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[128];
	snprintf(out, sizeof out, "%s/r", tmp_dir);
	cli_result_t r =
	    cli_run(kvsim, tmp_dir, "run", EXP, "-o", out, "--set", "trace.duration_s=2", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "(2048 instances)"));
	assert_non_null(strstr(r.out, "\n  policies    routing least_load, replication none"));
	assert_true(row_number(r.out, "cache hit rate, token-weighted (%)") > 0);
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "run", EXP, "-o", out, "--set", "trace.duration_s=2", "--set",
	            "policy.replication.name=speculative", "--set", "policy.predictor.name=oracle",
	            NULL);
	assert_int_equal(r.status, 0);
	assert_true(row_number(r.out, "speculative replicas created") > 0);
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_is_8192_gpus_and_10_m_requests_with_sharing),
	    cmocka_unit_test(test_short_runs_share_prefixes_and_replicate),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

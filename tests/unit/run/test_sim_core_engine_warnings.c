/* Configurations that match no real engine (sim/run/sim_core.c setup): a
 * run says so once, on the config's warning stream, and still runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/run/sim.h"
#include "tests/fixtures/test_main.h"
#include "sim/run/sim_schema.h"

/* One 100-token request at t = 0. */
static int one_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	int *left = ctx;
	if (!*left)
		return 0;
	(*left)--;
	*a = (sim_arrival_t){.id = 0, .arrival_ns = 0, .in_len = 100, .out_len = 4};
	return 1;
}

/* Runs the sets twice over one schema and returns what its warning stream
 * received (malloc'd). */
static char *warnings_of(const char **sets, size_t n)
{
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	FILE *w = tmpfile();
	assert_non_null(w);
	cfg_schema_set_warnings(s, w);
	for (int run = 0; run < 2; run++) {
		cfg_t *c = cfg_new(s);
		err_t e = {0};
		for (size_t i = 0; i < n; i++)
			assert_int_equal(cfg_set(c, sets[i], &e), 0);
		assert_int_equal(cfg_finalize(c, &e), 0);
		int left = 1;
		sim_source_t src = {one_next, &left, "one"};
		sim_results_t r;
		int rc = sim_run(c, &(sim_run_opts_t){.source = &src}, &r, &e);
		if (rc)
			fprintf(stderr, "%s\n", e.msg);
		assert_int_equal(rc, 0);
		sim_results_free(&r);
		cfg_free(c);
	}
	long len = ftell(w);
	char *out = calloc((size_t)len + 1, 1);
	assert_non_null(out);
	rewind(w);
	assert_int_equal(fread(out, 1, (size_t)len, w), (size_t)len);
	fclose(w);
	cfg_schema_free(s);
	return out;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_unchunked_vllm_is_warned_once_per_schema(void **st)
{
	(void)st;
	const char *sets[] = {"scheduler.chunked_prefill=false"};
	char *w = warnings_of(sets, 1);
	assert_int_equal(count(w, "kvsim: warning: --set: [scheduler] chunked_prefill: false under "
	                          "mode = vllm matches no real engine"),
	                 1);
	free(w);
}

static void test_study_residency_outside_btb_is_warned(void **st)
{
	(void)st;
	const char *sets[] = {"kvcache.resident_at=admission", "scheduler.mode=sglang"};
	char *w = warnings_of(sets, 2);
	assert_int_equal(count(w, "[kvcache] resident_at: admission under mode = sglang"), 1);
	free(w);
}

static void test_engine_configurations_are_not_warned(void **st)
{
	(void)st;
	const char *vllm[] = {"scheduler.mode=vllm"};
	char *w = warnings_of(vllm, 1);
	assert_string_equal(w, "");
	free(w);
	/* SGLang runs without chunking (chunked_prefill_size -1) */
	const char *sglang[] = {"scheduler.mode=sglang", "scheduler.chunked_prefill=false"};
	w = warnings_of(sglang, 2);
	assert_string_equal(w, "");
	free(w);
}

TEST_MAIN(cmocka_unit_test(test_unchunked_vllm_is_warned_once_per_schema),
          cmocka_unit_test(test_study_residency_outside_btb_is_warned),
          cmocka_unit_test(test_engine_configurations_are_not_warned))

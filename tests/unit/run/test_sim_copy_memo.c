/* The copy memo (sim/run/sim_copy_memo.c): a refused copy's retry answered
 * from the block that barred it gives the same run as the full attempt.
 * The `full` policy retries every refused copy each 100 ms, so its runs
 * answer thousands of retries from the memo; each is run with the memo off,
 * on, and in check mode (every answer also attempted and compared; the run
 * fails on a difference), under each rule for copying from a source that is
 * still computing, and every summary metric must be the same. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

static sim_results_t run_memo(const char *mode, const char *rule_a, const char *rule_b)
{
	const char *sets[] = {"trace.duration_s=20", "policy.replication.name=full",
	                      "trace.rate_scale=2", rule_a, rule_b};
	setenv("KVSIM_COPY_MEMO", mode, 1);
	sim_results_t r = sf_run(NULL, sets, 5);
	unsetenv("KVSIM_COPY_MEMO");
	return r;
}

static double metric(const sim_results_t *r, const char *name)
{
	for (size_t i = 0; i < r->n_metric; i++)
		if (!strcmp(r->metric[i].name, name))
			return r->metric[i].value;
	fail_msg("no metric %s", name);
	return NAN;
}

/* Every summary metric of a and b equal (NaN equal to NaN). */
static void assert_same_metrics(const sim_results_t *a, const sim_results_t *b)
{
	assert_int_equal(a->n_metric, b->n_metric);
	assert_int_equal(a->n_req, b->n_req);
	assert_int_equal(a->n_xfer, b->n_xfer);
	for (size_t i = 0; i < a->n_metric; i++) {
		double x = a->metric[i].value, y = b->metric[i].value;
		assert_string_equal(a->metric[i].name, b->metric[i].name);
		if (!(x == y || (isnan(x) && isnan(y))))
			fail_msg("%s: %.17g with the memo off, %.17g with it", a->metric[i].name, x, y);
	}
}

/* Retries the check verified, from its last line on stderr (captured). */
static unsigned long long checked(const char *rule_a, const char *rule_b)
{
	char path[] = "/tmp/kvsim_memo_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	FILE *saved = fdopen(dup(fileno(stderr)), "w");
	assert_non_null(freopen(path, "w", stderr));
	sim_results_t r = run_memo("check", rule_a, rule_b);
	fflush(stderr);
	dup2(fileno(saved), fileno(stderr));
	fclose(saved);
	sim_results_free(&r);
	FILE *f = fopen(path, "r");
	char line[256];
	unsigned long long n = 0;
	while (f && fgets(line, sizeof line, f))
		sscanf(line, "kvsim: copy memo check: %llu", &n);
	if (f)
		fclose(f);
	close(fd);
	unlink(path);
	return n;
}

static void same_run(const char *rule_a, const char *rule_b)
{
	sim_results_t off = run_memo("off", rule_a, rule_b), on = run_memo("on", rule_a, rule_b);
	assert_same_metrics(&off, &on);
	/* the memo had work: refusals for a source that cannot give the KV */
	assert_true(metric(&on, "spec.refused_source") > 100);
	sim_results_free(&off);
	sim_results_free(&on);
	assert_true(checked(rule_a, rule_b) > 100);
}

static void test_deferred_copies(void **st)
{
	(void)st;
	same_run("kvcache.copy_deferred=true", "kvcache.copy_from=computed");
}

static void test_no_deferred_copies(void **st)
{
	(void)st;
	same_run("kvcache.copy_deferred=false", "kvcache.copy_from=computed");
}

static void test_copies_from_uncomputed_kv(void **st)
{
	(void)st;
	same_run("kvcache.copy_deferred=false", "kvcache.copy_from=uncomputed");
}

TEST_MAIN(cmocka_unit_test(test_deferred_copies), cmocka_unit_test(test_no_deferred_copies),
          cmocka_unit_test(test_copies_from_uncomputed_kv))

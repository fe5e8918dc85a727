/* `kvsim run` and `kvsim sweep` with the parsed-trace cache: a run writes
 * the trace's entry into $KVSIM_CACHE_DIR and the next one is served from
 * it with the same results; --no-trace-cache neither writes nor uses one.
 * The binary is $KVSIM (or build/kvsim); the tests skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static char trace[128], cache[128], set[160];

/* Entries (not the digest file) in the cache directory. */
static int entries(void)
{
	return tmp_count(cache, "trace-", "trace-sha256", NULL, 0);
}

static void make_trace(const char *kvsim)
{
	snprintf(trace, sizeof trace, "%s/t.tsv", tmp_dir);
	snprintf(cache, sizeof cache, "%s/cache", tmp_dir);
	snprintf(set, sizeof set, "trace.path=%s", trace);
	setenv("KVSIM_CACHE_DIR", cache, 1);
	if (access(trace, F_OK) == 0)
		return;
	cli_result_t r = cli_run(kvsim, tmp_dir, "trace", "gen", "poisson", "rate=20",
				 "duration_s=20", "-o", trace, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	/* an old file: a fresh one is never cached */
	struct timespec t[2] = {{1600000000, 0}, {1600000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, trace, t, 0), 0);
}

/* The summary table without its wall-clock lines. */
static char *results(const char *out)
{
	char *s = strdup(out), *keep = calloc(1, strlen(out) + 1), *w = keep;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
		if (!strstr(line, "wall") && !strstr(line, "/s)") && !strstr(line, "ETA"))
			w += sprintf(w, "%s\n", line);
	free(s);
	return keep;
}

static void test_run_writes_then_uses_the_entry_unless_told_not_to(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	make_trace(kvsim);
	char rm[200];
	snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
	assert_int_equal(system(rm), 0);
	cli_result_t a = cli_run(kvsim, tmp_dir, "run", "--no-trace-cache", "--set", set, NULL);
	assert_int_equal(a.status, 0);
	assert_int_equal(entries(), 0);
	cli_result_t b = cli_run(kvsim, tmp_dir, "run", "--set", set, NULL);
	assert_int_equal(b.status, 0);
	assert_int_equal(entries(), 1);
	cli_result_t c = cli_run(kvsim, tmp_dir, "run", "--set", set, NULL);
	assert_int_equal(c.status, 0);
	char *ra = results(a.out), *rb = results(b.out), *rc = results(c.out);
	assert_true(strlen(ra) > 100);
	assert_string_equal(ra, rb);
	assert_string_equal(ra, rc);
	free(ra);
	free(rb);
	free(rc);
	cli_result_free(&a);
	cli_result_free(&b);
	cli_result_free(&c);
}

static void test_sweep_flag_reaches_its_points(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	make_trace(kvsim);
	char rm[200], out[160];
	snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
	assert_int_equal(system(rm), 0);
	snprintf(out, sizeof out, "%s/sweep1", tmp_dir);
	cli_result_t r = cli_run(kvsim, tmp_dir, "sweep", "--no-trace-cache", "-o", out, "--set",
				 set, "--grid", "cluster.nodes=1,2", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(entries(), 0);
	cli_result_free(&r);
	snprintf(out, sizeof out, "%s/sweep2", tmp_dir);
	r = cli_run(kvsim, tmp_dir, "sweep", "-o", out, "--set", set, "--grid",
		    "cluster.nodes=1,2", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(entries(), 1); /* both points, one trace, one entry */
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_run_writes_then_uses_the_entry_unless_told_not_to),
	    cmocka_unit_test(test_sweep_flag_reaches_its_points),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

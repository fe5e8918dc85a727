/* Tests for `kvsim runs` (sim/cli/cli_runs.c): listing, filters, sorting,
 * column choice, CSV, compare, and usage errors. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/cli/cli.h"
#include "sim/out/out_catalog.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], dir[300], outf[300];

static void add(out_catalog_t *c, const char *id, const char *rate, const char *pol,
		double p99, const char *cfg)
{
	out_param_t p[] = {{"fake.rate", rate}, {"policy.replication.name", pol}};
	out_run_info_t ri = {id, "d1g", 1, p, 2, "runs/x.h5", cfg, NULL};
	res_metric_t m[] = {{"ttft_p99_ns", "ns", p99}, {"throughput_rps", "req/s", 2.5}};
	err_t e = {0};
	assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
	assert_int_equal(out_catalog_done(c, id, m, 2, 0.25, &e), 0);
}

/* A done row whose ledger names revision rev. */
static void add_rev(out_catalog_t *c, const char *id, const char *rev)
{
	out_param_t p[] = {{"fake.rate", "0.25"}, {"policy.replication.name", "full"}};
	out_run_info_t ri = {id, "d1g", 1, p, 2, "runs/y.h5", "[fake]\nrate = 0.25\n", NULL};
	res_metric_t m[] = {{"ttft_p99_ns", "ns", 1e6}};
	out_run_file_t f = {4096, "", rev};
	memset(f.sha256, 'f', 64);
	err_t e = {0};
	assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
	assert_int_equal(out_catalog_done_file(c, id, m, 1, 0.25, &f, &e), 0);
}

static int setup(void **st)
{
	(void)st;
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_runs_XXXXXX"))
		return -1;
	snprintf(dir, sizeof dir, "%s/res", tmpdir);
	snprintf(outf, sizeof outf, "%s/out.txt", tmpdir);
	out_catalog_t *c;
	err_t e = {0};
	if (out_catalog_open(dir, 0, &c, &e))
		return -1;
	add(c, "aaaa1111", "1", "none", 5e6, "[fake]\n# doc\nrate = 1\n[policy.replication]\nname = none\n");
	add(c, "bbbb2222", "4", "speculative", 2e6,
	    "[fake]\n# doc\nrate = 4\n[policy.replication]\nname = speculative\n");
	add(c, "bbbb3333", "2", "none", 9e6, "[fake]\nrate = 2\n");
	add_rev(c, "cccc4444", "0123456789ab");
	add_rev(c, "cccc5555", "0123456789ab-dirty.1234abcd");
	out_catalog_close(c);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(tmpdir);
}

/* Runs `kvsim runs ARGS` with stdout captured; returns its exit status. */
static int runs(char **text, int argc, ...)
{
	char *argv[16] = {"runs"};
	va_list ap;
	va_start(ap, argc);
	for (int i = 1; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	fflush(stdout);
	int saved = dup(1), fd = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 1);
	close(fd);
	int rc = out_runs_main(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	FILE *f = fopen(outf, "r");
	assert_non_null(f);
	*text = calloc(1, 1 << 16);
	size_t n = fread(*text, 1, (1 << 16) - 1, f);
	(*text)[n] = '\0';
	fclose(f);
	return rc;
}

/* Every string of want appears in text (the first missing one is named). */
static void expect_all(const char *text, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strstr(text, want[i]))
			fail_msg("\"%s\" missing from:\n%s", want[i], text);
}

static void test_lists_every_run_with_params_and_metrics(void **st)
{
	(void)st;
	char *t;
	assert_int_equal(runs(&t, 2, dir), 0);
	const char *want[] = {"policy.replication.name", "ttft_p99_ns", "speculative",
	                      "(5 runs)", "git_rev", "0123456789ab-dirty.1234abcd"};
	expect_all(t, want, sizeof want / sizeof want[0]);
	free(t);
}

static void test_where_sort_and_columns_shape_the_csv(void **st)
{
	(void)st;
	char *t;
	assert_int_equal(runs(&t, 9, dir, "--where", "fake.rate >= 2", "--sort", "-ttft_p99_ns",
			      "--columns", "id,fake.rate,ttft_p99_ns", "--csv"),
			 0);
	assert_string_equal(t, "id,fake.rate,ttft_p99_ns\n"
			       "bbbb3333,2,9000000\n"
			       "bbbb2222,4,2000000\n");
	free(t);
}

/* The revision is a column like any other: shown, filtered, sorted. */
static void test_revision_columns_show_and_filter(void **st)
{
	(void)st;
	char *t;
	assert_int_equal(runs(&t, 9, dir, "--where", "git_dirty = 1", "--columns",
			      "id,git_rev,git_dirty,stale,h5_size", "--csv", "--sort", "-id"),
			 0);
	assert_string_equal(t, "id,git_rev,git_dirty,stale,h5_size\n"
			       "cccc5555,0123456789ab-dirty.1234abcd,1,0,4096\n");
	free(t);
	assert_int_equal(runs(&t, 7, dir, "--where", "git_rev LIKE '0123456789ab%'", "--columns",
			      "id", "--csv"),
			 0);
	assert_string_equal(t, "id\ncccc4444\ncccc5555\n");
	free(t);
	/* rows recorded without a file have no revision */
	assert_int_equal(runs(&t, 7, dir, "--where", "git_rev IS NULL", "--columns", "id",
			      "--csv"),
			 0);
	assert_string_equal(t, "id\naaaa1111\nbbbb2222\nbbbb3333\n");
	free(t);
}

static void test_compare_shows_params_metric_deltas_and_config_diff(void **st)
{
	(void)st;
	char *t;
	assert_int_equal(runs(&t, 5, "compare", "aaaa", "bbbb2", dir), 0);
	const char *want[] = {"parameters",
	                      "speculative",
	                      "-3e+06", /* p99: B - A */
	                      "0.4000", /* p99: B / A */
	                      "fake.rate",
	                      "policy.replication.name"};
	expect_all(t, want, sizeof want / sizeof want[0]);
	assert_null(strstr(t, "# doc"));
	free(t);
}

static void test_bad_input_is_a_usage_error(void **st)
{
	(void)st;
	char *t;
	assert_int_equal(runs(&t, 5, "compare", "bbbb", "aaaa", dir), 2); /* ambiguous */
	free(t);
	assert_int_equal(runs(&t, 4, dir, "--sort", "nosuch"), 2);
	free(t);
	assert_int_equal(runs(&t, 4, dir, "--where", "(("), 2);
	free(t);
	/* SQL after a ';' is refused (exit 2, nothing listed), not dropped */
	assert_int_equal(runs(&t, 4, dir, "--where", "fake.rate >= 2; SELECT 1"), 2);
	assert_string_equal(t, "");
	free(t);
	char missing[400];
	snprintf(missing, sizeof missing, "%s/none", tmpdir);
	assert_int_equal(runs(&t, 2, missing), 2);
	free(t);
	assert_int_equal(runs(&t, 3, dir, "--bogus"), 2);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_every_run_with_params_and_metrics),
		cmocka_unit_test(test_where_sort_and_columns_shape_the_csv),
		cmocka_unit_test(test_revision_columns_show_and_filter),
		cmocka_unit_test(test_compare_shows_params_metric_deltas_and_config_diff),
		cmocka_unit_test(test_bad_input_is_a_usage_error),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

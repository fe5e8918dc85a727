/* Tests for analysis/plot_ttft_cdf.py and analysis/plot_metric.py on a fake
 * sweep (skipped when /usr/bin/python3 lacks h5py, pandas or matplotlib). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/cfg.h"
#include "sim/out_sweep.h"
#include "tests/out_fake.h"

static char tmpdir[256], results[300];

static int setup(void **st)
{
	(void)st;
	if (access("/usr/bin/python3", X_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import h5py, pandas, matplotlib' >/dev/null 2>&1") != 0)
		return 0; /* tests skip */
	snprintf(tmpdir, sizeof tmpdir, "/tmp/kvsim_plot_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(results, sizeof results, "%s/results", tmpdir);
	cfg_schema_t *s = fake_schema();
	cfg_t *base = cfg_new(s);
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	out_sweep_stats_t ss;
	out_sweep_opts_t o = {.dir = results, .jobs = 2, .progress = 0,
			      .seed_key = "experiment.seed", .run = fake_run, .h5 = {1, 0}};
	int rc = cfg_finalize(base, &e) || out_grid_add(g, "fake.policy=a,b", 0, &e) ||
		 out_grid_add(g, "fake.rate=1:4:1", 0, &e) || out_grid_set_seeds(g, 2, &e) ||
		 out_sweep_run(g, base, &o, &ss, &e);
	out_grid_free(g);
	cfg_free(base);
	cfg_schema_free(s);
	return rc ? -1 : 0;
}

static int teardown(void **st)
{
	(void)st;
	char cmd[300];
	if (!*tmpdir)
		return 0;
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void assert_png(const char *path)
{
	unsigned char m[8];
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(m, 1, 8, f), 8);
	fclose(f);
	assert_memory_equal(m, "\x89PNG\r\n\x1a\n", 8);
}

static void test_ttft_cdf_of_files_and_catalog_runs(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char cmd[1200], png[400];
	/* files and catalog selections in one plot (one interpreter start) */
	snprintf(png, sizeof png, "%s/cdf.png", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 analysis/plot_ttft_cdf.py $(ls %s/runs/*.h5 | head -2) "
		 "--catalog %s --where 'fake.rate = 2' --label fake.policy -o %s >/dev/null",
		 results, results, png);
	assert_int_equal(system(cmd), 0);
	assert_png(png);
}

static void test_metric_against_parameter_with_groups(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char cmd[1200], png[400];
	snprintf(png, sizeof png, "%s/metric.png", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 analysis/plot_metric.py %s --x fake.rate --y ttft_p99_ns "
		 "--group fake.policy --scale 1e-6 -o %s >/dev/null",
		 results, png);
	assert_int_equal(system(cmd), 0);
	assert_png(png);
	/* an unknown metric is an error naming what exists */
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 analysis/plot_metric.py %s --x fake.rate --y nope -o %s "
		 "2>/dev/null",
		 results, png);
	assert_int_not_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ttft_cdf_of_files_and_catalog_runs),
		cmocka_unit_test(test_metric_against_parameter_with_groups),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* Tests for analysis/plot_ttft_cdf.py and analysis/plot_metric.py on a fake
 * sweep (skipped when /usr/bin/python3 lacks h5py, pandas or matplotlib). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/cfg.h"
#include "sim/out/out_catalog.h"
#include "sim/out/out_sweep.h"
#include "tests/fixtures/out_fake.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], results[300];

static int setup(void **st)
{
	(void)st;
	if (access("/usr/bin/python3", X_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import h5py, pandas, matplotlib' >/dev/null 2>&1") != 0)
		return 0; /* tests skip */
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_plot_XXXXXX"))
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
	if (!*tmpdir)
		return 0;
	return tmp_dir_remove(tmpdir);
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

/* Runs `python3 analysis/SCRIPT ARGS -o tmpdir/png` (ARGS from fmt), which
 * must succeed and write a PNG there; png gets the path (400 bytes). */
static void plot_ok(char *png, const char *name, const char *fmt, ...)
{
	char args[800], cmd[1300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(png, 400, "%s/%s", tmpdir, name);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 analysis/%s -o %s >/dev/null", args, png);
	assert_int_equal(system(cmd), 0);
	assert_png(png);
}

static void test_ttft_cdf_of_files_and_catalog_runs(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char png[400];
	/* files and catalog selections in one plot (one interpreter start) */
	plot_ok(png, "cdf.png",
	        "plot_ttft_cdf.py $(ls %s/runs/*.h5 | head -2) --catalog %s "
	        "--where 'fake.rate = 2' --label fake.policy",
	        results, results);
}

static void test_metric_against_parameter_with_groups(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char cmd[1200], png[400];
	plot_ok(png, "metric.png",
	        "plot_metric.py %s --x fake.rate --y ttft_p99_ns --group fake.policy --scale 1e-6",
	        results);
	/* an unknown metric is an error naming what exists */
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 analysis/plot_metric.py %s --x fake.rate --y nope -o %s "
		 "2>/dev/null",
		 results, png);
	assert_int_not_equal(system(cmd), 0);
}

/* Runs the shell command made from fmt in the repository root with its
 * stdout and stderr into out (n bytes, NUL-terminated); its exit status. */
static int sh_out(char *out, size_t n, const char *fmt, ...)
{
	char cmd[1600], path[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s/sh.out", tmpdir);
	int rc = tmp_sh("%s > %s 2>&1", cmd, path);
	FILE *f = fopen(path, "r");
	size_t len = f ? fread(out, 1, n - 1, f) : 0;
	out[len] = '\0';
	if (f)
		fclose(f);
	return rc;
}

/* Every string of want is in text (the first missing one is named). */
static void expect_in(const char *text, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strstr(text, want[i]))
			fail_msg("'%s' missing from:\n%s", want[i], text);
}

/* The ttft_p99_ns of the fake sweep's runs at policy pol and rate, one per
 * seed, into v (at most 4); how many. */
static size_t p99s(const char *pol, int rate, double *v)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	char where[80];
	snprintf(where, sizeof where, "fake.policy = '%s' AND fake.rate = %d", pol, rate);
	if (out_catalog_open(results, 1, &c, &e) ||
	    out_catalog_select(c, "ttft_p99_ns", where, NULL, &t, &e))
		fail_msg("%s", e.msg);
	size_t n = t.nrows < 4 ? t.nrows : 4;
	for (size_t i = 0; i < n; i++)
		v[i] = strtod(t.cells[i], NULL);
	out_table_free(&t);
	out_catalog_close(c);
	return n;
}

/* --group takes several columns (one line per combination), and each
 * point is the mean over its seeds with a Student t 95% CI: for two seeds
 * t(0.975; 1) = 12.7062 x sd / sqrt(2), not the min..max span. */
static void test_metric_lines_take_several_group_columns_and_draw_t_cis(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char png[400], data[400], out[8192];
	snprintf(data, sizeof data, "%s/lines.csv", tmpdir);
	plot_ok(png, "groups.png",
	        "plot_metric.py %s --x fake.rate --y ttft_p99_ns --group fake.policy,fake.n "
	        "--data %s",
	        results, data);
	assert_int_equal(sh_out(out, sizeof out, "grep -c 'fake.policy=a, fake.n=50' %s", data),
			 0);
	assert_string_equal(out, "4\n");
	double v[4];
	assert_int_equal(p99s("a", 3, v), 2);
	double m = (v[0] + v[1]) / 2, ci = 12.7062047 * fabs(v[0] - v[1]) / sqrt(2) / sqrt(2);
	assert_int_equal(sh_out(out, sizeof out, "grep '^\"fake.policy=a, fake.n=50\",3,' %s",
				data),
			 0);
	double got_m, got_ci;
	int n;
	const char *after = strstr(out, "\",3,"); /* line,x,n,mean,ci,lo,hi */
	assert_non_null(after);
	assert_int_equal(sscanf(after + 4, "%d,%lf,%lf", &n, &got_m, &got_ci), 3);
	assert_int_equal(n, 2);
	assert_true(fabs(got_m - m) <= 1e-9 * m);
	assert_true(fabs(got_ci - ci) <= 1e-4 * ci);
}

/* Runs of two policies at one x are two configurations: without --group
 * naming the policy they still make two lines, and a note says why. */
static void test_metric_never_pools_two_configurations(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char data[400], out[8192];
	snprintf(data, sizeof data, "%s/pool.csv", tmpdir);
	assert_int_equal(sh_out(out, sizeof out,
				"/usr/bin/python3 analysis/plot_metric.py %s --x fake.rate --y "
				"ttft_p99_ns --data %s -o %s/pool.png",
				results, data, tmpdir),
			 0);
	assert_non_null(strstr(out, "also differ in fake.policy: not pooled"));
	assert_int_equal(sh_out(out, sizeof out, "cut -d, -f1 %s | sort -u | tr '\\n' ';'", data),
			 0);
	assert_string_equal(out, "fake.policy=a;fake.policy=b;line;");
}

/* The table: mean ± CI without exponents, a metric that is the same in
 * every run said once under the table (not "same in every seed" per
 * row), and the rate the runs also differ in splits the rows. */
static void test_table_gives_cis_and_says_a_constant_metric_once(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char out[16384];
	assert_int_equal(sh_out(out, sizeof out,
				"/usr/bin/python3 analysis/policy_table.py %s --by fake.policy "
				"--metrics ttft_p99_ns,requests,throughput_rps",
				results),
			 0);
	const char *want[] = {"differ in fake.rate: a row per value", "fake.policy  fake.rate  seeds",
			      " ± ", "the same in every run: requests 50",
			      "cells: mean over the seeds ± half-width of its 95% CI (Student t)"};
	expect_in(out, want, sizeof want / sizeof want[0]);
	assert_null(strstr(out, "(same in every seed)"));
	assert_null(strstr(out, "e+"));
}

/* The CDF's p99 pools the runs' requests, and says so (the table's is the
 * mean of per-run p99s). */
static void test_cdf_says_its_p99_pools_the_runs(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char out[4096];
	assert_int_equal(sh_out(out, sizeof out,
				"/usr/bin/python3 analysis/plot_ttft_cdf.py --catalog %s --where "
				"'fake.rate = 2' --label fake.policy -o %s/pooled.png",
				results, tmpdir),
			 0);
	assert_non_null(strstr(out, "fake.policy=a: p99 of 2 runs' requests pooled: "));
}

/* kvsim_results.load: every config key is a column (fake.n was never
 * swept) and a --where may name it. */
static void test_loader_has_every_config_key(void **st)
{
	(void)st;
	if (!*tmpdir)
		skip();
	char out[4096];
	int rc = sh_out(out, sizeof out,
			"/usr/bin/python3 -c \"import sys; sys.path.insert(0, 'analysis'); "
			"import kvsim_results as kr; d = kr.load('%s', where='fake.n = 50 AND "
			"fake.rate = 2'); print(len(d), 'fake.n' in d.attrs['keys'], "
			"sorted(set(d['fake.n'])), d.attrs['params'])\"",
			results);
	if (rc)
		fail_msg("%s", out);
	assert_string_equal(out, "4 True [50] ['fake.policy', 'fake.rate']\n");
}

/* kvsim plot: runs a script under a Python that has its modules; when none
 * has them, says which each lacks and how to install them. */
static void test_kvsim_plot_finds_a_python_or_names_the_missing_modules(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!*tmpdir || !k || !*k)
		skip();
	char out[8192], fake[400];
	assert_int_equal(sh_out(out, sizeof out,
				"%s plot table %s --by fake.policy,fake.rate --metrics ttft_p99_ns", k,
				results),
			 0);
	assert_non_null(strstr(out, " ± "));
	/* an interpreter without h5py (as a python3 earlier on PATH may be) */
	snprintf(fake, sizeof fake, "%s/nopy", tmpdir);
	tmp_write(fake, "#!/bin/sh\necho 'no module h5py'\nexit 1\n");
	assert_int_equal(chmod(fake, 0755), 0);
	assert_int_equal(sh_out(out, sizeof out, "KVSIM_PYTHON=%s %s plot table %s --by fake.policy "
					       "--metrics ttft_p99_ns",
				fake, k, results),
			 1);
	const char *want[] = {"kvsim plot: no Python here has the modules", fake, ": no module h5py",
			      "apt-get install python3-numpy python3-pandas python3-h5py"};
	expect_in(out, want, sizeof want / sizeof want[0]);
	/* the scripts themselves name what is missing, not a bare traceback */
	assert_int_equal(sh_out(out, sizeof out,
				"cd analysis && /usr/bin/python3 -S -c \"import sys; "
				"sys.argv = ['x.py']; import kvsim_results\""),
			 1);
	assert_non_null(strstr(out, "has no module 'numpy'"));
	assert_non_null(strstr(out, "kvsim plot"));
}

/* Replaces every `from` in s (at most cap bytes) by `to`. */
static void replace_all(char *s, size_t cap, const char *from, const char *to)
{
	char out[4096], *o = out;
	size_t lf = strlen(from), lt = strlen(to);
	for (const char *p = s; *p;) {
		if (!strncmp(p, from, lf) && (size_t)(o - out) + lt < sizeof out - 1) {
			memcpy(o, to, lt);
			o += lt;
			p += lf;
		} else if ((size_t)(o - out) < sizeof out - 1) {
			*o++ = *p++;
		} else {
			break;
		}
	}
	*o = '\0';
	size_t l = (size_t)(o - out) < cap ? (size_t)(o - out) : cap - 1;
	memcpy(s, out, l);
	s[l] = '\0';
}

/* Runs, in dir, every example line of `help` (a command whose output holds
 * lines "  PROG ..." for each prog), with PROG made runnable (prefix[i]),
 * the placeholders filled in; each must exit 0, and a `kvsim runs` example
 * must list runs. Returns how many ran. */
static int run_examples(const char *dir, const char *help, const char *const *prog,
                        const char *const *prefix, const char *ida, const char *idb)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "cd %s && %s", dir, help);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[2048], lines[16][2048];
	int n = 0;
	while (fgets(line, sizeof line, p) && n < 16)
		for (int k = 0; prog[k]; k++)
			if (!strncmp(line, "  ", 2) && !strncmp(line + 2, prog[k], strlen(prog[k]))) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(lines[n], sizeof lines[n], "%s%s", prefix[k],
				         line + 2 + strlen(prog[k]));
				n++;
			}
	assert_int_equal(pclose(p), 0);
	for (int i = 0; i < n; i++) {
		replace_all(lines[i], sizeof lines[i], "ID_A", ida);
		replace_all(lines[i], sizeof lines[i], "ID_B", idb);
		replace_all(lines[i], sizeof lines[i], "RUN.h5 [RUN.h5 ...]", "results/runs/*.h5");
		if (snprintf(cmd, sizeof cmd, "cd %s && %s > ex.out 2>&1", dir, lines[i]) >=
		    (int)sizeof cmd)
			fail_msg("example too long: %s", lines[i]);
		int rc = system(cmd);
		snprintf(cmd, sizeof cmd, "%s/ex.out", dir);
		FILE *f = fopen(cmd, "r");
		char out[8192] = "";
		size_t len = f ? fread(out, 1, sizeof out - 1, f) : 0;
		out[len] = '\0';
		if (f)
			fclose(f);
		if (rc || strstr(out, "(0 runs)"))
			fail_msg("example '%s' failed (%d):\n%s", lines[i], rc, out);
	}
	return n;
}

/* The examples in `kvsim runs --help` and in the plotting scripts' help
 * use columns that exist: a sweep made as the help says, then every other
 * example on it. */
static void test_documented_examples_run(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!*tmpdir || !k || !*k)
		skip();
	char dir[320], cwd[1024], kv[1100], pm[1200], pc[1200];
	snprintf(dir, sizeof dir, "%s/examples", tmpdir);
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(kv, sizeof kv, "%s%s%s ", k[0] == '/' ? "" : cwd, k[0] == '/' ? "" : "/", k);
	const char *kprog[] = {"kvsim ", NULL}, *kpre[] = {kv};
	char help[4096];
	snprintf(help, sizeof help, "%s runs --help | grep '^  kvsim sweep '", kv);
	assert_int_equal(run_examples(dir, help, kprog, kpre, "", ""), 1);
	char ids[2][80] = {"", ""}, cmd[4096];
	snprintf(cmd, sizeof cmd, "cd %s && %s runs results --csv --columns id", dir, kv);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[256];
	for (int i = -1; i < 2 && fgets(line, sizeof line, p); i++)
		if (i >= 0)
			snprintf(ids[i], sizeof ids[i], "%.12s", line);
	pclose(p);
	assert_true(ids[1][0]);
	snprintf(help, sizeof help, "%s runs --help | grep -v '^  kvsim sweep '", kv);
	assert_true(run_examples(dir, help, kprog, kpre, ids[0], ids[1]) >= 4);
	snprintf(pm, sizeof pm, "/usr/bin/python3 %s/analysis/plot_metric.py", cwd);
	snprintf(pc, sizeof pc, "/usr/bin/python3 %s/analysis/plot_ttft_cdf.py", cwd);
	const char *pprog[] = {"plot_metric.py", "plot_ttft_cdf.py", NULL}, *ppre[] = {pm, pc};
	snprintf(help, sizeof help, "%s --help; %s --help", pm, pc);
	assert_int_equal(run_examples(dir, help, pprog, ppre, "", ""), 3);
	char png[400];
	snprintf(png, sizeof png, "%s/p99.png", dir);
	assert_png(png);
	snprintf(png, sizeof png, "%s/ttft.png", dir);
	assert_png(png);
}

TEST_MAIN_FIXTURE(setup, teardown,
                  cmocka_unit_test(test_ttft_cdf_of_files_and_catalog_runs),
                  cmocka_unit_test(test_metric_against_parameter_with_groups),
                  cmocka_unit_test(test_metric_lines_take_several_group_columns_and_draw_t_cis),
                  cmocka_unit_test(test_metric_never_pools_two_configurations),
                  cmocka_unit_test(test_table_gives_cis_and_says_a_constant_metric_once),
                  cmocka_unit_test(test_cdf_says_its_p99_pools_the_runs),
                  cmocka_unit_test(test_loader_has_every_config_key),
                  cmocka_unit_test(test_kvsim_plot_finds_a_python_or_names_the_missing_modules),
                  cmocka_unit_test(test_documented_examples_run))

/* [experiment] base (sim/run/cli_common.c): a config file that starts from the
 * default experiment, or from another experiment file, changes it exactly as
 * the same keys given by --set would; a file without a base keeps its
 * meaning, and one that then names no workload is told about base. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/run/cli_common.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"
#include "tests/fixtures/test_main.h"

static char dir[] = "/tmp/test_experiment_base.XXXXXX";

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_dir_remove(dir);
}

/* Writes text to dir/name; its path goes to path (256 bytes). */
static const char *ini(char *path, const char *name, const char *text)
{
	snprintf(path, 256, "%s/%s", dir, name);
	tmp_write(path, text);
	return path;
}

/* The resolved text of path (NULL: none) with n --set lines. */
static char *resolved(const char *path, const char *const *sets, int n)
{
	cfg_t *c = NULL;
	err_t e = {0};
	if (cli_load_config_ex(path, sets, n, CLI_DEFAULT_EXPERIMENT | CLI_NO_WARNINGS, NULL, &c,
	                       &e))
		fail_msg("%s", e.msg);
	char *t = cfg_text(c);
	cli_config_free(c);
	return t;
}

static void expect_same(char *a, char *b)
{
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* The same keys in a file over base = default and by --set give the same
 * resolved config: a seed, a preset (which still ranks above the default
 * experiment's values and below the file's own), a trace file (which
 * replaces the default experiment's generated traffic). */
static void test_base_default_changes_it_as_set_would(void **state)
{
	(void)state;
	char p[256];
	expect_same(resolved(ini(p, "seed.ini", "[experiment]\nbase = default\nseed = 2\n"), NULL, 0),
	            resolved(NULL, (const char *const[]){"experiment.seed=2"}, 1));
	expect_same(resolved(ini(p, "preset.ini",
	                         "[experiment]\nbase = default\n[policy]\npreset = vllm\n"
	                         "[cluster]\ntp = 8\n"),
	                     NULL, 0),
	            resolved(NULL, (const char *const[]){"policy.preset=vllm", "cluster.tp=8"}, 2));
	expect_same(resolved(ini(p, "trace.ini",
	                         "[experiment]\nbase = default\n[trace]\npath = t.jsonl\n"),
	                     NULL, 0),
	            resolved(NULL, (const char *const[]){"trace.path=t.jsonl"}, 1));
	/* a file with only its base is the default experiment */
	expect_same(resolved(ini(p, "only.ini", "[experiment]\nbase = default\n"), NULL, 0),
	            resolved(NULL, NULL, 0));
	/* --set still applies on top of the file */
	expect_same(resolved(p, (const char *const[]){"cluster.nodes=2"}, 1),
	            resolved(NULL, (const char *const[]){"cluster.nodes=2"}, 1));
}

/* A base names another experiment file (relative to the file naming it),
 * whose own base applies first; the chain reads in order. */
static void test_base_file_applies_first_and_chains(void **state)
{
	(void)state;
	char a[256], b[256];
	ini(a, "a.ini", "[experiment]\nbase = default\nseed = 5\n[cluster]\nnodes = 2\n");
	ini(b, "b.ini", "[experiment]\nbase = a.ini\nseed = 6\n");
	expect_same(resolved(b, NULL, 0),
	            resolved(NULL, (const char *const[]){"cluster.nodes=2", "experiment.seed=6"}, 2));
	/* a base without a base of its own is that file alone */
	ini(a, "c.ini", "[experiment]\nseed = 9\n[trace]\nkind = gen\n");
	ini(b, "d.ini", "[experiment]\nbase = c.ini\n[cluster]\nnodes = 1\n");
	char *t = resolved(b, NULL, 0);
	assert_non_null(strstr(t, "seed = 9"));
	assert_non_null(strstr(t, "gen = poisson")); /* the schema's, not fan-out */
	free(t);
}

/* Missing, circular and --set bases are input errors naming their place. */
static void test_bad_bases_are_refused_with_their_place(void **state)
{
	(void)state;
	char p[256], want[600];
	cfg_t *c = NULL;
	err_t e = {0};
	ini(p, "missing.ini", "[experiment]\nbase = nothere.ini\n");
	assert_int_equal(cli_load_config(p, NULL, 0, &c, &e), KS_EINPUT);
	snprintf(want, sizeof want, "%s:2: [experiment] base: nothere.ini: cannot open", p);
	assert_non_null(strstr(e.msg, want));
	ini(p, "loop.ini", "[experiment]\nbase = loop.ini\n");
	assert_int_equal(cli_load_config(p, NULL, 0, &c, &e), KS_EINPUT);
	snprintf(want, sizeof want,
	         "%s:2: [experiment] base: 'loop.ini': more than 8 files deep (does a base name a "
	         "file that names it back?)",
	         p);
	assert_string_equal(e.msg, want);
	ini(p, "bad.ini", "[experiment]\nbase = default\n[trace]\nbogus = 1\n");
	char q[256];
	ini(q, "uses_bad.ini", "[experiment]\nbase = bad.ini\n");
	assert_int_equal(cli_load_config(q, NULL, 0, &c, &e), KS_EINPUT);
	snprintf(want, sizeof want, "%s:2: [experiment] base: %s:4: [trace] bogus: unknown key", q,
	         p);
	assert_string_equal(e.msg, want);
	assert_int_equal(cli_load_config(NULL, (const char *const[]){"experiment.base=default"}, 1,
	                                 &c, &e),
	                 KS_EINPUT);
	assert_string_equal(e.msg, "--set: [experiment] base: only a config file sets it (it says "
	                           "what the file starts from; --set applies on top of the file)");
	assert_null(c);
}

/* base is read as the file loads and is no part of the resolved config, so
 * a file without one resolves (and identifies its runs) as before. */
static void test_base_is_not_written_and_files_without_it_mean_what_they_did(void **state)
{
	(void)state;
	char p[256];
	char *with = resolved(ini(p, "w.ini", "[experiment]\nbase = default\nseed = 3\n"), NULL, 0);
	assert_null(strstr(with, "\nbase ="));
	free(with);
	char *alone = resolved(ini(p, "alone.ini", "[experiment]\nseed = 3\n"), NULL, 0);
	char *schema = resolved(NULL, NULL, 0);
	assert_non_null(strstr(alone, "kind = auto")); /* schema defaults, not fan-out */
	assert_null(strstr(schema, "kind = auto"));
	free(alone);
	free(schema);
}

/* A file with no base and no workload: the run says to start from the
 * default experiment (before: "[trace] path: empty"); with the base it runs. */
static void test_file_without_workload_suggests_base_default(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	char p[256], want[512];
	ini(p, "seed_only.ini", "[experiment]\nseed = 2\n");
	cli_result_t r = cli_run(kvsim, dir, "run", "-q", p, NULL);
	assert_int_equal(r.status, 2);
	snprintf(want, sizeof want,
	         "kvsim run: %s: [trace] path: empty, and kind = auto reads a trace file: the config "
	         "names no workload. To change the default experiment, start the file with "
	         "[experiment] base = default",
	         p);
	if (!strstr(r.err, want))
		fail_msg("stderr: %s", r.err);
	cli_result_free(&r);
	ini(p, "seed_base.ini",
	    "[experiment]\nbase = default\nseed = 2\n[trace]\nduration_s = 10\nfanout_bursts = 1\n"
	    "fanout_size = 4\n");
	r = cli_run(kvsim, dir, "run", "-q", p, NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	cli_result_free(&r);
}

/* config doc names the default experiment's value where it is not the
 * key's default, and when each conditional key acts. */
static void test_config_doc_shows_default_experiment_values(void **state)
{
	(void)state;
	const char *kvsim = cli_kvsim_or_skip();
	cli_result_t r = cli_run(kvsim, dir, "config", "doc", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "[trace] kind\n    type enum, default 'auto', default "
	                              "experiment 'gen', one of:"));
	assert_non_null(strstr(r.out, "[trace] fanout_size\n    type int, default '32', default "
	                              "experiment '48', range"));
	assert_non_null(strstr(r.out, "[cluster] nodes\n    type int, default '4', range"));
	assert_non_null(strstr(r.out, "[experiment] base\n    type string, default '', any text\n"
	                              "    read from a config file as it loads"));
	assert_non_null(strstr(r.out, "[trace] rate\n    type float, default '10', range [0, "
	                              "1000000000], unit req/s\n    acts only when trace.kind = gen "
	                              "and trace.gen = poisson|gamma|weibull|flash|diurnal; "
	                              "otherwise use trace.rate_scale"));
	cli_result_free(&r);
}

TEST_MAIN_FIXTURE(setup, teardown, cmocka_unit_test(test_base_default_changes_it_as_set_would),
                  cmocka_unit_test(test_base_file_applies_first_and_chains),
                  cmocka_unit_test(test_bad_bases_are_refused_with_their_place),
                  cmocka_unit_test(test_base_is_not_written_and_files_without_it_mean_what_they_did),
                  cmocka_unit_test(test_file_without_workload_suggests_base_default),
                  cmocka_unit_test(test_config_doc_shows_default_experiment_values))

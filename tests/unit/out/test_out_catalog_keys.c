/* Every resolved config key in the catalog (sim/out/out_catalog.c, table
 * run_config): any key is a column by its dotted name in out_catalog_select's
 * columns, where and sort, swept or not; parameter columns hold every
 * run's own value, so two sweeps sharing a directory see each other's;
 * trace and preset are derived from the config; a catalog written before
 * run_config gains it when opened; a plain `kvsim run -o` is queryable by
 * any key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sim/out/out_catalog.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], dir[300];

static int setup(void **st)
{
	(void)st;
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_catkeys_XXXXXX"))
		return -1;
	snprintf(dir, sizeof dir, "%s/results", tmpdir);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(tmpdir);
}

static out_catalog_t *open_catalog(int readonly)
{
	out_catalog_t *c = NULL;
	err_t e = {0};
	if (out_catalog_open(dir, readonly, &c, &e))
		fail_msg("%s", e.msg);
	return c;
}

/* A config text as cfg_write makes it: doc comments, sections, keys. */
static void config(char *buf, size_t n, int nodes, const char *fetch, const char *kind,
                   const char *path)
{
	snprintf(buf, n,
	         "[experiment]\n# master seed\nseed = 1\n\n[cluster]\n# nodes [nodes]\n"
	         "nodes = %d\ntp = 4\n\n[kvcache]\nfetch = %s\n\n[trace]\nkind = %s\n"
	         "path =%s%s\ngen = fanout\n\n[policy]\npreset = vllm\n",
	         nodes, fetch, kind, *path ? " " : "", path);
}

/* A done run whose config has nodes and fetch, sweeping params. */
static void add(out_catalog_t *c, const char *id, int nodes, const char *fetch,
                const out_param_t *p, size_t np)
{
	char text[1024];
	config(text, sizeof text, nodes, fetch, "gen", "");
	out_run_info_t ri = {id, id, 1, p, np, "runs/x.h5", text, NULL};
	res_metric_t m[] = {{"ttft_p99_ms", "ms", 100.0 * nodes}};
	err_t e = {0};
	if (out_catalog_begin(c, &ri, &e) || out_catalog_done(c, id, m, 1, 0.5, &e))
		fail_msg("%s", e.msg);
}

/* The query's cells, joined by '|' within a row and ';' between rows
 * (NULL as '-'). */
static void select_text(out_catalog_t *c, const char *cols, const char *where, const char *sort,
                        char *out, size_t n)
{
	out_table_t t;
	err_t e = {0};
	if (out_catalog_select(c, cols, where, sort, &t, &e))
		fail_msg("%s", e.msg);
	out[0] = '\0';
	for (size_t r = 0; r < t.nrows; r++)
		for (size_t k = 0; k < t.ncols; k++) {
			const char *v = t.cells[r * t.ncols + k];
			snprintf(out + strlen(out), n - strlen(out), "%s%s", v ? v : "-",
			         k + 1 < t.ncols ? "|" : ";");
		}
	out_table_free(&t);
}

/* No run swept cluster.nodes, yet --where, --columns and --sort take it. */
static void test_every_config_key_is_a_column_in_where_columns_and_sort(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog(0);
	add(c, "r2", 2, "never", NULL, 0);
	add(c, "r4", 4, "always", NULL, 0);
	add(c, "r8", 8, "never", NULL, 0);
	char got[1024];
	select_text(c, "id,cluster.nodes,kvcache.fetch", "cluster.nodes = 4", NULL, got,
	            sizeof got);
	assert_string_equal(got, "r4|4|always;");
	select_text(c, "id", "kvcache.fetch = 'never' AND cluster.nodes > 2", NULL, got,
	            sizeof got);
	assert_string_equal(got, "r8;");
	select_text(c, "id,cluster.tp", NULL, "-cluster.nodes", got, sizeof got);
	assert_string_equal(got, "r8|4;r4|4;r2|4;");
	/* a key's value is typed: numbers compare as numbers */
	select_text(c, "id", "cluster.nodes * 2 = 16", NULL, got, sizeof got);
	assert_string_equal(got, "r8;");
	/* a name that is neither a column nor a key is named */
	out_table_t t;
	err_t e = {0};
	assert_int_equal(out_catalog_select(c, "id", "cluster.nodez = 4", NULL, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "--where: no column or config key 'cluster.nodez'"));
	assert_int_equal(out_catalog_select(c, "cluster.nodez", NULL, NULL, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "no column or config key 'cluster.nodez'"));
	/* quoted text and numbers with a point are left alone */
	select_text(c, "id", "kvcache.fetch != 'cluster.nodez' AND cluster.nodes > 2.5", "id", got,
	            sizeof got);
	assert_string_equal(got, "r4;r8;");
	out_catalog_close(c);
}

/* Two sweeps into one directory, one over kvcache.fetch, one over
 * cluster.nodes: each run's parameter columns hold what it ran with, so a
 * filter on either axis finds the other sweep's runs (NULL before). */
static void test_two_sweeps_sharing_a_catalog_show_each_others_values(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog(0);
	out_param_t fa[] = {{"kvcache.fetch", "never"}}, fb[] = {{"kvcache.fetch", "always"}};
	add(c, "a1", 4, "never", fa, 1);
	add(c, "a2", 4, "always", fb, 1);
	out_param_t n2[] = {{"cluster.nodes", "2"}}, n8[] = {{"cluster.nodes", "8"}};
	add(c, "b1", 2, "never", n2, 1);
	add(c, "b2", 8, "never", n8, 1);
	char got[1024];
	select_text(c, NULL, NULL, "id", got, sizeof got);
	/* default columns: id, status, seed, git_rev, the parameters, metrics */
	assert_string_equal(got, "a1|done|1|-|never|4|400;a2|done|1|-|always|4|400;"
	                         "b1|done|1|-|never|2|200;b2|done|1|-|never|8|800;");
	select_text(c, "id", "kvcache.fetch = 'never'", "id", got, sizeof got);
	assert_string_equal(got, "a1;b1;b2;");
	out_catalog_close(c);
}

/* trace: a generator as gen:GEN, a file by its base name, a generator that
 * reads a file (servegen) as gen:GEN:FILE; preset as the config says. */
static void test_trace_and_preset_are_derived_from_the_config(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog(0);
	static const char *const kind[] = {"gen", "mooncake", "gen"};
	static const char *const path[] = {"", "../traces/conv.jsonl", "w/windows.csv"};
	for (int i = 0; i < 3; i++) {
		char text[1024], id[16];
		snprintf(id, sizeof id, "t%d", i);
		config(text, sizeof text, 4, "never", kind[i], path[i]);
		out_run_info_t ri = {id, id, 1, NULL, 0, "runs/x.h5", text, NULL};
		err_t e = {0};
		assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
	}
	char got[1024];
	select_text(c, "id,trace,preset", NULL, "id", got, sizeof got);
	assert_string_equal(got, "t0|gen:fanout|vllm;t1|conv.jsonl|vllm;"
	                         "t2|gen:fanout:windows.csv|vllm;");
	out_catalog_close(c);
}

/* A catalog as kvsim wrote it before run_config: its rows' config texts
 * become keys when it is opened, trace and preset are filled in, and a
 * parameter column's NULL (a run of another sweep) gets the run's value. */
static void test_catalog_before_config_keys_gains_them_when_opened(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog(0);
	out_param_t fa[] = {{"kvcache.fetch", "always"}}, n2[] = {{"cluster.nodes", "2"}};
	add(c, "o1", 4, "always", fa, 1);
	add(c, "o2", 2, "never", n2, 1);
	out_catalog_close(c);
	/* back to the old layout: no keys, no derived columns, NULL parameters */
	char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                              "DROP TABLE run_config; ALTER TABLE runs DROP COLUMN trace;"
	                              " ALTER TABLE runs DROP COLUMN preset;"
	                              " UPDATE runs SET \"kvcache.fetch\" = NULL WHERE id = 'o2';"
	                              " UPDATE runs SET \"cluster.nodes\" = NULL WHERE id = 'o1';",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);
	c = open_catalog(1); /* a reader that may write the file migrates it */
	char got[1024];
	select_text(c, "id,kvcache.fetch,cluster.nodes,trace,preset,cluster.tp", NULL, "id", got,
	            sizeof got);
	assert_string_equal(got, "o1|always|4|gen:fanout|vllm|4;o2|never|2|gen:fanout|vllm|4;");
	out_catalog_close(c);
}

/* kvsim run -o: a single run is queryable by any key, and has its trace,
 * preset, revision and offered load. */
static void test_plain_run_is_queryable_by_any_key(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	cli_result_t r =
	    cli_run(kvsim, tmpdir, "run", "-q", "-o", dir, "--set", "trace.fanout_bursts=2", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run(kvsim, tmpdir, "runs", dir, "--where", "cluster.nodes = 4 AND git_rev != ''",
	            "--columns", "cluster.nodes,policy.routing.name,trace,preset", "--csv", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "cluster.nodes,policy.routing.name,trace,preset\n"
	                           "4,least_load,gen:fanout,none\n");
	cli_result_free(&r);
	r = cli_run(kvsim, tmpdir, "runs", dir, "--where", "offered_rps > 0", "--columns", "trace",
	            "--csv", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "trace\ngen:fanout\n");
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_every_config_key_is_a_column_in_where_columns_and_sort, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_two_sweeps_sharing_a_catalog_show_each_others_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trace_and_preset_are_derived_from_the_config,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_catalog_before_config_keys_gains_them_when_opened,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_plain_run_is_queryable_by_any_key, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

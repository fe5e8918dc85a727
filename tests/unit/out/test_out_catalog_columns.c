/* The catalog's columns added in one batch (sim/out/out_catalog_write.c: many new
 * metrics rebuild table runs at once, one is an ALTER TABLE): the table is
 * what adding them one by one gives (declarations, constraints, order), the
 * rows already there keep their values and their order, the columns table
 * lists every new column in order with its unit, and a name repeated in
 * one batch is one column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sim/out/out_catalog.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], dir[300], path[340];

static int setup(void **st)
{
	(void)st;
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_catcol_XXXXXX"))
		return -1;
	snprintf(dir, sizeof dir, "%s/results", tmpdir);
	snprintf(path, sizeof path, "%s/%s", dir, OUT_CATALOG_FILE);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(tmpdir);
}

/* One row of SQL's answer, cells joined by '|', rows by ';'. */
static void query(const char *sql, char *out, size_t cap)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	out[0] = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int k = 0; k < sqlite3_column_count(st); k++) {
			const char *v = (const char *)sqlite3_column_text(st, k);
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", k ? "|" : "",
				 v ? v : "-");
		}
		snprintf(out + strlen(out), cap - strlen(out), ";");
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void run_done(out_catalog_t *c, const char *id, const res_metric_t *m, size_t n)
{
	out_param_t p[] = {{"fake.rate", "2"}, {"fake.rate", "2"}};
	out_run_info_t ri = {id, "cafe", 1, p, 2, "x.h5", "", NULL};
	err_t e = {0};
	if (out_catalog_begin(c, &ri, &e) || out_catalog_done(c, id, m, n, 0.5, &e))
		fail_msg("%s", e.msg);
}

static void test_batched_columns_match_one_by_one_and_keep_rows(void **st)
{
	(void)st;
	out_catalog_t *c = NULL;
	err_t e = {0};
	if (out_catalog_open(dir, 0, &c, &e))
		fail_msg("%s", e.msg);
	res_metric_t one[] = {{"m_a", "ns", 1.5}};
	run_done(c, "r1", one, 1); /* one new metric: ALTER TABLE */
	res_metric_t more[] = {{"m_b", "s", 2}, {"m_a", "ns", 3}, {"m c\"q", "", 4},
			       {"m_b", "s", 2}, {"fake.rate", "x", 5}};
	run_done(c, "r2", more, 5); /* three new ones (one twice, one clashing): a rebuild */
	run_done(c, "r0", one, 1);
	out_catalog_close(c);
	char got[4096];
	query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('runs')"
	      " WHERE cid >= 14",
	      got, sizeof got);
	assert_string_equal(got, "git_dirty|INTEGER|0|-|0;"
				 "stale|INTEGER|1|0|0;inputs|TEXT|0|-|0;trace|TEXT|0|-|0;"
				 "preset|TEXT|0|-|0;fake.rate|NUMERIC|0|-|0;"
				 "m_a|REAL|0|-|0;"
				 "m_b|REAL|0|-|0;m c\"q|REAL|0|-|0;metric.fake.rate|REAL|0|-|0;");
	query("SELECT name, type, \"notnull\", pk FROM pragma_table_info('runs') WHERE cid < 4",
	      got, sizeof got);
	assert_string_equal(got, "id|TEXT|0|1;config_digest|TEXT|0|0;seed|INTEGER|0|0;"
				 "status|TEXT|1|0;");
	query("SELECT id, status, m_a, m_b, \"m c\"\"q\", \"metric.fake.rate\", \"fake.rate\""
	      " FROM runs ORDER BY rowid",
	      got, sizeof got);
	assert_string_equal(got, "r1|done|1.5|-|-|-|2;r2|done|3.0|2.0|4.0|5.0|2;"
				 "r0|done|1.5|-|-|-|2;");
	query("SELECT name, kind, unit, ord FROM columns ORDER BY ord", got, sizeof got);
	assert_string_equal(got, "fake.rate|param||0;m_a|metric|ns|1;m_b|metric|s|2;"
				 "m c\"q|metric||3;metric.fake.rate|metric|x|4;");
	/* the primary key still holds after the rebuild */
	if (out_catalog_open(dir, 0, &c, &e))
		fail_msg("%s", e.msg);
	run_done(c, "r2", one, 1);
	out_catalog_close(c);
	query("SELECT count(*), sum(attempts) FROM runs", got, sizeof got);
	assert_string_equal(got, "3|4;");
}

TEST_MAIN_FIXTURE(setup, teardown,
                  cmocka_unit_test(test_batched_columns_match_one_by_one_and_keep_rows))

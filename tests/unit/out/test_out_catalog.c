/* Tests for sim/out_catalog: run rows, parameter and metric columns,
 * queries (+inf metrics included), WAL mode, id prefixes, the ledger (file size, digest, revision,
 * verdicts) and the migration of catalogs written before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sim/out/out_catalog.h"
#include "sim/out/out_hdf5.h"
#include "tests/fixtures/out_fake.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], dir[300];

static int setup(void **st)
{
	(void)st;
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_cat_XXXXXX"))
		return -1;
	snprintf(dir, sizeof dir, "%s/results", tmpdir);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(tmpdir);
}

/* The test catalog under dir, opened for writing. */
static out_catalog_t *open_catalog(void)
{
	out_catalog_t *c = NULL;
	err_t e = {0};
	if (out_catalog_open(dir, 0, &c, &e))
		fail_msg("%s", e.msg);
	return c;
}

static void add_run(out_catalog_t *c, const char *id, const char *rate, const char *pol,
		    uint64_t seed)
{
	out_param_t p[] = {{"fake.rate", rate}, {"policy.replication.name", pol}};
	out_run_info_t ri = {id, "cafe", seed, p, 2, "x.h5", "[fake]\nrate = 1\n", NULL};
	err_t e = {0};
	assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
}

static const char *cell(const out_table_t *t, size_t r, const char *col)
{
	for (size_t k = 0; k < t->ncols; k++)
		if (!strcmp(t->names[k], col))
			return t->cells[r * t->ncols + k];
	fail_msg("no column %s", col);
	return NULL;
}

static void test_begin_done_fail_track_status_and_attempts(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	int s, a;
	assert_int_equal(out_catalog_status(c, "aaaa", &s, &a, &e), 0);
	assert_int_equal(s, OUT_RUN_ABSENT);
	add_run(c, "aaaa", "1.5", "none", 7);
	assert_int_equal(out_catalog_status(c, "aaaa", &s, &a, &e), 0);
	assert_int_equal(s, OUT_RUN_RUNNING);
	assert_int_equal(a, 1);
	assert_int_equal(out_catalog_failed(c, "aaaa", "child killed by signal 9", &e), 0);
	assert_int_equal(out_catalog_status(c, "aaaa", &s, &a, &e), 0);
	assert_int_equal(s, OUT_RUN_FAILED);
	add_run(c, "aaaa", "1.5", "none", 7);
	res_metric_t m[] = {{"ttft_p99_ns", "ns", 1234.5}, {"throughput_rps", "req/s", 9.75}};
	assert_int_equal(out_catalog_done(c, "aaaa", m, 2, 0.5, &e), 0);
	assert_int_equal(out_catalog_status(c, "aaaa", &s, &a, &e), 0);
	assert_int_equal(s, OUT_RUN_DONE);
	assert_int_equal(a, 2);
	out_table_t t;
	assert_int_equal(out_catalog_select(c, "all", NULL, NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(cell(&t, 0, "status"), "done");
	assert_null(cell(&t, 0, "error"));
	assert_string_equal(cell(&t, 0, "ttft_p99_ns"), "1234.5");
	assert_string_equal(cell(&t, 0, "fake.rate"), "1.5");
	assert_string_equal(cell(&t, 0, "seed"), "7");
	assert_non_null(cell(&t, 0, "finished_at"));
	out_table_free(&t);
	assert_int_equal(out_catalog_done(c, "nope", m, 2, 0.5, &e), KS_EINPUT);
	assert_int_equal(out_catalog_failed(c, "nope", "x", &e), KS_EINPUT);
	out_catalog_close(c);
}

static void test_catalog_uses_wal_and_survives_reopen(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	add_run(c, "bbbb", "2", "speculative", 1);
	out_catalog_close(c);
	char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
	sqlite3_finalize(s);
	sqlite3_close(db);
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	int stt;
	assert_int_equal(out_catalog_status(c, "bbbb", &stt, NULL, &e), 0);
	assert_int_equal(stt, OUT_RUN_RUNNING);
	out_catalog_close(c);
}

static void test_where_sort_columns_over_params_and_metrics(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	const char *rates[] = {"0.5", "4", "16", "2"};
	for (int i = 0; i < 4; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		add_run(c, id, rates[i], i % 2 ? "speculative" : "none", (uint64_t)i);
		res_metric_t m[] = {{"ttft_p99_ns", "ns", 100.0 * (4 - i)}, {"seed", "", 1}};
		assert_int_equal(out_catalog_done(c, id, m, 2, 0.1, &e), 0);
	}
	out_table_t t;
	/* Bare dotted names are quoted for the user; numeric comparison, not text. */
	assert_int_equal(out_catalog_select(c, "id,fake.rate,ttft_p99_ns",
					    "fake.rate > 1 AND policy.replication.name = 'none'"
					    " AND id LIKE 'r%'",
					    "-fake.rate", &t, &e),
			 0);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(cell(&t, 0, "id"), "r2");
	out_table_free(&t);
	assert_int_equal(out_catalog_select(c, "id", "id LIKE 'r%'", "-fake.rate", &t, &e), 0);
	assert_int_equal(t.nrows, 4);
	assert_string_equal(t.cells[0], "r2");
	assert_string_equal(t.cells[1], "r1");
	assert_string_equal(t.cells[2], "r3");
	assert_string_equal(t.cells[3], "r0");
	out_table_free(&t);
	/* Default columns: id, status, seed, git_rev, params, metrics; a metric
	 * named like a fixed column gets a prefix instead of overwriting it. */
	assert_int_equal(out_catalog_select(c, NULL, "id = 'r3'", NULL, &t, &e), 0);
	assert_string_equal(t.names[0], "id");
	assert_string_equal(t.names[1], "status");
	assert_string_equal(t.names[2], "seed");
	assert_string_equal(t.names[3], "git_rev");
	assert_string_equal(t.kinds[4], "param");
	assert_string_equal(cell(&t, 0, "seed"), "3");
	assert_string_equal(cell(&t, 0, "metric.seed"), "1");
	assert_string_equal(cell(&t, 0, "ttft_p99_ns"), "100");
	assert_int_equal(t.is_real[t.ncols - 1], 1);
	out_table_free(&t);
	assert_int_equal(out_catalog_select(c, "nosuch", NULL, NULL, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "nosuch"));
	assert_int_equal(out_catalog_select(c, NULL, "((", NULL, &t, &e), KS_EINPUT);
	assert_int_equal(out_catalog_select(c, NULL, NULL, "bogus", &t, &e), KS_EINPUT);
	out_catalog_close(c);
}

/* A TTFT quantile over offered requests is +inf where a run shed load: the
 * catalog stores it as a REAL above every number (not NULL, as NaN is),
 * --where and --sort compare it so, and it reads back as "inf". */
static void test_inf_metric_is_kept_above_every_number(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	const double p95[] = {120.5, INFINITY, 900};
	for (int i = 0; i < 3; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		add_run(c, id, "1", "none", (uint64_t)i);
		res_metric_t m[] = {{"ttft_p95_ms", "ms", p95[i]}};
		assert_int_equal(out_catalog_done(c, id, m, 1, 0.1, &e), 0);
	}
	out_table_t t;
	assert_int_equal(
	    out_catalog_select(c, "id,ttft_p95_ms", "ttft_p95_ms > 1e308", NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(cell(&t, 0, "id"), "r1");
	assert_string_equal(cell(&t, 0, "ttft_p95_ms"), "inf");
	out_table_free(&t);
	assert_int_equal(
	    out_catalog_select(c, "id", "ttft_p95_ms IS NOT NULL", "-ttft_p95_ms", &t, &e), 0);
	assert_int_equal(t.nrows, 3);
	assert_string_equal(t.cells[0], "r1");
	assert_string_equal(t.cells[1], "r2");
	out_table_free(&t);
	out_catalog_close(c);
}

/* SQLite prepares only the first statement of a text: a --where with SQL
 * after a ';', or a ')' that closes the WHERE clause early, is refused
 * before anything runs; ';' inside strings and comments is fine, and a
 * trailing "-- comment" does not swallow the ORDER BY. */
static void test_where_with_trailing_sql_is_refused(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	for (int i = 0; i < 3; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%d", i);
		add_run(c, id, i == 1 ? "7" : "1", "none", (uint64_t)i);
	}
	out_table_t t;
	static const char *const bad[] = {
	    "id = 'r1'; DELETE FROM runs", "id = 'r1';", "id = 'r1' -- x\n; DELETE FROM runs",
	    "1) OR (1", "(id = 'r1')) UNION SELECT name FROM sqlite_master WHERE ((1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(out_catalog_select(c, "id", bad[i], NULL, &t, &e), KS_EINPUT);
		assert_non_null(strstr(e.msg, "--where: "));
		assert_non_null(strstr(e.msg, "no further SQL"));
	}
	assert_int_equal(out_catalog_select(c, "id", NULL, NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 3);
	out_table_free(&t);
	static const char *const good[] = {"policy.replication.name != 'a;b)' AND fake.rate > 5",
	                                   "fake.rate > 5 /* ; ) */", "[fake.rate] > 5",
	                                   "(fake.rate > 5) -- ; )"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(out_catalog_select(c, "id", good[i], NULL, &t, &e), 0);
		assert_int_equal(t.nrows, 1);
		assert_string_equal(t.cells[0], "r1");
		out_table_free(&t);
	}
	assert_int_equal(out_catalog_select(c, "id", "1 -- all", "-id", &t, &e), 0);
	assert_int_equal(t.nrows, 3);
	assert_string_equal(t.cells[0], "r2");
	out_table_free(&t);
	out_catalog_close(c);
}

static void test_resolve_needs_a_unique_prefix(void **st)
{
	(void)st;
	err_t e = {0};
	out_catalog_t *c = open_catalog();
	add_run(c, "abc123", "1", "none", 1);
	add_run(c, "abd456", "1", "none", 2);
	char id[65];
	assert_int_equal(out_catalog_resolve(c, "abc", id, &e), 0);
	assert_string_equal(id, "abc123");
	assert_int_equal(out_catalog_resolve(c, "ab", id, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "more than one"));
	assert_int_equal(out_catalog_resolve(c, "zz", id, &e), KS_EINPUT);
	assert_int_equal(out_catalog_resolve(c, "", id, &e), KS_EINPUT);
	out_catalog_close(c);
}

static void test_readonly_open_of_missing_catalog_is_input_error(void **st)
{
	(void)st;
	out_catalog_t *c;
	err_t e = {0};
	char p[400];
	snprintf(p, sizeof p, "%s/none", tmpdir);
	assert_int_equal(out_catalog_open(p, 1, &c, &e), KS_EINPUT);
	assert_null(c);
	assert_non_null(strstr(e.msg, OUT_CATALOG_FILE));
	assert_int_equal(access(p, F_OK), -1);
}

/* dir: base, then components of first's letter, so that dir/catalog.sqlite
 * is want bytes long. */
static void dir_of_length(char *dir, size_t n, const char *base, char first, int want)
{
	int need = want - (int)strlen("/" OUT_CATALOG_FILE) - (int)strlen(base);
	size_t at = (size_t)snprintf(dir, n, "%s", base);
	while (need > 0) {
		int chunk = need <= 101 ? need : 100;
		dir[at++] = '/';
		memset(dir + at, first, (size_t)chunk - 1);
		at += (size_t)chunk - 1;
		need -= chunk;
	}
	dir[at] = '\0';
	assert_int_equal((int)strlen(dir) + (int)strlen("/" OUT_CATALOG_FILE), want);
}

/* SQLite opens a catalog whose absolute path is at most 504 bytes (512 with
 * "-journal"): one byte more is refused, naming the limit where SQLite says
 * only "unable to open database file", before any directory is made. */
static void test_catalog_path_past_sqlites_limit_is_refused_creating_nothing(void **st)
{
	(void)st;
	char base[PATH_MAX], dir[1024], top[PATH_MAX + 4];
	assert_non_null(realpath(tmpdir, base));
	out_catalog_t *c = NULL;
	err_t e = {0};
	dir_of_length(dir, sizeof dir, base, 'a', 504);
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), 0);
	out_catalog_close(c);
	dir_of_length(dir, sizeof dir, base, 'b', 505);
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), KS_EINPUT);
	assert_null(c);
	assert_non_null(strstr(e.msg, "/" OUT_CATALOG_FILE ": results directory path too long: "
					"505 bytes from the root, over the 504"));
	assert_memory_equal(e.msg, base, strlen(base));
	snprintf(top, sizeof top, "%s/b", base);
	assert_int_equal(access(top, F_OK), -1);
	/* relative: the working directory counts */
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(base), 0);
	assert_int_equal(out_catalog_open(dir + strlen(base) + 1, 0, &c, &e), KS_EINPUT);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(access(top, F_OK), -1);
}

/* The catalog's bytes (*n of them, malloc'd), or written back. */
static char *catalog_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *b = malloc(1 << 20);
	*n = fread(b, 1, 1 << 20, f);
	fclose(f);
	assert_true(*n > 4096 && *n < (1 << 20));
	return b;
}

static void catalog_write(const char *path, const char *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Opens the damaged catalog for writing and for reading: each fails with
 * KS_EIO and "PATH: " then want. */
static void expect_damaged(const char *path, const char *want)
{
	char head[1200];
	snprintf(head, sizeof head, "%s: %s", path, want);
	for (int ro = 0; ro < 2; ro++) {
		out_catalog_t *c = NULL;
		err_t e = {0};
		assert_int_equal(out_catalog_open(dir, ro, &c, &e), KS_EIO);
		assert_null(c);
		if (strncmp(e.msg, head, strlen(head)))
			fail_msg("'%s'; wanted '%s...'", e.msg, head);
	}
}

/* A damaged page reads as what the statement reading it lacked ("no column
 * 'id'", "duplicate column name"): a failure is followed by an integrity
 * check, and the message says the catalog is corrupt, naming the file. */
static void test_damaged_catalog_is_called_corrupt_naming_the_file(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	add_run(c, "cccc", "2", "none", 1);
	out_catalog_close(c);
	char path[400];
	snprintf(path, sizeof path, "%s/%s", dir, OUT_CATALOG_FILE);
	size_t n, page;
	char *good = catalog_bytes(path, &n), *bad = malloc(n);
	page = (size_t)((unsigned char)good[16] << 8 | (unsigned char)good[17]);
	/* every b-tree page's header after the first */
	memcpy(bad, good, n);
	for (size_t at = page; at < n; at += page)
		memset(bad + at, 0xff, 64);
	catalog_write(path, bad, n);
	expect_damaged(path, "catalog is corrupt (");
	/* the header: not a database at all */
	memcpy(bad, good, n);
	memset(bad, 'x', 16);
	catalog_write(path, bad, n);
	expect_damaged(path, "catalog is corrupt (file is not a database)");
	/* a schema whose runs table lost its id column */
	memcpy(bad, good, n);
	char *id = memmem(bad, n, "( id TEXT", 9);
	assert_non_null(id);
	memcpy(id + 2, "xx", 2);
	catalog_write(path, bad, n);
	expect_damaged(path, "table runs has no column 'id' (not a kvsim catalog, or a damaged one)");
	catalog_write(path, good, n);
	assert_int_equal(out_catalog_open(dir, 1, &c, &(err_t){0}), 0);
	out_catalog_close(c);
	free(good);
	free(bad);
}

static void test_catalog_creates_missing_parent_directories(void **st)
{
	(void)st;
	char base[64], dir[256];
	assert_int_equal(tmp_dir_make(base, sizeof base, "/tmp/kvsim-mkdir-XXXXXX"), 0);
	snprintf(dir, sizeof dir, "%s/a/b/results", base);
	out_catalog_t *c = NULL;
	err_t e = {0};
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), 0);
	out_catalog_close(c);
	char db[300];
	snprintf(db, sizeof db, "%s/catalog.sqlite", dir);
	assert_int_equal(access(db, F_OK), 0);
	assert_int_equal(tmp_dir_remove(base), 0);
}

static void done_with_file(out_catalog_t *c, const char *id, const char *rel,
			   const char *rev)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	out_param_t p[] = {{"fake.rate", "1"}};
	out_run_info_t ri = {id, "cafe", 1, p, 1, rel, "[fake]\n", NULL};
	res_metric_t m[] = {{"ttft_p99_ns", "ns", 5}};
	out_run_file_t f = {0, "", rev};
	err_t e = {0};
	assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
	assert_int_equal(out_file_sha256(path, &f.size, f.sha256, &e), 0);
	assert_int_equal(out_catalog_done_file(c, id, m, 1, 0.5, &f, &e), 0);
}

static int verdict(out_catalog_t *c, const char *id, const char *rev, int keep)
{
	int v = -1;
	err_t e = {0};
	assert_int_equal(out_catalog_check(c, id, rev, keep, &v, &e), 0);
	return v;
}

/* done_file fills the ledger columns; a new attempt clears them. */
static void test_done_file_records_size_digest_and_revision(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	char path[400];
	snprintf(path, sizeof path, "%s/a.h5", dir);
	tmp_write(path, "abc");
	done_with_file(c, "aaaa", "a.h5", "0123456789ab-dirty.0badf00d");
	out_table_t t;
	assert_int_equal(out_catalog_select(c, "h5_size,h5_sha256,git_rev,git_dirty,stale",
					    NULL, NULL, &t, &e),
			 0);
	assert_string_equal(cell(&t, 0, "h5_size"), "3");
	/* SHA-256("abc"), FIPS 180-2 appendix B.1 */
	assert_string_equal(cell(&t, 0, "h5_sha256"),
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_string_equal(cell(&t, 0, "git_rev"), "0123456789ab-dirty.0badf00d");
	assert_string_equal(cell(&t, 0, "git_dirty"), "1");
	assert_string_equal(cell(&t, 0, "stale"), "0");
	out_table_free(&t);
	add_run(c, "aaaa", "1", "none", 1);
	assert_int_equal(out_catalog_select(c, "status,h5_size,h5_sha256,git_rev,git_dirty",
					    NULL, NULL, &t, &e),
			 0);
	assert_string_equal(cell(&t, 0, "status"), "running");
	for (size_t k = 1; k < t.ncols; k++)
		assert_null(t.cells[k]);
	out_table_free(&t);
	out_catalog_close(c);
}

/* Which verdict each kind of damage and each revision gets. */
static void test_check_compares_file_and_revision_with_the_ledger(void **st)
{
	(void)st;
	out_catalog_t *c = open_catalog();
	err_t e = {0};
	static const char *const ids[] = {"ok", "gone", "short", "flip", "long"};
	char path[5][400];
	for (int i = 0; i < 5; i++) {
		char rel[32];
		snprintf(rel, sizeof rel, "%s.h5", ids[i]);
		snprintf(path[i], sizeof path[i], "%s/%s", dir, rel);
		tmp_write(path[i], "0123456789");
		done_with_file(c, ids[i], rel, "revA");
	}
	assert_int_equal(unlink(path[1]), 0);
	tmp_write(path[2], "01234");
	tmp_write(path[3], "0123X56789");
	tmp_write(path[4], "0123456789+");
	assert_int_equal(verdict(c, "ok", "revA", 0), OUT_CHECK_DONE);
	assert_int_equal(verdict(c, "gone", "revA", 0), OUT_CHECK_MISSING);
	assert_int_equal(verdict(c, "short", "revA", 0), OUT_CHECK_TRUNCATED);
	assert_int_equal(verdict(c, "flip", "revA", 0), OUT_CHECK_CORRUPT);
	assert_int_equal(verdict(c, "long", "revA", 0), OUT_CHECK_CORRUPT);
	/* another revision: stale, or kept when intact under keep_stale */
	assert_int_equal(verdict(c, "ok", "revB", 0), OUT_CHECK_STALE);
	assert_int_equal(verdict(c, "gone", "revB", 0), OUT_CHECK_STALE);
	assert_int_equal(verdict(c, "ok", "revB", 1), OUT_CHECK_KEPT);
	assert_int_equal(verdict(c, "gone", "revB", 1), OUT_CHECK_MISSING);
	assert_int_equal(verdict(c, "flip", "revB", 1), OUT_CHECK_CORRUPT);
	assert_int_equal(verdict(c, "nobody", "revA", 0), OUT_CHECK_TODO);
	add_run(c, "run", "1", "none", 1);
	assert_int_equal(verdict(c, "run", "revA", 0), OUT_CHECK_TODO);
	assert_int_equal(out_catalog_failed(c, "run", "x", &e), 0);
	assert_int_equal(verdict(c, "run", "revA", 1), OUT_CHECK_FAILED);
	assert_string_equal(out_check_name(OUT_CHECK_TRUNCATED), "truncated");
	/* the mark a sweep sets on a kept row */
	assert_int_equal(out_catalog_mark_stale(c, "ok", 1, &e), 0);
	out_table_t t;
	assert_int_equal(out_catalog_select(c, "id", "stale = 1", NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(t.cells[0], "ok");
	out_table_free(&t);
	out_catalog_close(c);
}

/* The catalog as it was before the ledger: the same tables without the
 * ledger columns. */
static void make_old_catalog(const char *d, const char *h5_rel)
{
	char p[400];
	snprintf(p, sizeof p, "mkdir -p %s", d);
	assert_int_equal(system(p), 0);
	snprintf(p, sizeof p, "%s/%s", d, OUT_CATALOG_FILE);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	char sql[2048];
	snprintf(sql, sizeof sql,
		 "PRAGMA journal_mode = WAL;"
		 "CREATE TABLE runs (id TEXT PRIMARY KEY, config_digest TEXT, seed INTEGER,"
		 " status TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,"
		 " h5_path TEXT, started_at TEXT, finished_at TEXT, wall_s REAL, config TEXT,"
		 " \"fake.rate\" NUMERIC, ttft_p99_ns REAL);"
		 "CREATE TABLE columns (name TEXT PRIMARY KEY, kind TEXT NOT NULL, unit TEXT,"
		 " ord INTEGER);"
		 "INSERT INTO columns VALUES ('fake.rate', 'param', '', 0),"
		 " ('ttft_p99_ns', 'metric', 'ns', 1);"
		 "INSERT INTO runs (id, status, attempts, h5_path, \"fake.rate\", ttft_p99_ns)"
		 " VALUES ('old1', 'done', 1, '%s', 2, 7.5), ('old2', 'failed', 1, NULL, 3, NULL);",
		 h5_rel);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* An old catalog opens, gains the ledger columns, and its done rows count
 * as stale (unknown revision): re-run, and under keep_stale as well, as no
 * digest of their file was recorded (unverified). A reader migrates it as
 * well. */
static void test_old_catalog_is_migrated_and_its_rows_are_stale(void **st)
{
	(void)st;
	char ro[400];
	snprintf(ro, sizeof ro, "%s/old_ro", tmpdir);
	make_old_catalog(dir, "old1.h5");
	make_old_catalog(ro, "old1.h5");
	sim_results_t r;
	err_t e = {0};
	char path[500];
	snprintf(path, sizeof path, "%s/old1.h5", dir);
	assert_int_equal(fake_fill(&r, 1, 1.0, 20), 0);
	assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
	sim_results_free(&r);
	out_catalog_t *c;
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), 0);
	out_table_t t;
	assert_int_equal(out_catalog_select(c, "id,status,git_rev,git_dirty,h5_size,stale,fake.rate",
					    NULL, "id", &t, &e),
			 0);
	assert_int_equal(t.nrows, 2);
	assert_null(cell(&t, 0, "git_rev"));
	assert_null(cell(&t, 0, "h5_size"));
	assert_string_equal(cell(&t, 0, "stale"), "1");
	assert_string_equal(cell(&t, 1, "stale"), "0"); /* failed: runs again anyway */
	assert_string_equal(cell(&t, 0, "fake.rate"), "2");
	out_table_free(&t);
	assert_int_equal(verdict(c, "old1", out_build_rev(), 0), OUT_CHECK_STALE);
	assert_int_equal(verdict(c, "old1", out_build_rev(), 1), OUT_CHECK_UNVERIFIED);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(verdict(c, "old1", out_build_rev(), 1), OUT_CHECK_MISSING);
	out_catalog_close(c);
	/* opened again: nothing left to migrate, nothing lost */
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, NULL, NULL, NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 2);
	out_table_free(&t);
	out_catalog_close(c);
	assert_int_equal(out_catalog_open(ro, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "id,git_rev", "stale = 1", NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(t.cells[0], "old1");
	out_table_free(&t);
	out_catalog_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_catalog_creates_missing_parent_directories),
		cmocka_unit_test_setup_teardown(test_begin_done_fail_track_status_and_attempts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_catalog_uses_wal_and_survives_reopen, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_where_sort_columns_over_params_and_metrics,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_inf_metric_is_kept_above_every_number, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_where_with_trailing_sql_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_resolve_needs_a_unique_prefix, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_readonly_open_of_missing_catalog_is_input_error,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_catalog_path_past_sqlites_limit_is_refused_creating_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_catalog_is_called_corrupt_naming_the_file,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_done_file_records_size_digest_and_revision,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_compares_file_and_revision_with_the_ledger,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_catalog_is_migrated_and_its_rows_are_stale,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

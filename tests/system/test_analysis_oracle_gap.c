/* analysis/oracle_gap.py on a small sweep the group setup makes (the
 * default experiment, 5 s of traffic, speculative replication with the
 * oracle and the repeat_count predictor, two seeds, output.oracle_bound on
 * within a copy budget that binds): its gap, network and misprediction
 * columns are recomputed here from the catalog (sqlite3) as the means
 * the script's docstring defines. Skipped when /usr/bin/python3 lacks h5py
 * or pandas, or when no kvsim binary is built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[64];
static int ready;

static int setup(void **st)
{
	(void)st;
	const char *k = tmp_kvsim_with_python("h5py, pandas");
	if (!k)
		return 0; /* tests skip */
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_gap_XXXXXX"))
		return -1;
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
	         "%s sweep --set trace.duration_s=5 --set policy.replication.name=speculative "
	         "--set output.oracle_bound=true --set output.bound_bw_gbps=0.2 "
	         "--grid policy.predictor.name=oracle,repeat_count --seeds 2 -j 1 --no-progress "
	         "-o %s/sw >/dev/null 2>&1 && /usr/bin/python3 analysis/oracle_gap.py %s/sw --csv "
	         "--by policy.predictor.name > %s/gap.csv",
	         k, tmpdir, tmpdir, tmpdir);
	if (system(cmd) != 0)
		return -1;
	ready = 1;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmpdir[0] ? tmp_dir_remove(tmpdir) : 0;
}

/* The mean of a catalog column over one predictor's runs. */
static double cat_mean(const char *col, const char *pred)
{
	char path[300], sql[300];
	snprintf(path, sizeof path, "%s/sw/catalog.sqlite", tmpdir);
	sqlite3 *db;
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	snprintf(sql, sizeof sql,
	         "SELECT avg(\"%s\"), count(*) FROM runs WHERE \"policy.predictor.name\" = '%s' "
	         "AND status = 'done'",
	         col, pred);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	double v = sqlite3_column_double(q, 0);
	assert_int_equal(sqlite3_column_int(q, 1), 2);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

/* One CSV row of the script: hit, min, place, unlimited, gap, network,
 * misprediction, rest, runs (the column order its COLS gives). */
typedef struct gap_row {
	double v[8];
	int runs;
} gap_row_t;

static gap_row_t script_row(const char *pred)
{
	char path[300], line[1024];
	snprintf(path, sizeof path, "%s/gap.csv", tmpdir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	assert_non_null(strstr(line, "hit_rate_blocks,bound.belady_hit_rate_blocks"));
	gap_row_t r = {0};
	int found = 0;
	while (fgets(line, sizeof line, f)) {
		size_t n = strlen(pred);
		if (strncmp(line, pred, n) || line[n] != ',')
			continue;
		char *p = line + n + 1;
		for (int i = 0; i < 8; i++) {
			r.v[i] = *p == ',' ? NAN : strtod(p, &p);
			assert_true(*p == ',');
			p++;
		}
		r.runs = atoi(p);
		found = 1;
	}
	fclose(f);
	assert_true(found);
	return r;
}

static void assert_near(double a, double b, double eps)
{
	if (!(fabs(a - b) <= eps))
		fail_msg("%.17g is not within %g of %.17g", a, eps, b);
}

static void test_gap_splits_into_network_and_misprediction(void **st)
{
	(void)st;
	if (!ready)
		skip();
	const double eps = 1e-5; /* the CSV's 6 significant digits */
	double hit_o = cat_mean("hit_rate_blocks", "oracle");
	const char *preds[] = {"oracle", "repeat_count"};
	for (int k = 0; k < 2; k++) {
		gap_row_t r = script_row(preds[k]);
		double hit = cat_mean("hit_rate_blocks", preds[k]);
		double place = cat_mean("bound.place_hit_rate_blocks", preds[k]);
		double unl = cat_mean("bound.place_unlimited_hit_rate_blocks", preds[k]);
		assert_int_equal(r.runs, 2);
		assert_near(r.v[0], hit, eps);
		assert_near(r.v[2], place, eps);
		assert_near(r.v[4], place - hit, eps);                 /* gap */
		assert_near(r.v[5], unl - place, eps);                 /* network */
		assert_near(r.v[6], hit_o - hit, eps);                 /* misprediction */
		assert_near(r.v[7], place - hit - (hit_o - hit), eps); /* rest */
		assert_true(r.v[5] > 0);                               /* the budget binds */
	}
}

TEST_MAIN_FIXTURE(setup, teardown, cmocka_unit_test(test_gap_splits_into_network_and_misprediction))

/* Tests for the capacity search (kvsim sweep --capacity, sim/out/out_capacity.c)
 * on a queue whose capacity is known: one single-GPU instance running one
 * sequence at a time, 200 requests of 512 distinct prompt tokens and one
 * output token, arriving every 100 ms of trace time (so trace.rate_scale x
 * gives a deterministic gap of 0.1 / x s). Each request is one prefill
 * iteration of a fixed duration S (measured as the TTFT of the unloaded
 * run, where every request's TTFT is S), so the queue's throughput limit is
 * 1 / S and the load at which arrivals outrun it is c = 0.1 / S. */
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
#include <sqlite3.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

static char tmpdir[256], ini[320];

static int setup(void **st)
{
	(void)st;
	if (tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_capacity_XXXXXX"))
		return -1;
	char p[320];
	snprintf(p, sizeof p, "%s/q.jsonl", tmpdir);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	for (int k = 0; k < 200; k++)
		fprintf(f,
			"{\"timestamp\": %d, \"input_length\": 512, \"output_length\": 1, "
			"\"hash_ids\": [%d]}\n",
			k * 100, 1000 + k);
	fclose(f);
	snprintf(ini, sizeof ini, "%s/q.ini", tmpdir);
	if (!(f = fopen(ini, "w")))
		return -1;
	fputs("[trace]\npath = q.jsonl\n[model]\nname = Llama-3-8B\n[cluster]\nnodes = 1\n"
	      "gpus_per_node = 1\ntp = 1\n[scheduler]\nmax_num_seqs = 1\n"
	      /* the engine's service time is the queue's: no front-end time */
	      "frontend_ms = 0\n",
	      f);
	fclose(f);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(tmpdir);
}

/* S: the unloaded run's TTFT, the same for every request. */
static int64_t service_ns(void)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	if (cli_load_config_ex(ini, NULL, 0, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e))
		fail_msg("%s", e.msg);
	sim_results_t r;
	if (sim_run(cfg, NULL, &r, &e))
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	assert_int_equal(r.n_req, 200);
	int64_t s = r.req[0].ttft_ns;
	for (size_t i = 0; i < r.n_req; i++)
		assert_true(r.req[i].status == REQ_COMPLETED && r.req[i].ttft_ns == s);
	sim_results_free(&r);
	assert_true(s > 1000000 && s < 100000000); /* 1 to 100 ms: a real prefill */
	return s;
}

/* `kvsim sweep ARGS...` in this process, stdout and stderr to
 * tmpdir/NAME.out (its text in out, when not NULL); its exit status. */
static int sweep_main_to(const char *name, int argc, char **argv, char *out, size_t cap)
{
	char p[400];
	snprintf(p, sizeof p, "%s/%s.out", tmpdir, name);
	fflush(stdout);
	fflush(stderr);
	FILE *saved_out = stdout, *saved_err = stderr;
	stdout = fopen(p, "w");
	stderr = stdout;
	int rc = out_sweep_main(argc, argv);
	fclose(stdout);
	stdout = saved_out;
	stderr = saved_err;
	if (out) {
		FILE *f = fopen(p, "r");
		size_t n = fread(out, 1, cap - 1, f);
		out[n] = '\0';
		fclose(f);
	}
	return rc;
}

/* `kvsim sweep ini --set slo.ttft_ms=TTFT --capacity RANGE -j J -o tmpdir/NAME` */
static int capacity_sweep(const char *name, double ttft_ms, const char *range, const char *jobs)
{
	char dir[400], slo[64];
	snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
	snprintf(slo, sizeof slo, "slo.ttft_ms=%.9g", ttft_ms);
	char *argv[] = {"sweep", ini, "--set", slo, "--capacity", (char *)range,
			"--capacity-tol", "0.01", "-j", (char *)jobs, "-o", dir,
			"--no-progress", NULL};
	return sweep_main_to(name, 13, argv, NULL, 0);
}

typedef struct cap_row {
	double value, lo, hi;
	int probes, runs_done;
	char verdict[32];
} cap_row_t;

static cap_row_t capacity_row(const char *name)
{
	char p[400];
	snprintf(p, sizeof p, "%s/%s/catalog.sqlite", tmpdir, name);
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT value, lo, hi, probes, verdict, (SELECT "
					    "count(*) FROM runs WHERE status = 'done') FROM "
					    "capacity WHERE key = 'trace.rate_scale'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	cap_row_t r;
	double *v[3] = {&r.value, &r.lo, &r.hi};
	for (int k = 0; k < 3; k++)
		*v[k] = sqlite3_column_type(st, k) == SQLITE_NULL ? NAN : sqlite3_column_double(st, k);
	r.probes = sqlite3_column_int(st, 3);
	snprintf(r.verdict, sizeof r.verdict, "%s", (const char *)sqlite3_column_text(st, 4));
	r.runs_done = sqlite3_column_int(st, 5);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE); /* one search: one row */
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

/* With the TTFT SLO at 1.5 S: at load x <= c every request finds the
 * instance idle (TTFT S). Above, with gap g = 0.1 / x < S, request k
 * (0-based) has TTFT S + k (S - g), which meets 1.5 S while k <= 0.5 S /
 * (S - g); 90% of 200 is k <= 179, so the highest passing load is
 * theta = c * 358 / 357 exactly. The search's bracket must hold it:
 * lo <= theta < hi, hi / lo <= 1.01, so lo is c within 1.3%. Every probe is
 * a done catalog row, and -j 2 finds the same bracket as -j 1. */
static void test_capacity_search_finds_the_queue_s_throughput_limit(void **st)
{
	(void)st;
	int64_t S = service_ns();
	double c = 0.1 / (S / 1e9), theta = c * 358 / 357;
	assert_int_equal(capacity_sweep("j1", 1.5 * S / 1e6, "trace.rate_scale=1:64", "1"), 0);
	cap_row_t r = capacity_row("j1");
	assert_string_equal(r.verdict, "bracketed");
	assert_true(r.value == r.lo);
	if (!(r.lo <= theta * (1 + 1e-6) && r.hi > theta * (1 - 1e-6) && r.hi / r.lo <= 1.01 + 1e-5))
		fail_msg("bracket [%.9g, %.9g) should hold theta = %.9g (c = %.9g)", r.lo, r.hi,
			 theta, c);
	assert_true(fabs(r.lo / c - 1) < 0.013);
	assert_true(r.probes >= 3 && r.probes <= 16);
	assert_int_equal(r.runs_done, r.probes);
	assert_int_equal(capacity_sweep("j2", 1.5 * S / 1e6, "trace.rate_scale=1:64", "2"), 0);
	cap_row_t q = capacity_row("j2");
	assert_true(q.lo == r.lo && q.hi == r.hi && q.probes == r.probes);
}

/* A range wholly above the capacity: even LO misses (lo_fails, after the
 * two end probes, no value). Wholly below: HI still meets it (hi_passes,
 * value HI). */
static void test_capacity_search_says_when_the_range_misses_it(void **st)
{
	(void)st;
	int64_t S = service_ns();
	double c = 0.1 / (S / 1e9), ttft = 1.5 * S / 1e6;
	char range[64];
	snprintf(range, sizeof range, "trace.rate_scale=%.6g:%.6g", 2 * c, 4 * c);
	assert_int_equal(capacity_sweep("above", ttft, range, "2"), 0);
	cap_row_t r = capacity_row("above");
	assert_string_equal(r.verdict, "lo_fails");
	assert_true(isnan(r.value) && r.probes == 2);
	snprintf(range, sizeof range, "trace.rate_scale=%.6g:%.6g", c / 4, c / 2);
	assert_int_equal(capacity_sweep("below", ttft, range, "2"), 0);
	r = capacity_row("below");
	assert_string_equal(r.verdict, "hi_passes");
	assert_true(r.probes == 2 && fabs(r.value / (c / 2) - 1) < 1e-5);
}

/* Usage errors run nothing and create nothing: the searched key on a grid
 * axis too, --dry-run (a search's probes depend on each other), a bad
 * range, an unknown metric. */
static void test_capacity_usage_errors_run_nothing(void **st)
{
	(void)st;
	char dir[400], msg[4096];
	snprintf(dir, sizeof dir, "%s/bad", tmpdir);
	static const char *const cases[][3] = {
	    {"--grid", "trace.rate_scale=1,2",
	     "--capacity trace.rate_scale: also a --grid or --zip axis"},
	    {"--dry-run", NULL, "--dry-run cannot list a capacity search's probes"},
	    {"--capacity-metric", "ttft_p99", "--capacity-metric: not a summary metric"},
	    {"--capacity-probes", "1", "expected an integer in [2, 1000] after '--capacity-probes'"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char *argv[] = {"sweep", ini, "--capacity", "trace.rate_scale=1:8", "-o", dir,
				(char *)cases[k][0], (char *)cases[k][1], NULL};
		int argc = cases[k][1] ? 8 : 7;
		assert_int_equal(sweep_main_to("bad", argc, argv, msg, sizeof msg), 2);
		if (!strstr(msg, cases[k][2]))
			fail_msg("'%s' lacks '%s'", msg, cases[k][2]);
		assert_int_equal(access(dir, F_OK), -1);
	}
	char *argv[] = {"sweep", ini, "--capacity", "trace.rate_scale=8:1", "-o", dir, NULL};
	assert_int_equal(sweep_main_to("bad", 6, argv, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "expected S.K=LO:HI with 0 < LO < HI after --capacity"));
}

TEST_MAIN_FIXTURE(setup, teardown,
		cmocka_unit_test(test_capacity_search_finds_the_queue_s_throughput_limit),
		cmocka_unit_test(test_capacity_search_says_when_the_range_misses_it),
		cmocka_unit_test(test_capacity_usage_errors_run_nothing))

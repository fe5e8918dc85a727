/* Tests for the sweep engine (sim/out/out_sweep.h) with a fake run function:
 * grid parsing and enumeration, point identity, -j independence, resume,
 * failure and crash handling, a SIGKILL of the sweep at any moment, one
 * warning per ignored key for a whole sweep, and the ledger: damaged files
 * and other revisions are re-run, rejected sweeps leave nothing. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/fixtures/cli_fixture.h"

#include "sim/base/cfg.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/out/out_sweep.h"
#include "sim/out/out_exec_int.h"
#include "tests/fixtures/out_fake.h"
#include "tests/fixtures/tmp_fixture.h"
#include "sim/run/sim_schema.h"
#include "traces/tr.h"

static char tmpdir[256];
static cfg_schema_t *schema;

static int setup(void **st)
{
	(void)st;
	schema = fake_schema();
	return tmp_dir_make(tmpdir, sizeof tmpdir, "/tmp/kvsim_sweep_XXXXXX") || !schema ? -1 : 0;
}

static int teardown(void **st)
{
	(void)st;
	cfg_schema_free(schema);
	return tmp_dir_remove(tmpdir);
}

static cfg_t *mkbase(const char *const *sets, size_t n)
{
	cfg_t *c = cfg_new(schema);
	err_t e = {0};
	assert_non_null(c);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(cfg_set(c, sets[i], &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	return c;
}

static out_grid_t *mkgrid(const char *const *axes, size_t n, unsigned seeds)
{
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	assert_non_null(g);
	for (size_t i = 0; i < n; i++) {
		int zip = !strncmp(axes[i], "zip:", 4);
		assert_int_equal(out_grid_add(g, axes[i] + (zip ? 4 : 0), zip, &e), 0);
	}
	assert_int_equal(out_grid_set_seeds(g, seeds, &e), 0);
	return g;
}

static void subdir(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* A sweep as the build of revision rev (NULL: this build) would run it. */
static int sweep_as(const char *dir, const out_grid_t *g, const cfg_t *base, unsigned jobs,
		    const char *rev, int keep_stale, out_sweep_stats_t *st)
{
	out_sweep_opts_t o = {.dir = dir, .jobs = jobs, .progress = 0,
			      .seed_key = "experiment.seed", .run = fake_run, .h5 = {1, 64},
			      .mpi = 0, .keep_stale = keep_stale, .git_rev = rev};
	err_t e = {0};
	int rc = out_sweep_run(g, base, &o, st, &e);
	if (rc)
		print_error("sweep: %s\n", e.msg);
	return rc;
}

static int sweep(const char *dir, const out_grid_t *g, const cfg_t *base, unsigned jobs,
		 out_sweep_stats_t *st)
{
	return sweep_as(dir, g, base, jobs, NULL, 0, st);
}

static void test_grid_parses_lists_and_inclusive_ranges(void **st)
{
	(void)st;
	out_grid_t *g = out_grid_new();
	err_t e = {0};
	assert_int_equal(out_grid_add(g, "fake.rate=0.5:1.5:0.25", 0, &e), 0);
	assert_int_equal(out_grid_points(g), 5);
	assert_int_equal(out_grid_add(g, "fake.n=10:30:10", 0, &e), 0);
	assert_int_equal(out_grid_add(g, "fake.policy=a,b", 0, &e), 0);
	assert_int_equal(out_grid_points(g), 30);
	assert_int_equal(out_grid_set_seeds(g, 3, &e), 0);
	assert_int_equal(out_grid_points(g), 90);
	cfg_t *base = mkbase(NULL, 0);
	out_point_t p;
	/* last point: every axis at its last value, last seed */
	assert_int_equal(out_point_make(g, base, "experiment.seed", 89, &p, &e), 0);
	assert_int_equal(p.n_params, 3);
	assert_string_equal(p.params[0].value, "1.5");
	assert_string_equal(p.params[1].value, "30");
	assert_string_equal(p.params[2].value, "b");
	assert_true(cfg_float(p.cfg, "fake", "rate") == 1.5);
	assert_true(p.seed == out_seed_derive(1, 2));
	out_point_free(&p);
	/* point 1 differs from point 0 only by its seed */
	assert_int_equal(out_point_make(g, base, "experiment.seed", 1, &p, &e), 0);
	assert_string_equal(p.params[0].value, "0.5");
	assert_string_equal(p.params[2].value, "a");
	assert_true(p.seed == out_seed_derive(1, 1));
	out_point_free(&p);
	assert_int_equal(out_point_make(g, base, "experiment.seed", 90, &p, &e), KS_EINPUT);
	static const char *const bad[] = {"fake.rate",      "rate=1,2",      "fake.rate=",
					  "fake.rate=1,,2", "fake.rate=1:0:1", "fake.rate=0:1:0",
					  "fake.n=1,2"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(out_grid_add(g, bad[i], 0, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "already swept"));
	cfg_free(base);
	out_grid_free(g);
}

static void test_zip_axes_advance_together(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.policy=a,b", "zip:fake.rate=1,2,4",
					 "zip:fake.n=10,20,40"};
	out_grid_t *g = mkgrid(ax, 3, 1);
	err_t e = {0};
	assert_int_equal(out_grid_points(g), 6);
	assert_int_equal(out_grid_add(g, "fake.mode=ok,error", 1, &e), KS_EINPUT);
	cfg_t *base = mkbase(NULL, 0);
	for (size_t i = 0; i < 6; i++) {
		out_point_t p;
		assert_int_equal(out_point_make(g, base, "experiment.seed", i, &p, &e), 0);
		assert_int_equal(p.n_params, 3);
		assert_string_equal(p.params[0].key, "fake.policy");
		assert_string_equal(p.params[0].value, i < 3 ? "a" : "b");
		assert_int_equal(cfg_int(p.cfg, "fake", "n"), 10 * cfg_float(p.cfg, "fake", "rate"));
		out_point_free(&p);
	}
	cfg_free(base);
	out_grid_free(g);
}

static void test_seeds_are_distinct_and_seed_zero_is_the_base(void **st)
{
	(void)st;
	assert_true(out_seed_derive(12345, 0) == 12345);
	for (unsigned i = 1; i < 300; i++) {
		assert_true(out_seed_derive(12345, i) < (1ULL << 31));
		for (unsigned j = 0; j < i; j++)
			assert_true(out_seed_derive(12345, i) != out_seed_derive(12345, j));
	}
	assert_true(out_seed_derive(1, 1) != out_seed_derive(2, 1));
}

static void test_point_identity_is_config_plus_seed(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.rate=2"};
	static const char *const sets[] = {"fake.rate=2"};
	out_grid_t *g = mkgrid(ax, 1, 2), *g0 = mkgrid(NULL, 0, 1);
	cfg_t *b1 = mkbase(NULL, 0), *b2 = mkbase(sets, 1);
	out_point_t p, q, r;
	err_t e = {0};
	/* rate 2 from the grid or from the base config: the same point */
	assert_int_equal(out_point_make(g, b1, "experiment.seed", 0, &p, &e), 0);
	assert_int_equal(out_point_make(g0, b2, "experiment.seed", 0, &q, &e), 0);
	assert_string_equal(p.id, q.id);
	assert_string_equal(p.digest, q.digest);
	assert_int_equal(out_point_make(g, b1, "experiment.seed", 1, &r, &e), 0);
	assert_string_not_equal(p.id, r.id);
	assert_int_equal(strlen(p.id), 64);
	assert_non_null(strstr(p.h5_rel, "runs/"));
	out_point_free(&p);
	out_point_free(&q);
	out_point_free(&r);
	/* an unknown swept key is an input error naming the axis */
	out_grid_t *gb = out_grid_new();
	assert_int_equal(out_grid_add(gb, "fake.nope=1", 0, &e), 0);
	assert_int_equal(out_point_make(gb, b1, "experiment.seed", 0, &p, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "fake.nope"));
	/* several seeds need a seed key */
	assert_int_equal(out_point_make(g, b1, "experiment.noseed", 0, &p, &e), KS_EINPUT);
	out_grid_free(gb);
	out_grid_free(g);
	out_grid_free(g0);
	cfg_free(b1);
	cfg_free(b2);
}

/* id -> status, attempts, error and metrics, sorted by id, as one string
 * per run, so two catalogs compare with strcmp. */
static char *catalog_dump(const char *dir, size_t *nrows)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c,
					    "id,status,seed,fake.rate,fake.policy,ttft_mean_ns,"
					    "ttft_p99_ns,throughput_rps,requests,policy_score,h5_path",
					    NULL, "id", &t, &e),
			 0);
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);
	for (size_t i = 0; i < t.nrows * t.ncols; i++) {
		const char *v = t.cells[i] ? t.cells[i] : "NULL";
		if (len + strlen(v) + 2 >= cap)
			out = realloc(out, cap *= 2);
		len += (size_t)sprintf(out + len, "%s%c", v, (i + 1) % t.ncols ? '|' : '\n');
	}
	*nrows = t.nrows;
	out_table_free(&t);
	out_catalog_close(c);
	return out;
}

static void test_results_do_not_depend_on_worker_count(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.policy=a,b,c", "fake.rate=1:2:1"};
	out_grid_t *g = mkgrid(ax, 2, 2);
	cfg_t *base = mkbase(NULL, 0);
	char d1[300], d3[300];
	subdir(d1, sizeof d1, "j1");
	subdir(d3, sizeof d3, "j3");
	out_sweep_stats_t s1, s3;
	assert_int_equal(sweep(d1, g, base, 1, &s1), 0);
	assert_int_equal(sweep(d3, g, base, 3, &s3), 0);
	assert_int_equal(s1.total, 12);
	assert_int_equal(s1.done, 12);
	assert_int_equal(s3.done, 12);
	size_t n1, n3;
	char *a = catalog_dump(d1, &n1), *b = catalog_dump(d3, &n3);
	assert_int_equal(n1, 12);
	assert_string_equal(a, b);
	/* and the HDF5 tables are the same too */
	out_point_t p;
	err_t e = {0};
	assert_int_equal(out_point_make(g, base, "experiment.seed", 9, &p, &e), 0);
	char f1[700], f3[700];
	snprintf(f1, sizeof f1, "%s/%s", d1, p.h5_rel);
	snprintf(f3, sizeof f3, "%s/%s", d3, p.h5_rel);
	sim_results_t r1, r3;
	assert_int_equal(out_hdf5_read(f1, &r1, &e), 0);
	assert_int_equal(out_hdf5_read(f3, &r3, &e), 0);
	assert_int_equal(r1.n_req, 50);
	assert_memory_equal(r1.req, r3.req, r1.n_req * sizeof *r1.req);
	assert_true(r1.seed == p.seed);
	assert_non_null(strstr(r1.config_text, "[fake]"));
	sim_results_free(&r1);
	sim_results_free(&r3);
	out_point_free(&p);
	free(a);
	free(b);
	cfg_free(base);
	out_grid_free(g);
}

static void test_rerun_skips_done_points_and_runs_only_new_ones(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.rate=1,2"};
	static const char *const ax2[] = {"fake.rate=1,2,3"};
	out_grid_t *g = mkgrid(ax, 1, 2), *g2 = mkgrid(ax2, 1, 2);
	cfg_t *base = mkbase(NULL, 0);
	char d[300];
	subdir(d, sizeof d, "resume");
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.done, 4);
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.done, 0);
	assert_int_equal(s.skipped, 4);
	assert_int_equal(sweep(d, g2, base, 2, &s), 0);
	assert_int_equal(s.total, 6);
	assert_int_equal(s.skipped, 4);
	assert_int_equal(s.done, 2);
	cfg_free(base);
	out_grid_free(g);
	out_grid_free(g2);
}

static const char *cell(const out_table_t *t, size_t r, const char *col)
{
	for (size_t k = 0; k < t->ncols; k++)
		if (!strcmp(t->names[k], col))
			return t->cells[r * t->ncols + k];
	return NULL;
}

static void test_errors_fail_at_once_and_crashes_are_retried_once(void **st)
{
	(void)st;
	char d[300], marker[300], setm[400];
	subdir(d, sizeof d, "faults");
	subdir(marker, sizeof marker, "markers");
	assert_int_equal(mkdir(marker, 0777), 0);
	snprintf(setm, sizeof setm, "fake.marker=%s", marker);
	const char *sets[] = {setm};
	static const char *const ax[] = {"fake.mode=ok,error,crash,crash_once"};
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(sets, 1);
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.total, 4);
	assert_int_equal(s.done, 2);   /* ok, crash_once */
	assert_int_equal(s.failed, 2); /* error, crash */
	assert_int_equal(s.retried, 2);
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	assert_int_equal(out_catalog_open(d, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "fake.mode,status,attempts,error", NULL,
					    "fake.mode", &t, &e),
			 0);
	assert_int_equal(t.nrows, 4);
	/* sorted: crash, crash_once, error, ok */
	assert_string_equal(cell(&t, 0, "status"), "failed");
	assert_string_equal(cell(&t, 0, "attempts"), "2");
	assert_non_null(strstr(cell(&t, 0, "error"), "signal 9"));
	assert_string_equal(cell(&t, 1, "status"), "done");
	assert_string_equal(cell(&t, 1, "attempts"), "2");
	assert_string_equal(cell(&t, 2, "status"), "failed");
	assert_string_equal(cell(&t, 2, "attempts"), "1");
	assert_non_null(strstr(cell(&t, 2, "error"), "configured to fail"));
	assert_string_equal(cell(&t, 3, "status"), "done");
	out_table_free(&t);
	out_catalog_close(c);
	/* a rerun tries the failed points again and keeps the done ones */
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.skipped, 2);
	assert_int_equal(s.failed, 2);
	cfg_free(base);
	out_grid_free(g);
}

/* After a kill: the catalog opens, every done row's HDF5 file is complete
 * and holds the catalog's metrics, and every final-named file reads. */
static size_t check_consistent(const char *dir)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	if (access(p, F_OK) != 0)
		return 0; /* killed before the catalog was created */
	if (out_catalog_open(dir, 1, &c, &e)) {
		/* killed while creating the catalog: no tables, no runs */
		if (!strstr(e.msg, "no runs recorded yet"))
			fail_msg("%s", e.msg);
		return 0;
	}
	assert_int_equal(out_catalog_select(c, "all", NULL, NULL, &t, &e), 0);
	size_t done = 0;
	for (size_t r = 0; r < t.nrows; r++) {
		if (strcmp(cell(&t, r, "status"), "done"))
			continue;
		done++;
		snprintf(p, sizeof p, "%s/%s", dir, cell(&t, r, "h5_path"));
		sim_results_t res;
		assert_int_equal(out_hdf5_read(p, &res, &e), 0);
		assert_true(sim_results_get(&res, "ttft_p99_ns") ==
			    strtod(cell(&t, r, "ttft_p99_ns"), NULL));
		assert_true(sim_results_get(&res, "policy_score") ==
			    strtod(cell(&t, r, "policy_score"), NULL));
		sim_results_free(&res);
	}
	out_table_free(&t);
	out_catalog_close(c);
	snprintf(p, sizeof p, "%s/runs", dir);
	DIR *dd = opendir(p);
	struct dirent *de;
	while (dd && (de = readdir(dd))) {
		size_t n = strlen(de->d_name);
		if (n < 4 || strcmp(de->d_name + n - 3, ".h5"))
			continue;
		char f[4400];
		snprintf(f, sizeof f, "%s/%s", p, de->d_name);
		sim_results_t res;
		assert_int_equal(out_hdf5_read(f, &res, &e), 0);
		sim_results_free(&res);
	}
	if (dd)
		closedir(dd);
	return done;
}

static int count_status(const char *dir, const char *status)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	char w[64];
	snprintf(w, sizeof w, "status = '%s'", status);
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	if (access(p, F_OK) != 0 || out_catalog_open(dir, 1, &c, &e))
		return -1;
	int n = out_catalog_select(c, "id", w, NULL, &t, &e) ? -1 : (int)t.nrows;
	if (n >= 0)
		out_table_free(&t);
	out_catalog_close(c);
	return n;
}

static pid_t start_sweep(const char *dir, const out_grid_t *g, const cfg_t *base,
			 unsigned jobs)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		out_sweep_stats_t s;
		_exit(sweep(dir, g, base, jobs, &s) ? 1 : 0);
	}
	return pid;
}

static void kill_and_reap(pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* Opens the gate, resumes the sweep in d (which had all but in_flight
 * points done) and checks its catalog against a clean sweep into dref. */
static void check_resume_is_clean(const char *d, const char *dref, const char *gate,
				  const out_grid_t *g, const cfg_t *base, size_t total,
				  size_t in_flight)
{
	FILE *f = fopen(gate, "w");
	assert_non_null(f);
	fclose(f);
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.skipped, total - in_flight);
	assert_int_equal(s.done, in_flight);
	assert_int_equal(sweep(dref, g, base, 4, &s), 0);
	size_t n1, n2;
	char *a = catalog_dump(d, &n1), *b = catalog_dump(dref, &n2);
	assert_int_equal(n1, total);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

static void test_sigkill_loses_only_points_in_flight(void **st)
{
	(void)st;
	char d[300], gate[300], setg[400], dref[300];
	subdir(d, sizeof d, "killed");
	subdir(dref, sizeof dref, "reference");
	subdir(gate, sizeof gate, "gate");
	snprintf(setg, sizeof setg, "fake.gate=%s", gate);
	const char *sets[] = {setg, "fake.gate_rate=3", "fake.n=300"};
	static const char *const ax[] = {"fake.policy=a,b", "fake.rate=1:4:1"};
	out_grid_t *g = mkgrid(ax, 2, 2);
	cfg_t *base = mkbase(sets, 3);
	const size_t total = 16;
	/* 1. Slow points (policy a, rate 3, both seeds wait on the gate): kill
	 *    the sweep while they are in flight and the others are done. */
	pid_t pid = start_sweep(d, g, base, 3);
	for (int i = 0; i < 30000 && count_status(d, "done") < (int)total - 2; i++)
		usleep(2000);
	assert_int_equal(count_status(d, "done"), (int)total - 2);
	kill_and_reap(pid);
	assert_int_equal(check_consistent(d), total - 2);
	assert_int_equal(count_status(d, "running"), 2); /* the two gated points */
	/* 2. Kills at arbitrary moments of a rerun. */
	FILE *f = fopen(gate, "w");
	assert_non_null(f);
	fclose(f);
	unsigned delays[] = {0, 2, 8, 30};
	for (size_t k = 0; k < sizeof delays / sizeof delays[0]; k++) {
		char dk[300];
		snprintf(dk, sizeof dk, "%s/any%zu", tmpdir, k);
		pid = start_sweep(dk, g, base, 3);
		usleep(delays[k] * 1000);
		kill_and_reap(pid);
		size_t before = check_consistent(dk);
		out_sweep_stats_t s;
		assert_int_equal(sweep(dk, g, base, 2, &s), 0);
		assert_int_equal(s.skipped, before);
		assert_int_equal(s.done + s.skipped, total);
		assert_int_equal(check_consistent(dk), total);
		/* no stale temporaries once a sweep has run to the end */
		char cmd[600];
		snprintf(cmd, sizeof cmd, "ls %s/runs | grep -q tmp", dk);
		assert_int_not_equal(system(cmd), 0);
	}
	/* 3. The rerun of the gated sweep completes, equal to a clean sweep. */
	check_resume_is_clean(d, dref, gate, g, base, total, 2);
	cfg_free(base);
	out_grid_free(g);
}

/* The pids of process pid's children (its running workers). */
static size_t child_pids(pid_t pid, pid_t *out, size_t cap)
{
	char p[128];
	snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(p, "r");
	size_t n = 0;
	int v;
	while (f && n < cap && fscanf(f, "%d", &v) == 1)
		out[n++] = (pid_t)v;
	if (f)
		fclose(f);
	return n;
}

static void test_sigint_and_sigterm_end_the_sweep_marking_points_interrupted(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.policy=a,b", "fake.rate=1:4:1"};
	out_grid_t *g = mkgrid(ax, 2, 2);
	const size_t total = 16;
	for (int k = 0; k < 2; k++) {
		int sig = k ? SIGTERM : SIGINT;
		char d[300], dref[300], gate[300], setg[400], msg[300];
		snprintf(d, sizeof d, "%s/sig%d", tmpdir, k);
		snprintf(dref, sizeof dref, "%s/sig_reference%d", tmpdir, k);
		snprintf(gate, sizeof gate, "%s/sig_gate%d", tmpdir, k);
		snprintf(msg, sizeof msg, "%s/sig_msg%d", tmpdir, k);
		snprintf(setg, sizeof setg, "fake.gate=%s", gate);
		const char *sets[] = {setg, "fake.gate_rate=3", "fake.n=300"};
		cfg_t *base = mkbase(sets, 3);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			setpgid(0, 0); /* a group of its own, as a shell job has */
			out_sweep_opts_t o = {.dir = d, .jobs = 3, .progress = 0,
					      .seed_key = "experiment.seed", .run = fake_run,
					      .h5 = {1, 64}, .mpi = 0};
			out_sweep_stats_t s;
			err_t e = {0};
			int rc = out_sweep_run(g, base, &o, &s, &e);
			FILE *f = fopen(msg, "w");
			if (f) {
				fprintf(f, "%s|%d|%zu", e.msg, s.interrupted, s.interrupted_points);
				fclose(f);
			}
			_exit(err_exit_status(rc));
		}
		setpgid(pid, pid);
		/* the two gated points in flight, every other one done */
		for (int i = 0; i < 30000 && (count_status(d, "done") < (int)total - 2 ||
					       count_status(d, "running") < 2);
		     i++)
			usleep(2000);
		assert_int_equal(count_status(d, "running"), 2);
		pid_t workers[8];
		size_t nw = child_pids(pid, workers, 8);
		assert_int_equal(nw, 2);
		/* Ctrl-C reaches the whole job; kill(1) only the sweep */
		assert_int_equal(kill(sig == SIGINT ? -pid : pid, sig), 0);
		int status = 0;
		pid_t w = 0;
		for (int i = 0; i < 60000 && !(w = waitpid(pid, &status, WNOHANG)); i++)
			usleep(2000); /* a watchdog of two minutes, against a hang */
		if (!w)
			kill(pid, SIGKILL);
		assert_int_equal(w, pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 1);
		FILE *f = fopen(msg, "r");
		assert_non_null(f);
		char text[1200] = "";
		assert_non_null(fgets(text, sizeof text, f));
		fclose(f);
		assert_non_null(strstr(text, sig == SIGINT ? "interrupted by SIGINT"
							   : "interrupted by SIGTERM"));
		assert_non_null(strstr(text, "2 point(s) in flight marked interrupted"));
		char want[32];
		snprintf(want, sizeof want, "|%d|2", sig);
		assert_non_null(strstr(text, want));
		for (size_t i = 0; i < nw; i++) /* killed and reaped */
			assert_true(kill(workers[i], 0) < 0 && errno == ESRCH);
		assert_int_equal(count_status(d, "running"), 0);
		assert_int_equal(count_status(d, "interrupted"), 2);
		assert_int_equal(check_consistent(d), total - 2);
		char cmd[600]; /* no temporaries, and a file for each done row only */
		snprintf(cmd, sizeof cmd, "ls %s/runs | grep -q tmp", d);
		assert_int_not_equal(system(cmd), 0);
		snprintf(cmd, sizeof cmd, "test $(ls %s/runs | wc -l) -eq %zu", d, total - 2);
		assert_int_equal(system(cmd), 0);
		/* the resumed sweep ends as a clean one would have */
		check_resume_is_clean(d, dref, gate, g, base, total, 2);
		assert_int_equal(count_status(d, "done"), (int)total);
		out_catalog_t *c;
		out_table_t t;
		err_t e = {0};
		assert_int_equal(out_catalog_open(d, 1, &c, &e), 0);
		assert_int_equal(out_catalog_select(c, "id", "attempts != 1 OR error IS NOT NULL",
						    NULL, &t, &e),
				 0);
		assert_int_equal(t.nrows, 0);
		out_table_free(&t);
		out_catalog_close(c);
		cfg_free(base);
	}
	out_grid_free(g);
}

static size_t check_no_orphans(const char *dir);

/* A second sweep into a directory another sweep is writing waits for it
 * (a Ctrl-C while it waits gives up, touching nothing), then runs only
 * what the first did not. */
static void test_second_sweep_on_same_directory_waits_for_the_first(void **st)
{
	(void)st;
	char d[300], gate[300], setg[400], lock[400];
	subdir(d, sizeof d, "locked");
	subdir(gate, sizeof gate, "gate2");
	snprintf(setg, sizeof setg, "fake.gate=%s", gate);
	snprintf(lock, sizeof lock, "%s/.sweep.lock", d);
	const char *sets[] = {setg, "fake.gate_rate=1"};
	static const char *const ax1[] = {"fake.rate=1"}, *const ax2[] = {"fake.rate=1,2"};
	out_grid_t *g1 = mkgrid(ax1, 1, 1), *g2 = mkgrid(ax2, 1, 1);
	cfg_t *base = mkbase(sets, 2);
	pid_t first = start_sweep(d, g1, base, 1);
	for (int i = 0; i < 30000 && count_status(d, "running") < 1; i++)
		usleep(2000);
	assert_int_equal(count_status(d, "running"), 1);
	pid_t second = start_sweep(d, g2, base, 1), gives_up = start_sweep(d, g2, base, 1);
	usleep(300000);
	int status;
	assert_int_equal(waitpid(second, &status, WNOHANG), 0); /* still waiting */
	assert_int_equal(kill(gives_up, SIGINT), 0);
	assert_int_equal(waitpid(gives_up, &status, 0), gives_up);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_int_equal(access(lock, F_OK), 0); /* the first one's lock stays */
	assert_int_equal(count_status(d, "done") + count_status(d, "running"), 1);
	FILE *f = fopen(gate, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(waitpid(first, &status, 0), first);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(waitpid(second, &status, 0), second);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(check_no_orphans(d), 2);
	cfg_free(base);
	out_grid_free(g1);
	out_grid_free(g2);
}

/* Every run row's file exists and every file under runs/ has a row: no
 * orphan on either side; returns the rows, none left 'running'. */
static size_t check_no_orphans(const char *dir)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "id,status,h5_path", NULL, NULL, &t, &e), 0);
	char p[4400];
	for (size_t r = 0; r < t.nrows; r++) {
		assert_string_equal(cell(&t, r, "status"), "done");
		snprintf(p, sizeof p, "%s/%s", dir, cell(&t, r, "h5_path"));
		assert_int_equal(access(p, R_OK), 0);
	}
	snprintf(p, sizeof p, "%s/runs", dir);
	DIR *dd = opendir(p);
	assert_non_null(dd);
	struct dirent *de;
	size_t files = 0;
	while ((de = readdir(dd)))
		files += de->d_name[0] != '.';
	closedir(dd);
	assert_int_equal(files, t.nrows);
	size_t n = t.nrows;
	out_table_free(&t);
	out_catalog_close(c);
	return n;
}

/* Forks a writer that waits until the parent closes the barrier, so all of
 * them start on the fresh directory at once: a sweep (g) or, g NULL, one
 * recorded run of seed. Exits 0 ok, 1 else. */
static pid_t start_writer(int barrier[2], const char *dir, const out_grid_t *g,
			  const cfg_t *base, uint64_t seed)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid)
		return pid;
	close(barrier[1]);
	char ch;
	while (read(barrier[0], &ch, 1) > 0)
		;
	out_sweep_stats_t s;
	err_t e = {0};
	if (g) {
		out_sweep_opts_t o = {.dir = dir, .jobs = 2, .progress = 0,
				      .seed_key = "experiment.seed", .run = fake_run,
				      .h5 = {1, 64}, .mpi = 0};
		int rc = out_sweep_run(g, base, &o, &s, &e);
		if (rc)
			fprintf(stderr, "sweep: %s\n", e.msg);
		_exit(rc ? 1 : 0);
	}
	cfg_t *c = cfg_clone(base);
	char set[64];
	snprintf(set, sizeof set, "experiment.seed=%llu", (unsigned long long)seed);
	sim_results_t r;
	if (cfg_set(c, set, &e) || cfg_finalize(c, &e) || fake_run(c, &r, &e, NULL))
		_exit(1);
	r.seed = seed;
	int rc = out_run_record(dir, c, &r, NULL, 0, NULL, NULL, &e);
	if (rc)
		fprintf(stderr, "record: %s\n", e.msg);
	_exit(rc ? 1 : 0);
}

/* A sweep cleaning its dead workers' temporaries waits for a run recorded
 * beside it (which holds runs/.write.lock shared while it writes): the
 * temporary being written survives until the writer lets go, then a stale
 * one goes. Without the lock the child removes it at once. */
static void test_cleaning_temporaries_waits_for_a_recording_writer(void **st)
{
	(void)st;
	char runs[300], tmp[340];
	subdir(runs, sizeof runs, "clean_wait");
	assert_int_equal(mkdir(runs, 0777), 0);
	snprintf(tmp, sizeof tmp, "%s/abc.h5.tmp", runs);
	int lk = out_runs_lock(runs, 0);
	assert_true(lk >= 0);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fclose(f);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(lk); /* the parent's lock, not this process's */
		out_exec_clean_stale_tmp(runs);
		_exit(0);
	}
	usleep(300 * 1000); /* the child is waiting on the lock by now */
	assert_int_equal(access(tmp, F_OK), 0);
	out_runs_unlock(lk);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_concurrent_writers_into_a_fresh_directory_all_finish(void **st)
{
	(void)st;
	static const char *const ax1[] = {"fake.rate=1:6:1"};
	static const char *const ax2[] = {"fake.policy=b,c", "fake.rate=1,2"};
	out_grid_t *g1 = mkgrid(ax1, 1, 1), *g2 = mkgrid(ax2, 2, 1);
	cfg_t *base = mkbase(NULL, 0);
	for (int round = 0; round < 3; round++) {
		char d[300];
		snprintf(d, sizeof d, "%s/fresh%d", tmpdir, round);
		int barrier[2];
		assert_int_equal(pipe(barrier), 0);
		/* two sweeps and four recorded runs, all adding the catalog's
		 * columns to a catalog none of them has seen yet */
		pid_t pid[6];
		size_t n = 0;
		pid[n++] = start_writer(barrier, d, g1, base, 0);
		pid[n++] = start_writer(barrier, d, g2, base, 0);
		for (uint64_t seed = 100; seed < 104; seed++)
			pid[n++] = start_writer(barrier, d, NULL, base, seed);
		close(barrier[0]);
		close(barrier[1]);
		for (size_t i = 0; i < n; i++) {
			int status;
			assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), 0);
		}
		/* both grids complete, nothing orphaned on the way */
		assert_int_equal(check_no_orphans(d), 6 + 4 + 4);
		out_sweep_stats_t s;
		assert_int_equal(sweep(d, g1, base, 2, &s), 0);
		assert_int_equal(s.skipped, 6);
		assert_int_equal(sweep(d, g2, base, 2, &s), 0);
		assert_int_equal(s.skipped, 4);
	}
	cfg_free(base);
	out_grid_free(g1);
	out_grid_free(g2);
}

static void test_recorded_single_run_is_a_done_point_for_sweeps(void **st)
{
	(void)st;
	static const char *const sets[] = {"fake.rate=2"};
	static const char *const ax[] = {"fake.rate=1,2"};
	cfg_t *one = mkbase(sets, 1), *base = mkbase(NULL, 0);
	out_grid_t *g = mkgrid(ax, 1, 1);
	char d[300], id[65], f[700];
	subdir(d, sizeof d, "recorded");
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(fake_run(one, &r, &e, NULL), 0);
	r.seed = 1; /* what sim_run reports: the config's seed */
	out_param_t p[] = {{"fake.rate", "2"}};
	assert_int_equal(out_run_record(d, one, &r, p, 1, NULL, id, &e), 0);
	snprintf(f, sizeof f, "%s/runs/%.16s.h5", d, id);
	assert_int_equal(access(f, R_OK), 0);
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 1, &s), 0);
	assert_int_equal(s.skipped, 1);
	assert_int_equal(s.done, 1);
	sim_results_free(&r);
	out_grid_free(g);
	cfg_free(one);
	cfg_free(base);
}

/* `kvsim sweep ARGS...` in this process: its exit status, stdout and
 * stderr. */
static int sweep_main_capture(char **out, char **err, int argc, char **argv)
{
	static char ob[1 << 15], eb[8192];
	char errp[320], outp[320];
	snprintf(errp, sizeof errp, "%s/main.err", tmpdir);
	snprintf(outp, sizeof outp, "%s/main.out", tmpdir);
	fflush(stdout);
	fflush(stderr);
	int o = dup(1), e = dup(2);
	FILE *fo = fopen(outp, "w"), *fe = fopen(errp, "w");
	assert_non_null(fo);
	assert_non_null(fe);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	int rc = out_sweep_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(o, 1);
	dup2(e, 2);
	close(o);
	close(e);
	fclose(fo);
	fclose(fe);
	char *bufs[2] = {ob, eb};
	const char *paths[2] = {outp, errp};
	size_t caps[2] = {sizeof ob, sizeof eb};
	for (int k = 0; k < 2; k++) {
		FILE *f = fopen(paths[k], "r");
		size_t n = fread(bufs[k], 1, caps[k] - 1, f);
		bufs[k][n] = '\0';
		fclose(f);
	}
	*out = ob;
	*err = eb;
	return rc;
}

/* `kvsim sweep ARGS... --dry-run` in this process, as MPI rank `rank`
 * (NULL: none); returns its stderr. */
static char *sweep_main_stderr(const char *rank)
{
	char d[300];
	subdir(d, sizeof d, "cli");
	char a0[] = "sweep", a1[] = "--set", a2[] = "policy.routing.cache_threshold=0.7",
	     a3[] = "--grid", a4[] = "policy.routing.name=least_load,cache_aware", a5[] = "--seeds",
	     a6[] = "2", a7[] = "--dry-run", a8[] = "-o";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, d, NULL};
	if (rank)
		setenv("OMPI_COMM_WORLD_RANK", rank, 1);
	char *out, *err;
	int rc = sweep_main_capture(&out, &err, 10, argv);
	unsetenv("OMPI_COMM_WORLD_RANK");
	assert_int_equal(rc, 0);
	return err;
}

/* A parameter of one of the swept routers: one warning for the whole sweep
 * (4 points), none from MPI ranks other than 0. */
static void test_sweep_over_policy_names_warns_once(void **st)
{
	(void)st;
	assert_string_equal(sweep_main_stderr(NULL),
			    "kvsim: warning: --set: [policy.routing] cache_threshold: ignored: "
			    "parameter of 'cache_aware', but name = least_load\n");
	assert_string_equal(sweep_main_stderr("3"), "");
	assert_true(strlen(sweep_main_stderr("0")) > 0);
}

/* An axis some points ignore (a predictor where the replication policy
 * asks for no forecast): named once for the whole sweep, its seeds and
 * points included, and every point still runs and keeps its row. */
static void test_sweep_names_an_axis_without_effect_once(void **st)
{
	(void)st;
	char d[300];
	subdir(d, sizeof d, "inert_axis");
	char a0[] = "sweep", a1[] = "--set", a2[] = "trace.gen=poisson", a3[] = "--set",
	     a4[] = "trace.duration_s=1", a5[] = "--grid", a6[] = "policy.replication.name=none,speculative",
	     a7[] = "--grid", a8[] = "policy.predictor.name=holt,hawkes", a9[] = "--seeds",
	     a10[] = "2", a11[] = "-o";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, d, NULL};
	char *out, *err;
	assert_int_equal(sweep_main_capture(&out, &err, 13, argv), 0);
	const char *w = strstr(err, "warning: --grid policy.predictor.name: on 2 of 4 points (the "
	                            "first: policy.predictor.name = holt): no effect: it acts only "
	                            "when policy.replication.name != none|reactive_hotspot|full|"
	                            "early_rdma or policy.replication.name = early_rdma and "
	                            "policy.replication.early_trigger = forecast (here "
	                            "policy.replication.name = none); otherwise select a "
	                            "replication policy that forecasts");
	if (!w)
		fail_msg("stderr:\n%s", err);
	assert_non_null(strstr(w, "; they still run, each with its own row\n"));
	assert_null(strstr(w + 1, "warning")); /* once, and nothing per point */
	assert_null(strstr(err, "policy.replication.name: on"));
	assert_non_null(strstr(out, "sweep: 8 points: 8 run, 0 already done, 0 failed"));
}

/* ---- the ledger: files and revisions decide what a resume re-runs ------ */

/* DIR/runs/ID.h5 of point i. */
static void point_file(const out_grid_t *g, const cfg_t *base, const char *dir, size_t i,
		       char *buf, size_t cap, char id[65])
{
	out_point_t p;
	err_t e = {0};
	assert_int_equal(out_point_make(g, base, "experiment.seed", i, &p, &e), 0);
	snprintf(buf, cap, "%s/%s", dir, p.h5_rel);
	if (id)
		memcpy(id, p.id, 65);
	out_point_free(&p);
}

static void truncate_half(const char *path)
{
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(truncate(path, sb.st_size / 2), 0);
}

/* Flips one byte in the middle: same size, another digest. */
static void corrupt_byte(const char *path)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long mid = ftell(f) / 2;
	assert_int_equal(fseek(f, mid, SEEK_SET), 0);
	int ch = fgetc(f);
	assert_int_equal(fseek(f, mid, SEEK_SET), 0);
	fputc(ch ^ 0x5a, f);
	fclose(f);
}

static void sql(const char *dir, const char *stmt)
{
	char p[400];
	sqlite3 *db;
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	char *msg = NULL;
	if (sqlite3_exec(db, stmt, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", stmt, msg);
	sqlite3_close(db);
}

/* One character per point, in point order, from column col of its row. */
static void column_by_point(const out_grid_t *g, const cfg_t *base, const char *dir,
			    const char *col, char *out)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	size_t n = out_grid_points(g);
	char cols[64];
	snprintf(cols, sizeof cols, "id,%s", col);
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, cols, NULL, NULL, &t, &e), 0);
	assert_int_equal(t.nrows, n);
	for (size_t i = 0; i < n; i++) {
		char path[700], id[65];
		point_file(g, base, dir, i, path, sizeof path, id);
		out[i] = '?';
		for (size_t r = 0; r < t.nrows; r++)
			if (!strcmp(t.cells[r * 2], id))
				out[i] = t.cells[r * 2 + 1] ? t.cells[r * 2 + 1][0] : '-';
	}
	out[n] = '\0';
	out_table_free(&t);
	out_catalog_close(c);
}

/* Every done row's file still has the size and digest the row records. */
static void check_ledger(const char *dir)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "h5_path,h5_size,h5_sha256", "status = 'done'",
					    NULL, &t, &e),
			 0);
	for (size_t r = 0; r < t.nrows; r++) {
		char p[700], hex[65];
		uint64_t size;
		snprintf(p, sizeof p, "%s/%s", dir, t.cells[r * 3]);
		assert_int_equal(out_file_sha256(p, &size, hex, &e), 0);
		assert_true(size == strtoull(t.cells[r * 3 + 1], NULL, 10));
		assert_string_equal(hex, t.cells[r * 3 + 2]);
	}
	out_table_free(&t);
	out_catalog_close(c);
}

/* Delete, truncate and corrupt run files and change a recorded revision:
 * the resume re-runs exactly those points (attempts go up by one), under
 * -j 2; a build of another revision re-runs everything unless keep_stale,
 * which keeps the intact points, marks them stale and still re-runs a
 * damaged one. */
static void test_resume_reruns_exactly_the_points_whose_file_or_revision_changed(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.rate=1:6:1"};
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(NULL, 0);
	char d[300], f[6][700], id3[65], stmt[300], col[16];
	subdir(d, sizeof d, "ledger");
	for (size_t i = 0; i < 6; i++)
		point_file(g, base, d, i, f[i], sizeof f[i], i == 3 ? id3 : NULL);
	out_sweep_stats_t s;
	assert_int_equal(sweep_as(d, g, base, 2, "revA", 0, &s), 0);
	assert_int_equal(s.done, 6);
	assert_int_equal(sweep_as(d, g, base, 2, "revA", 0, &s), 0);
	assert_int_equal(s.skipped, 6);
	assert_int_equal(s.done, 0);
	check_ledger(d);
	column_by_point(g, base, d, "git_rev", col);
	assert_string_equal(col, "rrrrrr");

	/* 0 deleted, 1 truncated, 2 one byte changed, 3 recorded by revB */
	assert_int_equal(unlink(f[0]), 0);
	truncate_half(f[1]);
	corrupt_byte(f[2]);
	snprintf(stmt, sizeof stmt, "UPDATE runs SET git_rev = 'revB' WHERE id = '%s'", id3);
	sql(d, stmt);
	assert_int_equal(sweep_as(d, g, base, 2, "revA", 0, &s), 0);
	assert_int_equal(s.total, 6);
	assert_int_equal(s.done, 4);
	assert_int_equal(s.skipped, 2);
	assert_int_equal(s.rerun_missing, 1);
	assert_int_equal(s.rerun_damaged, 2);
	assert_int_equal(s.rerun_stale, 1);
	assert_int_equal(s.kept_stale, 0);
	column_by_point(g, base, d, "attempts", col);
	assert_string_equal(col, "222211");
	check_ledger(d);
	assert_int_equal(check_consistent(d), 6);

	/* revB with keep_stale: the intact five are kept and marked, the one
	 * truncated meanwhile runs again */
	truncate_half(f[4]);
	assert_int_equal(sweep_as(d, g, base, 2, "revB", 1, &s), 0);
	assert_int_equal(s.done, 1);
	assert_int_equal(s.skipped, 5);
	assert_int_equal(s.kept_stale, 5);
	assert_int_equal(s.rerun_damaged, 1);
	column_by_point(g, base, d, "attempts", col);
	assert_string_equal(col, "222221");
	column_by_point(g, base, d, "stale", col);
	assert_string_equal(col, "111101");
	/* revB without keep_stale: what revA made runs again */
	assert_int_equal(sweep_as(d, g, base, 2, "revB", 0, &s), 0);
	assert_int_equal(s.done, 5);
	assert_int_equal(s.rerun_stale, 5);
	assert_int_equal(s.skipped, 1);
	column_by_point(g, base, d, "attempts", col);
	assert_string_equal(col, "333322");
	column_by_point(g, base, d, "stale", col);
	assert_string_equal(col, "000000");
	/* and then it is all revB's: nothing to do */
	assert_int_equal(sweep_as(d, g, base, 1, "revB", 0, &s), 0);
	assert_int_equal(s.skipped, 6);
	check_ledger(d);
	cfg_free(base);
	out_grid_free(g);
}

/* Rows of a catalog from before the ledger: re-run by default (their
 * revision is unknown), and under keep_stale too: with no digest of their
 * file recorded, nothing says the file is the one the run wrote. */
static void test_rows_without_a_revision_or_file_digest_run_again(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.rate=1,2"};
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(NULL, 0);
	char d[300], col[8];
	subdir(d, sizeof d, "oldcat");
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 1, &s), 0);
	/* what the catalog looked like before: no ledger columns */
	sql(d, "ALTER TABLE runs DROP COLUMN h5_size; ALTER TABLE runs DROP COLUMN h5_sha256;"
	       "ALTER TABLE runs DROP COLUMN git_rev; ALTER TABLE runs DROP COLUMN git_dirty;"
	       "ALTER TABLE runs DROP COLUMN stale;");
	assert_int_equal(sweep_as(d, g, base, 2, NULL, 1, &s), 0);
	assert_int_equal(s.kept_stale, 0);
	assert_int_equal(s.rerun_unverified, 2);
	assert_int_equal(s.done, 2);
	column_by_point(g, base, d, "stale", col);
	assert_string_equal(col, "00");
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.skipped, 2);
	assert_int_equal(s.done, 0);
	column_by_point(g, base, d, "stale", col);
	assert_string_equal(col, "00");
	column_by_point(g, base, d, "git_rev", col);
	assert_int_equal(col[0], out_build_rev()[0]);
	check_ledger(d);
	cfg_free(base);
	out_grid_free(g);
}

/* A sweep rejected before its first point leaves nothing it created: not
 * the directory (nor its missing parents), the lock, runs/ or the catalog;
 * in a directory that existed it removes only what it added. */
static void test_rejected_sweep_leaves_nothing_it_created(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.n=10,-5"}; /* -5: out of range */
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(NULL, 0);
	char d[320], top[300], p[400];
	out_sweep_stats_t s;
	out_sweep_opts_t o = {.jobs = 2, .seed_key = "experiment.seed", .run = fake_run,
			      .mpi = 0};
	err_t e = {0};
	subdir(top, sizeof top, "new");
	snprintf(d, sizeof d, "%s/a/b", top);
	o.dir = d;
	assert_int_equal(out_sweep_run(g, base, &o, &s, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "fake.n"));
	assert_int_equal(access(top, F_OK), -1);
	/* an existing empty directory stays, and stays empty */
	assert_int_equal(mkdir(top, 0777), 0);
	o.dir = top;
	assert_int_equal(out_sweep_run(g, base, &o, &s, &e), KS_EINPUT);
	snprintf(p, sizeof p, "test -z \"$(ls -A %s)\"", top);
	assert_int_equal(system(p), 0);
	/* a directory holding a sweep keeps all of it */
	static const char *const ok[] = {"fake.n=10"};
	out_grid_t *g1 = mkgrid(ok, 1, 1);
	assert_int_equal(sweep(top, g1, base, 1, &s), 0);
	assert_int_equal(out_sweep_run(g, base, &o, &s, &e), KS_EINPUT);
	assert_int_equal(sweep(top, g1, base, 1, &s), 0);
	assert_int_equal(s.skipped, 1);
	snprintf(p, sizeof p, "%s/.sweep.lock", top);
	assert_int_equal(access(p, F_OK), 0);
	cfg_free(base);
	out_grid_free(g);
	out_grid_free(g1);
}

/* The verdict word of point i in a --dry-run listing. */
static void dry_word(const char *listing, size_t i, char *word, size_t cap)
{
	char key[16];
	snprintf(key, sizeof key, "%4zu  ", i);
	const char *l = strstr(listing, key);
	assert_non_null(l);
	assert_int_equal(sscanf(l + strlen(key) + 16, " %15s", word), 1);
	(void)cap;
}

/* The real command line: --dry-run tells done files from missing,
 * truncated, corrupt and stale ones (the points a sweep would run), and
 * --keep-stale turns stale into kept; a rejected grid prints no point and
 * creates nothing. */
static void test_dry_run_reports_what_the_resume_would_do(void **st)
{
	(void)st;
	char d[300], grid[] = "policy.routing.name=least_load,cache_aware", *out, *err;
	subdir(d, sizeof d, "cli_ledger");
	char a0[] = "sweep", a1[] = "--grid", a3[] = "--seeds", a4[] = "2", a5[] = "-o",
	     a7[] = "--dry-run", a8[] = "--keep-stale";
	char *argv[] = {a0, a1, grid, a3, a4, a5, d, a7, a8, NULL};
	/* the points the command would make, each recorded as done */
	cfg_t *base = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config_ex(NULL, NULL, 0, CLI_DEFAULT_EXPERIMENT, NULL, &base, &e),
			 0);
	out_grid_t *g = out_grid_new();
	assert_int_equal(out_grid_add(g, grid, 0, &e), 0);
	assert_int_equal(out_grid_set_seeds(g, 2, &e), 0);
	char f[4][700], id[4][65];
	for (size_t i = 0; i < 4; i++) {
		out_point_t p;
		sim_results_t r;
		assert_int_equal(out_point_make(g, base, "experiment.seed", i, &p, &e), 0);
		assert_int_equal(fake_fill(&r, p.seed, 1.0, 20), 0);
		assert_int_equal(out_run_record(d, p.cfg, &r, p.params, p.n_params, NULL, id[i], &e),
				 0);
		assert_string_equal(id[i], p.id);
		snprintf(f[i], sizeof f[i], "%s/%s", d, p.h5_rel);
		sim_results_free(&r);
		out_point_free(&p);
	}
	char w[16];
	assert_int_equal(sweep_main_capture(&out, &err, 8, argv), 0);
	for (size_t i = 0; i < 4; i++) {
		dry_word(out, i, w, sizeof w);
		assert_string_equal(w, "done");
	}
	assert_int_equal(unlink(f[0]), 0);
	truncate_half(f[1]);
	corrupt_byte(f[2]);
	char stmt[300];
	snprintf(stmt, sizeof stmt, "UPDATE runs SET git_rev = 'other' WHERE id = '%s'", id[3]);
	sql(d, stmt);
	static const char *const want[] = {"missing", "truncated", "corrupt", "stale"};
	assert_int_equal(sweep_main_capture(&out, &err, 8, argv), 0);
	for (size_t i = 0; i < 4; i++) {
		dry_word(out, i, w, sizeof w);
		assert_string_equal(w, want[i]);
	}
	assert_int_equal(sweep_main_capture(&out, &err, 9, argv), 0);
	dry_word(out, 3, w, sizeof w);
	assert_string_equal(w, "kept");
	/* defect: a value the schema refuses left NEW/.sweep.lock and an empty
	 * catalog behind; now nothing, and no half listing either */
	char bad[] = "cluster.nodes=1,0", newd[320];
	snprintf(newd, sizeof newd, "%s/NEW", tmpdir);
	char *argv2[] = {a0, a1, bad, a5, newd, NULL};
	assert_int_equal(sweep_main_capture(&out, &err, 5, argv2), 2);
	assert_non_null(strstr(err, "nodes"));
	assert_int_equal(access(newd, F_OK), -1);
	char *argv3[] = {a0, a1, bad, a5, newd, a7, NULL};
	assert_int_equal(sweep_main_capture(&out, &err, 6, argv3), 2);
	assert_string_equal(out, "");
	assert_int_equal(access(newd, F_OK), -1);
	cli_config_free(base);
	out_grid_free(g);
}

/* Failed points count those that failed on bad input, so that the command
 * can exit 2 when bad input is all that failed (a crash is not input). */
static void test_failed_points_count_input_errors(void **st)
{
	(void)st;
	char d[300];
	subdir(d, sizeof d, "input_errors");
	static const char *const ax[] = {"fake.mode=ok,error"};
	out_grid_t *g = mkgrid(ax, 1, 2);
	cfg_t *base = mkbase(NULL, 0);
	out_sweep_stats_t s;
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.failed, 2);
	assert_int_equal(s.failed_input, 2);
	out_grid_free(g);
	static const char *const ax2[] = {"fake.mode=error,crash"};
	g = mkgrid(ax2, 1, 1);
	subdir(d, sizeof d, "input_and_crash");
	assert_int_equal(sweep(d, g, base, 1, &s), 0);
	assert_int_equal(s.failed, 2);
	assert_int_equal(s.failed_input, 1);
	out_grid_free(g);
	cfg_free(base);
}

/* `kvsim sweep --strict`: a point whose run has no request (trace window
 * past its end) fails as bad input, so the sweep exits 2; without it, the
 * point is done and the warning said. */
static void test_strict_sweep_fails_points_without_requests(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!k || !*k)
		skip();
	char d[300], trace[340], set[360];
	subdir(d, sizeof d, "strict");
	assert_int_equal(mkdir(d, 0777), 0);
	snprintf(trace, sizeof trace, "%s/t.tsv", d);
	snprintf(set, sizeof set, "trace.path=%s", trace);
	cli_result_t r = cli_run(k, d, "trace", "gen", "poisson", "rate=5", "duration_s=10", "-o",
	                         trace, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	char out[340];
	snprintf(out, sizeof out, "%s/a", d);
	r = cli_run(k, d, "sweep", "--set", set, "--grid", "trace.start_s=5,60", "-o", out, NULL);
	assert_int_equal(r.status, 0);
	/* the warning names its point: index, run id and seed */
	assert_non_null(strstr(r.err, "kvsim sweep: warning: point 1, run "));
	assert_non_null(strstr(r.err, " (seed 1): --grid: [trace] start_s: 60 s is past"));
	cli_result_free(&r);
	snprintf(out, sizeof out, "%s/b", d);
	r = cli_run(k, d, "sweep", "--strict", "--set", set, "--grid", "trace.start_s=5,60", "-o",
	            out, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out, "1 run, 0 already done, 1 failed"));
	cli_result_free(&r);
}

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Every point of a sweep warns (a one-request queue sheds load, at another
 * time and instance per seed): the warning is said once, naming the first
 * point that reported it (index, run id, seed), and the sweep ends with how
 * many points gave it, not with one line per point. */
static void test_sweep_says_each_warning_once_with_its_point_and_count(void **st)
{
	(void)st;
	const char *k = getenv("KVSIM");
	if (!k || !*k)
		skip();
	char d[300], out[340];
	subdir(d, sizeof d, "warn_once");
	assert_int_equal(mkdir(d, 0777), 0);
	snprintf(out, sizeof out, "%s/r", d);
	cli_result_t r = cli_run(k, d, "sweep", "--seeds", "4", "-j", "2", "--set",
				 "experiment.max_pending=1", "--set", "trace.fanout_bursts=2", "-o",
				 out, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_of(r.err, "requests waiting ([experiment] max_pending)"), 2);
	assert_int_equal(count_of(r.err, "kvsim sweep: warning: point "), 1);
	/* the first point to report it: which one depends on the workers' timing */
	const char *w = strstr(r.err, "kvsim sweep: warning: point ");
	assert_non_null(w);
	unsigned pt;
	int at = 0;
	assert_int_equal(sscanf(w, "kvsim sweep: warning: point %u, run %*16[0-9a-f]%n", &pt, &at),
	                 1);
	assert_true(pt < 4 && at > 0);
	assert_memory_equal(w + at, " (seed ", 7);
	assert_non_null(strstr(w + at, "): t="));
	assert_non_null(strstr(r.err, "sweep: 1 warning over the 4 points run (each said above "
				      "at its first point):\n  4 of 4: t="));
	cli_result_free(&r);
}

/* -j above the open-file limit made poll() fail (EINVAL) and the sweep spin
 * at 100% CPU forever: it is refused before any worker starts, naming the
 * limit and the largest -j it allows, which then runs. alarm() catches a
 * hang only. */
static void test_jobs_above_the_open_file_limit_are_refused_naming_it(void **st)
{
	(void)st;
	static const char *const ax[] = {"fake.rate=1,2"};
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(NULL, 0);
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 128;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	alarm(600);
	char d[300];
	subdir(d, sizeof d, "jobs_limit");
	out_sweep_opts_t o = {.dir = d, .jobs = 1000, .seed_key = "experiment.seed",
			      .run = fake_run, .h5 = {1, 64}};
	out_sweep_stats_t s;
	err_t e = {0};
	int rc = out_sweep_run(g, base, &o, &s, &e);
	int made = access(d, F_OK) == 0; /* a refused sweep creates nothing */
	int rc_most = sweep(d, g, base, 96, &s);
	alarm(0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, KS_EINPUT);
	assert_non_null(strstr(e.msg, "-j 1000: more workers than the open-file limit allows"));
	assert_non_null(strstr(e.msg, "ulimit -n is 128"));
	assert_non_null(strstr(e.msg, "use -j 96 or fewer"));
	assert_false(made);
	assert_int_equal(rc_most, 0);
	assert_int_equal(s.done, 2);
	cfg_free(base);
	out_grid_free(g);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Every key of the schema that names an input file (unit "path") puts the
 * content of its file in the point's id, not its name or times; a run's
 * plugins count the same way; a config that reads no file keeps the id it
 * had before inputs counted. */
static void test_point_identity_covers_the_content_of_every_input_file(void **st)
{
	(void)st;
	static const char *const must[] = {"trace.path",	  "trace.in_path", "trace.out_path",
					   "gpu.file",		  "model.file",	   "compute.calibration",
					   "compute.profile",	  "compute.allreduce_profile",
					   "network.calibration"};
	const size_t n_must = sizeof must / sizeof must[0];
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	cfg_schema_set_warnings(s, NULL);
	out_grid_t *g0 = mkgrid(NULL, 0, 1);
	err_t e = {0};
	size_t seen = 0, keys = 0;
	for (size_t i = 0; i < cfg_schema_count(s); i++) {
		const cfg_key_t *k = cfg_schema_key(s, i);
		if (k->type != CFG_STR || !k->unit || strcmp(k->unit, "path"))
			continue;
		keys++;
		char key[256], f[600], set[900];
		snprintf(key, sizeof key, "%s.%s", k->section, k->name);
		snprintf(f, sizeof f, "%s/input_%s", tmpdir, key);
		snprintf(set, sizeof set, "%s=%s", key, f);
		write_text(f, "one\n");
		cfg_t *c = cfg_new(s);
		assert_non_null(c);
		assert_int_equal(cfg_set(c, set, &e), 0);
		assert_int_equal(cfg_finalize(c, &e), 0);
		out_point_t p, q, r;
		assert_int_equal(out_point_make(g0, c, "experiment.seed", 0, &p, &e), 0);
		assert_non_null(strstr(p.inputs, key));
		assert_non_null(strstr(p.inputs, f));
		write_text(f, "two\n"); /* same size, same second */
		assert_int_equal(out_point_make(g0, c, "experiment.seed", 0, &q, &e), 0);
		assert_string_not_equal(p.id, q.id);
		assert_string_equal(p.digest, q.digest); /* the config text is the same */
		write_text(f, "one\n");
		assert_int_equal(out_point_make(g0, c, "experiment.seed", 0, &r, &e), 0);
		assert_string_equal(p.id, r.id);
		out_point_free(&p);
		out_point_free(&q);
		out_point_free(&r);
		cfg_free(c);
		for (size_t m = 0; m < n_must; m++)
			seen += !strcmp(must[m], key);
	}
	assert_int_equal(seen, n_must);
	assert_true(keys >= n_must);
	/* a FIFO is never opened (that would block): the point still builds */
	char fifo[400], setf[500];
	snprintf(fifo, sizeof fifo, "%s/input_fifo", tmpdir);
	snprintf(setf, sizeof setf, "trace.path=%s", fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	cfg_t *cf = cfg_new(s);
	assert_int_equal(cfg_set(cf, setf, &e), 0);
	assert_int_equal(cfg_finalize(cf, &e), 0);
	out_point_t pf;
	assert_int_equal(out_point_make(g0, cf, "experiment.seed", 0, &pf, &e), 0);
	assert_non_null(strstr(pf.inputs, "not a regular file"));
	out_point_free(&pf);
	cfg_free(cf);
	/* the built-in calibration keyword names no file */
	cfg_t *c = cfg_new(s);
	assert_int_equal(cfg_finalize(c, &e), 0);
	char *text = NULL, *t2 = NULL, plug[400], id0[65], id1[65];
	assert_int_equal(out_point_inputs(c, NULL, 0, &text, &e), 0);
	assert_string_equal(text, "");
	/* a plugin is an input of a recorded run */
	snprintf(plug, sizeof plug, "%s/input_plugin.so", tmpdir);
	write_text(plug, "not really a plugin\n");
	const char *const extra[] = {plug};
	assert_int_equal(out_point_inputs(c, extra, 1, &t2, &e), 0);
	assert_non_null(strstr(t2, "plugin "));
	assert_non_null(strstr(t2, plug));
	char *ct = cfg_text(c);
	out_point_id(ct, 1, text, id0);
	out_point_id(ct, 1, NULL, id1);
	assert_string_equal(id0, id1);
	out_point_id(ct, 1, t2, id1);
	assert_string_not_equal(id0, id1);
	free(ct);
	free(text);
	free(t2);
	cfg_free(c);
	out_grid_free(g0);
	cfg_schema_free(s);
}

/* A sweep point names its input files by the digest the traces' digest
 * cache keeps (tr.h tr_file_sha256_cached), in this process and the next:
 * a fresh process does not read a whole unchanged trace again. The cache
 * line for the file is written by the first point; a line forged in its
 * place (the file itself unchanged) is what a later point reports, which
 * only a read of the cache can give. */
static void test_point_inputs_digest_comes_from_the_trace_digest_cache(void **st)
{
	(void)st;
	char dir[300], trace[340], cache[340], set[400];
	snprintf(dir, sizeof dir, "%s/digests", tmpdir);
	snprintf(trace, sizeof trace, "%s/old_trace.jsonl", tmpdir);
	snprintf(cache, sizeof cache, "%s/trace-sha256", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	const char *was = getenv("KVSIM_CACHE_DIR");
	char before[4096] = "";
	if (was)
		snprintf(before, sizeof before, "%s", was);
	setenv("KVSIM_CACHE_DIR", dir, 1);
	tmp_write_at(trace, "{\"timestamp\": 0}\n", 1600000000); /* not racy: cached */
	tr_sha256_cache_reset();
	cfg_schema_t *s = cfg_schema_default();
	cfg_schema_set_warnings(s, NULL);
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	snprintf(set, sizeof set, "trace.path=%s", trace);
	assert_int_equal(cfg_set(c, set, &e), 0);
	assert_int_equal(cfg_finalize(c, &e), 0);
	char *t1 = NULL, *t2 = NULL, want[65], line[1200];
	assert_int_equal(tr_file_sha256(trace, want, &e), 0);
	assert_int_equal(out_point_inputs(c, NULL, 0, &t1, &e), 0);
	assert_non_null(strstr(t1, want));
	FILE *f = fopen(cache, "r");
	assert_non_null(f); /* the first point wrote the cache line */
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	assert_memory_equal(line, want, 64);
	memset(line, 'a', 64); /* a forged digest, the file's identity kept */
	f = fopen(cache, "w");
	assert_non_null(f);
	fputs(line, f);
	fclose(f);
	tr_sha256_cache_reset(); /* as a new process */
	assert_int_equal(out_point_inputs(c, NULL, 0, &t2, &e), 0);
	char forged[65];
	memset(forged, 'a', 64);
	forged[64] = 0;
	assert_non_null(strstr(t2, forged));
	if (was) /* the tests' own cache again (tests/README.md) */
		setenv("KVSIM_CACHE_DIR", before, 1);
	else
		unsetenv("KVSIM_CACHE_DIR");
	tr_sha256_cache_reset();
	free(t1);
	free(t2);
	cfg_free(c);
	cfg_schema_free(s);
}

static double score_of_rate(const char *dir, const char *rate)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	char w[128];
	snprintf(w, sizeof w, "status = 'done' AND \"fake.rate\" = %s", rate);
	assert_int_equal(out_catalog_open(dir, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "policy_score", w, NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	double v = strtod(t.cells[0], NULL);
	out_table_free(&t);
	out_catalog_close(c);
	return v;
}

/* An input file edited in place (same name, same size, same second) makes
 * its points run again; the rows of the old content are superseded. */
static void test_resume_reruns_points_whose_input_file_changed(void **st)
{
	(void)st;
	char d[300], f[300], set[400];
	subdir(d, sizeof d, "inputs");
	subdir(f, sizeof f, "input_fake.txt");
	snprintf(set, sizeof set, "fake.input=%s", f);
	const char *sets[] = {set};
	static const char *const ax[] = {"fake.rate=1,2"};
	out_grid_t *g = mkgrid(ax, 1, 1);
	cfg_t *base = mkbase(sets, 1);
	out_sweep_stats_t s;
	write_text(f, "5\n");
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.done, 2);
	assert_true(score_of_rate(d, "2") == 7);
	write_text(f, "7\n");
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.skipped, 0);
	assert_int_equal(s.done, 2);
	assert_true(score_of_rate(d, "1") == 8);
	assert_true(score_of_rate(d, "2") == 9);
	assert_int_equal(count_status(d, "superseded"), 2);
	assert_int_equal(count_status(d, "done"), 2);
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.skipped, 2);
	/* back to the first content: those points are done again */
	write_text(f, "5\n");
	assert_int_equal(sweep(d, g, base, 2, &s), 0);
	assert_int_equal(s.done, 2);
	assert_true(score_of_rate(d, "2") == 7);
	assert_int_equal(count_status(d, "done"), 2);
	cfg_free(base);
	out_grid_free(g);
}

/* A catalog written before input files counted: a done row whose config
 * reads a file (or no longer loads) cannot be verified and becomes
 * 'unverified', which a sweep runs again; a row whose config reads none
 * stays done, its id being what that point's still is. */
static void test_catalog_before_input_digests_is_migrated(void **st)
{
	(void)st;
	char d[300], f[400], set[500];
	subdir(d, sizeof d, "pre_inputs");
	cfg_schema_t *s = cfg_schema_default();
	cfg_schema_set_warnings(s, NULL);
	cfg_t *plain = cfg_new(s), *reads = cfg_new(s);
	err_t e = {0};
	snprintf(set, sizeof set, "gpu.file=%s/input_gpu.ini", tmpdir);
	assert_int_equal(cfg_finalize(plain, &e), 0);
	assert_int_equal(cfg_set(reads, set, &e), 0);
	assert_int_equal(cfg_finalize(reads, &e), 0);
	char *tp = cfg_text(plain), *tr = cfg_text(reads), pid[65], rid[65];
	out_point_id(tp, 1, NULL, pid); /* ids as they were made then */
	out_point_id(tr, 1, NULL, rid);
	out_catalog_t *c;
	assert_int_equal(out_catalog_open(d, 0, &c, &e), 0);
	const struct {
		const char *id, *text, *end;
	} rows[] = {{pid, tp, "done"}, {rid, tr, "done"}, {"bad0", "[nosuch]\nkey = 1\n", "done"},
		    {"fail", tr, "failed"}};
	res_metric_t m = {"requests", "", 3};
	for (size_t i = 0; i < 4; i++) {
		out_run_info_t ri = {rows[i].id, rows[i].id, 1, NULL, 0, "runs/f.h5", rows[i].text,
				     NULL};
		out_run_file_t rf = {0, "", out_build_rev()};
		snprintf(f, sizeof f, "%s/runs", d);
		mkdir(f, 0777);
		snprintf(f, sizeof f, "%s/runs/f.h5", d);
		write_text(f, "results\n");
		assert_int_equal(out_file_sha256(f, &rf.size, rf.sha256, &e), 0);
		assert_int_equal(out_catalog_begin(c, &ri, &e), 0);
		if (!strcmp(rows[i].end, "done"))
			assert_int_equal(out_catalog_done_file(c, rows[i].id, &m, 1, 0.1, &rf, &e), 0);
		else
			assert_int_equal(out_catalog_failed(c, rows[i].id, "boom", &e), 0);
	}
	out_catalog_close(c);
	sql(d, "ALTER TABLE runs DROP COLUMN inputs;");
	for (int round = 0; round < 2; round++) { /* the second open finds it migrated */
		assert_int_equal(out_catalog_open(d, 0, &c, &e), 0);
		out_table_t t;
		assert_int_equal(out_catalog_select(c, "id,status,inputs,error", NULL, NULL, &t, &e),
				 0);
		assert_int_equal(t.nrows, 4);
		assert_string_equal(cell(&t, 0, "status"), "done");
		assert_string_equal(cell(&t, 0, "inputs"), "");
		assert_string_equal(cell(&t, 1, "status"), "unverified");
		assert_non_null(strstr(cell(&t, 1, "error"), "cannot be verified"));
		assert_string_equal(cell(&t, 2, "status"), "unverified");
		assert_string_equal(cell(&t, 3, "status"), "failed");
		out_table_free(&t);
		int v;
		assert_int_equal(out_catalog_check(c, pid, out_build_rev(), 0, &v, &e), 0);
		assert_int_equal(v, OUT_CHECK_DONE);
		assert_int_equal(out_catalog_check(c, rid, out_build_rev(), 1, &v, &e), 0);
		assert_int_equal(v, OUT_CHECK_TODO);
		out_catalog_close(c);
	}
	free(tp);
	free(tr);
	cfg_free(plain);
	cfg_free(reads);
	cfg_schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grid_parses_lists_and_inclusive_ranges),
		cmocka_unit_test(test_zip_axes_advance_together),
		cmocka_unit_test(test_seeds_are_distinct_and_seed_zero_is_the_base),
		cmocka_unit_test(test_point_identity_is_config_plus_seed),
		cmocka_unit_test(test_results_do_not_depend_on_worker_count),
		cmocka_unit_test(test_rerun_skips_done_points_and_runs_only_new_ones),
		cmocka_unit_test(test_errors_fail_at_once_and_crashes_are_retried_once),
		cmocka_unit_test(test_sigkill_loses_only_points_in_flight),
		cmocka_unit_test(test_sigint_and_sigterm_end_the_sweep_marking_points_interrupted),
		cmocka_unit_test(test_second_sweep_on_same_directory_waits_for_the_first),
		cmocka_unit_test(test_concurrent_writers_into_a_fresh_directory_all_finish),
		cmocka_unit_test(test_cleaning_temporaries_waits_for_a_recording_writer),
		cmocka_unit_test(test_recorded_single_run_is_a_done_point_for_sweeps),
		cmocka_unit_test(test_sweep_over_policy_names_warns_once),
		cmocka_unit_test(test_sweep_names_an_axis_without_effect_once),
		cmocka_unit_test(test_resume_reruns_exactly_the_points_whose_file_or_revision_changed),
		cmocka_unit_test(test_rows_without_a_revision_or_file_digest_run_again),
		cmocka_unit_test(test_rejected_sweep_leaves_nothing_it_created),
		cmocka_unit_test(test_dry_run_reports_what_the_resume_would_do),
		cmocka_unit_test(test_failed_points_count_input_errors),
		cmocka_unit_test(test_strict_sweep_fails_points_without_requests),
		cmocka_unit_test(test_sweep_says_each_warning_once_with_its_point_and_count),
		cmocka_unit_test(test_jobs_above_the_open_file_limit_are_refused_naming_it),
		cmocka_unit_test(test_point_identity_covers_the_content_of_every_input_file),
		cmocka_unit_test(test_point_inputs_digest_comes_from_the_trace_digest_cache),
		cmocka_unit_test(test_resume_reruns_points_whose_input_file_changed),
		cmocka_unit_test(test_catalog_before_input_digests_is_migrated),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

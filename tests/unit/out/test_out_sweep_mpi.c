/* Tests for sweeps under Open MPI: the same grid run by `mpirun -n 3` gives
 * the same catalog and files as a local sweep. The test binary launches
 * itself under mpirun (each rank runs the fake experiment); a second test
 * does the same with the real kvsim binary ($KVSIM) and skips while sim_run
 * cannot run. Both skip when mpirun is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/out/out_sweep.h"
#include "tests/fixtures/out_fake.h"
#include "tests/fixtures/tmp_fixture.h"

#define MPIRUN "mpirun --allow-run-as-root --oversubscribe -n 3 -x ASAN_OPTIONS=detect_leaks=0"

static const char *const axes[] = {"fake.policy=a,b", "fake.rate=1:3:1"};
static const unsigned n_seeds = 3;

/* A file's text ("" when unreadable); the caller frees it. */
static char *cli_slurp_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	if (f && buf)
		buf[fread(buf, 1, 65535, f)] = 0;
	if (f)
		fclose(f);
	return buf;
}

static int have_mpirun(void)
{
	return system("command -v mpirun >/dev/null 2>&1") == 0;
}

/* The fake sweep, as run by every rank and by the local reference. */
static int fake_sweep_slow(const char *dir, int mpi, unsigned jobs, int sleep_ms,
			   out_sweep_stats_t *st, err_t *e)
{
	cfg_schema_t *s = fake_schema();
	cfg_t *base = s ? cfg_new(s) : NULL;
	out_grid_t *g = out_grid_new();
	int rc = !base || !g ? KS_ENOMEM : 0;
	if (!rc)
		rc = cfg_set(base, "fake.n=200", e);
	char sl[64];
	snprintf(sl, sizeof sl, "fake.sleep_ms=%d", sleep_ms);
	if (!rc && sleep_ms)
		rc = cfg_set(base, sl, e);
	if (!rc)
		rc = cfg_finalize(base, e);
	for (size_t i = 0; !rc && i < sizeof axes / sizeof axes[0]; i++)
		rc = out_grid_add(g, axes[i], 0, e);
	if (!rc)
		rc = out_grid_set_seeds(g, n_seeds, e);
	out_sweep_opts_t o = {.dir = dir, .jobs = jobs, .progress = 0,
			      .seed_key = "experiment.seed", .run = fake_run, .h5 = {1, 64},
			      .mpi = mpi};
	if (!rc)
		rc = out_sweep_run(g, base, &o, st, e);
	out_grid_free(g);
	cfg_free(base);
	cfg_schema_free(s);
	return rc;
}

static int fake_sweep(const char *dir, int mpi, unsigned jobs, out_sweep_stats_t *st,
		      err_t *e)
{
	return fake_sweep_slow(dir, mpi, jobs, 0, st, e);
}

#define SLOW_MS 300 /* each point of the interrupted sweep */

/* What each rank does when the test launches itself under mpirun. */
static int rank_main(const char *dir, int sleep_ms)
{
	out_sweep_stats_t st;
	err_t e = {0};
	int rc = fake_sweep_slow(dir, -1, 1, sleep_ms, &st, &e);
	if (rc) {
		fprintf(stderr, "rank sweep: %s\n", e.msg);
		return 1;
	}
	if (st.rank == 0) {
		char p[600];
		snprintf(p, sizeof p, "%s/stats.txt", dir);
		FILE *f = fopen(p, "w");
		if (!f)
			return 1;
		fprintf(f, "ranks=%d done=%zu failed=%zu\n", st.ranks, st.done, st.failed);
		fclose(f);
	}
	return 0;
}

/* id, status, seed, parameters and metrics of every run, sorted by id;
 * metrics that measure the host (wall time) are left out. */
static char *catalog_dump(const char *dir, size_t *nrows, size_t *ndone, char *err1,
			  size_t errcap)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	if (out_catalog_open(dir, 1, &c, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(out_catalog_select(c, "all", NULL, "id", &t, &e), 0);
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);
	*ndone = 0;
	for (size_t r = 0; r < t.nrows; r++) {
		for (size_t k = 0; k < t.ncols; k++) {
			const char *n = t.names[k], *v = t.cells[r * t.ncols + k];
			if (!strcmp(n, "status") && v && !strcmp(v, "done"))
				(*ndone)++;
			if (!strcmp(n, "error") && v && err1 && !*err1)
				snprintf(err1, errcap, "%s", v);
			int keep = strcmp(t.kinds[k], "run") ? !strstr(n, "wall")
							     : !strcmp(n, "id") || !strcmp(n, "status") ||
								       !strcmp(n, "seed") ||
								       !strcmp(n, "h5_path");
			if (!keep)
				continue;
			if (len + strlen(n) + (v ? strlen(v) : 4) + 4 >= cap)
				out = realloc(out, cap *= 2);
			len += (size_t)sprintf(out + len, "%s=%s|", n, v ? v : "NULL");
		}
		out[len++] = '\n';
		out[len] = '\0';
	}
	*nrows = t.nrows;
	out_table_free(&t);
	out_catalog_close(c);
	return out;
}

static void test_mpi_sweep_of_fake_runs_matches_local_sweep(void **st)
{
	(void)st;
	if (!have_mpirun()) {
		print_message("mpirun not found: skipping\n");
		skip();
	}
	char dl[300], dm[300], self[512], cmd[1400];
	snprintf(dl, sizeof dl, "%s/local", tmp_dir);
	snprintf(dm, sizeof dm, "%s/mpi", tmp_dir);
	out_sweep_stats_t s;
	err_t e = {0};
	assert_int_equal(fake_sweep(dl, 0, 2, &s, &e), 0);
	assert_int_equal(s.done, 18);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	snprintf(cmd, sizeof cmd, MPIRUN " %s --rank %s", self, dm);
	assert_int_equal(system(cmd), 0);
	char p[400], line[128] = "";
	snprintf(p, sizeof p, "%s/stats.txt", dm);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	assert_string_equal(line, "ranks=3 done=18 failed=0\n");
	size_t nl, nm, dnl, dnm;
	char *a = catalog_dump(dl, &nl, &dnl, NULL, 0), *b = catalog_dump(dm, &nm, &dnm, NULL, 0);
	assert_int_equal(nl, 18);
	assert_int_equal(dnm, 18);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* The worker ranks' files hold the same tables (the files themselves
	 * differ in provenance: start and wall time). */
	out_catalog_t *c;
	out_table_t t;
	assert_int_equal(out_catalog_open(dm, 1, &c, &e), 0);
	assert_int_equal(out_catalog_select(c, "h5_path,h5_sha256,git_rev", NULL, NULL, &t, &e), 0);
	for (size_t r = 0; r < t.nrows; r++) {
		char f1[700], f2[700], hex[65];
		sim_results_t r1, r2;
		snprintf(f1, sizeof f1, "%s/%s", dl, t.cells[r * 3]);
		snprintf(f2, sizeof f2, "%s/%s", dm, t.cells[r * 3]);
		/* rank 0 recorded the digest the worker's child reported */
		assert_int_equal(out_file_sha256(f2, NULL, hex, &e), 0);
		assert_string_equal(hex, t.cells[r * 3 + 1]);
		assert_string_equal(t.cells[r * 3 + 2], out_build_rev());
		assert_int_equal(out_hdf5_read(f1, &r1, &e), 0);
		assert_int_equal(out_hdf5_read(f2, &r2, &e), 0);
		assert_int_equal(r1.n_req, r2.n_req);
		assert_memory_equal(r1.req, r2.req, r1.n_req * sizeof *r1.req);
		assert_int_equal(r1.n_xfer, r2.n_xfer);
		assert_memory_equal(r1.xfer, r2.xfer, r1.n_xfer * sizeof *r1.xfer);
		assert_string_equal(r1.config_text, r2.config_text);
		sim_results_free(&r1);
		sim_results_free(&r2);
	}
	out_table_free(&t);
	out_catalog_close(c);
}

static void test_mpi_sweep_of_kvsim_matches_local_sweep(void **st)
{
	(void)st;
	const char *kvsim = getenv("KVSIM");
	if (!have_mpirun() || !kvsim || access(kvsim, X_OK) != 0) {
		print_message("mpirun or $KVSIM not available: skipping\n");
		skip();
	}
	char dl[300], dm[300], cmd[2000];
	snprintf(dl, sizeof dl, "%s/kv_local", tmp_dir);
	snprintf(dm, sizeof dm, "%s/kv_mpi", tmp_dir);
	/* A cheap grid over keys every config has (SLO targets change metrics,
	 * seeds change arrivals) on a short prefix of the default trace. */
	const char *grid = "--set trace.limit=30 --grid slo.ttft_ms=500,2000 --seeds 2";
	char log[400];
	snprintf(log, sizeof log, "%s/kv_local.log", tmp_dir);
	snprintf(cmd, sizeof cmd, "%s sweep %s -j 2 -o %s >%s 2>&1", kvsim, grid, dl, log);
	int rc = system(cmd);
	size_t nl, dnl;
	char err1[1024] = "";
	char *a = catalog_dump(dl, &nl, &dnl, err1, sizeof err1);
	if (dnl == 0 && strstr(err1, "not implemented")) {
		free(a);
		print_message("kvsim sweep: %s: skipping until sim_run works\n", err1);
		skip();
	}
	if (rc || dnl != 4) {
		snprintf(cmd, sizeof cmd, "tail -40 %s >&2", log);
		if (system(cmd)) {
		}
		fail_msg("local kvsim sweep: status %d, %zu of 4 done, first error: %s", rc, dnl,
			 err1);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(dnl, 4);
	snprintf(cmd, sizeof cmd, MPIRUN " %s sweep %s -o %s >%s 2>&1", kvsim, grid, dm, log);
	assert_int_equal(system(cmd), 0);
	size_t nm, dnm;
	char *b = catalog_dump(dm, &nm, &dnm, NULL, 0);
	assert_int_equal(dnm, 4);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* Rows of dir's catalog with status `what`. */
static size_t count_status(const char *dir, const char *what)
{
	out_catalog_t *c;
	out_table_t t;
	err_t e = {0};
	if (out_catalog_open(dir, 1, &c, &e))
		return 0; /* not made yet */
	size_t n = 0;
	if (!out_catalog_select(c, "status", NULL, NULL, &t, &e)) {
		for (size_t r = 0; r < t.nrows; r++)
			n += t.cells[r] && !strcmp(t.cells[r], what);
		out_table_free(&t);
	}
	out_catalog_close(c);
	return n;
}

/* SIGINT to mpirun while the ranks run points: rank 0 marks the points in
 * flight 'interrupted', none stays 'running', the job exits non-zero, and
 * running the same sweep again ends with the catalog of an uninterrupted
 * local sweep. */
static void test_interrupted_mpi_sweep_marks_its_points_and_resumes_exactly(void **st)
{
	(void)st;
	if (!have_mpirun()) {
		print_message("mpirun not found: skipping\n");
		skip();
	}
	char dl[300], dm[300], self[512], cmd[1400];
	snprintf(dl, sizeof dl, "%s/slow_local", tmp_dir);
	snprintf(dm, sizeof dm, "%s/slow_mpi", tmp_dir);
	out_sweep_stats_t s;
	err_t e = {0};
	assert_int_equal(fake_sweep_slow(dl, 0, 2, SLOW_MS, &s, &e), 0);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	snprintf(cmd, sizeof cmd, "exec " MPIRUN " %s --rank-slow %s 2>%s.err", self, dm, dm);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* once two points are done (minutes at most: only a hang waits longer) */
	for (int i = 0; i < 6000 && count_status(dm, "done") < 2; i++)
		usleep(50000);
	assert_true(count_status(dm, "done") >= 2);
	kill(pid, SIGINT);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
	size_t running = count_status(dm, "running"), inter = count_status(dm, "interrupted");
	char log[400];
	snprintf(log, sizeof log, "%s.err", dm);
	char *err = cli_slurp_file(log);
	printf("after SIGINT: %zu running, %zu interrupted, %zu done; stderr:\n%s", running,
	       inter, count_status(dm, "done"), err);
	assert_int_equal(running, 0);
	assert_true(inter >= 1);
	assert_non_null(strstr(err, "marked interrupted"));
	free(err);
	/* resume */
	snprintf(cmd, sizeof cmd, MPIRUN " %s --rank-slow %s", self, dm);
	assert_int_equal(system(cmd), 0);
	size_t nl, nm, dnl, dnm;
	char *a = catalog_dump(dl, &nl, &dnl, NULL, 0), *b = catalog_dump(dm, &nm, &dnm, NULL, 0);
	assert_int_equal(dnl, 18);
	assert_int_equal(dnm, 18);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--rank"))
		return rank_main(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "--rank-slow"))
		return rank_main(argv[2], SLOW_MS);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mpi_sweep_of_fake_runs_matches_local_sweep),
		cmocka_unit_test(test_mpi_sweep_of_kvsim_matches_local_sweep),
		cmocka_unit_test(test_interrupted_mpi_sweep_marks_its_points_and_resumes_exactly),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

/* Tests for `kvsim run` (sim/cli/cli_run.c): the progress line of a long run
 * (its format, and that it shows on a terminal only, never with -q or when
 * stderr is a file), --strict for a run with no request, and +inf in the
 * table and the catalog of a run that sheds load. The binary is
 * $KVSIM (or build/kvsim); tests that need it skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static void test_progress_line_says_time_requests_share_and_eta(void **st)
{
	(void)st;
	char buf[256];
	cli_set_command("run");
	sim_progress_t p = {12500000000LL, 4400, 4321, 0.37};
	cli_progress_line(buf, sizeof buf, &p, 12.3); /* 12.3 * 0.63 / 0.37 = 20.9 s left */
	assert_string_equal(buf, "kvsim run: 12.5 s simulated, 4321 requests done (4400 arrived), "
	                         "37%, ETA 0:21");
	p.fraction = 0.002; /* 10 * 0.998 / 0.002 = 4990 s */
	cli_progress_line(buf, sizeof buf, &p, 10);
	assert_string_equal(buf, "kvsim run: 12.5 s simulated, 4321 requests done (4400 arrived), "
	                         "0%, ETA 1:23:10");
	p.fraction = -1; /* nothing tells how far: no share, no ETA */
	cli_progress_line(buf, sizeof buf, &p, 10);
	assert_string_equal(buf, "kvsim run: 12.5 s simulated, 4321 requests done (4400 arrived)");
	char small[24];
	cli_progress_line(small, sizeof small, &p, 10);
	assert_int_equal(strlen(small), sizeof small - 1);
	cli_set_command(NULL);
}

/* The gate: the command line decides when it says; else a terminal on
 * stderr, and not -q. */
static void test_progress_shows_only_on_a_terminal_unless_asked(void **st)
{
	(void)st;
	assert_int_equal(cli_progress_wanted(1, 1), 1);
	assert_int_equal(cli_progress_wanted(0, 0), 0);
	int saved = dup(2);
	char path[128];
	snprintf(path, sizeof path, "%s/err", tmp_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	dup2(fd, 2);
	int file = cli_progress_wanted(-1, 0);
	int master, slave;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	dup2(slave, 2);
	int tty = cli_progress_wanted(-1, 0), tty_quiet = cli_progress_wanted(-1, 1);
	dup2(saved, 2);
	close(saved);
	close(fd);
	close(slave);
	close(master);
	assert_int_equal(file, 0);
	assert_int_equal(tty, 1);
	assert_int_equal(tty_quiet, 0);
}

/* Runs kvsim ARGS on a pseudo-terminal (stdout and stderr both) and
 * returns what it wrote (malloc'd) and its exit status. */
static char *run_on_pty(const char *kvsim, const char *const *args, int *status)
{
	int master;
	pid_t pid = forkpty(&master, NULL, NULL, NULL);
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[16] = {kvsim};
		for (int i = 0; args[i] && i < 14; i++)
			argv[i + 1] = args[i];
		execv(kvsim, (char *const *)argv);
		_exit(127);
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (;;) {
		if (len + 4096 > cap)
			assert_non_null(buf = realloc(buf, cap *= 2));
		ssize_t n = read(master, buf + len, 4096);
		if (n <= 0)
			break; /* EIO once the child has closed the terminal */
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(master);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return buf;
}

/* A run long enough to be redrawn (two to three seconds here: 60000
 * simulated seconds of the default traffic). */
static void test_long_run_draws_progress_on_a_terminal(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	const char *args[] = {"run", "--set", "trace.duration_s=60000", NULL};
	int status;
	char *out = run_on_pty(kvsim, args, &status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	const char *line = strstr(out, "\rkvsim run: ");
	if (!line || !strstr(line, " s simulated, ") || !strstr(line, " requests done (") ||
	    !strstr(line, "%, ETA "))
		fail_msg("no progress line in:\n%s", out);
	/* erased before the summary, which is untouched */
	assert_non_null(strstr(out, "\r\033[K"));
	assert_non_null(strstr(out, "kvsim run: default (seed 1"));
	free(out);
	/* -q: nothing but errors, on a terminal too */
	const char *quiet[] = {"run", "-q", "--set", "trace.duration_s=20000", NULL};
	out = run_on_pty(kvsim, quiet, &status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_string_equal(out, "");
	free(out);
	/* stderr not a terminal: silent */
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "--set", "trace.duration_s=20000", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	cli_result_free(&r);
}

/* A Poisson trace of 5 req/s for `duration` at tmp_dir/name: its path in
 * trace[128], "trace.path=PATH" in set[160]. */
static void gen_trace(const char *kvsim, const char *name, const char *duration, char *trace,
                      char *set)
{
	snprintf(trace, 128, "%s/%s", tmp_dir, name);
	snprintf(set, 160, "trace.path=%s", trace);
	cli_result_t r =
	    cli_run(kvsim, tmp_dir, "trace", "gen", "poisson", "rate=5", duration, "-o", trace, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
}

/* No request passed the trace window: a warning, or with --strict an input
 * error that writes nothing. */
static void test_strict_refuses_a_run_without_requests(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char trace[128], out[128], set[160];
	gen_trace(kvsim, "t.tsv", "duration_s=10", trace, set);
	snprintf(out, sizeof out, "%s/results", tmp_dir);
	cli_result_t r;
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--set", set, "--set", "trace.start_s=60", NULL);
	assert_int_equal(r.status, 0);
	char want[400];
	snprintf(want, sizeof want,
	         "kvsim run: warning: seed 1: --set: [trace] start_s: 60 s is past the "
	         "end of the trace (%s: ",
	         trace);
	assert_memory_equal(r.err, want, strlen(want));
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "run", "--strict", "-o", out, "--set", set, "--set",
	            "trace.start_s=60", NULL);
	assert_int_equal(r.status, 2);
	const char *head = "kvsim run: --set: [trace] start_s: 60 s is past the end";
	assert_memory_equal(r.err, head, strlen(head));
	assert_non_null(strstr(r.err, "(--strict)\n"));
	assert_string_equal(r.out, "");
	struct stat sb;
	assert_int_equal(stat(out, &sb), -1); /* nothing written */
	cli_result_free(&r);
	/* a window that holds requests is no warning, strict or not */
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--strict", "--set", set, "--set",
	            "trace.start_s=5", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	cli_result_free(&r);
}

/* -o DIR whose catalog path SQLite could not open: exit 2 before the run
 * (a missing trace is not even read), the limit named, nothing created. */
static void test_out_dir_past_sqlites_path_limit_is_refused_before_the_run(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[700], top[160];
	snprintf(top, sizeof top, "%s/long", tmp_dir);
	size_t n = (size_t)snprintf(out, sizeof out, "%s", top);
	while (n < 560)
		n += (size_t)snprintf(out + n, sizeof out - n, "/%s", "dddddddddddddddddddddddddddddd");
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--set",
	                         "trace.path=/nonexistent/t.jsonl", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "/catalog.sqlite: results directory path too long: "));
	assert_non_null(strstr(r.err, "that SQLite opens; use a shorter directory (nothing was "
	                              "created)\n"));
	assert_null(strstr(r.err, "nonexistent"));
	assert_int_equal(access(top, F_OK), -1);
	cli_result_free(&r);
}

/* The line of the summary table that label starts (after its indent). */
static const char *table_line(const char *out, const char *label)
{
	char want[64];
	snprintf(want, sizeof want, "\n  %s  ", label);
	const char *l = strstr(out, want);
	if (!l)
		fail_msg("no row '%s' in:\n%s", label, out);
	return l + 1;
}

/* A run that sheds load (a one-request queue per instance rejects about a
 * fifth of the default experiment): the offered TTFT p95 reaches the shed
 * requests and prints as inf, the completed-only rows say so, and the
 * catalog keeps +inf for --where and --csv. */
static void test_shed_load_prints_inf_and_the_catalog_keeps_it(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[128];
	snprintf(out, sizeof out, "%s/shed", tmp_dir);
	cli_result_t r =
	    cli_run(kvsim, tmp_dir, "run", "-o", out, "--set", "experiment.max_pending=1", NULL);
	assert_int_equal(r.status, 0);
	const char *p95 = table_line(r.out, "TTFT p95 (ms)");
	const char *eol = strchr(p95, '\n');
	assert_non_null(eol);
	assert_memory_equal(eol - 4, " inf", 4);
	table_line(r.out, "TTFT p95 (ms) (completed)");
	table_line(r.out, "SLO attainment (completed) (%)");
	table_line(r.out, "admitted share of offered (%)");
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "runs", out, "--where", "ttft_p95_ms > 1e308", "--columns",
	            "ttft_p95_ms,ttft_p99_ms", "--csv", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "ttft_p95_ms,ttft_p99_ms\ninf,inf\n");
	cli_result_free(&r);
}

static int count_reports(void *ctx, const sim_progress_t *p)
{
	int *n = ctx;
	assert_true(p->finished <= p->arrived);
	assert_true(p->fraction >= 0 && p->fraction <= 1); /* a generator knows its span */
	(*n)++;
	return 0;
}

/* Progress reports are called during the run and change nothing in it. */
static void test_progress_reports_leave_results_unchanged(void **st)
{
	(void)st;
	cfg_t *c = NULL;
	err_t e = {0};
	const char *sets[] = {"trace.duration_s=600"}; /* ticks every 8,192 events */
	assert_int_equal(cli_load_config(NULL, sets, 1, &c, &e), 0);
	sim_results_t a, b;
	int n = 0;
	sim_run_opts_t o = {.progress = count_reports, .progress_ctx = &n};
	assert_int_equal(sim_run(c, NULL, &a, &e), 0);
	assert_int_equal(sim_run(c, &o, &b, &e), 0);
	assert_true(n > 0);
	assert_int_equal(a.n_req, b.n_req);
	assert_int_equal(a.events, b.events);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	assert_int_equal(a.n_metric, b.n_metric);
	for (size_t i = 0; i < a.n_metric; i++)
		if (!(isnan(a.metric[i].value) && isnan(b.metric[i].value)))
			assert_true(a.metric[i].value == b.metric[i].value);
	sim_results_free(&a);
	sim_results_free(&b);
	cli_config_free(c);
}

/* In-range figures that make a cost infinite or past int64 nanoseconds
 * (gpu.flops_bf16 = 1, compute.weight_mbu = 0, compute.attn_prefill_eff =
 * 0) overflowed iter_start + dur (undefined behaviour) and ended with
 * "simulation failed at t=N ns": each stops with exit 2 naming the key and
 * its value, at setup when one token alone cannot fit, else at the
 * iteration (gpu.flops_bf16 = 1e3: a 64-token prefill). */
static void test_degenerate_costs_stop_naming_the_key(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char trace[128], set[160];
	gen_trace(kvsim, "cost.tsv", "duration_s=2", trace, set);
	cli_result_t r;
	static const char *const bad[][2] = {
	    {"gpu.flops_bf16=1", "[gpu] flops_bf16: 1 makes one iteration of one prefill token"},
	    {"compute.weight_mbu=0", "[compute] weight_mbu: 0 makes one iteration of one"},
	    {"compute.attn_prefill_eff=0", "[compute] attn_prefill_eff: 0 makes one iteration"},
	    {"gpu.hbm_bw=1", "[gpu] hbm_bw: 1 makes one iteration of one"},
	    {"gpu.flops_bf16=1e3", "[gpu] flops_bf16: 1000 makes an iteration of instance "},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = cli_run(kvsim, tmp_dir, "run", "-q", "--set", set, "--set",
		            "model.name=Llama-3-8B", "--set", "cluster.tp=1", "--set", bad[i][0], NULL);
		if (r.status != 2 || !strstr(r.err, bad[i][1]) ||
		    !strstr(r.err, "past the largest simulated time") || strstr(r.err, "runtime error"))
			fail_msg("%s: exit %d: %s", bad[i][0], r.status, r.err);
		cli_result_free(&r);
	}
	/* slow but representable: runs */
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--set", set, "--set", "model.name=Llama-3-8B",
	            "--set", "cluster.tp=1", "--set", "gpu.flops_bf16=1e9", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
}

/* The h5 file's bytes and modification time, to tell a rewrite. */
static void file_stamp(const char *path, struct stat *sb)
{
	assert_int_equal(stat(path, sb), 0);
}

/* -o DIR again with the same config: refused before the run, DIR unchanged,
 * unless --force; another config writes alongside; a damaged file is
 * replaced with a note; a sweep still takes the run as a done point. */
static void test_run_into_a_dir_holding_it_is_refused_unless_forced(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char out[128], h5[256], want[1024];
	snprintf(out, sizeof out, "%s/again", tmp_dir);
	const char *small = "trace.duration_s=10", *one = "trace.fanout_bursts=1";
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--set", small, "--set",
	                         one, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "runs", out, "--columns", "id", "--csv", NULL);
	char id[17] = "";
	assert_int_equal(sscanf(r.out, "id\n%16s", id), 1);
	cli_result_free(&r);
	snprintf(h5, sizeof h5, "%s/runs/%s.h5", out, id);
	struct stat before, after;
	file_stamp(h5, &before);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--set", small, "--set", one, NULL);
	assert_int_equal(r.status, 2);
	snprintf(want, sizeof want,
	         "kvsim run: %s already holds this run (id %s: the same config, inputs and seed), "
	         "made by this build: %s; running it again gives the same results (read them with "
	         "'kvsim runs %s'); pass --force to run it again and replace them\n",
	         out, id, h5, out);
	assert_string_equal(r.err, want);
	cli_result_free(&r);
	file_stamp(h5, &after);
	assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
	            before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--force", "--set", small, "--set", one,
	            NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	file_stamp(h5, &after);
	assert_false(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
	             before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	/* another config: its own file beside the first */
	r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--set", small, "--set",
	            "trace.fanout_bursts=2", NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "runs", out, "--columns", "id", "--csv", NULL);
	assert_non_null(strstr(r.out, id));
	size_t lines = 0;
	for (const char *c = r.out; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 3); /* the header and two runs */
	cli_result_free(&r);
	/* a truncated file is no result to keep: replaced, with a note */
	assert_int_equal(truncate(h5, 64), 0);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "-o", out, "--set", small, "--set", one, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof want,
	         "kvsim run: note: %s holds this run (id %s) with a truncated file; running it "
	         "again replaces it\n",
	         out, id);
	assert_string_equal(r.err, want);
	cli_result_free(&r);
	/* a sweep resumes over both: nothing left to run */
	r = cli_run(kvsim, tmp_dir, "sweep", "-o", out, "--set", small, "--grid",
	            "trace.fanout_bursts=1,2", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "sweep: 2 points: 0 run, 2 already done"));
	cli_result_free(&r);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--force", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--force needs -o DIR"));
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_progress_line_says_time_requests_share_and_eta),
	    cmocka_unit_test(test_progress_shows_only_on_a_terminal_unless_asked),
	    cmocka_unit_test(test_progress_reports_leave_results_unchanged),
	    cmocka_unit_test(test_long_run_draws_progress_on_a_terminal),
	    cmocka_unit_test(test_strict_refuses_a_run_without_requests),
	    cmocka_unit_test(test_out_dir_past_sqlites_path_limit_is_refused_before_the_run),
	    cmocka_unit_test(test_shed_load_prints_inf_and_the_catalog_keeps_it),
	    cmocka_unit_test(test_run_into_a_dir_holding_it_is_refused_unless_forced),
	    cmocka_unit_test(test_degenerate_costs_stop_naming_the_key),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

/* trace.kind = spec run through the whole simulator (sim/run/sim_clients.h
 * open stages, traces/tr_spec.h): requests and rates per stage, stages
 * drained one after the other, prompt reuse under cycle and fresh as the
 * prefix cache sees it, the stages as per-stage summaries in /windows and
 * the catalog, and [output] windows over a whole run equal to /summary. One
 * instance of Llama-3-8B on one H100 at 16-token blocks; fixtures are
 * written by the tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

#include "sim/out/out_catalog.h"
#include "sim/out/out_hdf5.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "traces/tr.h"

#define S 1000000000LL

static char dir[256];

static int setup(void **st)
{
	(void)st;
	return tmp_dir_make(dir, sizeof dir, "/tmp/kvsim_sim_spec_XXXXXX");
}

static int teardown(void **st)
{
	(void)st;
	return tmp_dir_remove(dir);
}

static const char *put(const char *name, const char *text)
{
	return tmp_put(dir, name, text);
}

/* G groups of M prompts, system 64 + question 40 tokens, output out, the
 * given load section. */
static const char *profile(const char *name, int out, const char *load)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "data:\n  type: shared_prefix\n  shared_prefix:\n    num_groups: 3\n"
		 "    num_prompts_per_group: 2\n    system_prompt_len: 64\n"
		 "    question_len: 40\n    output_len: %d\nload:\n%s",
		 out, load);
	return put(name, text);
}

static int run(const char *path, const char *const *extra, int n, sim_results_t *r, err_t *e)
{
	char tp[600];
	snprintf(tp, sizeof tp, "trace.path=%s", path);
	const char *sets[16] = {"cluster.nodes=1",     "cluster.gpus_per_node=1",
				"cluster.tp=1",        "model.name=Llama-3-8B",
				"kvcache.block_tokens=16", "trace.kind=spec", tp};
	int k = 7;
	for (int i = 0; i < n && k < 16; i++)
		sets[k++] = extra[i];
	cfg_t *cfg = NULL;
	int rc = cli_load_config(NULL, sets, k, &cfg, e);
	if (!rc)
		rc = sim_run(cfg, NULL, r, e);
	cli_config_free(cfg);
	return rc;
}

static sim_results_t run_ok(const char *path, const char *const *extra, int n)
{
	sim_results_t r;
	err_t e = {0};
	int rc = run(path, extra, n, &r, &e);
	if (rc)
		fail_msg("%s", e.msg);
	return r;
}


static void near(double got, double want, const char *what)
{
	if (!(fabs(got - want) <= 1e-9 * fmax(1, fabs(want))))
		fail_msg("%s: got %.17g, want %.17g", what, got, want);
}

/* Constant load, 2 req/s for 5 s then 4 req/s for 5 s: 10 requests at
 * 0, 0.5, ..., 4.5 s, then (every one back within 60 ms, so the stage
 * ends at its 5 s) 20 at 5, 5.25, ..., 9.75 s. The stages are the windows
 * [0, 5 s) and [5 s, 10 s) (the last one drained before its 10 s end);
 * offered_rps = 10 / 4.5 s and 20 / 4.75 s. */
static void test_constant_stages_send_their_rate_for_their_duration(void **st)
{
	(void)st;
	const char *p = profile("c.yaml", 8,
				"  type: constant\n  stages:\n    - {rate: 2, duration: 5}\n"
				"    - {rate: 4, duration: 5}\n");
	sim_results_t r = run_ok(p, NULL, 0);
	assert_int_equal(r.n_req, 30);
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		int64_t want = q->id < 10 ? (int64_t)q->id * S / 2 : 5 * S + (int64_t)(q->id - 10) * S / 4;
		assert_int_equal(q->arrival_ns, want);
		assert_int_equal(q->status, REQ_COMPLETED);
		assert_true(q->e2e_ns < S / 4);
	}
	assert_int_equal(r.win[0].kind, RES_WIN_STAGE);
	assert_int_equal(r.win[0].t0_ns, 0);
	assert_int_equal(r.win[0].t1_ns, 5 * S);
	assert_int_equal(r.win[r.n_win - 1].window, 1);
	assert_int_equal(r.win[r.n_win - 1].t0_ns, 5 * S);
	assert_int_equal(r.win[r.n_win - 1].t1_ns, 10 * S);
	near(sf_window(&r, 0, "requests"), 10, "stage 0 requests");
	near(sf_window(&r, 1, "requests"), 20, "stage 1 requests");
	near(sf_window(&r, 0, "offered_rps"), 10 / 4.5, "stage 0 offered_rps");
	near(sf_window(&r, 1, "offered_rps"), 20 / 4.75, "stage 1 offered_rps");
	sim_results_free(&r);
}

/* A stage whose requests outlast it: 4 requests of 2,000 output tokens at
 * 0, 0.5, 1, 1.5 s run for seconds, so the next stage's first arrival is
 * exactly the last of them coming back (plus load.interval: 1.5 s), and
 * none of its requests arrives earlier. */
static void test_the_next_stage_starts_when_the_last_request_is_back(void **st)
{
	(void)st;
	for (int gap = 0; gap < 2; gap++) {
		const char *p = profile(gap ? "d1.yaml" : "d0.yaml", 2000,
					gap ? "  interval: 1.5\n  stages:\n    - {rate: 2, duration: 2}\n"
					      "    - {rate: 1, duration: 3}\n"
					    : "  stages:\n    - {rate: 2, duration: 2}\n"
					      "    - {rate: 1, duration: 3}\n");
		sim_results_t r = run_ok(p, NULL, 0);
		assert_int_equal(r.n_req, 7);
		int64_t back = 0, first = INT64_MAX;
		for (size_t i = 0; i < r.n_req; i++) {
			const res_request_t *q = &r.req[i];
			assert_int_equal(q->status, REQ_COMPLETED);
			if (q->id < 4 && q->arrival_ns + q->e2e_ns > back)
				back = q->arrival_ns + q->e2e_ns;
			if (q->id >= 4 && q->arrival_ns < first)
				first = q->arrival_ns;
		}
		assert_true(back > 2 * S); /* the drain, not the duration, decides */
		if (first != back + (gap ? 3 * S / 2 : 0))
			fail_msg("gap %d: first %lld, back %lld", gap, (long long)first, (long long)back);
		for (size_t i = 0; i < r.n_req; i++) /* 1 req/s from there */
			if (r.req[i].id >= 4)
				assert_int_equal(r.req[i].arrival_ns, first + (int64_t)(r.req[i].id - 4) * S);
		/* stage 0's window ends where stage 1 starts (the drain, plus the
		 * interval): its own 4 requests, and no more */
		assert_int_equal(r.win[0].t1_ns, first);
		assert_int_equal(r.win[r.n_win - 1].t0_ns, first);
		near(sf_window(&r, 0, "requests"), 4, "stage 0 requests");
		near(sf_window(&r, 1, "requests"), 3, "stage 1 requests");
		sim_results_free(&r);
	}
}

/* Reuse as the prefix cache sees it (one instance, ample KV, requests 0.5 s
 * apart and back within 60 ms): a prompt is 6 full blocks, 4 of system
 * prompt. The first 6 requests take the 6 prompts once; from request 6 on,
 * under cycle every prompt was computed before (96 tokens found), under
 * fresh only its group's system prompt (64). */
static void test_reuse_cycle_finds_the_whole_prompt_fresh_the_system_prompt(void **st)
{
	(void)st;
	const char *p = profile("r.yaml", 8, "  stages:\n    - {rate: 2, duration: 6}\n");
	static const char *const cyc[] = {"trace.spec_reuse=cycle"};
	static const char *const fre[] = {"trace.spec_reuse=fresh"};
	sim_results_t rc = run_ok(p, cyc, 1), rf = run_ok(p, fre, 1);
	sim_results_t d = run_ok(p, NULL, 0);
	assert_int_equal(rc.n_req, 12);
	assert_int_equal(rf.n_req, 12);
	for (size_t i = 0; i < 12; i++) {
		if (rc.req[i].id < 6)
			continue;
		assert_int_equal(rc.req[i].tok_local, 96);
		assert_int_equal(rf.req[i].tok_local, 64);
		assert_int_equal(d.req[i].tok_local, 96); /* cycle is the default */
	}
	sim_results_free(&rc);
	sim_results_free(&rf);
	sim_results_free(&d);
}

/* Poisson load: arrivals inside each stage's duration, not evenly spaced,
 * and the same with the same seed. */
static void test_poisson_stages_stay_in_their_duration(void **st)
{
	(void)st;
	const char *p = profile("p.yaml", 8,
				"  type: poisson\n  stages:\n    - {rate: 5, duration: 4}\n"
				"    - {rate: 5, duration: 4}\n");
	sim_results_t a = run_ok(p, NULL, 0), b = run_ok(p, NULL, 0);
	assert_int_equal(a.n_req, b.n_req);
	assert_true(a.n_req > 10);
	int64_t s1 = a.win[a.n_win - 1].t0_ns;
	int uneven = 0;
	for (size_t i = 0; i < a.n_req; i++) {
		int64_t t = a.req[i].arrival_ns;
		assert_int_equal(t, b.req[i].arrival_ns);
		assert_true((t >= 0 && t < 4 * S) || (t >= s1 && t < s1 + 4 * S));
		uneven |= t % (S / 5) != 0;
	}
	assert_true(s1 >= 4 * S);
	assert_true(uneven);
	sim_results_free(&a);
	sim_results_free(&b);
}

/* The JSON record form runs the same way; trace.limit cuts it. */
static void test_json_record_runs_and_limit_cuts_it(void **st)
{
	(void)st;
	const char *p = put("x.json",
			    "{\"experiments\": [{\"id\": \"e1\", \"stages\": [{\"rate\": 2, "
			    "\"duration\": 3}], \"workload\": {\"type\": \"shared_prefix\", "
			    "\"num_requests\": 6, \"shared_prefix\": {\"num_unique_system_prompts\": "
			    "2, \"num_users_per_system_prompt\": 2, \"system_prompt_len\": 32, "
			    "\"question_len\": 16, \"output_len\": 4}}}]}\n");
	static const char *const pick[] = {"trace.spec_experiment=e1"};
	sim_results_t r = run_ok(p, pick, 1);
	assert_int_equal(r.n_req, 6);
	assert_string_equal(r.trace_path, "spec:e1");
	sim_results_free(&r);
	static const char *const lim[] = {"trace.limit=4"};
	r = run_ok(p, lim, 1);
	assert_int_equal(r.n_req, 4);
	near(sf_window(&r, 0, "requests"), 4, "requests");
	sim_results_free(&r);
}

/* trace.rate_scale multiplies every stage's rate (2 req/s x 2 over 5 s:
 * 20 requests, then 4 x 2 over 2 s: 16); an explicitly set
 * trace.duration_s stops sending at that time (3 s: 6 of stage 0's, none of
 * stage 1's), while its generators' default does not apply. */
static void test_rate_scale_and_duration_apply_to_the_stages(void **st)
{
	(void)st;
	const char *p = profile("s.yaml", 8, "  stages:\n    - {rate: 2, duration: 5}\n"
					     "    - {rate: 4, duration: 2}\n");
	static const char *const x2[] = {"trace.rate_scale=2"};
	sim_results_t r = run_ok(p, x2, 1);
	assert_int_equal(r.n_req, 36);
	near(sf_window(&r, 0, "requests"), 20, "stage 0 requests");
	near(sf_window(&r, 1, "requests"), 16, "stage 1 requests");
	sim_results_free(&r);
	static const char *const d3[] = {"trace.duration_s=3"};
	r = run_ok(p, d3, 1);
	assert_int_equal(r.n_req, 6);
	for (size_t i = 0; i < r.n_req; i++)
		assert_true(r.req[i].arrival_ns < 3 * S);
	assert_int_equal(r.win[r.n_win - 1].window, 0);
	sim_results_free(&r);
	static const char *const d100[] = {"trace.duration_s=100"};
	r = run_ok(p, d100, 1); /* set above the stages' 7 s: all of them */
	assert_int_equal(r.n_req, 18);
	sim_results_free(&r);
	/* a run stopped (experiment.until_s) before its stage drained: that
	 * window is open-ended */
	static const char *const until[] = {"experiment.until_s=3"};
	r = run_ok(p, until, 1);
	assert_int_equal(r.win[r.n_win - 1].window, 0);
	assert_true(r.win[0].t1_ns == INT64_MAX);
	sim_results_free(&r);
	/* the default 60 s is the generators': a 100 s stage sends all of its 10 */
	r = run_ok(profile("l.yaml", 8, "  stages:\n    - {rate: 0.1, duration: 100}\n"), NULL, 0);
	assert_int_equal(r.n_req, 10);
	sim_results_free(&r);
}

/* The stages' summaries reach /windows and the catalog's windows table. */
static void test_stage_summaries_reach_the_file_and_the_catalog(void **st)
{
	(void)st;
	const char *p = profile("w.yaml", 8, "  stages:\n    - {rate: 2, duration: 2}\n"
					     "    - {rate: 3, duration: 2}\n");
	sim_results_t r = run_ok(p, NULL, 0);
	char h5[600];
	snprintf(h5, sizeof h5, "%s/w.h5", dir);
	err_t e = {0};
	assert_int_equal(out_hdf5_write(h5, &r, NULL, &e), 0);
	sim_results_t back;
	assert_int_equal(out_hdf5_read(h5, &back, &e), 0);
	assert_int_equal(back.n_win, r.n_win);
	assert_memory_equal(back.win, r.win, r.n_win * sizeof *r.win);
	res_window_t *w;
	size_t nw;
	assert_int_equal(out_hdf5_read_windows(h5, &w, &nw, &e), 0);
	assert_int_equal(nw, r.n_win);
	free(w);
	out_catalog_t *c;
	assert_int_equal(out_catalog_open(dir, 0, &c, &e), 0);
	assert_int_equal(out_catalog_windows_put(c, "run1", r.win, r.n_win, &e), 0);
	out_table_t t;
	assert_int_equal(out_catalog_windows(c, "run", "requests,offered_rps", &t, &e), 0);
	assert_int_equal(t.nrows, 2);
	assert_int_equal(t.ncols, 7);
	assert_string_equal(t.names[5], "requests");
	assert_string_equal(t.cells[0 * 7 + 2], "stage");
	assert_string_equal(t.cells[0 * 7 + 5], "4");
	assert_string_equal(t.cells[1 * 7 + 5], "6");
	assert_string_equal(t.cells[1 * 7 + 3], "2");
	out_table_free(&t);
	res_window_t open_w = r.win[0]; /* an open-ended window: t1_s NULL */
	open_w.t1_ns = INT64_MAX;
	assert_int_equal(out_catalog_windows_put(c, "other", &open_w, 1, &e), 0);
	assert_int_equal(out_catalog_windows(c, "oth", NULL, &t, &e), 0);
	assert_int_equal(t.nrows, 1);
	assert_null(t.cells[4]);
	out_table_free(&t);
	assert_int_equal(out_catalog_windows(c, NULL, "no_such_metric", &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "no window has metric 'no_such_metric'"));
	out_catalog_close(c);
	sim_results_free(&back);
	sim_results_free(&r);
}

/* [output] windows replaces the stages; one window over the whole run gives
 * /summary's values metric for metric, hit_rate_blocks included. */
static void test_output_window_over_the_run_equals_the_summary(void **st)
{
	(void)st;
	const char *p = profile("o.yaml", 8, "  stages:\n    - {rate: 2, duration: 3}\n"
					     "    - {rate: 4, duration: 2}\n");
	static const char *const w[] = {"output.windows=0,100"};
	sim_results_t r = run_ok(p, w, 1);
	size_t n = 0;
	for (size_t i = 0; i < r.n_metric && n < r.n_win; i++) {
		if (strcmp(r.metric[i].name, r.win[n].name))
			continue; /* metrics past metrics_summarize's */
		double a = r.win[n].value, b = r.metric[i].value;
		assert_int_equal(r.win[n].kind, RES_WIN_OUTPUT);
		if (!(a == b || (isnan(a) && isnan(b))))
			fail_msg("%s: window %.17g, summary %.17g", r.win[n].name, a, b);
		n++;
	}
	assert_int_equal(n, r.n_win);
	assert_true(n > 40);
	assert_false(isnan(sf_window(&r, 0, "hit_rate_blocks")));
	sim_results_free(&r);
	/* a generator run gets windows too */
	cfg_t *cfg = NULL;
	err_t e = {0};
	static const char *const g[] = {"trace.kind=gen", "trace.gen=poisson", "trace.duration_s=5", "trace.rate=2",
					"output.windows=0,2.5,5"};
	assert_int_equal(cli_load_config(NULL, g, 5, &cfg, &e), 0);
	assert_int_equal(sim_run(cfg, NULL, &r, &e), 0);
	cli_config_free(cfg);
	assert_int_equal(r.win[r.n_win - 1].window, 1);
	near(sf_window(&r, 0, "requests") + sf_window(&r, 1, "requests"), (double)r.n_req, "requests");
	sim_results_free(&r);
}

static void test_spec_refusals(void **st)
{
	(void)st;
	const char *p = profile("f.yaml", 8, "  stages:\n    - {rate: 2, duration: 2}\n");
	sim_results_t r;
	err_t e = {0};
	static const char *const win[] = {"output.windows=3,1"};
	assert_int_equal(run(p, win, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[output] windows: edge 1 (1 s) must be after"));
	e = (err_t){0};
	static const char *const start[] = {"trace.start_s=5"};
	assert_int_equal(run(p, start, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] start_s: not used by kind = spec"));
	e = (err_t){0};
	assert_int_equal(run("/nonexistent/spec.yaml", NULL, 0, &r, &e), KS_EIO);
	assert_non_null(strstr(e.msg, "/nonexistent/spec.yaml"));
	/* a spec is no trace to read: it needs the run's answers */
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = TR_KIND_SPEC;
	o.path = p;
	tr_reader_t *rd;
	e = (err_t){0};
	assert_int_equal(tr_open(&o, 16, 1, &rd, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] kind: spec is a client workload"));
}

/* Through the command line: kvsim run files its stages in the catalog, a
 * sweep's points too (read back from their files), and kvsim runs windows
 * shows one row per run and stage; a bad spec exits 2 naming file:line. */
static void test_run_and_sweep_fill_the_windows_table(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char p[1100], out1[600], out2[600], tp[1200];
	snprintf(p, sizeof p, "%s", profile("cli.yaml", 8, "  stages:\n    - {rate: 2, duration: 2}\n"
							  "    - {rate: 3, duration: 2}\n"));
	snprintf(tp, sizeof tp, "trace.path=%s", p);
	snprintf(out1, sizeof out1, "%s/run_out", dir);
	snprintf(out2, sizeof out2, "%s/sweep_out", dir);
	const char *base[] = {"--set", "cluster.nodes=1", "--set", "cluster.gpus_per_node=1",
			      "--set", "cluster.tp=1", "--set", "model.name=Llama-3-8B",
			      "--set", "trace.kind=spec", "--set", tp};
	cli_result_t r = cli_run(kvsim, dir, "run", base[0], base[1], base[2], base[3], base[4],
				 base[5], base[6], base[7], base[8], base[9], base[10], base[11],
				 "-o", out1, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	r = cli_run(kvsim, dir, "runs", "windows", out1, "--columns", "requests", "--csv", NULL);
	assert_int_equal(r.status, 0);
	/* header, then stage 0 (4 requests over [0, 2 s)) and stage 1 (6 over [2 s, 4 s)) */
	assert_non_null(strstr(r.out, "id,window,kind,t0_s,t1_s,requests\n"));
	assert_non_null(strstr(r.out, ",0,stage,0,2,4\n"));
	assert_non_null(strstr(r.out, ",1,stage,2,4,6\n"));
	cli_result_free(&r);
	r = cli_run(kvsim, dir, "runs", "windows", out1, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "(2 windows)\n"));
	cli_result_free(&r);
	r = cli_run(kvsim, dir, "sweep", base[0], base[1], base[2], base[3], base[4], base[5],
		    base[6], base[7], base[8], base[9], base[10], base[11], "--grid",
		    "trace.spec_reuse=cycle,fresh", "-o", out2, NULL);
	if (r.status)
		fail_msg("sweep: %s", r.err);
	cli_result_free(&r);
	r = cli_run(kvsim, dir, "runs", "windows", out2, "--columns", "requests", "--csv", NULL);
	assert_int_equal(r.status, 0);
	int rows = 0;
	for (const char *q = r.out; (q = strstr(q, ",stage,")); q++)
		rows++;
	assert_int_equal(rows, 4); /* 2 points x 2 stages */
	cli_result_free(&r);
	r = cli_run(kvsim, dir, "runs", "windows", out2, "--columns", "nope", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no window has metric 'nope'"));
	cli_result_free(&r);
	const char *bad = put("bad.yaml", "data:\n  type: shared_prefix\n  shared_prefix:\n"
					  "    num_groups: 0\n");
	snprintf(tp, sizeof tp, "trace.path=%s", bad);
	r = cli_run(kvsim, dir, "run", "--set", "trace.kind=spec", "--set", tp, "-o", out1, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "bad.yaml:4: data.shared_prefix.num_groups: 0 is not a whole "
				      "number in [1, 1048576]"));
	cli_result_free(&r);
}

TEST_MAIN_FIXTURE(setup, teardown,
		  cmocka_unit_test(test_run_and_sweep_fill_the_windows_table),
		  cmocka_unit_test(test_constant_stages_send_their_rate_for_their_duration),
		  cmocka_unit_test(test_the_next_stage_starts_when_the_last_request_is_back),
		  cmocka_unit_test(test_reuse_cycle_finds_the_whole_prompt_fresh_the_system_prompt),
		  cmocka_unit_test(test_poisson_stages_stay_in_their_duration),
		  cmocka_unit_test(test_json_record_runs_and_limit_cuts_it),
		  cmocka_unit_test(test_rate_scale_and_duration_apply_to_the_stages),
		  cmocka_unit_test(test_stage_summaries_reach_the_file_and_the_catalog),
		  cmocka_unit_test(test_output_window_over_the_run_equals_the_summary),
		  cmocka_unit_test(test_spec_refusals))

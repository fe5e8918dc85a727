/* Closed-loop clients (sim/run/sim_clients.c) and trace.gen = sessions run
 * through the whole simulator: at most one request in flight per user, the
 * request count a closed loop gives by hand, determinism, shared documents,
 * and what consumers that read the trace ahead do with a closed loop (trace
 * readers refuse it: tests/unit/traces/test_tr_gen_session.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim_clients.h"
#include "sim/run/sim_params.h"
#include "tests/fixtures/test_main.h"

#define MAX_SETS 24

/* The built-in experiment (8 instances of Llama-3-70B at TP4) with the
 * sessions workload and the given extra sets. */
static int sets_of(const char **out, const char *const *extra, int n)
{
	static const char *const base[] = {"trace.kind=gen", "trace.gen=sessions"};
	int k = 0;
	for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
		out[k++] = base[i];
	for (int i = 0; i < n && k < MAX_SETS; i++)
		out[k++] = extra[i];
	return k;
}

/* Runs the sessions through their clients as sim_run does, keeping the
 * clients (*ss) so the test can ask who sent what. */
static sim_results_t run_sessions(const char *const *extra, int n, sim_sessions_t **ss)
{
	const char *sets[MAX_SETS];
	int k = sets_of(sets, extra, n);
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(NULL, sets, k, &cfg, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	sim_params_t sp;
	assert_int_equal(sim_params_fill(cfg, &sp, &e), 0);
	rc = sim_sessions_open(cfg, sp.block_tokens, sim_seed_for(sp.seed, SIM_STREAM_TRACE), ss,
			       &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_non_null(*ss);
	sim_clients_t *c = sim_sessions_clients(*ss);
	sim_run_opts_t o = {.source = sim_clients_source(c), .feedback = sim_clients_feedback(c)};
	sim_results_t r;
	rc = sim_run(cfg, &o, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	cli_config_free(cfg);
	return r;
}

/* The same through sim_run_opts (the config alone): rc and message. */
static int run_cfg(const char *const *extra, int n, sim_results_t *r, err_t *e)
{
	const char *sets[MAX_SETS];
	int k = sets_of(sets, extra, n);
	cfg_t *cfg = NULL;
	int rc = cli_load_config(NULL, sets, k, &cfg, e);
	if (!rc)
		rc = sim_run(cfg, NULL, r, e);
	cli_config_free(cfg);
	return rc;
}

/* When a row freed its user: completion, or the arrival for a request
 * rejected on arrival (its row is made then). */
static int64_t row_end(const res_request_t *q)
{
	return q->e2e_ns >= 0 ? q->arrival_ns + q->e2e_ns : q->arrival_ns;
}

/* rows indexed by request id (ids are 0..n-1 in arrival order) */
static const res_request_t **by_id(const sim_results_t *r)
{
	const res_request_t **v = calloc(r->n_req ? r->n_req : 1, sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < r->n_req; i++) {
		assert_true(r->req[i].id < r->n_req);
		assert_null(v[r->req[i].id]);
		v[r->req[i].id] = &r->req[i];
	}
	return v;
}

/* Every user's next request arrives exactly think_s (fixed) after its
 * previous one's row came back: never two in flight, and no idle user. */
static void test_closed_loop_next_arrival_is_previous_end_plus_think(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=24", "trace.think_s=0.5", "trace.think_dist=fixed",
			   "trace.duration_s=30", "trace.turns_max=4", "trace.doc_min_tokens=2048",
			   "trace.doc_max_tokens=8192"};
	sim_sessions_t *ss;
	sim_results_t r = run_sessions(x, 7, &ss);
	sim_clients_t *c = sim_sessions_clients(ss);
	const res_request_t **v = by_id(&r);
	int64_t *last_end = malloc(24 * sizeof *last_end);
	size_t *per_user = calloc(24, sizeof *per_user);
	assert_non_null(last_end);
	for (int u = 0; u < 24; u++)
		last_end[u] = 0; /* every user starts by thinking from t = 0 */
	int64_t think = 500000000;
	assert_true(r.n_req > 100); /* 24 users x 30 s at a few seconds a cycle */
	for (size_t id = 0; id < r.n_req; id++) {
		uint32_t u = sim_clients_user(c, id);
		assert_true(u < 24);
		const res_request_t *q = v[id];
		assert_int_equal(q->arrival_ns, last_end[u] + think);
		assert_true(row_end(q) >= q->arrival_ns);
		last_end[u] = row_end(q);
		per_user[u]++;
		if (id)
			assert_true(q->arrival_ns >= v[id - 1]->arrival_ns); /* ids in arrival order */
	}
	for (int u = 0; u < 24; u++)
		assert_true(per_user[u] >= 2);
	assert_int_equal(sim_clients_user(c, r.n_req), UINT32_MAX);
	free(last_end);
	free(per_user);
	free(v);
	sim_results_free(&r);
	sim_sessions_free(ss);
}

/* Exponential think times: the next arrival is after the previous end
 * (strictly, almost surely), and the think times average think_s. */
static void test_closed_loop_exponential_think_after_end(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=64", "trace.think_s=2", "trace.duration_s=120",
			   "trace.doc_min_tokens=1024", "trace.doc_max_tokens=4096"};
	sim_sessions_t *ss;
	sim_results_t r = run_sessions(x, 5, &ss);
	sim_clients_t *c = sim_sessions_clients(ss);
	const res_request_t **v = by_id(&r);
	int64_t last_end[64] = {0};
	double sum = 0;
	for (size_t id = 0; id < r.n_req; id++) {
		uint32_t u = sim_clients_user(c, id);
		assert_true(u < 64);
		assert_true(v[id]->arrival_ns > last_end[u]);
		sum += (double)(v[id]->arrival_ns - last_end[u]);
		last_end[u] = row_end(v[id]);
	}
	/* mean of n exponentials: sd 2 s / sqrt(n); n > 800 here, so 0.3 s is
	 * over 4 sd */
	assert_true(r.n_req > 800);
	assert_true(fabs(sum / (double)r.n_req / 1e9 - 2) < 0.3);
	free(v);
	sim_results_free(&r);
	sim_sessions_free(ss);
}

/* By hand: 4 users, fixed think 10 s, sending until 55 s, every request
 * served in under 1 s (checked). A user's k-th request arrives at
 * 10 k + (the service times before it) < 10 k + (k - 1): the 5th by 54 s,
 * the 6th not before 60 s. So 5 requests per user, 20 in all. */
static void test_closed_loop_request_count_by_hand(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=4",          "trace.think_s=10",
			   "trace.think_dist=fixed", "trace.duration_s=55",
			   "trace.docs=1",           "trace.doc_min_tokens=1024",
			   "trace.doc_max_tokens=1024", "trace.turns_min=1",
			   "trace.turns_max=1",      "trace.question_sigma=0",
			   "trace.question_tokens=128", "trace.out_dist=fixed",
			   "trace.out_mean=16"};
	sim_sessions_t *ss;
	sim_results_t r = run_sessions(x, 13, &ss);
	for (size_t i = 0; i < r.n_req; i++) {
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
		assert_true(r.req[i].e2e_ns < 1000000000);
		assert_int_equal(r.req[i].input_tokens, 1024 + 128);
	}
	assert_int_equal(r.n_req, 20);
	/* the first four arrive together, at the first think's end */
	const res_request_t **v = by_id(&r);
	for (int id = 0; id < 4; id++)
		assert_int_equal(v[id]->arrival_ns, 10000000000LL);
	free(v);
	sim_results_free(&r);
	sim_sessions_free(ss);
}

static void assert_same_rows(const sim_results_t *a, const sim_results_t *b)
{
	assert_int_equal(a->n_req, b->n_req);
	assert_memory_equal(a->req, b->req, a->n_req * sizeof *a->req);
}

/* The same seed gives the same rows, through sim_run and through the
 * clients driven by hand; another seed other rows. */
static void test_sessions_deterministic_per_seed(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=16", "trace.think_s=1", "trace.duration_s=40",
			   "experiment.seed=7"};
	sim_results_t a, b, d;
	err_t e = {0};
	assert_int_equal(run_cfg(x, 4, &a, &e), 0);
	assert_int_equal(run_cfg(x, 4, &b, &e), 0);
	assert_true(a.n_req > 50);
	assert_string_equal(a.trace_path, "gen:sessions");
	assert_same_rows(&a, &b);
	sim_sessions_t *ss;
	sim_results_t c = run_sessions(x, 4, &ss);
	assert_same_rows(&a, &c);
	x[3] = "experiment.seed=8";
	assert_int_equal(run_cfg(x, 4, &d, &e), 0);
	assert_true(a.n_req != d.n_req ||
		    memcmp(a.req, d.req, a.n_req * sizeof *a.req) != 0);
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&c);
	sim_results_free(&d);
	sim_sessions_free(ss);
}

/* Single-turn sessions over two documents: every hit is a document's KV
 * computed for another session (its questions and answers are its own).
 * Over a million documents sessions almost never meet. */
static void test_sessions_documents_shared_across_sessions(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=16", "trace.think_s=1", "trace.duration_s=60",
			   "trace.turns_min=1", "trace.turns_max=1", "trace.doc_zipf=0",
			   "trace.docs=2"};
	sim_results_t few, many;
	err_t e = {0};
	assert_int_equal(run_cfg(x, 7, &few, &e), 0);
	x[6] = "trace.docs=1000000";
	assert_int_equal(run_cfg(x, 7, &many, &e), 0);
	double h2 = sim_results_get(&few, "hit_rate_blocks");
	double hm = sim_results_get(&many, "hit_rate_blocks");
	assert_true(h2 > 0.3);
	assert_true(hm < h2 / 10);
	sim_results_free(&few);
	sim_results_free(&many);
}

/* The oracle reads the trace ahead: refused with a closed loop, naming the
 * key; a predictor that learns from arrivals runs. */
static void test_sessions_oracle_predictor_refused(void **st)
{
	(void)st;
	const char *x[] = {"trace.duration_s=20", "policy.replication.name=speculative",
			   "policy.predictor.name=oracle"};
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(run_cfg(x, 3, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[policy.predictor] name: oracle reads the trace ahead"));
	assert_non_null(strstr(e.msg, "gen:sessions is a closed loop"));
	assert_non_null(strstr(e.msg, "--set")); /* its place */
	x[2] = "policy.predictor.name=repeat_count";
	e = (err_t){0};
	int rc = run_cfg(x, 3, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_true(r.n_req > 0);
	sim_results_free(&r);
}

/* output.oracle_bound is computed after the run on the requests the run
 * made: on a closed loop it bounds that realized stream. */
static void test_sessions_oracle_bound_on_realized_stream(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=16", "trace.think_s=1", "trace.duration_s=30",
			   "output.oracle_bound=true"};
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(run_cfg(x, 4, &r, &e), 0);
	double run = sim_results_get(&r, "hit_rate_blocks");
	double opt = sim_results_get(&r, "bound.belady_hit_rate_blocks");
	assert_true(run > 0);
	assert_true(opt >= run - 1e-12);
	assert_true(sim_results_get(&r, "bound.lookups_blocks") > 0);
	sim_results_free(&r);
}

static void expect_cfg_err(const char *const *x, int n, const char *want)
{
	sim_results_t r;
	err_t e = {0};
	int rc = run_cfg(x, n, &r, &e);
	if (!strstr(e.msg, want))
		fprintf(stderr, "got: %s\nwant: %s\n", e.msg, want);
	assert_int_equal(rc, KS_EINPUT);
	assert_non_null(strstr(e.msg, want));
}

static void test_sessions_config_errors(void **st)
{
	(void)st;
	const char *a[] = {"trace.doc_min_tokens=40000"};
	expect_cfg_err(a, 1, "--set: [trace] doc_min_tokens: 40000 is above doc_max_tokens");
	const char *b[] = {"trace.turns_min=9"};
	expect_cfg_err(b, 1, "[trace] turns_min: 9 is above turns_max = 8");
	const char *c[] = {"trace.rate_scale=2"};
	expect_cfg_err(c, 1, "[trace] rate_scale: does not apply to gen = sessions");
	const char *d[] = {"trace.end_s=5"};
	expect_cfg_err(d, 1, "[trace] end_s: does not apply to gen = sessions");
	const char *f[] = {"trace.duration_s=0"};
	expect_cfg_err(f, 1, "[trace] duration_s: gen = sessions needs duration_s > 0");
	const char *g[] = {"trace.users=0"};
	expect_cfg_err(g, 1, "users");
	const char *h[] = {"trace.think_dist=gamma"};
	expect_cfg_err(h, 1, "think_dist");
	const char *i[] = {"trace.path=x.jsonl"};
	expect_cfg_err(i, 1, "[trace] path: 'x.jsonl' is not read");
}

/* trace.requests stops the clients after that many requests in all. */
static void test_sessions_requests_cap(void **st)
{
	(void)st;
	const char *x[] = {"trace.users=8", "trace.think_s=0.1", "trace.duration_s=0",
			   "trace.requests=37"};
	sim_results_t r;
	err_t e = {0};
	int rc = run_cfg(x, 4, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(r.n_req, 37);
	sim_results_free(&r);
}

/* Runs clients c to the end on the built-in cluster. */
static sim_results_t run_clients(sim_clients_t *c)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, NULL, 0, &cfg, &e), 0);
	sim_run_opts_t ro = {.source = sim_clients_source(c), .feedback = sim_clients_feedback(c)};
	sim_results_t r;
	int rc = sim_run(cfg, &ro, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	cli_config_free(cfg);
	return r;
}

/* A script of three 600-token requests per user, then nothing. */
static int three_each(void *ctx, uint32_t user, sim_arrival_t *a, err_t *e)
{
	(void)e;
	uint32_t *sent = ctx;
	if (sent[user] == 3)
		return 0;
	sent[user]++;
	*a = (sim_arrival_t){.in_len = 600, .out_len = 8, .session_id = user + 1,
			     .turn = sent[user]};
	return 1;
}

/* The clients over any script: a user whose script ends sends no more, and
 * the run ends once every user is done and nothing is in flight, long
 * before duration_s. */
static void test_clients_script_end_stops_user(void **st)
{
	(void)st;
	uint32_t sent[5] = {0};
	sim_script_t sc = {three_each, sent};
	sim_clients_opts_t o = {.users = 5, .think_s = 1, .think_fixed = 1, .duration_s = 1000,
				.seed = 1, .name = "three"};
	sim_clients_t *c = NULL;
	err_t e = {0};
	assert_int_equal(sim_clients_new(&o, &sc, &c, &e), 0);
	sim_results_t r = run_clients(c);
	assert_int_equal(r.n_req, 15);
	for (uint32_t u = 0; u < 5; u++)
		assert_int_equal(sent[u], 3);
	for (size_t i = 0; i < r.n_req; i++) {
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
		assert_true(r.req[i].arrival_ns < 10000000000LL); /* 3 cycles of ~1 s */
	}
	assert_true(sim_results_get(&r, "sim_time_s") < 10);
	assert_string_equal(r.trace_path, "three");
	sim_results_free(&r);
	sim_clients_free(c);
}

static int short_req(void *ctx, uint32_t user, sim_arrival_t *a, err_t *e)
{
	(void)ctx;
	(void)e;
	*a = (sim_arrival_t){.in_len = 300, .out_len = 4, .session_id = user + 1};
	return 1;
}

/* Stages: 2 users from 0 s, 6 from 30 s, none from 60 s (fixed think 1 s,
 * requests well under a second). Users 2-5 first send at 31 s (they start
 * their stage by thinking); nobody sends at or after 60 s, though
 * duration_s is 90; users 0-1 send all along. */
static void test_clients_stages(void **st)
{
	(void)st;
	const sim_clients_stage_t g[] = {{0, 2}, {30, 6}, {60, 0}};
	sim_script_t sc = {short_req, NULL};
	sim_clients_opts_t o = {.users = 6, .think_s = 1, .think_fixed = 1, .duration_s = 90,
				.seed = 1, .name = "stages", .stages = g, .n_stages = 3};
	sim_clients_t *c = NULL;
	err_t e = {0};
	assert_int_equal(sim_clients_new(&o, &sc, &c, &e), 0);
	sim_results_t r = run_clients(c);
	int64_t first[6], last[6];
	for (int u = 0; u < 6; u++)
		first[u] = INT64_MAX, last[u] = -1;
	for (size_t i = 0; i < r.n_req; i++) {
		assert_true(r.req[i].e2e_ns < 1000000000);
		uint32_t u = sim_clients_user(c, r.req[i].id);
		assert_true(u < 6);
		first[u] = r.req[i].arrival_ns < first[u] ? r.req[i].arrival_ns : first[u];
		last[u] = r.req[i].arrival_ns > last[u] ? r.req[i].arrival_ns : last[u];
	}
	for (int u = 0; u < 6; u++) {
		assert_int_equal(first[u], u < 2 ? 1000000000LL : 31000000000LL);
		assert_true(last[u] < 60000000000LL && last[u] > 57000000000LL);
	}
	sim_results_free(&r);
	sim_clients_free(c);
	const sim_clients_stage_t bad[] = {{0, 2}, {0, 3}};
	o.stages = bad;
	o.n_stages = 2;
	assert_int_equal(sim_clients_new(&o, &sc, &c, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "clients: stage 1: start_s 0 must be after"));
	const sim_clients_stage_t many[] = {{0, 7}};
	o.stages = many;
	o.n_stages = 1;
	assert_int_equal(sim_clients_new(&o, &sc, &c, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "clients: stage 0: 7 users of 6"));
}

/* A source that waits for results it can never get (no feedback) is an
 * error, not a run that ends early in silence. */
static int always_wait(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)ctx;
	(void)e;
	a->arrival_ns = INT64_MAX;
	return SIM_SRC_WAIT;
}

static void test_waiting_source_without_feedback_fails(void **st)
{
	(void)st;
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, NULL, 0, &cfg, &e), 0);
	sim_source_t src = {always_wait, NULL, "waits"};
	sim_results_t r;
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, "waits: the source waits for results but the run has no "
				      "feedback"));
	cli_config_free(cfg);
}

TEST_MAIN(cmocka_unit_test(test_closed_loop_next_arrival_is_previous_end_plus_think),
	  cmocka_unit_test(test_closed_loop_exponential_think_after_end),
	  cmocka_unit_test(test_closed_loop_request_count_by_hand),
	  cmocka_unit_test(test_sessions_deterministic_per_seed),
	  cmocka_unit_test(test_sessions_documents_shared_across_sessions),
	  cmocka_unit_test(test_sessions_oracle_predictor_refused),
	  cmocka_unit_test(test_sessions_oracle_bound_on_realized_stream),
	  cmocka_unit_test(test_sessions_config_errors),
	  cmocka_unit_test(test_sessions_requests_cap),
	  cmocka_unit_test(test_clients_script_end_stops_user),
	  cmocka_unit_test(test_clients_stages),
	  cmocka_unit_test(test_waiting_source_without_feedback_fails))

/* Validation of the cluster model (sim/cluster/ through sim_run with a source):
 * queueing theory (M/G/1 against Pollaczek-Khinchine, Little's law),
 * conservation of requests and KV blocks, determinism, causality of shared
 * prefixes, preemption under KV pressure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "sim/base/cfg.h"
#include "sim/cluster/cluster.h"
#include "sim/run/recorder.h"
#include "sim/run/sim.h"
#include "sim/run/sim_schema.h"

/* ---- a synthetic source: Poisson arrivals, exponential prompt lengths ---- */
typedef struct gen {
	gsl_rng *rng;
	uint64_t n, max;
	double rate;          /* requests per second */
	double mean_len;      /* prompt tokens (exponential, ceil) */
	uint32_t out_len;
	uint32_t block_tokens;
	uint32_t shared_prefix_blocks; /* leading blocks common to every request */
	double t;
	uint64_t ids[4096];
} gen_t;

static int gen_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	gen_t *g = ctx;
	if (g->n == g->max)
		return 0;
	g->t += gsl_ran_exponential(g->rng, 1.0 / g->rate);
	uint32_t len = (uint32_t)ceil(gsl_ran_exponential(g->rng, g->mean_len));
	if (len > 4000 * g->block_tokens)
		len = 4000 * g->block_tokens;
	a->id = g->n;
	a->arrival_ns = (int64_t)(g->t * 1e9);
	a->in_len = len;
	a->out_len = g->out_len;
	a->n_blocks = len / g->block_tokens;
	for (uint32_t i = 0; i < a->n_blocks; i++)
		g->ids[i] = i < g->shared_prefix_blocks ? 0xabc0000 + i
							: (g->n << 20) + i + 0x1000000000ULL;
	a->blocks = g->ids;
	a->status = 0;
	g->n++;
	return 1;
}

static cfg_t *make_cfg(const char **sets, size_t n)
{
	cfg_schema_t *s = cfg_schema_default();
	cfg_t *c = cfg_new(s);
	err_t e = {0};
	/* the engine's times, worked by hand: no front-end time */
	assert_int_equal(cfg_set(c, "scheduler.frontend_ms=0", &e), 0);
	for (size_t i = 0; i < n; i++)
		if (cfg_set(c, sets[i], &e)) {
			fprintf(stderr, "%s\n", e.msg);
			fail();
		}
	assert_int_equal(cfg_finalize(c, &e), 0);
	return c;
}

static void free_cfg(cfg_t *c)
{
	const cfg_schema_t *s = cfg_schema(c);
	cfg_free(c);
	cfg_schema_free((cfg_schema_t *)s);
}

/* Runs g's requests (its stream seeded with seed) on a config of sets over
 * the schema defaults; the test fails when the run does. */
static sim_results_t run_gen(const char **sets, size_t n, gen_t *g, uint64_t seed, const char *name)
{
	cfg_t *cfg = make_cfg(sets, n);
	g->rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g->rng, seed);
	sim_source_t src = {gen_next, g, name};
	sim_results_t r;
	err_t e = {0};
	int rc = sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	gsl_rng_free(g->rng);
	free_cfg(cfg);
	return r;
}

/* E[S] and E[S^2] of the prefill service time when L = ceil(Exp(mean)). */
static void service_moments(double mean_len, double *m1, double *m2)
{
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_t c;
	err_t e;
	assert_int_equal(mdl_hw_builtin("H100-SXM", &hw, &e), 0);
	assert_int_equal(mdl_llm_builtin("Llama-3-8B", &llm, &e), 0);
	assert_int_equal(mdl_compute_init(&c, &hw, &llm, 1, &mdl_compute_params_default, &e), 0);
	double q = exp(-1.0 / mean_len), p = 1, s1 = 0, s2 = 0;
	for (uint32_t k = 1; k < (uint32_t)(40 * mean_len); k++) {
		double pk = p * (1 - q); /* P(ceil(X) = k) */
		double s = (double)mdl_prefill_time_ns(&c, k, 0) / 1e9;
		s1 += pk * s;
		s2 += pk * s * s;
		p *= q;
	}
	*m1 = s1;
	*m2 = s2;
}

static void check_mg1(double rho)
{
	const uint32_t c = 4;
	const double mean_len = 2000;
	double m1, m2;
	service_moments(mean_len, &m1, &m2);
	double lam_i = rho / m1, lam = c * lam_i;
	const char *sets[] = {
		"gpu.name=H100-SXM", "model.name=Llama-3-8B", "cluster.nodes=1",
		"cluster.gpus_per_node=4", "cluster.tp=1", "policy.routing.name=random",
		"scheduler.max_num_seqs=1", "scheduler.chunked_prefill=false",
		"scheduler.max_batched_tokens=1048576", "kvcache.block_tokens=512",
		"experiment.seed=42",
	};
	gen_t g = {
	    .max = 400000, .rate = lam, .mean_len = mean_len, .out_len = 1, .block_tokens = 512};
	sim_results_t r = run_gen(sets, sizeof sets / sizeof *sets, &g, 12345, "gen:mg1");
	double wsum = 0;
	size_t n = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
		wsum += (double)r.req[i].queue_ns / 1e9;
		n++;
	}
	double w = wsum / n;
	double w_pk = lam_i * m2 / (2 * (1 - rho)); /* Pollaczek-Khinchine */
	printf("rho=%.2f: E[S]=%.4f s, W measured %.4f s, W_PK %.4f s, rel err %.4f\n", rho, m1,
	       w, w_pk, fabs(w - w_pk) / w_pk);
	assert_true(fabs(w - w_pk) / w_pk < 0.03);
	/* Little's law: time-average queue length = arrival rate x mean wait */
	double lq = sim_results_get(&r, "queue_len_mean");
	double t_end = sim_results_get(&r, "sim_time_s");
	double little = (double)n / t_end * w;
	printf("Little: Lq %.4f, lambda*W %.4f\n", lq, little);
	assert_true(fabs(lq - little) / little < 0.01);
	sim_results_free(&r);
}

static void test_mg1_waiting_time_matches_pk_at_rho_05(void **st)
{
	(void)st;
	check_mg1(0.5);
}

static void test_mg1_waiting_time_matches_pk_at_rho_08(void **st)
{
	(void)st;
	check_mg1(0.8);
}

/* A busy cluster with shared prefixes and long outputs under KV pressure. */
static sim_results_t run_pressure(uint64_t seed, const char *busy_rule)
{
	char seedset[64], rule[64];
	snprintf(seedset, sizeof seedset, "experiment.seed=%llu", (unsigned long long)seed);
	snprintf(rule, sizeof rule, "kvcache.busy_rule=%s", busy_rule);
	const char *sets[] = {
		"gpu.name=H100-SXM", "model.name=Llama-3-8B", "cluster.nodes=1",
		"cluster.gpus_per_node=2", "cluster.tp=1", "policy.routing.name=least_load",
		"cluster.kv_blocks=400", "kvcache.block_tokens=16", seedset, rule,
	};
	gen_t g = {.max = 3000,
	           .rate = 40,
	           .mean_len = 600,
	           .out_len = 200,
	           .block_tokens = 16,
	           .shared_prefix_blocks = 20};
	return run_gen(sets, sizeof sets / sizeof *sets, &g, seed, "gen:pressure");
}

static void test_every_request_ends_and_kv_is_conserved(void **st)
{
	(void)st;
	const char *rules[] = {"wait", "recompute"};
	for (int k = 0; k < 2; k++) {
		sim_results_t r = run_pressure(3, rules[k]);
		assert_int_equal(r.n_req, 3000);
		/* past capacity: requests waiting longer than experiment.client_timeout_s
		 * end abandoned, their KV conserved as every other's */
		size_t done = 0, rejected = 0, abandoned = 0;
		for (size_t i = 0; i < r.n_req; i++) {
			done += r.req[i].status == REQ_COMPLETED;
			rejected += r.req[i].status == REQ_REJECTED_TOO_LONG;
			abandoned += r.req[i].status == REQ_ABANDONED;
			if (r.req[i].status == REQ_COMPLETED) {
				assert_true(r.req[i].ttft_ns > 0);
				assert_true(r.req[i].e2e_ns >= r.req[i].ttft_ns);
				const res_request_t *q = &r.req[i];
				assert_true((uint64_t)q->tok_local + q->tok_peer + q->tok_host +
						    q->tok_recomputed >=
					    q->input_tokens);
			}
		}
		assert_int_equal(done + rejected + abandoned, 3000);
		assert_true(rejected < 10);
		assert_true(sim_results_get(&r, "kv_block_allocs") > 0);
		assert_true(sim_results_get(&r, "kv_block_allocs") ==
			    sim_results_get(&r, "kv_block_frees"));
		/* the shared system prompt was reused */
		assert_true(sim_results_get(&r, "hit_rate_tokens") > 0.01);
		sim_results_free(&r);
	}
}

static void test_same_seed_same_results(void **st)
{
	(void)st;
	sim_results_t a = run_pressure(5, "wait"), b = run_pressure(5, "wait");
	assert_int_equal(a.n_req, b.n_req);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	sim_results_t c = run_pressure(6, "wait");
	assert_true(c.n_req != a.n_req || memcmp(a.req, c.req, a.n_req * sizeof *a.req));
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&c);
}

/* Two requests with the same 85-token prompt (5 full 16-token blocks) on one
 * instance with a 64-token iteration budget. The first prefills blocks 0-3
 * in iteration 1 and block 4 in iteration 2; the second, arriving during
 * iteration 1, is considered in iteration 2 while block 4 is still being
 * computed: it may not read it early. */
typedef struct two {
	int n;
	uint64_t ids[8];
	int64_t t2;
} two_t;

static int two_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	two_t *t = ctx;
	if (t->n == 2)
		return 0;
	for (int i = 0; i < 8; i++)
		t->ids[i] = 500 + i;
	a->id = (uint64_t)t->n;
	a->arrival_ns = t->n ? t->t2 : 0;
	a->in_len = 5 * 16 + 5;
	a->out_len = 3;
	a->n_blocks = 5;
	a->blocks = t->ids;
	a->status = 0;
	t->n++;
	return 1;
}

/* ---- the incremental decode-token counter --------------------------------- */

typedef struct churn {
	cluster_t cl;
	gsl_rng *rng;
	uint32_t left;
	uint64_t checks, nonzero;
	sim_results_t res;
} churn_t;

/* 2 us per iteration plus 10 ns per prefill token and 50 ns per decode. */
static int64_t churn_cost(void *ctx, const sim_batch_t *b)
{
	(void)ctx;
	int64_t t = 2000 + 50 * (int64_t)b->n_dec;
	for (uint32_t i = 0; i < b->n_pre; i++)
		t += 10 * (int64_t)b->pre_new[i];
	return t;
}

/* One arrival: a random prompt (often sharing a stem) on a random instance. */
static int churn_arrival(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	churn_t *c = ctx;
	uint64_t ids[64];
	uint32_t in = 1 + (uint32_t)gsl_rng_uniform_int(c->rng, 600); /* fits the pool */
	uint32_t nb = in / 16, fam = (uint32_t)gsl_rng_uniform_int(c->rng, 4);
	for (uint32_t i = 0; i < nb; i++)
		ids[i] = i < 20 ? ((uint64_t)fam << 32) + i : ((uint64_t)c->left << 40) + i;
	uint32_t out = 1 + (uint32_t)gsl_rng_uniform_int(c->rng, 60);
	uint32_t inst = (uint32_t)gsl_rng_uniform_int(c->rng, c->cl.p.n_instances);
	int rc = cluster_submit(&c->cl, inst, c->left, in, out, ids, nb);
	if (rc || --c->left == 0)
		return rc;
	int64_t gap = 1 + (int64_t)gsl_rng_uniform_int(c->rng, 40000);
	return ev_engine_after(eng, gap, 9, 0, 0) == EV_NONE ? KS_ENOMEM : 0;
}

/* After every event: each instance's counter equals a recount from its
 * running requests (context of those past their prefill). */
static int churn_check(void *ctx, ev_engine_t *eng)
{
	(void)eng;
	churn_t *c = ctx;
	for (uint32_t i = 0; i < c->cl.p.n_instances; i++) {
		const sim_inst_t *in = &c->cl.inst[i];
		uint64_t n = 0;
		for (uint32_t k = 0; k < in->n_run; k++)
			if (in->run[k]->done_tok >= in->run[k]->target)
				n += in->run[k]->in_len + in->run[k]->generated;
		if (n != in->decode_tokens)
			return KS_ERUNTIME;
		c->nonzero += n > 0;
	}
	c->checks++;
	return 0;
}

/* 2000 random requests on 3 instances with a 60-block pool (preemptions,
 * waits on shared blocks, completions): the counter routers read in O(1)
 * never drifts from a recount, and cluster_check agrees. */
static void test_decode_tokens_counter_equals_recount(void **st)
{
	(void)st;
	ev_engine_t *eng = ev_engine_new(64);
	churn_t c = {.left = 2000};
	c.rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(c.rng, 9);
	cluster_params_t p = {.n_instances = 3, .block_tokens = 16, .kv_blocks = 60,
			      .block_bytes = 1, .max_num_seqs = 8, .max_batched_tokens = 256,
			      .chunked_prefill = 1, .cost = churn_cost,
			      .on_result = rec_request, .result_ctx = &c.res};
	assert_int_equal(cluster_init(&c.cl, &p, eng), 0);
	assert_int_equal(ev_engine_register(eng, 9, churn_arrival, &c), 0);
	ev_engine_set_check(eng, churn_check, &c);
	assert_true(ev_engine_at(eng, 0, 9, 0, 0) != EV_NONE);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_true(c.checks > 10000);
	assert_true(c.nonzero > 1000);
	assert_int_equal(cluster_check(&c.cl), 0);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(c.cl.inst[i].decode_tokens, 0);
	assert_int_equal(cluster_finish(&c.cl), 0);
	assert_int_equal(c.res.n_req, 2000);
	cluster_free(&c.cl);
	ev_engine_free(eng);
	gsl_rng_free(c.rng);
	sim_results_free(&c.res);
}

static void test_second_request_waits_for_blocks_being_computed(void **st)
{
	(void)st;
	const char *sets[] = {"gpu.name=H100-SXM", "model.name=Llama-3-8B", "cluster.nodes=1",
			      "cluster.gpus_per_node=1", "cluster.tp=1", "kvcache.block_tokens=16",
			      "scheduler.max_batched_tokens=64"};
	cfg_t *cfg = make_cfg(sets, sizeof sets / sizeof *sets);
	two_t t = {.t2 = 1000}; /* 1 us: the first is mid-prefill (5 chunks) */
	sim_source_t src = {two_next, &t, "two"};
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), 0);
	assert_int_equal(r.n_req, 2);
	const res_request_t *a = r.req[0].id == 0 ? &r.req[0] : &r.req[1];
	const res_request_t *b = r.req[0].id == 0 ? &r.req[1] : &r.req[0];
	assert_int_equal(a->tok_local, 0);
	/* wait rule: b is admitted in iteration 3, once block 4 exists, and hits
	 * all five blocks */
	assert_int_equal(b->tok_local, 80);
	assert_true(b->queue_ns > 0);
	assert_true(b->arrival_ns + b->queue_ns > a->arrival_ns + a->ttft_ns - 1);
	sim_results_free(&r);
	/* with the recompute rule, b computes them itself instead */
	free_cfg(cfg);
	const char *sets2[] = {"gpu.name=H100-SXM", "model.name=Llama-3-8B", "cluster.nodes=1",
			       "cluster.gpus_per_node=1", "cluster.tp=1", "kvcache.block_tokens=16",
			       "scheduler.max_batched_tokens=64", "kvcache.busy_rule=recompute"};
	cfg = make_cfg(sets2, sizeof sets2 / sizeof *sets2);
	t = (two_t){.t2 = 1000};
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), 0);
	b = r.req[0].id == 0 ? &r.req[1] : &r.req[0];
	/* recompute rule: b is admitted in iteration 2 with the four ready
	 * blocks and computes block 4 and the tail itself */
	assert_int_equal(b->tok_local, 64);
	assert_int_equal(b->tok_recomputed, 21);
	sim_results_free(&r);
	free_cfg(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_request_waits_for_blocks_being_computed),
		cmocka_unit_test(test_decode_tokens_counter_equals_recount),
		cmocka_unit_test(test_every_request_ends_and_kv_is_conserved),
		cmocka_unit_test(test_same_seed_same_results),
		cmocka_unit_test(test_mg1_waiting_time_matches_pk_at_rho_05),
		cmocka_unit_test(test_mg1_waiting_time_matches_pk_at_rho_08),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

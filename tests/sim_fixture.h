/* Helper shared by the whole-run tests: load a config and run it, failing
 * the test with the error message otherwise. Header-only (static). */
#ifndef KVSIM_SIM_FIXTURE_H
#define KVSIM_SIM_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/run/cli_common.h"
#include "sim/run/sim.h"

/* The --set that takes the front-end's time off TTFT and E2E
 * (scheduler.frontend_ms), for tests that check an engine's times. */
#define SF_NO_FRONTEND "scheduler.frontend_ms=0"

/* Runs CONFIG (NULL: the built-in default experiment) with SF_NO_FRONTEND
 * and then n --set overrides, on src's requests (NULL: the config's trace) and with the run
 * options o (NULL: none); the caller frees the results with
 * sim_results_free. */
__attribute__((unused)) static sim_results_t sf_run_opts(const char *config,
                                                         const char *const *sets, int n,
                                                         sim_source_t *src,
                                                         const sim_run_opts_t *o)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	/* the engine's times, as these tests work them out by hand: no
	 * front-end time unless a test sets one (its own --set comes after) */
	const char *all[n + 1];
	all[0] = SF_NO_FRONTEND;
	for (int i = 0; i < n; i++)
		all[i + 1] = sets[i];
	int rc = cli_load_config(config, all, n + 1, &cfg, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	sim_results_t r;
	sim_run_opts_t ro = o ? *o : (sim_run_opts_t){0};
	ro.source = src;
	rc = sim_run(cfg, &ro, &r, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	cli_config_free(cfg);
	return r;
}

/* sf_run_opts without run options. */
__attribute__((unused)) static sim_results_t sf_run_source(const char *config,
                                                           const char *const *sets, int n,
                                                           sim_source_t *src)
{
	return sf_run_opts(config, sets, n, src, NULL);
}

__attribute__((unused)) static sim_results_t sf_run(const char *config, const char *const *sets,
                                                    int n)
{
	return sf_run_source(config, sets, n, NULL);
}

/* A synthetic source: max requests, each a prefix of `shared` blocks common
 * to all (ids base + i) and one block of its own (id own + n), of
 * (shared + 1) * block_tokens prompt tokens and out_len output tokens.
 * Request n arrives at t[n] when t is set, else at n * gap_ns. */
typedef struct sf_prefix {
	int n, max;
	uint32_t shared;
	uint64_t base, own;
	int64_t gap_ns;
	const int64_t *t; /* ns, max entries; NULL: evenly spaced */
	uint32_t block_tokens, out_len;
	uint64_t ids[256];
} sf_prefix_t;

/* max requests of 16-token blocks sharing `shared` blocks from id base,
 * each with its own block own + n and out_len output tokens, all arriving
 * at t = 0 until the caller sets gap_ns or t. */
__attribute__((unused)) static sf_prefix_t sf_prefix(int max, uint32_t shared, uint64_t base,
                                                     uint64_t own, uint32_t out_len)
{
	return (sf_prefix_t){.max = max,
	                     .shared = shared,
	                     .base = base,
	                     .own = own,
	                     .block_tokens = 16,
	                     .out_len = out_len};
}

__attribute__((unused)) static int sf_prefix_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	sf_prefix_t *p = ctx;
	if (p->n == p->max)
		return 0;
	assert_true(p->shared < sizeof p->ids / sizeof p->ids[0]);
	for (uint32_t i = 0; i <= p->shared; i++)
		p->ids[i] = i < p->shared ? p->base + i : p->own + (uint64_t)p->n;
	int64_t at = p->t ? p->t[p->n] : (int64_t)p->n * p->gap_ns;
	*a = (sim_arrival_t){.id = (uint64_t)p->n,
			     .arrival_ns = at,
			     .in_len = (p->shared + 1) * p->block_tokens,
			     .out_len = p->out_len,
			     .n_blocks = p->shared + 1,
			     .blocks = p->ids};
	p->n++;
	return 1;
}

/* A hand-made trace, the source sf_script_next reads: request i arrives at
 * t_ns[i] ns (t_s[i] s when t_ns is NULL) with the prompt blocks
 * ids[i * stride ..][0..n[i]) of 16 tokens each and out[i] output tokens
 * (n or out NULL: n_all or out_all for every request). */
typedef struct sf_script {
	int i, count;
	const int64_t *t_ns;
	const double *t_s;
	const uint64_t *ids;
	uint32_t stride;
	const uint32_t *n, *out;
	uint32_t n_all, out_all;
} sf_script_t;

__attribute__((unused)) static int sf_script_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	sf_script_t *sc = ctx;
	if (sc->i == sc->count)
		return 0;
	int i = sc->i++;
	uint32_t n = sc->n ? sc->n[i] : sc->n_all;
	*a = (sim_arrival_t){.id = (uint64_t)i,
	                     .arrival_ns = sc->t_ns ? sc->t_ns[i] : (int64_t)(sc->t_s[i] * 1e9),
	                     .in_len = n * 16,
	                     .out_len = sc->out ? sc->out[i] : sc->out_all,
	                     .n_blocks = n,
	                     .blocks = sc->ids + (size_t)i * sc->stride};
	return 1;
}

/* The value of the summary metric name; the test fails when the summary
 * lacks it (sim_results_get's NaN would not tell a missing metric). */
__attribute__((unused)) static double sf_metric(const sim_results_t *r, const char *name)
{
	for (size_t i = 0; i < r->n_metric; i++)
		if (!strcmp(r->metric[i].name, name))
			return r->metric[i].value;
	fail_msg("no metric %s in the summary", name);
	return NAN;
}

/* Window w's value of metric name (res->win); the test fails when there is
 * none. */
__attribute__((unused)) static double sf_window(const sim_results_t *r, int32_t w, const char *name)
{
	for (size_t i = 0; i < r->n_win; i++)
		if (r->win[i].window == w && !strcmp(r->win[i].name, name))
			return r->win[i].value;
	fail_msg("window %d has no metric %s", w, name);
	return NAN;
}

/* The row of request id among n result rows; the test fails when there is
 * none. */
__attribute__((unused)) static const res_request_t *sf_request(const res_request_t *rows, size_t n,
                                                               uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].id == id)
			return &rows[i];
	fail_msg("request %llu has no result", (unsigned long long)id);
	return NULL;
}

#endif

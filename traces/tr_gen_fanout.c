/* tr_gen_fanout — gen = fanout: fanout_bursts bursts (one per equal slot of
 * duration_s, start uniform in the slot) of fanout_size requests spread
 * uniformly over fanout_window_s sharing a fanout_prefix_tokens-token prefix
 * (input = prefix + a draw from the input distribution), plus Poisson
 * background at fanout_bg_rate (prefix model) and fanout_decoys groups of
 * fanout_decoy_size requests with their own shared prefix (near-misses for
 * burst detectors). Load: trace.rate_scale multiplies the number of bursts
 * and of decoy groups (each of unchanged size) and fanout_bg_rate (tr_gen.c
 * load_scale). */
#include <gsl/gsl_randist.h>
#include <stdlib.h>

#include "traces/tr_gen_int.h"

static int fanout_plan(gen_src_t *g, err_t *e)
{
	const tr_opts_t *o = &g->o;
	uint64_t n = (uint64_t)o->fanout_bursts * o->fanout_size +
	             (uint64_t)o->fanout_decoys * o->fanout_decoy_size;
	if (n > 100u * 1000 * 1000)
		return err_set(e, KS_EINPUT,
		               "[trace] fanout_bursts: %llu burst requests is too many",
		               (unsigned long long)n);
	if (o->fanout_window_s > o->duration_s)
		return err_set(e, KS_EINPUT, "[trace] fanout_window_s: longer than duration_s");
	if (n && !(g->ev = malloc(n * sizeof *g->ev)))
		return err_set(e, KS_ENOMEM, "out of memory");
	uint64_t base = tr_mix(tr_mix(TR_ROOT_ID, g->seed), 0x66616e6f7574ULL);
	double slot = o->duration_s / (o->fanout_bursts ? o->fanout_bursts : 1);
	for (uint32_t b = 0; b < o->fanout_bursts; b++) {
		double room = slot > o->fanout_window_s ? slot - o->fanout_window_s : 0;
		double t0 = b * slot + gsl_rng_uniform(g->arr) * room;
		uint64_t key = tr_mix(base, b);
		for (uint32_t k = 0; k < o->fanout_size; k++)
			g->ev[g->n_ev++] =
			    (fan_ev_t){t0 + gsl_rng_uniform(g->arr) * o->fanout_window_s, key,
			               o->fanout_prefix_tokens};
	}
	for (uint32_t d = 0; d < o->fanout_decoys; d++) {
		double t0 = gsl_rng_uniform(g->arr) * (o->duration_s - o->fanout_window_s);
		uint64_t key = tr_mix(base, (1ULL << 40) + d);
		for (uint32_t k = 0; k < o->fanout_decoy_size; k++)
			g->ev[g->n_ev++] =
			    (fan_ev_t){t0 + gsl_rng_uniform(g->arr) * o->fanout_window_s, key,
			               o->fanout_prefix_tokens};
	}
	if (g->n_ev) /* no bursts at a small rate_scale: qsort wants a non-null base */
		qsort(g->ev, g->n_ev, sizeof *g->ev, tr_cmp_time);
	g->bg_next =
	    o->fanout_bg_rate > 0 ? gsl_ran_exponential(g->arr, 1 / o->fanout_bg_rate) : -1;
	if (g->bg_next > o->duration_s)
		g->bg_next = -1;
	return 0;
}

/* Merges the precomputed burst/decoy list with the background stream. */
static int fanout_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)e;
	const tr_opts_t *o = &g->o;
	int from_bg = g->bg_next >= 0 && (g->i_ev >= g->n_ev || g->bg_next < g->ev[g->i_ev].t);
	if (from_bg) {
		*t = g->bg_next;
		g->bg_next += gsl_ran_exponential(g->arr, 1 / o->fanout_bg_rate);
		if (g->bg_next > o->duration_s)
			g->bg_next = -1;
	} else if (g->i_ev < g->n_ev) {
		const fan_ev_t *v = &g->ev[g->i_ev++];
		*t = v->t;
		tr_raw_shared_prefix(raw, g->segs, v->key, v->prefix);
	} else {
		return 0;
	}
	return 1;
}

static int fanout_check(const tr_opts_t *o, err_t *e)
{
	if (!(o->duration_s > 0))
		return err_set(e, KS_EINPUT, "[trace] duration_s: gen = fanout needs it > 0");
	return 0;
}

/* The bursts are capped in fanout_plan; the background at its rate. */
static double fanout_expected(const tr_opts_t *o)
{
	return o->fanout_bg_rate * o->duration_s;
}

const tr_gen_ops_t tr_gen_fanout = {.name = "fanout",
                                    .check = fanout_check,
                                    .expected = fanout_expected,
                                    .init = fanout_plan,
                                    .next = fanout_next};

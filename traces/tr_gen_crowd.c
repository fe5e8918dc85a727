/* tr_gen_crowd — flash crowds on a long prefix that exists before they come.
 *
 * The fan-out generator gives each burst a fresh prefix, so no KV of it is
 * computed anywhere until the burst itself starts and a speculative copy has
 * nothing to read. Here each of crowd_count events first sends
 * crowd_warm_requests requests with its prefix at t0 (they compute it on the
 * instances they are routed to), then crowd_size requests with the same
 * prefix arrive uniformly in [t0 + crowd_lead_s, + crowd_window_s): a
 * predictor that sees the warm-up (or the oracle) has crowd_lead_s to copy
 * the prefix where the crowd will land. Events take one equal slot of
 * duration_s each, t0 uniform within the slot's room (slot - lead - window).
 * The last crowd_repeat events reuse the prefix of an earlier event drawn
 * uniformly (a returning crowd: the prefix may still be cached somewhere).
 * Background: Poisson at crowd_bg_rate, ramped linearly to crowd_bg_rate_end
 * over duration_s by thinning (Lewis & Shedler 1979); its requests carry no
 * content, so the prefix model applies as to every generator.
 *
 * Streams as tr_gen.c: stream 1 of the seed draws every time (event plan,
 * background), stream 2 every length. A request's input is the prefix plus
 * a draw from the input distribution (capped at max_tokens), as fanout's.
 *
 * Load: crowd_load() is trace.rate_scale, the one factor on this
 * generator's arrival intensity: it multiplies the background rate and each
 * crowd's size (requests/s scale by the factor), while the events, their
 * warm-up requests, lead time and window stay, as the fan-out generator
 * keeps its burst size (tr_gen.c load_scale). tr_read.c does not compress a
 * generator's times.
 */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr_int.h"

typedef struct crowd_ev {
	double t;
	uint64_t key;
} crowd_ev_t;

typedef struct crowd_src {
	tr_src_t base;
	tr_opts_t o;
	tr_gen_rand_t rnd;
	crowd_ev_t *ev; /* warm-up and crowd requests, by time */
	size_t n_ev, i_ev;
	double bg_next, bg_max; /* next background candidate (-1: none), thinning bound */
	uint64_t count;
	tr_seg_t segs[2];
} crowd_src_t;

static double crowd_load(const tr_opts_t *o)
{
	return o->rate_scale > 0 ? o->rate_scale : 1;
}

static double bg_rate_end(const tr_opts_t *o)
{
	return o->crowd_bg_rate_end < 0 ? o->crowd_bg_rate : o->crowd_bg_rate_end;
}

/* Background intensity at t s: linear from crowd_bg_rate to the end rate. */
static double bg_rate_at(const tr_opts_t *o, double t)
{
	double r0 = o->crowd_bg_rate, r1 = bg_rate_end(o);
	return crowd_load(o) * (r0 + (r1 - r0) * fmin(t / o->duration_s, 1));
}

/* The next background arrival after t, or -1 past duration_s. */
static double bg_after(crowd_src_t *g, double t)
{
	const tr_opts_t *o = &g->o;
	if (!(g->bg_max > 0))
		return -1;
	do {
		t += gsl_ran_exponential(g->rnd.arr, 1 / g->bg_max);
		if (t > o->duration_s)
			return -1;
	} while (gsl_rng_uniform(g->rnd.arr) * g->bg_max > bg_rate_at(o, t));
	return t;
}

static int crowd_next(tr_src_t *b, tr_raw_t *raw, err_t *e)
{
	(void)e;
	crowd_src_t *g = (crowd_src_t *)b;
	const tr_opts_t *o = &g->o;
	if (o->requests && g->count >= o->requests)
		return 0;
	memset(raw, 0, sizeof *raw);
	double t;
	if (g->bg_next >= 0 && (g->i_ev >= g->n_ev || g->bg_next < g->ev[g->i_ev].t)) {
		t = g->bg_next;
		g->bg_next = bg_after(g, t);
	} else if (g->i_ev < g->n_ev) {
		const crowd_ev_t *v = &g->ev[g->i_ev++];
		t = v->t;
		tr_raw_shared_prefix(raw, g->segs, v->key, o->crowd_prefix_tokens);
	} else {
		return 0;
	}
	raw->t_ns = (int64_t)llround(t * 1e9);
	tr_gen_rand_lengths(&g->rnd, o, raw->segs ? o->crowd_prefix_tokens : 0, raw);
	g->count++;
	return 1;
}

static void crowd_close(tr_src_t *b)
{
	crowd_src_t *g = (crowd_src_t *)b;
	tr_gen_rand_close(&g->rnd);
	free(g->ev);
	free(g);
}

/* The constraints between keys that the schema's ranges cannot state. */
static int crowd_check(const tr_opts_t *o, err_t *e)
{
	int rc = tr_opts_check(o, e);
	if (rc)
		return rc;
	if (!(o->duration_s > 0))
		return err_set(e, KS_EINPUT, "[trace] duration_s: gen = crowd needs it > 0");
	if (o->crowd_count && o->crowd_repeat >= o->crowd_count)
		return err_set(e, KS_EINPUT,
		               "[trace] crowd_repeat: %u repeats need at least one earlier event "
		               "(crowd_count = %u)",
		               o->crowd_repeat, o->crowd_count);
	double slot = o->crowd_count ? o->duration_s / o->crowd_count : o->duration_s;
	if (o->crowd_lead_s + o->crowd_window_s > slot)
		return err_set(e, KS_EINPUT,
		               "[trace] crowd_lead_s: crowd_lead_s + crowd_window_s = %g s does not "
		               "fit an event's slot (duration_s / crowd_count = %g s)",
		               o->crowd_lead_s + o->crowd_window_s, slot);
	if (o->crowd_prefix_tokens > o->max_tokens)
		return err_set(e, KS_EINPUT, "[trace] crowd_prefix_tokens: %u is above max_tokens (%u)",
		               o->crowd_prefix_tokens, o->max_tokens);
	return 0;
}

static int crowd_plan(crowd_src_t *g, uint64_t seed, err_t *e)
{
	const tr_opts_t *o = &g->o;
	double f = crowd_load(o);
	uint32_t warm = o->crowd_warm_requests; /* the warm-up computes the prefix: not load */
	uint32_t size = tr_gen_scaled_count(o->crowd_size, f); /* rounded as fanout's bursts */
	uint64_t n = (uint64_t)o->crowd_count * (warm + size);
	if (n > 100u * 1000 * 1000)
		return err_set(e, KS_EINPUT, "[trace] crowd_count: %llu crowd requests is too many",
		               (unsigned long long)n);
	if (n && !(g->ev = malloc(n * sizeof *g->ev)))
		return err_set(e, KS_ENOMEM, "out of memory");
	/* "crowd" in ASCII: distinct from fanout's salt, so the two never share ids */
	uint64_t base = tr_mix(tr_mix(TR_ROOT_ID, seed), 0x63726f7764ULL);
	uint32_t fresh = o->crowd_count - o->crowd_repeat;
	double slot = o->duration_s / (o->crowd_count ? o->crowd_count : 1);
	double room = slot - o->crowd_lead_s - o->crowd_window_s;
	for (uint32_t k = 0; k < o->crowd_count; k++) {
		double t0 = k * slot + gsl_rng_uniform(g->rnd.arr) * room;
		uint32_t of = k < fresh ? k : (uint32_t)gsl_rng_uniform_int(g->rnd.arr, fresh);
		uint64_t key = tr_mix(base, of);
		for (uint32_t w = 0; w < warm; w++)
			g->ev[g->n_ev++] = (crowd_ev_t){t0, key};
		for (uint32_t c = 0; c < size; c++)
			g->ev[g->n_ev++] = (crowd_ev_t){
			    t0 + o->crowd_lead_s + gsl_rng_uniform(g->rnd.arr) * o->crowd_window_s, key};
	}
	if (g->n_ev) /* qsort wants a non-null base */
		qsort(g->ev, g->n_ev, sizeof *g->ev, tr_cmp_time);
	g->bg_max = crowd_load(o) * fmax(o->crowd_bg_rate, bg_rate_end(o));
	g->bg_next = bg_after(g, 0);
	return 0;
}

static int crowd_open(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e)
{
	*out = NULL;
	int rc = crowd_check(o, e);
	if (rc)
		return rc;
	crowd_src_t *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	g->o = *o;
	g->base.next = crowd_next;
	g->base.close = crowd_close;
	if ((rc = tr_gen_rand_open(&g->rnd, o, seed, e)) || (rc = crowd_plan(g, seed, e)))
		goto fail;
	*out = &g->base;
	return 0;
fail:
	crowd_close(&g->base);
	return rc;
}

/* A source of its own: its checks, load and lengths are above. */
const tr_gen_ops_t tr_gen_crowd = {.name = "crowd", .open = crowd_open};

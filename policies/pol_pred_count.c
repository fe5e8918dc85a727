/* pol_pred_count — counting predictors: repeat_count (the X-repeats-in-Z-
 * seconds rule) and ewma (decayed popularity over a bounded heavy-hitter
 * table). */
#include "policies/pol_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NS 1e9

/* ---- repeat_count ---------------------------------------------------------
 * Every node of the prefix table keeps the times of the last X arrivals
 * whose prompt contains it (a ring). A prefix is hot when its X-th most
 * recent arrival is within Z seconds: the count can only fall with depth,
 * so the deepest hot prefix is found by binary search. */

#define RC_MAX_X 64

typedef struct rc_ring {
	uint32_t n, head;
	int64_t t[]; /* X slots */
} rc_ring_t;

typedef struct rc_params {
	uint32_t rc_min_blocks;
	uint32_t rc_repeats;
	double rc_window_s;
	double rc_hot_s;
	uint32_t rc_capacity;
} rc_params_t;

typedef struct rc_state {
	pol_pred_base_t b; /* gs: the hot prefixes, score = fire time, so the stalest is dropped */
	rc_params_t p;
	int64_t window_ns, hot_ns;
} rc_state_t;

static const cfg_tkey_t rc_params[] = {
    POL_KEY("predictor", "repeat_count", "rc_min_blocks", CFG_INT, "4", 1, 1e6, NULL, "blocks",
            "Y: shortest prefix (in blocks) that may become hot (own choice)",
            CFG_AT(U32, rc_params_t, rc_min_blocks)),
    POL_KEY("predictor", "repeat_count", "rc_repeats", CFG_INT, "3", 1, RC_MAX_X, NULL, "",
            "X: arrivals containing the prefix needed inside the window (own choice)",
            CFG_AT(U32, rc_params_t, rc_repeats)),
    POL_KEY("predictor", "repeat_count", "rc_window_s", CFG_FLOAT, "10", 1e-6, 1e6, NULL, "s",
            "Z: window the X arrivals must fall in (own choice)",
            CFG_AT(DOUBLE, rc_params_t, rc_window_s)),
    POL_KEY("predictor", "repeat_count", "rc_hot_s", CFG_FLOAT, "30", 1e-6, 1e6, NULL, "s",
            "how long a fired prefix stays in the forecast after its last firing",
            CFG_AT(DOUBLE, rc_params_t, rc_hot_s)),
    POL_KEY("predictor", "repeat_count", "rc_capacity", CFG_INT, "262144", 64, 1e9, NULL, "blocks",
            "prefix-table capacity (older half dropped when full)",
            CFG_AT(U32, rc_params_t, rc_capacity)),
};

static int rc_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const rc_params_t *p = params;
	(void)seed;
	rc_state_t *s =
	    pol_pred_new(sizeof *s, (size_t)p->rc_capacity,
	                 sizeof(rc_ring_t) + p->rc_repeats * sizeof(int64_t), 1024, 0, NULL, e);
	if (!s)
		return e->code;
	s->p = *p;
	s->window_ns = (int64_t)(p->rc_window_s * NS);
	s->hot_ns = (int64_t)(p->rc_hot_s * NS);
	*state = s;
	return 0;
}

typedef struct rc_visit {
	uint32_t x;
	int64_t t;
} rc_visit_t;

static void rc_push(void *payload, uint32_t depth, void *arg)
{
	(void)depth;
	rc_ring_t *r = payload;
	const rc_visit_t *v = arg;
	r->t[r->head] = v->t;
	r->head = (r->head + 1) % v->x;
	if (r->n < v->x)
		r->n++;
}

/* The oldest of the last X arrival times of node id (INT64_MIN if < X). */
static int64_t rc_xth(rc_state_t *s, uint64_t id)
{
	rc_ring_t *r = pol_ptab_payload(s->b.tab, id);
	if (!r || r->n < s->p.rc_repeats)
		return INT64_MIN;
	return r->t[r->head % s->p.rc_repeats]; /* full ring: head is the oldest */
}

static int rc_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	rc_state_t *s = st;
	rc_visit_t v = {s->p.rc_repeats, a->t_ns};
	if (pol_ptab_touch(s->b.tab, a->blocks, a->n_blocks, a->t_ns, rc_push, &v))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (a->n_blocks < s->p.rc_min_blocks)
		return 0;
	int64_t since = a->t_ns - s->window_ns;
	/* deepest depth d in [min_blocks, n] whose X-th latest arrival >= since */
	uint32_t lo = s->p.rc_min_blocks - 1, hi = a->n_blocks; /* answer in [lo, hi]; lo = none */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (rc_xth(s, a->blocks[mid - 1]) >= since)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo < s->p.rc_min_blocks)
		return 0;
	pol_group_t *g = pol_groups_get(&s->b.gs, a->blocks, lo, a->t_ns, NULL);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	g->score = (double)a->t_ns; /* last firing */
	g->last_ns = a->t_ns;
	g->err = (double)(a->t_ns - rc_xth(s, a->blocks[lo - 1])); /* span of the X */
	pol_group_note_inst(g, a->inst, 1.0);
	return 0;
}

static int rc_forecast(void *st, int64_t now, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	rc_state_t *s = st;
	s->b.out.n = 0;
	for (size_t i = 0; i < s->b.gs.n;) {
		pol_group_t *g = &s->b.gs.g[i];
		if (now - g->last_ns > s->hot_ns) {
			pol_groups_remove(&s->b.gs, i);
			continue;
		}
		/* X arrivals over their span, extrapolated over the horizon */
		double span = g->err > 0 ? g->err : (double)s->window_ns;
		double ex = (double)(s->p.rc_repeats > 1 ? s->p.rc_repeats - 1 : 1) / span *
		            (double)horizon;
		if (!pol_fcbuf_push_group(&s->b.out, g, ex, now))
			return err_set(e, KS_ENOMEM, "out of memory");
		i++;
	}
	pol_fcbuf_publish(&s->b.out, 0, out);
	return 0;
}

static uint32_t rc_min_blocks(const void *st)
{
	return ((const rc_state_t *)st)->p.rc_min_blocks;
}

const struct pol_predictor_ops pol_pred_repeat_count = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "repeat_count",
             "A prefix of at least Y blocks contained in X arrivals within Z seconds is hot "
             "(the trigger rule of the original early-RDMA proposal). Forecasts each hot "
             "prefix, the deepest one that satisfies the rule, for rc_hot_s after it last "
             "fired; expected arrivals extrapolate the X arrivals' rate over the horizon.",
             POL_PARAMS(rc_params, rc_params_t), rc_init, pol_pred_free},
    .observe = rc_observe,
    .forecast = rc_forecast,
    .min_blocks = rc_min_blocks,
};

/* ---- ewma -----------------------------------------------------------------
 * Each arrival is credited to its group: the longest prefix (>= min blocks)
 * that an earlier arrival shared. Popularity is an exponentially decayed
 * count, s(t) = s(t0) e^{-(t-t0)/tau} + 1 per arrival, kept for at most
 * `ewma_capacity` groups with space-saving replacement (Metwally et al.,
 * ICDT 2005). For a steady rate lambda, s -> lambda tau, so the forecast is
 * s/tau arrivals per second over the horizon. */

typedef struct ew_params {
	double ewma_tau_s;
	uint32_t ewma_top_k;
	uint32_t ewma_capacity;
	uint32_t ewma_min_blocks;
	double ewma_min_score;
	uint32_t ewma_table;
} ew_params_t;

typedef struct ew_state {
	pol_pred_base_t b;
	ew_params_t p;
	double tau_ns;
} ew_state_t;

static const cfg_tkey_t ew_params[] = {
    POL_KEY("predictor", "ewma", "ewma_tau_s", CFG_FLOAT, "30", 1e-3, 1e6, NULL, "s",
            "decay time constant of the popularity count (own choice)",
            CFG_AT(DOUBLE, ew_params_t, ewma_tau_s)),
    POL_KEY("predictor", "ewma", "ewma_top_k", CFG_INT, "16", 1, 4096, NULL, "",
            "prefixes reported per forecast",
            CFG_AT(U32, ew_params_t, ewma_top_k)),
    POL_KEY("predictor", "ewma", "ewma_capacity", CFG_INT, "256", 1, 1e6, NULL, "",
            "heavy-hitter table size (space-saving)",
            CFG_AT(U32, ew_params_t, ewma_capacity)),
    POL_KEY("predictor", "ewma", "ewma_min_blocks", CFG_INT, "4", 1, 1e6, NULL, "blocks",
            "shortest shared prefix that forms a group (own choice)",
            CFG_AT(U32, ew_params_t, ewma_min_blocks)),
    POL_KEY("predictor", "ewma", "ewma_min_score", CFG_FLOAT, "2", 0, 1e9, NULL, "",
            "decayed count a group needs to be reported (own choice)",
            CFG_AT(DOUBLE, ew_params_t, ewma_min_score)),
    POL_KEY("predictor", "ewma", "ewma_table", CFG_INT, "262144", 64, 1e9, NULL, "blocks",
            "prefix-table capacity used to find shared prefixes",
            CFG_AT(U32, ew_params_t, ewma_table)),
};

static int ew_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const ew_params_t *p = params;
	(void)seed;
	ew_state_t *s =
	    pol_pred_new(sizeof *s, (size_t)p->ewma_table, 0, (size_t)p->ewma_capacity, 0, NULL, e);
	if (!s)
		return e->code;
	s->p = *p;
	s->tau_ns = p->ewma_tau_s * NS;
	*state = s;
	return 0;
}

static double ew_decayed(const ew_state_t *s, const pol_group_t *g, int64_t now)
{
	int64_t dt = now > g->last_ns ? now - g->last_ns : 0;
	return g->score * exp(-(double)dt / s->tau_ns);
}

static int ew_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	ew_state_t *s = st;
	uint32_t m = pol_ptab_match(s->b.tab, a->blocks, a->n_blocks);
	int64_t prev = m ? pol_ptab_last(s->b.tab, a->blocks[m - 1]) : 0;
	if (pol_ptab_touch(s->b.tab, a->blocks, a->n_blocks, a->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (m < s->p.ewma_min_blocks)
		return 0;
	/* decay every score to now so space-saving compares like with like */
	for (size_t i = 0; i < s->b.gs.n; i++) {
		s->b.gs.g[i].score = ew_decayed(s, &s->b.gs.g[i], a->t_ns);
		s->b.gs.g[i].last_ns = a->t_ns;
	}
	int fresh = !pol_groups_find(&s->b.gs, a->blocks, m);
	pol_group_t *g = pol_groups_get(&s->b.gs, a->blocks, m, a->t_ns, NULL);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	if (fresh) /* the earlier arrival that shared it counts too */
		g->score += exp(-(double)(a->t_ns - prev) / s->tau_ns);
	g->score += 1;
	pol_group_note_inst(g, a->inst, 1.0);
	return 0;
}

static int ew_forecast(void *st, int64_t now, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	ew_state_t *s = st;
	s->b.out.n = 0;
	for (size_t i = 0; i < s->b.gs.n; i++) {
		const pol_group_t *g = &s->b.gs.g[i];
		double sc = ew_decayed(s, g, now);
		if (sc < s->p.ewma_min_score)
			continue;
		if (!pol_fcbuf_push_group(&s->b.out, g, sc / s->tau_ns * (double)horizon, now))
			return err_set(e, KS_ENOMEM, "out of memory");
	}
	pol_fcbuf_publish(&s->b.out, s->p.ewma_top_k, out);
	return 0;
}

static uint32_t ew_min_blocks(const void *st)
{
	return ((const ew_state_t *)st)->p.ewma_min_blocks;
}

const struct pol_predictor_ops pol_pred_ewma = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "ewma",
             "Exponentially decayed popularity per shared prefix over a bounded space-saving "
             "heavy-hitter table (Metwally et al. 2005); reports the top-k prefixes whose "
             "decayed count reaches ewma_min_score, expecting count/tau arrivals per second.",
             POL_PARAMS(ew_params, ew_params_t), ew_init, pol_pred_free},
    .observe = ew_observe,
    .forecast = ew_forecast,
    .min_blocks = ew_min_blocks,
};

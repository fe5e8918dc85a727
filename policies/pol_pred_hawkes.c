/* pol_pred_hawkes — self-exciting (Hawkes) burst model per prefix group.
 * Intensity lambda(t) = mu + sum_i alpha e^{-beta (t - t_i)} (Hawkes 1971),
 * fitted online by maximum likelihood (GSL Nelder-Mead) over the group's
 * arrivals of the last hawkes_window_s, every hawkes_refit arrivals; the
 * forecast is the expected count in the horizon (pol_hawkes_expected). */
#include "policies/pol_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct hk_group {
	double *t; /* arrival times, seconds, ascending */
	uint32_t n, since_fit;
	int fitted;
	double mu, alpha, beta;
	double excess; /* sum alpha e^{-beta (t_last - t_i)} at the last arrival */
} hk_group_t;

typedef struct hk_params {
	double hawkes_window_s;
	uint32_t hawkes_max_events;
	uint32_t hawkes_refit;
	uint32_t hawkes_min_events;
	uint32_t hawkes_min_blocks;
	double hawkes_min_expected;
	uint32_t hawkes_top_k;
	uint32_t hawkes_capacity;
	uint32_t hawkes_table;
} hk_params_t;

typedef struct hk_state {
	pol_pred_base_t b; /* gs ext = hk_group_t */
	hk_params_t p;
} hk_state_t;

static const cfg_tkey_t hk_params[] = {
    POL_KEY("predictor", "hawkes", "hawkes_window_s", CFG_FLOAT, "120", 1e-3, 1e6, NULL, "s",
            "sliding window of arrivals the fit uses (own choice)",
            CFG_AT(DOUBLE, hk_params_t, hawkes_window_s)),
    POL_KEY("predictor", "hawkes", "hawkes_max_events", CFG_INT, "256", 8, 1e6, NULL, "",
            "arrivals kept per group for the fit (oldest dropped; own choice)",
            CFG_AT(U32, hk_params_t, hawkes_max_events)),
    POL_KEY("predictor", "hawkes", "hawkes_refit", CFG_INT, "64", 1, 1e6, NULL, "",
            "arrivals between refits of a group (own choice)",
            CFG_AT(U32, hk_params_t, hawkes_refit)),
    POL_KEY("predictor", "hawkes", "hawkes_min_events", CFG_INT, "8", 2, 1e6, NULL, "",
            "arrivals before the first fit; until then the rate is count/window",
            CFG_AT(U32, hk_params_t, hawkes_min_events)),
    POL_KEY("predictor", "hawkes", "hawkes_min_blocks", CFG_INT, "4", 1, 1e6, NULL, "blocks",
            "shortest shared prefix that forms a group (own choice)",
            CFG_AT(U32, hk_params_t, hawkes_min_blocks)),
    POL_KEY("predictor", "hawkes", "hawkes_min_expected", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "expected arrivals in the horizon a group needs to be reported",
            CFG_AT(DOUBLE, hk_params_t, hawkes_min_expected)),
    POL_KEY("predictor", "hawkes", "hawkes_top_k", CFG_INT, "16", 1, 4096, NULL, "",
            "prefixes reported per forecast",
            CFG_AT(U32, hk_params_t, hawkes_top_k)),
    POL_KEY("predictor", "hawkes", "hawkes_capacity", CFG_INT, "64", 1, 1e5, NULL, "",
            "groups tracked (space-saving on arrivals in the window)",
            CFG_AT(U32, hk_params_t, hawkes_capacity)),
    POL_KEY("predictor", "hawkes", "hawkes_table", CFG_INT, "262144", 64, 1e9, NULL, "blocks",
            "prefix-table capacity used to find shared prefixes",
            CFG_AT(U32, hk_params_t, hawkes_table)),
};

static void hk_ext_free(void *ext)
{
	free(((hk_group_t *)ext)->t);
}

static int hk_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const hk_params_t *p = params;
	(void)seed;
	hk_state_t *s =
	    pol_pred_new(sizeof *s, (size_t)p->hawkes_table, 0, (size_t)p->hawkes_capacity,
	                 sizeof(hk_group_t), hk_ext_free, e);
	if (!s)
		return e->code;
	s->p = *p;
	*state = s;
	return 0;
}

/* Drops arrivals older than the window. */
static void hk_trim(const hk_state_t *s, hk_group_t *h, double now)
{
	uint32_t k = 0;
	while (k < h->n && h->t[k] < now - s->p.hawkes_window_s)
		k++;
	if (k) {
		memmove(h->t, h->t + k, (h->n - k) * sizeof *h->t);
		h->n -= k;
	}
}

static double hk_t0(const hk_state_t *s, const pol_group_t *g, double now)
{
	double born = (double)g->created_ns * 1e-9, t0 = now - s->p.hawkes_window_s;
	return t0 > born ? t0 : born;
}

static int hk_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	hk_state_t *s = st;
	uint32_t m = pol_ptab_match(s->b.tab, a->blocks, a->n_blocks);
	int64_t prev = m ? pol_ptab_last(s->b.tab, a->blocks[m - 1]) : 0;
	if (pol_ptab_touch(s->b.tab, a->blocks, a->n_blocks, a->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (m < s->p.hawkes_min_blocks)
		return 0;
	int fresh = !pol_groups_find(&s->b.gs, a->blocks, m);
	pol_group_t *g = pol_groups_get(&s->b.gs, a->blocks, m, fresh ? prev : a->t_ns, NULL);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	hk_group_t *h = g->ext;
	if (!h->t && !(h->t = malloc(s->p.hawkes_max_events * sizeof *h->t)))
		return err_set(e, KS_ENOMEM, "out of memory");
	double now = (double)a->t_ns * 1e-9;
	if (fresh) /* the earlier arrival that shared the prefix opened the group */
		h->t[h->n++] = (double)prev * 1e-9;
	hk_trim(s, h, now);
	if (h->n == s->p.hawkes_max_events) {
		memmove(h->t, h->t + 1, (h->n - 1) * sizeof *h->t);
		h->n--;
	}
	if (h->fitted) /* events dropped above are a window apart: negligible */
		h->excess =
		    h->n ? h->excess * exp(-h->beta * (now - h->t[h->n - 1])) + h->alpha : h->alpha;
	h->t[h->n++] = now;
	g->score = h->n;
	g->last_ns = a->t_ns;
	pol_group_note_inst(g, a->inst, 1.0);
	if (++h->since_fit >= s->p.hawkes_refit && h->n >= s->p.hawkes_min_events) {
		double mu = h->mu, al = h->alpha, be = h->beta;
		if (!pol_hawkes_fit(h->t, h->n, hk_t0(s, g, now), now, &mu, &al, &be)) {
			h->mu = mu;
			h->alpha = al;
			h->beta = be;
			h->fitted = 1;
			h->excess = 0; /* Ozaki's recursion with the new parameters */
			for (uint32_t j = 0; j < h->n; j++)
				h->excess =
				    (j ? h->excess * exp(-be * (h->t[j] - h->t[j - 1])) : 0) + al;
		}
		h->since_fit = 0;
	}
	return 0;
}

static int hk_forecast(void *st, int64_t now_ns, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	hk_state_t *s = st;
	double now = (double)now_ns * 1e-9, H = (double)horizon * 1e-9;
	s->b.out.n = 0;
	for (size_t i = 0; i < s->b.gs.n; i++) {
		pol_group_t *g = &s->b.gs.g[i];
		hk_group_t *h = g->ext;
		hk_trim(s, h, now);
		g->score = h->n;
		double ex;
		if (h->fitted) {
			double excess = 0;
			if (h->n && now >= h->t[h->n - 1])
				excess = h->excess * exp(-h->beta * (now - h->t[h->n - 1]));
			ex = pol_hawkes_expected(h->mu, h->alpha, h->beta, excess, H);
		} else {
			double span = now - hk_t0(s, g, now);
			ex = span > 0 ? h->n / span * H : 0;
		}
		if (!(ex >= s->p.hawkes_min_expected) || ex <= 0)
			continue;
		if (!pol_fcbuf_push_group(&s->b.out, g, ex, now_ns))
			return err_set(e, KS_ENOMEM, "out of memory");
	}
	pol_fcbuf_publish(&s->b.out, s->p.hawkes_top_k, out);
	return 0;
}

static uint32_t hk_min_blocks(const void *st)
{
	return ((const hk_state_t *)st)->p.hawkes_min_blocks;
}

const struct pol_predictor_ops pol_pred_hawkes = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "hawkes",
             "Self-exciting point process per shared-prefix group (Hawkes 1971, exponential "
             "kernel): mu, alpha, beta fitted by maximum likelihood (Ozaki 1979 recursion, "
             "GSL Nelder-Mead) over a sliding window; forecasts the expected arrivals in the "
             "horizon from the current intensity.",
             POL_PARAMS(hk_params, hk_params_t), hk_init, pol_pred_free},
    .observe = hk_observe,
    .forecast = hk_forecast,
    .min_blocks = hk_min_blocks,
};

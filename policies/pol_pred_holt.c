/* pol_pred_holt — Holt linear-trend forecast of the arrival rate per prefix
 * group and per instance (Holt 1957; Hyndman et al., "Forecasting with
 * exponential smoothing", 2008, ch. 2). Arrivals are counted in buckets of
 * holt_step_s; each finished bucket updates level and trend; the forecast
 * over a horizon of h buckets is sum_{j=1..h} max(0, level + j trend). */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
	pol_holt_t h;
	int64_t bucket; /* index of the bucket being counted */
	double count;
	int started;
} series_t;

typedef struct holt_params {
	double holt_step_s;
	double holt_alpha;
	double holt_beta;
	uint32_t holt_min_blocks;
	double holt_min_expected;
	uint32_t holt_top_k;
	uint32_t holt_capacity;
	uint32_t holt_table;
} holt_params_t;

typedef struct holt_state {
	pol_pred_base_t b; /* gs ext = series_t */
	holt_params_t p;
	int64_t step_ns;
	series_t *inst;
	uint32_t n_inst;
	double *inst_out;
} holt_state_t;

static const cfg_tkey_t holt_params[] = {
    POL_KEY("predictor", "holt", "holt_step_s", CFG_FLOAT, "1", 1e-3, 1e5, NULL, "s",
            "bucket width of the rate series (own choice)",
            CFG_AT(DOUBLE, holt_params_t, holt_step_s)),
    POL_KEY("predictor", "holt", "holt_alpha", CFG_FLOAT, "0.5", 0, 1, NULL, "",
            "level smoothing (own choice)",
            CFG_AT(DOUBLE, holt_params_t, holt_alpha)),
    POL_KEY("predictor", "holt", "holt_beta", CFG_FLOAT, "0.3", 0, 1, NULL, "",
            "trend smoothing (own choice)",
            CFG_AT(DOUBLE, holt_params_t, holt_beta)),
    POL_KEY("predictor", "holt", "holt_min_blocks", CFG_INT, "4", 1, 1e6, NULL, "blocks",
            "shortest shared prefix that forms a group (own choice)",
            CFG_AT(U32, holt_params_t, holt_min_blocks)),
    POL_KEY("predictor", "holt", "holt_min_expected", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "expected arrivals in the horizon a group needs to be reported",
            CFG_AT(DOUBLE, holt_params_t, holt_min_expected)),
    POL_KEY("predictor", "holt", "holt_top_k", CFG_INT, "16", 1, 4096, NULL, "",
            "prefixes reported per forecast",
            CFG_AT(U32, holt_params_t, holt_top_k)),
    POL_KEY("predictor", "holt", "holt_capacity", CFG_INT, "256", 1, 1e6, NULL, "",
            "groups tracked (space-saving on level)",
            CFG_AT(U32, holt_params_t, holt_capacity)),
    POL_KEY("predictor", "holt", "holt_table", CFG_INT, "262144", 64, 1e9, NULL, "blocks",
            "prefix-table capacity used to find shared prefixes",
            CFG_AT(U32, holt_params_t, holt_table)),
};

static int holt_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const holt_params_t *p = params;
	(void)seed;
	holt_state_t *s = pol_pred_new(sizeof *s, (size_t)p->holt_table, 0,
	                               (size_t)p->holt_capacity, sizeof(series_t), NULL, e);
	if (!s)
		return e->code;
	s->p = *p;
	s->step_ns = (int64_t)(p->holt_step_s * 1e9);
	*state = s;
	return 0;
}

static void holt_free(void *st)
{
	holt_state_t *s = st;
	FREE_ALL(s->inst, s->inst_out);
	pol_pred_free(s);
}

/* Closes every bucket before `bucket` (empty ones count as zero; after a
 * long idle gap the series restarts rather than replaying thousands of
 * zeros). */
static void series_advance(const holt_state_t *s, series_t *x, int64_t bucket)
{
	if (!x->started) {
		x->started = 1;
		x->bucket = bucket;
		return;
	}
	if (bucket - x->bucket > 10000) {
		memset(&x->h, 0, sizeof x->h);
		x->bucket = bucket;
		x->count = 0;
		return;
	}
	while (x->bucket < bucket) {
		pol_holt_update(&x->h, x->count, s->p.holt_alpha, s->p.holt_beta);
		x->count = 0;
		x->bucket++;
	}
}

static int holt_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	holt_state_t *s = st;
	int64_t b = a->t_ns / s->step_ns;
	if (a->inst >= 0) {
		if ((uint32_t)a->inst >= s->n_inst) {
			uint32_t n = (uint32_t)a->inst + 1;
			if (VEC_RESIZE(s->inst, n) || VEC_RESIZE(s->inst_out, n))
				return err_set(e, KS_ENOMEM, "out of memory");
			memset(s->inst + s->n_inst, 0, (n - s->n_inst) * sizeof *s->inst);
			s->n_inst = n;
		}
		series_advance(s, &s->inst[a->inst], b);
		s->inst[a->inst].count += 1;
	}
	uint32_t m = pol_ptab_match(s->b.tab, a->blocks, a->n_blocks);
	if (pol_ptab_touch(s->b.tab, a->blocks, a->n_blocks, a->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (m < s->p.holt_min_blocks)
		return 0;
	pol_group_t *g = pol_groups_get(&s->b.gs, a->blocks, m, a->t_ns, NULL);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	series_t *x = g->ext;
	series_advance(s, x, b);
	x->count += 1;
	g->score = x->h.n ? x->h.level : x->count;
	g->last_ns = a->t_ns;
	pol_group_note_inst(g, a->inst, 1.0);
	return 0;
}

static int holt_forecast(void *st, int64_t now, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	holt_state_t *s = st;
	int64_t b = now / s->step_ns;
	double steps = (double)horizon / (double)s->step_ns;
	s->b.out.n = 0;
	for (size_t i = 0; i < s->b.gs.n; i++) {
		pol_group_t *g = &s->b.gs.g[i];
		series_t *x = g->ext;
		series_advance(s, x, b);
		g->score = x->h.level;
		if (x->h.n < 2)
			continue;
		double ex = pol_holt_sum(&x->h, steps);
		if (ex < s->p.holt_min_expected || ex <= 0)
			continue;
		if (!pol_fcbuf_push_group(&s->b.out, g, ex, now))
			return err_set(e, KS_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < s->n_inst; i++) {
		series_advance(s, &s->inst[i], b);
		s->inst_out[i] = s->inst[i].h.n ? pol_holt_sum(&s->inst[i].h, steps) : 0;
	}
	pol_fcbuf_publish(&s->b.out, s->p.holt_top_k, out);
	out->inst_expected = s->n_inst ? s->inst_out : NULL;
	out->n_inst = s->n_inst;
	return 0;
}

static uint32_t holt_min_blocks(const void *st)
{
	return ((const holt_state_t *)st)->p.holt_min_blocks;
}

const struct pol_predictor_ops pol_pred_holt = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "holt",
             "Holt linear-trend (double exponential smoothing) forecast of the arrival rate "
             "per shared-prefix group and per instance (Holt 1957), over buckets of "
             "holt_step_s; reports groups expecting at least holt_min_expected arrivals in "
             "the horizon and fills per-instance expected arrivals.",
             POL_PARAMS(holt_params, holt_params_t), holt_init, holt_free},
    .observe = holt_observe,
    .forecast = holt_forecast,
    .min_blocks = holt_min_blocks,
};

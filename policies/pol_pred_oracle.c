/* pol_pred_oracle — reads the trace ahead (the simulator peeks every request
 * oracle_lead_s + 4 jitter before it arrives) and reports exactly which
 * shared prefixes will be requested in the horizon, with injected error:
 *  - recall: each prefix group is reported with this probability (drawn once
 *    per group), so recall 0 reports nothing and recall 1 everything;
 *  - fp_rate: per reported entry, this many extra entries (in expectation)
 *    name prefixes that will not be requested in the horizon (earlier seen
 *    groups when any, else invented ids that no instance holds);
 *  - jitter: each arrival becomes visible lead + N(0, jitter) before it
 *    happens (clipped to [0, lead + 4 jitter]), so forecasts come late or
 *    early.
 * A closed-loop workload (trace.gen = sessions) has no trace ahead: each
 * request exists only once its user's previous one completed, so the run
 * refuses this predictor with it (sim_core.c setup). */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <gsl/gsl_randist.h>
#include <stdlib.h>
#include <string.h>

typedef struct or_arr {
	int64_t t, visible;
} or_arr_t;

typedef struct or_group {
	or_arr_t *a;
	uint32_t n, cap;
	int reported;
} or_group_t;

typedef struct or_params {
	double oracle_lead_s;
	double oracle_recall;
	double oracle_fp_rate;
	double oracle_jitter_s;
	uint32_t oracle_min_blocks;
	uint32_t oracle_capacity;
	uint32_t oracle_table;
} or_params_t;

typedef struct or_state {
	pol_pred_base_t b; /* gs ext = or_group_t, score = latest pending arrival */
	or_params_t p;
	int64_t lead_ns, jitter_ns;
	gsl_rng *rng;
	uint64_t *fake; /* invented ids for false positives */
	size_t n_fake, cap_fake;
	size_t *pool;
	size_t cap_pool;
} or_state_t;

static const cfg_tkey_t or_params[] = {
    POL_KEY("predictor", "oracle", "oracle_lead_s", CFG_FLOAT, "10", 0, 1e6, NULL, "s",
            "how long before its arrival a request becomes visible",
            CFG_AT(DOUBLE, or_params_t, oracle_lead_s)),
    POL_KEY("predictor", "oracle", "oracle_recall", CFG_FLOAT, "1", 0, 1, NULL, "",
            "share of true future prefix groups reported",
            CFG_AT(DOUBLE, or_params_t, oracle_recall)),
    POL_KEY("predictor", "oracle", "oracle_fp_rate", CFG_FLOAT, "0", 0, 100, NULL, "",
            "false entries added per reported entry (expected)",
            CFG_AT(DOUBLE, or_params_t, oracle_fp_rate)),
    POL_KEY("predictor", "oracle", "oracle_jitter_s", CFG_FLOAT, "0", 0, 1e6, NULL, "s",
            "standard deviation of the lead time",
            CFG_AT(DOUBLE, or_params_t, oracle_jitter_s)),
    POL_KEY("predictor", "oracle", "oracle_min_blocks", CFG_INT, "1", 1, 1e6, NULL, "blocks",
            "shortest shared prefix reported",
            CFG_AT(U32, or_params_t, oracle_min_blocks)),
    POL_KEY("predictor", "oracle", "oracle_capacity", CFG_INT, "4096", 1, 1e7, NULL, "",
            "prefix groups tracked (the stalest is dropped)",
            CFG_AT(U32, or_params_t, oracle_capacity)),
    POL_KEY("predictor", "oracle", "oracle_table", CFG_INT, "1048576", 64, 1e9, NULL, "blocks",
            "prefix-table capacity used to find shared prefixes",
            CFG_AT(U32, or_params_t, oracle_table)),
};

static void or_ext_free(void *ext)
{
	free(((or_group_t *)ext)->a);
}

static void or_free(void *st)
{
	or_state_t *s = st;
	gsl_rng_free(s->rng);
	FREE_ALL(s->fake, s->pool);
	pol_pred_free(s);
}

static int or_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const or_params_t *p = params;
	or_state_t *s =
	    pol_pred_new(sizeof *s, (size_t)p->oracle_table, 0, (size_t)p->oracle_capacity,
	                 sizeof(or_group_t), or_ext_free, e);
	if (!s)
		return e->code;
	s->p = *p;
	s->lead_ns = (int64_t)(p->oracle_lead_s * 1e9);
	s->jitter_ns = (int64_t)(p->oracle_jitter_s * 1e9);
	s->rng = pol_rng_new(seed);
	if (!s->rng) {
		or_free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	*state = s;
	return 0;
}

static int64_t or_ahead(const void *st)
{
	const or_state_t *s = st;
	return s->lead_ns + 4 * s->jitter_ns;
}

static int or_peek(void *st, const pol_arrival_t *a, err_t *e)
{
	or_state_t *s = st;
	uint32_t m = pol_ptab_match(s->b.tab, a->blocks, a->n_blocks);
	if (pol_ptab_touch(s->b.tab, a->blocks, a->n_blocks, a->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (m < s->p.oracle_min_blocks)
		return 0;
	int fresh = !pol_groups_find(&s->b.gs, a->blocks, m);
	pol_group_t *g = pol_groups_get(&s->b.gs, a->blocks, m, a->t_ns, NULL);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	or_group_t *o = g->ext;
	if (fresh)
		o->reported = gsl_rng_uniform(s->rng) < s->p.oracle_recall;
	if (VEC_GROW(o->a, o->cap, o->n + 1, 8))
		return err_set(e, KS_ENOMEM, "out of memory");
	int64_t lead = s->lead_ns;
	if (s->jitter_ns > 0) {
		lead += (int64_t)gsl_ran_gaussian(s->rng, (double)s->jitter_ns);
		if (lead < 0)
			lead = 0;
		if (lead > or_ahead(s))
			lead = or_ahead(s);
	}
	o->a[o->n++] = (or_arr_t){a->t_ns, a->t_ns - lead};
	g->score = (double)a->t_ns;
	g->last_ns = a->t_ns;
	return 0;
}

static int or_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	(void)e;
	or_state_t *s = st;
	for (size_t i = 0; i < s->b.gs.n; i++) {
		pol_group_t *g = &s->b.gs.g[i];
		if (a->n_blocks >= g->n && a->blocks[g->n - 1] == g->key)
			pol_group_note_inst(g, a->inst, 1.0);
	}
	return 0;
}

static int or_fake_entry(or_state_t *s, const pol_fc_t *like, int64_t now)
{
	uint32_t n = like->n_blocks;
	if (s->n_fake + n > s->cap_fake)
		return KS_ENOMEM; /* sized in forecast; cannot happen */
	uint64_t *b = s->fake + s->n_fake;
	for (uint32_t i = 0; i < n; i++)
		b[i] = ((uint64_t)gsl_rng_get(s->rng) << 32) ^ gsl_rng_get(s->rng) ^ (1ULL << 63);
	s->n_fake += n;
	pol_fc_t *f = pol_fcbuf_push(&s->b.out);
	if (!f)
		return KS_ENOMEM;
	f->blocks = b;
	f->n_blocks = n;
	f->expected = 1;
	f->first_ns = now;
	return 0;
}

static int or_forecast(void *st, int64_t now, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	or_state_t *s = st;
	s->b.out.n = 0;
	s->n_fake = 0;
	if (VEC_GROW(s->pool, s->cap_pool, s->b.gs.n, s->b.gs.n))
		return err_set(e, KS_ENOMEM, "out of memory");
	size_t n_pool = 0, n_true;
	uint64_t fake_need = 0;
	for (size_t i = 0; i < s->b.gs.n; i++) {
		pol_group_t *g = &s->b.gs.g[i];
		or_group_t *o = g->ext;
		uint32_t k = 0;
		while (k < o->n && o->a[k].t <= now) /* arrived: consumed */
			k++;
		if (k) {
			memmove(o->a, o->a + k, (o->n - k) * sizeof *o->a);
			o->n -= k;
		}
		double cnt = 0;
		int64_t first = INT64_MAX;
		for (uint32_t j = 0; j < o->n; j++)
			if (o->a[j].visible <= now && o->a[j].t <= now + horizon) {
				cnt += 1;
				if (o->a[j].t < first)
					first = o->a[j].t;
			}
		if (cnt == 0) {
			s->pool[n_pool++] = i;
			continue;
		}
		if (!o->reported)
			continue;
		if (!pol_fcbuf_push_group(&s->b.out, g, cnt, first))
			return err_set(e, KS_ENOMEM, "out of memory");
		fake_need += g->n;
	}
	n_true = s->b.out.n;
	if (s->p.oracle_fp_rate > 0 && n_true) {
		double want = s->p.oracle_fp_rate * (double)n_true;
		size_t n_fp =
		    (size_t)want + (gsl_rng_uniform(s->rng) < want - (double)(size_t)want);
		size_t need = fake_need * (n_fp / n_true + 2);
		if (VEC_GROW(s->fake, s->cap_fake, need, need))
			return err_set(e, KS_ENOMEM, "out of memory");
		for (size_t k = 0; k < n_fp; k++) {
			if (n_pool) { /* a real prefix that will not come in the horizon */
				size_t j = gsl_rng_uniform_int(s->rng, n_pool);
				const pol_group_t *g = &s->b.gs.g[s->pool[j]];
				s->pool[j] = s->pool[--n_pool];
				if (!pol_fcbuf_push_group(&s->b.out, g, 1, now))
					return err_set(e, KS_ENOMEM, "out of memory");
			} else {
				pol_fc_t like = s->b.out.e[gsl_rng_uniform_int(s->rng, n_true)];
				if (s->n_fake + like.n_blocks > s->cap_fake)
					break;
				if (or_fake_entry(s, &like, now))
					return err_set(e, KS_ENOMEM, "out of memory");
			}
		}
	}
	pol_fcbuf_publish(&s->b.out, 0, out);
	return 0;
}

static uint32_t or_min_blocks(const void *st)
{
	return ((const or_state_t *)st)->p.oracle_min_blocks;
}

const struct pol_predictor_ops pol_pred_oracle = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "oracle",
             "Reads the trace ahead: reports each shared prefix with the exact number of its "
             "requests arriving in the horizon (an upper bound on forecasting), degraded by a "
             "recall knob, a false-positive rate and lead-time jitter so that the value of "
             "forecast accuracy can be measured. Seeded from the run seed.",
             POL_PARAMS(or_params, or_params_t), or_init, or_free},
    .observe = or_observe,
    .peek_ahead_ns = or_ahead,
    .peek = or_peek,
    .forecast = or_forecast,
    .min_blocks = or_min_blocks,
};

/* sim_decisions — see sim_decisions.h. */
#include "sim/run/sim_decisions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

struct sim_dec {
	sim_results_t *res;
	uint32_t *m;   /* per instance: matched blocks */
	int64_t *est;  /* per instance: estimated TTFT, ns */
	uint32_t *h;   /* scratch: the best prefix's holders */
	uint32_t cap;  /* of the three */
	int lost;      /* an eviction row could not be stored */
	const struct pol_admission_ops *ad; /* the admission policy last seen */
	int ad_skip;   /* ... is accept_all: no rows */
};

sim_dec_t *sim_dec_new(sim_results_t *res)
{
	sim_dec_t *d = calloc(1, sizeof *d);
	if (d) {
		d->res = res;
		res->decisions = 1;
	}
	return d;
}

void sim_dec_free(sim_dec_t *d)
{
	if (!d)
		return;
	free(d->m);
	free(d->est);
	free(d->h);
	free(d);
}

/* A new row of kind k at now_ns with every field a kind may not use at its
 * none value; NULL when out of memory (or an earlier eviction row was
 * lost, so that the run fails at the next call that can say so). */
static res_decision_t *row_new(sim_dec_t *d, int kind, int64_t now_ns)
{
	sim_results_t *res = d->res;
	if (d->lost || VEC_GROW(res->dec, res->cap_dec, res->n_dec + 1, 1024))
		return NULL;
	res_decision_t *r = &res->dec[res->n_dec++];
	*r = (res_decision_t){.t_ns = now_ns, .kind = kind, .outcome = DEC_OUT_OK, .src = -1,
	                      .chosen_est_ns = -1, .best_est_ns = -1, .regret_ns = -1,
	                      .opt0_inst = -1, .opt1_inst = -1, .opt2_inst = -1, .opt3_inst = -1,
	                      .opt0_score = -1, .opt1_score = -1, .opt2_score = -1,
	                      .opt3_score = -1, .tier = -1, .age_ns = -1, .score = -1,
	                      .slo_ns = -1};
	return r;
}

int sim_dec_route(sim_dec_t *d, const pol_view_t *v, const pol_req_t *q, uint32_t chosen,
                  int hinted, int64_t now_ns)
{
	uint32_t n = v->n_inst, mcap = d->cap, hcap = d->cap;
	if (VEC_GROW(d->m, mcap, n, n) || VEC_GROW(d->h, hcap, n, n) ||
	    VEC_GROW(d->est, d->cap, n, n))
		return KS_ENOMEM;
	pol_view_ttft_all(v, q, d->m, d->est, d->h);
	/* the lowest DEC_TOP_K estimates by insertion, ties to the lower index */
	int32_t top[DEC_TOP_K];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = k < DEC_TOP_K ? k++ : DEC_TOP_K;
		for (; j > 0 && d->est[top[j - 1]] > d->est[i]; j--)
			if (j < DEC_TOP_K)
				top[j] = top[j - 1];
		if (j < DEC_TOP_K)
			top[j] = (int32_t)i;
	}
	res_decision_t *r = row_new(d, DEC_ROUTE, now_ns);
	if (!r)
		return KS_ENOMEM;
	r->id = q->id;
	r->chosen = (int32_t)chosen;
	r->hinted = hinted != 0;
	r->n_options = n;
	r->chosen_matched = d->m[chosen];
	r->blocks = q->n_blocks;
	r->prefix = q->n_blocks ? q->blocks[0] : 0;
	r->chosen_est_ns = d->est[chosen];
	r->best_est_ns = d->est[top[0]];
	r->regret_ns = r->chosen_est_ns - r->best_est_ns;
	int32_t *oi[DEC_TOP_K] = {&r->opt0_inst, &r->opt1_inst, &r->opt2_inst, &r->opt3_inst};
	int64_t *os[DEC_TOP_K] = {&r->opt0_score, &r->opt1_score, &r->opt2_score, &r->opt3_score};
	for (uint32_t j = 0; j < k; j++) {
		*oi[j] = top[j];
		*os[j] = d->est[top[j]];
	}
	return 0;
}

int sim_dec_copy(sim_dec_t *d, const uint64_t *blocks, uint32_t n, uint32_t src, uint32_t dst,
                 int background, int rc, uint64_t copy_id, int64_t now_ns)
{
	res_decision_t *r = row_new(d, DEC_COPY, now_ns);
	if (!r)
		return KS_ENOMEM;
	r->outcome = rc == POL_COPY_OK ? DEC_OUT_OK : DEC_OUT_REFUSED;
	r->id = rc == POL_COPY_OK ? copy_id : 0;
	r->chosen = (int32_t)dst;
	r->hinted = background != 0;
	r->src = (int32_t)src;
	r->blocks = n;
	r->prefix = n ? blocks[0] : 0;
	return 0;
}

void sim_dec_outcome(sim_dec_t *d, uint64_t id, int outcome)
{
	sim_results_t *res = d->res;
	for (size_t i = res->n_dec; i-- > 0 && res->n_dec - i <= 2;)
		if (res->dec[i].kind == DEC_ROUTE && res->dec[i].id == id) {
			res->dec[i].outcome = outcome;
			return;
		}
}

void sim_dec_evict(sim_dec_t *d, const kv_store_t *kv, int tier, int32_t at,
                   const kv_block_info_t *b, double score, uint64_t seq, int64_t now_ns)
{
	res_decision_t *r = row_new(d, DEC_EVICT, now_ns);
	if (!r) {
		d->lost = 1;
		return;
	}
	r->chosen = at;
	r->chosen_matched = b->hits;
	r->blocks = 1;
	r->prefix = b->id;
	r->tier = tier;
	r->depth = b->depth;
	r->spec = b->spec != 0;
	r->used = b->hits > 0;
	r->age_ns = now_ns - b->last_use;
	r->score = score;
	r->seq = seq;
	uint64_t ids[DEC_TOP_K - 1];
	double prio[DEC_TOP_K - 1];
	uint32_t k = kv_evict_next(kv, DEC_TOP_K - 1, ids, prio);
	int64_t *os[DEC_TOP_K] = {&r->opt0_score, &r->opt1_score, &r->opt2_score, &r->opt3_score};
	*os[0] = llround(score);
	for (uint32_t j = 0; j < k; j++)
		*os[j + 1] = llround(prio[j]);
	r->n_options = kv_evictable(kv) + 1;
}

int sim_dec_admit(sim_dec_t *d, const struct pol_admission_ops *ad, const pol_view_t *v,
                  const pol_req_t *q, uint32_t inst, int rc, int64_t now_ns)
{
	if (ad != d->ad) {
		d->ad = ad;
		d->ad_skip = !strcmp(ad->base.name, "accept_all");
	}
	if (d->ad_skip)
		return 0;
	sim_results_t *res = d->res;
	int64_t route_est = res->n_dec && res->dec[res->n_dec - 1].kind == DEC_ROUTE &&
	                            res->dec[res->n_dec - 1].id == q->id
	                        ? res->dec[res->n_dec - 1].chosen_est_ns
	                        : -1;
	/* slo_reject's estimate (policies/pol_misc.c sr_admit) */
	uint32_t m = 0;
	int64_t est = pol_view_local_ttft_ns(v, q, inst, &m);
	res_decision_t *r = row_new(d, DEC_ADMIT, now_ns);
	if (!r)
		return KS_ENOMEM;
	r->outcome = rc == POL_ACCEPT ? DEC_OUT_OK : DEC_OUT_REJECTED_ADMISSION;
	r->id = q->id;
	r->chosen = (int32_t)inst;
	r->chosen_matched = m;
	r->blocks = q->n_blocks;
	r->prefix = q->n_blocks ? q->blocks[0] : 0;
	r->chosen_est_ns = route_est;
	r->score = (double)est;
	r->slo_ns = q->slo_ttft_ns;
	return 0;
}

/* sim_decisions — see sim_decisions.h. */
#include "sim/run/sim_decisions.h"

#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

struct sim_dec {
	sim_results_t *res;
	uint32_t *m;   /* per instance: matched blocks */
	int64_t *est;  /* per instance: estimated TTFT, ns */
	uint32_t cap;
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
	free(d);
}

int sim_dec_route(sim_dec_t *d, const pol_view_t *v, const pol_req_t *q, uint32_t chosen,
                  int hinted, int64_t now_ns)
{
	uint32_t n = v->n_inst, mcap = d->cap;
	if (VEC_GROW(d->m, mcap, n, n) || VEC_GROW(d->est, d->cap, n, n))
		return KS_ENOMEM;
	sim_results_t *res = d->res;
	if (VEC_GROW(res->dec, res->cap_dec, res->n_dec + 1, 1024))
		return KS_ENOMEM;
	uint32_t rbest = 0;
	for (uint32_t i = 0; i < n; i++) {
		d->m[i] = v->match(v->ctx, i, q->blocks, q->n_blocks);
		rbest = d->m[i] > rbest ? d->m[i] : rbest;
	}
	/* the lowest DEC_TOP_K estimates by insertion, ties to the lower index */
	int32_t top[DEC_TOP_K];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		pol_inst_t x;
		v->inst(v->ctx, i, &x);
		d->est[i] = pol_view_ttft_ns(v, q, d->m, rbest, i, x.queue_delay_ns);
		uint32_t j = k < DEC_TOP_K ? k++ : DEC_TOP_K;
		for (; j > 0 && d->est[top[j - 1]] > d->est[i]; j--)
			if (j < DEC_TOP_K)
				top[j] = top[j - 1];
		if (j < DEC_TOP_K)
			top[j] = (int32_t)i;
	}
	res_decision_t *r = &res->dec[res->n_dec++];
	*r = (res_decision_t){.t_ns = now_ns, .kind = DEC_ROUTE, .outcome = DEC_OUT_OK,
			      .id = q->id, .chosen = (int32_t)chosen, .hinted = hinted != 0,
			      .n_options = n, .chosen_matched = d->m[chosen], .src = -1,
			      .blocks = q->n_blocks, .prefix = q->n_blocks ? q->blocks[0] : 0,
			      .chosen_est_ns = d->est[chosen], .best_est_ns = d->est[top[0]]};
	r->regret_ns = r->chosen_est_ns - r->best_est_ns;
	int32_t *oi[DEC_TOP_K] = {&r->opt0_inst, &r->opt1_inst, &r->opt2_inst, &r->opt3_inst};
	int64_t *os[DEC_TOP_K] = {&r->opt0_score, &r->opt1_score, &r->opt2_score, &r->opt3_score};
	for (uint32_t j = 0; j < DEC_TOP_K; j++) {
		*oi[j] = j < k ? top[j] : -1;
		*os[j] = j < k ? d->est[top[j]] : -1;
	}
	return 0;
}

int sim_dec_copy(sim_dec_t *d, const uint64_t *blocks, uint32_t n, uint32_t src, uint32_t dst,
                 int background, int rc, uint64_t copy_id, int64_t now_ns)
{
	sim_results_t *res = d->res;
	if (VEC_GROW(res->dec, res->cap_dec, res->n_dec + 1, 1024))
		return KS_ENOMEM;
	res->dec[res->n_dec++] = (res_decision_t){
	    .t_ns = now_ns, .kind = DEC_COPY, .outcome = rc == POL_COPY_OK ? DEC_OUT_OK : DEC_OUT_REFUSED,
	    .id = rc == POL_COPY_OK ? copy_id : 0, .chosen = (int32_t)dst, .hinted = background != 0,
	    .src = (int32_t)src, .blocks = n, .prefix = n ? blocks[0] : 0, .chosen_est_ns = -1,
	    .best_est_ns = -1, .regret_ns = -1, .opt0_inst = -1, .opt1_inst = -1, .opt2_inst = -1,
	    .opt3_inst = -1, .opt0_score = -1, .opt1_score = -1, .opt2_score = -1, .opt3_score = -1};
	return 0;
}

void sim_dec_outcome(sim_dec_t *d, uint64_t id, int outcome)
{
	sim_results_t *res = d->res;
	if (res->n_dec && res->dec[res->n_dec - 1].id == id)
		res->dec[res->n_dec - 1].outcome = outcome;
}

/* sim_rquality — see sim_rquality.h. */
#include "sim/run/sim_rquality.h"

#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/base/kv_filter.h"
#include "sim/base/mem.h"
#include "sim/run/recorder.h"

struct sim_rq {
	uint32_t n_inst;
	kv_filter_t **ever; /* per instance: every id READY there once */
	uint32_t *m;        /* scratch: true matches per instance */
	int64_t *est;       /* scratch: their TTFT estimates */
	uint32_t *h;        /* scratch: the best prefix's holders */
	uint64_t decisions, misrouted, stale, never, unseen;
	double regret_ns, misroute_regret_ns;
};

sim_rq_t *sim_rq_new(uint32_t n_inst)
{
	sim_rq_t *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->n_inst = n_inst;
	q->ever = calloc(n_inst ? n_inst : 1, sizeof *q->ever);
	q->m = calloc(n_inst ? n_inst : 1, sizeof *q->m);
	q->est = calloc(n_inst ? n_inst : 1, sizeof *q->est);
	q->h = calloc(n_inst ? n_inst : 1, sizeof *q->h);
	kvf_params_t p = {.kind = KVF_EXACT, .capacity = 1024};
	for (uint32_t i = 0; q->ever && i < n_inst; i++)
		if (!(q->ever[i] = kvf_new(&p)))
			break;
	if (!q->ever || !q->m || !q->est || !q->h || (n_inst && !q->ever[n_inst - 1])) {
		sim_rq_free(q);
		return NULL;
	}
	return q;
}

void sim_rq_free(sim_rq_t *q)
{
	if (!q)
		return;
	for (uint32_t i = 0; q->ever && i < q->n_inst; i++)
		kvf_free(q->ever[i]);
	FREE_ALL(q->ever, q->m, q->est, q->h, q);
}

int sim_rq_stored(sim_rq_t *q, uint32_t inst, uint64_t id)
{
	if (kvf_has(q->ever[inst], id, 0))
		return 0;
	return kvf_insert(q->ever[inst], id, 0) < 0 ? KS_ENOMEM : 0;
}

int sim_rq_decision(sim_rq_t *q, const pol_view_t *seen, const pol_view_t *truth,
		    const pol_req_t *r, uint32_t inst)
{
	uint32_t best = pol_view_ttft_all(truth, r, q->m, q->est, q->h);
	uint32_t believed = seen->match(seen->ctx, inst, r->blocks, r->n_blocks), real = q->m[inst];
	double regret = (double)(q->est[inst] - q->est[best]);
	q->decisions++;
	q->regret_ns += regret;
	if (believed > real) {
		q->misrouted++;
		q->misroute_regret_ns += regret;
		if (kvf_has(q->ever[inst], r->blocks[real], 0))
			q->stale++;
		else
			q->never++;
	} else if (believed < real) {
		q->unseen++;
	}
	return 0;
}

int sim_rq_report(const sim_rq_t *q, sim_results_t *res)
{
	double d = q->decisions ? (double)q->decisions : 1;
	/* REC_VIEW_MISROUTED_SHARE .. REC_VIEW_REGRET_MEAN_MS, in the recorder's order */
	const double m[] = {(double)q->misrouted / d, (double)q->stale / d, (double)q->never / d,
			    (double)q->unseen / d,
			    q->misrouted ? q->misroute_regret_ns / (double)q->misrouted / 1e6 : 0,
			    q->regret_ns / d / 1e6};
	_Static_assert(sizeof m / sizeof m[0] == REC_VIEW_REGRET_MEAN_MS - REC_VIEW_MISROUTED_SHARE + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (rec_metric(res, REC_VIEW_MISROUTED_SHARE + (int)i, m[i]))
			return KS_ENOMEM;
	return 0;
}

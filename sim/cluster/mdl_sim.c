/* mdl_sim — the compute model as the cluster scheduler's cost callbacks
 * (sim/cluster/cluster.h sim_cost_fn, sim_cost_run_fn): cost = mdl_sim_cost,
 * cost_run = mdl_sim_cost_run, cost_ctx = an initialised mdl_compute_t that
 * outlives the cluster. */
#include "sim/cluster/mdl_sim.h"

/* The model's view of the cluster's batch. */
static mdl_batch_t mdl_batch_of(const sim_batch_t *b)
{
	return (mdl_batch_t){
	    .n_prefill = b->n_pre,
	    .prefill_new = b->pre_new,
	    .prefill_cached = b->pre_ctx,
	    .n_decode = b->n_dec,
	    .decode_ctx = b->dec_ctx,
	};
}

int64_t mdl_sim_cost(void *ctx, const sim_batch_t *b)
{
	mdl_batch_t mb = mdl_batch_of(b);
	return mdl_iter_time_ns(ctx, &mb);
}

void mdl_sim_cost_run(void *ctx, const sim_batch_t *b, uint32_t steps, int64_t *dur)
{
	mdl_decode_run_seqs_ns(ctx, b->n_dec, b->dec_ctx, steps, dur);
}

double mdl_sim_cost_blame(void *ctx, const sim_batch_t *b, double limit_ns, char *why, size_t n)
{
	mdl_batch_t mb = mdl_batch_of(b);
	return mdl_cost_blame(ctx, &mb, limit_ns, why, n);
}

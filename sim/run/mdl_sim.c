/* mdl_sim — the compute model as the cluster scheduler's cost callbacks
 * (sim/cluster/cluster.h sim_cost_fn, sim_cost_run_fn): cost = mdl_sim_cost,
 * cost_run = mdl_sim_cost_run, cost_ctx = an initialised mdl_compute_t that
 * outlives the cluster. */
#include "models/mdl.h"
#include "sim/cluster/cluster.h"

int64_t mdl_sim_cost(void *ctx, const sim_batch_t *b)
{
	const mdl_compute_t *c = ctx;
	mdl_batch_t mb = {
	    .n_prefill = b->n_pre,
	    .prefill_new = b->pre_new,
	    .prefill_cached = b->pre_ctx,
	    .n_decode = b->n_dec,
	    .decode_ctx = b->dec_ctx,
	};
	return mdl_iter_time_ns(c, &mb);
}

void mdl_sim_cost_run(void *ctx, const sim_batch_t *b, uint32_t steps, int64_t *dur)
{
	mdl_decode_run_seqs_ns(ctx, b->n_dec, b->dec_ctx, steps, dur);
}

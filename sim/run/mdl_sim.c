/* mdl_sim — the compute model as the cluster scheduler's cost callback
 * (sim/cluster/cluster.h sim_cost_fn): cost = mdl_sim_cost, cost_ctx = an
 * initialised mdl_compute_t that outlives the cluster. */
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

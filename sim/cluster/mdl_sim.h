/* mdl_sim — the compute model (models/mdl.h) as the cluster scheduler's cost
 * callbacks (sim/cluster/cluster.h): cost = mdl_sim_cost, cost_run =
 * mdl_sim_cost_run, cost_ctx = an initialised mdl_compute_t that outlives
 * the cluster. Pure functions of their arguments. */
#ifndef KVSIM_MDL_SIM_H
#define KVSIM_MDL_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "models/mdl.h"
#include "sim/cluster/cluster.h"

/* sim_cost_fn: ctx is a const mdl_compute_t *; mdl_iter_time_ns of b. */
int64_t mdl_sim_cost(void *ctx, const sim_batch_t *b);
/* mdl_cost_blame on the cluster's batch (ctx: as for mdl_sim_cost). */
double mdl_sim_cost_blame(void *ctx, const sim_batch_t *b, double limit_ns, char *why, size_t n);
/* sim_cost_run_fn over mdl_decode_run_seqs_ns (ctx: as for mdl_sim_cost). */
void mdl_sim_cost_run(void *ctx, const sim_batch_t *b, uint32_t steps, int64_t *dur);

#endif

/* sim_join — instances that join the cluster cold ([cluster] join_instances,
 * join_at_s, join_every_s): a cluster scaling out under a load ramp.
 *
 * The last join_instances instances start absent and join in index order,
 * instance n - K + k at join time k (join_at_s lists them, non-decreasing;
 * join_every_s puts them at (k + 1) x every). Absent means outside every
 * view the policies get: the views' n_inst counts the instances present,
 * which are always instances [0, n_inst) since they join in index order, so
 * no router, hint, admission or replication policy can name an absent one
 * (the simulator already refuses instances >= n_inst: routing errors, copies
 * refused). The views' O(1) least-loaded index (sim_load.h) covers every
 * instance, so with cold join the views drop it and routers scan the
 * present ones. An absent instance thus receives no request and no copy
 * and holds no KV; at its join time it becomes routable with an empty cache
 * (checked: a joining instance holding a block is a runtime error). Not with
 * cluster.disagg (the decode pool follows the prefill pool's indices).
 *
 * Results: join.instances, join.first_s and join.last_s in the summary
 * (recorded only when join_instances > 0, so other runs keep their
 * /summary), and `kvsim run` prints them. A join event after the last
 * request completes still advances the clock to it (sim_time_s).
 * Errors: cfg_err_keys messages naming the keys (file:line: [cluster] key:
 * reason); everything is owned by the sim_ctx_t, freed by sim_join_free.
 */
#ifndef KVSIM_SIM_JOIN_H
#define KVSIM_SIM_JOIN_H

#include "sim/base/results.h"
#include "sim/run/sim_int.h"

/* After the views and the router replicas are set up (sim_rv_setup): hides
 * the cold instances and schedules their joins. 0 when join_instances is 0. */
int sim_join_setup(sim_ctx_t *s, err_t *e);
/* The join.* metrics (nothing when off). */
int sim_join_report(const sim_ctx_t *s, sim_results_t *res);
void sim_join_free(sim_ctx_t *s);

#endif

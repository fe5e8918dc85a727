/* sim_rquality — how good the routers' view was at each routing decision
 * (output.view_quality; on by itself with [policy.routing] view = events or
 * replicas > 1). At every decision the routing policy made (not a
 * replication hint) on instance i: believed = the routers' view's match on
 * i, true = the computed view's (KV that exists or is arriving there).
 * Misrouted: believed > true, split into stale (i had held, READY, the
 * first believed-but-absent block blocks[true] at some time before) and
 * never held; unseen: believed < true. Regret under the true state: min_ttft's
 * estimate (pol_view_ttft_ns) on i with the computed view minus the least
 * over the routers' instances. Times ns, reported in ms. Memory: the module
 * owns an exact "ever stored" set per instance, growing with the distinct
 * blocks that became READY there. Errors: KS_ENOMEM.
 */
#ifndef KVSIM_SIM_RQUALITY_H
#define KVSIM_SIM_RQUALITY_H

#include "policies/pol.h"
#include "sim/base/results.h"

typedef struct sim_rq sim_rq_t;

/* n_inst instances; NULL when out of memory. */
sim_rq_t *sim_rq_new(uint32_t n_inst);
void sim_rq_free(sim_rq_t *q);
/* Block id became READY on inst (0 or KS_ENOMEM). */
int sim_rq_stored(sim_rq_t *q, uint32_t inst, uint64_t id);
/* The policy routed r to inst reading `seen`; `truth` is the computed view
 * at the same instant. 0 or KS_ENOMEM. */
int sim_rq_decision(sim_rq_t *q, const pol_view_t *seen, const pol_view_t *truth,
		    const pol_req_t *r, uint32_t inst);
/* view.misrouted_share .. view.regret_mean_ms (recorder.h) into res. */
int sim_rq_report(const sim_rq_t *q, sim_results_t *res);

#endif

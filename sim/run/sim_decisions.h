/* sim_decisions — the decision trace (output.decisions): one /decisions row
 * per routing decision, made by the run after the router returns, so that
 * routers stay unaware of it, and one per copy a policy asks for through
 * pol_actions_t.copy (the run's own fetch decisions are not rows).
 *
 * For each instance the router could choose (the routers' view,
 * policy.routing.view) the trace computes the TTFT that min_ttft minimises,
 * pol_view_ttft_ns (Mooncake, Qin et al., FAST '25, Algorithm 1: estimated
 * queue delay + min(prefill after the instance's own matched prefix,
 * transfer of the best matched prefix from its nearest holder + prefill
 * after it)), at the moment of the decision. That estimate is every row's
 * score whichever router decided, so rows compare across routers: a
 * router's own score (load, matched blocks, Dynamo's cost) is not recorded.
 * regret_ns = the chosen instance's estimate - the lowest estimate (0 when
 * the router chose an instance the estimate ranks first; always 0 under
 * min_ttft, which minimises it). Copy rows carry -1 estimates. Cost: O(instances) view calls per
 * decision, plus a scan per instance that does not hold the best prefix;
 * nothing when off. Rows are appended to the caller's sim_results_t
 * (res->dec), which owns them. Times ns. Errors: KS_ENOMEM.
 */
#ifndef KVSIM_SIM_DECISIONS_H
#define KVSIM_SIM_DECISIONS_H

#include <stdint.h>

#include "policies/pol.h"
#include "sim/base/results.h"

typedef struct sim_dec sim_dec_t;

/* A trace writing to res (res->decisions set); NULL when out of memory. */
sim_dec_t *sim_dec_new(sim_results_t *res);
void sim_dec_free(sim_dec_t *d);
/* Records that q was routed to chosen (hinted: by the replication policy's
 * route hint) at now_ns, with the estimates v gives now; outcome enqueued
 * until sim_dec_outcome says otherwise. 0 or KS_ENOMEM. */
int sim_dec_route(sim_dec_t *d, const pol_view_t *v, const pol_req_t *q, uint32_t chosen,
                  int hinted, int64_t now_ns);
/* The last row's outcome (DEC_OUT_*), when it is request id's: a routed
 * request rejected by admission or a full queue. */
/* Records a copy of blocks[0..n) from src to dst a policy asked for and
 * what came of it (rc: a_copy's POL_COPY_* status; copy_id when started).
 * 0 or KS_ENOMEM. */
int sim_dec_copy(sim_dec_t *d, const uint64_t *blocks, uint32_t n, uint32_t src, uint32_t dst,
                 int background, int rc, uint64_t copy_id, int64_t now_ns);
void sim_dec_outcome(sim_dec_t *d, uint64_t id, int outcome);

#endif

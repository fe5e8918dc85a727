/* sim_decisions — the decision trace (output.decisions): one /decisions row
 * per routing decision, made by the run after the router returns, so that
 * routers stay unaware of it, one per copy a policy asks for through
 * pol_actions_t.copy (the run's own fetch decisions are not rows), one per
 * block a KV store evicts and one per admission call.
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
 * nothing when off.
 *
 * Evictions: a row per block evicted from an instance's HBM pool, and from
 * the host, NVMe and pool tiers where they report evictions (sim_tiers.h:
 * the host tier only when a tier below it is on). The score is the victim's
 * eviction priority, the eviction policy's priority recomputed from the
 * block's state (it depends on nothing that changes while a block is
 * evictable); under LRU, and in the tiers (LRU), there is no priority call
 * and the score is the block's last use, ns. The options are the victim
 * and the store's next candidates (kv_evict_next; sim_dec_evict below).
 * seq is the store's eviction count before the row's,
 * so an instance's rows number 0, 1, 2, ... when none is missed.
 *
 * Admissions: a row per admit call of a selected admission policy; none
 * under accept_all, which admits everything by definition. chosen_est_ns is
 * the route row's estimate for the chosen instance; score is the estimate
 * the SLO admission compares (policies/pol_misc.c slo_reject: queue delay +
 * prefill after the instance's own matched prefix, from the view admission
 * reads), so slo_reject rejects exactly when score > slo_slack x slo_ns.
 *
 * Rows are appended to the caller's sim_results_t (res->dec), which owns
 * them. Times ns. Errors: KS_ENOMEM; an eviction row that cannot be stored
 * (its callback returns nothing) fails the next route, copy or admission
 * row with KS_ENOMEM.
 */
#ifndef KVSIM_SIM_DECISIONS_H
#define KVSIM_SIM_DECISIONS_H

#include <stdint.h>

#include "policies/pol.h"
#include "sim/cluster/kv_store.h"
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
/* Records a copy of blocks[0..n) from src to dst a policy asked for and
 * what came of it (rc: a_copy's POL_COPY_* status; copy_id when started).
 * 0 or KS_ENOMEM. */
int sim_dec_copy(sim_dec_t *d, const uint64_t *blocks, uint32_t n, uint32_t src, uint32_t dst,
                 int background, int rc, uint64_t copy_id, int64_t now_ns);
/* Sets the outcome (DEC_OUT_*) of request id's route row, when it is among
 * the last two rows (its admission row may follow it): a routed request
 * rejected by admission or a full queue. */
void sim_dec_outcome(sim_dec_t *d, uint64_t id, int outcome);
/* Records that store kv at (tier, at: DEC row's chosen) evicted b at
 * now_ns with the given eviction score, after seq evictions there (called
 * from the store's eviction callback, b already out of its order). The
 * options are opt0 = b with its score, opt1..opt3 = the blocks the store
 * would evict next with the priorities it ranks them by (kv_evict_next),
 * rounded to integers (last use in ns under LRU, hits under lfu); their
 * opt*_inst are -1 and n_options is the evictable blocks b was chosen
 * among (b included). */
void sim_dec_evict(sim_dec_t *d, const kv_store_t *kv, int tier, int32_t at,
                   const kv_block_info_t *b, double score, uint64_t seq, int64_t now_ns);
/* Records admission ad's verdict rc (POL_ACCEPT / POL_REJECT) on q at inst,
 * with the estimate v gives now; nothing under accept_all. Call it right
 * after q's sim_dec_route. 0 or KS_ENOMEM. */
int sim_dec_admit(sim_dec_t *d, const struct pol_admission_ops *ad, const pol_view_t *v,
                  const pol_req_t *q, uint32_t inst, int rc, int64_t now_ns);

#endif

/* sim_disagg — disaggregated prefill and decode pools ([cluster] disagg).
 *
 * Layout: with prefill_nodes and decode_nodes both 0, prefill_share splits
 * the nodes (prefill_nodes = nodes x share rounded half up, within [1,
 * nodes - 1]; the disaggregated presets set it). The first prefill_nodes
 * nodes hold prefill instances of
 * prefill_tp GPUs, the next decode_nodes nodes decode instances of
 * decode_tp GPUs; instance ids run over the prefill pool first, so the
 * routers (which see only the prefill pool: the views' n_instances) return
 * prefill instance ids. Each pool has its own GPU spec, compute model and
 * KV pool; batch limits come from the [gpu] spec for both, and so do the
 * network's per-node links.
 *
 * A request's life: routed and prefilled as today on a prefill instance,
 * which emits the first token at the end of the prefill, as the prefill
 * worker does in DistServe (Zhong et al. OSDI '24), Splitwise (Patel et al.
 * ISCA '24), Mooncake (Qin et al. FAST '25) and Dynamo (as recalled, not
 * verified against code); scheduler.ttft = prefill_end keeps the study's
 * rule instead. A decode router picks a
 * decode instance ([cluster] decode_routing); the request's prompt KV,
 * ceil(in_len / block_tokens) blocks of the prefill pool's block bytes,
 * moves as handoff flows (sim_copy_handoff: resharding by GPU index when
 * the TPs differ). [cluster] handoff = layerwise starts all but the last
 * layer's share (bytes x (layers - 1) / layers) when the request's last
 * prefill iteration starts and the rest when it ends; after_prefill moves
 * it all at the end. When every flow has landed the decode instance queues
 * the request (cluster_handoff_land) and admits it once its blocks fit.
 * Its row: instance = the prefill instance, decode_instance, handoff_wait_ns
 * = prefill end to landing; TPOT and TBT count the gap from the first token
 * (prefill) to the second (decode), which holds that wait. The prefill instance keeps the prompt's full
 * blocks as prefix cache; decode instances keep none unless [cluster]
 * decode_prefix_cache: then a landed request's full prompt blocks become
 * cache blocks of its decode instance (LRU as every store), the decode
 * router, when it routes, references the leading ones that instance holds
 * (cluster_decode_pin: they cannot be evicted before the KV lands) and
 * the handoff moves only the rest, ceil(in_len / block_tokens) - held
 * blocks; decode_routing = prefix_aware prefers the instance holding the
 * most. So the replication policies act on the prefill pool's
 * prefix caches: their view is the routers' (n_inst = the prefill pool),
 * and a peer fetch finds no source on a decode instance. The speculative
 * policy alone may pre-place computed prefixes on the decode pool
 * (view.n_decode, spec_decode_targets): a background copy from a prefill
 * instance, sharded by the prefill TP and landing on decode GPU g x
 * decode_tp / prefill_tp; such a replica is never a routing candidate
 * (the holders index skips it), and a handoff's reference to it counts it
 * used. Speculation accounting covers both pools (the end-of-run
 * unused-VRAM pass walks every instance; interference counts every
 * foreground flow, handoffs included); handoff flows are foreground, in
 * spec.bytes_fg and bytes_fg, never in the background bytes, and counted
 * alone as disagg.handoff_bytes (tests/unit/run/test_sim_disagg_spec.c).
 *
 * Errors come back as cfg_err_keys messages naming the keys; everything is
 * owned by the sim_ctx_t and freed by sim_disagg_free.
 */
#ifndef KVSIM_SIM_DISAGG_H
#define KVSIM_SIM_DISAGG_H

#include "models/mdl.h"
#include "sim/base/results.h"
#include "sim/cluster/cluster.h"

struct sim_ctx;

/* The pool keys against the rest of the config, before anything is built;
 * with disagg on, sets the run's TP to the prefill pool's and, when
 * prefill_gpu is set, its hw spec to that GPU (the run's compute model is
 * the prefill pool's). 0 or KS_EINPUT. */
int sim_disagg_check(struct sim_ctx *s, const cfg_t *cfg, const mdl_llm_t *llm, err_t *e);
/* With disagg on: the decode pool's compute model and KV pool, the
 * instance layout, roles and hooks, into p (filled for a uniform prefill
 * pool by the caller); p->kv_blocks becomes the smaller pool's, which is
 * what cluster_fits checks. 0, KS_EINPUT or KS_ENOMEM. */
int sim_disagg_setup(struct sim_ctx *s, const cfg_t *cfg, const mdl_llm_t *llm,
		     const mdl_compute_params_t *cp, cluster_params_t *p, err_t *e);
/* Instances the routers see: the prefill pool (all when off). */
uint32_t sim_disagg_route_instances(const struct sim_ctx *s);
/* The disagg.* summary metrics (recorder.h), after every request row:
 * handoff bytes moved (0 when off) and the mean handoff wait of the rows
 * with one (NaN when off or none). 0 or KS_ENOMEM. */
int sim_disagg_report(const struct sim_ctx *s, sim_results_t *res);
/* End of run: requests whose KV is still moving are recorded unfinished. */
int sim_disagg_finish(struct sim_ctx *s);
void sim_disagg_free(struct sim_ctx *s);

#endif

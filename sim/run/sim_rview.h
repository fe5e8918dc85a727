/* sim_rview — the routers' view as an experimental variable: the events view
 * ([policy.routing] view = events) and router replicas (replicas > 1).
 *
 * Events: each instance publishes "stored" when a block becomes READY there
 * (kv_store_set_on_ready) and "removed" when it is evicted, over the channel
 * of sim_rdeliver.h (batching, delays, each instance's order; one delay draw
 * per message, shared by the replicas). A message is applied when due, and
 * before any routing decision at or after its due time; a message due at
 * once is applied at once.
 * Every replica receives every message; each of its events is lost with
 * probability event_loss, drawn per replica. A replica's index of an
 * instance is a kv_filter_t (index, index_fpr, index_ttl_s, index_capacity);
 * with index = ttl removed events are not applied. Its match: the leading
 * blocks kvf_has there, then (match_host) also those visible in the node's
 * host tier, as the computed view counts them; candidates is NULL (scan).
 *
 * Replicas: each arrival reaching the routers is decided by one replica,
 * round robin or drawn (replica_assign; an arrival a replication hint
 * places takes its turn too); a replica has its own routed tree
 * (view = routed: updated only by its own decisions) or event index. Its
 * pol_inst_t has waiting = its in-flight requests to the instance (counted
 * from its dispatch to the request's result row), running = 0 and
 * prefill_tokens = their prompt tokens; KV use, speculative blocks and the
 * queue delay estimate are the instance's true ones; least_loaded reads its
 * own load index (sim_load.h, kept on its dispatches and their rows).
 * With replicas = 1 the loads are the instance's own.
 *
 * Disaggregated clusters are refused with view = events or replicas > 1.
 * Random draws come from a stream of their own (sim_seed_for), so no other
 * stream moves. Memory: the module owns its indexes, trees, messages and the
 * map of in-flight requests, freed by sim_rv_free. Errors: KS_ENOMEM, or
 * KS_EINPUT naming the key for config rules.
 */
#ifndef KVSIM_SIM_RVIEW_H
#define KVSIM_SIM_RVIEW_H

#include "sim/run/sim_int.h"

typedef struct sim_rv sim_rv_t;

/* route is the routers' view, the computed one so far (the views
 * component's, sim_view.c; it outlives s->rvw): sets s->rvw (NULL when
 * neither events, replicas > 1 nor output.view_quality asks for it), keeps
 * the computed view for decision quality, and reads route at each decision.
 * For events or replicas > 1 the replicas own the routers' view
 * (sim_rv_owns_view), which sim_rv_view then makes. */
int sim_rv_setup(sim_ctx_t *s, const cfg_t *cfg, const pol_view_t *route, err_t *e);
/* Bytes sim_rv_setup's event-view index filters will take (Bloom and
 * cuckoo filters are sized from their capacity), to check against
 * max_rss_gb before they are made; 0 without an event view. */
uint64_t sim_rv_index_bytes(const sim_ctx_t *s, const cfg_t *cfg, const pol_view_t *route);
int sim_rv_owns_view(const sim_rv_t *rv);
/* When rv owns the routers' view, puts its replicas' hooks in v (the
 * routers' view); else (or rv NULL) changes nothing. */
void sim_rv_view(const sim_rv_t *rv, pol_view_t *v);
/* The instances present are [0, n) (cold join, sim_join.h): the base view
 * the replicas' views answer from counts them. */
void sim_rv_set_present(sim_rv_t *rv, uint32_t n);
void sim_rv_free(sim_rv_t *rv);
/* An arrival reaches the routers: applies the event messages due now and
 * picks the replica deciding it. 0 or KS_ENOMEM. */
int sim_rv_pick(sim_rv_t *rv);
/* The routing policy chose inst for q (not a replication hint). */
int sim_rv_decided(sim_rv_t *rv, const pol_req_t *q, uint32_t inst);
/* q goes to inst by the picked replica (its tree and its load learn it). */
int sim_rv_dispatch(sim_rv_t *rv, const pol_req_t *q, uint32_t inst);
/* A copy brings blocks[0..n) to inst: every replica's routed tree learns
 * it (the announcement of pol_actions_t.announce). 0 or KS_ENOMEM. */
int sim_rv_announce(sim_rv_t *rv, uint32_t inst, const uint64_t *b, uint32_t n);
/* A routed request's result row: its replica's load gives it back. */
void sim_rv_result(sim_rv_t *rv, const res_request_t *row);
/* id was evicted at inst (from the store's eviction hook): 0 or KS_ENOMEM,
 * said in the run's err_t. */
int sim_rv_removed(sim_rv_t *rv, uint32_t inst, uint64_t id, int64_t now);
/* The view.* metrics (recorder.h REC_VIEW). */
int sim_rv_report(const sim_rv_t *rv, sim_results_t *res);

#endif

/* sim_evict — the stores' eviction hooks (the eviction policy's order, the
 * block written back to the tier below, the indexes told) and the fate of
 * speculative replicas (used by a request, or gone unused). */
#include "sim/run/sim_copies.h"

#include "sim/run/sim_decisions.h"
#include "sim/run/sim_holders.h"
#include "sim/run/sim_rview.h"
#include "sim/run/sim_tiers.h"

int sim_on_spec_hit(void *ctx, uint32_t inst, uint32_t tag, uint32_t blocks)
{
	(void)inst;
	(void)blocks;
	sim_ctx_t *s = ctx;
	if (tag >= s->cp->n_replicas)
		return 0;
	s->spec.warm_hits++;
	if (!s->cp->replicas[tag].used) {
		s->cp->replicas[tag].used = 1;
		s->spec.replicas_used++;
		if (s->fc && fcast_replica_used(s->fc, s->cp->replicas[tag].landed, ev_engine_now(s->eng)))
			return KS_ENOMEM;
	}
	return 0;
}

/* A speculative block leaves unused: its VRAM-time was wasted. */
void sim_spec_block_gone(sim_ctx_t *s, const kv_block_info_t *b, int64_t now)
{
	int wasted = 0;
	if (b->tag < s->cp->n_replicas) {
		replica_t *r = &s->cp->replicas[b->tag];
		wasted = r->blocks_left && --r->blocks_left == 0 && !r->used;
	}
	pol_spec_block_gone(&s->spec, s->cl.p.block_bytes, b->created, now, wasted);
}

/* Whether a request routed to inst and still there starts with block id:
 * its prefill may compute id there again after this eviction, and the
 * holders index learnt inst at its routing only (the add is a no-op while
 * the block is present), so inst stays among id's holders. O(requests on
 * inst), paid only when a first block is evicted. */
static int inst_will_compute(const sim_ctx_t *s, uint32_t inst, uint64_t id)
{
	const sim_inst_t *in = &s->cl.inst[inst];
	for (const sim_req_t *r = in->wait_head; r; r = r->next)
		if (r->n_ids && r->blocks[0] == id)
			return 1;
	for (uint32_t k = 0; k < in->n_run; k++)
		if (in->run[k]->n_ids && in->run[k]->blocks[0] == id)
			return 1;
	return 0;
}

/* A block evicted at `where` moves to the tier below, when one is on and
 * lacks it (a refused copy moves nothing). 0 or KS_ENOMEM. */
static int tier_offload(sim_ctx_t *s, place_t where, uint64_t block)
{
	place_t to;
	if (!sim_tier_below(s, where, !place_is_inst(where), &to) ||
	    kv_lookup(sim_store_of(s, to), block))
		return 0;
	uint64_t id;
	int rc = sim_copy_begin(s, where, to, &block, 1, NET_BG, 0, 0, NULL, &id);
	if (rc == POL_COPY_OK)
		sim_tiers_offloaded(s, to, 1);
	return rc < 0 ? rc : 0;
}

/* Eviction order from the eviction policy: the instance stores' kv_prio_fn
 * when it is not LRU, and the decision trace's eviction score. */
double sim_evict_prio(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)now;
	hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	uint32_t B = s->cl.p.block_tokens;
	pol_block_meta_t m = {
		.last_access_ns = b->last_use,
		.hits = b->hits,
		.spec_unused = b->spec,
		.recompute_ns = mdl_prefill_time_ns(&s->comp, B, b->depth * B),
		.predicted_reuse = -1,
	};
	const struct pol_eviction_ops *eo = POL_SET_OPS(&s->pol, POL_EVICTION, pol_eviction_ops);
	return eo->priority(s->pol.h[POL_EVICTION].state, &m);
}

int sim_on_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	int rc;
	hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	if (s->dec) { /* the store counts this eviction after the call */
		const struct pol_eviction_ops *eo =
			POL_SET_OPS(&s->pol, POL_EVICTION, pol_eviction_ops);
		double score = pol_eviction_is_lru(eo) ? (double)b->last_use
		                                       : sim_evict_prio(h, b, now);
		const kv_store_t *kv = s->cl.inst[h->inst].kv;
		sim_dec_evict(s->dec, kv, SIM_TIER_HBM, (int32_t)h->inst, b, score,
		              kv_stats(kv).evictions, now);
	}
	if (b->spec)
		sim_spec_block_gone(s, b, now);
	if (s->fc)
		fcast_evicted(s->fc, b->id, h->inst);
	/* the routers' event index hears of it */
	if (s->rvw && (rc = sim_rv_removed(s->rvw, h->inst, b->id, now)))
		return rc;
	if (s->holders && b->depth == 0 && !inst_will_compute(s, h->inst, b->id))
		sim_holders_remove(s->holders, b->id, h->inst);
	/* write the evicted block back to host memory, or the tier below (a
	 * staging buffer holds it while the background flow runs) */
	return tier_offload(s, place_inst(h->inst), b->id);
}

int sim_on_tier_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	const sim_tier_hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	if (s->dec) /* the tiers are LRU: the last use is the score */
		sim_dec_evict(s->dec, sim_store_of(s, h->where), (int)place_tier(h->where),
		              (int32_t)place_node(h->where), b, (double)b->last_use,
		              kv_stats(sim_store_of(s, h->where)).evictions, now);
	return tier_offload(s, h->where, b->id);
}

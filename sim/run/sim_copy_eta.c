/* sim_copy_eta — how long copies take: a copy's time estimated at current
 * rates by the timing mode it would have (sim_copy_mode.h), and when copies
 * in flight land, for a request deciding whether to wait for them. */
#include "sim/run/sim_copy_mode.h"

int64_t sim_copy_estimate(sim_ctx_t *s, place_t src, uint32_t dst, uint32_t n, int cls)
{
	uint32_t links[NET_PATH_MAX];
	int kind;
	int len = sim_shard_path(s, src, place_inst(dst), 0, links, &kind);
	if (len <= 0)
		return INT64_MAX / 4;
	copy_costs_t cc = sim_copy_costs(s, links, (uint32_t)len, kind, n);
	const sim_copy_mode_ops_t *mo = sim_copy_mode_ops(sim_copy_mode_pick(&s->prm.net, 1));
	return mo->estimate(s, links, (uint32_t)len, kind, &cc, n, cls);
}

/* Estimated landing time of copy c at current rates (INT64_MAX: unknown or
 * paused). A deferred copy adds the source's remaining prefill up to its
 * last computing block: the running iteration's end, then as many more
 * iterations of that length as the rest of the prefill needs chunks. */
static int64_t copy_land_eta(sim_ctx_t *s, const kcopy_t *c)
{
	int64_t now = ev_engine_now(s->eng), eta = now;
	for (uint32_t g = 0; g < c->n_flows; g++) {
		int64_t t = net_flow_eta(s->net, c->flow_ids[g]);
		if (t == INT64_MAX)
			return INT64_MAX;
		if (t > eta)
			eta = t; /* -1: that shard has landed */
	}
	if (!c->deferred)
		return eta;
	const sim_inst_t *in = &s->cl.inst[c->src.index]; /* deferred: an instance */
	const kv_block_info_t *b = NULL;
	uint64_t last = 0;
	for (uint32_t j = 0; j < c->n; j++)
		if (kv_lookup(in->kv, c->blocks[j]) == KV_COMPUTING)
			b = kv_info(in->kv, last = c->blocks[j]);
	if (!b) /* computed: its flows start at this instant */
		return now + sim_copy_estimate(s, c->src, c->dst.index, c->n, c->cls);
	uint32_t d = b->depth, B = s->cl.p.block_tokens;
	for (uint32_t k = 0; k < in->n_run; k++) {
		const sim_req_t *r = in->run[k];
		if (d >= r->shared_hold || d < r->ready || r->blocks[d] != last)
			continue;
		uint32_t left = (d + 1) * B > r->done_tok ? (d + 1) * B - r->done_tok : 0;
		int64_t t = now + mdl_prefill_time_ns(&s->comp, left, r->done_tok);
		if (r->in_batch && r->chunk && in->busy) {
			/* the running iteration's batch is still in place, so its end
			 * is exact */
			int64_t dur = s->cl.p.cost(s->cl.p.cost_ctx, &in->batch);
			uint32_t more = left > r->chunk ? (left - r->chunk + r->chunk - 1) / r->chunk : 0;
			t = in->iter_start + (int64_t)(1 + more) * (dur > 1 ? dur : 1);
		}
		return (t > now ? t : now) +
		       sim_copy_estimate(s, c->src, c->dst.index, c->n, c->cls);
	}
	return INT64_MAX;
}

int sim_wait_inflight(void *ctx, uint32_t inst, const sim_req_t *r, uint32_t first)
{
	sim_ctx_t *s = ctx;
	if (!s->cp->copy_deferred)
		return 1; /* kvcache.copy_deferred = false: always wait, as before */
	kv_store_t *kv = s->cl.inst[inst].kv;
	int64_t now = ev_engine_now(s->eng), land = now;
	uint32_t k = first;
	uint64_t seen = 0;
	for (; k < r->n_blocks; k++) {
		const kv_block_info_t *b = kv_info(kv, r->blocks[k]);
		if (!b || b->state != KV_INFLIGHT)
			break;
		if (!b->tag || b->tag > s->cp->n_copies)
			return 1;
		const kcopy_t *c = &s->cp->copies[b->tag - 1];
		if (!c->live || c->req == r)
			return 1; /* not a copy we can time, or r's own fetch */
		if (c->id != seen) {
			int64_t t = copy_land_eta(s, c);
			if (t > land)
				land = t;
			seen = c->id;
		}
	}
	uint32_t B = s->cl.p.block_tokens;
	int64_t recompute = mdl_prefill_time_ns(&s->comp, (k - first) * B, first * B);
	return land != INT64_MAX && land - now <= recompute;
}

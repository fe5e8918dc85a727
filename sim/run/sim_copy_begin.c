/* sim_copy_begin — a copy started: its record, its blocks reserved at the
 * destination (sources pinned), and its time paid by its timing mode
 * (sim_copy_mode.h); handoffs of request KV between pools. */
#include "sim/run/sim_copy_mode.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/vec.h"
#include "sim/run/sim_holders.h"
#include "sim/run/sim_tiers.h"

uint64_t *sim_copy_blocks_alloc(uint32_t n, uint8_t **held)
{
	size_t m = n ? n : 1;
	uint64_t *mv = calloc(1, m * (sizeof *mv + 1));
	*held = mv ? (uint8_t *)(mv + m) : NULL;
	return mv;
}

int sim_copy_release(sim_ctx_t *s, place_t src, place_t dst, const uint64_t *mv, uint8_t *held,
		     uint32_t k)
{
	int64_t now = ev_engine_now(s->eng);
	int rc = 0;
	for (uint32_t j = 0; j < k; j++) {
		if (held[j] & COPY_HELD_DST) {
			int d = kv_hook_error(kv_drop(sim_store_of(s, dst), mv[j]));
			rc = rc ? rc : d;
		}
		if (held[j] & COPY_HELD_SRC)
			kv_unref(sim_store_of(s, src), mv[j], now);
		held[j] = 0;
	}
	return rc;
}

/* A live copy of blocks mv[0..k) (owned from here on), requested now and
 * counted in live_events; its flows are not started. NULL on ENOMEM. */
kcopy_t *sim_copy_new(sim_ctx_t *s, place_t src, place_t dst, uint64_t *mv, uint8_t *held,
		      uint32_t k, int cls, int spec, int from_policy, sim_req_t *req)
{
	if (VEC_GROW(s->cp->copies, s->cp->cap_copies, s->cp->n_copies + 1, 256))
		return NULL;
	kcopy_t *c = &s->cp->copies[s->cp->n_copies++];
	memset(c, 0, sizeof *c);
	c->id = s->cp->n_copies;
	c->src = src;
	c->dst = dst;
	c->n = k;
	c->cls = cls;
	c->spec = spec;
	c->from_policy = from_policy;
	c->req = req;
	c->live = 1;
	c->mode = COPY_MODE_N; /* none until it starts */
	c->requested = c->started = ev_engine_now(s->eng);
	c->blocks = mv;
	c->held = held;
	s->cp->live_events++;
	return c;
}

/* Starts copy c now, timed by its mode (sim_copy_mode_pick), after the
 * source-side read of a transfer engine that has one. */
int sim_copy_flows_start(sim_ctx_t *s, kcopy_t *c)
{
	c->started = ev_engine_now(s->eng);
	c->flows_left = c->n_flows = s->tp;
	c->shard_bytes = sim_shard_copy_bytes(s, c->n);
	uint32_t links[NET_PATH_MAX];
	int kind;
	int len = sim_shard_path(s, c->src, c->dst, 0, links, &kind);
	if (len < 0)
		return len;
	c->kind = kind;
	copy_costs_t cc = sim_copy_costs(s, links, (uint32_t)len, kind, c->n);
	c->mode = sim_copy_mode_pick(&s->prm.net, place_is_inst(c->dst));
	int rc;
	if (cc.source_job_ns > 0 && place_is_inst(c->src) &&
	    (rc = cluster_job_add(&s->cl, c->src.index, SOURCE_JOB | c->id, cc.source_job_ns)))
		return rc;
	return sim_copy_mode_ops(c->mode)->start(s, c, &cc, links, len);
}

int sim_copy_handoff(sim_ctx_t *s, uint32_t src, uint32_t tp_src, uint32_t dst, uint32_t tp_dst,
		     uint64_t bytes, uint32_t blocks, uint32_t tag)
{
	kcopy_t *c = sim_copy_new(s, place_inst(src), place_inst(dst), NULL, NULL, blocks, NET_FG, 0,
				  0, NULL);
	if (!c)
		return KS_ENOMEM;
	uint32_t n = tp_src > tp_dst ? tp_src : tp_dst;
	c->handoff = tag;
	c->tp_src = tp_src;
	c->tp_dst = tp_dst;
	c->mode = COPY_FLOWS; /* handoffs share links whatever the run's mode */
	c->flows_left = c->n_flows = n;
	c->shard_bytes = bytes / n;
	uint32_t links[NET_PATH_MAX];
	for (uint32_t f = 0; f < n; f++) {
		int kind, rc, len = sim_gpu_path(s, src, f * tp_src / n, dst, f * tp_dst / n, links,
						 &kind);
		if (len < 0)
			return len;
		c->kind = kind;
		copy_costs_t cc = sim_copy_costs(s, links, (uint32_t)len, kind, blocks);
		if ((rc = sim_copy_flow_start(s, c, f, links, len, bytes / n + (f < bytes % n), &cc)))
			return rc;
	}
	return 0;
}

/* The holders index learns the first blocks of prefixes reserved at
 * instance dst (a no-op when no reader keeps the index). */
int sim_copy_holders_note(sim_ctx_t *s, place_t dst, const uint64_t *mv, uint32_t k)
{
	/* the routers see the prefill pool only: a replica pre-placed on a
	 * decode instance must never be a routing candidate */
	if (!s->holders || !place_is_inst(dst) || s->cl.inst[dst.index].role == CL_ROLE_DECODE)
		return 0;
	const kv_store_t *to = s->cl.inst[dst.index].kv;
	for (uint32_t j = 0; j < k; j++)
		if (kv_info(to, mv[j])->depth == 0 && sim_holders_add(s->holders, mv[j], dst.index))
			return KS_ENOMEM;
	return 0;
}

/* Reserves blocks[0..n) missing at dst and starts their copy from src:
 * POL_COPY_OK with *id, COPY_NOTHING, POL_COPY_REFUSED, or < 0. Shared by
 * copies (src pinned, dst an instance) and offloads (dst host). */
int sim_copy_begin(sim_ctx_t *s, place_t src, place_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id)
{
	int64_t now = ev_engine_now(s->eng);
	kv_store_t *from = sim_store_of(s, src), *to = sim_store_of(s, dst);
	int offload = !place_is_inst(dst);
	int rc;
	/* the blocks to move go into the copy's own array at once: making room
	 * at dst evicts, and an eviction may start an offload copy itself */
	uint8_t *held;
	uint64_t *mv = sim_copy_blocks_alloc(n, &held);
	if (!mv)
		return KS_ENOMEM;
	uint32_t k = 0;
	for (uint32_t j = 0; j < n; j++) {
		if (kv_lookup(to, blocks[j]))
			continue;
		int st = offload ? KV_READY : kv_lookup(from, blocks[j]);
		if (st != KV_READY && !(st == KV_COMPUTING && s->cp->copy_uncomputed)) {
			free(mv);
			return POL_COPY_REFUSED; /* its KV does not exist there (yet) */
		}
		mv[k++] = blocks[j];
	}
	if (!k) {
		free(mv);
		return COPY_NOTHING;
	}
	if (kv_free_or_evictable(to) < k) {
		free(mv);
		return POL_COPY_REFUSED;
	}
	/* pin the sources first so making room at dst cannot evict them
	 * (offloads pin nothing) */
	for (uint32_t j = 0; j < k && !offload; j++)
		if (!kv_pin_any(from, mv[j], now)) /* READY, or COMPUTING (copy_from) */
			held[j] = COPY_HELD_SRC;
	for (uint32_t j = 0; j < k; j++) {
		/* its depth travels with it (an offload's source is being evicted,
		 * still in its store): kv_kept reads a block's position from it */
		const kv_block_info_t *bi = kv_info(from, mv[j]);
		int a = kv_alloc(to, mv[j], bi ? bi->depth : 0, KV_INFLIGHT, 0, spec, now);
		if (a && !kv_hook_error(a)) /* no room after all */
			a = POL_COPY_REFUSED;
		else
			held[j] |= COPY_HELD_DST; /* allocated, whatever its hooks said */
		if (a) {
			rc = sim_copy_release(s, src, dst, mv, held, k);
			free(mv);
			return a == POL_COPY_REFUSED && rc ? rc : a;
		}
	}
	kcopy_t *c = sim_copy_holders_note(s, dst, mv, k)
			     ? NULL
			     : sim_copy_new(s, src, dst, mv, held, k, cls, spec, from_policy, req);
	if (!c) {
		free(mv);
		return KS_ENOMEM;
	}
	if ((rc = sim_copy_flows_start(s, c)))
		return rc;
	*id = c->id;
	return POL_COPY_OK;
}

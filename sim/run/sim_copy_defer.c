/* sim_copy_defer — deferred copies (kvcache.copy_deferred).
 *
 * The causal analogue of copying from a source that is still computing: a
 * copy asked for while some of its source blocks are COMPUTING reserves its
 * blocks INFLIGHT at the destination at once (room taken, as a real
 * pre-allocated receive buffer would be) and starts its flows the instant
 * the last source block becomes READY (kv_watch). READY source blocks are
 * pinned meanwhile; a dropped source block (preemption, or a release before
 * it was computed) cancels the copy. */
#include "sim/run/sim_copies.h"

#include <stdlib.h>

#include "sim/base/vec.h"

static int deferred_push(sim_ctx_t *s, uint32_t idx)
{
	if (VEC_GROW(s->cp->deferred, s->cp->cap_deferred, s->cp->n_deferred + 1, 16))
		return KS_ENOMEM;
	s->cp->deferred[s->cp->n_deferred++] = idx;
	return 0;
}

int sim_copy_defer_applies(const sim_ctx_t *s, place_t src, int from_policy)
{
	return from_policy && s->cp->copy_deferred && place_is_inst(src);
}

/* A copy whose source is still computing, accepted as deferred (see
 * sim_copy_start): POL_COPY_OK with *id, POL_COPY_REFUSED, or < 0. */
int sim_copy_defer(sim_ctx_t *s, uint32_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, sim_req_t *req, uint64_t *id)
{
	int64_t now = ev_engine_now(s->eng);
	kv_store_t *from = s->cl.inst[src].kv, *to = s->cl.inst[dst].kv;
	uint32_t k = 0, pending = 0;
	for (uint32_t j = 0; j < n; j++) {
		if (kv_lookup(to, blocks[j]))
			continue;
		int st = kv_lookup(from, blocks[j]);
		if (st != KV_READY && st != KV_COMPUTING)
			return POL_COPY_REFUSED; /* absent, or itself still in flight */
		pending += st == KV_COMPUTING;
		k++;
	}
	if (!pending || kv_free_or_evictable(to) < k)
		return POL_COPY_REFUSED;
	uint8_t *held;
	uint64_t *mv = sim_copy_blocks_alloc(k, &held);
	if (!mv)
		return KS_ENOMEM;
	k = 0;
	for (uint32_t j = 0; j < n; j++)
		if (!kv_lookup(to, blocks[j]))
			mv[k++] = blocks[j];
	for (uint32_t j = 0; j < k; j++)
		if (!kv_pin(from, mv[j], now))
			held[j] = COPY_HELD_SRC;
		else /* not READY: computing, pinned when it is (sim_on_kv_watch) */
			kv_watch(from, mv[j]);
	for (uint32_t j = 0; j < k; j++) {
		int a = kv_alloc(to, mv[j], kv_info(from, mv[j])->depth, KV_INFLIGHT, 0, spec, now);
		if (a && !kv_hook_error(a)) /* no room after all */
			a = POL_COPY_REFUSED;
		else
			held[j] |= COPY_HELD_DST; /* allocated, whatever its hooks said */
		if (a) {
			int rc = sim_copy_release(s, place_inst(src), place_inst(dst), mv, held, k);
			free(mv);
			/* watches left behind find no copy */
			return a == POL_COPY_REFUSED && rc ? rc : a;
		}
	}
	kcopy_t *c = sim_copy_holders_note(s, place_inst(dst), mv, k)
			     ? NULL
			     : sim_copy_new(s, place_inst(src), place_inst(dst), mv, held, k, cls, spec,
					    1, req);
	if (!c) {
		free(mv);
		return KS_ENOMEM;
	}
	c->deferred = 1;
	c->pending = pending;
	c->depth0 = kv_info(from, mv[0])->depth;
	c->contig = 1;
	for (uint32_t j = 1; j < k && c->contig; j++)
		c->contig = kv_info(from, mv[j])->depth == c->depth0 + j;
	if (deferred_push(s, (uint32_t)(c->id - 1)))
		return KS_ENOMEM;
	s->spec.copies_deferred++;
	*id = c->id;
	return POL_COPY_OK;
}

/* Index of source block b in deferred copy c, or -1. A block id names its
 * whole prefix, so its depth places it: one comparison where the copy's
 * blocks run at consecutive depths (a suffix of a prefix, the usual case),
 * a scan otherwise (a watched block becomes READY once per block: a scan
 * per event made a long prefix's prefill quadratic under page size 1). */
static int64_t copy_index(const kcopy_t *c, const kv_block_info_t *b)
{
	if (c->contig) {
		uint64_t j = (uint64_t)b->depth - c->depth0;
		return b->depth >= c->depth0 && j < c->n && c->blocks[j] == b->id ? (int64_t)j : -1;
	}
	for (uint32_t j = 0; j < c->n; j++)
		if (c->blocks[j] == b->id)
			return j;
	return -1;
}

int sim_on_kv_watch(void *ctx, const kv_block_info_t *b, int event)
{
	hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	int rc = 0;
	for (size_t i = 0; i < s->cp->n_deferred;) {
		kcopy_t *c = &s->cp->copies[s->cp->deferred[i]];
		int64_t j = place_eq(c->src, place_inst(h->inst)) ? copy_index(c, b) : -1;
		if (j < 0) {
			i++;
			continue;
		}
		if (event == KV_WATCH_DROP) {
			/* its source will not exist: sim_copy_cancel forgets it at i */
			int r = sim_copy_cancel(s, c->id);
			rc = rc ? rc : r;
			continue;
		}
		if (!kv_pin(s->cl.inst[h->inst].kv, b->id, ev_engine_now(s->eng)))
			c->held[j] |= COPY_HELD_SRC;
		if (--c->pending) {
			i++;
			continue;
		}
		/* the flows start from an event of their own at this same instant:
		 * we are inside the source's scheduler */
		sim_copy_deferred_forget(s, s->cp->deferred[i]);
		if (ev_engine_after(s->eng, 0, s->ev.defer, 0, c->id) == EV_NONE && !rc)
			rc = KS_ENOMEM;
	}
	return rc;
}

int sim_copy_deferred_start(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	sim_ctx_t *s = ctx;
	kcopy_t *c = &s->cp->copies[ev->payload - 1];
	if (!c->live || !c->deferred)
		return 0; /* cancelled meanwhile */
	c->deferred = 0;
	s->spec.deferred_started++;
	s->spec.deferral_s += (double)(ev_engine_now(eng) - c->requested) * 1e-9;
	int rc = sim_copy_flows_start(s, c);
	/* requests waiting at dst decide again, now from the flows' real rates */
	return rc ? rc : cluster_kick(&s->cl, c->dst.index);
}

int sim_copy_block_deferred(const sim_ctx_t *s, const kv_block_info_t *b)
{
	if (b->state != KV_INFLIGHT || !b->tag || b->tag > s->cp->n_copies)
		return 0;
	const kcopy_t *c = &s->cp->copies[b->tag - 1];
	return c->live && c->deferred;
}

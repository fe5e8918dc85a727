/* sim_copy_land — a copy's end, whichever timing mode paid it
 * (sim_copy_mode.h): each shard's /transfers row and bytes, and the landing
 * (the blocks usable at the destination, the replica counted, the policy
 * told); the waiting list of deferred copies. */
#include "sim/run/sim_copies.h"

#include <string.h>

#include "sim/base/vec.h"
#include "sim/run/recorder.h"

/* A /transfers row's instance and GPU (cluster-wide) of a copy's end: -1
 * for a tier below HBM. */
static int32_t xfer_inst(place_t at)
{
	return place_is_inst(at) ? (int32_t)at.index : -1;
}

static int32_t xfer_gpu(const sim_ctx_t *s, place_t at, uint32_t g)
{
	if (!place_is_inst(at))
		return -1;
	return (int32_t)(sim_node_of(s, at) * s->gpus_per_node + sim_inst_gpu0(s, at.index) + g);
}

static int xfer_append(sim_ctx_t *s, const kcopy_t *k, const net_flow_rec_t *rec)
{
	res_transfer_t row, *t = &row;
	memset(t, 0, sizeof *t);
	t->id = rec->id;
	uint32_t g = (uint32_t)(rec->tag & 0xffff), gs = g, gd = g;
	if (k->handoff) { /* flow g of max(tp_src, tp_dst) (sim_copy_handoff) */
		uint32_t n = k->tp_src > k->tp_dst ? k->tp_src : k->tp_dst;
		gs = g * k->tp_src / n;
		gd = g * k->tp_dst / n;
	}
	t->src_instance = xfer_inst(k->src);
	t->dst_instance = xfer_inst(k->dst);
	t->src_gpu = xfer_gpu(s, k->src, gs);
	t->dst_gpu = xfer_gpu(s, k->dst, gd);
	t->bytes = rec->delivered;
	t->blocks = k->n;
	t->klass = k->handoff ? XFER_HANDOFF : k->cls == NET_BG ? XFER_BACKGROUND : XFER_FOREGROUND;
	t->path_kind = k->kind;
	t->granular = s->cp->block_granular;
	t->requested_ns = k->requested;
	t->start_ns = rec->start_ns;
	t->end_ns = rec->end_ns;
	t->cancelled = rec->cancelled;
	if (s->trace) {
		int rc = s->trace->flow(s->trace->ctx, t);
		if (rc)
			return rc;
	}
	return rec_transfer(s->res, t);
}

static int replica_new(sim_ctx_t *s, uint32_t blocks, uint32_t *idx)
{
	if (VEC_GROW(s->cp->replicas, s->cp->cap_replicas, s->cp->n_replicas + 1, 64))
		return KS_ENOMEM;
	*idx = (uint32_t)s->cp->n_replicas;
	s->cp->replicas[s->cp->n_replicas++] = (replica_t){ev_engine_now(s->eng), blocks, 0};
	return 0;
}

int sim_copy_land(sim_ctx_t *s, kcopy_t *k)
{
	if (k->handoff) { /* request KV, not cache blocks: the decode side takes it */
		k->live = 0;
		s->cp->live_events--;
		return s->handoff_landed(s, k->handoff);
	}
	int64_t now = ev_engine_now(s->eng);
	kv_store_t *d = sim_store_of(s, k->dst);
	uint32_t tag = 0;
	int rc;
	sim_touch_place(s, k->src); /* the timeline: both stores change */
	sim_touch_place(s, k->dst);
	if (k->spec) {
		if ((rc = replica_new(s, k->n, &tag)))
			return rc;
		s->spec.replicas_created++;
	}
	int err = 0; /* a store hook's first error: the landing completes first */
	for (uint32_t j = 0; j < k->n; j++) {
		if (k->spec)
			kv_set_tag(d, k->blocks[j], tag);
		if (k->held[j] & COPY_HELD_DST) {
			int r = kv_hook_error(kv_ready(d, k->blocks[j], now));
			err = err ? err : r;
		}
		if (k->held[j] & COPY_HELD_SRC) { /* the pins it took (offloads take none) */
			kv_store_t *from = sim_store_of(s, k->src);
			kv_unref(from, k->blocks[j], now);
			/* read before it was computed, and its prefill gave up */
			if (kv_lookup(from, k->blocks[j]) == KV_COMPUTING && !kv_info(from, k->blocks[j])->ref) {
				int r = kv_hook_error(kv_drop(from, k->blocks[j]));
				err = err ? err : r;
			}
		}
		k->held[j] = 0;
	}
	k->live = 0;
	s->cp->live_events--;
	if (err)
		return err;
	if (k->req)
		k->req->fetch_wait = now - k->req->arrival;
	place_t dst = k->dst; /* the policy's hook may start copies (and move k) */
	if (k->from_policy) {
		const struct pol_replication_ops *ro =
			POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
		if (ro->on_copy_end)
			ro->on_copy_end(s->pol.h[POL_REPLICATION].state, k->id, 1);
	}
	return place_is_inst(dst) ? cluster_kick(&s->cl, dst.index) : 0;
}

/* Bytes a flow moved, by class: every byte in /transfers is in the summary. */
static void bytes_count(sim_ctx_t *s, const kcopy_t *k, uint64_t bytes, int cancelled)
{
	if (k->cls == NET_BG)
		s->spec.bytes_bg += bytes;
	else
		s->spec.bytes_fg += bytes;
	if (k->handoff) /* foreground, never speculative: and counted on their own */
		s->cp->handoff_bytes += bytes;
	if (cancelled)
		s->spec.bytes_cancelled += bytes;
}

int sim_copy_shard_row(sim_ctx_t *s, const kcopy_t *k, const net_flow_rec_t *rec)
{
	int rc = xfer_append(s, k, rec);
	if (rc)
		return rc;
	bytes_count(s, k, rec->delivered, rec->cancelled);
	return 0;
}

/* Forgets copy idx in the waiting list (order does not matter). */
void sim_copy_deferred_forget(sim_ctx_t *s, uint32_t idx)
{
	for (size_t i = 0; i < s->cp->n_deferred; i++)
		if (s->cp->deferred[i] == idx) {
			s->cp->deferred[i] = s->cp->deferred[--s->cp->n_deferred];
			return;
		}
}


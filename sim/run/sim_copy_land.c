/* sim_copy_land — a copy's end: flows and lone copies landing (the blocks
 * usable at the destination, the replica counted, the policy told) or
 * cancelled, with their /transfers rows and bytes. */
#include "sim/run/sim_int.h"

#include <string.h>

#include "sim/base/vec.h"
#include "sim/run/recorder.h"

static int xfer_append(sim_ctx_t *s, const kcopy_t *k, const net_flow_rec_t *rec, int kind)
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
	t->src_instance = k->src >= 0 ? k->src : -1;
	t->dst_instance = k->dst >= 0 ? k->dst : -1;
	t->src_gpu = k->src >= 0 ? (int32_t)(sim_node_of(s, k->src) * s->gpus_per_node +
					     sim_inst_gpu0(s, (uint32_t)k->src) + gs)
				 : -1;
	t->dst_gpu = k->dst >= 0 ? (int32_t)(sim_node_of(s, k->dst) * s->gpus_per_node +
					     sim_inst_gpu0(s, (uint32_t)k->dst) + gd)
				 : -1;
	t->bytes = rec->delivered;
	t->blocks = k->n;
	t->klass = k->handoff ? XFER_HANDOFF : k->cls == NET_BG ? XFER_BACKGROUND : XFER_FOREGROUND;
	t->path_kind = kind;
	t->granular = s->block_granular;
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
	if (VEC_GROW(s->replicas, s->cap_replicas, s->n_replicas + 1, 64))
		return KS_ENOMEM;
	*idx = (uint32_t)s->n_replicas;
	s->replicas[s->n_replicas++] = (replica_t){ev_engine_now(s->eng), blocks, 0};
	return 0;
}

/* Every shard of copy k has arrived: its blocks exist at the destination. */
static int copy_land(sim_ctx_t *s, kcopy_t *k)
{
	if (k->handoff) { /* request KV, not cache blocks: the decode side takes it */
		k->live = 0;
		s->live_events--;
		return s->handoff_landed(s, k->handoff);
	}
	int64_t now = ev_engine_now(s->eng);
	kv_store_t *d = sim_store_of(s, k->dst);
	uint32_t tag = 0;
	int rc;
	sim_touch(s, k->src); /* the timeline: both stores change */
	sim_touch(s, k->dst);
	if (k->spec) {
		if ((rc = replica_new(s, k->n, &tag)))
			return rc;
		s->spec.replicas_created++;
	}
	for (uint32_t j = 0; j < k->n; j++) {
		if (k->spec)
			kv_set_tag(d, k->blocks[j], tag);
		kv_ready(d, k->blocks[j], now);
		if (k->dst >= 0) { /* sources were pinned (offloads pin nothing) */
			kv_store_t *from = sim_store_of(s, k->src);
			kv_unref(from, k->blocks[j], now);
			/* read before it was computed, and its prefill gave up */
			if (kv_lookup(from, k->blocks[j]) == KV_COMPUTING && !kv_info(from, k->blocks[j])->ref)
				kv_drop(from, k->blocks[j]);
		}
	}
	k->live = 0;
	s->live_events--;
	if (k->req)
		k->req->fetch_wait = now - k->req->arrival;
	int32_t dst = k->dst; /* the policy's hook may start copies (and move k) */
	if (k->from_policy) {
		const struct pol_replication_ops *ro =
			POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
		if (ro->on_copy_end)
			ro->on_copy_end(s->pol.h[POL_REPLICATION].state, k->id, 1);
	}
	return dst >= 0 ? cluster_kick(&s->cl, (uint32_t)dst) : 0;
}

/* Bytes a flow moved, by class: every byte in /transfers is in the summary. */
static void bytes_count(sim_ctx_t *s, const kcopy_t *k, uint64_t bytes, int cancelled)
{
	if (k->cls == NET_BG)
		s->spec.bytes_bg += bytes;
	else
		s->spec.bytes_fg += bytes;
	if (k->handoff) /* foreground, never speculative: and counted on their own */
		s->handoff_bytes += bytes;
	if (cancelled)
		s->spec.bytes_cancelled += bytes;
}

/* Asks for an iteration at inst at the current instant, from an event of its
 * own: callers may sit inside another instance's scheduler. */
static int kick_later(sim_ctx_t *s, int32_t inst)
{
	if (inst < 0)
		return 0;
	return ev_engine_after(s->eng, 0, s->ev.kick, (uint32_t)inst, 0) == EV_NONE ? KS_ENOMEM : 0;
}

/* net_flow_spec_t.done of a copy's flows: its row and bytes; the copy lands
 * with its last flow. */
int sim_copy_flow_done(void *ctx, net_t *net, const net_flow_rec_t *rec)
{
	(void)net;
	sim_ctx_t *s = ctx;
	kcopy_t *k = &s->copies[(rec->tag >> 16) - 1];
	int rc = xfer_append(s, k, rec, k->kind);
	if (rc)
		return rc;
	bytes_count(s, k, rec->delivered, 0);
	if (--k->flows_left == 0)
		return copy_land(s, k);
	return 0;
}

/* Records every shard of a lone copy (delivered bytes, start) and lands it. */
static int lone_copy_end(sim_ctx_t *s, kcopy_t *k, int cancelled)
{
	int64_t now = ev_engine_now(s->eng);
	int64_t start = k->mode == COPY_JOB ? now - k->alone_ns : k->started;
	uint64_t got = k->shard_bytes;
	if (cancelled) {
		double f = (double)(now - start) / (double)k->alone_ns;
		got = f <= 0 ? 0 : f >= 1 ? k->shard_bytes : (uint64_t)(f * (double)k->shard_bytes);
	}
	for (uint32_t g = 0; g < k->n_flows; g++) {
		net_flow_rec_t rec = {.id = (k->id << 16) | g, .start_ns = start, .join_ns = start,
				      .end_ns = now, .bytes = k->shard_bytes, .delivered = got,
				      .cancelled = cancelled, .tag = g};
		int rc = xfer_append(s, k, &rec, k->kind);
		if (rc)
			return rc;
		bytes_count(s, k, got, cancelled);
	}
	return cancelled ? 0 : copy_land(s, k);
}

/* The lone_copy event: a copy timed alone on its path lands, unless it was
 * cancelled. */
int sim_copy_lone_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	kcopy_t *k = &s->copies[ev->payload - 1];
	return k->live ? lone_copy_end(s, k, 0) : 0;
}

int sim_on_job_done(void *ctx, uint32_t inst, uint64_t job)
{
	(void)inst;
	sim_ctx_t *s = ctx;
	if (job & SOURCE_JOB || job == 0 || job > s->n_copies)
		return 0;
	kcopy_t *k = &s->copies[job - 1];
	return k->live && k->mode == COPY_JOB ? lone_copy_end(s, k, 0) : 0;
}

/* Forgets copy idx in the waiting list (order does not matter). */
void sim_copy_deferred_forget(sim_ctx_t *s, uint32_t idx)
{
	for (size_t i = 0; i < s->n_deferred; i++)
		if (s->deferred[i] == idx) {
			s->deferred[i] = s->deferred[--s->n_deferred];
			return;
		}
}

int sim_copy_cancel(sim_ctx_t *s, uint64_t id)
{
	if (id == 0 || id > s->n_copies || !s->copies[id - 1].live)
		return KS_EINPUT;
	kcopy_t *k = &s->copies[id - 1];
	int64_t now = ev_engine_now(s->eng);
	sim_touch(s, k->src); /* the timeline: both stores change */
	sim_touch(s, k->dst);
	if (k->mode == COPY_TIMER)
		ev_engine_cancel(s->eng, k->timer);
	else if (k->mode == COPY_JOB)
		cluster_job_cancel(&s->cl, (uint32_t)k->dst, k->id);
	if (k->mode != COPY_FLOWS) {
		int rc = lone_copy_end(s, k, 1);
		if (rc)
			return rc;
	}
	for (uint32_t g = 0; k->mode == COPY_FLOWS && g < k->n_flows; g++) {
		uint64_t delivered;
		if (net_flow_cancel(s->net, k->flow_ids[g], &delivered, NULL) == 0) {
			net_flow_rec_t rec = {.id = k->flow_ids[g], .end_ns = now,
					      .delivered = delivered, .cancelled = 1, .tag = g};
			rec.start_ns = k->started;
			int rc = xfer_append(s, k, &rec, k->kind);
			if (rc)
				return rc;
			bytes_count(s, k, delivered, 1);
		}
	}
	kv_store_t *d = sim_store_of(s, k->dst);
	for (uint32_t j = 0; j < k->n; j++) {
		kv_drop(d, k->blocks[j]);
		/* sources were pinned once READY (a deferred copy's computing ones are not) */
		if (k->dst >= 0 && kv_lookup(sim_store_of(s, k->src), k->blocks[j]) == KV_READY)
			kv_unref(sim_store_of(s, k->src), k->blocks[j], now);
	}
	k->live = 0;
	s->live_events--;
	s->spec.copies_cancelled++;
	if (s->fc)
		fcast_replica_cancel(s->fc, id);
	if (k->deferred) {
		sim_copy_deferred_forget(s, (uint32_t)(id - 1));
		s->spec.deferred_cancelled++;
	}
	/* requests at dst waiting for these blocks now compute them */
	int rc = kick_later(s, k->dst);
	if (rc)
		return rc;
	if (k->from_policy) {
		const struct pol_replication_ops *ro =
			POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
		if (ro->on_copy_end)
			ro->on_copy_end(s->pol.h[POL_REPLICATION].state, k->id, 0);
	}
	return 0;
}

/* sim_copy — KV movement over the flow network: copies between instances
 * and from a node's host tier, one flow per tensor-parallel shard on its
 * own path (NVLink inside a node; NIC, fabric, NIC across nodes; PCIe to and
 * from host memory). Causality: only READY blocks leave a source (and stay
 * pinned there until the copy ends); copied blocks are INFLIGHT at the
 * destination and become usable only when every shard has landed.
 * Compatibility switches (off by default) reproduce the original study:
 * kvcache.copy_from = uncomputed lets a copy read blocks still COMPUTING;
 * network.contention = none times each copy as if alone on its path;
 * network.copy_charge = target_compute charges that time to the target's
 * compute (a cluster job) instead of the links. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl_xfer.h"
#include "sim/base/vec.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_decisions.h"
#include "sim/run/sim_holders.h"
#include "sim/run/sim_int.h"
#include "sim/run/sim_rview.h"
#include "sim/run/sim_tiers.h"

/* copy_begin's answer when every block is already at the destination */
#define COPY_NOTHING 2

static kv_store_t *store_of(sim_ctx_t *s, int32_t where)
{
	return where >= 0 ? s->cl.inst[where].kv : sim_tier_store(s, where);
}

static uint32_t node_of(const sim_ctx_t *s, int32_t where)
{
	return where >= 0 ? sim_inst_node(s, (uint32_t)where) : sim_tier_node(s, where);
}

/* First GPU (within its node) of an instance. */
static uint32_t gpu0_of(sim_ctx_t *s, uint32_t inst)
{
	return sim_inst_gpu0(s, inst);
}

static uint64_t shard_block_bytes(sim_ctx_t *s)
{
	return mdl_kv_paged_bytes_per_token_gpu(&s->comp.llm, s->tp) * s->cl.p.block_tokens;
}

/* One shard's bytes of a copy of k blocks: their tokens' KV in full layers,
 * at most a window of it in sliding ones, and the state of state layers (a
 * copy brings a prefix the destination resumes from, which needs its state:
 * mdl_kv_prefix_bytes_gpu). k x shard_block_bytes for full-attention models. */
static uint64_t shard_copy_bytes(sim_ctx_t *s, uint32_t k)
{
	return mdl_kv_prefix_bytes_gpu(&s->comp.llm, s->tp, (uint64_t)k * s->cl.p.block_tokens, 1);
}

/* Transfer engines ([kvcache] transfer_engine). Order-of-magnitude figures
 * from each system's own description, to be replaced by a calibration file
 * where one exists (as recalled, not verified against code):
 * - mooncake: Mooncake Transfer Engine (Qin et al., FAST '25, sec. 5 and
 *   8): 87 GB/s of 100 GB/s line rate on 4 x 200 Gb/s RoCE, so 0.87; one
 *   batch transfer (descriptor build, submission, completion polling,
 *   metadata lookup) of tens of us; one RDMA write per block slice.
 * - nixl: NVIDIA NIXL over UCX (Dynamo): GPUDirect RDMA near line rate,
 *   a descriptor list per transfer, ~20 us setup.
 * - lmcache: LMCache peer sharing stages KV through host memory: the
 *   source copies its chunks GPU -> CPU over PCIe (a copy that occupies the
 *   source GPU, charged here as a job on its compute), then sends them over
 *   TCP/RDMA at a lower efficiency, with a per-chunk cost.
 * - ideal: datasheet line rate and no overheads (kvsim before 0.2). */
static const xfer_engine_t xfer_engines[] = {
	{"mooncake", 0.87, 50000, 1000, 0},
	{"nixl", 0.9, 20000, 500, 0},
	{"lmcache", 0.6, 200000, 5000, 1},
	{"ideal", 1.0, 0, 0, 0},
};

static int lone_copy_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

void sim_bg_schedule(pol_xfer_mode_t pm, double pparam, const net_params_t *np,
		     net_bg_mode_t *mode, double *param)
{
	*param = pparam;
	if (pm == POL_XFER_IDLE_WINDOW) {
		*mode = NET_BG_IDLE_WINDOW;
		if (!(pparam > 0)) /* the one threshold key, [network] idle_threshold */
			*param = np->idle_threshold;
	} else if (pm == POL_XFER_RATE_CAP) {
		*mode = NET_BG_RATE_CAP;
	} else {
		*mode = (net_bg_mode_t)np->bg_schedule;
		*param = *mode == NET_BG_IDLE_WINDOW ? np->idle_threshold
			 : *mode == NET_BG_RATE_CAP  ? np->bg_rate_share
						     : 0;
	}
}

int sim_net_init(sim_ctx_t *s, const sim_params_t *p, err_t *e)
{
	const net_params_t *np = &p->net;
	s->net = net_new(s->eng, e);
	if (!s->net)
		return e && e->code ? e->code : KS_ENOMEM;
	net_topo_spec_t ts = {
		.nodes = s->nodes,
		.gpus_per_node = s->gpus_per_node,
		.nvlink_bw = s->hw.nvlink_bw,
		.nvlink_lat_ns = s->hw.nvlink_lat_ns,
		.pcie_bw = s->hw.pcie_bw,
		.pcie_lat_ns = s->hw.pcie_lat_ns,
		.nic_bw = s->hw.nic_bw,
		.nic_lat_ns = s->hw.nic_lat_ns,
		.fabric = (net_fabric_t)np->fabric,
		.oversubscription = np->oversubscription,
		.gpus_per_leaf = np->gpus_per_leaf,
		.switch_lat_ns = np->switch_lat_ns,
	};
	sim_tiers_topo(p, &ts);
	s->copy_overhead_ns = np->copy_overhead_ns;
	const char *cal = np->calibration;
	if (cal[0]) {
		/* measured link figures (bandwidth of large copies, latency, and
		 * per-block overhead) replace the datasheet ones */
		mdl_xfer_t x;
		int rc = mdl_xfer_init(&x, &s->hw, cal, e);
		if (rc) {
			err_prefix(e, "[network] calibration");
			return e ? (e->code = KS_EINPUT) : KS_EINPUT; /* a bad input file */
		}
		const uint64_t big = 1ull << 30;
		ts.nvlink_bw = mdl_xfer_bw(&x, MDL_LINK_NVLINK, big) * 1e9;
		ts.nvlink_lat_ns = (int64_t)mdl_xfer_latency_ns(&x, MDL_LINK_NVLINK, big);
		ts.pcie_bw = mdl_xfer_bw(&x, MDL_LINK_PCIE_H2D, big) * 1e9;
		ts.pcie_lat_ns = (int64_t)mdl_xfer_latency_ns(&x, MDL_LINK_PCIE_H2D, big);
		ts.nic_bw = mdl_xfer_bw(&x, MDL_LINK_NET, big) * 1e9;
		ts.nic_lat_ns = (int64_t)mdl_xfer_latency_ns(&x, MDL_LINK_NET, big);
		s->copy_overhead_ns = mdl_xfer_copy_overhead_ns(&x, MDL_LINK_NVLINK, MDL_SHAPE_GRANULAR,
								1, shard_block_bytes(s));
	}
	int rc = net_topo_build(s->net, &ts, &s->topo, e);
	if (rc)
		return rc;
	if ((rc = net_set_share(s->net, (net_share_t)np->bg_share, np->bg_weight, e)))
		return rc;
	/* background scheduling: the transfer policy when it is not immediate,
	 * else the [network] default */
	pol_xfer_mode_t pm = POL_XFER_IMMEDIATE;
	double param = 0;
	const struct pol_transfer_ops *xo = POL_SET_OPS(&s->pol, POL_TRANSFER, pol_transfer_ops);
	xo->mode(s->pol.h[POL_TRANSFER].state, &pm, &param);
	net_bg_mode_t mode;
	sim_bg_schedule(pm, param, np, &mode, &param);
	if (mode != NET_BG_IMMEDIATE && (rc = net_set_bg_mode(s->net, mode, param, e)))
		return rc;
	net_set_record(s->net, 0);
	if ((rc = net_set_quantum(s->net, np->solve_quantum_ns, e)))
		return rc;
	s->block_granular = np->block_granular;
	s->fetch_rule = (sim_fetch_t)p->fetch;
	s->host_fetch_rule = (sim_fetch_t)p->host_fetch;
	s->copy_uncomputed = p->copy_uncomputed;
	s->contention_none = np->contention_none;
	s->copy_mode = np->copy_charge_compute ? COPY_JOB
		       : s->contention_none    ? COPY_TIMER
					       : COPY_FLOWS;
	const char *en = p->transfer_engine;
	size_t ei = 0, ne = sizeof xfer_engines / sizeof xfer_engines[0];
	while (ei < ne && strcmp(xfer_engines[ei].name, en))
		ei++;
	if (ei == ne) /* the key's choices and this table disagree: a build error */
		return err_set(e, KS_ERUNTIME, "[kvcache] transfer_engine: no costs for '%s'", en);
	s->engine = xfer_engines[ei];
	if ((rc = ev_engine_type_new(s->eng, lone_copy_done, s, &s->ev.lone_copy)))
		return err_set(e, rc, "cannot register the copy timer");
	s->copy_deferred = p->copy_deferred;
	/* host tier: per node, sized in blocks of the whole instance */
	double host_gb = p->host_kv_gb;
	s->host_offload = p->host_offload && host_gb > 0;
	s->host = calloc(s->nodes, sizeof *s->host);
	if (!s->host)
		return KS_ENOMEM;
	if (host_gb > 0) {
		uint32_t cap = (uint32_t)(host_gb * 1e9 / (double)s->cl.p.block_bytes);
		for (uint32_t i = 0; i < s->nodes; i++)
			if (!(s->host[i] = kv_store_new(cap)))
				return KS_ENOMEM;
	}
	return sim_tiers_init(s, p, sim_on_tier_evict);
}

void sim_net_free(sim_ctx_t *s)
{
	for (size_t i = 0; i < s->n_copies; i++)
		free(s->copies[i].blocks);
	free(s->copies);
	free(s->deferred);
	if (s->host)
		for (uint32_t i = 0; i < s->nodes; i++)
			kv_store_free(s->host[i]);
	free(s->host);
	sim_tiers_free(s);
	free(s->replicas);
	net_topo_free(s->topo);
	net_free(s->net);
}

/* Path from GPU gs of instance src to GPU gd of instance dst. */
static int gpu_path(sim_ctx_t *s, uint32_t src, uint32_t gs, uint32_t dst, uint32_t gd,
		    uint32_t *links, int *kind)
{
	uint32_t ns = node_of(s, (int32_t)src), nd = node_of(s, (int32_t)dst);
	*kind = ns == nd ? PATH_NVLINK : PATH_NET;
	return net_path_gpu_gpu(s->topo, ns, gpu0_of(s, src) + gs, nd, gpu0_of(s, dst) + gd, links);
}

/* Path of shard g of a copy; returns its length or < 0. */
static int shard_path(sim_ctx_t *s, int32_t src, int32_t dst, uint32_t g, uint32_t *links,
		      int *kind)
{
	uint32_t nd = node_of(s, dst), ns = node_of(s, src);
	if (sim_tier_of(s, src) > SIM_TIER_HOST || sim_tier_of(s, dst) > SIM_TIER_HOST)
		return sim_tier_path(s, src, dst, dst >= 0 ? nd : ns,
				     (dst >= 0 ? gpu0_of(s, (uint32_t)dst)
				      : src >= 0 ? gpu0_of(s, (uint32_t)src)
						 : 0) + g,
				     links, kind);
	if (src < 0) {
		*kind = PATH_PCIE_H2D;
		return net_path_host_gpu(s->topo, nd, gpu0_of(s, (uint32_t)dst) + g, links);
	}
	if (dst < 0) {
		*kind = PATH_PCIE_D2H;
		return net_path_gpu_host(s->topo, ns, gpu0_of(s, (uint32_t)src) + g, links);
	}
	/* a decode instance of another TP (speculative pre-placement): shard g
	 * lands on its GPU g x tp_dst / tp, as sim_copy_handoff reshards */
	uint32_t gd = s->tp_decode && s->cl.inst[dst].role == CL_ROLE_DECODE
			      ? g * s->tp_decode / s->tp
			      : g;
	return gpu_path(s, (uint32_t)src, g, (uint32_t)dst, gd, links, kind);
}

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
	t->src_gpu = k->src >= 0 ? (int32_t)(node_of(s, k->src) * s->gpus_per_node +
					     gpu0_of(s, (uint32_t)k->src) + gs)
				 : -1;
	t->dst_gpu = k->dst >= 0 ? (int32_t)(node_of(s, k->dst) * s->gpus_per_node +
					     gpu0_of(s, (uint32_t)k->dst) + gd)
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
	kv_store_t *d = store_of(s, k->dst);
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
			kv_store_t *from = store_of(s, k->src);
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

static int flow_done(void *ctx, net_t *net, const net_flow_rec_t *rec)
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

/* Job ids of source-side reads (their end needs no action). */
#define SOURCE_JOB (1ULL << 63)

typedef struct copy_costs {
	int64_t overhead_ns;   /* startup added to the path latency */
	double rate_cap;       /* bytes/s per shard, 0 = none */
	int64_t source_job_ns; /* compute the source spends reading, 0 = none */
	int64_t alone_ns;      /* one shard alone on its path, whole copy */
} copy_costs_t;

/* What a copy of k blocks on this path pays: the calibrated per-block
 * overhead, and over the NIC the transfer engine's costs. */
static copy_costs_t copy_costs(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			       uint32_t k)
{
	copy_costs_t cc = {0};
	cc.overhead_ns = (s->block_granular ? (int64_t)k : 1) * s->copy_overhead_ns;
	double cap = 0;
	int64_t lat = 0;
	for (uint32_t i = 0; i < len; i++) {
		double lc;
		int64_t ll;
		if (net_link_info(s->net, links[i], &lc, &ll))
			continue;
		lc = sim_tier_link_share(s, links[i], lc);
		lat += ll;
		cap = i == 0 || lc < cap ? lc : cap;
	}
	uint64_t bytes = shard_copy_bytes(s, k);
	if (kind == PATH_NET) {
		const xfer_engine_t *x = &s->engine;
		cc.overhead_ns += x->per_copy_ns + (int64_t)k * x->per_block_ns;
		if (x->nic_efficiency < 1) {
			cc.rate_cap = cap * x->nic_efficiency;
			cap = cc.rate_cap;
		}
		if (x->source_read && s->hw.pcie_bw > 0)
			cc.source_job_ns = (int64_t)ceil((double)bytes / s->hw.pcie_bw * 1e9);
	}
	cc.alone_ns = lat + cc.overhead_ns + (cap > 0 ? (int64_t)ceil((double)bytes / cap * 1e9) : 0);
	return cc;
}

/* A copy that does not share links: done after alone_ns, by a timer or as a
 * job on the target's compute. */
static int lone_copy_start(sim_ctx_t *s, kcopy_t *c, const copy_costs_t *cc)
{
	c->alone_ns = cc->alone_ns < 1 ? 1 : cc->alone_ns;
	if (c->mode == COPY_JOB) {
		int rc = cluster_job_add(&s->cl, (uint32_t)c->dst, c->id, c->alone_ns);
		if (rc)
			return rc;
	} else {
		c->timer = ev_engine_after(s->eng, c->alone_ns, s->ev.lone_copy, 0, c->id);
		if (c->timer == EV_NONE)
			return KS_ENOMEM;
	}
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

static int lone_copy_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
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

/* A live copy of blocks mv[0..k) (owned from here on), requested now and
 * counted in live_events; its flows are not started. NULL on ENOMEM. */
static kcopy_t *copy_new(sim_ctx_t *s, int32_t src, int32_t dst, uint64_t *mv, uint32_t k, int cls,
			 int spec, int from_policy, sim_req_t *req)
{
	if (VEC_GROW(s->copies, s->cap_copies, s->n_copies + 1, 256))
		return NULL;
	kcopy_t *c = &s->copies[s->n_copies++];
	memset(c, 0, sizeof *c);
	c->id = s->n_copies;
	c->src = src;
	c->dst = dst;
	c->n = k;
	c->cls = cls;
	c->spec = spec;
	c->from_policy = from_policy;
	c->req = req;
	c->live = 1;
	c->requested = c->started = ev_engine_now(s->eng);
	c->blocks = mv;
	s->live_events++;
	return c;
}

/* Starts copy c now: one flow per tensor-parallel shard on shared links,
 * or (network.contention = none / copy_charge = target_compute) a lone
 * copy, after the source-side read of a transfer engine that has one. */
static int copy_flows_start(sim_ctx_t *s, kcopy_t *c)
{
	uint64_t bytes = shard_copy_bytes(s, c->n);
	c->started = ev_engine_now(s->eng);
	c->flows_left = c->n_flows = s->tp;
	c->shard_bytes = bytes;
	uint32_t links[NET_PATH_MAX];
	int kind;
	int len = shard_path(s, c->src, c->dst, 0, links, &kind);
	if (len < 0)
		return len;
	c->kind = kind;
	copy_costs_t cc = copy_costs(s, links, (uint32_t)len, kind, c->n);
	c->mode = s->copy_mode;
	if (c->mode == COPY_JOB && c->dst < 0) /* an offload has no target compute */
		c->mode = s->contention_none ? COPY_TIMER : COPY_FLOWS;
	int rc;
	if (cc.source_job_ns > 0 && c->src >= 0 &&
	    (rc = cluster_job_add(&s->cl, (uint32_t)c->src, SOURCE_JOB | c->id, cc.source_job_ns)))
		return rc;
	if (c->mode != COPY_FLOWS)
		return lone_copy_start(s, c, &cc);
	for (uint32_t g = 0; g < s->tp; g++) {
		if (g && (len = shard_path(s, c->src, c->dst, g, links, &kind)) < 0)
			return len;
		net_flow_spec_t fs = {
			.bytes = bytes,
			.path = links,
			.path_len = (uint32_t)len,
			.cls = c->cls,
			.rate_cap = cc.rate_cap,
			.n_copies = 1,
			.copy_overhead_ns = cc.overhead_ns,
			.src = (uint32_t)c->src,
			.dst = (uint32_t)c->dst,
			.tag = (c->id << 16) | g,
			.done = flow_done,
			.ctx = s,
		};
		if ((rc = net_flow_start(s->net, &fs, &c->flow_ids[g], s->err)))
			return rc;
	}
	return 0;
}

int sim_copy_handoff(sim_ctx_t *s, uint32_t src, uint32_t tp_src, uint32_t dst, uint32_t tp_dst,
		     uint64_t bytes, uint32_t blocks, uint32_t tag)
{
	kcopy_t *c = copy_new(s, (int32_t)src, (int32_t)dst, NULL, blocks, NET_FG, 0, 0, NULL);
	if (!c)
		return KS_ENOMEM;
	uint32_t n = tp_src > tp_dst ? tp_src : tp_dst;
	c->handoff = tag;
	c->tp_src = tp_src;
	c->tp_dst = tp_dst;
	c->mode = COPY_FLOWS;
	c->flows_left = c->n_flows = n;
	c->shard_bytes = bytes / n;
	uint32_t links[NET_PATH_MAX];
	for (uint32_t f = 0; f < n; f++) {
		int kind, rc, len = gpu_path(s, src, f * tp_src / n, dst, f * tp_dst / n, links, &kind);
		if (len < 0)
			return len;
		c->kind = kind;
		copy_costs_t cc = copy_costs(s, links, (uint32_t)len, kind, blocks);
		net_flow_spec_t fs = {
			.bytes = bytes / n + (f < bytes % n),
			.path = links,
			.path_len = (uint32_t)len,
			.cls = NET_FG,
			.rate_cap = cc.rate_cap,
			.n_copies = 1,
			.copy_overhead_ns = cc.overhead_ns,
			.src = src,
			.dst = dst,
			.tag = (c->id << 16) | f,
			.done = flow_done,
			.ctx = s,
		};
		if ((rc = net_flow_start(s->net, &fs, &c->flow_ids[f], s->err)))
			return rc;
	}
	return 0;
}

/* Shared by copies (src pinned, dst an instance) and offloads (dst host). */
/* The holders index learns the first blocks of prefixes reserved at
 * instance dst (a no-op when no reader keeps the index). */
static int holders_note(sim_ctx_t *s, int32_t dst, const uint64_t *mv, uint32_t k)
{
	/* the routers see the prefill pool only: a replica pre-placed on a
	 * decode instance must never be a routing candidate */
	if (!s->holders || dst < 0 || s->cl.inst[dst].role == CL_ROLE_DECODE)
		return 0;
	const kv_store_t *to = s->cl.inst[dst].kv;
	for (uint32_t j = 0; j < k; j++)
		if (kv_info(to, mv[j])->depth == 0 && sim_holders_add(s->holders, mv[j], (uint32_t)dst))
			return KS_ENOMEM;
	return 0;
}

static int copy_begin(sim_ctx_t *s, int32_t src, int32_t dst, const uint64_t *blocks, uint32_t n,
		      int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id)
{
	int64_t now = ev_engine_now(s->eng);
	kv_store_t *from = store_of(s, src), *to = store_of(s, dst);
	int offload = dst < 0;
	int rc;
	/* the blocks to move go into the copy's own array at once: making room
	 * at dst evicts, and an eviction may start an offload copy itself */
	uint64_t *mv = malloc((n ? n : 1) * sizeof *mv);
	if (!mv)
		return KS_ENOMEM;
	uint32_t k = 0;
	for (uint32_t j = 0; j < n; j++) {
		if (kv_lookup(to, blocks[j]))
			continue;
		int st = offload ? KV_READY : kv_lookup(from, blocks[j]);
		if (st != KV_READY && !(st == KV_COMPUTING && s->copy_uncomputed)) {
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
	/* pin the sources first so making room at dst cannot evict them */
	if (!offload)
		for (uint32_t j = 0; j < k; j++)
			kv_pin_any(from, mv[j], now); /* READY, or COMPUTING (copy_from) */
	for (uint32_t j = 0; j < k; j++) {
		const kv_block_info_t *bi = offload ? NULL : kv_info(from, mv[j]);
		if (kv_alloc(to, mv[j], bi ? bi->depth : 0, KV_INFLIGHT, 0, spec, now)) {
			for (uint32_t i = 0; i < j; i++)
				kv_drop(to, mv[i]);
			if (!offload)
				for (uint32_t i = 0; i < k; i++)
					kv_unref(from, mv[i], now);
			free(mv);
			return POL_COPY_REFUSED;
		}
	}
	kcopy_t *c = holders_note(s, dst, mv, k) ? NULL
						 : copy_new(s, src, dst, mv, k, cls, spec, from_policy, req);
	if (!c) {
		free(mv);
		return KS_ENOMEM;
	}
	if ((rc = copy_flows_start(s, c)))
		return rc;
	*id = c->id;
	return POL_COPY_OK;
}

/* Why copy_begin refused: a block to move not READY at the source, else no
 * room at the destination. */
static pol_refusal_t refusal_reason(sim_ctx_t *s, int32_t src, uint32_t dst,
				    const uint64_t *blocks, uint32_t n)
{
	kv_store_t *from = store_of(s, src), *to = store_of(s, (int32_t)dst);
	for (uint32_t j = 0; j < n; j++)
		if (!kv_lookup(to, blocks[j]) && kv_lookup(from, blocks[j]) != KV_READY)
			return POL_REFUSED_SOURCE;
	return POL_REFUSED_ROOM;
}

/* ---- deferred copies ---------------------------------------------------
 * The causal analogue of copying from a source that is still computing: a
 * copy asked for while some of its source blocks are COMPUTING reserves its
 * blocks INFLIGHT at the destination at once (room taken, as a real
 * pre-allocated receive buffer would be) and starts its flows the instant
 * the last source block becomes READY (kv_watch). READY source blocks are
 * pinned meanwhile; a dropped source block (preemption, or a release before
 * it was computed) cancels the copy. */

static int deferred_push(sim_ctx_t *s, uint32_t idx)
{
	if (VEC_GROW(s->deferred, s->cap_deferred, s->n_deferred + 1, 16))
		return KS_ENOMEM;
	s->deferred[s->n_deferred++] = idx;
	return 0;
}

/* Forgets copy idx in the waiting list (order does not matter). */
static void deferred_forget(sim_ctx_t *s, uint32_t idx)
{
	for (size_t i = 0; i < s->n_deferred; i++)
		if (s->deferred[i] == idx) {
			s->deferred[i] = s->deferred[--s->n_deferred];
			return;
		}
}

static int copy_defer(sim_ctx_t *s, uint32_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
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
	uint64_t *mv = malloc(k * sizeof *mv);
	if (!mv)
		return KS_ENOMEM;
	k = 0;
	for (uint32_t j = 0; j < n; j++)
		if (!kv_lookup(to, blocks[j]))
			mv[k++] = blocks[j];
	for (uint32_t j = 0; j < k; j++)
		if (kv_pin(from, mv[j], now)) /* not READY: computing */
			kv_watch(from, mv[j]);
	for (uint32_t j = 0; j < k; j++)
		if (kv_alloc(to, mv[j], kv_info(from, mv[j])->depth, KV_INFLIGHT, 0, spec, now)) {
			for (uint32_t i = 0; i < k; i++) {
				if (i < j)
					kv_drop(to, mv[i]);
				if (kv_lookup(from, mv[i]) == KV_READY)
					kv_unref(from, mv[i], now);
			}
			free(mv);
			return POL_COPY_REFUSED; /* watches left behind find no copy */
		}
	kcopy_t *c = holders_note(s, (int32_t)dst, mv, k)
			     ? NULL
			     : copy_new(s, (int32_t)src, (int32_t)dst, mv, k, cls, spec, 1, req);
	if (!c) {
		free(mv);
		return KS_ENOMEM;
	}
	c->deferred = 1;
	c->pending = pending;
	if (deferred_push(s, (uint32_t)(c->id - 1)))
		return KS_ENOMEM;
	s->spec.copies_deferred++;
	*id = c->id;
	return POL_COPY_OK;
}

static int copy_holds(const kcopy_t *c, uint64_t block)
{
	for (uint32_t j = 0; j < c->n; j++)
		if (c->blocks[j] == block)
			return 1;
	return 0;
}

void sim_on_kv_watch(void *ctx, const kv_block_info_t *b, int event)
{
	hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	for (size_t i = 0; i < s->n_deferred;) {
		kcopy_t *c = &s->copies[s->deferred[i]];
		if (c->src != (int32_t)h->inst || !copy_holds(c, b->id)) {
			i++;
			continue;
		}
		if (event == KV_WATCH_DROP) {
			/* its source will not exist: sim_copy_cancel forgets it at i */
			int rc = sim_copy_cancel(s, c->id);
			if (rc && !s->hook_err)
				s->hook_err = rc;
			continue;
		}
		kv_pin(s->cl.inst[h->inst].kv, b->id, ev_engine_now(s->eng));
		if (--c->pending) {
			i++;
			continue;
		}
		/* the flows start from an event of their own at this same instant:
		 * we are inside the source's scheduler */
		deferred_forget(s, s->deferred[i]);
		if (ev_engine_after(s->eng, 0, s->ev.defer, 0, c->id) == EV_NONE && !s->hook_err)
			s->hook_err = KS_ENOMEM;
	}
}

int sim_copy_deferred_start(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	sim_ctx_t *s = ctx;
	if (s->hook_err)
		return s->hook_err;
	kcopy_t *c = &s->copies[ev->payload - 1];
	if (!c->live || !c->deferred)
		return 0; /* cancelled meanwhile */
	c->deferred = 0;
	s->spec.deferred_started++;
	s->spec.deferral_s += (double)(ev_engine_now(eng) - c->requested) * 1e-9;
	int rc = copy_flows_start(s, c);
	/* requests waiting at dst decide again, now from the flows' real rates */
	return rc ? rc : cluster_kick(&s->cl, (uint32_t)c->dst);
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
	const sim_inst_t *in = &s->cl.inst[c->src];
	const kv_block_info_t *b = NULL;
	uint64_t last = 0;
	for (uint32_t j = 0; j < c->n; j++)
		if (kv_lookup(in->kv, c->blocks[j]) == KV_COMPUTING)
			b = kv_info(in->kv, last = c->blocks[j]);
	if (!b) /* computed: its flows start at this instant */
		return now + sim_copy_estimate(s, c->src, (uint32_t)c->dst, c->n, c->cls);
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
		       sim_copy_estimate(s, c->src, (uint32_t)c->dst, c->n, c->cls);
	}
	return INT64_MAX;
}

int sim_wait_inflight(void *ctx, uint32_t inst, const sim_req_t *r, uint32_t first)
{
	sim_ctx_t *s = ctx;
	if (!s->copy_deferred)
		return 1; /* kvcache.copy_deferred = false: always wait, as before */
	kv_store_t *kv = s->cl.inst[inst].kv;
	int64_t now = ev_engine_now(s->eng), land = now;
	uint32_t k = first;
	uint64_t seen = 0;
	for (; k < r->n_blocks; k++) {
		const kv_block_info_t *b = kv_info(kv, r->blocks[k]);
		if (!b || b->state != KV_INFLIGHT)
			break;
		if (!b->tag || b->tag > s->n_copies)
			return 1;
		const kcopy_t *c = &s->copies[b->tag - 1];
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

int sim_copy_block_deferred(const sim_ctx_t *s, const kv_block_info_t *b)
{
	if (b->state != KV_INFLIGHT || !b->tag || b->tag > s->n_copies)
		return 0;
	const kcopy_t *c = &s->copies[b->tag - 1];
	return c->live && c->deferred;
}

/* Tags the INFLIGHT blocks of copy id at its destination with the copy, so
 * a request meeting one can time its landing (sim_wait_inflight). */
static void copy_tag_inflight(sim_ctx_t *s, uint64_t id)
{
	const kcopy_t *c = &s->copies[id - 1];
	if (c->dst < 0)
		return;
	for (uint32_t j = 0; j < c->n; j++)
		kv_set_tag(s->cl.inst[c->dst].kv, c->blocks[j], (uint32_t)id);
}

int sim_copy_start(sim_ctx_t *s, int32_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id)
{
	if (src == (int32_t)dst)
		return POL_COPY_REFUSED;
	if (src < 0 && !store_of(s, src))
		return POL_COPY_REFUSED;
	sim_touch(s, src); /* the timeline: room made at dst, sources dropped */
	sim_touch(s, (int32_t)dst);
	int rc = copy_begin(s, src, (int32_t)dst, blocks, n, cls, spec, from_policy, req, id);
	if (rc == POL_COPY_REFUSED && from_policy && s->copy_deferred && src >= 0)
		rc = copy_defer(s, (uint32_t)src, dst, blocks, n, cls, spec, req, id);
	if (rc == POL_COPY_REFUSED)
		pol_spec_refused(&s->spec, refusal_reason(s, src, dst, blocks, n));
	if (rc == POL_COPY_OK)
		copy_tag_inflight(s, *id);
	/* the replica exists, for placement accuracy, from now on (forecast.h) */
	if (rc == POL_COPY_OK && spec && s->fc && fcast_replica_start(s->fc, *id, blocks[n - 1], dst))
		return KS_ENOMEM;
	return rc == COPY_NOTHING ? POL_COPY_REFUSED : rc; /* already there: nothing to do */
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
	kv_store_t *d = store_of(s, k->dst);
	for (uint32_t j = 0; j < k->n; j++) {
		kv_drop(d, k->blocks[j]);
		/* sources were pinned once READY (a deferred copy's computing ones are not) */
		if (k->dst >= 0 && kv_lookup(store_of(s, k->src), k->blocks[j]) == KV_READY)
			kv_unref(store_of(s, k->src), k->blocks[j], now);
	}
	k->live = 0;
	s->live_events--;
	s->spec.copies_cancelled++;
	if (s->fc)
		fcast_replica_cancel(s->fc, id);
	if (k->deferred) {
		deferred_forget(s, (uint32_t)(id - 1));
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

int64_t sim_copy_estimate(sim_ctx_t *s, int32_t src, uint32_t dst, uint32_t n, int cls)
{
	uint32_t links[NET_PATH_MAX];
	int kind;
	int len = shard_path(s, src, (int32_t)dst, 0, links, &kind);
	if (len <= 0)
		return INT64_MAX / 4;
	copy_costs_t cc = copy_costs(s, links, (uint32_t)len, kind, n);
	if (s->copy_mode != COPY_FLOWS)
		return cc.alone_ns;
	/* net_path_estimate answers a finish time, at the fair share */
	uint64_t bytes = shard_copy_bytes(s, n);
	int64_t t = net_path_estimate(s->net, links, (uint32_t)len, cls, bytes);
	if (t == INT64_MAX || t < 0)
		return INT64_MAX / 4;
	t -= ev_engine_now(s->eng);
	if (cc.rate_cap > 0) { /* the engine's efficiency caps the rate too */
		int64_t capped = (int64_t)ceil((double)bytes / cc.rate_cap * 1e9);
		t = capped > t ? capped : t;
	}
	/* a drive or the pool shared by the copy's own shards (the fair share
	 * above is one shard's) */
	if (kind >= PATH_NVME_READ && cc.alone_ns - cc.overhead_ns > t)
		t = cc.alone_ns - cc.overhead_ns;
	return t + cc.overhead_ns;
}

/* The peer with the longest match of r's prefix beyond ml (dst's own),
 * among cand[0..nc) (ascending), or among every instance when cand is NULL;
 * on a tie, a source on dst's node (NVLink). *from stays as it was when
 * none beats ml. Instances outside the holders of r's first block match
 * nothing, so both give the same answer (checked in KVSIM_CHECK builds). */
static int peer_best(const sim_ctx_t *s, const sim_req_t *r, uint32_t dst, uint32_t ml,
		     const uint32_t *cand, uint32_t nc, uint32_t *best, int32_t *from)
{
	uint32_t dnode = node_of(s, (int32_t)dst), n = cand ? nc : s->cl.p.n_instances;
	int found = 0;
	*best = ml;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = cand ? cand[j] : j;
		/* a decode instance's prefix cache serves its own handoffs, not
		 * peer fetches (it is outside the holders index: holders_note) */
		if (i == dst || s->cl.inst[i].role == CL_ROLE_DECODE)
			continue;
		uint32_t m = kv_match(s->cl.inst[i].kv, r->blocks, r->n_blocks);
		if (m > *best || (found && m == *best && m > ml && node_of(s, (int32_t)i) == dnode &&
				  node_of(s, *from) != dnode)) {
			*best = m;
			*from = (int32_t)i;
			found = 1;
		}
	}
	return found;
}

int sim_fetch_decide(sim_ctx_t *s, sim_req_t *r, uint32_t dst)
{
	uint32_t dnode = node_of(s, (int32_t)dst);
	/* the host tier counts only where the node has one: with the defaults
	 * (no peer pull, no host tier) an arrival costs nothing here */
	int peers = s->fetch_rule != SIM_FETCH_NEVER,
	    host = s->host_fetch_rule != SIM_FETCH_NEVER && (s->host[dnode] || sim_tiers_any(s, dnode));
	if ((!peers && !host) || s->cl.p.busy_rule != BUSY_WAIT || !r->n_blocks)
		return 0;
	uint32_t ml = kv_match(s->cl.inst[dst].kv, r->blocks, r->n_blocks);
	uint32_t best = ml;
	int32_t from = 0;
	int found = 0;
	if (peers) {
		uint32_t nc;
		const uint32_t *c = sim_holders_of(s->holders, r->blocks[0], &nc);
		found = peer_best(s, r, dst, ml, c, nc, &best, &from);
#ifdef KVSIM_CHECK
		uint32_t b2;
		int32_t f2 = 0;
		int found2 = peer_best(s, r, dst, ml, NULL, 0, &b2, &f2);
		if (found2 != found || b2 != best || (found && f2 != from))
			return err_set(s->err, KS_ERUNTIME,
				       "holders index: request %" PRIu64 " best peer %d (%u blocks), a "
				       "full scan says %d (%u blocks)",
				       r->id, found ? from : -1, best, found2 ? f2 : -1, b2);
#endif
	}
	if (host && s->host[dnode]) {
		uint32_t m = kv_match(s->host[dnode], r->blocks, r->n_blocks);
		if (m > best) {
			best = m;
			from = -1 - (int32_t)dnode;
			found = 1;
		}
	}
	if (host && sim_tiers_best(s, r, dnode, &best, &from))
		found = 1;
	if (!found)
		return 0;
	uint32_t k = best - ml, B = s->cl.p.block_tokens;
	if ((from >= 0 ? s->fetch_rule : s->host_fetch_rule) == SIM_FETCH_COST) {
		int64_t fetch = sim_copy_estimate(s, from, dst, k, NET_FG);
		int64_t recompute = mdl_prefill_time_ns(&s->comp, k * B, ml * B);
		if (fetch >= recompute)
			return 0;
	}
	uint64_t id;
	int rc = sim_copy_start(s, from, dst, r->blocks, best, NET_FG, 0, 0, r, &id);
	if (rc < 0)
		return rc;
	if (rc == POL_COPY_OK) {
		r->fetch_lo = ml;
		r->fetch_hi = best;
		r->fetch_src = from >= 0 ? 1 : 2;
		return sim_tiers_fetched(s, r, from, k);
	}
	return 0;
}

void sim_on_spec_hit(void *ctx, uint32_t inst, uint32_t tag, uint32_t blocks)
{
	(void)inst;
	(void)blocks;
	sim_ctx_t *s = ctx;
	if (tag >= s->n_replicas)
		return;
	s->spec.warm_hits++;
	if (!s->replicas[tag].used) {
		s->replicas[tag].used = 1;
		s->spec.replicas_used++;
		if (s->fc && fcast_replica_used(s->fc, s->replicas[tag].landed, ev_engine_now(s->eng)) &&
		    !s->hook_err)
			s->hook_err = KS_ENOMEM;
	}
}

/* A speculative block leaves unused: its VRAM-time was wasted. */
static void spec_block_gone(sim_ctx_t *s, const kv_block_info_t *b, int64_t now)
{
	int wasted = 0;
	if (b->tag < s->n_replicas) {
		replica_t *r = &s->replicas[b->tag];
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
 * lacks it. */
static void tier_offload(sim_ctx_t *s, int32_t where, uint64_t block)
{
	int32_t to = sim_tier_below(s, where, where < 0);
	if (to == SIM_TIER_NONE || kv_lookup(store_of(s, to), block))
		return;
	uint64_t id;
	if (copy_begin(s, where, to, &block, 1, NET_BG, 0, 0, NULL, &id) == POL_COPY_OK)
		sim_tiers_offloaded(s, to, 1);
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

void sim_on_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
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
		spec_block_gone(s, b, now);
	if (s->fc)
		fcast_evicted(s->fc, b->id, h->inst);
	if (s->rvw) /* the routers' event index hears of it */
		sim_rv_removed(s->rvw, h->inst, b->id, now);
	if (s->holders && b->depth == 0 && !inst_will_compute(s, h->inst, b->id))
		sim_holders_remove(s->holders, b->id, h->inst);
	/* write the evicted block back to host memory, or the tier below (a
	 * staging buffer holds it while the background flow runs) */
	tier_offload(s, (int32_t)h->inst, b->id);
}

void sim_on_tier_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	const sim_tier_hook_t *h = ctx;
	sim_ctx_t *s = h->s;
	if (s->dec) /* the tiers are LRU: the last use is the score */
		sim_dec_evict(s->dec, sim_tier_store(s, h->where), (int)sim_tier_of(s, h->where),
		              (int32_t)sim_tier_node(s, h->where), b, (double)b->last_use,
		              kv_stats(sim_tier_store(s, h->where)).evictions, now);
	tier_offload(s, h->where, b->id);
}

static int count_spec_left(void *ctx, const kv_block_info_t *b)
{
	void **a = ctx;
	sim_ctx_t *s = a[0];
	if (b->state == KV_READY && b->spec)
		spec_block_gone(s, b, *(int64_t *)a[1]);
	return 0;
}

int sim_copy_finish(sim_ctx_t *s, sim_results_t *res)
{
	int64_t now = ev_engine_now(s->eng);
	void *a[2] = {s, &now};
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++)
		kv_foreach(s->cl.inst[i].kv, count_spec_left, a);
	net_stats_t ns;
	net_get_stats(s->net, &ns);
	s->spec.fg_flows = ns.fg_done;
	s->spec.fg_slowdown_s = (ns.fg_actual_ns - ns.fg_alone_ns) / 1e9;
	double m[POL_SPEC_N_METRICS];
	pol_spec_metrics(&s->spec, m);
	for (int i = 0; i < POL_SPEC_N_METRICS; i++)
		if (rec_metric(res, REC_SPEC_TRIGGERS + i, m[i]))
			return KS_ENOMEM;
	/* per link kind (net_medium_t order, as the recorder's list): bytes
	 * moved and busy time, by class */
	double kb[NET_MEDIUM_N][2] = {{0}}, kt[NET_MEDIUM_N][2] = {{0}};
	size_t nl = net_link_count(s->net);
	for (uint32_t l = 0; l < nl; l++) {
		net_link_stats_t st;
		if (net_link_stats(s->net, l, &st))
			continue;
		int k = (int)net_topo_link_medium(s->topo, l);
		for (int c = 0; c < 2; c++) {
			kb[k][c] += st.bytes[c];
			kt[k][c] += (double)st.busy_ns[c] / 1e9;
		}
	}
	for (int k = 0; k < 4; k++)
		for (int c = 0; c < 2; c++) {
			int id = REC_LINK_BYTES_FG_NVLINK + 4 * k + 2 * c;
			if (rec_metric(res, id, kb[k][c]) || rec_metric(res, id + 1, kt[k][c]))
				return KS_ENOMEM;
		}
	double fg_mean = ns.fg_done && ns.fg_alone_ns > 0 ? ns.fg_actual_ns / ns.fg_alone_ns : 1;
	if (rec_metric(res, REC_FG_SLOWDOWN_MEAN, fg_mean) ||
	    rec_metric(res, REC_BYTES_FG, (double)s->spec.bytes_fg) ||
	    rec_metric(res, REC_BYTES_BG, (double)s->spec.bytes_bg))
		return KS_ENOMEM;
	return sim_tiers_finish(s, res, kb, kt);
}

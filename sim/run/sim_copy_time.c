/* sim_copy_time — where a copy's shards go and what they cost: paths
 * between GPUs, host memory and the tiers below, the transfer engine's
 * overheads, estimates at current rates, and when copies in flight land. */
#include "sim/run/sim_int.h"

#include <math.h>

#include "sim/run/sim_tiers.h"

/* The store at `where`: an instance's, or a tier's below HBM (sim_tiers.h). */
kv_store_t *sim_store_of(sim_ctx_t *s, int32_t where)
{
	return where >= 0 ? s->cl.inst[where].kv : sim_tier_store(s, where);
}

/* The node of `where` (an instance or a tier). */
uint32_t sim_node_of(const sim_ctx_t *s, int32_t where)
{
	return where >= 0 ? sim_inst_node(s, (uint32_t)where) : sim_tier_node(s, where);
}

/* First GPU (within its node) of an instance. */
static uint32_t gpu0_of(sim_ctx_t *s, uint32_t inst)
{
	return sim_inst_gpu0(s, inst);
}

/* One shard's bytes of a copy of k blocks: their tokens' KV in full layers,
 * at most a window of it in sliding ones, and the state of state layers (a
 * copy brings a prefix the destination resumes from, which needs its state:
 * mdl_kv_prefix_bytes_gpu). k x shard_block_bytes for full-attention models. */
uint64_t sim_shard_copy_bytes(sim_ctx_t *s, uint32_t k)
{
	return mdl_kv_prefix_bytes_gpu(&s->comp.llm, s->tp, (uint64_t)k * s->cl.p.block_tokens, 1);
}

/* Path from GPU gs of instance src to GPU gd of instance dst. */
int sim_gpu_path(sim_ctx_t *s, uint32_t src, uint32_t gs, uint32_t dst, uint32_t gd,
		 uint32_t *links, int *kind)
{
	uint32_t ns = sim_node_of(s, (int32_t)src), nd = sim_node_of(s, (int32_t)dst);
	*kind = ns == nd ? PATH_NVLINK : PATH_NET;
	return net_path_gpu_gpu(s->topo, ns, gpu0_of(s, src) + gs, nd, gpu0_of(s, dst) + gd, links);
}

/* Path of shard g of a copy; returns its length or < 0. */
int sim_shard_path(sim_ctx_t *s, int32_t src, int32_t dst, uint32_t g, uint32_t *links,
		   int *kind)
{
	uint32_t nd = sim_node_of(s, dst), ns = sim_node_of(s, src);
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
	return sim_gpu_path(s, (uint32_t)src, g, (uint32_t)dst, gd, links, kind);
}

/* What a copy of k blocks on this path pays: the calibrated per-block
 * overhead, and over the NIC the transfer engine's costs. */
copy_costs_t sim_copy_costs(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
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
	uint64_t bytes = sim_shard_copy_bytes(s, k);
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

int64_t sim_copy_estimate(sim_ctx_t *s, int32_t src, uint32_t dst, uint32_t n, int cls)
{
	uint32_t links[NET_PATH_MAX];
	int kind;
	int len = sim_shard_path(s, src, (int32_t)dst, 0, links, &kind);
	if (len <= 0)
		return INT64_MAX / 4;
	copy_costs_t cc = sim_copy_costs(s, links, (uint32_t)len, kind, n);
	if (s->copy_mode != COPY_FLOWS)
		return cc.alone_ns;
	/* net_path_estimate answers a finish time, at the fair share */
	uint64_t bytes = sim_shard_copy_bytes(s, n);
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

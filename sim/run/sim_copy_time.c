/* sim_copy_time — where a copy's shards go and what they cost: paths
 * between GPUs, host memory and the tiers below, and the transfer engine's
 * overheads (estimates at current rates and landing times are
 * sim_copy_eta.c's). */
#include "sim/run/sim_copies.h"

#include <math.h>

#include "sim/run/sim_tiers.h"

/* The store at `where`: an instance's, or a tier's below HBM, by its tier's
 * table (sim_tiers.h). */
kv_store_t *sim_store_of(sim_ctx_t *s, place_t where)
{
	return sim_tier_ops(place_tier(where))->store(s, where);
}

/* The node of `where` (an instance or a tier; 0 for the pool). */
uint32_t sim_node_of(const sim_ctx_t *s, place_t where)
{
	return place_is_inst(where) ? sim_inst_node(s, where.index) : place_node(where);
}

/* One shard's bytes of a copy of k blocks: their tokens' KV in full layers,
 * at most a window of it in sliding ones, and the state of state layers (a
 * copy brings a prefix the destination resumes from, which needs its state:
 * mdl_kv_prefix_bytes_gpu). k x shard_block_bytes for full-attention models. */
uint64_t sim_shard_copy_bytes(sim_ctx_t *s, uint32_t k)
{
	return mdl_kv_prefix_bytes_gpu(&s->comp.llm, s->tp, (uint64_t)k * s->cl.p.block_tokens, 1);
}

/* Path of shard g of a copy, by the table of the lower of its ends' tiers;
 * returns its length or < 0. */
int sim_shard_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
		   int *kind)
{
	sim_tier_t lower = place_tier(src) > place_tier(dst) ? place_tier(src) : place_tier(dst);
	return sim_tier_ops(lower)->path(s, src, dst, g, links, kind);
}

/* What a copy of k blocks on this path pays: the calibrated per-block
 * overhead, and over the NIC the transfer engine's costs. */
copy_costs_t sim_copy_costs(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			    uint32_t k)
{
	copy_costs_t cc = {0};
	cc.overhead_ns = (s->cp->block_granular ? (int64_t)k : 1) * s->cp->copy_overhead_ns;
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
		const xfer_engine_t *x = &s->cp->engine;
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

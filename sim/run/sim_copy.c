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
 * compute (a cluster job) instead of the links. Each way of paying a copy's
 * time is a timing mode (sim_copy_mode.h).
 *
 * This file: the network and the transfer engines ([network], [kvcache]),
 * copies asked for (sim_copy_start), the copies' state (sim_copies.h: made
 * here, read elsewhere through sim_copies_*) and the copies' summary at the
 * end. Their other pieces share sim_copies.h: paths and costs
 * (sim_copy_time.c), estimates and landing times (sim_copy_eta.c), a copy
 * started (sim_copy_begin.c), the timing modes (sim_copy_mode.c, sim_copy_flows.c, sim_copy_lone.c), landed
 * (sim_copy_land.c) or cancelled (sim_copy_cancel.c), deferred copies
 * (sim_copy_defer.c), eviction hooks and speculative replicas
 * (sim_evict.c), and fetches for requests (sim_fetch.c). */
#include <string.h>

#include "models/mdl_xfer.h"
#include "sim/base/mem.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_copy_mode.h"
#include "sim/run/sim_tiers.h"

static uint64_t shard_block_bytes(sim_ctx_t *s)
{
	return mdl_kv_paged_bytes_per_token_gpu(&s->comp.llm, s->tp) * s->cl.p.block_tokens;
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
	if (!(s->cp = calloc(1, sizeof *s->cp)))
		return KS_ENOMEM;
	s->cp->memo_on = sim_copy_memo_mode();
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
	s->cp->copy_overhead_ns = np->copy_overhead_ns;
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
		s->cp->copy_overhead_ns = mdl_xfer_copy_overhead_ns(&x, MDL_LINK_NVLINK, MDL_SHAPE_GRANULAR,
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
	s->cp->block_granular = np->block_granular;
	s->cp->fetch_rule = (sim_fetch_t)p->fetch;
	s->cp->host_fetch_rule = (sim_fetch_t)p->host_fetch;
	s->cp->copy_uncomputed = p->copy_uncomputed;
	const char *en = p->transfer_engine;
	size_t ei = 0, ne = sizeof xfer_engines / sizeof xfer_engines[0];
	while (ei < ne && strcmp(xfer_engines[ei].name, en))
		ei++;
	if (ei == ne) /* the key's choices and this table disagree: a build error */
		return err_set(e, KS_ERUNTIME, "[kvcache] transfer_engine: no costs for '%s'", en);
	s->cp->engine = xfer_engines[ei];
	if ((rc = sim_copy_modes_init(s, e)))
		return rc;
	s->cp->copy_deferred = p->copy_deferred;
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

/* The copies' state and every copy's blocks (s->cp may be NULL: setup
 * stopped before sim_net_init). */
static void copies_free(struct sim_copies *cp)
{
	if (!cp)
		return;
	for (size_t i = 0; i < cp->n_copies; i++)
		free(cp->copies[i].blocks);
	sim_copy_memo_free(cp->memo);
	FREE_ALL(cp->copies, cp->deferred, cp->replicas, cp);
}

void sim_net_free(sim_ctx_t *s)
{
	copies_free(s->cp);
	if (s->host)
		for (uint32_t i = 0; i < s->nodes; i++)
			kv_store_free(s->host[i]);
	free(s->host);
	sim_tiers_free(s);
	net_topo_free(s->topo);
	net_free(s->net);
}

int sim_copies_live(const struct sim_copies *cp)
{
	return cp->live_events;
}

int sim_copies_any_deferred(const struct sim_copies *cp)
{
	return cp->n_deferred > 0;
}

int sim_copies_defer_on(const struct sim_copies *cp)
{
	return cp->copy_deferred;
}

uint64_t sim_copies_handoff_bytes(const struct sim_copies *cp)
{
	return cp->handoff_bytes;
}

/* Tags the INFLIGHT blocks of copy id at its destination with the copy, so
 * a request meeting one can time its landing (sim_wait_inflight). */
static void copy_tag_inflight(sim_ctx_t *s, uint64_t id)
{
	const kcopy_t *c = &s->cp->copies[id - 1];
	if (!place_is_inst(c->dst))
		return;
	for (uint32_t j = 0; j < c->n; j++)
		kv_set_tag(s->cl.inst[c->dst.index].kv, c->blocks[j], (uint32_t)id);
}

/* A refusal: counted by its reason, and remembered (sim_copy_memo.c). With
 * KVSIM_COPY_MEMO=check, memo > 0 says the memo had answered "refused, for
 * its source" before this attempt. */
static int copy_refused(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks,
			uint32_t n, int from_policy, int rc, int memo)
{
	pol_refusal_t why;
	if (memo && rc != POL_COPY_REFUSED)
		return sim_copy_memo_wrong("accepted");
	if (rc != POL_COPY_REFUSED)
		return rc;
	if ((rc = sim_copy_memo_note(s, src, dst, blocks, n, from_policy, &why)))
		return rc;
	if (memo && why != POL_REFUSED_SOURCE)
		return sim_copy_memo_wrong("refused for another reason");
	pol_spec_refused(&s->spec, why);
	return POL_COPY_REFUSED;
}

int sim_copy_start(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id)
{
	if (place_eq(src, place_inst(dst)))
		return POL_COPY_REFUSED;
	if (!place_is_inst(src) && !sim_store_of(s, src))
		return POL_COPY_REFUSED;
	sim_touch_place(s, src); /* the timeline: room made at dst, sources dropped */
	sim_touch(s, dst);
	int memo = sim_copy_memo_refused(s, src, dst, blocks, n, from_policy);
	if (memo == 1) { /* a block still bars it: refused, for its source */
		pol_spec_refused(&s->spec, POL_REFUSED_SOURCE);
		return POL_COPY_REFUSED;
	}
	int rc = sim_copy_begin(s, src, place_inst(dst), blocks, n, cls, spec, from_policy, req, id);
	if (rc == POL_COPY_REFUSED && sim_copy_defer_applies(s, src, from_policy))
		rc = sim_copy_defer(s, src.index, dst, blocks, n, cls, spec, req, id);
	if (memo || rc == POL_COPY_REFUSED)
		if ((rc = copy_refused(s, src, dst, blocks, n, from_policy, rc, memo)) != POL_COPY_OK)
			return rc;
	if (rc == POL_COPY_OK)
		copy_tag_inflight(s, *id);
	/* the replica exists, for placement accuracy, from now on (forecast.h) */
	if (rc == POL_COPY_OK && spec && s->fc && fcast_replica_start(s->fc, *id, blocks[n - 1], dst))
		return KS_ENOMEM;
	return rc == COPY_NOTHING ? POL_COPY_REFUSED : rc; /* already there: nothing to do */
}

static int count_spec_left(void *ctx, const kv_block_info_t *b)
{
	void **a = ctx;
	sim_ctx_t *s = a[0];
	if (b->state == KV_READY && b->spec)
		sim_spec_block_gone(s, b, *(int64_t *)a[1]);
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

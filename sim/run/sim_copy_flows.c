/* sim_copy_flows — the flows timing mode (network.contention = maxmin, the
 * default): a copy is one flow per tensor-parallel shard on shared links,
 * each on its own path, and lands with its last flow. Handoffs' flows
 * (sim_copy_handoff) report here too. */
#include "sim/run/sim_copy_mode.h"

#include <math.h>

static int flows_takes(const net_params_t *np, int to_instance)
{
	(void)np;
	(void)to_instance;
	return 1;
}

/* net_flow_spec_t.done of a copy's flows: its row and bytes; the copy lands
 * with its last flow. */
static int flow_done(void *ctx, net_t *net, const net_flow_rec_t *rec)
{
	(void)net;
	sim_ctx_t *s = ctx;
	kcopy_t *k = &s->cp->copies[(rec->tag >> 16) - 1];
	int rc = sim_copy_shard_row(s, k, rec);
	if (rc)
		return rc;
	if (--k->flows_left == 0)
		return sim_copy_land(s, k);
	return 0;
}

int sim_copy_flow_start(sim_ctx_t *s, kcopy_t *c, uint32_t g, const uint32_t *links, int len,
			uint64_t bytes, const copy_costs_t *cc)
{
	net_flow_spec_t fs = {
		.bytes = bytes,
		.path = links,
		.path_len = (uint32_t)len,
		.cls = c->cls,
		.rate_cap = cc->rate_cap,
		.n_copies = 1,
		.copy_overhead_ns = cc->overhead_ns,
		.src = (uint32_t)place_code(c->src, s->nodes), /* caller tags only */
		.dst = (uint32_t)place_code(c->dst, s->nodes),
		.tag = (c->id << 16) | g,
		.done = flow_done,
		.ctx = s,
	};
	return net_flow_start(s->net, &fs, &c->flow_ids[g], s->err);
}

static int flows_start(sim_ctx_t *s, kcopy_t *c, const copy_costs_t *cc, uint32_t *links, int len)
{
	int kind;
	for (uint32_t g = 0; g < s->tp; g++) {
		if (g && (len = sim_shard_path(s, c->src, c->dst, g, links, &kind)) < 0)
			return len;
		int rc = sim_copy_flow_start(s, c, g, links, len, c->shard_bytes, cc);
		if (rc)
			return rc;
	}
	return 0;
}

/* The flows still running stop where they are: their rows keep the bytes
 * they delivered. */
static int flows_cancel(sim_ctx_t *s, kcopy_t *k)
{
	int64_t now = ev_engine_now(s->eng);
	for (uint32_t g = 0; g < k->n_flows; g++) {
		uint64_t delivered;
		if (net_flow_cancel(s->net, k->flow_ids[g], &delivered, NULL) == 0) {
			net_flow_rec_t rec = {.id = k->flow_ids[g], .end_ns = now,
					      .delivered = delivered, .cancelled = 1, .tag = g};
			rec.start_ns = k->started;
			int rc = sim_copy_shard_row(s, k, &rec);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* At the path's fair share now (net_path_estimate), capped by the transfer
 * engine's efficiency and by the copy's own shards sharing a drive or the
 * pool. */
static int64_t flows_estimate(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			      const copy_costs_t *cc, uint32_t n, int cls)
{
	/* net_path_estimate answers a finish time, at the fair share */
	uint64_t bytes = sim_shard_copy_bytes(s, n);
	int64_t t = net_path_estimate(s->net, links, len, cls, bytes);
	if (t == INT64_MAX || t < 0)
		return INT64_MAX / 4;
	t -= ev_engine_now(s->eng);
	if (cc->rate_cap > 0) { /* the engine's efficiency caps the rate too */
		int64_t capped = (int64_t)ceil((double)bytes / cc->rate_cap * 1e9);
		t = capped > t ? capped : t;
	}
	/* a drive or the pool shared by the copy's own shards (the fair share
	 * above is one shard's) */
	if (kind >= PATH_NVME_READ && cc->alone_ns - cc->overhead_ns > t)
		t = cc->alone_ns - cc->overhead_ns;
	return t + cc->overhead_ns;
}

const sim_copy_mode_ops_t sim_copy_flows = {.name = "flows", .takes = flows_takes,
					    .start = flows_start, .cancel = flows_cancel,
					    .estimate = flows_estimate};

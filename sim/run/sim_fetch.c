/* sim_fetch — fetch or recompute, for a request just routed: the longest
 * prefix held by a peer or in the node's host and lower tiers, fetched
 * when the rule (kvcache.fetch, host_fetch) says so. */
#include "sim/run/sim_copies.h"

#include <inttypes.h>

#include "sim/run/sim_holders.h"
#include "sim/run/sim_tiers.h"

/* The peer with the longest match of r's prefix beyond ml (dst's own),
 * among cand[0..nc) (ascending), or among every instance when cand is NULL;
 * on a tie, a source on dst's node (NVLink). *from stays as it was when
 * none beats ml. Instances outside the holders of r's first block match
 * nothing, so both give the same answer (checked in KVSIM_CHECK builds). */
static int peer_best(const sim_ctx_t *s, const sim_req_t *r, uint32_t dst, uint32_t ml,
		     const uint32_t *cand, uint32_t nc, uint32_t *best, place_t *from)
{
	uint32_t dnode = sim_inst_node(s, dst), n = cand ? nc : s->cl.p.n_instances;
	int found = 0;
	*best = ml;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = cand ? cand[j] : j;
		/* a decode instance's prefix cache serves its own handoffs, not
		 * peer fetches (it is outside the holders index: sim_copy_holders_note) */
		if (i == dst || s->cl.inst[i].role == CL_ROLE_DECODE)
			continue;
		uint32_t m = kv_match(s->cl.inst[i].kv, r->blocks, r->n_blocks);
		if (m > *best || (found && m == *best && m > ml &&
				  sim_inst_node(s, i) == dnode &&
				  sim_node_of(s, *from) != dnode)) {
			*best = m;
			*from = place_inst(i);
			found = 1;
		}
	}
	return found;
}

int sim_fetch_decide(sim_ctx_t *s, sim_req_t *r, uint32_t dst)
{
	uint32_t dnode = sim_inst_node(s, dst);
	/* the host tier counts only where the node has one: with the defaults
	 * (no peer pull, no host tier) an arrival costs nothing here */
	int peers = s->cp->fetch_rule != SIM_FETCH_NEVER,
	    host = s->cp->host_fetch_rule != SIM_FETCH_NEVER && (s->host[dnode] || sim_tiers_any(s, dnode));
	if ((!peers && !host) || s->cl.p.busy_rule != BUSY_WAIT || !r->n_blocks)
		return 0;
	uint32_t ml = kv_match(s->cl.inst[dst].kv, r->blocks, r->n_blocks);
	uint32_t best = ml;
	place_t from = place_inst(0);
	int found = 0;
	if (peers) {
		uint32_t nc;
		const uint32_t *c = sim_holders_of(s->holders, r->blocks[0], &nc);
		found = peer_best(s, r, dst, ml, c, nc, &best, &from);
#ifdef KVSIM_CHECK
		uint32_t b2;
		place_t f2 = place_inst(0);
		int found2 = peer_best(s, r, dst, ml, NULL, 0, &b2, &f2);
		if (found2 != found || b2 != best || (found && !place_eq(f2, from)))
			return err_set(s->err, KS_ERUNTIME,
				       "holders index: request %" PRIu64 " best peer %d (%u blocks), a "
				       "full scan says %d (%u blocks)",
				       r->id, found ? (int)from.index : -1, best,
				       found2 ? (int)f2.index : -1, b2);
#endif
	}
	if (host && s->host[dnode]) {
		uint32_t m = kv_match(s->host[dnode], r->blocks, r->n_blocks);
		if (m > best) {
			best = m;
			from = place_host(dnode);
			found = 1;
		}
	}
	if (host && sim_tiers_best(s, r, dnode, &best, &from))
		found = 1;
	if (!found)
		return 0;
	uint32_t k = best - ml, B = s->cl.p.block_tokens;
	if ((place_is_inst(from) ? s->cp->fetch_rule : s->cp->host_fetch_rule) == SIM_FETCH_COST) {
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
		r->fetch_src = place_is_inst(from) ? 1 : 2;
		return sim_tiers_fetched(s, r, from, k);
	}
	return 0;
}

/* sim_core — builds a run from a config (cluster, network, policies) and
 * streams requests through it (sim_run_source). Random streams derive from
 * the master seed by component so adding one never perturbs another. The
 * order in which the policy families are consulted is the one policies/pol.h
 * documents. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/cli_voice.h"
#include "sim/base/mem.h"
#include "sim/run/bound.h"
#include "sim/run/metrics.h"
#include "sim/base/vec.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_decisions.h"
#include "sim/run/sim_disagg.h"
#include "sim/run/sim_int.h"
#include "sim/run/sim_join.h"
#include "sim/run/sim_rview.h"
#include "sim/cluster/mdl_sim.h"


/* ---- the policies' view of the cluster ----------------------------------- */

static int64_t v_now(void *ctx)
{
	return ev_engine_now(((sim_ctx_t *)ctx)->eng);
}

/* Queued prompt tokens of inst at its prefill rate. The cost model is a
 * pure function of the token count, so the last answer per instance is kept
 * and reused while the count is unchanged: a router reading every instance
 * then pays the roofline only where the queue changed since its last read. */
static int64_t queue_delay_ns(sim_ctx_t *s, uint32_t i, uint64_t tokens)
{
	if (!tokens)
		return 0;
	qdelay_t *q = &s->qdelay[i];
	if (q->tokens != tokens) {
		q->tokens = tokens;
		q->ns = mdl_prefill_time_ns(&s->comp, (uint32_t)(tokens < UINT32_MAX ? tokens
										       : UINT32_MAX),
					    0);
	}
	return q->ns;
}

/* O(1): every field is a counter the cluster and the store keep on change. */
static void v_inst(void *ctx, uint32_t i, pol_inst_t *o)
{
	sim_ctx_t *s = ctx;
	cluster_sync(&s->cl, i); /* decode_tokens as step mode has it now */
	const sim_inst_t *in = &s->cl.inst[i];
	memset(o, 0, sizeof *o);
	o->node = sim_inst_node(s, i);
	o->waiting = in->n_wait;
	o->running = in->n_run;
	o->prefill_tokens = in->prefill_tokens_queued;
	o->decode_tokens = in->decode_tokens;
	o->kv_cap_blocks = kv_capacity(in->kv);
	o->kv_used_blocks = kv_used(in->kv);
	o->kv_spec_blocks = kv_spec_blocks(in->kv);
	o->queue_delay_ns = queue_delay_ns(s, i, in->prefill_tokens_queued);
}

static uint32_t v_match(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return kv_match(((sim_ctx_t *)ctx)->cl.inst[i].kv, b, n);
}

/* What a view counts as held: KV that exists (the policies' view), KV that
 * exists or is arriving by a copy (the routers' computed view), or the
 * routers' own tree (routed). */
enum { HELD_READY, HELD_VISIBLE, HELD_ROUTED };

static int held(const sim_ctx_t *s, int mode, uint32_t i, uint64_t id)
{
	const kv_store_t *kv = s->cl.inst[i].kv;
	switch (mode) {
	case HELD_READY:
		return kv_lookup(kv, id) == KV_READY;
	case HELD_VISIBLE:
		return kv_visible(kv, id);
	default:
		return pol_rview_has(s->rview, i, id);
	}
}

/* Leading blocks each held on instance i or in its node's host tier (the
 * host tier as the policies' view counts it, or as visible to routers). */
static uint32_t match_host(const sim_ctx_t *s, int mode, uint32_t i, const uint64_t *b, uint32_t n)
{
	const kv_store_t *h = s->host ? s->host[sim_inst_node(s, i)] : NULL;
	uint32_t k = 0;
	while (k < n && (held(s, mode, i, b[k]) ||
			 (h && (mode == HELD_READY ? kv_lookup(h, b[k]) == KV_READY
						   : kv_visible(h, b[k])))))
		k++;
	return k;
}

static uint32_t v_match_computing(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	const kv_store_t *kv = ((sim_ctx_t *)ctx)->cl.inst[i].kv;
	uint32_t k = 0;
	for (int st; k < n && ((st = kv_lookup(kv, b[k])) == KV_READY || st == KV_COMPUTING);)
		k++;
	return k;
}

static uint32_t v_match_host(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_READY, i, b, n);
}

/* The routers' computed view shows KV that exists or is on its way: READY,
 * or INFLIGHT for a copy whose flows run. A deferred copy's blocks are
 * reserved INFLIGHT at its target while its source still computes them;
 * they are shown only once the copy starts, as a COMPUTING block is only
 * once its prefill ends (else a router piles requests on a target that
 * will hold the prefix seconds later than the source). */
static uint32_t rv_match_computed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	const sim_ctx_t *s = ctx;
	const kv_store_t *kv = s->cl.inst[i].kv;
	if (!s->n_deferred)
		return kv_match_visible(kv, b, n);
	uint32_t k = 0;
	for (const kv_block_info_t *x; k < n; k++)
		if (!(x = kv_info(kv, b[k])) || x->state == KV_COMPUTING ||
		    sim_copy_block_deferred(s, x))
			break;
	return k;
}

static uint32_t rv_match_host_computed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_VISIBLE, i, b, n);
}

/* The instances that may hold blocks[0] (the holders index): what both the
 * policies' view and the routers' computed view can match at all. In
 * KVSIM_CHECK builds every other instance is asked, and must match
 * nothing (the index must agree with kv_match on every instance). */
static const uint32_t *v_candidates(void *ctx, const uint64_t *b, uint32_t n, uint32_t *count)
{
	sim_ctx_t *s = ctx;
	const uint32_t *c = sim_holders_of(s->holders, b[0], count);
#ifdef KVSIM_CHECK
	for (uint32_t i = 0, j = 0; i < s->cl.p.n_instances; i++) {
		if (j < *count && c[j] == i) {
			j++;
			continue;
		}
		/* decode instances are outside the index (sim_copy.c holders_note) */
		if (s->cl.inst[i].role != CL_ROLE_DECODE &&
		    kv_match_visible(s->cl.inst[i].kv, b, n) && !s->hook_err)
			s->hook_err = err_set(s->err, KS_ERUNTIME,
					      "holders index: instance %u holds block %" PRIu64
					      " but is not among its holders",
					      i, b[0]);
	}
#else
	(void)n;
#endif
	return c;
}

/* The least-loaded instances from the load index (sim_load.h). In
 * KVSIM_CHECK builds the index is compared with every instance's
 * cluster_load at each query. */
static const uint32_t *v_least_loaded(void *ctx, uint32_t *count, uint64_t *min_load,
				      uint64_t *max_load)
{
	sim_ctx_t *s = ctx;
	const uint32_t *c = sim_load_least(s->load, count, min_load, max_load);
#ifdef KVSIM_CHECK
	int bad = sim_load_check(s->load);
	for (uint32_t i = 0; !bad && i < s->cl.p.n_instances; i++)
		if (sim_load_of(s->load, i) != cluster_load(&s->cl, i))
			bad = 10;
	if (bad && !s->hook_err)
		s->hook_err = err_set(s->err, KS_ERUNTIME,
				      "load index: inconsistent with the instances (check %d)", bad);
#endif
	return c;
}

static uint64_t v_held(void *ctx, uint32_t i)
{
	return kv_used(((sim_ctx_t *)ctx)->cl.inst[i].kv);
}

static uint64_t rv_held_routed(void *ctx, uint32_t i)
{
	return pol_rview_size(((sim_ctx_t *)ctx)->rview, i);
}

static uint32_t rv_match_routed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return pol_rview_match(((sim_ctx_t *)ctx)->rview, i, b, n);
}

static uint32_t rv_match_host_routed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_ROUTED, i, b, n);
}

/* The same model on every instance, fixed for the run: a pure function of
 * (n, cached), asked for the same pairs on every instance a request matches
 * alike (pol_view_ttft_ns asks each instance for its own prefix and for the
 * best one), so the last two answers are kept. */
static int64_t v_prefill(void *ctx, uint32_t i, uint64_t n, uint64_t cached)
{
	(void)i;
	sim_ctx_t *s = ctx;
	for (unsigned k = 0; k < 2; k++)
		if (s->prefill_memo[k].valid && s->prefill_memo[k].n == n &&
		    s->prefill_memo[k].cached == cached)
			return s->prefill_memo[k].ns;
	unsigned k = s->prefill_next++ & 1;
	s->prefill_memo[k].ns = mdl_prefill_time_ns(&s->comp, (uint32_t)n, (uint32_t)cached);
	s->prefill_memo[k].n = n;
	s->prefill_memo[k].cached = cached;
	s->prefill_memo[k].valid = 1;
	return s->prefill_memo[k].ns;
}

static int64_t v_xfer(void *ctx, uint32_t src, uint32_t dst, uint32_t n)
{
	return sim_copy_estimate(ctx, (int32_t)src, dst, n, NET_BG);
}

static int a_copy(void *ctx, const uint64_t *b, uint32_t n, uint32_t src, uint32_t dst,
		  pol_class_t cls, uint64_t *id)
{
	sim_ctx_t *s = ctx;
	/* the decode pool takes speculative pre-placement only (pol.h n_decode) */
	uint32_t n_dst = s->view.n_inst + (cls == POL_BG ? s->view.n_decode : 0);
	if (src >= s->view.n_inst || dst >= n_dst)
		return POL_COPY_REFUSED;
	/* background copies are speculative replicas; foreground ones are
	 * fetches a policy makes for a request (kept, not speculative) */
	int rc = sim_copy_start(s, (int32_t)src, dst, b, n, cls == POL_BG ? NET_BG : NET_FG,
				cls == POL_BG, 1, NULL, id);
	if (rc >= 0 && s->dec &&
	    sim_dec_copy(s->dec, b, n, src, dst, cls == POL_BG, rc, rc == POL_COPY_OK ? *id : 0,
			 ev_engine_now(s->eng)))
		return err_set(s->err, KS_ENOMEM, "out of memory");
	return rc;
}

static int a_cancel(void *ctx, uint64_t id)
{
	return sim_copy_cancel(ctx, id);
}

static int a_mark_spec(void *ctx, uint32_t inst, const uint64_t *b, uint32_t n)
{
	(void)ctx;
	(void)inst;
	(void)b;
	(void)n;
	return 0; /* every background copy already lands as a speculative replica */
}

static int a_announce(void *ctx, uint32_t inst, const uint64_t *b, uint32_t n)
{
	sim_ctx_t *s = ctx;
	if (inst >= s->view.n_inst)
		return 0; /* routers see the prefill pool only */
	int rc = s->rview ? pol_rview_insert(s->rview, inst, b, n) : 0;
	return rc ? rc : s->rvw ? sim_rv_announce(s->rvw, inst, b, n) : 0;
}

/* ---- arrivals, with read-ahead for predictors that peek ------------------ */

/* The read-ahead ring is indexed by read sequence number (seq % cap), so
 * scheduled events that carry a seq stay valid when the ring grows. */
static pend_t *pend_at(sim_ctx_t *s, uint64_t seq)
{
	return &s->pend[seq % s->pend_cap];
}

static int pend_push(sim_ctx_t *s, const sim_arrival_t *a, uint64_t *seq)
{
	if (s->pend_n == s->pend_cap) {
		uint32_t cap = s->pend_cap ? 2 * s->pend_cap : 16;
		pend_t *n = calloc(cap, sizeof *n);
		if (!n)
			return KS_ENOMEM;
		for (uint32_t i = 0; i < s->pend_cap; i++) {
			/* entries hold seqs [head_seq, head_seq + n): every slot is live */
			uint64_t q = s->pend_head_seq + i;
			n[q % cap] = s->pend[q % s->pend_cap];
		}
		free(s->pend);
		s->pend = n;
		s->pend_cap = cap;
	}
	uint64_t q = s->pend_head_seq + s->pend_n;
	pend_t *p = pend_at(s, q);
	uint32_t n_ids = a->n_blocks + a->n_out_blocks;
	if (n_ids > p->cap) {
		uint64_t *b = realloc(p->blocks, n_ids * sizeof *b);
		if (!b)
			return KS_ENOMEM;
		p->blocks = b;
		p->cap = n_ids;
	}
	p->a = *a;
	if (n_ids)
		memcpy(p->blocks, a->blocks, n_ids * sizeof *p->blocks);
	p->a.blocks = p->blocks;
	s->pend_n++;
	*seq = q;
	return 0;
}

/* Reads one request into the read-ahead ring and schedules its arrival (and
 * its peek, when the predictor reads ahead). */
static int read_one(sim_ctx_t *s)
{
	if (s->src_done)
		return 0;
	sim_arrival_t a = {0}; /* sources that know no output ids leave n_out_blocks 0 */
	int64_t now = ev_engine_now(s->eng);
	if (s->fb)
		s->fb->at(s->fb->ctx, now);
	s->src_wait = 0;
	int rc = s->src->next(s->src->ctx, &a, s->err);
	if (rc < 0)
		return rc;
	if (rc == SIM_SRC_WAIT && !s->fb)
		return err_set(s->err, KS_ERUNTIME,
			       "%s: the source waits for results but the run has no feedback for it",
			       s->src->name);
	if (rc == SIM_SRC_WAIT) { /* a closed loop waits for results, or for a time */
		s->src_wait = 1;
		s->src_gen++;
		if (a.arrival_ns != INT64_MAX &&
		    ev_engine_at(s->eng, a.arrival_ns > now ? a.arrival_ns : now, s->ev.src_retry, 0,
				 s->src_gen) == EV_NONE)
			return KS_ENOMEM;
		return 0;
	}
	if (rc == 0) {
		s->src_done = 1;
		return 0;
	}
	if (a.arrival_ns < s->last_arrival)
		return err_set(s->err, KS_EINPUT, "%s: request %" PRIu64 ": arrival goes back in time",
			       s->src->name, a.id);
	s->last_arrival = a.arrival_ns;
	uint64_t seq;
	if ((rc = pend_push(s, &a, &seq)))
		return rc;
	if (ev_engine_at(s->eng, a.arrival_ns, s->ev.arrival, 0, seq) == EV_NONE)
		return KS_ENOMEM;
	if (s->peek_ahead > 0) {
		int64_t t = a.arrival_ns - s->peek_ahead;
		if (ev_engine_at(s->eng, t > now ? t : now, s->ev.peek, 0, seq) == EV_NONE)
			return KS_ENOMEM;
	}
	return 0;
}

/* The retry a closed-loop source asked for; an older one (a result came
 * first and the source was asked again) is stale. */
static int on_src_retry(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	return s->src_wait && ev->payload == s->src_gen ? read_one(s) : 0;
}

static int on_peek(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	const pend_t *p = pend_at(s, ev->payload);
	pol_arrival_t pa = {p->a.arrival_ns, p->blocks, p->a.n_blocks, -1};
	const struct pol_predictor_ops *po = POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
	err_clear(s->err);
	int rc = pol_hook_rc(s->pol.h[POL_PREDICTOR].ops, "peek",
			     po->peek(s->pol.h[POL_PREDICTOR].state, &pa, s->err), 0, s->err);
	return rc ? rc : read_one(s);
}

static int route_request(sim_ctx_t *s, const pol_req_t *q, uint32_t *inst)
{
	const struct pol_replication_ops *ro =
		POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
	/* a hint replaces the routing policy only: admission still decides */
	int hinted = 0, rc;
	if (ro->route_hint) {
		err_clear(s->err);
		rc = pol_hook_rc(s->pol.h[POL_REPLICATION].ops, "route_hint",
				 ro->route_hint(s->pol.h[POL_REPLICATION].state, &s->view, q, inst), 1,
				 s->err);
		if (rc < 0)
			return rc;
		hinted = rc == 1 && *inst < s->view.n_inst;
	}
	if (s->rvw && (rc = sim_rv_pick(s->rvw)))
		return rc;
	if (!hinted) {
		const struct pol_routing_ops *rt =
			POL_SET_OPS(&s->pol, POL_ROUTING, pol_routing_ops);
		err_clear(s->err);
		rc = pol_hook_rc(s->pol.h[POL_ROUTING].ops, "route",
				 rt->route(s->pol.h[POL_ROUTING].state, &s->route_view, q, inst),
				 POL_REJECT, s->err);
		if (rc < 0)
			return rc;
		if (rc == POL_ACCEPT && *inst >= s->view.n_inst)
			return err_set(s->err, KS_ERUNTIME, "routing policy returned instance %u of %u",
				       *inst, s->view.n_inst);
		if (rc != POL_ACCEPT)
			return rc;
		if (s->rvw && (rc = sim_rv_decided(s->rvw, q, *inst)))
			return rc;
	}
	/* the trace reads the view as the router just did */
	if (s->dec && sim_dec_route(s->dec, &s->route_view, q, *inst, hinted, q->arrival_ns))
		return err_set(s->err, KS_ENOMEM, "out of memory");
	const struct pol_admission_ops *ad = POL_SET_OPS(&s->pol, POL_ADMISSION, pol_admission_ops);
	err_clear(s->err);
	rc = pol_hook_rc(s->pol.h[POL_ADMISSION].ops, "admit",
			 ad->admit(s->pol.h[POL_ADMISSION].state, &s->view, q, *inst), POL_REJECT,
			 s->err);
	if (rc >= 0 && s->dec && sim_dec_admit(s->dec, ad, &s->view, q, *inst, rc, q->arrival_ns))
		return err_set(s->err, KS_ENOMEM, "out of memory");
	if (hinted && rc == POL_ACCEPT)
		s->spec.hint_routed++; /* so copy gains and hint gains can be told apart */
	return rc;
}

/* Bounded memory: an arrival routed to an instance whose waiting queue is
 * full is rejected (status overload) and never reaches it, as a server
 * answers 429/503 when its queue is full; the first one is said once. */
static int overload_reject(sim_ctx_t *s, const sim_arrival_t *a, uint32_t inst, int64_t now)
{
	if (!s->warned_overload) {
		s->warned_overload = 1;
		cli_warn("t=%.3f s: instance %u has %u requests waiting "
			 "([experiment] max_pending): arrivals routed to a full queue are rejected as "
			 "overload (rejected_overload counts them)",
			 (double)now / 1e9, inst, s->max_pending);
	}
	return cluster_record_unrouted(&s->cl, a->id, now, a->in_len, a->out_len,
				       REQ_REJECTED_OVERLOAD);
}

/* Tells the predictor (ABI 4 tables with on_request, and only when a
 * replication policy reads its forecasts, as on_arrival feeds it) that a
 * request was routed, left its queue or ended (pol.h "request life"); its
 * failure stops the run. */
static int pred_request(sim_ctx_t *s, pol_req_event_t *ev)
{
	const struct pol_predictor_ops *po = POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
	if (!po || s->horizon_ns <= 0 || po->base.version < 4 || !po->on_request)
		return 0;
	ev->t_ns = ev_engine_now(s->eng);
	return po->on_request(s->pol.h[POL_PREDICTOR].state, ev, s->err);
}

static int on_arrival(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	sim_ctx_t *s = ctx;
	int64_t now = ev_engine_now(eng);
	pend_t *p = pend_at(s, ev->payload);
	const sim_arrival_t *a = &p->a;
	int rc = 0;
	int32_t routed = -1;
	if (a->status != 0) {
		rc = cluster_record_unrouted(&s->cl, a->id, now, a->in_len, a->out_len,
					     REQ_FAILED_IN_TRACE);
	} else if (!cluster_fits(&s->cl, a->in_len, a->out_len)) {
		rc = cluster_record_unrouted(&s->cl, a->id, now, a->in_len, a->out_len,
					     REQ_REJECTED_TOO_LONG);
	} else {
		uint32_t nb = a->n_blocks < a->in_len / s->cl.p.block_tokens
				      ? a->n_blocks
				      : a->in_len / s->cl.p.block_tokens;
		pol_req_t q = {a->id, now, p->blocks, nb, a->in_len, a->out_len, s->cl.p.ttft_slo_ns};
		uint32_t inst = 0;
		rc = route_request(s, &q, &inst);
		if (rc == POL_REJECT) {
			if (s->dec) /* by admission, when the router had chosen */
				sim_dec_outcome(s->dec, a->id, DEC_OUT_REJECTED_ADMISSION);
			rc = cluster_record_unrouted(&s->cl, a->id, now, a->in_len, a->out_len,
						     REQ_REJECTED_SLO);
		} else if (rc == POL_ACCEPT && s->max_pending &&
			   s->cl.inst[inst].n_wait >= s->max_pending) {
			if (s->dec)
				sim_dec_outcome(s->dec, a->id, DEC_OUT_REJECTED_OVERLOAD);
			rc = overload_reject(s, a, inst, now);
		} else if (rc == POL_ACCEPT) {
			sim_req_t *r;
			routed = (int32_t)inst;
			/* the routers' tree learns what they sent where at once */
			rc = s->rview ? pol_rview_insert(s->rview, inst, q.blocks, q.n_blocks) : 0;
			if (!rc && s->rvw) /* and the replica that decided, its own load */
				rc = sim_rv_dispatch(s->rvw, &q, inst);
			/* inst will hold the request's first block (prompt, or output
			 * when the prompt has no full block): the holders index knows
			 * it before any block exists there */
			uint32_t n_ids = nb + (nb == a->n_blocks ? a->n_out_blocks : 0);
			if (!rc && s->holders && n_ids)
				rc = sim_holders_add(s->holders, p->blocks[0], inst);
			if (!rc)
				rc = cluster_enqueue(&s->cl, inst, a->id, a->in_len, a->out_len,
						     p->blocks, nb, &r);
			if (!rc && s->bound)
				rc = bound_record(s->bound, inst, a->id, now, p->blocks, nb,
						  nb == a->n_blocks ? a->n_out_blocks : 0);
			if (!rc && s->view.least_loaded) /* its row gives the load back */
				rc = sim_load_inc(s->load, inst);
			if (!rc && nb == a->n_blocks && a->n_out_blocks)
				rc = cluster_req_output_ids(&s->cl, r, p->blocks + nb,
							    a->n_out_blocks);
			if (!rc)
				rc = sim_fetch_decide(s, r, inst);
			const struct pol_replication_ops *ro =
				POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
			if (!rc && ro->on_route) {
				err_clear(s->err);
				rc = pol_hook_rc(s->pol.h[POL_REPLICATION].ops, "on_route",
						 ro->on_route(s->pol.h[POL_REPLICATION].state, &s->view,
							      &s->act, &q, inst, s->err),
						 0, s->err);
			}
			if (!rc)
				rc = cluster_kick(&s->cl, inst);
		}
	}
	if (rc)
		return rc;
	if (s->fc && (rc = fcast_arrival(s->fc, now, p->blocks, a->n_blocks, routed)))
		return rc;
	/* a predictor no replication policy reads (horizon 0: no forecast is
	 * ever asked, pol.h) is not fed: nothing it learns reaches the run */
	if (s->pol.h[POL_PREDICTOR].ops && s->horizon_ns > 0) {
		pol_arrival_t pa = {now, p->blocks, a->n_blocks, routed};
		const struct pol_predictor_ops *po =
			POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
		err_clear(s->err);
		if ((rc = pol_hook_rc(s->pol.h[POL_PREDICTOR].ops, "observe",
				      po->observe(s->pol.h[POL_PREDICTOR].state, &pa, s->err), 0,
				      s->err)))
			return rc;
		pol_req_event_t re = {.phase = POL_REQ_ROUTED, .id = a->id, .inst = routed,
				      .blocks = p->blocks, .n_blocks = a->n_blocks,
				      .n_out_blocks = a->n_out_blocks,
				      .session_id = a->session_id};
		if (routed >= 0 && (rc = pred_request(s, &re)))
			return rc;
	}
	/* the ring is FIFO and arrivals come in its order */
	s->pend_head_seq++;
	s->pend_n--;
	return s->peek_ahead > 0 ? 0 : read_one(s);
}

/* An iteration asked for at an instance by code that could not start it in
 * place (sim_copy.c kick_later). */
static int on_kick(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	return s->hook_err ? s->hook_err : cluster_kick(&s->cl, ev->target);
}

/* Whether anything is still to happen (periodic events stop then). */
static int run_active(const sim_ctx_t *s)
{
	return !s->src_done || s->pend_n || s->cl.n_live || s->live_events > 0;
}

/* Says once per run, at its end, how many forecast prefixes the replication
 * policy's VRAM budget could never hold (spec.prefix_over_budget) and the
 * budget's refusals, with the first such prefix as an example. */
static void warn_over_budget(sim_ctx_t *s)
{
	const pol_spec_stats_t *st = &s->spec;
	if (!st->prefix_over_budget || s->warned_over_budget)
		return;
	s->warned_over_budget = 1;
	cli_warn("[policy.replication] %s: %" PRIu64 " forecast prefixes never fit "
		"the speculative VRAM budget (the first needs %u blocks, the budget is %u blocks per "
		"instance), so they were never replicated whole; %" PRIu64 " copies refused by it "
		"(spec.prefix_over_budget, spec.refused_vram)",
		st->over_budget_key ? st->over_budget_key : "budget", st->prefix_over_budget,
		st->over_budget_blocks, st->over_budget_cap, st->refused_vram);
}

static int on_tick(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	sim_ctx_t *s = ctx;
	const struct pol_replication_ops *ro =
		POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
	pol_forecast_t fc = {0};
	const pol_forecast_t *fcp = NULL;
	int rc;
	if (s->horizon_ns > 0) {
		const struct pol_predictor_ops *po =
			POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
		err_clear(s->err);
		if ((rc = pol_hook_rc(s->pol.h[POL_PREDICTOR].ops, "forecast",
				      po->forecast(s->pol.h[POL_PREDICTOR].state, ev_engine_now(eng),
						   s->horizon_ns, &fc, s->err),
				      0, s->err)))
			return rc;
		fcp = &fc;
		if (s->fc && (rc = fcast_tick(s->fc, ev_engine_now(eng), &fc)))
			return rc;
	}
	if (ro->on_tick) {
		err_clear(s->err);
		if ((rc = pol_hook_rc(s->pol.h[POL_REPLICATION].ops, "on_tick",
				      ro->on_tick(s->pol.h[POL_REPLICATION].state, &s->view, &s->act,
						  fcp, s->err),
				      0, s->err)))
			return rc;
	}
	if (run_active(s) && ev_engine_after(eng, s->tick_ns, s->ev.tick, 0, 0) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

/* An instance's four sampled values, as both timeline rules sample them. */
static void inst_values(const sim_ctx_t *s, uint32_t i, double v[4])
{
	const sim_inst_t *in = &s->cl.inst[i];
	double bb = (double)s->cl.p.block_bytes;
	v[0] = in->n_wait;
	v[1] = in->n_run;
	v[2] = kv_used(in->kv) * bb;
	v[3] = kv_spec_blocks(in->kv) * bb;
}

/* output.timeline = every: a row per instance, and per link with a nonzero
 * rate, at every tick (the reference rule). */
static int sample_every(sim_ctx_t *s, int64_t now)
{
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++) {
		double v[4];
		inst_values(s, i, v);
		res_sample_t x = {now, TL_INSTANCE, (int32_t)i, v[0], v[1], v[2], v[3], 0, 0};
		if (rec_sample(s->res, &x))
			return KS_ENOMEM;
	}
	size_t nl = net_link_count(s->net);
	for (uint32_t l = 0; l < nl; l++) {
		net_link_stats_t st;
		if (net_link_stats(s->net, l, &st) || (st.rate[0] <= 0 && st.rate[1] <= 0))
			continue;
		res_sample_t x = {now, TL_LINK, (int32_t)l, 0, 0, 0, 0,
				  st.rate[0] / st.capacity, st.rate[1] / st.capacity};
		if (rec_sample(s->res, &x))
			return KS_ENOMEM;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* cluster_params_t.on_admit */
static void on_admit(void *ctx, uint32_t inst, const sim_req_t *r)
{
	sim_ctx_t *s = ctx;
	pol_req_event_t ev = {.phase = POL_REQ_STARTED, .id = r->id, .inst = (int32_t)inst};
	int rc = pred_request(s, &ev);
	if (rc && !s->hook_err)
		s->hook_err = rc;
}

/* cluster_params_t.on_touch */
static void on_touch(void *ctx, uint32_t inst)
{
	sim_touch(ctx, (int32_t)inst);
}

/* cluster_params_t.on_too_long: the figure that made the iteration's cost
 * unrepresentable, named (mdl_cost_blame), stops the run as bad input. */
static int on_too_long(void *ctx, void *cost_ctx, uint32_t inst, const sim_batch_t *b,
		       int64_t now)
{
	sim_ctx_t *s = ctx;
	char why[160];
	double sec = mdl_sim_cost_blame(cost_ctx, b, (double)(INT64_MAX - now), why, sizeof why);
	return err_set(s->err, KS_EINPUT,
		       "%s makes an iteration of instance %u (%u prefill and %u decode sequences) "
		       "take %.3g s from t=%.3f s, past the largest simulated time (%.3g s): the "
		       "run cannot finish",
		       why, inst, b->n_pre, b->n_dec, sec, (double)now / 1e9,
		       (double)INT64_MAX / 1e9);
}

/* cluster_params_t.on_result: a routed request's row (completed, or
 * unfinished at the end) is its leaving the instance's load; every row goes
 * to the recorder. */
static int on_result(void *ctx, const res_request_t *row)
{
	sim_ctx_t *s = ctx;
	/* what is recorded and what a client hears: the front-end's time on
	 * top of the engine's (the policies see the engine's row) */
	res_request_t client = *row;
	if (client.ttft_ns >= 0)
		client.ttft_ns += s->frontend_ns;
	if (client.e2e_ns >= 0)
		client.e2e_ns += s->frontend_ns;
	if (row->instance >= 0 && s->view.least_loaded)
		sim_load_dec(s->load, (uint32_t)row->instance);
	if (row->instance >= 0 && s->rvw)
		sim_rv_result(s->rvw, row);
	pol_req_event_t ev = {.phase = POL_REQ_ENDED, .id = row->id, .inst = row->instance,
			      .completed = row->status == REQ_COMPLETED};
	int rc;
	if (row->instance >= 0 && (rc = pred_request(s, &ev)))
		return rc;
	if ((rc = rec_request(s->res, &client)) || !s->fb)
		return rc;
	/* a closed loop: the row frees its user, who may send again; the source
	 * is asked in an event of its own (this one may be mid-arrival) */
	int64_t now = ev_engine_now(s->eng);
	if ((rc = s->fb->done(s->fb->ctx, now, &client, s->err)))
		return rc;
	if (s->src_wait && !s->src_done &&
	    ev_engine_at(s->eng, now, s->ev.src_retry, 0, ++s->src_gen) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

/* output.timeline = changed: the rows of sample_every that differ from the
 * series' last row, so reading each series as a step function gives the
 * per-tick samples back (a link without a row is at 0). Instances are
 * visited only when touched since the last tick (sim_touch: the cluster's
 * enqueues and steps, copies starting, landing or cancelled there), links
 * only while they hold flows (net_links_active) or their last row is
 * nonzero (one zero row as they go idle); both in id order as before. */
static int sample_changed(sim_ctx_t *s, int64_t now)
{
#ifdef KVSIM_CHECK
	/* an untouched instance must still read as its last row */
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++) {
		double v[4];
		inst_values(s, i, v);
		if (!s->tl_dirty[i] && memcmp(v, s->tl_inst[i], sizeof v))
			return err_set(s->err, KS_ERUNTIME,
				       "timeline: instance %u changed at t=%" PRId64
				       " ns without being touched (sim_touch)",
				       i, now);
	}
#endif
	qsort(s->tl_dirty_list, s->n_tl_dirty, sizeof *s->tl_dirty_list, cmp_u32);
	for (uint32_t k = 0; k < s->n_tl_dirty; k++) {
		uint32_t i = s->tl_dirty_list[k];
		s->tl_dirty[i] = 0;
		double v[4];
		inst_values(s, i, v);
		double *last = s->tl_inst[i];
		if (v[0] == last[0] && v[1] == last[1] && v[2] == last[2] && v[3] == last[3])
			continue;
		memcpy(last, v, sizeof v);
		res_sample_t x = {now, TL_INSTANCE, (int32_t)i, v[0], v[1], v[2], v[3], 0, 0};
		if (rec_sample(s->res, &x))
			return KS_ENOMEM;
	}
	s->n_tl_dirty = 0;
	size_t na;
	const uint32_t *act = net_links_active(s->net, &na);
	uint32_t nc = 0;
	for (size_t k = 0; k < na; k++) {
		s->tl_mark[act[k]] = 1;
		s->tl_cand[nc++] = act[k];
	}
	for (uint32_t k = 0; k < s->n_tl_on; k++)
		if (!s->tl_mark[s->tl_on[k]])
			s->tl_cand[nc++] = s->tl_on[k];
	qsort(s->tl_cand, nc, sizeof *s->tl_cand, cmp_u32);
	s->n_tl_on = 0;
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t l = s->tl_cand[k];
		s->tl_mark[l] = 0;
		net_link_stats_t st;
		if (net_link_stats(s->net, l, &st))
			continue;
		/* as sample_every: a rate <= 0 is no use */
		double u[2] = {st.rate[0] > 0 || st.rate[1] > 0 ? st.rate[0] / st.capacity : 0,
			       st.rate[0] > 0 || st.rate[1] > 0 ? st.rate[1] / st.capacity : 0};
		if (u[0] != 0 || u[1] != 0)
			s->tl_on[s->n_tl_on++] = l;
		double *last = s->tl_link[l];
		if (u[0] == last[0] && u[1] == last[1])
			continue;
		last[0] = u[0];
		last[1] = u[1];
		res_sample_t x = {now, TL_LINK, (int32_t)l, 0, 0, 0, 0, u[0], u[1]};
		if (rec_sample(s->res, &x))
			return KS_ENOMEM;
	}
	return 0;
}

/* The state of sample_changed: no row yet for any instance (NaN differs
 * from every value) and every instance touched, every link's last use 0. */
static int tl_alloc(sim_ctx_t *s)
{
	uint32_t ni = s->cl.p.n_instances;
	size_t nl = net_link_count(s->net);
	s->tl_inst = malloc((ni ? ni : 1) * sizeof *s->tl_inst);
	s->tl_dirty = calloc(ni ? ni : 1, 1);
	s->tl_dirty_list = malloc((ni ? ni : 1) * sizeof *s->tl_dirty_list);
	s->tl_link = calloc(nl ? nl : 1, sizeof *s->tl_link);
	s->tl_on = malloc((nl ? nl : 1) * sizeof *s->tl_on);
	s->tl_cand = malloc((nl ? nl : 1) * sizeof *s->tl_cand);
	s->tl_mark = calloc(nl ? nl : 1, 1);
	if (!s->tl_inst || !s->tl_dirty || !s->tl_dirty_list || !s->tl_link || !s->tl_on ||
	    !s->tl_cand || !s->tl_mark)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < ni; i++) {
		for (int k = 0; k < 4; k++)
			s->tl_inst[i][k] = NAN;
		sim_touch(s, (int32_t)i);
	}
	return 0;
}

static int on_sample(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	sim_ctx_t *s = ctx;
	int64_t now = ev_engine_now(eng);
	int rc = s->tl_every ? sample_every(s, now) : sample_changed(s, now);
	if (rc)
		return rc;
	int64_t next = now + s->sample_ns;
	/* Idle (output.timeline = changed, nothing touched, no link in use):
	 * every tick before the next pending event would find nothing to
	 * record, so the sample jumps to the last tick before it (or before
	 * experiment.until_s), which schedules the next one as ever: rows, their
	 * order and the end time are unchanged, and a run whose simulated time
	 * stretches to years walks its events, not its 100 ms ticks. */
	if (!s->tl_every && !s->n_tl_on) {
		int64_t lim = ev_peek_time(ev_engine_queue(eng));
		if (s->prm.until_s > 0 && (int64_t)(s->prm.until_s * 1e9) < lim)
			lim = (int64_t)(s->prm.until_s * 1e9);
		if (lim != INT64_MAX && lim - now > s->sample_ns)
			next = now + (lim - 1 - now) / s->sample_ns * s->sample_ns;
	}
	if (run_active(s) && ev_engine_at(eng, next, s->ev.sample, 0, 0) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

/* Resident memory of this process in bytes (0 when unknown): the second
 * field of /proc/self/statm, in pages (proc(5)); peak RSS where there is
 * no /proc. */
static uint64_t rss_bytes(void)
{
	unsigned long long pages[2];
	FILE *f = fopen("/proc/self/statm", "r");
	int n = f ? fscanf(f, "%llu %llu", &pages[0], &pages[1]) : 0;
	if (f)
		fclose(f);
	if (n == 2)
		return pages[1] * (uint64_t)sysconf(_SC_PAGESIZE);
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)ru.ru_maxrss * 1024;
}

/* The peak resident memory since sim_rss_peak_reset (VmHWM, proc(5)), so a
 * check sees what was freed since, or the current one where the kernel
 * gives no peak. */
static uint64_t rss_peak_bytes(void)
{
	char line[128];
	unsigned long long kb = 0;
	int have = 0;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && !have && fgets(line, sizeof line, f))
		have = sscanf(line, "VmHWM: %llu kB", &kb) == 1;
	if (f)
		fclose(f);
	uint64_t now = rss_bytes();
	return have && kb * 1024 > now ? kb * 1024 : now;
}

int sim_rss_peak_reset(void)
{
	/* "5": the peak becomes the current resident size (proc(5), Linux 4.0) */
	FILE *f = fopen("/proc/self/clear_refs", "w");
	int ok = f && fputs("5", f) >= 0;
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* One read of status and statm costs ~20 microseconds; every 65,536 events
 * that is ~1e-4 of a run at ~200 K events/s. Each read is of the peak, so
 * what 65,536 events allocate and free between two reads still counts; a
 * run may pass the limit by what they allocate (a few MB) before it stops. */
#define RSS_EVERY 65536

/* After every event: the memory limit (from the first event on, then every
 * RSS_EVERY), and the invariant checker in KVSIM_CHECK builds. */
/* ---- the trace observer (sim_run_opts_t.trace) ------------------------------ */

static void trace_state(const sim_ctx_t *s, uint32_t i, sim_trace_state_t *v)
{
	const sim_inst_t *in = &s->cl.inst[i];
	double bb = (double)s->cl.p.block_bytes;
	uint32_t used = kv_used(in->kv), ev = kv_evictable(in->kv), sp = kv_spec_blocks(in->kv),
		 fl = kv_inflight_blocks(in->kv);
	/* speculative blocks are READY and unreferenced (kv_ref clears the mark),
	 * so among the evictable; the clamps only guard the partition */
	uint32_t spec = sp < ev ? sp : ev, rest = used - ev;
	uint32_t infl = fl < rest ? fl : rest;
	*v = (sim_trace_state_t){(rest - infl) * bb, (ev - spec) * bb, spec * bb, infl * bb,
				 in->n_wait, in->n_run};
}

/* The instances touched in the event just dispatched, sampled after it. */
static int trace_flush(sim_ctx_t *s)
{
	int64_t now = ev_engine_now(s->eng);
	for (uint32_t k = 0; k < s->n_tr_dirty; k++) {
		uint32_t i = s->tr_dirty_list[k];
		s->tr_dirty[i] = 0;
		sim_trace_state_t v;
		trace_state(s, i, &v);
		int rc = s->trace->state(s->trace->ctx, now, i, &v);
		if (rc && !s->trace_rc)
			s->trace_rc = rc;
	}
	s->n_tr_dirty = 0;
	return s->trace_rc;
}

/* cluster_params_t.on_busy (set only with an observer) */
static void trace_busy(void *ctx, const sim_inst_t *in, int64_t t0, int64_t t1, uint32_t n)
{
	sim_ctx_t *s = ctx;
	sim_trace_busy_t b = {in->id, t0, t1, n, n ? 0 : in->cur_job, 0, 0, 0, 0, 0, {0}};
	if (n) {
		b.n_prefill = in->batch.n_pre;
		b.n_decode = in->batch.n_dec;
		for (uint32_t k = 0; k < in->batch.n_pre; k++)
			b.prefill_tokens += in->batch.pre_new[k];
		for (uint32_t k = 0; k < in->batch.n_dec; k++)
			b.decode_ctx_tokens += in->batch.dec_ctx[k];
		for (uint32_t k = 0; k < in->n_run && b.n_ids < SIM_TRACE_IDS; k++)
			if (in->run[k]->in_batch)
				b.ids[b.n_ids++] = in->run[k]->id;
	}
	int rc = s->trace->busy(s->trace->ctx, &b);
	if (rc && !s->trace_rc)
		s->trace_rc = rc;
}

/* The observer's start: the layout, and every instance's state at t = 0. */
static int trace_begin(sim_ctx_t *s)
{
	uint32_t n = s->cl.p.n_instances;
	uint32_t *node = malloc((n ? n : 1) * sizeof *node);
	s->tr_dirty = calloc(n ? n : 1, 1);
	s->tr_dirty_list = malloc((n ? n : 1) * sizeof *s->tr_dirty_list);
	if (!node || !s->tr_dirty || !s->tr_dirty_list) {
		free(node);
		return KS_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		node[i] = sim_inst_node(s, i);
	int rc = s->trace->begin(s->trace->ctx, n, node);
	free(node);
	for (uint32_t i = 0; i < n && !rc; i++)
		sim_touch(s, (int32_t)i);
	return rc ? rc : trace_flush(s);
}

/* The observer's end: the last states, then each instance's totals. */
static int trace_end(sim_ctx_t *s)
{
	int rc = trace_flush(s);
	for (uint32_t i = 0; i < s->cl.p.n_instances && !rc; i++)
		rc = s->trace->end(s->trace->ctx, i, s->cl.inst[i].busy_ns, s->cl.inst[i].iterations);
	return rc;
}

static int after_event(void *ctx, ev_engine_t *eng)
{
	sim_ctx_t *s = ctx;
	if (s->trace && trace_flush(s))
		return s->trace_rc;
	if (s->events_seen++ % RSS_EVERY == 0 && s->rss_limit) {
		uint64_t rss = rss_peak_bytes();
		if (rss > s->rss_limit) {
			uint64_t waiting = 0;
			for (uint32_t i = 0; i < s->cl.p.n_instances; i++)
				waiting += s->cl.inst[i].n_wait;
			return err_set(s->err, KS_ERUNTIME,
				       "[experiment] max_rss_gb: resident memory %.3g GB passed the "
				       "limit of %.3g GB%s at t=%.3f s simulated (%" PRIu64
				       " requests so far, %" PRIu64 " waiting); nothing was written. "
				       "Raise max_rss_gb, lower max_pending, or shorten the trace",
				       (double)rss / 1e9, (double)s->rss_limit / 1e9,
				       s->rss_auto ? " (half of the memory available)" : "",
				       (double)ev_engine_now(eng) / 1e9, (uint64_t)s->cl.n_done + s->cl.n_live,
				       waiting);
		}
	}
#ifdef KVSIM_CHECK
	int bad = cluster_check(&s->cl);
	if (bad)
		return err_set(s->err, KS_ERUNTIME, "invariant %d violated at t=%" PRId64 " ns", bad,
			       ev_engine_now(eng));
#endif
	return 0;
}

/* [experiment] max_rss_gb in bytes; 0 asks for half of the memory this
 * process may use: physical memory, or a cgroup v2 memory.max below it (a
 * container's limit, cgroup-v2.rst "memory.max"). */
static uint64_t rss_limit_of(double gb, int *is_auto)
{
	*is_auto = !(gb > 0);
	if (!*is_auto)
		return (uint64_t)(gb * 1e9);
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
	unsigned long long cg;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r"); /* "max" when unlimited */
	if (f && fscanf(f, "%llu", &cg) == 1 && cg > 0 && (!mem || cg < mem))
		mem = cg;
	if (f)
		fclose(f);
	return mem / 2;
}

static void rss_limit_set(sim_ctx_t *s, double gb)
{
	s->rss_limit = rss_limit_of(gb, &s->rss_auto);
}

/* [experiment] max_rss_gb while the run is built: refuses a step whose
 * allocation (need bytes, estimated before it is made) would take resident
 * memory past the limit, and names what took it there once it has (need 0,
 * a milestone). The events' check cannot see setup: 8,192 instances' KV
 * stores are allocated before the first event. */
static int rss_room_at(uint64_t limit, int is_auto, err_t *e, const char *what, uint64_t need,
		       const char *fix)
{
	if (!limit)
		return 0;
	uint64_t peak = rss_peak_bytes(), rss = rss_bytes();
	const char *lim = is_auto ? " (half of the memory available)" : "";
	if (peak > limit)
		return err_set(e, KS_ERUNTIME,
			       "[experiment] max_rss_gb: resident memory %.3g GB passed the limit "
			       "of %.3g GB%s while %s; nothing was written. Raise max_rss_gb, or %s",
			       (double)peak / 1e9, (double)limit / 1e9, lim, what, fix);
	if (need > limit - rss)
		return err_set(e, KS_ERUNTIME,
			       "[experiment] max_rss_gb: %s needs %.3g GB on top of the %.3g GB "
			       "resident, %.3g GB in all, over the limit of %.3g GB%s; nothing was "
			       "allocated or written. Raise max_rss_gb, or %s",
			       what, (double)need / 1e9, (double)rss / 1e9,
			       (double)(rss + need) / 1e9, (double)limit / 1e9, lim, fix);
	return 0;
}

int sim_rss_room(sim_ctx_t *s, const char *what, uint64_t need, const char *fix)
{
	return rss_room_at(s->rss_limit, s->rss_auto, s->err, what, need, fix);
}

int sim_rss_check(double max_rss_gb, const char *what, const char *fix, err_t *e)
{
	int is_auto;
	uint64_t limit = rss_limit_of(max_rss_gb, &is_auto);
	return rss_room_at(limit, is_auto, e, what, 0, fix);
}

/* Bytes of the stores of gb GB each that sim_net_init and sim_tiers_init
 * make (the same block count as theirs). */
static uint64_t tier_bytes(double gb, uint64_t block_bytes, uint64_t stores)
{
	return gb > 0 ? stores * kv_store_bytes((uint32_t)(gb * 1e9 / (double)block_bytes)) : 0;
}

#define RSS_FIX_CLUSTER                                                                      \
	"lower cluster.nodes, cluster.gpus_per_node (more cluster.tp), cluster.kv_blocks or "  \
	"the host, NVMe and pool tiers (kvcache.host_kv_gb, nvme_kv_gb, pool_kv_gb)"

/* Splits VRAM into weights, reserve and KV pool; returns blocks per instance. */
static int kv_pool_blocks(const cfg_t *cfg, const sim_params_t *sp, const mdl_hw_t *hw,
			  const mdl_llm_t *llm, uint32_t tp, uint32_t B, uint32_t *out, err_t *e)
{
	if (!mdl_kv_paged_bytes_per_token_gpu(llm, tp))
		return cfg_err_keys(cfg, e, "model.name,model.file",
				    "%s has no attention layer whose KV is paged in blocks "
				    "(every layer a state layer): the cluster has nothing to cache",
				    llm->name);
	if (sp->kv_blocks > 0) {
		*out = sp->kv_blocks;
		return 0;
	}
	uint64_t tokens = mdl_kv_tokens_per_instance(hw, llm, tp, sp->reserve_fraction);
	if (tokens / B == 0)
		return cfg_err_keys(cfg, e,
				    "cluster.tp,model.name,model.file,gpu.name,gpu.file,"
				    "cluster.reserve_fraction",
				    "%s weights (%.1f GB per GPU at tp=%u) leave no room for KV "
				    "in %.1f GB of HBM (%s)",
				    llm->name, (double)mdl_weights_bytes_per_gpu(llm, tp) / 1e9, tp,
				    (double)hw->hbm_bytes / 1e9, hw->name);
	*out = (uint32_t)(tokens / B);
	return 0;
}

/* p->fixed_blocks_per_seq: the per-sequence KV (sliding windows, states)
 * in blocks of the paged size, ceil(fixed / block) per GPU. The whole window
 * is reserved from admission on, though a sequence shorter than the window
 * holds less: an upper bound of what vLLM's hybrid KV cache manager holds
 * ("sliding window layers: reserve slots only for the most recent
 * sliding_window_size tokens", docs.vllm.ai design/hybrid_kv_cache_manager),
 * own choice so that a running request's blocks grow only with its paged
 * context. A state is held whole from the first token (vLLM, SGLang). */
static int kv_fixed_blocks(const cfg_t *cfg, const mdl_llm_t *llm, uint32_t tp,
			   cluster_params_t *p, err_t *e)
{
	uint64_t fixed = mdl_kv_fixed_bytes_per_seq_gpu(llm, tp);
	uint64_t block = mdl_kv_paged_bytes_per_token_gpu(llm, tp) * p->block_tokens;
	uint64_t n = fixed ? (fixed + block - 1) / block : 0;
	if (n && p->sched_mode == SCHED_BTB)
		return cfg_err_keys(cfg, e, "scheduler.mode,model.name,model.file",
				    "mode = btb reserves tokens and knows no per-sequence KV; %s "
				    "holds %.3g MB per GPU per sequence in sliding windows or "
				    "states: use mode = vllm or sglang",
				    llm->name, (double)fixed / 1e6);
	if (n + 1 > p->kv_blocks)
		return cfg_err_keys(cfg, e,
				    "cluster.kv_blocks,kvcache.block_tokens,model.name,model.file,"
				    "cluster.tp,gpu.name,gpu.file,cluster.reserve_fraction",
				    "%s's per-sequence KV (sliding windows, states: %.3g MB per "
				    "GPU) takes %llu blocks of the %u-block pool, which then holds "
				    "no sequence",
				    llm->name, (double)fixed / 1e6, (unsigned long long)n,
				    p->kv_blocks);
	p->fixed_blocks_per_seq = (uint32_t)n;
	return 0;
}

/* The predictor's shortest reported prefix: its parameter named
 * *_min_blocks (every built-in predictor has one), else 1. */
static uint32_t pred_min_blocks(const pol_handle_t *h)
{
	for (size_t i = 0; i < h->params.n; i++) {
		const cfg_tkey_t *k = &h->params.keys[i];
		size_t n = strlen(k->key.name), sfx = strlen("_min_blocks");
		double v;
		if (n >= sfx && !strcmp(k->key.name + n - sfx, "_min_blocks") &&
		    cfg_field_number(k, h->params.data, &v) && v >= 1)
			return v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
	}
	return 1;
}

static int setup(sim_ctx_t *s, const cfg_t *cfg, const pol_registry_t *reg, err_t *e)
{
	int rc;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	const sim_params_t *sp = &s->prm;
	if ((rc = sim_params_fill(cfg, &s->prm, e)))
		return rc;
	rss_limit_set(s, sp->max_rss_gb);
	if ((rc = mdl_load_cfg(cfg, &s->hw, &llm, &cp, e)))
		return rc;
	sim_params_compute(sp, &cp);
	s->frontend_ns = sim_params_frontend_ns(sp);
	s->tp = sp->tp;
	s->gpus_per_node = sp->gpus_per_node;
	s->nodes = sp->nodes;
	if ((rc = sim_disagg_check(s, cfg, &llm, e)))
		return rc;
	/* Rules between keys name the one set last (cfg_err_keys), so the
	 * message points at the line to change; mdl_compute_init checks the
	 * same head rules, without the config's places. */
	if (s->gpus_per_node % s->tp)
		return cfg_err_keys(cfg, e, "cluster.tp,cluster.gpus_per_node",
				    "tp = %u does not divide gpus_per_node = %u", s->tp,
				    s->gpus_per_node);
	if (llm.heads % s->tp)
		return cfg_err_keys(cfg, e, "cluster.tp,model.name,model.file,model.heads",
				    "tp = %u does not divide %s's %u attention heads", s->tp,
				    llm.name, llm.heads);
	if (llm.attention == MDL_ATTN_GQA && llm.kv_heads % s->tp && s->tp % llm.kv_heads)
		return cfg_err_keys(cfg, e, "cluster.tp,model.name,model.file,model.kv_heads",
				    "tp = %u and %s's %u KV heads: one must divide the other",
				    s->tp, llm.name, llm.kv_heads);
	if ((rc = mdl_compute_init(&s->comp, &s->hw, &llm, s->tp, &cp, e)) ||
	    (rc = mdl_compute_check_finite(&s->comp, e)))
		return rc;
	cluster_params_t p = {0};
	p.n_instances = s->nodes * (s->gpus_per_node / s->tp);
	p.block_tokens = sp->block_tokens;
	if ((rc = kv_pool_blocks(cfg, sp, &s->hw, &llm, s->tp, p.block_tokens, &p.kv_blocks, e)))
		return rc;
	/* bytes of one block over the whole group (MLA latents sit on every GPU):
	 * the paged layers only; a sliding window and a state are per sequence */
	p.block_bytes = mdl_kv_paged_bytes_per_token_gpu(&llm, s->tp) * s->tp * p.block_tokens;
	p.sched_mode = sp->sched_mode;
	if ((rc = kv_fixed_blocks(cfg, &llm, s->tp, &p, e)))
		return rc;
	cluster_engine_defaults(p.sched_mode, s->hw.name, s->hw.hbm_bytes, &p.max_num_seqs,
				&p.max_batched_tokens);
	if (sp->max_num_seqs) /* 0: the engine's default */
		p.max_num_seqs = sp->max_num_seqs;
	if (sp->max_batched_tokens)
		p.max_batched_tokens = sp->max_batched_tokens;
	p.chunked_prefill = sp->chunked_prefill;
	p.conservativeness = sp->conservativeness;
	if (p.sched_mode == SCHED_VLLM && !p.chunked_prefill)
		cfg_warn_once(cfg, "scheduler", "chunked_prefill",
			      "false under mode = vllm matches no real engine: vLLM v1 always chunks "
			      "prefills (vllm/v1/core/sched/scheduler.py); here a prompt longer than "
			      "max_batched_tokens waits for an iteration of its own");
	p.resident_at_admission = sp->resident_at_admission;
	if (p.resident_at_admission && p.sched_mode != SCHED_BTB)
		cfg_warn_once(cfg, "kvcache", "resident_at",
			      "admission under mode = %s matches no real engine: KV is matchable "
			      "once computed (the original study's assumption, for mode = btb)",
			      p.sched_mode == SCHED_SGLANG ? "sglang" : "vllm");
	p.ttft_prefill_end = sp->ttft_prefill_end;
	p.decode_mode = sp->decode_mode;
	/* the study reserves tokens, not blocks, against the same pool */
	p.resv_tokens_cap = sp->kv_blocks > 0 ? (uint64_t)p.kv_blocks * p.block_tokens
					      : mdl_kv_tokens_per_instance(&s->hw, &llm, s->tp,
									   sp->reserve_fraction);
	p.busy_rule = sp->busy_rule;
	p.cost = mdl_sim_cost;
	p.cost_run = mdl_sim_cost_run;
	p.cost_ctx = &s->comp;
	p.ttft_slo_ns = (int64_t)(sp->ttft_ms * 1e6);
	p.tpot_slo_ns = (int64_t)(sp->tpot_ms * 1e6);
	p.client_timeout_ns = (int64_t)llround(sp->client_timeout_s * 1e9);
	p.on_spec_hit = sim_on_spec_hit;
	p.on_job_done = sim_on_job_done;
	p.wait_inflight = sim_wait_inflight;
	p.hook_ctx = s;
	p.on_touch = on_touch;
	p.on_admit = on_admit;
	p.on_too_long = on_too_long;
	p.on_busy = s->trace ? trace_busy : NULL;
	p.on_result = on_result;
	p.result_ctx = s;
	if ((rc = sim_disagg_setup(s, cfg, &llm, &cp, &p, e)))
		return rc;
	if ((rc = pol_set_open_cfg(reg, cfg, sp->seed, &s->pol, e)))
		return rc;
	s->pol_open = 1;
	if (!(s->eng = ev_engine_new(1024)))
		return err_set(e, KS_ENOMEM, "out of memory");
	/* the KV stores dominate setup: instances x blocks, and the tiers' */
	uint64_t kv_need = cluster_bytes(&p) + tier_bytes(sp->host_kv_gb, p.block_bytes, s->nodes) +
			   tier_bytes(sp->nvme_kv_gb, p.block_bytes, s->nodes) +
			   tier_bytes(sp->pool_kv_gb, p.block_bytes, 1);
	char what[160];
	snprintf(what, sizeof what, "building the cluster (%u instances of %u KV blocks, and its tiers)",
		 p.n_instances, p.kv_blocks);
	if ((rc = sim_rss_room(s, what, kv_need, RSS_FIX_CLUSTER)))
		return rc;
	if ((rc = cluster_init(&s->cl, &p, s->eng)))
		return err_set(e, rc, "out of memory building the cluster");
	if ((rc = sim_rss_room(s, "building the cluster", 0, RSS_FIX_CLUSTER)))
		return rc;
	s->hooks = calloc(p.n_instances, sizeof *s->hooks);
	s->qdelay = calloc(p.n_instances, sizeof *s->qdelay);
	if (!s->hooks || !s->qdelay)
		return err_set(e, KS_ENOMEM, "out of memory");
	/* LRU eviction needs no priority call: the store keeps its order */
	kv_prio_fn prio = pol_eviction_is_lru(POL_SET_OPS(&s->pol, POL_EVICTION, pol_eviction_ops))
	                      ? NULL : sim_evict_prio;
	for (uint32_t i = 0; i < p.n_instances; i++) {
		s->hooks[i] = (hook_t){s, i};
		kv_store_set_policy(s->cl.inst[i].kv, prio, sim_on_evict, &s->hooks[i]);
		kv_store_set_watch(s->cl.inst[i].kv, sim_on_kv_watch, &s->hooks[i]);
	}
	if ((rc = sim_net_init(s, sp, e)) ||
	    (rc = sim_rss_room(s, "building the network and the KV tiers", 0, RSS_FIX_CLUSTER)))
		return rc;
	if (!(s->holders = sim_holders_new()) || !(s->load = sim_load_new(p.n_instances)))
		return err_set(e, KS_ENOMEM, "out of memory");
	s->view = (pol_view_t){s, p.n_instances, p.block_tokens, p.block_bytes,
			       v_now, v_inst, v_match, v_prefill, v_xfer, v_match_host, v_held,
			       s->copy_deferred ? v_match_computing : NULL, v_candidates,
			       v_least_loaded, 0};
	s->view.n_inst = sim_disagg_route_instances(s); /* routers see the prefill pool */
	s->view.n_decode = p.n_instances - s->view.n_inst;
	/* the load index counts a request until its row; a prefill instance
	 * hands it off before that, so disaggregated routers scan instead */
	if (s->view.n_inst != p.n_instances)
		s->view.least_loaded = NULL;
	s->route_view = s->view;
	s->route_view.match = rv_match_computed;
	s->route_view.match_host = rv_match_host_computed;
	if (!s->host[0]) { /* no host tier (every node's or none): the same matches */
		s->view.match_host = s->view.match;
		s->route_view.match_host = s->route_view.match;
	}
	if ((rc = sim_rss_room(s, "building the routing view's indexes",
				 sim_rv_index_bytes(s, cfg),
				 "lower policy.routing.replicas or index_capacity, or pick another "
				 "policy.routing.index")) ||
	    (rc = sim_rv_setup(s, cfg, e)))
		return rc;
	if (pol_routing_view_routed(cfg) && !sim_rv_owns_view(s->rvw)) {
		if (!(s->rview = pol_rview_new(p.n_instances,
					       pol_routing_view_blocks(cfg, p.kv_blocks))))
			return err_set(e, KS_ENOMEM, "out of memory");
		s->route_view.match = rv_match_routed;
		s->route_view.match_host = rv_match_host_routed;
		s->route_view.held_blocks = rv_held_routed;
		s->route_view.candidates = NULL; /* the tree is not the stores */
	}
	if ((rc = sim_rss_room(s, "building the routing view", 0,
			   "lower policy.routing.replicas, index_capacity or view_blocks")) ||
	    (rc = sim_join_setup(s, e)))
		return rc;
	s->act = (pol_actions_t){s, a_copy, a_cancel, a_mark_spec, &s->spec, a_announce};
	const struct pol_replication_ops *ro =
		POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
	pol_repl_timing_t tm = ro->timing(s->pol.h[POL_REPLICATION].state);
	s->tick_ns = tm.tick_ns;
	s->horizon_ns = tm.horizon_ns;
	const struct pol_predictor_ops *po = POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
	/* the predictor reads ahead only if a replication policy asks it */
	if (s->horizon_ns > 0 && po->peek_ahead_ns && po->peek)
		s->peek_ahead = po->peek_ahead_ns(s->pol.h[POL_PREDICTOR].state);
	if (s->peek_ahead > 0 && s->fb)
		return cfg_err_keys(cfg, e, "policy.predictor.name,trace.gen",
				    "%s reads the trace ahead, but %s is a closed loop: each "
				    "request is made only when its user's previous one completes, "
				    "so there is nothing ahead to read; pick a predictor that learns "
				    "from arrivals",
				    po->base.name, s->src->name ? s->src->name : "the source");
	if (s->horizon_ns > 0 && !(s->fc = fcast_new(s->horizon_ns,
						     pred_min_blocks(&s->pol.h[POL_PREDICTOR]))))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (sp->out.oracle_bound && !(s->bound = bound_new(s->cl.p.n_instances)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (sp->out.decisions && !(s->dec = sim_dec_new(s->res)))
		return err_set(e, KS_ENOMEM, "out of memory");
	s->sample_ns = (int64_t)(sp->out.timeline_interval_ms * 1e6);
	s->tl_every = sp->out.timeline == SIM_TL_EVERY;
	if (!s->tl_every && (rc = tl_alloc(s)))
		return err_set(e, rc, "out of memory");
	sim_ev_types_t *t = &s->ev;
	if (ev_engine_type_new(s->eng, on_arrival, s, &t->arrival) ||
	    ev_engine_type_new(s->eng, on_peek, s, &t->peek) ||
	    ev_engine_type_new(s->eng, on_src_retry, s, &t->src_retry) ||
	    ev_engine_type_new(s->eng, on_tick, s, &t->tick) ||
	    ev_engine_type_new(s->eng, on_sample, s, &t->sample) ||
	    ev_engine_type_new(s->eng, on_kick, s, &t->kick) ||
	    ev_engine_type_new(s->eng, sim_copy_deferred_start, s, &t->defer))
		return err_set(e, KS_ERUNTIME, "no event type left (EV_MAX_TYPES)");
	s->max_pending = sp->max_pending;
	ev_engine_set_check(s->eng, after_event, s);
	if (s->trace && (rc = trace_begin(s)))
		return err_set(e, rc, "trace events: %s",
			       rc == KS_ENOMEM ? "out of memory" : "could not start");
	return sim_rss_room(s, "setting up the run", 0, RSS_FIX_CLUSTER);
}

static int count_held(void *ctx, const kv_block_info_t *b)
{
	*(uint32_t *)ctx += b->state != KV_READY || b->ref;
	return 0;
}

/* Every run ends with consistent stores (one O(blocks) pass), and, once no
 * copy is live, with no block held, computing or in flight: nothing leaked. */
static int stores_check_end(sim_ctx_t *s)
{
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++) {
		kv_store_t *kv = s->cl.inst[i].kv;
		uint32_t held = 0;
		if (kv_check(kv) || kv_used_private(kv))
			return err_set(s->err, KS_ERUNTIME, "instance %u: KV store inconsistent at the end",
				       i);
		if (s->live_events == 0 && (kv_foreach(kv, count_held, &held), held))
			return err_set(s->err, KS_ERUNTIME,
				       "instance %u: %u KV blocks still held at the end", i, held);
	}
	return 0;
}

/* output.oracle_bound: MIN on each instance's stream with its own pool and
 * the placement bound (sim/run/bound.h), beside the run's hit_rate_blocks. */
static int bound_report(sim_ctx_t *s, sim_results_t *res)
{
	uint32_t n = s->cl.p.n_instances, *cap = malloc((n ? n : 1) * sizeof *cap);
	if (!cap)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		cap[i] = s->cl.p.inst_kv_blocks ? s->cl.p.inst_kv_blocks[i] : s->cl.p.kv_blocks;
	double bw = s->prm.out.bound_bw_gbps * 1e9, end_s = (double)ev_engine_now(s->eng) / 1e9;
	double copy_blocks = bw > 0 ? bw * end_s / (double)s->cl.p.block_bytes : -1;
	bound_out_t o;
	int rc = bound_compute(s->bound, res->req, res->n_req, cap, copy_blocks, &o);
	free(cap);
	double run = s->cl.blocks_total ? (double)s->cl.blocks_hit / s->cl.blocks_total : NAN;
	double L = o.lookups ? (double)o.lookups : NAN;
	double place = (double)o.place_hits / L, unl = (double)o.reusable / L;
	/* REC_BOUND_LOOKUPS_BLOCKS .. REC_BOUND_NETWORK_COST_BLOCKS, in the recorder's order */
	const double m[] = {(double)o.lookups, (double)o.min_hits / L, (double)o.min_hits / L - run,
			    place, unl, place - run, unl - place};
	_Static_assert(sizeof m / sizeof m[0] ==
			   REC_BOUND_NETWORK_COST_BLOCKS - REC_BOUND_LOOKUPS_BLOCKS + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = rec_metric(res, REC_BOUND_LOOKUPS_BLOCKS + (int)i, m[i]);
	return rc;
}

/* Per-window summaries: [output] windows, else the source's (a spec's
 * stages), else none. */
static int collect_windows(sim_ctx_t *s, sim_results_t *res, const metrics_opts_t *mo)
{
	if (s->n_win_edges)
		return metrics_windows(res, mo, s->win_edges, s->n_win_edges, RES_WIN_OUTPUT);
	if (!s->win_fn)
		return 0;
	int64_t edges[257];
	size_t n = s->win_fn(s->win_ctx, edges, sizeof edges / sizeof edges[0]);
	return n > 1 ? metrics_windows(res, mo, edges, n, RES_WIN_STAGE) : 0;
}

static int collect(sim_ctx_t *s, const cfg_t *cfg, sim_results_t *res)
{
	int rc;
	s->src_done = 1; /* rows of unfinished requests ask no closed-loop user for more */
	if ((rc = sim_disagg_finish(s)) || (rc = cluster_finish(&s->cl)))
		return rc;
	if (s->hook_err)
		return s->hook_err;
	if ((rc = stores_check_end(s)))
		return rc;
	res->seed = s->prm.seed;
	snprintf(res->trace_path, sizeof res->trace_path, "%s", s->src->name ? s->src->name : "");
	res->events = ev_engine_events(s->eng);
	if (!(res->config_text = cfg_text(cfg)))
		return KS_ENOMEM;
	metrics_opts_t mo = {s->cl.p.ttft_slo_ns, s->cl.p.tpot_slo_ns, s->cl.blocks_total,
			     s->cl.blocks_hit};
	if ((rc = metrics_summarize(res, &mo)) || (rc = collect_windows(s, res, &mo)))
		return rc;
	uint64_t peer = 0, host = 0;
	for (size_t i = 0; i < res->n_req; i++) {
		peer += res->req[i].tok_peer;
		host += res->req[i].tok_host;
	}
	double area = 0, end_s = (double)ev_engine_now(s->eng) / 1e9;
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++)
		area += s->cl.inst[i].wait_area / 1e9;
	/* REC_TOK_FETCHED_PEER .. REC_QUEUE_LEN_MEAN, in the recorder's order */
	const double m[] = {
	    (double)peer, (double)host, s->cl.p.n_instances, s->cl.p.kv_blocks,
	    (double)s->cl.kv_block_allocs, (double)s->cl.kv_block_frees, (double)res->events, end_s,
	    end_s > 0 ? area / end_s : 0,
	};
	_Static_assert(sizeof m / sizeof m[0] == REC_QUEUE_LEN_MEAN - REC_TOK_FETCHED_PEER + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (rec_metric(res, REC_TOK_FETCHED_PEER + (int)i, m[i]))
			return KS_ENOMEM;
	warn_over_budget(s);
	if ((rc = sim_copy_finish(s, res)) || (rc = fcast_report(s->fc, res)))
		return rc;
	if ((rc = sim_disagg_report(s, res)) || (s->bound && (rc = bound_report(s, res))))
		return rc;
	if (s->rvw && (rc = sim_rv_report(s->rvw, res)))
		return rc;
	return sim_join_report(s, res);
}

static void ctx_free(sim_ctx_t *s)
{
	free(s->win_edges);
	sim_net_free(s);
	cluster_free(&s->cl);
	sim_disagg_free(s);
	sim_join_free(s);
	ev_engine_free(s->eng);
	if (s->pol_open)
		pol_set_close(&s->pol);
	pol_rview_free(s->rview);
	sim_rv_free(s->rvw);
	sim_holders_free(s->holders);
	sim_load_free(s->load);
	fcast_free(s->fc);
	bound_free(s->bound);
	sim_dec_free(s->dec);
	for (uint32_t i = 0; i < s->pend_cap; i++)
		free(s->pend[i].blocks);
	FREE_ALL(s->pend, s->hooks, s->qdelay, s->tl_inst, s->tl_link, s->tl_on, s->tl_cand,
	         s->tl_mark, s->tl_dirty, s->tl_dirty_list, s->tr_dirty, s->tr_dirty_list, s);
}

/* The engine's tick: a progress report, nothing the run can see. */
static int progress_tick(void *ctx, ev_engine_t *eng)
{
	sim_ctx_t *s = ctx;
	const sim_run_opts_t *o = s->opts;
	sim_progress_t p = {ev_engine_now(eng), s->pend_head_seq, s->cl.n_done,
			    o->fraction ? o->fraction(o->fraction_ctx) : -1};
	return s->opts->progress(s->opts->progress_ctx, &p);
}

int sim_run_reg(const cfg_t *cfg, const pol_registry_t *reg, sim_source_t *src,
		sim_results_t *res, err_t *e)
{
	return sim_run_source_opts(cfg, reg, src, NULL, res, e);
}

int sim_run_source_opts(const cfg_t *cfg, const pol_registry_t *reg, sim_source_t *src,
			const sim_run_opts_t *o, sim_results_t *res, err_t *e)
{
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	memset(res, 0, sizeof *res);
	int64_t start_unix = (int64_t)time(NULL);
	sim_rss_peak_reset(); /* max_rss_gb holds this run's peak, not an earlier one's */
	sim_ctx_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->src = src;
	s->err = e;
	s->cfg = cfg;
	s->res = res;
	s->opts = o && o->progress ? o : NULL;
	s->trace = o ? o->trace : NULL;
	s->fb = o ? o->feedback : NULL;
	s->win_fn = o ? o->windows : NULL;
	s->win_ctx = o ? o->windows_ctx : NULL;
	int rc = setup(s, cfg, reg, e);
	if (!rc && (rc = metrics_windows_parse(s->prm.out.windows, &s->win_edges, &s->n_win_edges, e)))
		cfg_err_locate(cfg, e);
	if (!rc && s->opts)
		ev_engine_set_tick(s->eng, 8192, progress_tick, s);
	if (!rc)
		rc = read_one(s);
	if (!rc && s->tick_ns > 0 && ev_engine_at(s->eng, s->tick_ns, s->ev.tick, 0, 0) == EV_NONE)
		rc = KS_ENOMEM;
	if (!rc && s->sample_ns > 0 && ev_engine_at(s->eng, 0, s->ev.sample, 0, 0) == EV_NONE)
		rc = KS_ENOMEM;
	if (!rc) {
		double until_s = s->prm.until_s;
		rc = ev_engine_run(s->eng, until_s > 0 ? (int64_t)(until_s * 1e9) : INT64_MAX);
		if (rc && (!e || e->code != rc || !e->msg[0]))
			err_set(e, rc, "simulation failed at t=%" PRId64 " ns", ev_engine_now(s->eng));
	}
	if (!rc && !(rc = collect(s, cfg, res)))
		rc = sim_rss_room(s, "collecting the results", 0,
			      "shorten the trace (experiment.until_s, trace.limit)");
	if (!rc && s->trace && (rc = trace_end(s)) && e && !e->msg[0])
		err_set(e, rc, "trace events: writing failed");
	if (rc == KS_ENOMEM && e && !e->msg[0])
		err_set(e, rc, "out of memory");
	clock_gettime(CLOCK_MONOTONIC, &w1);
	res->start_unix = start_unix;
	res->wall_s = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
	if (rc)
		sim_results_free(res);
	ctx_free(s);
	return rc;
}

int sim_run_source(const cfg_t *cfg, sim_source_t *src, sim_results_t *res, err_t *e)
{
	return sim_run_reg(cfg, NULL, src, res, e);
}

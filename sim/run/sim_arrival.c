/* sim_arrival — a request's way through the run: read from the source ahead
 * of its arrival (a predictor may peek), routed, admitted or rejected,
 * fetched and queued at its instance; and the cluster's hooks of its life
 * there (admitted, its row) that the predictor and a closed-loop source
 * hear. */
#include "sim/run/sim_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cli_voice.h"
#include "sim/run/bound.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_decisions.h"
#include "sim/run/sim_rview.h"

/* A request read from the source and not yet arrived. */
typedef struct pend {
	sim_arrival_t a;
	uint64_t *blocks;
	uint32_t cap;
} pend_t;

/* The source and its read-ahead (sim_int.h sim_arrivals_new). */
struct sim_arrivals {
	sim_source_t *src;
	const sim_feedback_t *fb; /* closed loop (sim.h); NULL: none */
	pend_t *pend;             /* ring of read-ahead requests */
	uint32_t pend_cap, pend_n;
	uint64_t pend_head_seq;   /* read sequence number of the oldest entry */
	int src_done;
	int src_wait;             /* the source said SIM_SRC_WAIT; src_gen names the live retry */
	uint64_t src_gen;
	int64_t last_arrival;
	int64_t peek_ahead;       /* the predictor reads arrivals this far ahead (0: not) */
};

struct sim_arrivals *sim_arrivals_new(sim_source_t *src, const sim_feedback_t *fb)
{
	struct sim_arrivals *ar = calloc(1, sizeof *ar);
	if (ar) {
		ar->src = src;
		ar->fb = fb;
	}
	return ar;
}

void sim_arrivals_free(struct sim_arrivals *ar)
{
	if (!ar)
		return;
	for (uint32_t i = 0; i < ar->pend_cap; i++)
		free(ar->pend[i].blocks);
	free(ar->pend);
	free(ar);
}

int sim_arrivals_peek_ahead(struct sim_arrivals *ar, int64_t ns, const char *predictor,
			    const cfg_t *cfg, err_t *e)
{
	ar->peek_ahead = ns;
	if (ns > 0 && ar->fb)
		return cfg_err_keys(cfg, e, "policy.predictor.name,trace.gen",
				    "%s reads the trace ahead, but %s is a closed loop: each "
				    "request is made only when its user's previous one completes, "
				    "so there is nothing ahead to read; pick a predictor that learns "
				    "from arrivals",
				    predictor, ar->src->name ? ar->src->name : "the source");
	return 0;
}

const char *sim_arrivals_source_name(const struct sim_arrivals *ar)
{
	return ar->src->name;
}

void sim_arrivals_stop(struct sim_arrivals *ar)
{
	ar->src_done = 1;
}

int sim_arrivals_active(const struct sim_arrivals *ar)
{
	return !ar->src_done || ar->pend_n;
}

uint64_t sim_arrivals_arrived(const struct sim_arrivals *ar)
{
	return ar->pend_head_seq;
}

/* The read-ahead ring is indexed by read sequence number (seq % cap), so
 * scheduled events that carry a seq stay valid when the ring grows. */
static pend_t *pend_at(struct sim_arrivals *ar, uint64_t seq)
{
	return &ar->pend[seq % ar->pend_cap];
}

static int pend_push(struct sim_arrivals *ar, const sim_arrival_t *a, uint64_t *seq)
{
	if (ar->pend_n == ar->pend_cap) {
		uint32_t cap = ar->pend_cap ? 2 * ar->pend_cap : 16;
		pend_t *n = calloc(cap, sizeof *n);
		if (!n)
			return KS_ENOMEM;
		for (uint32_t i = 0; i < ar->pend_cap; i++) {
			/* entries hold seqs [head_seq, head_seq + n): every slot is live */
			uint64_t q = ar->pend_head_seq + i;
			n[q % cap] = ar->pend[q % ar->pend_cap];
		}
		free(ar->pend);
		ar->pend = n;
		ar->pend_cap = cap;
	}
	uint64_t q = ar->pend_head_seq + ar->pend_n;
	pend_t *p = pend_at(ar, q);
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
	ar->pend_n++;
	*seq = q;
	return 0;
}

/* Reads one request into the read-ahead ring and schedules its arrival (and
 * its peek, when the predictor reads ahead). */
int sim_arrival_read(sim_ctx_t *s)
{
	struct sim_arrivals *ar = s->arr;
	if (ar->src_done)
		return 0;
	sim_arrival_t a = {0}; /* sources that know no output ids leave n_out_blocks 0 */
	int64_t now = ev_engine_now(s->eng);
	if (ar->fb)
		ar->fb->at(ar->fb->ctx, now);
	ar->src_wait = 0;
	int rc = ar->src->next(ar->src->ctx, &a, s->err);
	if (rc < 0)
		return rc;
	if (rc == SIM_SRC_WAIT && !ar->fb)
		return err_set(s->err, KS_ERUNTIME,
			       "%s: the source waits for results but the run has no feedback for it",
			       ar->src->name);
	if (rc == SIM_SRC_WAIT) { /* a closed loop waits for results, or for a time */
		ar->src_wait = 1;
		ar->src_gen++;
		if (a.arrival_ns != INT64_MAX &&
		    ev_engine_at(s->eng, a.arrival_ns > now ? a.arrival_ns : now, s->ev.src_retry, 0,
				 ar->src_gen) == EV_NONE)
			return KS_ENOMEM;
		return 0;
	}
	if (rc == 0) {
		ar->src_done = 1;
		return 0;
	}
	if (a.arrival_ns < ar->last_arrival)
		return err_set(s->err, KS_EINPUT, "%s: request %" PRIu64 ": arrival goes back in time",
			       ar->src->name, a.id);
	ar->last_arrival = a.arrival_ns;
	uint64_t seq;
	if ((rc = pend_push(ar, &a, &seq)))
		return rc;
	if (ev_engine_at(s->eng, a.arrival_ns, s->ev.arrival, 0, seq) == EV_NONE)
		return KS_ENOMEM;
	if (ar->peek_ahead > 0) {
		int64_t t = a.arrival_ns - ar->peek_ahead;
		if (ev_engine_at(s->eng, t > now ? t : now, s->ev.peek, 0, seq) == EV_NONE)
			return KS_ENOMEM;
	}
	return 0;
}

/* The retry a closed-loop source asked for; an older one (a result came
 * first and the source was asked again) is stale. */
int sim_on_src_retry(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	const struct sim_arrivals *ar = s->arr;
	return ar->src_wait && ev->payload == ar->src_gen ? sim_arrival_read(s) : 0;
}

int sim_on_peek(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	const pend_t *p = pend_at(s->arr, ev->payload);
	pol_arrival_t pa = {p->a.arrival_ns, p->blocks, p->a.n_blocks, -1};
	const struct pol_predictor_ops *po = POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
	err_clear(s->err);
	int rc = pol_hook_rc(s->pol.h[POL_PREDICTOR].ops, "peek",
			     po->peek(s->pol.h[POL_PREDICTOR].state, &pa, s->err), 0, s->err);
	return rc ? rc : sim_arrival_read(s);
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
				 ro->route_hint(s->pol.h[POL_REPLICATION].state, sim_views_policy(s->vw), q, inst), 1,
				 s->err);
		if (rc < 0)
			return rc;
		hinted = rc == 1 && *inst < sim_views_policy(s->vw)->n_inst;
	}
	if (s->rvw && (rc = sim_rv_pick(s->rvw)))
		return rc;
	if (!hinted) {
		const struct pol_routing_ops *rt =
			POL_SET_OPS(&s->pol, POL_ROUTING, pol_routing_ops);
		err_clear(s->err);
		rc = pol_hook_rc(s->pol.h[POL_ROUTING].ops, "route",
				 rt->route(s->pol.h[POL_ROUTING].state, sim_views_route(s->vw), q, inst),
				 POL_REJECT, s->err);
		if (rc < 0)
			return rc;
		if (rc == POL_ACCEPT && *inst >= sim_views_policy(s->vw)->n_inst)
			return err_set(s->err, KS_ERUNTIME, "routing policy returned instance %u of %u",
				       *inst, sim_views_policy(s->vw)->n_inst);
		if (rc != POL_ACCEPT)
			return rc;
		if (s->rvw && (rc = sim_rv_decided(s->rvw, q, *inst)))
			return rc;
	}
	/* the trace reads the view as the router just did */
	if (s->dec && sim_dec_route(s->dec, sim_views_route(s->vw), q, *inst, hinted, q->arrival_ns))
		return err_set(s->err, KS_ENOMEM, "out of memory");
	const struct pol_admission_ops *ad = POL_SET_OPS(&s->pol, POL_ADMISSION, pol_admission_ops);
	err_clear(s->err);
	rc = pol_hook_rc(s->pol.h[POL_ADMISSION].ops, "admit",
			 ad->admit(s->pol.h[POL_ADMISSION].state, sim_views_policy(s->vw), q, *inst), POL_REJECT,
			 s->err);
	if (rc >= 0 && s->dec && sim_dec_admit(s->dec, ad, sim_views_policy(s->vw), q, *inst, rc, q->arrival_ns))
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

int sim_on_arrival(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	sim_ctx_t *s = ctx;
	int64_t now = ev_engine_now(eng);
	pend_t *p = pend_at(s->arr, ev->payload);
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
			rc = sim_views_routed_insert(s->vw, inst, q.blocks, q.n_blocks);
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
			if (!rc && sim_views_use_load(s->vw)) /* its row gives the load back */
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
						 ro->on_route(s->pol.h[POL_REPLICATION].state, sim_views_policy(s->vw),
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
	struct sim_arrivals *ar = s->arr;
	ar->pend_head_seq++;
	ar->pend_n--;
	return ar->peek_ahead > 0 ? 0 : sim_arrival_read(s);
}

/* cluster_params_t.on_admit */
int sim_on_admit(void *ctx, uint32_t inst, const sim_req_t *r)
{
	sim_ctx_t *s = ctx;
	pol_req_event_t ev = {.phase = POL_REQ_STARTED, .id = r->id, .inst = (int32_t)inst};
	return pred_request(s, &ev);
}

/* cluster_params_t.on_result: a routed request's row (completed, or
 * unfinished at the end) is its leaving the instance's load; every row goes
 * to the recorder. */
int sim_on_result(void *ctx, const res_request_t *row)
{
	sim_ctx_t *s = ctx;
	/* what is recorded and what a client hears: the front-end's time on
	 * top of the engine's (the policies see the engine's row) */
	res_request_t client = *row;
	if (client.ttft_ns >= 0)
		client.ttft_ns += s->frontend_ns;
	if (client.e2e_ns >= 0)
		client.e2e_ns += s->frontend_ns;
	if (row->instance >= 0 && sim_views_use_load(s->vw))
		sim_load_dec(s->load, (uint32_t)row->instance);
	if (row->instance >= 0 && s->rvw)
		sim_rv_result(s->rvw, row);
	pol_req_event_t ev = {.phase = POL_REQ_ENDED, .id = row->id, .inst = row->instance,
			      .completed = row->status == REQ_COMPLETED};
	int rc;
	if (row->instance >= 0 && (rc = pred_request(s, &ev)))
		return rc;
	struct sim_arrivals *ar = s->arr;
	if ((rc = rec_request(s->res, &client)) || !ar->fb)
		return rc;
	/* a closed loop: the row frees its user, who may send again; the source
	 * is asked in an event of its own (this one may be mid-arrival) */
	int64_t now = ev_engine_now(s->eng);
	if ((rc = ar->fb->done(ar->fb->ctx, now, &client, s->err)))
		return rc;
	if (ar->src_wait && !ar->src_done &&
	    ev_engine_at(s->eng, now, s->ev.src_retry, 0, ++ar->src_gen) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

/* sim_rview — see sim_rview.h. */
#include "sim/run/sim_rview.h"

#include <assert.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/kv_filter.h"
#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "sim/engine/ev_queue.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_load.h"
#include "sim/run/sim_rdeliver.h"
#include "sim/run/sim_rquality.h"

/* after the disaggregated pools' stream (sim_disagg.c) */
#define RV_STREAM (SIM_STREAM_POLICY + POL_NFAMILY + 1)

typedef struct rv_rep {
	kv_filter_t **idx;  /* view = events: per instance */
	pol_rview_t *tree;  /* view = routed with replicas > 1 */
	sim_load_t *load;   /* replicas > 1: its requests in flight per instance */
	uint64_t *tokens;   /* ... their prompt tokens */
} rv_rep_t;

/* A request a replica dispatched, until its result row. */
typedef struct rv_flight {
	uint64_t id;
	uint32_t rep, inst, tokens;
	uint8_t state; /* 0 free, 1 live, 2 gone */
} rv_flight_t;

struct sim_rv {
	sim_ctx_t *s;
	pol_view_params_t p;
	int events, owns;
	uint32_t R, cur, n_inst;
	gsl_rng *rng; /* losses and drawn replicas (mt19937) */
	uint64_t seed, arrivals;
	pol_view_t base; /* the routers' computed view */
	const pol_view_t *route; /* the routers' view as they read it (sim_view.c's) */
	rv_rep_t *rep;
	sim_rd_t *rd;     /* view = events: the event channel */
	uint32_t ev_wake; /* sim_rd_next is due on an instance */
	ev_queue_t *due;  /* the same wake times (target: the instance), so
	                   * that a routing decision at a wake's instant can
	                   * apply what is due without visiting every instance */
	sim_rq_t *q;
	rv_flight_t *fl;
	uint64_t fl_cap, fl_used, fl_live; /* used: live + gone entries */
	uint64_t sent, lost, msgs;
	double delay_sum_ns;
};

/* ---- delivery ---------------------------------------------------------------- */

static int rv_apply(sim_rv_t *rv, uint32_t i, const sim_rd_msg_t *m, int64_t now)
{
	rv->msgs++;
	rv->delay_sum_ns += (double)(m->due - m->sent);
	for (uint32_t r = 0; r < rv->R; r++) {
		kv_filter_t *f = rv->rep[r].idx[i];
		for (uint32_t k = 0; k < m->n; k++) {
			rv->sent++;
			if (rv->p.loss > 0 && gsl_rng_uniform(rv->rng) < rv->p.loss) {
				rv->lost++;
				continue;
			}
			if (m->ev[k].stored) {
				if (kvf_insert(f, m->ev[k].id, now) < 0) /* KVF_FULL: left absent */
					return KS_ENOMEM;
			} else if (rv->p.index != POL_INDEX_TTL) {
				kvf_remove(f, m->ev[k].id);
			}
		}
	}
	return 0;
}

/* An engine event at wake for inst's messages, and the same time in the
 * due queue (sim_rv_pick). */
static int rv_wake_at(sim_rv_t *rv, uint32_t i, int64_t wake)
{
	return ev_engine_at(rv->s->eng, wake, rv->ev_wake, i, 0) == EV_NONE ||
	               ev_push(rv->due, wake, 0, i, 0) == EV_NONE
	           ? KS_ENOMEM
	           : 0;
}

/* Applies every message of inst due by now, and asks to be woken at the
 * times the channel names. */
static int rv_drain(sim_rv_t *rv, uint32_t i, int64_t now)
{
	for (;;) {
		sim_rd_msg_t m;
		int64_t wake;
		int rc = sim_rd_next(rv->rd, i, now, &m, &wake);
		if (rc < 0)
			return rc;
		if (wake >= 0 && (rc = rv_wake_at(rv, i, wake)))
			return rc;
		if (!rc)
			return 0;
		if ((rc = rv_apply(rv, i, &m, now)))
			return rc;
	}
}

static int rv_on_wake(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	return rv_drain(ctx, ev->target, ev_engine_now(eng));
}

static int rv_publish(sim_rv_t *rv, uint32_t i, uint64_t id, int stored, int64_t now)
{
	int64_t wake;
	int rc = sim_rd_publish(rv->rd, i, id, stored, now, &wake);
	if (rc || wake < 0)
		return rc;
	if (wake <= now) /* due at once: applied at once */
		return rv_drain(rv, i, now);
	return rv_wake_at(rv, i, wake);
}

/* A store hook's failure, said (the run stops with it). */
static int rv_hook_fail(sim_ctx_t *s, int rc)
{
	return rc ? err_set(s->err, rc, "out of memory") : 0;
}

/* kv_ready_fn of the instance stores (ctx: the instance's hook_t). */
static int rv_on_ready(void *ctx, const kv_block_info_t *b, int64_t now)
{
	const hook_t *h = ctx;
	sim_rv_t *rv = h->s->rvw;
	int rc = sim_rq_stored(rv->q, h->inst, b->id);
	if (!rc && rv->events)
		rc = rv_publish(rv, h->inst, b->id, 1, now);
	return rv_hook_fail(h->s, rc);
}

int sim_rv_removed(sim_rv_t *rv, uint32_t inst, uint64_t id, int64_t now)
{
	return rv->events ? rv_hook_fail(rv->s, rv_publish(rv, inst, id, 0, now)) : 0;
}

/* ---- the replica's view (ctx: the sim_ctx_t) ------------------------------------ */

static int rv_held(const sim_rv_t *rv, uint32_t i, uint64_t id, int64_t now)
{
	const rv_rep_t *r = &rv->rep[rv->cur];
	return rv->events ? kvf_has(r->idx[i], id, now) : pol_rview_has(r->tree, i, id);
}

static uint32_t rv_match(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	const sim_ctx_t *s = ctx;
	const sim_rv_t *rv = s->rvw;
	if (!rv->events && !rv->rep[rv->cur].tree)
		return rv->base.match(ctx, i, b, n);
	int64_t now = ev_engine_now(s->eng);
	uint32_t k = 0;
	while (k < n && rv_held(rv, i, b[k], now))
		k++;
	return k;
}

static uint32_t rv_match_host(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	const sim_ctx_t *s = ctx;
	const sim_rv_t *rv = s->rvw;
	if (!rv->events && !rv->rep[rv->cur].tree)
		return rv->base.match_host(ctx, i, b, n);
	const kv_store_t *h = s->host ? s->host[sim_inst_node(s, i)] : NULL;
	int64_t now = ev_engine_now(s->eng);
	uint32_t k = 0;
	while (k < n && (rv_held(rv, i, b[k], now) || (h && kv_visible(h, b[k]))))
		k++;
	return k;
}

static uint64_t rv_held_blocks(void *ctx, uint32_t i)
{
	const sim_rv_t *rv = ((const sim_ctx_t *)ctx)->rvw;
	const rv_rep_t *r = &rv->rep[rv->cur];
	/* the events index has no tree: what an instance holds is its KV use,
	 * a measured quantity (engines export it, e.g. vLLM's kv_cache_usage),
	 * so the instance's true one, as for the computed view */
	if (rv->events)
		return rv->base.held_blocks(ctx, i);
	return r->tree ? pol_rview_size(r->tree, i) : rv->base.held_blocks(ctx, i);
}

/* replicas > 1: the deciding replica's least-loaded instances, by its own
 * in-flight counts (what rv_inst gives as waiting; running is 0). KVSIM_CHECK
 * builds check the index at each query. */
static const uint32_t *rv_least_loaded(void *ctx, uint32_t *count, uint64_t *min_load,
                                       uint64_t *max_load)
{
	sim_ctx_t *s = ctx;
	const sim_load_t *l = s->rvw->rep[s->rvw->cur].load;
	const uint32_t *c = sim_load_least(l, count, min_load, max_load);
#ifdef KVSIM_CHECK
	assert(!sim_load_check(l) && "replica load index: inconsistent");
#endif
	return c;
}

static void rv_inst(void *ctx, uint32_t i, pol_inst_t *o)
{
	const sim_rv_t *rv = ((const sim_ctx_t *)ctx)->rvw;
	rv->base.inst(ctx, i, o);
	if (rv->R > 1) { /* the counts a router keeps from its own dispatches */
		o->waiting = sim_load_of(rv->rep[rv->cur].load, i);
		o->running = 0;
		o->prefill_tokens = rv->rep[rv->cur].tokens[i];
	}
}

/* ---- replicas' in-flight requests --------------------------------------------- */

static rv_flight_t *rv_flight_find(const sim_rv_t *rv, uint64_t id)
{
	for (uint64_t j = rng_fmix64(id) & (rv->fl_cap - 1);; j = (j + 1) & (rv->fl_cap - 1)) {
		rv_flight_t *f = &rv->fl[j];
		if (!f->state)
			return NULL;
		if (f->state == 1 && f->id == id)
			return f;
	}
}

/* Adds x. A table half full (gone entries count: they keep probe chains)
 * is rebuilt with its live entries only, at a size from them (at most a
 * quarter full after), so its memory follows the requests in flight, not
 * every request dispatched; each rebuild follows at least a quarter of its
 * size in adds (amortized O(1)). */
static int rv_flight_add(sim_rv_t *rv, rv_flight_t x)
{
	if (2 * (rv->fl_used + 1) > rv->fl_cap) {
		uint64_t ocap = rv->fl_cap, cap = 64;
		while (cap < 4 * (rv->fl_live + 1))
			cap *= 2;
		rv_flight_t *old = rv->fl;
		if (!(rv->fl = calloc(cap, sizeof *rv->fl))) {
			rv->fl = old;
			return KS_ENOMEM;
		}
		rv->fl_cap = cap;
		rv->fl_used = rv->fl_live = 0;
		for (uint64_t k = 0; k < ocap; k++)
			if (old[k].state == 1 && rv_flight_add(rv, old[k]))
				return KS_ENOMEM; /* cannot happen: room was made */
		free(old);
	}
	uint64_t j = rng_fmix64(x.id) & (rv->fl_cap - 1);
	while (rv->fl[j].state)
		j = (j + 1) & (rv->fl_cap - 1);
	x.state = 1;
	rv->fl[j] = x;
	rv->fl_used++;
	rv->fl_live++;
	return 0;
}

/* ---- the run's calls ----------------------------------------------------------- */

int sim_rv_pick(sim_rv_t *rv)
{
	if (rv->R > 1)
		rv->cur = rv->p.assign == POL_ASSIGN_RANDOM
				  ? (uint32_t)gsl_rng_uniform_int(rv->rng, rv->R)
				  : (uint32_t)(rv->arrivals++ % rv->R);
	/* a message due now is applied before the routers read (an arrival
	 * at the same instant may come first in the engine's order): the
	 * instances whose wake times have come, not every instance */
	int64_t now = ev_engine_now(rv->s->eng);
	while (rv->events && ev_peek_time(rv->due) <= now) {
		ev_event_t w;
		ev_pop(rv->due, &w);
		int rc = rv_drain(rv, w.target, now);
		if (rc)
			return rc;
	}
	return 0;
}

int sim_rv_decided(sim_rv_t *rv, const pol_req_t *q, uint32_t inst)
{
	return sim_rq_decision(rv->q, rv->route, &rv->base, q, inst);
}

int sim_rv_dispatch(sim_rv_t *rv, const pol_req_t *q, uint32_t inst)
{
	if (rv->R == 1)
		return 0;
	rv_rep_t *r = &rv->rep[rv->cur];
	int rc = r->tree ? pol_rview_insert(r->tree, inst, q->blocks, q->n_blocks) : 0;
	if (!rc)
		rc = rv_flight_add(rv, (rv_flight_t){q->id, rv->cur, inst, q->input_tokens, 1});
	if (!rc)
		rc = sim_load_inc(r->load, inst);
	if (!rc)
		r->tokens[inst] += q->input_tokens;
	return rc;
}

int sim_rv_announce(sim_rv_t *rv, uint32_t inst, const uint64_t *b, uint32_t n)
{
	for (uint32_t r = 0; r < rv->R; r++)
		if (rv->rep[r].tree && pol_rview_insert(rv->rep[r].tree, inst, b, n))
			return KS_ENOMEM;
	return 0;
}

void sim_rv_result(sim_rv_t *rv, const res_request_t *row)
{
	rv_flight_t *f = rv->R > 1 && rv->fl_cap ? rv_flight_find(rv, row->id) : NULL;
	if (!f)
		return;
	sim_load_dec(rv->rep[f->rep].load, f->inst);
	rv->rep[f->rep].tokens[f->inst] -= f->tokens;
	f->state = 2;
	rv->fl_live--;
}

int sim_rv_report(const sim_rv_t *rv, sim_results_t *res)
{
	int rc = sim_rq_report(rv->q, res);
	double bytes = 0;
	for (uint32_t r = 0; rv->events && r < rv->R; r++)
		for (uint32_t i = 0; i < rv->n_inst; i++)
			bytes += (double)kvf_bytes(rv->rep[r].idx[i]);
	/* REC_VIEW_EVENTS_SENT .. REC_VIEW_DELAY_MEAN_MS, in the recorder's order */
	const double m[] = {(double)rv->sent, (double)rv->lost, bytes,
			    rv->msgs ? rv->delay_sum_ns / (double)rv->msgs / 1e6 : 0};
	_Static_assert(sizeof m / sizeof m[0] == REC_VIEW_DELAY_MEAN_MS - REC_VIEW_EVENTS_SENT + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = rec_metric(res, REC_VIEW_EVENTS_SENT + (int)i, m[i]);
	return rc;
}

void sim_rv_set_present(sim_rv_t *rv, uint32_t n)
{
	rv->base.n_inst = n;
}

int sim_rv_owns_view(const sim_rv_t *rv)
{
	return rv && rv->owns;
}

void sim_rv_free(sim_rv_t *rv)
{
	if (!rv)
		return;
	for (uint32_t r = 0; rv->rep && r < rv->R; r++) {
		rv_rep_t *x = &rv->rep[r];
		for (uint32_t i = 0; x->idx && i < rv->n_inst; i++)
			kvf_free(x->idx[i]);
		pol_rview_free(x->tree);
		free(x->idx);
		sim_load_free(x->load);
		free(x->tokens);
	}
	sim_rd_free(rv->rd);
	ev_queue_free(rv->due);
	gsl_rng_free(rv->rng);
	sim_rq_free(rv->q);
	free(rv->rep);
	free(rv->fl);
	free(rv);
}

/* ---- setup --------------------------------------------------------------------------- */

static int rv_check(const pol_view_t *route, const cfg_t *cfg, const pol_view_params_t *p,
		    int events, err_t *e)
{
	if ((events || p->replicas > 1) && route->n_decode)
		return cfg_err_keys(cfg, e, "policy.routing.view,policy.routing.replicas,cluster.disagg",
				    "view = events and replicas > 1 model routers over one pool: "
				    "not available with disaggregated prefill and decode");
	if (!events)
		return 0;
	int filter = p->index == POL_INDEX_BLOOM || p->index == POL_INDEX_CUCKOO;
	if (filter && !(p->index_fpr > 0 && p->index_fpr < 1))
		return cfg_err_keys(cfg, e, "policy.routing.index_fpr,policy.routing.index",
				    "index_fpr = %g: a %s index needs a false-positive rate in (0, 1)",
				    p->index_fpr, p->index == POL_INDEX_BLOOM ? "bloom" : "cuckoo");
	if (p->index == POL_INDEX_TTL && !(p->index_ttl_s * 1e9 >= 1))
		return cfg_err_keys(cfg, e, "policy.routing.index_ttl_s,policy.routing.index",
				    "index_ttl_s = %g: a ttl index needs a lifetime of at least 1 ns",
				    p->index_ttl_s);
	return 0;
}

static const kvf_kind_t rv_kinds[] = {[POL_INDEX_EXACT] = KVF_EXACT,
				      [POL_INDEX_BLOOM] = KVF_BLOOM,
				      [POL_INDEX_CUCKOO] = KVF_CUCKOO,
				      [POL_INDEX_TTL] = KVF_TTL};

/* The index filter of instance i under view parameters p (seed salts it). */
static kvf_params_t rv_filter_params(const sim_ctx_t *s, const pol_view_params_t *p, uint32_t i,
				     uint64_t seed)
{
	return (kvf_params_t){rv_kinds[p->index],
			      p->index_capacity ? p->index_capacity
						: kv_capacity(s->cl.inst[i].kv),
			      p->index_fpr, llround(p->index_ttl_s * 1e9), seed};
}

static int rv_alloc(sim_rv_t *rv, const cfg_t *cfg, int routed)
{
	sim_ctx_t *s = rv->s;
	uint32_t n = rv->n_inst;
	uint64_t seed = rv->seed;
	static const int dists[] = {[POL_DELAY_FIXED] = SIM_RD_FIXED,
				    [POL_DELAY_EXPONENTIAL] = SIM_RD_EXPONENTIAL,
				    [POL_DELAY_LOGNORMAL] = SIM_RD_LOGNORMAL};
	sim_rd_params_t dp = {llround(rv->p.delay_ms * 1e6), llround(rv->p.batch_ms * 1e6),
			      dists[rv->p.delay_dist], rv->p.delay_cv, rng_splitmix64(~seed)};
	if (!(rv->q = sim_rq_new(n)) || !(rv->rep = calloc(rv->R, sizeof *rv->rep)) ||
	    !(rv->rng = gsl_rng_alloc(gsl_rng_mt19937)) ||
	    (rv->events && (!(rv->rd = sim_rd_new(n, &dp)) || !(rv->due = ev_queue_new(64)))))
		return KS_ENOMEM;
	gsl_rng_set(rv->rng, (unsigned long)(seed ? seed : 1));
	for (uint32_t r = 0; r < rv->R; r++) {
		rv_rep_t *x = &rv->rep[r];
		if (rv->R > 1 && (!(x->load = sim_load_new(n)) ||
				  !(x->tokens = calloc(n ? n : 1, sizeof *x->tokens))))
			return KS_ENOMEM;
		if (routed && rv->R > 1 &&
		    !(x->tree = pol_rview_new(n, pol_routing_view_blocks(cfg, s->cl.p.kv_blocks))))
			return KS_ENOMEM;
		if (!rv->events)
			continue;
		if (!(x->idx = calloc(n ? n : 1, sizeof *x->idx)))
			return KS_ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			kvf_params_t fp = rv_filter_params(s, &rv->p, i,
							   rng_splitmix64(seed ^ ((uint64_t)r * n + i)));
			if (!(x->idx[i] = kvf_new(&fp)))
				return KS_ENOMEM;
		}
	}
	return 0;
}

uint64_t sim_rv_index_bytes(const sim_ctx_t *s, const cfg_t *cfg, const pol_view_t *route)
{
	if (!pol_routing_view_events(cfg))
		return 0;
	pol_view_params_t p = pol_routing_view_params(cfg);
	uint64_t need = 0;
	for (uint32_t i = 0; i < route->n_inst; i++) {
		kvf_params_t fp = rv_filter_params(s, &p, i, 0);
		need += (uint64_t)(p.replicas ? p.replicas : 1) * kvf_bytes_for(&fp);
	}
	return need;
}

int sim_rv_setup(sim_ctx_t *s, const cfg_t *cfg, const pol_view_t *route, err_t *e)
{
	pol_view_params_t p = pol_routing_view_params(cfg);
	int events = pol_routing_view_events(cfg);
	if (!s->prm.out.view_quality && !events && p.replicas <= 1)
		return 0;
	int rc = rv_check(route, cfg, &p, events, e);
	if (rc)
		return rc;
	sim_rv_t *rv = s->rvw = calloc(1, sizeof *rv);
	if (!rv)
		return err_set(e, KS_ENOMEM, "out of memory");
	*rv = (sim_rv_t){.s = s, .p = p, .events = events, .owns = events || p.replicas > 1,
			 .R = p.replicas, .n_inst = route->n_inst,
			 .seed = sim_seed_for(s->prm.seed, RV_STREAM), .base = *route, .route = route};
	if (rv_alloc(rv, cfg, !events && pol_routing_view_routed(cfg)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (events && ev_engine_type_new(s->eng, rv_on_wake, rv, &rv->ev_wake))
		return err_set(e, KS_ERUNTIME, "no event type left (EV_MAX_TYPES)");
	for (uint32_t i = 0; i < rv->n_inst; i++)
		kv_store_set_on_ready(s->cl.inst[i].kv, rv_on_ready, &s->hooks[i]);
	return 0;
}

void sim_rv_view(const sim_rv_t *rv, pol_view_t *v)
{
	if (!rv || !rv->owns)
		return;
	v->inst = rv_inst;
	v->match = rv_match;
	v->match_host = rv_match_host;
	v->held_blocks = rv_held_blocks;
	if (rv->events || rv->rep[0].tree)
		v->candidates = NULL; /* the index is not the stores */
	if (rv->R > 1)
		v->least_loaded = rv_least_loaded; /* loads are the replica's own */
}

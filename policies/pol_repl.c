/* pol_repl — replication policies that react to routing or to single
 * triggers: none, reactive_hotspot (Mooncake), early_rdma (the original
 * proposal's rule) and full. Copies the simulator refuses (source KV absent
 * or not yet computed) wait in a retry queue until they are accepted or
 * their deadline passes; causality itself is the simulator's. */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <stdlib.h>
#include <string.h>

/* ---- shared: load order and the retry queue ------------------------------- */

/* Busier = more queued + running requests, then (when tokens is set) more
 * queued prefill tokens. */
/* A prefix shared by the pending copies made from one request or trigger. */
typedef struct pblk {
	uint32_t refs, n;
	uint64_t b[];
} pblk_t;

typedef struct pend {
	const uint64_t *blocks;
	uint32_t n;
	pblk_t *own; /* reference held on blocks; NULL when borrowed */
	int64_t src; /* -1: any instance holding the prefix */
	uint32_t dst;
	pol_class_t cls;
	int spec;
	int64_t deadline;
} pend_t;

typedef struct pendq {
	pend_t *p;
	size_t n, cap, max;
} pendq_t;

static pblk_t *pblk_new(const uint64_t *blocks, uint32_t n)
{
	pblk_t *b = malloc(sizeof *b + n * sizeof *b->b);
	if (!b)
		return NULL;
	b->refs = 0;
	b->n = n;
	memcpy(b->b, blocks, n * sizeof *blocks);
	return b;
}

static void pend_release(pend_t *p)
{
	if (p->own && --p->own->refs == 0)
		free(p->own);
	p->own = NULL;
}

static void pendq_free(pendq_t *q)
{
	for (size_t i = 0; i < q->n; i++)
		pend_release(&q->p[i]);
	free(q->p);
	memset(q, 0, sizeof *q);
}

/* Queues a copy of b's prefix (taking a reference). Bounded: when full, the
 * oldest eighth gives way in one move. */
static int pendq_add(pendq_t *q, pblk_t *b, int64_t src, uint32_t dst, pol_class_t cls, int spec,
                     int64_t deadline)
{
	b->refs++; /* first, so dropping old entries below can never free b */
	if (q->max && q->n >= q->max) {
		size_t drop = q->n / 8 ? q->n / 8 : 1;
		for (size_t i = 0; i < drop; i++)
			pend_release(&q->p[i]);
		memmove(q->p, q->p + drop, (q->n - drop) * sizeof *q->p);
		q->n -= drop;
	}
	if (VEC_GROW(q->p, q->cap, q->n + 1, 16)) {
		b->refs--;
		return KS_ENOMEM;
	}
	q->p[q->n++] = (pend_t){b->b, b->n, b, src, dst, cls, spec, deadline};
	return 0;
}

/* Source for a copy of blocks[0..n) to dst: a holder of the whole prefix
 * with the shortest transfer; -1 when nobody holds it. */
static int64_t pick_source(const pol_view_t *v, const uint64_t *b, uint32_t n, uint32_t dst)
{
	int64_t best = -1, best_t = INT64_MAX;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		if (i == dst || !pol_view_holds(v, v->match, i, b, n))
			continue;
		int64_t t = v->xfer_ns(v->ctx, i, dst, n);
		if (t < best_t) {
			best_t = t;
			best = i;
		}
	}
	return best;
}

/* Tries one copy; 1 issued (or no longer needed), 0 refused, < 0 error.
 * *id: the accepted copy, 0 when none was asked for. */
static int try_copy(const pol_view_t *v, const pol_actions_t *a, const pend_t *p, uint64_t *id)
{
	*id = 0;
	if (pol_view_holds(v, v->match, p->dst, p->blocks, p->n))
		return 1; /* already there */
	int64_t src = p->src >= 0 ? p->src : pick_source(v, p->blocks, p->n, p->dst);
	if (src < 0)
		return 0;
	int rc = a->copy(a->ctx, p->blocks, p->n, (uint32_t)src, p->dst, p->cls, id);
	if (rc < 0)
		return rc;
	if (rc == POL_COPY_REFUSED) {
		*id = 0;
		return 0;
	}
	if (p->spec && a->mark_spec)
		a->mark_spec(a->ctx, p->dst, p->blocks, p->n);
	return 1;
}

/* Told of each pending copy the simulator accepts; 0 or < 0. */
typedef int (*pend_issued_fn)(void *arg, const pend_t *p, uint64_t id);

/* Tries every pending copy once, in order; keeps the refused ones still
 * within their deadline. issued (may be NULL) hears of accepted copies.
 * O(pending) per call. */
static int pendq_run(pendq_t *q, const pol_view_t *v, const pol_actions_t *a, pend_issued_fn issued,
                     void *arg, err_t *e)
{
	int64_t now = v->now(v->ctx);
	size_t k = 0;
	int rc = 0;
	for (size_t i = 0; i < q->n; i++) {
		int done = now > q->p[i].deadline;
		if (!done && !rc) {
			uint64_t id;
			int r = try_copy(v, a, &q->p[i], &id), ri;
			if (r < 0)
				rc = err_set(e, r, "copy request failed");
			else if (id && issued && (ri = issued(arg, &q->p[i], id)) < 0)
				rc = err_set(e, ri, "out of memory");
			done = r > 0;
		}
		if (done)
			pend_release(&q->p[i]);
		else
			q->p[k++] = q->p[i];
	}
	q->n = k;
	return rc;
}

/* ---- none ----------------------------------------------------------------- */

static pol_repl_timing_t none_timing(const void *st)
{
	(void)st;
	return (pol_repl_timing_t){0, 0};
}

const struct pol_replication_ops pol_repl_none = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "none",
             "No replication: a request's missing prefix is fetched on demand or recomputed, "
             "as the simulator's per-request resolution decides by cost.",
             POL_NO_PARAMS, NULL, NULL},
    .timing = none_timing,
};

/* ---- reactive_hotspot ---------------------------------------------------------
 * Mooncake's conductor (Qin et al., FAST '25, sec. 6 / Algorithm 1): when
 * the best remote prefix match exceeds theta x the local one, the routed
 * instance fetches it (a foreground copy) and keeps the copy, which spreads
 * hot prefixes over instances as they are used. */

typedef struct rh_params {
	double hotspot_theta;
	uint32_t hotspot_min_blocks;
} rh_params_t;

static const cfg_tkey_t rh_params[] = {
    POL_KEY("replication", "reactive_hotspot", "hotspot_theta", CFG_FLOAT, "1.5", 1, 1e6, NULL, "",
            "fetch when best remote match > theta x local match (Mooncake's "
            "kvcache_balancing_threshold; its value is not published: own choice)",
            CFG_AT(DOUBLE, rh_params_t, hotspot_theta)),
    POL_KEY("replication", "reactive_hotspot", "hotspot_min_blocks", CFG_INT, "1", 1, 1e6, NULL,
            "blocks", "and the gain is at least this many blocks",
            CFG_AT(U32, rh_params_t, hotspot_min_blocks)),
};

/* Its parameters are its whole state. */
static int rh_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return pol_copy_init(params, sizeof(rh_params_t), state, e);
}

static int rh_on_route(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
                       uint32_t inst, err_t *e)
{
	const rh_params_t *s = st;
	uint32_t local = v->match(v->ctx, inst, r->blocks, r->n_blocks), best = 0, src = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		if (i == inst)
			continue;
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		if (m > best) {
			best = m;
			src = i;
		}
	}
	if (best < local + s->hotspot_min_blocks ||
	    (double)best <= s->hotspot_theta * (double)local)
		return 0;
	uint64_t id;
	int rc = a->copy(a->ctx, r->blocks, best, src, inst, POL_FG, &id);
	if (rc < 0)
		return err_set(e, rc, "copy request failed");
	return 0;
}

const struct pol_replication_ops pol_repl_reactive_hotspot = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "reactive_hotspot",
             "Mooncake conductor hot-spot rule: on routing, fetch the prefix from the "
             "instance with the best match when it exceeds hotspot_theta x the local match, "
             "as a foreground copy, and keep it (Qin et al., FAST '25).",
             POL_PARAMS(rh_params, rh_params_t), rh_init, free},
    .timing = none_timing,
    .on_route = rh_on_route,
};

/* ---- early_rdma ----------------------------------------------------------------
 * The original proposal ("Biting the bullet", bite_the_bullet.py): when a
 * prefix becomes hot, copy it from an instance that holds it until M
 * instances hold it (M counts the source: with 4 instances M = 4 is three
 * copies), and send its later requests to the least-loaded instance holding
 * it. Hot comes from one of two triggers:
 *   forecast: a predictor's forecast entry; the prefix stays active for
 *             early_expire_s after the last tick whose forecast named it,
 *             and every such tick tops its replicas up to M again;
 *   arrival:  the study's own rule, evaluated on every arrival: the key is
 *             a request's first Y blocks, active while X of its arrivals fall
 *             in the last Z seconds; every arrival of an active key re-plans
 *             copies to M (targets by load, stable on index) and routes to
 *             the least-loaded resident instance (random ties).
 * Resident = holds the whole prefix (v->match: landed, computed blocks).
 * Entries sit in an id map keyed by the prefix's last block id, so a
 * request's hint costs one lookup per block (arrival: one), not one per
 * entry; stale entries are dropped when the table has doubled. */

typedef struct er_ent {
	uint64_t key;      /* pb->b[pb->n - 1] */
	pblk_t *pb;        /* the prefix (one reference held) */
	int64_t last_ns;   /* forecast: last tick naming it; arrival: last arrival */
	uint32_t nt, head; /* arrival: times in the ring, next slot */
	int active;        /* arrival: X arrivals within Z at the last one */
} er_ent_t;

typedef struct er_flight {
	uint64_t id, key;
	uint32_t dst;
} er_flight_t;

typedef struct er_params {
	uint32_t early_replicas;
	int early_trigger; /* 1: arrival */
	double early_tick_ms;
	double early_horizon_s;
	double early_expire_s;
	double early_retry_s;
	double early_min_expected;
	int early_route_warm;
	uint32_t early_key_blocks;
	double early_window_s;
	uint32_t early_min_count;
} er_params_t;

typedef struct er_state {
	er_params_t p;
	int nomem;
	int64_t tick_ns, horizon_ns, retry_ns, expire_ns, window_ns;
	pendq_t q;
	pol_idmap_t map; /* key -> index in ent */
	er_ent_t *ent;
	int64_t *times; /* arrival: early_min_count slots per entry, parallel to ent */
	size_t n_ent, cap_ent, gc_at;
	er_flight_t *fl; /* accepted copies that have not ended */
	size_t n_fl, cap_fl;
	uint64_t trig; /* arrival triggers not yet added to the stats */
	gsl_rng *rng;
	pol_inst_t *snap;
	uint32_t *order;
	unsigned char *mark;
	uint32_t n_snap;
	int snap_ok;
} er_state_t;

static const cfg_enum_t er_trigger_map[] = {{"forecast", 0}, {"arrival", 1}, {NULL, 0}};

static const cfg_tkey_t er_params[] = {
    POL_KEY("replication", "early_rdma", "early_replicas", CFG_INT, "4", 1, 1024, NULL, "",
            "M: instances that should hold a hot prefix, its source included (the study's "
            "M = 4, bite_the_bullet.py; there every one of its 4 nodes, here half of the "
            "8-instance default experiment)",
            CFG_AT(U32, er_params_t, early_replicas)),
    POL_KEY("replication", "early_rdma", "early_trigger", CFG_ENUM, "forecast", 0, 0,
            NULL, "",
            "what makes a prefix hot: the predictor's forecast, or the study's own rule on "
            "every arrival (early_min_count arrivals of the first early_key_blocks blocks "
            "within early_window_s; bite_the_bullet.py)",
            CFG_AT_ENUM(er_params_t, early_trigger, er_trigger_map)),
    POL_KEY("replication", "early_rdma", "early_tick_ms", CFG_FLOAT, "100", 0.001, 1e6, NULL, "ms",
            "how often forecasts are checked and refused copies retried",
            CFG_AT(DOUBLE, er_params_t, early_tick_ms)),
    POL_KEY("replication", "early_rdma", "early_horizon_s", CFG_FLOAT, "10", 0.001, 1e6, NULL, "s",
            "forecast horizon asked of the predictor",
            CFG_AT(DOUBLE, er_params_t, early_horizon_s)),
    POL_KEY("replication", "early_rdma", "early_expire_s", CFG_FLOAT, "0", 0, 1e6, NULL, "s",
            "forecast trigger: a prefix stays active (routing hint) this long after the "
            "forecast last named it; 0 = early_horizon_s, the span the forecast spoke for "
            "(own choice)",
            CFG_AT(DOUBLE, er_params_t, early_expire_s)),
    POL_KEY("replication", "early_rdma", "early_retry_s", CFG_FLOAT, "30", 0, 1e6, NULL, "s",
            "how long a refused copy is retried (the source prefill may not be done)",
            CFG_AT(DOUBLE, er_params_t, early_retry_s)),
    POL_KEY("replication", "early_rdma", "early_min_expected", CFG_FLOAT, "0", 0, 1e9, NULL, "",
            "forecast entries expecting fewer arrivals are ignored",
            CFG_AT(DOUBLE, er_params_t, early_min_expected)),
    POL_KEY("replication", "early_rdma", "early_route_warm", CFG_BOOL, "true", 0, 0, NULL, "",
            "route an active prefix's requests to its least-loaded resident instance "
            "(reported as spec.hint_routed)",
            CFG_AT(BOOL, er_params_t, early_route_warm)),
    POL_KEY("replication", "early_rdma", "early_key_blocks", CFG_INT, "256", 1, 1e6, NULL, "blocks",
            "Y (arrival trigger): the key is a request's first Y blocks; shorter requests "
            "never trigger (the study: 256 blocks of 256 tokens)",
            CFG_AT(U32, er_params_t, early_key_blocks)),
    POL_KEY("replication", "early_rdma", "early_window_s", CFG_FLOAT, "1", 1e-6, 1e6, NULL, "s",
            "Z (arrival trigger): arrivals of a key older than this are forgotten (the "
            "study: 1 s)",
            CFG_AT(DOUBLE, er_params_t, early_window_s)),
    POL_KEY("replication", "early_rdma", "early_min_count", CFG_INT, "2", 1, 1024, NULL, "",
            "X (arrival trigger): arrivals within Z that make a key active (the study: 2)",
            CFG_AT(U32, er_params_t, early_min_count)),
};

static void er_free(void *st)
{
	er_state_t *s = st;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_ent; i++)
		if (--s->ent[i].pb->refs == 0)
			free(s->ent[i].pb);
	pendq_free(&s->q);
	pol_idmap_free(&s->map);
	if (s->rng)
		gsl_rng_free(s->rng);
	FREE_ALL(s->ent, s->times, s->fl, s->snap, s->order, s->mark, s);
}

static int er_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const er_params_t *p = params;
	er_state_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->p = *p;
	s->tick_ns = (int64_t)(p->early_tick_ms * 1e6);
	s->horizon_ns = (int64_t)(p->early_horizon_s * 1e9);
	double exp_s = p->early_expire_s;
	s->expire_ns = exp_s > 0 ? (int64_t)(exp_s * 1e9) : s->horizon_ns;
	s->retry_ns = (int64_t)(p->early_retry_s * 1e9);
	s->window_ns = (int64_t)(p->early_window_s * 1e9);
	s->q.max = 65536;
	s->gc_at = 64;
	s->rng = pol_rng_new(seed);
	if (!s->rng || pol_idmap_init(&s->map, s->gc_at)) {
		er_free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	*state = s;
	return 0;
}

static pol_repl_timing_t er_timing(const void *st)
{
	const er_state_t *s = st;
	/* the arrival trigger reads no forecast: ticks only retry refusals */
	return (pol_repl_timing_t){s->tick_ns, s->p.early_trigger ? 0 : s->horizon_ns};
}

static er_ent_t *er_find(er_state_t *s, uint64_t key)
{
	uint32_t i;
	return pol_idmap_get(&s->map, key, &i) ? &s->ent[i] : NULL;
}

/* Whether an entry can no longer act: past its expiry, or (arrival) every
 * arrival it counted is older than Z. */
static int er_stale(const er_state_t *s, const er_ent_t *en, int64_t now)
{
	return now - en->last_ns > (s->p.early_trigger ? s->window_ns : s->expire_ns);
}

static void er_drop(er_state_t *s, size_t i)
{
	er_ent_t *en = &s->ent[i];
	if (--en->pb->refs == 0) /* pending copies may still hold it */
		free(en->pb);
	pol_idmap_del(&s->map, en->key);
	size_t last = --s->n_ent;
	if (i == last)
		return;
	s->ent[i] = s->ent[last];
	if (s->times)
		memcpy(s->times + i * s->p.early_min_count, s->times + last * s->p.early_min_count,
		       s->p.early_min_count * sizeof *s->times);
	pol_idmap_put(&s->map, s->ent[i].key, (uint32_t)i); /* overwrites: cannot fail */
}

/* A new entry for blocks[0..n) at now; stale entries go first once the
 * table has doubled since the last sweep (amortised O(1)). NULL on ENOMEM. */
static er_ent_t *er_add(er_state_t *s, const uint64_t *blocks, uint32_t n, int64_t now)
{
	if (s->n_ent >= s->gc_at) {
		for (size_t i = 0; i < s->n_ent;)
			if (er_stale(s, &s->ent[i], now))
				er_drop(s, i);
			else
				i++;
		s->gc_at = 2 * s->n_ent > 64 ? 2 * s->n_ent : 64;
	}
	if (s->n_ent == s->cap_ent) {
		/* times holds min_count arrival times per entry */
		size_t cap = vec_next_cap(s->cap_ent, s->n_ent + 1, 16);
		if (!cap || VEC_RESIZE(s->ent, cap) ||
		    (s->p.early_trigger && VEC_RESIZE(s->times, cap * s->p.early_min_count)))
			return NULL;
		s->cap_ent = cap;
	}
	pblk_t *pb = pblk_new(blocks, n);
	if (!pb || pol_idmap_put(&s->map, blocks[n - 1], (uint32_t)s->n_ent)) {
		free(pb);
		return NULL;
	}
	pb->refs = 1;
	er_ent_t *en = &s->ent[s->n_ent++];
	*en = (er_ent_t){blocks[n - 1], pb, now, 0, 0, 0};
	return en;
}

static int er_flight_add(er_state_t *s, uint64_t id, uint64_t key, uint32_t dst)
{
	if (VEC_GROW(s->fl, s->cap_fl, s->n_fl + 1, 16))
		return KS_ENOMEM;
	s->fl[s->n_fl++] = (er_flight_t){id, key, dst};
	return 0;
}

static int er_issued(void *arg, const pend_t *p, uint64_t id)
{
	return er_flight_add(arg, id, p->blocks[p->n - 1], p->dst);
}

static void er_on_copy_end(void *st, uint64_t id, int landed)
{
	(void)landed; /* landed: match() shows it; cancelled: the target is free again */
	er_state_t *s = st;
	for (size_t i = 0; i < s->n_fl; i++)
		if (s->fl[i].id == id) {
			s->fl[i] = s->fl[--s->n_fl];
			return;
		}
}

/* Whether a copy of key to dst is in flight or waiting for a retry. */
static int er_covered(const er_state_t *s, uint64_t key, uint32_t dst)
{
	for (size_t i = 0; i < s->n_fl; i++)
		if (s->fl[i].key == key && s->fl[i].dst == dst)
			return 1;
	for (size_t i = 0; i < s->q.n; i++)
		if (s->q.p[i].dst == dst && s->q.p[i].blocks[s->q.p[i].n - 1] == key)
			return 1;
	return 0;
}

/* Instances by load, least first, stable on index (insertion sort: instance
 * counts are small). The arrival trigger orders by request count alone, as
 * the study does; the forecast trigger then by queued prefill tokens. */
static int er_snapshot(er_state_t *s, const pol_view_t *v)
{
	if (s->n_snap != v->n_inst) {
		if (VEC_RESIZE(s->snap, v->n_inst) || VEC_RESIZE(s->order, v->n_inst) ||
		    VEC_RESIZE(s->mark, v->n_inst))
			return KS_ENOMEM;
		s->n_snap = v->n_inst;
	}
	pol_snapshot_by_load(v, s->snap, s->order, !s->p.early_trigger);
	s->snap_ok = 1;
	return 0;
}

/* Copies en's prefix to the least-loaded instances lacking it until the
 * instances holding it, plus those it is in flight or pending to, reach M.
 * Nothing while no instance holds it (there is no source yet). */
static int er_plan(er_state_t *s, const pol_view_t *v, const pol_actions_t *a, er_ent_t *en,
                   err_t *e)
{
	const uint64_t *b = en->pb->b;
	uint32_t n = en->pb->n, have = 0;
	if (!s->snap_ok && er_snapshot(s, v))
		return err_set(e, KS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < v->n_inst; i++)
		have += s->mark[i] = v->match(v->ctx, i, b, n) >= n;
	if (!have)
		return 0;
	for (uint32_t i = 0; i < v->n_inst; i++)
		if (!s->mark[i] && er_covered(s, en->key, i))
			have += s->mark[i] = 1;
	int64_t now = v->now(v->ctx);
	for (uint32_t j = 0; j < v->n_inst && have < s->p.early_replicas; j++) {
		uint32_t dst = s->order[j];
		if (s->mark[dst])
			continue;
		have++;
		pend_t p = {b, n, NULL, -1, dst, POL_BG, 1, 0};
		uint64_t id;
		int rc = try_copy(v, a, &p, &id);
		if (rc < 0)
			return err_set(e, rc, "copy request failed");
		if (rc == 0) /* refused: retried from the queue */
			rc = pendq_add(&s->q, en->pb, -1, dst, POL_BG, 1, now + s->retry_ns);
		else
			rc = id ? er_flight_add(s, id, en->key, dst) : 0;
		if (rc)
			return err_set(e, rc, "out of memory");
	}
	return 0;
}

/* Adds the arrival triggers counted in route_hint (which has no stats). */
static int er_flush(er_state_t *s, const pol_actions_t *a, err_t *e)
{
	if (s->nomem)
		return err_set(e, KS_ENOMEM, "out of memory");
	if (a->stats)
		a->stats->triggers += s->trig;
	s->trig = 0;
	s->snap_ok = 0;
	return 0;
}

static int er_on_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                      const pol_forecast_t *fc, err_t *e)
{
	er_state_t *s = st;
	int rc = er_flush(s, a, e);
	if (rc || (rc = pendq_run(&s->q, v, a, er_issued, s, e)))
		return rc;
	int64_t now = v->now(v->ctx);
	for (size_t k = 0; !s->p.early_trigger && fc && k < fc->n; k++) {
		const pol_fc_t *f = &fc->e[k];
		if (!f->n_blocks || f->expected < s->p.early_min_expected)
			continue;
		er_ent_t *en = er_find(s, f->blocks[f->n_blocks - 1]);
		if (!en || er_stale(s, en, now)) { /* (re)fires */
			if (!en && !(en = er_add(s, f->blocks, f->n_blocks, now)))
				return err_set(e, KS_ENOMEM, "out of memory");
			if (a->stats)
				a->stats->triggers++;
		}
		en->last_ns = now;
		if ((rc = er_plan(s, v, a, en, e)))
			return rc;
	}
	return 0;
}

/* The least-loaded instance holding blocks[0..n), ties drawn from the
 * policy's stream (reservoir sampling); 0 when none holds it. */
static int er_least_loaded(er_state_t *s, const pol_view_t *v, const uint64_t *b, uint32_t n,
                           uint32_t *inst)
{
	pol_inst_t best, cur;
	unsigned long ties = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		if (v->match(v->ctx, i, b, n) < n)
			continue;
		v->inst(v->ctx, i, &cur);
		if (!ties || pol_inst_busier(&best, &cur, !s->p.early_trigger)) {
			best = cur;
			*inst = i;
			ties = 1;
		} else if (!pol_inst_busier(&cur, &best, !s->p.early_trigger) &&
		           gsl_rng_uniform_int(s->rng, ++ties) == 0) {
			*inst = i;
		}
	}
	return ties > 0;
}

/* Arrival trigger: counts r's arrival for its key; the key's entry, NULL
 * when r is too short to have one (or on ENOMEM, reported later). */
static er_ent_t *er_arrive(er_state_t *s, const pol_req_t *r)
{
	if (r->n_blocks < s->p.early_key_blocks)
		return NULL;
	er_ent_t *en = er_find(s, r->blocks[s->p.early_key_blocks - 1]);
	if (!en && !(en = er_add(s, r->blocks, s->p.early_key_blocks, r->arrival_ns))) {
		s->nomem = 1;
		return NULL;
	}
	int64_t *t = s->times + (size_t)(en - s->ent) * s->p.early_min_count;
	t[en->head] = r->arrival_ns;
	en->head = (en->head + 1) % s->p.early_min_count;
	if (en->nt < s->p.early_min_count)
		en->nt++;
	en->last_ns = r->arrival_ns;
	/* with the ring full, head is the oldest of the last X arrivals */
	int active = en->nt == s->p.early_min_count && r->arrival_ns - t[en->head] <= s->window_ns;
	s->trig += active && !en->active;
	en->active = active;
	return en;
}

static int er_route_hint(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	er_state_t *s = st;
	if (s->p.early_trigger) {
		const er_ent_t *en = er_arrive(s, r);
		return en && en->active && s->p.early_route_warm &&
		       er_least_loaded(s, v, en->pb->b, en->pb->n, inst);
	}
	if (!s->p.early_route_warm || !s->n_ent)
		return 0;
	int64_t now = v->now(v->ctx);
	for (uint32_t n = r->n_blocks; n > 0; n--) { /* the longest active prefix */
		const er_ent_t *en = er_find(s, r->blocks[n - 1]);
		if (en && en->pb->n == n && !er_stale(s, en, now))
			return er_least_loaded(s, v, r->blocks, n, inst);
	}
	return 0;
}

/* Arrival trigger: every arrival of an active key re-plans its copies. */
static int er_on_route(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
                       uint32_t inst, err_t *e)
{
	(void)inst;
	er_state_t *s = st;
	int rc = er_flush(s, a, e);
	if (rc || !s->p.early_trigger || r->n_blocks < s->p.early_key_blocks)
		return rc;
	er_ent_t *en = er_find(s, r->blocks[s->p.early_key_blocks - 1]);
	return en && en->active ? er_plan(s, v, a, en, e) : 0;
}

const struct pol_replication_ops pol_repl_early_rdma = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "early_rdma",
             "The original proposal's rule (Biting the bullet, bite_the_bullet.py): when a "
             "prefix turns hot (a forecast entry, or with early_trigger = arrival the study's "
             "X arrivals of the first Y blocks within Z seconds), copy it from an instance "
             "holding it to the least-loaded instances lacking it until early_replicas "
             "instances hold it, source included (background speculative copies; refusals "
             "retried for early_retry_s), top the replicas up while it stays hot, and route "
             "its requests to the least-loaded resident instance while it is active.",
             POL_PARAMS(er_params, er_params_t), er_init, er_free},
    .timing = er_timing,
    .on_route = er_on_route,
    .on_tick = er_on_tick,
    .on_copy_end = er_on_copy_end,
    .route_hint = er_route_hint,
};

/* ---- full ------------------------------------------------------------------------
 * Every routed request's prefix is copied to every other instance
 * (background, speculative): the upper bound on both benefit and waste. */

typedef struct full_state {
	int64_t tick_ns, retry_ns;
	pendq_t q;
} full_state_t;

typedef struct full_params {
	double full_tick_ms;
	double full_retry_s;
	uint32_t full_max_pending;
} full_params_t;

static const cfg_tkey_t full_params[] = {
    POL_KEY("replication", "full", "full_tick_ms", CFG_FLOAT, "100", 0.001, 1e6, NULL, "ms",
            "how often refused copies are retried",
            CFG_AT(DOUBLE, full_params_t, full_tick_ms)),
    POL_KEY("replication", "full", "full_retry_s", CFG_FLOAT, "60", 0, 1e6, NULL, "s",
            "how long a refused copy is retried (covers the source prefill)",
            CFG_AT(DOUBLE, full_params_t, full_retry_s)),
    POL_KEY("replication", "full", "full_max_pending", CFG_INT, "65536", 1, 1e9, NULL, "",
            "pending copies kept (oldest dropped)",
            CFG_AT(U32, full_params_t, full_max_pending)),
};

static int full_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const full_params_t *p = params;
	(void)seed;
	full_state_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->tick_ns = (int64_t)(p->full_tick_ms * 1e6);
	s->retry_ns = (int64_t)(p->full_retry_s * 1e9);
	s->q.max = (size_t)p->full_max_pending;
	*state = s;
	return 0;
}

static void full_free(void *st)
{
	full_state_t *s = st;
	pendq_free(&s->q);
	free(s);
}

static pol_repl_timing_t full_timing(const void *st)
{
	const full_state_t *s = st;
	return (pol_repl_timing_t){s->tick_ns, 0};
}

static int full_on_route(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
                         uint32_t inst, err_t *e)
{
	full_state_t *s = st;
	if (!r->n_blocks)
		return 0;
	int64_t now = v->now(v->ctx);
	pblk_t *pb = pblk_new(r->blocks, r->n_blocks);
	if (!pb)
		return err_set(e, KS_ENOMEM, "out of memory");
	for (uint32_t d = 0; d < v->n_inst; d++)
		if (d != inst && pendq_add(&s->q, pb, inst, d, POL_BG, 1, now + s->retry_ns)) {
			if (!pb->refs)
				free(pb);
			return err_set(e, KS_ENOMEM, "out of memory");
		}
	if (!pb->refs) /* a single instance: nowhere to copy */
		free(pb);
	if (a->stats)
		a->stats->triggers++;
	return 0;
}

static int full_on_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                        const pol_forecast_t *fc, err_t *e)
{
	(void)fc;
	full_state_t *s = st;
	return pendq_run(&s->q, v, a, NULL, NULL, e);
}

const struct pol_replication_ops pol_repl_full = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "full",
             "Replicate everything everywhere: every routed request's prefix is copied from "
             "its instance to all others (background, speculative) once its KV exists. The "
             "upper bound on benefit and on waste.",
             POL_PARAMS(full_params, full_params_t), full_init, full_free},
    .timing = full_timing,
    .on_route = full_on_route,
    .on_tick = full_on_tick,
};

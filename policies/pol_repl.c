/* pol_repl — replication policies that react to routing or to single
 * triggers: none, reactive_hotspot (Mooncake), early_rdma (the original
 * proposal's rule) and full. Copies the simulator refuses (source KV absent
 * or not yet computed) wait in a retry queue until they are accepted or
 * their deadline passes; causality itself is the simulator's. */
#include "policies/pol_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- shared: load order and the retry queue ------------------------------- */

/* Busier = more queued + running requests, then more queued prefill tokens. */
static int busier(const pol_inst_t *a, const pol_inst_t *b)
{
	uint64_t la = (uint64_t)a->waiting + a->running, lb = (uint64_t)b->waiting + b->running;
	if (la != lb)
		return la > lb;
	return a->prefill_tokens > b->prefill_tokens;
}

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
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 16;
		pend_t *p = realloc(q->p, cap * sizeof *p);
		if (!p) {
			b->refs--;
			return KS_ENOMEM;
		}
		q->p = p;
		q->cap = cap;
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
		if (i == dst || v->match(v->ctx, i, b, n) < n)
			continue;
		int64_t t = v->xfer_ns(v->ctx, i, dst, n);
		if (t < best_t) {
			best_t = t;
			best = i;
		}
	}
	return best;
}

/* Tries one copy; 1 issued (or no longer needed), 0 refused, < 0 error. */
static int try_copy(const pol_view_t *v, const pol_actions_t *a, const pend_t *p)
{
	if (v->match(v->ctx, p->dst, p->blocks, p->n) >= p->n)
		return 1; /* already there */
	int64_t src = p->src >= 0 ? p->src : pick_source(v, p->blocks, p->n, p->dst);
	if (src < 0)
		return 0;
	uint64_t id;
	int rc = a->copy(a->ctx, p->blocks, p->n, (uint32_t)src, p->dst, p->cls, &id);
	if (rc < 0)
		return rc;
	if (rc == POL_COPY_REFUSED)
		return 0;
	if (p->spec && a->mark_spec)
		a->mark_spec(a->ctx, p->dst, p->blocks, p->n);
	return 1;
}

/* Tries every pending copy once, in order; keeps the refused ones still
 * within their deadline. O(pending) per call. */
static int pendq_run(pendq_t *q, const pol_view_t *v, const pol_actions_t *a, err_t *e)
{
	int64_t now = v->now(v->ctx);
	size_t k = 0;
	int rc = 0;
	for (size_t i = 0; i < q->n; i++) {
		int done = now > q->p[i].deadline;
		if (!done && !rc) {
			int r = try_copy(v, a, &q->p[i]);
			if (r < 0)
				rc = err_set(e, r, "copy request failed");
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
             NULL, 0, NULL, NULL},
    .timing = none_timing,
};

/* ---- reactive_hotspot ---------------------------------------------------------
 * Mooncake's conductor (Qin et al., FAST '25, sec. 6 / Algorithm 1): when
 * the best remote prefix match exceeds theta x the local one, the routed
 * instance fetches it (a foreground copy) and keeps the copy, which spreads
 * hot prefixes over instances as they are used. */

typedef struct rh_state {
	double theta;
	uint32_t min_blocks;
} rh_state_t;

static const cfg_key_t rh_params[] = {
    POL_KEY("replication", "reactive_hotspot", "hotspot_theta", CFG_FLOAT, "1.5", 1, 1e6, NULL, "",
            "fetch when best remote match > theta x local match (Mooncake's "
            "kvcache_balancing_threshold; its value is not published: own choice)"),
    POL_KEY("replication", "reactive_hotspot", "hotspot_min_blocks", CFG_INT, "1", 1, 1e6, NULL,
            "blocks", "and the gain is at least this many blocks"),
};

static int rh_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	rh_state_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->theta = pol_param_num(p, "hotspot_theta");
	s->min_blocks = (uint32_t)pol_param_num(p, "hotspot_min_blocks");
	*state = s;
	return 0;
}

static int rh_on_route(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
                       uint32_t inst, err_t *e)
{
	rh_state_t *s = st;
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
	if (best < local + s->min_blocks || (double)best <= s->theta * (double)local)
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
             rh_params, sizeof rh_params / sizeof rh_params[0], rh_init, free},
    .timing = none_timing,
    .on_route = rh_on_route,
};

/* ---- early_rdma ----------------------------------------------------------------
 * The original proposal: when the predictor fires for a prefix (a forecast
 * entry not seen before), copy it from an instance holding it to the M
 * least-busy instances that lack it (background, speculative), and route
 * later requests of that prefix to the least-busy warm instance. */

#define ER_FIRED_MAX 4096

typedef struct er_fired {
	uint64_t key;
	uint32_t n;
} er_fired_t;

typedef struct er_state {
	uint32_t m;
	int64_t tick_ns, horizon_ns, retry_ns;
	double min_expected;
	pendq_t q;
	er_fired_t fired[ER_FIRED_MAX];
	size_t n_fired, next_fired; /* ring */
	pol_inst_t *snap;
	uint32_t *order;
	uint32_t n_snap;
} er_state_t;

static const cfg_key_t er_params[] = {
    POL_KEY("replication", "early_rdma", "early_replicas", CFG_INT, "2", 1, 1024, NULL, "",
            "M: instances a fired prefix is copied to (own choice)"),
    POL_KEY("replication", "early_rdma", "early_tick_ms", CFG_FLOAT, "100", 0.001, 1e6, NULL, "ms",
            "how often forecasts are checked and refused copies retried"),
    POL_KEY("replication", "early_rdma", "early_horizon_s", CFG_FLOAT, "10", 0.001, 1e6, NULL, "s",
            "forecast horizon asked of the predictor"),
    POL_KEY("replication", "early_rdma", "early_retry_s", CFG_FLOAT, "30", 0, 1e6, NULL, "s",
            "how long a refused copy is retried (the source prefill may not be done)"),
    POL_KEY("replication", "early_rdma", "early_min_expected", CFG_FLOAT, "0", 0, 1e9, NULL, "",
            "forecast entries expecting fewer arrivals are ignored"),
    POL_KEY("replication", "early_rdma", "early_route_warm", CFG_BOOL, "true", 0, 0, NULL, "",
            "route requests of a replicated prefix to its least-busy warm instance"),
};

typedef struct er_full {
	er_state_t s;
	int route_warm;
} er_full_t;

static int er_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	er_full_t *f = calloc(1, sizeof *f);
	if (!f)
		return err_set(e, KS_ENOMEM, "out of memory");
	er_state_t *s = &f->s;
	s->m = (uint32_t)pol_param_num(p, "early_replicas");
	s->tick_ns = (int64_t)(pol_param_num(p, "early_tick_ms") * 1e6);
	s->horizon_ns = (int64_t)(pol_param_num(p, "early_horizon_s") * 1e9);
	s->retry_ns = (int64_t)(pol_param_num(p, "early_retry_s") * 1e9);
	s->min_expected = pol_param_num(p, "early_min_expected");
	s->q.max = 65536;
	f->route_warm = pol_param_num(p, "early_route_warm") != 0;
	*state = f;
	return 0;
}

static void er_free(void *st)
{
	er_full_t *f = st;
	pendq_free(&f->s.q);
	free(f->s.snap);
	free(f->s.order);
	free(f);
}

static pol_repl_timing_t er_timing(const void *st)
{
	const er_state_t *s = &((const er_full_t *)st)->s;
	return (pol_repl_timing_t){s->tick_ns, s->horizon_ns};
}

static int er_was_fired(const er_state_t *s, const uint64_t *b, uint32_t n)
{
	for (size_t i = 0; i < s->n_fired; i++)
		if (s->fired[i].n == n && s->fired[i].key == b[n - 1])
			return 1;
	return 0;
}

static int snapshot(er_state_t *s, const pol_view_t *v)
{
	if (s->n_snap != v->n_inst) {
		pol_inst_t *sn = realloc(s->snap, v->n_inst * sizeof *sn);
		uint32_t *o = realloc(s->order, v->n_inst * sizeof *o);
		if (sn)
			s->snap = sn;
		if (o)
			s->order = o;
		if (!sn || !o)
			return KS_ENOMEM;
		s->n_snap = v->n_inst;
	}
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &s->snap[i]);
		s->order[i] = i;
	}
	/* least busy first, stable on index (insertion sort: instance counts are small) */
	for (uint32_t i = 1; i < v->n_inst; i++)
		for (uint32_t j = i;
		     j > 0 && busier(&s->snap[s->order[j - 1]], &s->snap[s->order[j]]); j--) {
			uint32_t x = s->order[j];
			s->order[j] = s->order[j - 1];
			s->order[j - 1] = x;
		}
	return 0;
}

static int er_on_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                      const pol_forecast_t *fc, err_t *e)
{
	er_state_t *s = &((er_full_t *)st)->s;
	int64_t now = v->now(v->ctx);
	if (snapshot(s, v))
		return err_set(e, KS_ENOMEM, "out of memory");
	for (size_t k = 0; fc && k < fc->n; k++) {
		const pol_fc_t *f = &fc->e[k];
		if (!f->n_blocks || f->expected < s->min_expected ||
		    er_was_fired(s, f->blocks, f->n_blocks))
			continue;
		s->fired[s->next_fired] = (er_fired_t){f->blocks[f->n_blocks - 1], f->n_blocks};
		s->next_fired = (s->next_fired + 1) % ER_FIRED_MAX;
		if (s->n_fired < ER_FIRED_MAX)
			s->n_fired++;
		if (a->stats)
			a->stats->triggers++;
		uint32_t placed = 0;
		pblk_t *pb = NULL;
		for (uint32_t j = 0; j < v->n_inst && placed < s->m; j++) {
			uint32_t dst = s->order[j];
			if (v->match(v->ctx, dst, f->blocks, f->n_blocks) >= f->n_blocks)
				continue; /* already warm: not one of the M targets */
			placed++;
			pend_t p = {f->blocks, f->n_blocks, NULL, -1, dst, POL_BG, 1, 0};
			int rc = try_copy(v, a, &p);
			if (rc < 0)
				return err_set(e, rc, "copy request failed");
			if (rc)
				continue;
			if (!pb && !(pb = pblk_new(f->blocks, f->n_blocks)))
				return err_set(e, KS_ENOMEM, "out of memory");
			if (pendq_add(&s->q, pb, -1, dst, POL_BG, 1, now + s->retry_ns)) {
				if (!pb->refs)
					free(pb);
				return err_set(e, KS_ENOMEM, "out of memory");
			}
		}
	}
	return pendq_run(&s->q, v, a, e);
}

static int er_route_hint(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	er_full_t *f = st;
	er_state_t *s = &f->s;
	if (!f->route_warm)
		return 0;
	uint32_t len = 0;
	for (size_t i = 0; i < s->n_fired; i++) {
		uint32_t n = s->fired[i].n;
		if (n > len && n <= r->n_blocks && r->blocks[n - 1] == s->fired[i].key)
			len = n;
	}
	if (!len)
		return 0;
	int found = 0;
	pol_inst_t best, cur;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		if (v->match(v->ctx, i, r->blocks, len) < len)
			continue;
		v->inst(v->ctx, i, &cur);
		if (!found || busier(&best, &cur)) {
			best = cur;
			*inst = i;
			found = 1;
		}
	}
	return found;
}

const struct pol_replication_ops pol_repl_early_rdma = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "early_rdma",
             "The original proposal's rule: when the predictor fires for a prefix (pair it "
             "with repeat_count for the X-repeats-in-Z-seconds trigger), copy it from an "
             "instance that holds it to the early_replicas least-busy instances lacking it, "
             "as background speculative copies retried until the source KV exists, and route "
             "later requests of that prefix to the least-busy warm instance.",
             er_params, sizeof er_params / sizeof er_params[0], er_init, er_free},
    .timing = er_timing,
    .on_tick = er_on_tick,
    .route_hint = er_route_hint,
};

/* ---- full ------------------------------------------------------------------------
 * Every routed request's prefix is copied to every other instance
 * (background, speculative): the upper bound on both benefit and waste. */

typedef struct full_state {
	int64_t tick_ns, retry_ns;
	pendq_t q;
} full_state_t;

static const cfg_key_t full_params[] = {
    POL_KEY("replication", "full", "full_tick_ms", CFG_FLOAT, "100", 0.001, 1e6, NULL, "ms",
            "how often refused copies are retried"),
    POL_KEY("replication", "full", "full_retry_s", CFG_FLOAT, "60", 0, 1e6, NULL, "s",
            "how long a refused copy is retried (covers the source prefill)"),
    POL_KEY("replication", "full", "full_max_pending", CFG_INT, "65536", 1, 1e9, NULL, "",
            "pending copies kept (oldest dropped)"),
};

static int full_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	full_state_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->tick_ns = (int64_t)(pol_param_num(p, "full_tick_ms") * 1e6);
	s->retry_ns = (int64_t)(pol_param_num(p, "full_retry_s") * 1e9);
	s->q.max = (size_t)pol_param_num(p, "full_max_pending");
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
	return pendq_run(&s->q, v, a, e);
}

const struct pol_replication_ops pol_repl_full = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "full",
             "Replicate everything everywhere: every routed request's prefix is copied from "
             "its instance to all others (background, speculative) once its KV exists. The "
             "upper bound on benefit and on waste.",
             full_params, sizeof full_params / sizeof full_params[0], full_init, full_free},
    .timing = full_timing,
    .on_route = full_on_route,
    .on_tick = full_on_tick,
};

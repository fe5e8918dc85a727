/* pol_pred_lookahead — forecasts from what the serving system already
 * knows instead of from arrival statistics. Two parts, each switchable:
 *
 *  - queue (la_queue): a routed request that waits in its instance's queue
 *    will need its prompt there when its prefill starts. Its longest prefix
 *    that an earlier arrival's prompt also holds (so it is computed, or
 *    being computed, somewhere, unless evicted since) is forecast for that
 *    instance from its arrival until it is admitted (pol_req_event_t
 *    STARTED) or ends. kvsim routes every arrival at once, so there is no
 *    queue at the router: the instances' waiting queues are all of it.
 *  - session (la_session, CachedAttention, Gao et al., USENIX ATC '24):
 *    when a request completes, its context is the prefix of its session's
 *    next turn. Traces name sessions (tr_request_t.session_id) or not; the
 *    next turn is found by the chain rule either way: a turn's blocks
 *    extend the previous turn's (Mooncake hash_ids: next turn = previous
 *    prompt + previous output + new message). So the forecast prefix is the
 *    finished prompt's full blocks, plus its output's full blocks when the
 *    request has a session id (the trace reader then continues the chain
 *    over the output as the session's history, traces/tr.h; without one
 *    those ids are the request's own and no later prompt starts with them).
 *    It is forecast for the instance the turn ran on (where cache-affine
 *    routers send the next turn; the replication policy adds its own
 *    targets) for la_session_s after the turn ended, until a request whose
 *    prompt extends it arrives (the next turn came) or the window ends.
 *
 * Expected arrivals: 1 per queued request (certain demand, still to reach
 * its instance's prefill) and la_next_p per open session (the chance that a
 * next turn comes at all; when within the window is unknown).
 * Entries with the same prefix are merged: expectations add up and the
 * instances are ranked by their share. Memory: the ids of the requests in
 * the system and of at most la_capacity open sessions, and a prefix table
 * of la_table nodes (older half dropped when full, pol_int.h).
 */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <stdlib.h>
#include <string.h>

#define NS 1e9

typedef struct la_params {
	int la_queue;
	int la_session;
	uint32_t la_min_blocks;
	double la_session_s;
	double la_next_p;
	uint32_t la_capacity;
	uint32_t la_table;
} la_params_t;

/* A routed request still in the system. */
typedef struct la_live {
	uint64_t id;
	uint64_t *blocks; /* max(n_q, n_next) ids, owned */
	uint32_t n_q;     /* queue prefix while queued; 0: not (or no longer) forecast */
	uint32_t n_next;  /* its next turn's prefix (0: none) */
	int32_t inst;
} la_live_t;

/* A finished turn waiting for its next one. */
typedef struct la_sess {
	uint64_t *blocks; /* n ids, owned */
	uint32_t n;
	int32_t inst;
	int64_t t_end;
} la_sess_t;

/* One forecast contribution, before merging by prefix. */
typedef struct la_rec {
	uint64_t key;
	const uint64_t *blocks;
	uint32_t n;
	int32_t inst;
	double w;
} la_rec_t;

typedef struct la_state {
	la_params_t p;
	int64_t session_ns;
	pol_ptab_t *tab;
	la_live_t *live;
	size_t n_live, cap_live;
	pol_idmap_t live_ix; /* request id -> index in live */
	/* ids admitted before observe saw them: the simulator tells the
	 * predictor of an arrival after routing it, and an idle instance
	 * admits it in that same call */
	pol_idmap_t started;
	la_sess_t *sess;
	size_t n_sess, cap_sess;
	pol_idmap_t sess_ix; /* last block id -> index in sess */
	la_rec_t *rec;
	size_t cap_rec;
	pol_fcbuf_t out;
} la_state_t;

static const cfg_tkey_t la_params[] = {
    POL_KEY("predictor", "lookahead", "la_queue", CFG_BOOL, "true", 0, 0, NULL, "",
            "forecast the shared prefix of each request waiting in an instance's queue for that "
            "instance (on: it is demand that is certain)",
            CFG_AT(BOOL, la_params_t, la_queue)),
    POL_KEY("predictor", "lookahead", "la_session", CFG_BOOL, "true", 0, 0, NULL, "",
            "forecast a finished request's context as its session's next prefix (on: 37% of "
            "Mooncake conversation turns of >= 2 blocks are extended by a later turn)",
            CFG_AT(BOOL, la_params_t, la_session)),
    POL_KEY("predictor", "lookahead", "la_min_blocks", CFG_INT, "2", 1, 1e6, NULL, "blocks",
            "shortest prefix forecast (2: longer than the one-block system prompt every "
            "Mooncake request shares, which every instance already holds)",
            CFG_AT(U32, la_params_t, la_min_blocks)),
    POL_KEY("predictor", "lookahead", "la_session_s", CFG_FLOAT, "300", 1e-3, 1e7, NULL, "s",
            "lookahead horizon of a session: how long after a turn ends its next turn is "
            "forecast (300 s: 79% of the Mooncake conversation trace's next turns come within "
            "300 s of the previous turn's arrival, median 123 s)",
            CFG_AT(DOUBLE, la_params_t, la_session_s)),
    POL_KEY("predictor", "lookahead", "la_next_p", CFG_FLOAT, "0.37", 0, 1e3, NULL, "",
            "expected next turns per finished turn (0.37: share of Mooncake conversation "
            "requests of >= 2 full blocks whose prompt a later request extends)",
            CFG_AT(DOUBLE, la_params_t, la_next_p)),
    POL_KEY("predictor", "lookahead", "la_capacity", CFG_INT, "65536", 1, 1e8, NULL, "",
            "open sessions tracked; a turn ending while they are all open is not (own choice: "
            "about 60 times the turns the Mooncake trace ends in 300 s)",
            CFG_AT(U32, la_params_t, la_capacity)),
    POL_KEY("predictor", "lookahead", "la_table", CFG_INT, "1048576", 64, 1e9, NULL, "blocks",
            "prefix-table capacity used to find the prefixes earlier prompts hold",
            CFG_AT(U32, la_params_t, la_table)),
};

static void la_free(void *st)
{
	la_state_t *s = st;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_live; i++)
		free(s->live[i].blocks);
	for (size_t i = 0; i < s->n_sess; i++)
		free(s->sess[i].blocks);
	pol_ptab_free(s->tab);
	pol_idmap_free(&s->live_ix);
	pol_idmap_free(&s->sess_ix);
	pol_idmap_free(&s->started);
	pol_fcbuf_free(&s->out);
	FREE_ALL(s->live, s->sess, s->rec, s);
}

static int la_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const la_params_t *p = params;
	(void)seed; /* deterministic: no draws */
	la_state_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->p = *p;
	s->session_ns = (int64_t)(p->la_session_s * NS);
	if (!(s->tab = pol_ptab_new((size_t)p->la_table, 0)) || pol_idmap_init(&s->live_ix, 64) ||
	    pol_idmap_init(&s->sess_ix, 64) || pol_idmap_init(&s->started, 64)) {
		la_free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	*state = s;
	return 0;
}

/* Removes open session i (swap with the last, keeping sess_ix in step). */
static void la_sess_drop(la_state_t *s, size_t i)
{
	la_sess_t *x = &s->sess[i];
	pol_idmap_del(&s->sess_ix, x->blocks[x->n - 1]);
	free(x->blocks);
	if (i + 1 < s->n_sess) {
		*x = s->sess[s->n_sess - 1];
		pol_idmap_put(&s->sess_ix, x->blocks[x->n - 1],
		              (uint32_t)i); /* present: no growth */
	}
	s->n_sess--;
}

/* A turn ended: its next turn's prefix l->blocks[0..l->n_next) opens (or
 * refreshes) a session; takes l->blocks. */
static int la_sess_open(la_state_t *s, la_live_t *l, int64_t t)
{
	uint64_t key = l->blocks[l->n_next - 1];
	uint32_t i;
	if (pol_idmap_get(&s->sess_ix, key, &i)) { /* the same context again */
		s->sess[i].inst = l->inst;
		s->sess[i].t_end = t;
		return 0;
	}
	if (s->n_sess >= s->p.la_capacity)
		return 0;
	if (VEC_GROW(s->sess, s->cap_sess, s->n_sess + 1, 64) ||
	    pol_idmap_put(&s->sess_ix, key, (uint32_t)s->n_sess))
		return KS_ENOMEM;
	s->sess[s->n_sess++] = (la_sess_t){l->blocks, l->n_next, l->inst, t};
	l->blocks = NULL;
	return 0;
}

/* Every arrival ends the open sessions whose prefix its prompt extends
 * (their next turn came). A routed one is learnt from its ROUTED event,
 * which follows at once with its id; an unrouted one only joins the
 * prefix table (it is demand that computes nothing). */
static int la_observe(void *st, const pol_arrival_t *a, err_t *e)
{
	la_state_t *s = st;
	for (uint32_t j = a->n_blocks; j >= s->p.la_min_blocks && s->n_sess; j--) {
		uint32_t i;
		if (pol_idmap_get(&s->sess_ix, a->blocks[j - 1], &i) && s->sess[i].n == j)
			la_sess_drop(s, i);
	}
	if (a->inst < 0 && pol_ptab_touch(s->tab, a->blocks, a->n_blocks, a->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* A routed request: its queue prefix is the longest one an earlier prompt
 * holds; its next turn's prefix, its prompt (and output, with a session). */
static int la_routed(la_state_t *s, const pol_req_event_t *ev, err_t *e)
{
	uint32_t m = pol_ptab_match(s->tab, ev->blocks, ev->n_blocks);
	if (pol_ptab_touch(s->tab, ev->blocks, ev->n_blocks, ev->t_ns, NULL, NULL))
		return err_set(e, KS_ENOMEM, "out of memory");
	int gone = pol_idmap_del(&s->started, ev->id);
	uint32_t n_q = s->p.la_queue && !gone && m >= s->p.la_min_blocks ? m : 0;
	uint32_t n_next = 0;
	if (s->p.la_session)
		n_next = ev->n_blocks + (ev->session_id ? ev->n_out_blocks : 0);
	if (n_next < s->p.la_min_blocks)
		n_next = 0;
	if (!n_q && !n_next)
		return 0;
	uint32_t n = n_q > n_next ? n_q : n_next;
	if (VEC_GROW(s->live, s->cap_live, s->n_live + 1, 64))
		return err_set(e, KS_ENOMEM, "out of memory");
	uint64_t *b = malloc(n * sizeof *b);
	if (!b || pol_idmap_put(&s->live_ix, ev->id, (uint32_t)s->n_live)) {
		free(b);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	memcpy(b, ev->blocks, n * sizeof *b);
	s->live[s->n_live++] = (la_live_t){ev->id, b, n_q, n_next, ev->inst};
	return 0;
}

static int la_on_request(void *st, const pol_req_event_t *ev, err_t *e)
{
	la_state_t *s = st;
	if (ev->phase == POL_REQ_ROUTED)
		return la_routed(s, ev, e);
	uint32_t i;
	if (!pol_idmap_get(&s->live_ix, ev->id, &i)) {
		if (ev->phase == POL_REQ_STARTED && pol_idmap_put(&s->started, ev->id, 0))
			return err_set(e, KS_ENOMEM, "out of memory");
		return 0;
	}
	la_live_t *l = &s->live[i];
	if (ev->phase == POL_REQ_STARTED) {
		l->n_q = 0; /* left the queue: its prefill finds what is there */
		return 0;
	}
	if (ev->completed && l->n_next && la_sess_open(s, l, ev->t_ns))
		return err_set(e, KS_ENOMEM, "out of memory");
	free(l->blocks);
	pol_idmap_del(&s->live_ix, ev->id);
	if (i + 1 < s->n_live) {
		*l = s->live[s->n_live - 1];
		pol_idmap_put(&s->live_ix, l->id, i); /* present: no growth */
	}
	s->n_live--;
	return 0;
}

static int la_rec_cmp(const void *a, const void *b)
{
	const la_rec_t *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return (x->inst > y->inst) - (x->inst < y->inst);
}

static int la_forecast(void *st, int64_t now, int64_t horizon, pol_forecast_t *out, err_t *e)
{
	la_state_t *s = st;
	(void)horizon; /* queued demand and open sessions do not depend on it */
	s->out.n = 0;
	for (size_t i = 0; i < s->n_sess;) /* windows that ended */
		if (now - s->sess[i].t_end > s->session_ns)
			la_sess_drop(s, i);
		else
			i++;
	if (VEC_GROW(s->rec, s->cap_rec, s->n_live + s->n_sess, 64))
		return err_set(e, KS_ENOMEM, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < s->n_live; i++) {
		const la_live_t *l = &s->live[i];
		if (l->n_q)
			s->rec[n++] =
			    (la_rec_t){l->blocks[l->n_q - 1], l->blocks, l->n_q, l->inst, 1};
	}
	for (size_t i = 0; i < s->n_sess; i++) {
		const la_sess_t *x = &s->sess[i];
		s->rec[n++] =
		    (la_rec_t){x->blocks[x->n - 1], x->blocks, x->n, x->inst, s->p.la_next_p};
	}
	if (n > 1)
		qsort(s->rec, n, sizeof *s->rec, la_rec_cmp);
	for (size_t i = 0; i < n;) {
		pol_group_t g = {
		    .key = s->rec[i].key, .blocks = (uint64_t *)s->rec[i].blocks, .n = s->rec[i].n};
		double ex = 0;
		size_t j = i;
		for (; j < n && s->rec[j].key == g.key && s->rec[j].n == g.n; j++) {
			ex += s->rec[j].w;
			pol_group_note_inst(&g, s->rec[j].inst, s->rec[j].w);
		}
		if (!pol_fcbuf_push_group(&s->out, &g, ex, now))
			return err_set(e, KS_ENOMEM, "out of memory");
		i = j;
	}
	pol_fcbuf_publish(&s->out, 0, out);
	return 0;
}

static uint32_t la_min_blocks(const void *st)
{
	return ((const la_state_t *)st)->p.la_min_blocks;
}

const struct pol_predictor_ops pol_pred_lookahead = {
    .base = {POL_ABI_VERSION, POL_PREDICTOR, "lookahead",
             "Forecasts from the serving system's own state: the shared prefix of every request "
             "waiting in an instance's queue, for that instance, and each finished turn's "
             "context as the prefix of its session's next turn (CachedAttention, Gao et al., "
             "USENIX ATC '24), for la_session_s after it ends; next turns are found by the "
             "block chain, so traces without session ids work too.",
             POL_PARAMS(la_params, la_params_t), la_init, la_free},
    .observe = la_observe,
    .forecast = la_forecast,
    .on_request = la_on_request,
    .min_blocks = la_min_blocks,
};

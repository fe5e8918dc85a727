/* sim_clients — closed-loop clients fed back by the run (sim_clients.h),
 * and the sessions workload on top of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "sim/run/sim_clients.h"
#include "traces/tr_sess.h"
#include "traces/tr_spec.h"

enum { U_THINK, U_BUSY, U_DONE };

typedef struct cl_wake {
	int64_t t;
	uint32_t user;
} cl_wake_t;

struct sim_clients {
	sim_source_t src;
	sim_feedback_t fb;
	int64_t now;            /* the run's time at its last call */
	sim_clients_opts_t o;
	sim_script_t script;
	int64_t end_ns;         /* INT64_MAX: no duration */
	uint8_t *state;         /* per user, U_* */
	uint64_t *thinks;       /* per user: think times drawn */
	cl_wake_t *heap;        /* thinking users by (wake time, user) */
	uint32_t n_heap, busy;
	uint32_t *user_of;      /* per request id */
	size_t cap_user_of;
	uint64_t sent;
	sim_clients_stage_t *stages; /* own copy; NULL: one stage of every user */
	int64_t *stage_ns;           /* their starts */
	/* open stages (o.n_open > 0) */
	sim_clients_open_t *open;    /* own copy */
	int64_t *open_start;         /* per stage: its start (-1: not started) */
	int64_t open_drain;          /* the last started stage's drain time (-1: not yet) */
	uint32_t ok;                 /* the stage sending now */
	uint64_t oi;                 /* requests it has sent */
	int64_t o_next;              /* its next arrival (poisson) */
	int64_t last_back;           /* time the last row came back */
	uint8_t *back;               /* per request id: its row came back */
	size_t cap_back;
};

static int wake_less(const cl_wake_t *a, const cl_wake_t *b)
{
	return a->t < b->t || (a->t == b->t && a->user < b->user);
}

static void heap_push(sim_clients_t *c, cl_wake_t w)
{
	uint32_t i = c->n_heap++;
	while (i && wake_less(&w, &c->heap[(i - 1) / 2])) {
		c->heap[i] = c->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	c->heap[i] = w;
}

static cl_wake_t heap_pop(sim_clients_t *c)
{
	cl_wake_t top = c->heap[0], last = c->heap[--c->n_heap];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		const cl_wake_t *best = &last;
		if (l < c->n_heap && wake_less(&c->heap[l], best))
			best = &c->heap[m = l];
		if (l + 1 < c->n_heap && wake_less(&c->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		c->heap[i] = c->heap[m];
		i = m;
	}
	if (c->n_heap)
		c->heap[i] = last;
	return top;
}

/* User u's k-th think time in ns, from a hash of (seed, u, k): the order in
 * which users come back does not change anyone's draws. */
/* An exponential time of mean mean_s, in ns, from a hash of (seed, key). */
static int64_t exp_ns(uint64_t seed, uint64_t key, double mean_s)
{
	uint64_t h = rng_fmix64(seed ^ rng_fmix64(key));
	double unit = ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); /* (0, 1) */
	double t = -mean_s * log(unit) * 1e9;
	return t < 4e18 ? (int64_t)llround(t) : (int64_t)4e18;
}

static int64_t think_ns(const sim_clients_t *c, uint32_t u, uint64_t k)
{
	if (c->o.think_fixed)
		return (int64_t)llround(c->o.think_s * 1e9);
	return exp_ns(c->o.seed, (uint64_t)u * RNG_GOLDEN + k, c->o.think_s);
}

static void user_think(sim_clients_t *c, uint32_t u, int64_t now)
{
	c->state[u] = U_THINK;
	heap_push(c, (cl_wake_t){now + think_ns(c, u, c->thinks[u]++), u});
}

/* The stage that holds time t (stages start at 0). */
static uint32_t stage_at(const sim_clients_t *c, int64_t t)
{
	uint32_t k = 0;
	while (k + 1 < c->o.n_stages && c->stage_ns[k + 1] <= t)
		k++;
	return k;
}

/* u sleeps until the first stage from k on that has it, and thinks from
 * its start; done when there is none. */
static void user_sleep(sim_clients_t *c, uint32_t u, uint32_t k)
{
	for (; k < c->o.n_stages; k++)
		if (u < c->stages[k].users) {
			user_think(c, u, c->stage_ns[k]);
			return;
		}
	c->state[u] = U_DONE;
}

/* u's think ended at t: 1 when its stage has it, else it sleeps (0). */
static int user_awake(sim_clients_t *c, uint32_t u, int64_t t)
{
	if (!c->stages)
		return 1;
	uint32_t k = stage_at(c, t);
	if (u < c->stages[k].users)
		return 1;
	user_sleep(c, u, k + 1);
	return 0;
}

static void users_stop(sim_clients_t *c)
{
	while (c->n_heap)
		c->state[heap_pop(c).user] = U_DONE;
}

/* Exponential gap of mean 1 / rate in ns, from a hash of (seed, k, i). */
static int64_t open_gap_ns(const sim_clients_t *c, uint32_t k, uint64_t i, double rate)
{
	return exp_ns(c->o.seed, ((uint64_t)k << 40 ^ i) * RNG_GOLDEN + 1, 1 / rate);
}

/* Stage k's next arrival time into *t: 1, or 0 when it has sent all. */
static int open_arrival(sim_clients_t *c, int64_t *t)
{
	const sim_clients_open_t *g = &c->open[c->ok];
	int64_t s0 = c->open_start[c->ok];
	if (!c->o.poisson) {
		if (c->oi >= (uint64_t)llround(g->rate * g->duration_s))
			return 0;
		*t = s0 + (int64_t)llround((double)c->oi * 1e9 / g->rate);
		return 1;
	}
	*t = c->o_next;
	return c->o_next < s0 + (int64_t)llround(g->duration_s * 1e9);
}

static int open_next(sim_clients_t *c, sim_arrival_t *a, err_t *e)
{
	for (;;) {
		if (c->ok >= c->o.n_open) {
			if (!c->busy)
				return 0;
			a->arrival_ns = INT64_MAX;
			return SIM_SRC_WAIT;
		}
		int64_t t = 0;
		int more = !(c->o.max_requests && c->sent >= c->o.max_requests) && open_arrival(c, &t) &&
			   t < c->end_ns;
		if (more) {
			int rc = c->script.next(c->script.ctx, c->ok, a, e);
			if (rc < 0)
				return rc;
			if (rc == 1) {
				if (VEC_GROW(c->user_of, c->cap_user_of, c->sent + 1, 1024) ||
				    VEC_GROW(c->back, c->cap_back, c->sent + 1, 1024))
					return err_set(e, KS_ENOMEM, "out of memory");
				c->user_of[c->sent] = c->ok;
				c->back[c->sent] = 0;
				a->id = c->sent++;
				a->arrival_ns = t;
				c->busy++;
				c->oi++;
				if (c->o.poisson)
					c->o_next = t + open_gap_ns(c, c->ok, c->oi, c->open[c->ok].rate);
				return 1;
			}
		}
		/* the stage has sent all (or the run stops sending): drain it */
		if (c->busy) {
			a->arrival_ns = INT64_MAX; /* only a row can move on now */
			return SIM_SRC_WAIT;
		}
		const sim_clients_open_t *g = &c->open[c->ok];
		int64_t end = c->open_start[c->ok] + (int64_t)llround(g->duration_s * 1e9);
		if (c->last_back > end)
			end = c->last_back;
		c->open_drain = end;
		int stop = (c->o.max_requests && c->sent >= c->o.max_requests) || t >= c->end_ns;
		if (++c->ok >= c->o.n_open || stop) {
			c->ok = c->o.n_open;
			continue;
		}
		int64_t s0 = end + (int64_t)llround(c->o.gap_s * 1e9);
		c->open_start[c->ok] = s0;
		c->oi = 0;
		c->o_next = s0;
	}
}

static int cl_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	sim_clients_t *c = ctx;
	if (c->o.n_open)
		return open_next(c, a, e);
	for (;;) {
		if (c->o.max_requests && c->sent >= c->o.max_requests)
			users_stop(c);
		/* the heap is by time: once its first is past the end, all are */
		if (c->n_heap && c->heap[0].t >= c->end_ns)
			users_stop(c);
		if (!c->n_heap) {
			if (!c->busy)
				return 0;
			a->arrival_ns = INT64_MAX; /* only a result can make a request now */
			return SIM_SRC_WAIT;
		}
		/* a busy user's answer can still come back now and its next request
		 * arrive before the first thinking user's: wait for that time */
		if (c->busy && c->heap[0].t > c->now) {
			a->arrival_ns = c->heap[0].t;
			return SIM_SRC_WAIT;
		}
		cl_wake_t w = heap_pop(c);
		if (!user_awake(c, w.user, w.t))
			continue;
		int rc = c->script.next(c->script.ctx, w.user, a, e);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			c->state[w.user] = U_DONE;
			continue;
		}
		if (VEC_GROW(c->user_of, c->cap_user_of, c->sent + 1, 1024))
			return err_set(e, KS_ENOMEM, "out of memory");
		c->user_of[c->sent] = w.user;
		a->id = c->sent++;
		a->arrival_ns = w.t;
		c->state[w.user] = U_BUSY;
		c->busy++;
		return 1;
	}
}

static void cl_at(void *ctx, int64_t now)
{
	((sim_clients_t *)ctx)->now = now;
}

static int cl_done(void *ctx, int64_t now, const res_request_t *row, err_t *e)
{
	(void)e;
	sim_clients_t *c = ctx;
	c->now = now;
	/* the client hears the answer when its last token reaches it (the row's
	 * end-to-end time includes the front-end's, sim_params_frontend_ns) */
	int64_t back = row->e2e_ns >= 0 && row->arrival_ns + row->e2e_ns > now
	                   ? row->arrival_ns + row->e2e_ns
	                   : now;
	if (c->o.n_open) {
		if (row->id >= c->sent || c->back[row->id])
			return 0; /* not one of ours, or already back */
		c->back[row->id] = 1;
		c->busy--;
		if (back > c->last_back)
			c->last_back = back;
		return 0;
	}
	uint32_t u = sim_clients_user(c, row->id);
	if (u == UINT32_MAX || c->state[u] != U_BUSY)
		return 0; /* not one of ours, or already back */
	c->busy--;
	user_think(c, u, back);
	return 0;
}

static int open_new(const sim_clients_opts_t *o, const sim_script_t *script,
		    sim_clients_t **out, err_t *e)
{
	for (uint32_t k = 0; k < o->n_open; k++) {
		const sim_clients_open_t *g = &o->open[k];
		if (!(g->rate > 0 && g->rate <= 1e9) || !(g->duration_s > 0 && g->duration_s < 4e9))
			return err_set(e, KS_EINPUT,
				       "clients: stage %u: rate %g req/s and duration %g s must be > 0",
				       k, g->rate, g->duration_s);
	}
	if (!(o->gap_s >= 0 && o->gap_s < 4e9))
		return err_set(e, KS_EINPUT, "clients: gap_s %g must be in [0, 4e9) s", o->gap_s);
	if (!(o->duration_s >= 0) || !(o->duration_s < 4e9))
		return err_set(e, KS_EINPUT, "[trace] duration_s: must be in [0, 4e9) s");
	sim_clients_t *c = calloc(1, sizeof *c);
	if (!c)
		return err_set(e, KS_ENOMEM, "out of memory");
	c->o = *o;
	c->o.stages = NULL;
	c->o.n_stages = 0;
	c->open = malloc(o->n_open * sizeof *c->open);
	c->open_start = malloc(o->n_open * sizeof *c->open_start);
	if (!c->open || !c->open_start) {
		sim_clients_free(c);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	memcpy(c->open, o->open, o->n_open * sizeof *c->open);
	c->o.open = c->open;
	for (uint32_t k = 0; k < o->n_open; k++)
		c->open_start[k] = -1;
	c->open_start[0] = 0;
	c->open_drain = -1;
	c->script = *script;
	c->end_ns = o->duration_s > 0 ? (int64_t)llround(o->duration_s * 1e9) : INT64_MAX;
	c->src = (sim_source_t){cl_next, c, o->name ? o->name : "clients"};
	c->fb = (sim_feedback_t){c, cl_at, cl_done};
	*out = c;
	return 0;
}

int sim_clients_new(const sim_clients_opts_t *o, const sim_script_t *script,
		    sim_clients_t **out, err_t *e)
{
	*out = NULL;
	if (o->n_open)
		return open_new(o, script, out, e);
	if (o->users == 0)
		return err_set(e, KS_EINPUT, "[trace] users: must be >= 1");
	if (!(o->think_s >= 0) || !(o->think_s < 1e9))
		return err_set(e, KS_EINPUT, "[trace] think_s: must be in [0, 1e9) s");
	if (!(o->duration_s >= 0) || !(o->duration_s < 4e9))
		return err_set(e, KS_EINPUT, "[trace] duration_s: must be in [0, 4e9) s");
	if (!(o->duration_s > 0) && !o->max_requests)
		return err_set(e, KS_EINPUT,
			       "[trace] duration_s: closed-loop users need duration_s > 0 or a "
			       "request count, else they never stop");
	for (uint32_t k = 0; k < o->n_stages; k++) {
		const sim_clients_stage_t *g = &o->stages[k];
		if (g->users > o->users)
			return err_set(e, KS_EINPUT, "clients: stage %u: %u users of %u", k, g->users,
				       o->users);
		if (k == 0 ? g->start_s != 0 : !(g->start_s > o->stages[k - 1].start_s))
			return err_set(e, KS_EINPUT,
				       "clients: stage %u: start_s %g must be %s", k, g->start_s,
				       k == 0 ? "0" : "after the previous stage's");
		if (!(g->start_s < 4e9))
			return err_set(e, KS_EINPUT, "clients: stage %u: start_s %g is out of range",
				       k, g->start_s);
	}
	sim_clients_t *c = calloc(1, sizeof *c);
	if (!c)
		return err_set(e, KS_ENOMEM, "out of memory");
	c->o = *o;
	if (o->stages && o->n_stages) {
		c->stages = malloc(o->n_stages * sizeof *c->stages);
		c->stage_ns = malloc(o->n_stages * sizeof *c->stage_ns);
		if (!c->stages || !c->stage_ns) {
			sim_clients_free(c);
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		memcpy(c->stages, o->stages, o->n_stages * sizeof *c->stages);
		for (uint32_t k = 0; k < o->n_stages; k++)
			c->stage_ns[k] = (int64_t)llround(o->stages[k].start_s * 1e9);
		c->o.stages = c->stages;
	} else {
		c->o.stages = NULL;
		c->o.n_stages = 0;
	}
	c->script = *script;
	c->end_ns = o->duration_s > 0 ? (int64_t)llround(o->duration_s * 1e9) : INT64_MAX;
	c->state = calloc(o->users, sizeof *c->state);
	c->thinks = calloc(o->users, sizeof *c->thinks);
	c->heap = malloc(o->users * sizeof *c->heap);
	if (!c->state || !c->thinks || !c->heap) {
		sim_clients_free(c);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	for (uint32_t u = 0; u < o->users; u++) /* every user starts by thinking */
		if (c->stages)
			user_sleep(c, u, 0); /* from its first stage */
		else
			user_think(c, u, 0);
	c->src = (sim_source_t){cl_next, c, o->name ? o->name : "clients"};
	c->fb = (sim_feedback_t){c, cl_at, cl_done};
	*out = c;
	return 0;
}

sim_source_t *sim_clients_source(sim_clients_t *c)
{
	return &c->src;
}

const sim_feedback_t *sim_clients_feedback(sim_clients_t *c)
{
	return &c->fb;
}

uint32_t sim_clients_user(const sim_clients_t *c, uint64_t id)
{
	return id < c->sent ? c->user_of[id] : UINT32_MAX;
}

int sim_clients_open_window(const sim_clients_t *c, uint32_t k, int64_t *t0, int64_t *t1)
{
	if (k >= c->o.n_open || c->open_start[k] < 0)
		return 0;
	*t0 = c->open_start[k];
	if (k + 1 < c->o.n_open && c->open_start[k + 1] >= 0)
		*t1 = c->open_start[k + 1];
	else
		*t1 = c->open_drain >= 0 ? c->open_drain : INT64_MAX;
	return 1;
}

double sim_clients_fraction(void *ctx)
{
	const sim_clients_t *c = ctx;
	double f = -1;
	if (c->o.max_requests)
		f = (double)c->sent / (double)c->o.max_requests;
	if (c->end_ns != INT64_MAX)
		f = fmax(f, (double)c->now / (double)c->end_ns);
	if (c->o.n_open && f < 0)
		f = (double)c->ok / c->o.n_open;
	return f < 0 ? -1 : fmin(f, 1);
}

void sim_clients_free(sim_clients_t *c)
{
	if (c)
		FREE_ALL(c->state, c->thinks, c->heap, c->user_of, c->stages, c->stage_ns, c->open,
			 c->open_start, c->back, c);
}

/* ---- sessions ----------------------------------------------------------- */

typedef struct sess_rec {
	uint64_t session;
	uint32_t turn;
} sess_rec_t;

struct sim_sessions {
	tr_sess_t *ts;
	sim_clients_t *cl;
	sess_rec_t *rec; /* per request id: the script is asked once per id, in order */
	size_t n_rec, cap_rec;
	char name[32];
};

static int sess_next(void *ctx, uint32_t user, sim_arrival_t *a, err_t *e)
{
	sim_sessions_t *ss = ctx;
	tr_sess_req_t q;
	int rc = tr_sess_next(ss->ts, user, &q, e);
	if (rc <= 0)
		return rc;
	if (VEC_GROW(ss->rec, ss->cap_rec, ss->n_rec + 1, 1024))
		return err_set(e, KS_ENOMEM, "out of memory");
	ss->rec[ss->n_rec++] = (sess_rec_t){q.session_id, q.turn};
	*a = (sim_arrival_t){.in_len = q.input_len,
			     .out_len = q.output_len,
			     .n_blocks = q.n_blocks,
			     .blocks = q.blocks,
			     .n_out_blocks = q.n_out_blocks,
			     .session_id = q.session_id,
			     .turn = q.turn};
	return 1;
}

int sim_sessions_open(const cfg_t *cfg, uint32_t S, uint64_t seed, sim_sessions_t **out,
		      err_t *e)
{
	*out = NULL;
	tr_opts_t o;
	tr_sess_opts_t so;
	int rc = tr_opts_from_cfg(cfg, &o, e);
	if (rc || !tr_closed_loop(&o))
		return rc;
	if ((rc = tr_sess_opts_from_cfg(cfg, &so, e)))
		return rc;
	sim_sessions_t *ss = calloc(1, sizeof *ss);
	if (!ss)
		return err_set(e, KS_ENOMEM, "out of memory");
	snprintf(ss->name, sizeof ss->name, "gen:%s", tr_gen_name(o.gen));
	uint64_t max = o.requests;
	if (o.limit && (!max || o.limit < max))
		max = o.limit;
	sim_clients_opts_t co = {.users = so.users,
				 .think_s = so.think_s,
				 .think_fixed = so.think_fixed,
				 .duration_s = o.duration_s,
				 .max_requests = max,
				 .seed = rng_fmix64(seed ^ 0x7468696e6bULL),
				 .name = ss->name};
	sim_script_t sc = {sess_next, ss};
	if ((rc = tr_sess_new(&o, &so, S, seed, &ss->ts, e)) ||
	    (rc = sim_clients_new(&co, &sc, &ss->cl, e))) {
		sim_sessions_free(ss);
		return rc;
	}
	*out = ss;
	return 0;
}

sim_clients_t *sim_sessions_clients(sim_sessions_t *ss)
{
	return ss->cl;
}

int sim_sessions_of(const sim_sessions_t *ss, uint64_t id, uint64_t *session, uint32_t *turn)
{
	if (id >= ss->n_rec) {
		*session = 0;
		*turn = 0;
		return 0;
	}
	*session = ss->rec[id].session;
	*turn = ss->rec[id].turn;
	return 1;
}

void sim_sessions_free(sim_sessions_t *ss)
{
	if (!ss)
		return;
	tr_sess_free(ss->ts);
	sim_clients_free(ss->cl);
	FREE_ALL(ss->rec, ss);
}

/* ---- trace.kind = spec ---------------------------------------------------- */

struct sim_spec {
	tr_spec_t spec;
	tr_spec_gen_t *gen;
	sim_clients_t *cl;
	sim_clients_open_t *open;
	uint64_t k; /* requests made: the script is asked once per id, in order */
	char name[sizeof ((tr_spec_t *)0)->experiment + 8];
};

static int spec_next(void *ctx, uint32_t stage, sim_arrival_t *a, err_t *e)
{
	(void)stage;
	(void)e;
	sim_spec_t *sp = ctx;
	tr_spec_req_t q;
	tr_spec_gen_request(sp->gen, sp->k++, &q);
	*a = (sim_arrival_t){.in_len = q.input_len,
			     .out_len = q.output_len,
			     .n_blocks = q.n_blocks,
			     .blocks = q.blocks};
	return 1;
}

int sim_spec_open(const cfg_t *cfg, uint32_t S, uint64_t seed, sim_spec_t **out, err_t *e)
{
	*out = NULL;
	tr_opts_t o;
	tr_paths_t *paths = NULL;
	int rc = tr_opts_from_cfg(cfg, &o, e);
	if (rc || o.kind != TR_KIND_SPEC)
		return rc;
	/* a window on a trace's time has no meaning for clients that send
	 * stage after drained stage: refused, not ignored */
	if (o.start_s != 0 || o.end_s != 0)
		return err_set(e, KS_EINPUT, "[trace] %s: not used by kind = spec (its stages set "
			       "when requests are sent; trace.limit or duration_s cut the run)",
			       o.start_s != 0 ? "start_s" : "end_s");
	if (!(paths = malloc(sizeof *paths)))
		return err_set(e, KS_ENOMEM, "out of memory");
	sim_spec_t *sp = calloc(1, sizeof *sp);
	if (!sp) {
		free(paths);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	if (!(rc = tr_opts_paths(cfg, &o, paths, e)))
		rc = tr_spec_load(o.path, o.spec_experiment, &sp->spec, e);
	free(paths);
	if (rc) {
		sim_spec_free(sp);
		return rc;
	}
	const tr_spec_t *s = &sp->spec;
	if (!(sp->open = malloc(s->n_stages * sizeof *sp->open))) {
		sim_spec_free(sp);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	for (uint32_t k = 0; k < s->n_stages; k++) /* rate_scale: the load key every source obeys */
		sp->open[k] = (sim_clients_open_t){s->stages[k].rate * o.rate_scale,
						   s->stages[k].duration_s};
	snprintf(sp->name, sizeof sp->name, "spec:%s", s->experiment[0] ? s->experiment : "profile");
	/* duration_s cuts the run only when set: its default is the generators' */
	int dur_set = strcmp(cfg_origin(cfg, "trace", "duration_s"), "default") != 0;
	sim_clients_opts_t co = {.duration_s = dur_set ? o.duration_s : 0,
				 .max_requests = o.limit,
				 .seed = rng_fmix64(seed ^ 0x6f70656eULL),
				 .name = sp->name,
				 .open = sp->open,
				 .n_open = s->n_stages,
				 .poisson = s->poisson,
				 .gap_s = s->interval_s};
	sim_script_t sc = {spec_next, sp};
	if ((rc = tr_spec_gen_new(s, o.spec_reuse, S, seed, &sp->gen, e)) ||
	    (rc = sim_clients_new(&co, &sc, &sp->cl, e))) {
		sim_spec_free(sp);
		return rc;
	}
	*out = sp;
	return 0;
}

sim_clients_t *sim_spec_clients(sim_spec_t *sp)
{
	return sp->cl;
}

size_t sim_spec_windows(void *ctx, int64_t *edges, size_t cap)
{
	sim_spec_t *sp = ctx;
	size_t n = 0;
	int64_t t0, t1 = 0;
	for (uint32_t k = 0; k < sp->spec.n_stages && n + 1 < cap; k++) {
		if (!sim_clients_open_window(sp->cl, k, &t0, &t1))
			break;
		edges[n++] = t0;
	}
	if (n)
		edges[n++] = t1;
	return n;
}

void sim_spec_free(sim_spec_t *sp)
{
	if (!sp)
		return;
	tr_spec_gen_free(sp->gen);
	sim_clients_free(sp->cl);
	tr_spec_free(&sp->spec);
	FREE_ALL(sp->open, sp);
}

/* sim_copy_lone — the timing modes of a copy timed alone on its path (the
 * original study's switches): the timer mode (network.contention = none) and
 * the job mode (network.copy_charge = target_compute, for copies that land
 * at an instance). Each shard takes the copy's alone_ns, sharing no link;
 * the copy lands when its timer fires, or when the target's compute has run
 * it as a job (queued behind that instance's iterations and other jobs).
 * Their records: one row per shard, from the start of its time alone (a
 * job's: when the compute began it) to its end or cancel. */
#include "sim/run/sim_copy_mode.h"

/* ---- what both share -------------------------------------------------------- */

static void lone_ns_set(kcopy_t *c, const copy_costs_t *cc)
{
	c->alone_ns = cc->alone_ns < 1 ? 1 : cc->alone_ns;
}

static int64_t lone_estimate(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			     const copy_costs_t *cc, uint32_t n, int cls)
{
	(void)s;
	(void)links;
	(void)len;
	(void)kind;
	(void)n;
	(void)cls;
	return cc->alone_ns;
}

/* Records every shard of lone copy k, started at `start` (delivered bytes
 * pro rata when cancelled), and lands it unless cancelled. */
static int lone_end(sim_ctx_t *s, kcopy_t *k, int64_t start, int cancelled)
{
	int64_t now = ev_engine_now(s->eng);
	uint64_t got = k->shard_bytes;
	if (cancelled) {
		double f = (double)(now - start) / (double)k->alone_ns;
		got = f <= 0 ? 0 : f >= 1 ? k->shard_bytes : (uint64_t)(f * (double)k->shard_bytes);
	}
	for (uint32_t g = 0; g < k->n_flows; g++) {
		net_flow_rec_t rec = {.id = (k->id << 16) | g, .start_ns = start, .join_ns = start,
				      .end_ns = now, .bytes = k->shard_bytes, .delivered = got,
				      .cancelled = cancelled, .tag = g};
		int rc = sim_copy_shard_row(s, k, &rec);
		if (rc)
			return rc;
	}
	return cancelled ? 0 : sim_copy_land(s, k);
}

/* ---- timer: as if alone on its path (network.contention = none) ------------ */

static int timer_takes(const net_params_t *np, int to_instance)
{
	(void)to_instance;
	return np->contention_none;
}

/* The copy timer's event: the copy lands, unless it was cancelled. */
static int timer_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	kcopy_t *k = &s->cp->copies[ev->payload - 1];
	return k->live ? lone_end(s, k, k->started, 0) : 0;
}

static int timer_init(sim_ctx_t *s, err_t *e)
{
	int rc = ev_engine_type_new(s->eng, timer_done, s, &s->ev.lone_copy);
	return rc ? err_set(e, rc, "cannot register the copy timer") : 0;
}

static int timer_start(sim_ctx_t *s, kcopy_t *c, const copy_costs_t *cc, uint32_t *links, int len)
{
	(void)links;
	(void)len;
	lone_ns_set(c, cc);
	c->timer = ev_engine_after(s->eng, c->alone_ns, s->ev.lone_copy, 0, c->id);
	return c->timer == EV_NONE ? KS_ENOMEM : 0;
}

static int timer_cancel(sim_ctx_t *s, kcopy_t *k)
{
	ev_engine_cancel(s->eng, k->timer);
	return lone_end(s, k, k->started, 1);
}

const sim_copy_mode_ops_t sim_copy_timer = {.name = "timer", .takes = timer_takes,
					    .init = timer_init, .start = timer_start,
					    .cancel = timer_cancel, .estimate = lone_estimate};

/* ---- job: on the target's compute (network.copy_charge = target_compute) --- */

/* An offload has no target compute: the contention key times it. */
static int job_takes(const net_params_t *np, int to_instance)
{
	return np->copy_charge_compute && to_instance;
}

static int job_start(sim_ctx_t *s, kcopy_t *c, const copy_costs_t *cc, uint32_t *links, int len)
{
	(void)links;
	(void)len;
	lone_ns_set(c, cc);
	return cluster_job_add(&s->cl, c->dst.index, c->id, c->alone_ns);
}

/* A job removed from the queue before it ran moved nothing (its row starts
 * and ends now); one running since t moved its bytes pro rata of the time
 * since t, as a cancelled timer does (its compute runs on to its end). */
static int job_cancel(sim_ctx_t *s, kcopy_t *k)
{
	int64_t start = ev_engine_now(s->eng);
	cluster_job_cancel(&s->cl, k->dst.index, k->id, &start);
	return lone_end(s, k, start, 1);
}

int sim_on_job_done(void *ctx, uint32_t inst, uint64_t job)
{
	(void)inst;
	sim_ctx_t *s = ctx;
	if (job & SOURCE_JOB || job == 0 || job > s->cp->n_copies)
		return 0;
	kcopy_t *k = &s->cp->copies[job - 1];
	if (!k->live || k->mode != COPY_JOB)
		return 0;
	return lone_end(s, k, ev_engine_now(s->eng) - k->alone_ns, 0);
}

const sim_copy_mode_ops_t sim_copy_job = {.name = "job", .takes = job_takes, .start = job_start,
					  .cancel = job_cancel, .estimate = lone_estimate};

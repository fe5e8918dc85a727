/* sim_timeline — output.timeline's rows and the state behind them
 * (sim_timeline.h); sim_sample.c's sample event asks for each tick's. */
#include "sim/run/sim_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_timeline.h"

/* output.timeline's state (sim_timeline.h). */
struct sim_timeline {
	int64_t sample_ns;
	int every;              /* a row per instance per tick, per busy link per tick */
	double (*inst)[4];      /* per instance: its last row's values (NaN: none yet) */
	double (*link)[2];      /* per link: its last row's use (0: none yet) */
	uint32_t *on;           /* links whose last row has a nonzero use */
	uint32_t *cand;         /* scratch: this tick's active and on links */
	uint32_t n_on;
	uint8_t *mark;          /* per link: in cand this tick */
	/* instances whose sampled values may have changed since their last
	 * row (sim_timeline_touch): a tick under `changed` visits only these */
	uint8_t *dirty;         /* per instance: in dirty_list */
	uint32_t *dirty_list;
	uint32_t n_dirty;
};

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

/* output.timeline = changed: the rows of sample_every that differ from the
 * series' last row, so reading each series as a step function gives the
 * per-tick samples back (a link without a row is at 0). Instances are
 * visited only when touched since the last tick (sim_touch: the cluster's
 * enqueues and steps, copies starting, landing or cancelled there), links
 * only while they hold flows (net_links_active) or their last row is
 * nonzero (one zero row as they go idle); both in id order as before. */
static int sample_changed(sim_ctx_t *s, int64_t now)
{
	struct sim_timeline *tl = s->tl;
#ifdef KVSIM_CHECK
	/* an untouched instance must still read as its last row */
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++) {
		double v[4];
		inst_values(s, i, v);
		if (!tl->dirty[i] && memcmp(v, tl->inst[i], sizeof v))
			return err_set(s->err, KS_ERUNTIME,
				       "timeline: instance %u changed at t=%" PRId64
				       " ns without being touched (sim_touch)",
				       i, now);
	}
#endif
	qsort(tl->dirty_list, tl->n_dirty, sizeof *tl->dirty_list, cmp_u32);
	for (uint32_t k = 0; k < tl->n_dirty; k++) {
		uint32_t i = tl->dirty_list[k];
		tl->dirty[i] = 0;
		double v[4];
		inst_values(s, i, v);
		double *last = tl->inst[i];
		if (v[0] == last[0] && v[1] == last[1] && v[2] == last[2] && v[3] == last[3])
			continue;
		memcpy(last, v, sizeof v);
		res_sample_t x = {now, TL_INSTANCE, (int32_t)i, v[0], v[1], v[2], v[3], 0, 0};
		if (rec_sample(s->res, &x))
			return KS_ENOMEM;
	}
	tl->n_dirty = 0;
	size_t na;
	const uint32_t *act = net_links_active(s->net, &na);
	uint32_t nc = 0;
	for (size_t k = 0; k < na; k++) {
		tl->mark[act[k]] = 1;
		tl->cand[nc++] = act[k];
	}
	for (uint32_t k = 0; k < tl->n_on; k++)
		if (!tl->mark[tl->on[k]])
			tl->cand[nc++] = tl->on[k];
	qsort(tl->cand, nc, sizeof *tl->cand, cmp_u32);
	tl->n_on = 0;
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t l = tl->cand[k];
		tl->mark[l] = 0;
		net_link_stats_t st;
		if (net_link_stats(s->net, l, &st))
			continue;
		/* as sample_every: a rate <= 0 is no use */
		double u[2] = {st.rate[0] > 0 || st.rate[1] > 0 ? st.rate[0] / st.capacity : 0,
			       st.rate[0] > 0 || st.rate[1] > 0 ? st.rate[1] / st.capacity : 0};
		if (u[0] != 0 || u[1] != 0)
			tl->on[tl->n_on++] = l;
		double *last = tl->link[l];
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

struct sim_timeline *sim_timeline_new(int64_t sample_ns, int every, uint32_t ni, size_t nl)
{
	struct sim_timeline *tl = calloc(1, sizeof *tl);
	if (!tl)
		return NULL;
	tl->sample_ns = sample_ns;
	tl->every = every;
	if (every)
		return tl;
	tl->inst = malloc((ni ? ni : 1) * sizeof *tl->inst);
	tl->dirty = calloc(ni ? ni : 1, 1);
	tl->dirty_list = malloc((ni ? ni : 1) * sizeof *tl->dirty_list);
	tl->link = calloc(nl ? nl : 1, sizeof *tl->link);
	tl->on = malloc((nl ? nl : 1) * sizeof *tl->on);
	tl->cand = malloc((nl ? nl : 1) * sizeof *tl->cand);
	tl->mark = calloc(nl ? nl : 1, 1);
	if (!tl->inst || !tl->dirty || !tl->dirty_list || !tl->link || !tl->on || !tl->cand ||
	    !tl->mark) {
		sim_timeline_free(tl);
		return NULL;
	}
	for (uint32_t i = 0; i < ni; i++) {
		for (int k = 0; k < 4; k++)
			tl->inst[i][k] = NAN;
		sim_timeline_touch(tl, i);
	}
	return tl;
}

void sim_timeline_free(struct sim_timeline *tl)
{
	if (!tl)
		return;
	FREE_ALL(tl->inst, tl->link, tl->on, tl->cand, tl->mark, tl->dirty, tl->dirty_list, tl);
}

void sim_timeline_touch(struct sim_timeline *tl, uint32_t inst)
{
	if (!tl || !tl->dirty || tl->dirty[inst])
		return;
	tl->dirty[inst] = 1;
	tl->dirty_list[tl->n_dirty++] = inst;
}

int64_t sim_timeline_interval(const struct sim_timeline *tl)
{
	return tl->sample_ns;
}

int sim_timeline_sample(sim_ctx_t *s, int64_t now, int64_t *next_at)
{
	const struct sim_timeline *tl = s->tl;
	int rc = tl->every ? sample_every(s, now) : sample_changed(s, now);
	if (rc)
		return rc;
	int64_t next = now + tl->sample_ns;
	/* Idle (output.timeline = changed, nothing touched, no link in use):
	 * every tick before the next pending event would find nothing to
	 * record, so the sample jumps to the last tick before it (or before
	 * experiment.until_s), which schedules the next one as ever: rows, their
	 * order and the end time are unchanged, and a run whose simulated time
	 * stretches to years walks its events, not its 100 ms ticks. */
	if (!tl->every && !tl->n_on) {
		int64_t lim = ev_peek_time(ev_engine_queue(s->eng));
		if (s->prm.until_s > 0 && (int64_t)(s->prm.until_s * 1e9) < lim)
			lim = (int64_t)(s->prm.until_s * 1e9);
		if (lim != INT64_MAX && lim - now > tl->sample_ns)
			next = now + (lim - 1 - now) / tl->sample_ns * tl->sample_ns;
	}
	*next_at = next;
	return 0;
}

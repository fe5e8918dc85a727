/* cluster_seg — launching the batch an iteration built, and decode segments
 * (DECODE_SEGMENT, cluster.h): a run of decode-only iterations planned as
 * one event and applied lazily. */
#include "sim/cluster/cluster_int.h"

#include "sim/base/err.h"
#include "sim/base/vec.h"

/* Most iterations one segment plans. A cut throws away the durations
 * planned past the iteration in flight: on the Mooncake conversation trace
 * (512-token blocks) a bound of 1024 planned 2.87 M durations for 1.96 M
 * iterations. With the first closed-form cost_run (one cost per step),
 * 32, 128 and 512 gave 0.76, 0.73-0.76 and 0.80 CPU-s (145 K, 102 K and
 * 97 K events); own measurement, before the certified closed form and the
 * bulk token accounting made each planned iteration cheaper. */
#define SEG_MAX 128u

/* Whether the store bars r's next cache conversion (cache_full_blocks):
 * its block's id is held here already, as a block of another request that
 * is not shared (vLLM keeps its own) or not yet READY. Only a change of
 * the store (kv_change_fn: an id leaving, a block becoming READY) can lift
 * the bar; until then every iteration's end would try the conversion and
 * stop at once. */
static int seg_barred(const cluster_t *c, const sim_inst_t *in, const sim_req_t *r)
{
	int st = kv_lookup(in->kv, r->blocks[r->shared_hold]);
	return st && (!(c->sched->flags & CL_SCHED_F_SHARE_DUP) || st != KV_READY);
}

/* Iterations, from the one just built, that the decode batch of every
 * running request can run as one segment: the last may complete a request,
 * and, as the scheduler declares (cluster.h CL_SCHED_F_*), be followed by a
 * block allocation (PAGED) or turn a block into a cache block (CACHE_FULL:
 * cache_full_blocks, which reads other requests' blocks); those before it
 * do none of these, so they change nothing outside their requests. A
 * conversion the store bars (seg_barred) does not end the segment: *barred
 * is set, and a change of the store cuts the segment then
 * (cl_on_kv_change), so that the iteration in flight tries it again at its
 * end, as it would have without a segment. */
static uint32_t seg_len(const cluster_t *c, const sim_inst_t *in, uint8_t *barred)
{
	uint64_t B = c->p.block_tokens, n = SEG_MAX;
	unsigned f = c->sched->flags;
	*barred = 0;
	for (uint32_t k = 0; k < in->n_run; k++) {
		const sim_req_t *r = in->run[k];
		uint64_t ctx = (uint64_t)r->in_len + r->generated; /* iteration 1's context */
		uint64_t room = (uint64_t)(r->shared_hold + r->priv) * B;
		if (r->done_tok < r->target || r->generated >= r->out_len)
			return 1;
		/* iteration j emits token generated + j and runs on ctx + j - 1 */
		uint64_t lim = r->out_len - r->generated;
		if (f & CL_SCHED_F_PAGED) {
			if (room < ctx)
				return 1;
			/* iteration j + 1 would need a block unless ctx + j <= room */
			if (room - ctx + 1 < lim)
				lim = room - ctx + 1;
		}
		if ((f & CL_SCHED_F_CACHE_FULL) && r->priv && r->shared_hold < r->n_ids &&
		    r->ready == r->shared_hold) {
			/* the end of iteration j caches a block once ctx + j - 1 covers it;
			 * the store is asked about a bar only when that is the first
			 * (a later one ends the segment there, and is asked then) */
			uint64_t blk = (uint64_t)(r->shared_hold + 1) * B;
			uint64_t j = blk > ctx && blk > r->done_tok ? blk - ctx + 1 : 1;
			if (j < lim) {
				if (j == 1 && seg_barred(c, in, r))
					*barred = 1;
				else
					lim = j;
			}
		}
		if (lim < n)
			n = lim;
	}
	return (uint32_t)n;
}

/* Plans a segment for the decode batch just built, whose first iteration
 * ends at *end; on return *end is the end of the segment's last. Each
 * iteration's duration is the cost callback on the batch step mode would
 * build then (cost_run: within 1 ns of it, see cluster.h). */
static int seg_plan(cluster_t *c, sim_inst_t *in, int64_t *end)
{
	in->seg_n = 0;
	if (c->p.decode_mode != DECODE_SEGMENT || !(c->sched->flags & CL_SCHED_F_SEGMENTS) ||
	    in->batch.n_pre || in->batch.n_dec != in->n_run || in->n_wait || in->n_job)
		return 0;
	uint32_t n = seg_len(c, in, &in->seg_barred);
	if (n < 2)
		return 0;
	if (VEC_GROW(in->seg_end, in->seg_cap, n, 16))
		return KS_ENOMEM;
	/* every bin the segment's gaps may add has room now (at most one per
	 * iteration, in seg_gaps too, and a request's buffered gaps, which its
	 * first token may flush): a silent iteration cannot fail */
	tok_hist_clear(&in->seg_gaps);
	if (tok_hist_reserve(&in->seg_gaps, n))
		return KS_ENOMEM;
	for (uint32_t k = 0; k < in->n_run; k++)
		if (tok_hist_reserve(&in->run[k]->gaps, n + CL_GAP_BUF))
			return KS_ENOMEM;
	int64_t t = *end, *dur = in->seg_end + 1; /* durations first, then end times */
	for (uint32_t k = 0; k < in->batch.n_dec; k++)
		in->batch.dec_ctx[k]++;
	if (c->p.cost_run) {
		c->p.cost_run(in->cost_ctx, &in->batch, n - 1, dur);
	} else {
		for (uint32_t j = 0; j + 1 < n; j++) {
			dur[j] = c->p.cost(in->cost_ctx, &in->batch);
			for (uint32_t k = 0; k < in->batch.n_dec; k++)
				in->batch.dec_ctx[k]++;
		}
		for (uint32_t k = 0; k < in->batch.n_dec; k++)
			in->batch.dec_ctx[k] -= n - 1;
	}
	for (uint32_t k = 0; k < in->batch.n_dec; k++)
		in->batch.dec_ctx[k]--;
	in->seg_end[0] = t;
	for (uint32_t j = 1; j < n; j++) {
		int64_t d = in->seg_end[j] < 1 ? 1 : in->seg_end[j];
		if (d > INT64_MAX - t) { /* the segment stops short: cl_iter_launch says why */
			n = j;
			break;
		}
		t += d;
		in->seg_end[j] = t;
	}
	if (n < 2)
		return 0;
	in->seg_n = n;
	in->seg_next = 0;
	*end = t;
	return 0;
}

/* Applies the segment's iterations [seg_next, end) at once, as cl_iter_done
 * and the next cl_iter_start would one by one: a token for every request at
 * each one's end, the batch one token longer each (and the scheduler's own
 * state advanced by k decode steps: decode_steps). A request's first gap in the segment runs from
 * its own last token; every later one is an iteration's duration, the same
 * for every request of the batch (it neither gains nor loses one during a
 * segment), so those are binned once into seg_gaps and merged into each
 * request's histogram when the segment ends (cl_seg_flush): per request, O(1)
 * per iteration and O(bins) per segment, instead of a gap per token. */
static void seg_apply(cluster_t *c, sim_inst_t *in, uint32_t end)
{
	uint32_t a = in->seg_next, k = end - a;
	if (!k)
		return;
	int64_t t = in->seg_end[end - 1];
	uint32_t j0 = a ? a - 1 : 0; /* gaps seg_end[j] - seg_end[j - 1], j in [max(a, 1), end) */
	(void)tok_hist_add_diffs(&in->seg_gaps, in->seg_end + j0, end - j0); /* reserved in seg_plan */
	in->busy_ns += t - in->iter_start;
	if (c->p.on_busy)
		c->p.on_busy(c->p.hook_ctx, in, in->iter_start, t, k);
	in->iterations += k;
	for (uint32_t i = 0; i < in->n_run; i++) {
		sim_req_t *r = in->run[i];
		/* decode_share grows by one per token: every request here is past
		 * its prefill (seg_len) */
		if (!a)
			(void)cl_emit_token(c, r, in->seg_end[0]);
		r->generated += a ? k : k - 1;
		r->t_last = t;
		in->batch.dec_ctx[i] += k;
	}
	in->decode_tokens += (uint64_t)k * in->n_run;
	in->iter_start = t;
	if (c->sched->decode_steps)
		c->sched->decode_steps(c, in, k);
	in->seg_next = end;
	c->seg_silent += k;
}

/* The segment ends: its silent gaps go into every request's histogram. */
void cl_seg_flush(sim_inst_t *in)
{
	if (in->seg_gaps.n) {
		for (uint32_t i = 0; i < in->n_run; i++) /* the misses overlap (cl_run_prefetch) */
			__builtin_prefetch(in->run[i]->gaps.run + in->run[i]->gaps.last, 1);
		for (uint32_t i = 0; i < in->n_run; i++)
			(void)tok_hist_merge(&in->run[i]->gaps, &in->seg_gaps); /* reserved */
	}
	tok_hist_clear(&in->seg_gaps);
	in->seg_n = 0;
}

/* Applies the silent iterations that ended before now (incl: at or before). */
void cl_seg_sync(cluster_t *c, sim_inst_t *in, int64_t now, int incl)
{
	uint32_t end = in->seg_next;
	while (end + 1 < in->seg_n && (in->seg_end[end] < now || (incl && in->seg_end[end] == now)))
		end++;
	seg_apply(c, in, end);
}

/* Something joins the instance's queue: the segment ends with the iteration
 * in flight, at its own end, as step mode would then schedule again. */
int cl_seg_cut(cluster_t *c, sim_inst_t *in)
{
	if (!in->seg_n)
		return 0;
	cl_seg_sync(c, in, ev_engine_now(c->eng), 0);
	if (in->seg_next + 1 >= in->seg_n)
		return 0;
	in->seg_n = in->seg_next + 1;
	if (ev_engine_reschedule(c->eng, in->seg_ev, in->seg_end[in->seg_next]))
		return KS_ERUNTIME;
	return 0;
}

int cl_on_kv_change(void *ctx)
{
	const cl_kv_hook_t *h = ctx;
	sim_inst_t *in = &h->c->inst[h->inst];
	return in->seg_n && in->seg_barred ? cl_seg_cut(h->c, in) : 0;
}

void cluster_sync(cluster_t *c, uint32_t inst)
{
	cl_seg_sync(c, &c->inst[inst], ev_engine_now(c->eng), 0);
}

/* Starts the batch just built (none when empty): its cost, its end's event,
 * and a segment of iterations when one can run. */
int cl_iter_launch(cluster_t *c, sim_inst_t *in)
{
	if (in->batch.n_pre + in->batch.n_dec == 0)
		return 0;
	int64_t dur = c->p.cost(in->cost_ctx, &in->batch), now = ev_engine_now(c->eng);
	if (dur < 1)
		dur = 1;
	if (dur > INT64_MAX - now) /* its end is past what int64 ns hold */
		return c->p.on_too_long ? c->p.on_too_long(c->p.hook_ctx, in->cost_ctx, in->id,
							   &in->batch, now)
					: KS_ERUNTIME;
	in->busy = 1;
	in->iter_start = now;
	int64_t end = in->iter_start + dur;
	int rc = seg_plan(c, in, &end);
	if (rc)
		return rc;
	in->seg_ev = ev_engine_at(c->eng, end, c->ev_iter, in->id, 0);
	if (in->seg_ev == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

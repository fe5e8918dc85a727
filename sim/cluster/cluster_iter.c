/* cluster_iter — an instance's iterations: the start (a queued job first,
 * client timeouts, then a step of the [scheduler] mode's scheduler) and the
 * end (chunks computed, tokens, completions, cache blocks, handoffs). */
#include "sim/cluster/cluster_int.h"

#include <string.h>

#include "sim/base/err.h"

/* Starts the first queued job, if any: 1 started, 0 none, < 0 error. */
static int job_start(cluster_t *c, sim_inst_t *in)
{
	if (!in->n_job)
		return 0;
	in->cur_job = in->job_id[0];
	int64_t dur = in->job_ns[0] < 1 ? 1 : in->job_ns[0];
	in->n_job--;
	memmove(in->job_id, in->job_id + 1, in->n_job * sizeof *in->job_id);
	memmove(in->job_ns, in->job_ns + 1, in->n_job * sizeof *in->job_ns);
	in->busy = 1;
	in->iter_start = ev_engine_now(c->eng);
	if (ev_engine_after(c->eng, dur, c->ev_iter, in->id, 0) == EV_NONE)
		return KS_ENOMEM;
	return 1;
}

/* Client timeouts (p.client_timeout_ns): the waiting requests that never
 * had a token and arrived more than the timeout ago leave with status
 * REQ_ABANDONED. Fresh arrivals join the back in arrival order, so the walk
 * stops at the first never-admitted request still in time; requeued ones
 * (preempted, landed) are stepped over. Waiting requests hold no blocks. */
static int abandon_expired(cluster_t *c, sim_inst_t *in)
{
	int64_t now = ev_engine_now(c->eng), T = c->p.client_timeout_ns;
	sim_req_t *prev = NULL;
	for (sim_req_t *r = in->wait_head, *next; r; r = next) {
		next = r->next;
		int fresh = r->t_admit < 0 && !r->landed;
		if (fresh && now - r->arrival <= T)
			break;
		if (r->generated || r->landed || r->fetch_src || now - r->arrival <= T) {
			prev = r;
			continue;
		}
		cl_wait_unlink(in, prev, r, now);
		in->prefill_tokens_queued -= r->in_len; /* counted at submit or requeue */
		int rc = cl_record(c, r, REQ_ABANDONED);
		cl_req_free(c, r);
		c->n_live--;
		if (rc)
			return rc;
	}
	return 0;
}

/* Starts what inst runs next, if it is idle: a queued job, else a step of
 * the scheduler (busy, the scheduler may still admit: admit_busy). */
int cl_iter_start(cluster_t *c, sim_inst_t *in)
{
	if (c->p.on_touch) /* every step ends here, and every admission starts here */
		c->p.on_touch(c->p.hook_ctx, in->id);
	if (c->p.client_timeout_ns > 0 && in->wait_head) {
		int rc = abandon_expired(c, in);
		if (rc)
			return rc;
	}
	if (in->busy)
		return c->sched->admit_busy ? c->sched->admit_busy(c, in) : 0;
	int rc = job_start(c, in);
	if (rc)
		return rc < 0 ? rc : 0;
	in->batch.n_pre = in->batch.n_dec = 0;
	return c->sched->step(c, in);
}

/* r's private full blocks, in chain order after its shared ones, become
 * cache blocks under their ids once their KV exists (the context of its
 * last step; the token just emitted has none yet): a new block READY at
 * once (CL_SCHED_F_CACHE_FULL). One already cached here (r computed it
 * privately beside another request) is shared instead under
 * CL_SCHED_F_SHARE_DUP (SGLang's radix cache), else ends the conversion
 * (vLLM keeps a duplicate as a block of its own); each scheduler's table
 * cites its engine. A block another request is still computing or copying
 * here stays private, and so do the blocks after it. 0, or a hook's error. */
static int cache_full_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r, int64_t now)
{
	int rc = 0;
	uint32_t B = c->p.block_tokens;
	int share = (c->sched->flags & CL_SCHED_F_SHARE_DUP) != 0;
	uint64_t kv_tok = (uint64_t)r->in_len + r->generated - 1;
	if (kv_tok < r->done_tok)
		kv_tok = r->done_tok;
	while (r->priv && r->shared_hold < r->n_ids && r->ready == r->shared_hold &&
	       (uint64_t)(r->shared_hold + 1) * B <= kv_tok) {
		uint64_t id = r->blocks[r->shared_hold];
		uint32_t *sl = &r->slot[r->shared_hold], found = kv_slot(in->kv, id), tag = 0;
		int was_spec = 0;
		/* one lookup: kv_hit_slot takes only a READY block, changing nothing else */
		if (found != KV_NO_SLOT && share &&
		    kv_hit_slot(in->kv, found, now, 1, &was_spec, &tag) == KS_OK) {
			*sl = found;
			int h = was_spec && c->p.on_spec_hit
				    ? c->p.on_spec_hit(c->p.hook_ctx, in->id, tag, 1)
				    : 0;
			rc = rc ? rc : h;
			kv_free_private(in->kv, 1);
		} else if (found == KV_NO_SLOT) {
			kv_free_private(in->kv, 1);
			int a = kv_alloc_slot(in->kv, id, r->shared_hold, KV_COMPUTING, 1, 0, now, sl);
			int b = kv_ready_slot(in->kv, *sl, now);
			a = kv_hook_error(a);
			rc = rc ? rc : a ? a : kv_hook_error(b);
		} else {
			break;
		}
		r->priv--;
		r->held = ++r->shared_hold;
		r->ready++;
		c->kv_block_frees++;
		c->kv_block_allocs++;
	}
	return rc;
}

/* CL_ROLE_PREFILL: run[k]'s prefill just ended with output left; it leaves
 * the instance (its cached prompt blocks stay, the rest is freed; it
 * forgets its block ids unless decode instances keep a prefix cache) for
 * the handoff hook. */
static int handoff(cluster_t *c, sim_inst_t *in, uint32_t k)
{
	sim_req_t *r = in->run[k];
	int rc = cl_release_blocks(c, in, r);
	if (rc)
		return rc;
	cl_run_remove(in, k);
	in->batch_full = 0;
	/* a decode prefix cache shares its prompt blocks, not its output's */
	r->n_ids = r->n_blocks = c->p.decode_prefix_cache ? r->n_blocks : 0;
	r->phase = RQ_WAITING;
	return c->p.on_handoff(c->p.hook_ctx, in->id, r);
}

int cl_iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	cluster_t *c = ctx;
	sim_inst_t *in = &c->inst[ev->target];
	/* all of the instance's lines at once (cl_run_prefetch's reason) */
	for (size_t o = 0; o < sizeof *in; o += 64)
		__builtin_prefetch((const char *)in + o, 1);
	int64_t now = ev_engine_now(eng);
	uint32_t B = c->p.block_tokens;
	cl_run_prefetch(in);
	if (in->seg_n) { /* the segment's last iteration: the others first */
		cl_seg_sync(c, in, now, 0);
		cl_seg_flush(in);
	}
	in->busy = 0;
	in->busy_ns += now - in->iter_start;
	if (c->p.on_busy)
		c->p.on_busy(c->p.hook_ctx, in, in->iter_start, now, in->cur_job ? 0 : 1);
	if (in->cur_job) {
		uint64_t job = in->cur_job;
		in->cur_job = 0;
		int rc = c->p.on_job_done ? c->p.on_job_done(c->p.hook_ctx, in->id, job) : 0;
		return rc ? rc : cl_iter_start(c, in);
	}
	in->iterations++;
	for (uint32_t k = 0; k < in->n_run;) {
		sim_req_t *r = in->run[k];
		if (k + 4 < in->n_run) { /* a histogram about to take its buffered gaps */
			const sim_req_t *q = in->run[k + 4];
			if (q->n_gap == CL_GAP_BUF)
				__builtin_prefetch(q->gaps.run + q->gaps.last, 1);
		}
		if (!r->in_batch) {
			k++;
			continue;
		}
		r->in_batch = 0;
		uint64_t share = decode_share(r);
		int tok = 1, prefilled = 0;
		if (r->done_tok < r->target) {
			r->done_tok += r->chunk;
			/* blocks whose every token is now computed become usable */
			int rc = 0;
			while (r->ready < r->shared_hold && (uint64_t)(r->ready + 1) * B <= r->done_tok) {
				int b = kv_hook_error(kv_ready_slot(in->kv, r->slot[r->ready++], now));
				rc = rc ? rc : b;
			}
			if (rc)
				return rc;
			tok = r->done_tok == r->target;
			if (tok) {
				prefilled = 1;
				r->t_prefilled = now;
				if (c->sched->prefilled && (rc = c->sched->prefilled(in, r, now)))
					return rc;
				if (c->p.ttft_prefill_end && r->generated == 0)
					tok = 0; /* the first token comes from a decode step */
			}
		}
		if (tok) {
			int rc = cl_emit_token(c, r, now);
			if (rc)
				return rc;
		}
		in->decode_tokens -= share;
		if (c->sched->flags & CL_SCHED_F_CACHE_FULL) {
			int rc = cache_full_blocks(c, in, r, now);
			if (rc)
				return rc;
		}
		if (r->generated >= r->out_len) {
			int rc = cl_release_blocks(c, in, r);
			if (rc)
				return rc;
			if (c->sched->completed)
				c->sched->completed(in, r);
			if ((rc = cl_record(c, r, REQ_COMPLETED)))
				return rc;
			cl_run_remove(in, k);
			cl_req_free(c, r);
			c->n_live--;
			in->batch_full = 0; /* the running batch shrank */
			continue;
		}
		if (prefilled && in->role == CL_ROLE_PREFILL) {
			int rc = handoff(c, in, k);
			if (rc)
				return rc;
			continue;
		}
		in->decode_tokens += decode_share(r);
		k++;
	}
	return cl_iter_start(c, in);
}


/* cluster_sglang — SCHED_SGLANG, one step of SGLang's scheduler.
 *
 * SCHED_SGLANG follows SGLang v0.4.9 (python/sglang/srt/managers/):
 * scheduler.py Scheduler.get_next_batch_to_run runs a prefill batch whenever
 * get_new_batch_prefill makes one and a decode step only otherwise, with no
 * decodes mixed into a prefill (enable_mixed_chunk off by default);
 * schedule_policy.py PrefillAdder admits in FCFS order against the pool less
 * a reserve for future output (add_one_req, _get_running_request_total_token_
 * offset); scheduler.py update_running_batch decays new_token_ratio each
 * decode step, and on decode out of memory schedule_batch.py
 * ScheduleBatch.retract_decode retracts the requests with the fewest output
 * tokens and resets the ratio. */
#include "sim/cluster/cluster_int.h"

#include "sim/base/err.h"

/* SCHED_SGLANG: which running request ScheduleBatch.retract_decode takes
 * first: the fewest output tokens, then the longest prompt, then the latest
 * in the batch (its stable sort, popped from the end). */
static uint32_t sg_retract_victim(const sim_inst_t *in)
{
	uint32_t v = 0;
	for (uint32_t k = 1; k < in->n_run; k++) {
		const sim_req_t *a = in->run[k], *b = in->run[v];
		if (a->generated < b->generated ||
		    (a->generated == b->generated && a->in_len >= b->in_len))
			v = k;
	}
	return v;
}

/* SCHED_SGLANG decode step (Scheduler.update_running_batch): when the pool
 * cannot give every running request its next token (check_decode_mem),
 * retract requests until the rest have room for retract_decode_steps more
 * tokens each, at least one and never the last, then set new_token_ratio to
 * min(1, (output so far + 20 x running) / total output of the running);
 * otherwise decay the ratio one step toward its floor. */
static int iter_start_sglang_decode(cluster_t *c, sim_inst_t *in)
{
	uint32_t B = c->p.block_tokens;
	uint64_t need = 0;
	int rc;
	if (!in->n_run)
		return 0; /* idle: get_next_batch_to_run makes no decode batch */
	for (uint32_t k = 0; k < in->n_run; k++) {
		const sim_req_t *r = in->run[k];
		uint32_t want = ceil_div((uint64_t)r->in_len + r->generated, B);
		uint32_t have = r->shared_hold + r->priv;
		need += want > have ? want - have : 0;
	}
	if (kv_free_or_evictable(in->kv) < need) {
		int first = 1;
		while (in->n_run > 1 &&
		       (first || (uint64_t)kv_free_or_evictable(in->kv) * B <
				     (uint64_t)SG_RETRACT_STEPS * in->n_run)) {
			first = 0;
			if ((rc = cl_preempt_at(c, in, sg_retract_victim(in), 0)))
				return rc;
		}
		double gen = 0, out = 0;
		for (uint32_t k = 0; k < in->n_run; k++) {
			gen += in->run[k]->generated;
			out += in->run[k]->out_len;
		}
		double ratio = (gen + (double)SG_RETRACT_STEPS * in->n_run) / out;
		in->new_token_ratio = ratio < 1 ? ratio : 1;
		in->batch_full = 0;
	} else {
		sg_decay(c, in);
	}
	for (uint32_t k = 0; k < in->n_run;) {
		sim_req_t *r = in->run[k];
		rc = cl_ensure_blocks(c, in, r, (uint64_t)r->in_len + r->generated);
		if (rc == KS_EFULL) {
			/* blocks held by copies landing here: r waits for another turn */
			if ((rc = cl_preempt_at(c, in, k, 0)))
				return rc;
			continue;
		}
		if (rc)
			return rc;
		cl_batch_add_decode(in, r);
		k++;
	}
	return cl_iter_launch(c, in);
}

/* SCHED_SGLANG: a prefill batch if one can be made (the unfinished chunked
 * prefill first, then admissions against the pool less the output reserve:
 * each decoding request's remaining output x new_token_ratio, in full for a
 * request whose prefill this batch ends), else a decode step. After an
 * admission fails for room, only the chunked prefill runs until the running
 * batch shrinks (batch_is_full in get_new_batch_prefill). */
static int sglang_step(cluster_t *c, sim_inst_t *in)
{
	uint32_t budget = c->p.max_batched_tokens;
	double resv = 0;
	for (uint32_t k = 0; k < in->n_run; k++)
		if (in->run[k]->done_tok >= in->run[k]->target)
			resv += sg_new_tokens(in->run[k]) * in->new_token_ratio;
	int rc;
	for (uint32_t k = 0; k < in->n_run && budget > 0; k++) {
		sim_req_t *r = in->run[k];
		if (r->done_tok >= r->target)
			continue;
		uint32_t ch;
		if ((rc = cl_batch_add_chunk(c, in, r, &budget, &ch)))
			return rc;
		if (ch && r->done_tok + ch == r->target)
			resv += sg_new_tokens(r);
	}
	if (!in->batch_full || in->batch.n_pre) {
		if ((rc = cl_admit_waiting(c, in, &budget, &resv)) < 0)
			return rc;
		if (rc)
			in->batch_full = 1;
	}
	if (in->batch.n_pre)
		return cl_iter_launch(c, in);
	return iter_start_sglang_decode(c, in);
}

/* k decode steps of a segment: each decays the ratio (update_running_batch
 * with room to spare, as a segment's steps have). */
static void sglang_decode_steps(cluster_t *c, sim_inst_t *in, uint32_t k)
{
	for (uint32_t j = 0; j < k; j++)
		sg_decay(c, in);
}

/* SGLang's batch defaults (cluster.h cluster_engine_defaults). */
static void sglang_defaults(const char *gpu, uint64_t hbm_bytes, uint32_t *max_num_seqs,
			    uint32_t *max_batched_tokens)
{
	const double MiB = 1024.0 * 1024;
	double mb = (double)hbm_bytes / MiB; /* SGLang's gpu_mem is in MB */
	(void)gpu;
	*max_batched_tokens = mb < 35 * 1024	? 2048
			      : mb < 60 * 1024	? 4096
			      : mb < 160 * 1024 ? 8192
						: 16384;
	*max_num_seqs = 2048;
}

/* SGLang takes per-sequence KV (sliding windows, states), runs prefills
 * unchunked when asked (chunked_prefill_size -1), ships vLLM's custom
 * all-reduce and serves through its API front-end; its radix cache holds a
 * request's context in pages allocated as it grows, caches every full one
 * (cache_unfinished_req) and frees a duplicate for the cached one. */
const cl_sched_ops_t cl_sched_sglang = {
    .flags = CL_SCHED_F_FIXED_KV | CL_SCHED_F_CUSTOM_AR | CL_SCHED_F_FRONTEND |
	     CL_SCHED_F_SEGMENTS | CL_SCHED_F_PAGED | CL_SCHED_F_CACHE_FULL | CL_SCHED_F_SHARE_DUP,
    .step = sglang_step,
    .decode_steps = sglang_decode_steps,
    .defaults = sglang_defaults,
};

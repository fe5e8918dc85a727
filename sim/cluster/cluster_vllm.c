/* cluster_vllm — SCHED_VLLM, one step of vLLM v1's scheduler.
 *
 * SCHED_VLLM follows vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py,
 * Scheduler.schedule, v0.11.0): running requests first (decodes take one
 * token, unfinished prefills take a chunk), then waiting requests in arrival
 * order while the batch has room (max_num_seqs sequences, max_batched_tokens
 * tokens). A decode that needs a new block when the pool is full preempts the
 * most recently admitted request (self.running.pop()), which frees its blocks
 * and later recomputes its context; a step that preempted admits no waiting
 * request ("if not preempted_reqs:" before the waiting loop).
 */
#include "sim/cluster/cluster_int.h"

#include <string.h>

#include "sim/base/err.h"

/* Preempts the most recently admitted running request (vLLM), to *victim;
 * 0 or a hook's error. */
static int preempt_last(cluster_t *c, sim_inst_t *in, sim_req_t **victim)
{
	*victim = in->run[in->n_run - 1];
	return cl_preempt_at(c, in, in->n_run - 1, 1);
}

/* SCHED_VLLM: one step of vLLM v1's Scheduler.schedule. */
static int vllm_step(cluster_t *c, sim_inst_t *in)
{
	uint32_t budget = c->p.max_batched_tokens;
	int preempted = 0, rc;
	for (uint32_t k = 0; k < in->n_run && budget > 0; k++) {
		sim_req_t *r = in->run[k];
		if (r->done_tok < r->target) {
			if ((rc = cl_batch_add_chunk(c, in, r, &budget, NULL)))
				return rc;
			continue;
		}
		uint64_t ctx = (uint64_t)r->in_len + r->generated;
		int preempted_self = 0;
		while ((rc = cl_ensure_blocks(c, in, r, ctx)) == KS_EFULL) {
			sim_req_t *v;
			preempted = 1;
			if ((rc = preempt_last(c, in, &v)))
				return rc;
			if (v == r) {
				preempted_self = 1;
				break;
			}
		}
		if (rc)
			return rc;
		if (preempted_self)
			break; /* r was the last running request */
		cl_batch_add_decode(in, r);
		budget--;
	}
	if (!preempted && (rc = cl_admit_waiting(c, in, &budget, NULL)) < 0)
		return rc;
	return cl_iter_launch(c, in);
}

/* vLLM's OpenAI-server batch defaults (cluster.h cluster_engine_defaults). */
void cl_vllm_defaults(const char *gpu, uint64_t hbm_bytes, uint32_t *max_num_seqs,
		      uint32_t *max_batched_tokens)
{
	const double GiB = 1024.0 * 1024 * 1024;
	int a100 = 0;
	for (const char *p = gpu; p && *p && !a100; p++)
		a100 = (p[0] == 'a' || p[0] == 'A') && !strncmp(p + 1, "100", 3);
	int big = (double)hbm_bytes >= 70 * GiB && !a100;
	*max_num_seqs = big ? 1024 : 256;
	*max_batched_tokens = big ? 8192 : 2048;
}

/* vLLM v1 takes per-sequence KV (its hybrid KV cache manager), is the
 * engine the disaggregated pools are modelled on, always chunks prefills
 * (vllm/v1/core/sched/scheduler.py: no switch), runs the TP all-reduce with
 * its custom kernel and serves through its API front-end; its block pool
 * allocates a request's blocks as its context grows and caches every full
 * block (KVCacheManager.cache_blocks), keeping a duplicate as a block of its
 * own (BlockPool.cache_full_blocks). */
const cl_sched_ops_t cl_sched_vllm = {
    .flags = CL_SCHED_F_FIXED_KV | CL_SCHED_F_DISAGG | CL_SCHED_F_ALWAYS_CHUNKS |
	     CL_SCHED_F_CUSTOM_AR | CL_SCHED_F_FRONTEND | CL_SCHED_F_SEGMENTS | CL_SCHED_F_PAGED |
	     CL_SCHED_F_CACHE_FULL,
    .step = vllm_step,
    .defaults = cl_vllm_defaults,
};

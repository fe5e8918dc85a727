/* cluster_int — what the pieces of the cluster share: requests, their
 * queue and rows (cluster_req.c); admission, preemption and batch building
 * (cluster_admit.c); an iteration's launch and decode segments
 * (cluster_seg.c); one file per scheduler (cluster_vllm.c,
 * cluster_sglang.c, cluster_btb.c, each defining its cl_sched_ops_t) and
 * their dispatch (cluster_sched.c); an iteration's start and end
 * (cluster_iter.c). Internal to sim/cluster; not an API. Units, ownership
 * and errors as in cluster.h.
 */
#ifndef KVSIM_CLUSTER_INT_H
#define KVSIM_CLUSTER_INT_H

#include "sim/cluster/cluster.h"

/* SGLang v0.4.9 constants: python/sglang/global_config.py
 * (default_init_new_token_ratio 0.7, default_min_new_token_ratio_factor
 * 0.14, default_new_token_ratio_decay_steps 600, retract_decode_steps 20) and
 * schedule_policy.py (CLIP_MAX_NEW_TOKENS 4096). */
#define SG_INIT_RATIO 0.7
#define SG_MIN_RATIO_FACTOR 0.14
#define SG_DECAY_STEPS 600.0
#define SG_RETRACT_STEPS 20u
#define SG_CLIP_NEW 4096u

/* Scheduler.__init__: init = min(0.7 x schedule_conservativeness, 1),
 * min = min(init x 0.14, 1), decay = (init - min) / 600 per decode step. */
static inline double sg_init_ratio(const cluster_t *c)
{
	double r = SG_INIT_RATIO * c->p.conservativeness;
	return r < 1 ? r : 1;
}

static inline double sg_min_ratio(const cluster_t *c)
{
	double r = sg_init_ratio(c) * SG_MIN_RATIO_FACTOR;
	return r < 1 ? r : 1;
}

/* SCHED_SGLANG: one decode step's decay of new_token_ratio toward its floor. */
static inline void sg_decay(cluster_t *c, sim_inst_t *in)
{
	double lo = sg_min_ratio(c);
	double r = in->new_token_ratio - (sg_init_ratio(c) - lo) / SG_DECAY_STEPS;
	in->new_token_ratio = r > lo ? r : lo;
}

/* SGLang's reserve for r's future output: min(max_new_tokens - output so
 * far, CLIP_MAX_NEW_TOKENS) (schedule_policy.py); kvsim knows the output
 * length and takes it as max_new_tokens. */
static inline double sg_new_tokens(const sim_req_t *r)
{
	uint32_t left = r->out_len - r->generated;
	return left < SG_CLIP_NEW ? left : SG_CLIP_NEW;
}

static inline uint32_t ceil_div(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* What a running request adds to its instance's decode_tokens. */
static inline uint64_t decode_share(const sim_req_t *r)
{
	return r->done_tok >= r->target ? (uint64_t)r->in_len + r->generated : 0;
}

/* cluster_req.c: the request pool, result rows, the waiting queue, tokens */
void cl_req_destroy(sim_req_t *r);
void cl_req_free(cluster_t *c, sim_req_t *r);
sim_req_t *cl_req_get(cluster_t *c, uint32_t n_blocks);
/* Hands q's row, with status REQ_*, to p.on_result. */
int cl_record(cluster_t *c, sim_req_t *q, int32_t status);
/* r's buffered gaps (gap_buf) into its histogram. 0 or KS_ENOMEM (those
 * not yet added stay buffered). */
int cl_gaps_flush(sim_req_t *r);
/* Asks for the hot lines (sim_req_t) of every running request of in at
 * once, before an iteration's loops walk them: their cache misses then
 * overlap instead of following one another. */
static inline void cl_run_prefetch(const sim_inst_t *in)
{
	for (uint32_t k = 0; k < in->n_run; k++) {
		__builtin_prefetch(in->run[k], 1);
		__builtin_prefetch((const char *)in->run[k] + 64, 1);
	}
}
void cl_wait_push_back(sim_inst_t *in, sim_req_t *r, int64_t now);
void cl_wait_push_front(sim_inst_t *in, sim_req_t *r, int64_t now);
void cl_wait_unlink(sim_inst_t *in, sim_req_t *prev, sim_req_t *r, int64_t now);
int cl_emit_token(cluster_t *c, sim_req_t *r, int64_t now);

/* cluster_admit.c: a request's KV on its instance, and the batch */
/* Errors: a store hook's or a cluster hook's (p.on_*) negative KS_ code,
 * passed up as it came, after the change it interrupted is complete. */
int cl_release_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r);
int cl_ensure_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint64_t ctx);
int cl_admit_account(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t m, uint32_t spec_hits,
		     uint32_t target, int64_t now);
int cl_ref_prefix(cluster_t *c, sim_inst_t *in, const uint64_t *ids, const uint32_t *slots,
		  uint32_t m, int64_t now, uint32_t *spec);
void cl_run_remove(sim_inst_t *in, uint32_t k);
/* Room for one more running request: past CL_RUN_INLINE the list moves
 * to the heap, doubling up to most (the sequence cap), and the batch's
 * arrays with it (a batch holds each running request at most once). 0 or
 * KS_ENOMEM (nothing changed). */
int cl_run_room(sim_inst_t *in, uint32_t most);
int cl_preempt_at(cluster_t *c, sim_inst_t *in, uint32_t k, int front);
void cl_batch_add_prefill(sim_inst_t *in, sim_req_t *r, uint32_t chunk);
int cl_batch_add_chunk(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t *budget,
		       uint32_t *chunk);
void cl_batch_add_decode(sim_inst_t *in, sim_req_t *r);
int cl_admit_waiting(cluster_t *c, sim_inst_t *in, uint32_t *budget, double *resv);

/* cluster_seg.c: launching the batch built, and decode segments */
int cl_iter_launch(cluster_t *c, sim_inst_t *in);
void cl_seg_flush(sim_inst_t *in);
void cl_seg_sync(cluster_t *c, sim_inst_t *in, int64_t now, int incl);
int cl_seg_cut(cluster_t *c, sim_inst_t *in);
/* The context of an instance's store change hook (kv_change_fn), and the
 * hook: a segment that runs past a barred cache conversion (seg_barred)
 * ends with the iteration in flight. */
typedef struct cl_kv_hook {
	cluster_t *c;
	uint32_t inst;
} cl_kv_hook_t;
int cl_on_kv_change(void *ctx);

/* A scheduler (one entry of CLUSTER_SCHED_LIST, cluster.h): what the shared
 * code asks of it, in its own file. step and defaults are required; a NULL
 * optional hook does nothing (or, fits, refuses nothing). */
typedef struct cl_sched_ops {
	unsigned flags; /* CL_SCHED_F_* (cluster.h) */
	/* One step on an idle instance with an empty batch: admits, builds the
	 * batch (preempting by its own rule when the pool runs out) and starts
	 * it with cl_iter_launch. */
	int (*step)(cluster_t *c, sim_inst_t *in);
	/* The instance is kicked while an iteration is in flight (an arrival, a
	 * landing): admissions that do not wait for the next step. */
	int (*admit_busy)(cluster_t *c, sim_inst_t *in);
	/* r's prefill ended at now, before its token and cache blocks. */
	int (*prefilled)(sim_inst_t *in, sim_req_t *r, int64_t now);
	/* r completed at the end of an iteration; its blocks are released. */
	void (*completed)(sim_inst_t *in, const sim_req_t *r);
	/* Whether a request of tok context tokens (input + output) can ever be
	 * admitted by its own rule, beside fitting the pool's blocks. */
	int (*fits)(const cluster_t *c, uint64_t tok);
	/* k decode-only iterations of a segment applied at once
	 * (DECODE_SEGMENT): what each one's step does to its own state. */
	void (*decode_steps)(cluster_t *c, sim_inst_t *in, uint32_t k);
	/* cluster_engine_defaults for this engine. */
	void (*defaults)(const char *gpu, uint64_t hbm_bytes, uint32_t *max_num_seqs,
			 uint32_t *max_batched_tokens);
} cl_sched_ops_t;
#define CL_SCHED_EXTERN(M, name, ops) extern const cl_sched_ops_t ops;
CLUSTER_SCHED_LIST(CL_SCHED_EXTERN)
#undef CL_SCHED_EXTERN
/* mode's table (cluster_sched.c), NULL when mode is none of the list's. */
const cl_sched_ops_t *cl_sched(int mode);
/* vLLM's batch defaults (cluster_vllm.c), which SCHED_BTB also takes. */
void cl_vllm_defaults(const char *gpu, uint64_t hbm_bytes, uint32_t *max_num_seqs,
		      uint32_t *max_batched_tokens);

/* cluster_iter.c: an iteration's start, and its end (the ev_iter event) */
int cl_iter_start(cluster_t *c, sim_inst_t *in);
int cl_iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

#endif

/* cluster — instances, requests and the continuous-batching scheduler.
 *
 * A cluster_t owns its instances (each a tensor-parallel group of GPUs on one
 * node with its own kv_store and scheduler) and the requests in the system;
 * each finished request's result row goes to the on_result hook (the run's
 * recorder owns the rows). It runs on an ev_engine it does not own. Times
 * are ns, sizes bytes or blocks as named. Requests enter with cluster_submit
 * (at their arrival time, already routed); each instance runs one iteration
 * event at a time whose duration comes from the cost callback. Every request
 * ends completed, rejected (with a reason), abandoned (p.client_timeout_ns)
 * or unfinished at cluster_finish; none is dropped. Errors:
 * KS_ENOMEM, KS_EINPUT (cluster_init without an on_result hook, with a
 * prefill instance and no on_handoff hook, with a sched_mode not in
 * CLUSTER_SCHED_LIST, or with fixed_blocks_per_seq under a scheduler without
 * CL_SCHED_F_FIXED_KV).
 */
#ifndef KVSIM_CLUSTER_H
#define KVSIM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "sim/engine/ev_engine.h"
#include "sim/cluster/kv_store.h"
#include "sim/cluster/tok_hist.h"
#include "sim/base/results.h"

/* One scheduler iteration, handed to the cost model. */
typedef struct sim_batch {
	uint32_t n_pre, n_dec;
	uint32_t *pre_new;  /* tokens computed this iteration, per prefill chunk */
	uint32_t *pre_ctx;  /* tokens already in KV before the chunk */
	uint32_t *dec_ctx;  /* context length of each decoding sequence */
} sim_batch_t;

typedef int64_t (*sim_cost_fn)(void *ctx, const sim_batch_t *b);
/* dur[j], j < steps: cost of the decode-only batch b with every context j
 * tokens longer, exactly as sim_cost_fn gives it (a closed form of a
 * decode segment's steps). */
typedef void (*sim_cost_run_fn)(void *ctx, const sim_batch_t *b, uint32_t steps, int64_t *dur);

/* What happens when a needed block is being computed (or copied) here for
 * another request: wait until it is ready, or recompute it privately. */
enum { BUSY_WAIT = 0, BUSY_RECOMPUTE = 1 };

/* Scheduler rules ([scheduler] mode).
 * VLLM: vLLM v1's continuous batching (see cluster_vllm.c).
 * SGLANG: SGLang's scheduler (v0.4.9, see cluster_sglang.c): a step is either a
 *   prefill batch (the unfinished chunked prefill, then waiting requests in
 *   arrival order admitted against a reserve for future output scaled by
 *   new_token_ratio) or, when no prefill can run, a decode step of every
 *   running request; decode out of memory retracts the requests with the
 *   fewest output tokens.
 * BTB: the original study's simulator (reference notes sec. 2.1-2.4): a
 *   queued request is admitted as soon as its reservation (input + output
 *   tokens against resv_tokens_cap, no prefix dedup) fits, FIFO with
 *   head-of-line blocking, even while the instance is busy; admitted
 *   requests are prefilled one per iteration, whole, in admission order,
 *   before any decode (prefill priority); decode steps take every running
 *   sequence. The prefix cache is a separate budget (the KV store, of
 *   kv_blocks): a request inserts its prompt blocks plus synthetic blocks
 *   covering its output when admitted and holds none of them while it runs.
 *   (The study's unbounded host-RAM tier is not modelled.) */

/* The schedulers, one line each: the suffix of its SCHED_ constant, its
 * scheduler.mode name, and the cl_sched_ops_t (cluster_int.h) its file
 * defines. The SCHED_* values (list order: VLLM = 0, BTB = 1, SGLANG = 2,
 * which configs and digests keep), the scheduler.mode choices
 * (sim/run/sim_cfg.c's map), cluster_sched_name and the dispatch (cl_sched,
 * cluster_sched.c) all come from this list; adding a scheduler is its file
 * plus one line here, and its rules in scheduler.mode's doc
 * (CONTRIBUTING.md). */
#define CLUSTER_SCHED_LIST(X)                                                                      \
	X(VLLM, "vllm", cl_sched_vllm)                                                             \
	X(BTB, "btb", cl_sched_btb)                                                                \
	X(SGLANG, "sglang", cl_sched_sglang)

#define CLUSTER_SCHED_ENUM(M, name, ops) SCHED_##M,
enum { CLUSTER_SCHED_LIST(CLUSTER_SCHED_ENUM) SCHED_N };
#undef CLUSTER_SCHED_ENUM
_Static_assert(SCHED_VLLM == 0 && SCHED_BTB == 1 && SCHED_SGLANG == 2,
	       "scheduler.mode values are kept by configs and digests: append new schedulers");

/* What a scheduler's engine does, beside its steps (cluster_sched_flags;
 * each scheduler's table says why it sets each).
 * FIXED_KV: it takes fixed_blocks_per_seq (else cluster_init: KS_EINPUT).
 * DISAGG: disaggregated prefill and decode instances are modelled under it.
 * ALWAYS_CHUNKS: its engine always chunks prefills (chunked_prefill off
 *   matches no real engine).
 * RESIDENT_AT_ADMIT: KV counting as resident at admission is its own rule
 *   (resident_at_admission matches no real engine under the others).
 * CUSTOM_AR: its engine runs the TP all-reduce with its own kernel
 *   ([compute] allreduce = auto: custom, else nccl).
 * FRONTEND: a client's times include the engine's front-end
 *   ([scheduler] frontend_ms = -1: the measured value, else 0).
 * What ends a decode segment (DECODE_SEGMENT) follows from the next three,
 * which drive the iterations themselves; a completion always does.
 * SEGMENTS: decode segments run under it at all (nothing joins the running
 *   requests while an iteration is in flight).
 * PAGED: a running request holds its context's blocks and its decode step
 *   allocates the next one when the context outgrows them (which may
 *   preempt): a segment ends before an iteration needing one.
 * CACHE_FULL: every full block a request holds becomes a cache block once
 *   its KV exists (cluster_iter.c cache_full_blocks): a segment ends with
 *   the iteration caching one.
 * SHARE_DUP: with CACHE_FULL, a block already cached here (computed twice)
 *   is shared and the duplicate freed; without, it stays private and ends
 *   the conversion. */
#define CL_SCHED_F_FIXED_KV 0x1u
#define CL_SCHED_F_DISAGG 0x2u
#define CL_SCHED_F_ALWAYS_CHUNKS 0x4u
#define CL_SCHED_F_RESIDENT_AT_ADMIT 0x8u
#define CL_SCHED_F_CUSTOM_AR 0x10u
#define CL_SCHED_F_FRONTEND 0x20u
#define CL_SCHED_F_SEGMENTS 0x40u
#define CL_SCHED_F_PAGED 0x80u
#define CL_SCHED_F_CACHE_FULL 0x100u
#define CL_SCHED_F_SHARE_DUP 0x200u

/* The scheduler.mode name of mode ("?" when it is none of the list's). */
const char *cluster_sched_name(int mode);
/* mode's CL_SCHED_F_* (0 when it is none of the list's). */
unsigned cluster_sched_flags(int mode);
/* The names of the schedulers having every flag of flags, in list order,
 * joined by " or " into buf (n >= 1 bytes, truncated), for messages;
 * returns buf. */
const char *cluster_sched_names(unsigned flags, char *buf, size_t n);

/* Decode stepping ([scheduler] decode).
 * STEP: one engine event per iteration (the validation mode).
 * SEGMENT: under SCHED_VLLM and SCHED_SGLANG, an iteration whose batch is
 *   every running request decoding, with nothing waiting and no job queued,
 *   schedules one event for a run of such iterations (a segment): up to the
 *   first that completes a request, needs a block allocated for its next
 *   token, or may turn a block into a cache block. Each iteration's duration
 *   is the cost callback on the batch that step mode would build (contexts
 *   one token longer each step), or cost_run's closed form of the same;
 *   the iterations before the last are applied
 *   lazily ("silent"), with their own end times, when the segment's event
 *   fires, when a request or job is queued on the instance (the segment is
 *   then cut at the end of the iteration in flight, whose end stays), or
 *   when cluster_sync asks. An iteration ending exactly at the time of the
 *   call counts as not yet completed there: step mode would dispatch the
 *   caller's event first when it was scheduled before that iteration began
 *   (a trace arrival, a timer), the usual case. The iteration counts, the
 *   hook calls and the request rows are those of STEP, but that each
 *   iteration's duration may differ from STEP's by 1 ns where cost_run's
 *   closed form rounds the other way (a q-norm roofline: mdl_decode_run_ns),
 *   so times drift by at most 1 ns per iteration; exactly STEP's with a
 *   cost that has no q-norm, or without cost_run. */
enum { DECODE_STEP = 0, DECODE_SEGMENT = 1 };

/* What an instance runs (cluster_params_t.inst_role). MIXED: prefill and
 * decode (vLLM, SGLang; every instance when inst_role is NULL). PREFILL: a
 * request whose prefill ends here with output left leaves the instance
 * (its full prompt blocks stay as prefix cache, the rest is freed) and goes
 * to p.on_handoff; the first token is emitted here first unless
 * ttft_prefill_end. DECODE: takes requests only through
 * cluster_handoff_land, their prompt KV already there; with
 * p.decode_prefix_cache its full prompt blocks become cache blocks there
 * (READY at admission, kept after it completes, evicted LRU as any), and
 * cluster_decode_pin holds those it finds there before its KV moves. */
enum { CL_ROLE_MIXED = 0, CL_ROLE_PREFILL = 1, CL_ROLE_DECODE = 2 };

struct sim_req;
struct sim_inst;
struct cl_sched_ops;

typedef struct cluster_params {
	uint32_t n_instances;
	uint32_t block_tokens;
	uint32_t kv_blocks;          /* KV pool per instance, blocks */
	uint64_t block_bytes;        /* bytes of one block over the whole TP group */
	/* Private blocks every admitted request holds beside its context's
	 * (SCHED_VLLM, SCHED_SGLANG): the model's KV that is per sequence, not
	 * per token (sliding windows in full, state-space states), in blocks of
	 * the paged size; taken at admission, freed with its other blocks at
	 * completion, preemption or handoff. 0: a full-attention model. Only
	 * under CL_SCHED_F_FIXED_KV (else cluster_init: KS_EINPUT). */
	uint32_t fixed_blocks_per_seq;
	uint32_t max_num_seqs;
	uint32_t max_batched_tokens;
	int chunked_prefill;
	int busy_rule;               /* BUSY_* */
	int sched_mode;              /* SCHED_* */
	/* KV of an admitted request's prompt blocks counts as resident (READY:
	 * matchable, copyable) at admission instead of when its prefill ends:
	 * the study's assumption, off by default. */
	int resident_at_admission;
	/* Every output token comes from a decode step and TTFT is taken at the
	 * end of the prefill, excluding the first decode step (the study's
	 * metric); off: the prefill emits the first token (vLLM). */
	int ttft_prefill_end;
	int decode_mode;             /* DECODE_* */
	uint64_t resv_tokens_cap;    /* SCHED_BTB reservation budget, tokens */
	/* SCHED_SGLANG: SGLang's schedule_conservativeness (>= 0; 1 is its
	 * default): new_token_ratio starts at min(0.7 x this, 1). */
	double conservativeness;
	sim_cost_fn cost;
	sim_cost_run_fn cost_run;    /* may be NULL: cost is called per step */
	void *cost_ctx;
	/* Per instance (n_instances entries, borrowed for cluster_init), or
	 * NULL: cost_ctx and kv_blocks for every instance, all CL_ROLE_MIXED.
	 * Heterogeneous pools give each instance its pool's compute model and
	 * KV pool. */
	void *const *inst_cost_ctx;
	const uint32_t *inst_kv_blocks;
	const uint8_t *inst_role;    /* CL_ROLE_* */
	/* CL_ROLE_PREFILL: r's prefill ended on inst and r left it; the hook
	 * owns r until cluster_handoff_land or cluster_handoff_drop. Nonzero
	 * stops the run. Required when a role is PREFILL. */
	int (*on_handoff)(void *ctx, uint32_t inst, struct sim_req *r);
	/* CL_ROLE_DECODE instances keep a prefix cache (cluster.h
	 * CL_ROLE_DECODE); a handed-off request keeps its prompt's block ids.
	 * 0: they keep none and a handoff forgets the ids (the default). */
	int decode_prefix_cache;
	/* CL_ROLE_PREFILL: the iteration starting now computes the last chunk
	 * of r's prefill (layer-wise transfer starts with it; may be NULL).
	 * Nonzero (a negative KS_ code) stops the run. */
	int (*on_last_chunk)(void *ctx, uint32_t inst, struct sim_req *r);
	int64_t ttft_slo_ns, tpot_slo_ns;
	/* A waiting request with no first token whose arrival is more than this
	 * before a scheduling step of its instance leaves the queue with status
	 * REQ_ABANDONED (its client timed out); 0: never. A request whose peer
	 * fetch has started, or that holds KV landed by a handoff, is kept. */
	int64_t client_timeout_ns;
	/* A request used `blocks` speculative blocks tagged `tag` (may be
	 * NULL). Nonzero (a negative KS_ code) stops the run. */
	int (*on_spec_hit)(void *ctx, uint32_t inst, uint32_t tag, uint32_t blocks);
	/* r was admitted on inst for the first time: it leaves the waiting
	 * queue and its prefill starts (may be NULL; preempted requests
	 * readmitted later do not call it again). Nonzero (a negative KS_
	 * code) stops the run. */
	int (*on_admit)(void *ctx, uint32_t inst, const struct sim_req *r);
	/* A job queued with cluster_job_add finished on inst (may be NULL). */
	int (*on_job_done)(void *ctx, uint32_t inst, uint64_t job);
	/* Under BUSY_WAIT, r's first missing block (index first) is INFLIGHT
	 * here: 1 waits for the copy to land, 0 computes the rest of the prompt
	 * privately. NULL: always wait. */
	int (*wait_inflight)(void *ctx, uint32_t inst, const struct sim_req *r, uint32_t first);
	/* inst's sampled state (n_wait, n_run, its store's used and speculative
	 * blocks) may change in the call being made: an enqueue or a scheduler
	 * step there (may be NULL). A decode segment's silent iterations change
	 * none of it, so cluster_sync never calls it. */
	void (*on_touch)(void *ctx, uint32_t inst);
	/* An iteration of b on inst (its cost_ctx) would end past the largest
	 * simulated time (int64 ns) from now: says why in the run's error and
	 * returns the code that stops the run (NULL: KS_ERUNTIME). */
	int (*on_too_long)(void *ctx, void *cost_ctx, uint32_t inst, const sim_batch_t *b,
	                   int64_t now);
	/* inst's compute was busy over [t0, t1) (t1 > t0), now counted in its
	 * busy_ns: n iterations of in->batch (in->run's requests with in_batch
	 * set; n > 1: a decode segment's iterations applied at once, at its end
	 * or a cluster_sync), or, n = 0, the job in->cur_job. Called where
	 * busy_ns grows, so one instance's intervals follow each other without
	 * overlap and add up to busy_ns; it must not change the cluster (may be
	 * NULL). */
	void (*on_busy)(void *ctx, const struct sim_inst *in, int64_t t0, int64_t t1, uint32_t n);
	void *hook_ctx;
	/* Every request's result row, once, when it completes, is rejected or
	 * is still in the system at cluster_finish (required; the run's
	 * recorder, sim/run/recorder.h). Nonzero stops the run. */
	int (*on_result)(void *ctx, const res_request_t *row);
	void *result_ctx;
} cluster_params_t;

enum { RQ_WAITING = 0, RQ_RUNNING = 1, RQ_DONE = 2 };

/* Alignment of a request, bytes: its first two cache lines, which an
 * adjacent-line prefetch brings together, hold what each token touches. */
#define CL_REQ_ALIGN 128
/* Gaps a request buffers before they go to its histogram: 11 fill the
 * rest of its two hot lines (sim_req_t). */
#define CL_GAP_BUF 11

typedef struct sim_req {
	/* What an iteration reads or writes for each request of its batch
	 * comes first, in the two cache lines of CL_REQ_ALIGN: with thousands
	 * of instances the running requests outgrow the caches, and a token's
	 * misses, not its instructions, set the cost per request. */
	uint32_t done_tok;         /* context tokens whose KV exists */
	uint32_t target;           /* context to prefill: in_len + generated at admission */
	uint32_t chunk;            /* tokens in the current iteration */
	uint32_t generated;
	uint32_t in_len, out_len;
	int64_t t_last;
	uint32_t n_ids;
	uint32_t ready;            /* held blocks known READY */
	uint32_t shared_hold;      /* prefix blocks held as shared (rest private) */
	uint32_t priv;             /* private blocks held for its context */
	uint8_t phase;
	uint8_t in_batch;
	uint8_t n_gap;             /* gaps in gap_buf */
	uint32_t gap_buf[CL_GAP_BUF]; /* the latest gaps, ns, not yet in gaps: a token
				      writes here, not to the histogram's array
				      (cl_emit_token, cl_gaps_flush) */
	tok_hist_t gaps;           /* inter-token gaps, ns (buffer kept across reuse); a
				      decode segment's silent gaps join it when it ends */
	uint32_t n_blocks;
	uint32_t held;             /* prefix blocks held (refs or own COMPUTING) */
	uint64_t id;
	int64_t arrival;
	uint64_t *blocks;          /* chained prefix ids, owned: n_blocks of the prompt, then
				      n_ids - n_blocks of full blocks ending in the output */
	uint32_t cap_blocks;       /* capacity of blocks (kept across reuse) */
	uint32_t *slot;            /* slot[j]: blocks[j]'s slot in the store holding it, for
				      j < shared_hold (kv_store.h: by slot), owned */
	uint32_t cap_slot;         /* capacity of slot (kept across reuse) */
	int32_t inst;
	uint32_t own_from;         /* first held block this request computes */
	uint32_t fixed;            /* private blocks held for its per-sequence KV
				      (p.fixed_blocks_per_seq while admitted, else 0) */
	uint32_t n_synth;          /* SCHED_BTB: synthetic output blocks it inserted */
	uint32_t tok_local, tok_recomputed, tok_spec_hit, tok_peer, tok_host;
	uint32_t fetch_lo, fetch_hi;  /* prefix blocks [lo, hi) fetched for it */
	uint8_t fetch_src;            /* 0 none, 1 peer HBM, 2 host memory */
	int64_t fetch_wait;           /* arrival to the fetch landing, ns */
	uint32_t preemptions;
	int64_t t_admit, t_first;
	int64_t t_prefilled;       /* end of the prefill (-1 before) */
	/* disaggregation: the handoff hook's own index + 1 (0: none), the
	 * decode instance (-1: none), when its KV landed there (-1: not yet),
	 * and whether it waits on that instance with its KV landed */
	uint32_t handoff;
	uint32_t dec_hit;          /* prompt blocks referenced on the decode instance
				      by cluster_decode_pin, until admitted there */
	int32_t dec_inst;
	int64_t t_landed;
	uint8_t landed;
	struct sim_req *next;      /* waiting queue link */
} sim_req_t;

/* Running requests an instance keeps in its own lines (own choice: a
 * cache line of pointers; more move the list to the heap). */
#define CL_RUN_INLINE 8

typedef struct sim_inst {
	uint32_t id;
	uint8_t role;              /* CL_ROLE_* */
	void *cost_ctx;            /* its pool's compute model */
	kv_store_t *kv;
	sim_req_t *wait_head, *wait_tail;
	uint32_t n_wait;
	sim_req_t **run;           /* running requests in admission order: run_inl
				      until more run (cl_run_room) */
	uint32_t n_run, cap_run;
	int busy;
	int64_t iter_start;
	uint64_t prefill_tokens_queued; /* prompt tokens not yet computed */
	uint64_t decode_tokens;    /* context tokens of running requests past prefill,
				      kept at every change so routers read it in O(1) */
	int64_t wait_since;        /* last change of n_wait */
	double wait_area;          /* integral of n_wait over time, request*ns */
	int64_t busy_ns;
	uint64_t iterations;
	sim_batch_t batch;         /* its arrays hold cap_run entries (bat_inl, then the
				      heap with the running list: cl_run_room) */
	uint64_t resv_tokens;      /* SCHED_BTB: tokens reserved by running requests */
	double new_token_ratio;    /* SCHED_SGLANG: share of remaining output reserved */
	int batch_full;            /* SCHED_SGLANG: admission failed; no prefill until the
				      running batch shrinks (SGLang's batch_is_full) */
	/* jobs that occupy the instance's compute (copies charged to it) */
	uint64_t *job_id;
	int64_t *job_ns;
	uint32_t n_job, cap_job;
	uint64_t cur_job;          /* running job, 0 = an iteration */
	/* DECODE_SEGMENT: end times (ns) of the segment's iterations, seg_n of
	 * them (0: no segment), [seg_next] the one in flight; its event. */
	int64_t *seg_end;
	uint32_t seg_n, seg_next, seg_cap;
	uint8_t seg_barred; /* it runs past a cache conversion the store bars:
			       a change of the store cuts it (cluster_seg.c) */
	ev_handle_t seg_ev;
	tok_hist_t seg_gaps;       /* gaps of the segment's silent iterations after its
				      first, common to its requests, until it ends */
	/* the first CL_RUN_INLINE running requests, in the instance's own
	 * lines: an iteration's end reaches its batch without first missing
	 * on a separate array (cl_iter_done prefetches the instance whole) */
	sim_req_t *run_inl[CL_RUN_INLINE];
	uint32_t bat_inl[3][CL_RUN_INLINE]; /* the batch's pre_new, pre_ctx, dec_ctx */
} sim_inst_t;

typedef struct cluster {
	cluster_params_t p;
	ev_engine_t *eng;
	uint32_t ev_iter;          /* event type of iteration completions (from eng) */
	sim_inst_t *inst;
	uint64_t n_done;           /* request rows handed to p.on_result */
	uint64_t n_live;           /* requests submitted and not finished */
	uint64_t kv_block_allocs, kv_block_frees; /* private+shared block-events */
	uint64_t blocks_total, blocks_hit; /* shareable prompt blocks, and matched */
	int err;                   /* first error inside a handler */
	uint64_t checks;           /* cluster_check calls */
	uint64_t seg_silent;       /* iterations applied without an event of their own */
	struct cl_kv_hook *kv_hook; /* per instance: its store's change hook's context */
	const struct cl_sched_ops *sched; /* p.sched_mode's table (cluster_int.h) */
	/* Requests are reused: a finished one goes to req_pool (linked by next)
	 * with its block and gap-histogram buffers, and cluster_enqueue takes from there
	 * first, so n_req_alloc (requests ever allocated) stays at the peak
	 * number in the system, not the number submitted. */
	struct sim_req *req_pool;
	uint64_t n_req_alloc;
} cluster_t;

int cluster_init(cluster_t *c, const cluster_params_t *p, ev_engine_t *eng);
/* Bytes cluster_init(c, p, ...) allocates (instances, their KV stores and
 * batch arrays), so a caller can bound memory before building. */
uint64_t cluster_bytes(const cluster_params_t *p);
void cluster_free(cluster_t *c);
/* Takes a request (copying blocks) arriving now on instance inst. */
int cluster_submit(cluster_t *c, uint32_t inst, uint64_t id, uint32_t in_len,
		   uint32_t out_len, const uint64_t *blocks, uint32_t n_blocks);
/* The same, without starting an iteration, returning the request so the
 * caller can attach a fetch before cluster_kick. */
int cluster_enqueue(cluster_t *c, uint32_t inst, uint64_t id, uint32_t in_len, uint32_t out_len,
		    const uint64_t *blocks, uint32_t n_blocks, sim_req_t **out);
/* Gives an enqueued request (not yet admitted) the ids of the n full
 * blocks after its prompt's, those that end inside its output (chained on
 * from its prompt's ids). Under SCHED_VLLM and SCHED_SGLANG every full block
 * a request holds becomes a cache block under its id once its KV is
 * computed (vLLM's KVCacheManager.cache_blocks, SGLang's
 * cache_unfinished_req): a session's next turn, or the request itself after
 * a preemption, matches it. 0 or KS_ENOMEM. */
int cluster_req_output_ids(cluster_t *c, sim_req_t *r, const uint64_t *ids, uint32_t n);
/* A request handed off by p.on_handoff whose prompt KV has landed on decode
 * instance inst: it queues there and is admitted with ceil((in_len +
 * generated) / block_tokens) private blocks (the KV moved, and room for its
 * next token) as soon as they fit, then decodes; kicks inst. Its row keeps
 * the prefill instance in `instance`. 0 or an engine error. */
int cluster_handoff_land(cluster_t *c, uint32_t inst, sim_req_t *r);
/* With p.decode_prefix_cache: references the leading full prompt blocks
 * of r READY on decode instance inst (cached there, or replicas a copy
 * brought: a speculative one counts as used, p.on_spec_hit), so that no
 * eviction takes them before r lands; sets r->dec_hit, the blocks its
 * handoff need not move. Once per handoff, before any of its KV leaves.
 * 0, or on_spec_hit's error. */
int cluster_decode_pin(cluster_t *c, uint32_t inst, sim_req_t *r);
/* A handed-off request that never lands (end of run): recorded unfinished
 * and freed. */
int cluster_handoff_drop(cluster_t *c, sim_req_t *r);
/* Starts an iteration on an idle instance (blocks landed, a request came). */
int cluster_kick(cluster_t *c, uint32_t inst);
/* Records a request that never reaches an instance (rejected, failed). */
int cluster_record_unrouted(cluster_t *c, uint64_t id, int64_t arrival, uint32_t in_len,
			    uint32_t out_len, int32_t status);
/* Whether a request of this size can ever fit one instance (its context's
 * blocks and fixed_blocks_per_seq). */
int cluster_fits(const cluster_t *c, uint32_t in_len, uint32_t out_len);
/* Marks the requests still in the system as unfinished (end of run). */
int cluster_finish(cluster_t *c);
/* Checks capacities and counters (and, every 4096th call, every store in
 * full); 0 when consistent. */
int cluster_check(const cluster_t *c);
/* Queues a job of dur_ns (>= 1) on inst's compute: it runs before the next
 * iteration, in arrival order, and ends with p.on_job_done(job). job != 0. */
int cluster_job_add(cluster_t *c, uint32_t inst, uint64_t job, int64_t dur_ns);
/* Removes a queued job that has not started: 0 when removed; 1 when it is
 * running (it ends normally), with the ns it started at to *started (when
 * not NULL); 2 when unknown. */
int cluster_job_cancel(cluster_t *c, uint32_t inst, uint64_t job, int64_t *started);
/* The engine's own batch limits on this GPU, for [scheduler] keys left at
 * 0 (hbm_bytes: one GPU's HBM; gpu: its name, case ignored), by each
 * scheduler's table (0 and 0 for a mode not in CLUSTER_SCHED_LIST):
 *   SCHED_VLLM, SCHED_BTB: vLLM's OpenAI-server defaults
 *     (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, v0.11.0):
 *     1024 sequences and 8192 tokens on GPUs with >= 70 GiB other than A100
 *     (H100, H200, MI300), else 256 and 2048.
 *   SCHED_SGLANG: chunked_prefill_size by GPU memory (server_args.py,
 *     ServerArgs._handle_gpu_memory_settings): 2048 below 35 GB, 4096 below
 *     60 GB, 8192 below 160 GB, else 16384; 2048 sequences, the floor of
 *     model_runner.py's request-pool size (as recalled, not verified). */
void cluster_engine_defaults(int sched_mode, const char *gpu, uint64_t hbm_bytes,
			     uint32_t *max_num_seqs, uint32_t *max_batched_tokens);
/* Brings inst up to now under DECODE_SEGMENT: applies the iterations of
 * its segment that ended before now (cluster.h DECODE_SEGMENT), so its
 * decode_tokens and requests are what step mode has at this instant. Call
 * before reading them from outside (routers' views); a no-op otherwise. */
void cluster_sync(cluster_t *c, uint32_t inst);
/* Load of an instance for least-load routing: queued + running requests. */
uint32_t cluster_load(const cluster_t *c, uint32_t inst);
/* decode_tokens of inst recounted from its running requests (for checks). */
uint64_t cluster_decode_tokens_recount(const cluster_t *c, uint32_t inst);

#endif

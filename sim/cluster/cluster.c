/* cluster — see cluster.h.
 *
 * SCHED_VLLM follows vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py,
 * Scheduler.schedule, v0.11.0): running requests first (decodes take one
 * token, unfinished prefills take a chunk), then waiting requests in arrival
 * order while the batch has room (max_num_seqs sequences, max_batched_tokens
 * tokens). A decode that needs a new block when the pool is full preempts the
 * most recently admitted request (self.running.pop()), which frees its blocks
 * and later recomputes its context; a step that preempted admits no waiting
 * request ("if not preempted_reqs:" before the waiting loop).
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
#include "sim/base/rng.h"
#include "sim/cluster/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

enum { ADMIT_OK = 0, ADMIT_SKIP = 1, ADMIT_FULL = 2 };

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
static double sg_init_ratio(const cluster_t *c)
{
	double r = SG_INIT_RATIO * c->p.conservativeness;
	return r < 1 ? r : 1;
}

static double sg_min_ratio(const cluster_t *c)
{
	double r = sg_init_ratio(c) * SG_MIN_RATIO_FACTOR;
	return r < 1 ? r : 1;
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

static int iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

uint64_t cluster_bytes(const cluster_params_t *p)
{
	const sim_inst_t *in = NULL;
	uint64_t per = sizeof *in + (uint64_t)p->max_num_seqs * (3 * sizeof(uint32_t) + sizeof *in->run);
	uint64_t b = 0;
	for (uint32_t i = 0; i < p->n_instances; i++)
		b += per + kv_store_bytes(p->inst_kv_blocks ? p->inst_kv_blocks[i] : p->kv_blocks);
	return b;
}

int cluster_init(cluster_t *c, const cluster_params_t *p, ev_engine_t *eng)
{
	memset(c, 0, sizeof *c);
	if (!p->on_result || (p->fixed_blocks_per_seq && p->sched_mode == SCHED_BTB))
		return KS_EINPUT; /* the study's token reservation knows no per-sequence KV */
	c->p = *p;
	c->p.inst_cost_ctx = NULL;
	c->p.inst_kv_blocks = NULL;
	c->p.inst_role = NULL;
	c->eng = eng;
	if (!c->p.resv_tokens_cap)
		c->p.resv_tokens_cap = (uint64_t)p->kv_blocks * p->block_tokens;
	c->inst = calloc(p->n_instances, sizeof *c->inst);
	if (!c->inst)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < p->n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		in->id = i;
		in->role = p->inst_role ? p->inst_role[i] : CL_ROLE_MIXED;
		if (in->role == CL_ROLE_PREFILL && !p->on_handoff)
			return KS_EINPUT;
		in->cost_ctx = p->inst_cost_ctx ? p->inst_cost_ctx[i] : p->cost_ctx;
		in->kv = kv_store_new(p->inst_kv_blocks ? p->inst_kv_blocks[i] : p->kv_blocks);
		in->new_token_ratio = sg_init_ratio(c);
		in->batch_cap = p->max_num_seqs;
		in->batch.pre_new = calloc(in->batch_cap, sizeof(uint32_t));
		in->batch.pre_ctx = calloc(in->batch_cap, sizeof(uint32_t));
		in->batch.dec_ctx = calloc(in->batch_cap, sizeof(uint32_t));
		in->cap_run = p->max_num_seqs;
		in->run = calloc(in->cap_run, sizeof *in->run);
		if (!in->kv || !in->batch.pre_new || !in->batch.pre_ctx || !in->batch.dec_ctx ||
		    !in->run)
			return KS_ENOMEM;
	}
	return ev_engine_type_new(eng, iter_done, c, &c->ev_iter);
}

static void req_destroy(sim_req_t *r)
{
	free(r->blocks);
	free(r->slot);
	tok_hist_free(&r->gaps);
	free(r);
}

/* A finished request goes to the cluster's free list with its buffers, so
 * the steady state allocates nothing per request (cluster.h: n_req_alloc). */
static void req_free(cluster_t *c, sim_req_t *r)
{
	r->next = c->req_pool;
	c->req_pool = r;
}

/* A request from the free list (its block and gap-histogram buffers kept,
 * every other field zeroed), or a new one. NULL when out of memory. */
static sim_req_t *req_get(cluster_t *c, uint32_t n_blocks)
{
	sim_req_t *r = c->req_pool;
	if (r) {
		c->req_pool = r->next;
		uint64_t *blocks = r->blocks;
		uint32_t *slot = r->slot;
		tok_hist_t gaps = r->gaps;
		uint32_t cap_blocks = r->cap_blocks, cap_slot = r->cap_slot;
		memset(r, 0, sizeof *r);
		r->blocks = blocks;
		r->cap_blocks = cap_blocks;
		r->slot = slot;
		r->cap_slot = cap_slot;
		r->gaps = gaps;
		tok_hist_clear(&r->gaps);
	} else {
		r = calloc(1, sizeof *r);
		if (!r)
			return NULL;
		c->n_req_alloc++;
	}
	if (VEC_GROW(r->blocks, r->cap_blocks, n_blocks ? n_blocks : 1, 1) ||
	    VEC_GROW(r->slot, r->cap_slot, n_blocks ? n_blocks : 1, 1)) {
		req_free(c, r);
		return NULL;
	}
	return r;
}

void cluster_free(cluster_t *c)
{
	if (!c->inst)
		return;
	for (uint32_t i = 0; i < c->p.n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		for (sim_req_t *r = in->wait_head, *n; r; r = n) {
			n = r->next;
			req_destroy(r);
		}
		for (uint32_t k = 0; k < in->n_run; k++)
			req_destroy(in->run[k]);
		kv_store_free(in->kv);
		free(in->batch.pre_new);
		free(in->batch.pre_ctx);
		free(in->batch.dec_ctx);
		free(in->run);
		free(in->job_id);
		free(in->job_ns);
		free(in->seg_end);
		tok_hist_free(&in->seg_gaps);
	}
	for (sim_req_t *r = c->req_pool, *n; r; r = n) {
		n = r->next;
		req_destroy(r);
	}
	c->req_pool = NULL;
	free(c->inst);
	memset(c, 0, sizeof *c);
}

int cluster_fits(const cluster_t *c, uint32_t in_len, uint32_t out_len)
{
	uint64_t tok = (uint64_t)in_len + out_len;
	if (c->p.sched_mode == SCHED_BTB && tok > c->p.resv_tokens_cap)
		return 0;
	return (uint64_t)ceil_div(tok, c->p.block_tokens) + c->p.fixed_blocks_per_seq <=
	       c->p.kv_blocks;
}

void cluster_engine_defaults(int sched_mode, const char *gpu, uint64_t hbm_bytes,
			     uint32_t *max_num_seqs, uint32_t *max_batched_tokens)
{
	const double GiB = 1024.0 * 1024 * 1024, MiB = 1024.0 * 1024;
	if (sched_mode == SCHED_SGLANG) {
		double mb = (double)hbm_bytes / MiB; /* SGLang's gpu_mem is in MB */
		*max_batched_tokens = mb < 35 * 1024	? 2048
				      : mb < 60 * 1024	? 4096
				      : mb < 160 * 1024 ? 8192
							: 16384;
		*max_num_seqs = 2048;
		return;
	}
	int a100 = 0;
	for (const char *p = gpu; p && *p && !a100; p++)
		a100 = (p[0] == 'a' || p[0] == 'A') && !strncmp(p + 1, "100", 3);
	int big = (double)hbm_bytes >= 70 * GiB && !a100;
	*max_num_seqs = big ? 1024 : 256;
	*max_batched_tokens = big ? 8192 : 2048;
}

uint32_t cluster_load(const cluster_t *c, uint32_t inst)
{
	return c->inst[inst].n_wait + c->inst[inst].n_run;
}

/* What a running request adds to its instance's decode_tokens. */
static uint64_t decode_share(const sim_req_t *r)
{
	return r->done_tok >= r->target ? (uint64_t)r->in_len + r->generated : 0;
}

uint64_t cluster_decode_tokens_recount(const cluster_t *c, uint32_t inst)
{
	const sim_inst_t *in = &c->inst[inst];
	uint64_t n = 0;
	for (uint32_t k = 0; k < in->n_run; k++)
		n += decode_share(in->run[k]);
	return n;
}

/* ---- results ------------------------------------------------------------ */

/* A request row with no time measured yet (-1). */
static void row_init(res_request_t *r)
{
	memset(r, 0, sizeof *r);
	r->ttft_ns = r->tpot_ns = r->tbt_p90_ns = r->e2e_ns = r->queue_ns = -1;
	r->decode_instance = -1;
	r->handoff_wait_ns = -1;
}

/* Hands a finished row to the run's recorder. */
static int row_done(cluster_t *c, const res_request_t *r)
{
	c->n_done++;
	return c->p.on_result(c->p.result_ctx, r);
}

int cluster_record_unrouted(cluster_t *c, uint64_t id, int64_t arrival, uint32_t in_len,
			    uint32_t out_len, int32_t status)
{
	res_request_t row, *r = &row;
	row_init(r);
	r->id = id;
	r->arrival_ns = arrival;
	r->instance = -1;
	r->status = status;
	r->input_tokens = in_len;
	r->output_tokens = out_len;
	return row_done(c, r);
}

static int record(cluster_t *c, const sim_req_t *q, int32_t status)
{
	res_request_t row, *r = &row;
	row_init(r);
	r->id = q->id;
	r->arrival_ns = q->arrival;
	r->instance = q->inst;
	r->status = status;
	r->input_tokens = q->in_len;
	r->output_tokens = q->out_len;
	r->tok_local = q->tok_local;
	r->tok_peer = q->tok_peer;
	r->tok_host = q->tok_host;
	r->fetch_wait_ns = q->fetch_wait;
	r->tok_recomputed = q->tok_recomputed;
	r->tok_spec_hit = q->tok_spec_hit;
	r->decode_instance = q->dec_inst;
	r->handoff_wait_ns = q->t_landed >= 0 ? q->t_landed - q->t_prefilled : -1;
	if (q->t_admit >= 0)
		r->queue_ns = q->t_admit - q->arrival;
	if (c->p.ttft_prefill_end && q->t_prefilled >= 0)
		r->ttft_ns = q->t_prefilled - q->arrival;
	else if (q->generated > 0)
		r->ttft_ns = q->t_first - q->arrival;
	if (status == REQ_COMPLETED) {
		r->e2e_ns = q->t_last - q->arrival;
		r->tpot_ns = q->out_len > 1 ? (q->t_last - q->t_first) / (q->out_len - 1) : 0;
		/* p90 by the nearest-rank rule, to the histogram's resolution
		 * (tok_hist.h: exact, or < 2^-10 relative above) */
		r->tbt_p90_ns = q->gaps.n ? tok_hist_rank(&q->gaps, ceil_div(9ull * q->gaps.n, 10)) : 0;
	}
	return row_done(c, r);
}

/* ---- waiting queue -------------------------------------------------------- */

/* Integrates the waiting-queue length over time (for Little's law). */
static void wait_account(sim_inst_t *in, int64_t now)
{
	in->wait_area += (double)in->n_wait * (double)(now - in->wait_since);
	in->wait_since = now;
}

static void wait_push_back(sim_inst_t *in, sim_req_t *r, int64_t now)
{
	wait_account(in, now);
	r->next = NULL;
	if (in->wait_tail)
		in->wait_tail->next = r;
	else
		in->wait_head = r;
	in->wait_tail = r;
	in->n_wait++;
}

static void wait_push_front(sim_inst_t *in, sim_req_t *r, int64_t now)
{
	wait_account(in, now);
	r->next = in->wait_head;
	in->wait_head = r;
	if (!in->wait_tail)
		in->wait_tail = r;
	in->n_wait++;
}

static void wait_unlink(sim_inst_t *in, sim_req_t *prev, sim_req_t *r, int64_t now)
{
	wait_account(in, now);
	if (prev)
		prev->next = r->next;
	else
		in->wait_head = r->next;
	if (in->wait_tail == r)
		in->wait_tail = prev;
	r->next = NULL;
	in->n_wait--;
}

/* ---- block holding -------------------------------------------------------- */

/* Gives back every block r holds on in. Blocks r was still computing are
 * dropped: their KV never came to exist. */
static void release_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	int64_t now = ev_engine_now(c->eng);
	uint32_t ready = r->ready < r->shared_hold ? r->ready : r->shared_hold;
	kv_unref_slots(in->kv, r->slot, ready, now);
	for (uint32_t j = ready; j < r->shared_hold; j++) {
		kv_unref_slots(in->kv, r->slot + j, 1, now);
		kv_drop_slot(in->kv, r->slot[j]);
	}
	kv_free_private(in->kv, r->priv + r->fixed);
	c->kv_block_frees += r->shared_hold + r->priv + r->fixed;
	r->shared_hold = r->held = r->ready = r->own_from = r->priv = r->fixed = 0;
}

/* Makes r hold enough blocks for ctx tokens of context. */
static int ensure_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint64_t ctx)
{
	uint32_t need = ceil_div(ctx, c->p.block_tokens);
	uint32_t have = r->shared_hold + r->priv;
	if (need <= have)
		return KS_OK;
	if (kv_alloc_private(in->kv, need - have, ev_engine_now(c->eng)))
		return KS_EFULL;
	c->kv_block_allocs += need - have;
	r->priv += need - have;
	return KS_OK;
}

/* What an admission found: hit tokens, where they came from, the first
 * admission's time and the cluster's block hit counters. */
static void admit_account(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t m,
			  uint32_t spec_hits, uint32_t target, int64_t now)
{
	uint32_t B = c->p.block_tokens;
	r->target = target;
	uint32_t hit = m * B < target ? m * B : target - 1;
	r->done_tok = hit;
	if (r->preemptions == 0) {
		r->tok_local = hit < r->in_len ? hit : r->in_len;
		if (r->fetch_src && m > r->fetch_lo) {
			uint32_t hi = m < r->fetch_hi ? m : r->fetch_hi;
			uint32_t f = (hi - r->fetch_lo) * B;
			f = f < r->tok_local ? f : r->tok_local;
			r->tok_local -= f;
			if (r->fetch_src == 1)
				r->tok_peer = f;
			else
				r->tok_host = f;
		}
		r->tok_spec_hit = spec_hits * B < r->tok_local ? spec_hits * B : r->tok_local;
		r->t_admit = now;
		if (c->p.on_admit)
			c->p.on_admit(c->p.hook_ctx, in->id, r);
		c->blocks_total += r->n_blocks;
		c->blocks_hit += m;
	}
	r->tok_recomputed += target - hit;
	in->prefill_tokens_queued -= r->in_len; /* counted at submit */
	r->phase = RQ_RUNNING;
}

/* SGLang's reserve for r's future output: min(max_new_tokens - output so
 * far, CLIP_MAX_NEW_TOKENS) (schedule_policy.py); kvsim knows the output
 * length and takes it as max_new_tokens. */
static double sg_new_tokens(const sim_req_t *r)
{
	uint32_t left = r->out_len - r->generated;
	return left < SG_CLIP_NEW ? left : SG_CLIP_NEW;
}

/* References the READY blocks ids[0..m) on in (a hit each), found by
 * their slots[0..m) (NULL: by id), reporting speculative ones to
 * on_spec_hit in runs of one tag; returns how many were speculative. */
static uint32_t ref_prefix(cluster_t *c, sim_inst_t *in, const uint64_t *ids,
			   const uint32_t *slots, uint32_t m, int64_t now)
{
	uint32_t spec_hits = 0, run_tag = 0, run_n = 0;
	for (uint32_t j = 0; j < m; j++) {
		int was_spec = 0;
		uint32_t tag = 0;
		if (slots) {
			kv_hit_slot(in->kv, slots[j], now, 1, &was_spec, &tag);
		} else {
			kv_prefetch(in->kv, ids, j, m);
			kv_hit(in->kv, ids[j], now, 1, &was_spec, &tag); /* one lookup: tag and ref */
		}
		spec_hits += (uint32_t)was_spec;
		if (was_spec && c->p.on_spec_hit) {
			if (run_n && tag != run_tag) {
				c->p.on_spec_hit(c->p.hook_ctx, in->id, run_tag, run_n);
				run_n = 0;
			}
			run_tag = tag;
			run_n++;
		}
	}
	if (run_n)
		c->p.on_spec_hit(c->p.hook_ctx, in->id, run_tag, run_n);
	return spec_hits;
}

/* Resolves r's prefix against the local cache and takes its blocks. resv
 * (SCHED_SGLANG, else NULL): tokens the batch already reserves for future
 * output; r is refused unless its blocks and its own output reserve fit
 * beside them (PrefillAdder.add_one_req: NO_TOKEN when total_tokens >=
 * rem_total_tokens before locking its prefix, or > after). */
/* A handed-off request whose prompt KV landed here (cluster_handoff_land):
 * private blocks for its whole context and its next token and its fixed
 * blocks, no prefix match, no prefill; the prefill instance counted it at
 * its admission. With p.decode_prefix_cache its full prompt blocks are
 * shared instead: the r->dec_hit it already references, then the landed
 * ones as new READY cache blocks, up to one another request put here
 * meanwhile (kept as a duplicate, private, as vLLM's BlockPool does). */
static int admit_landed(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	uint64_t ctx = (uint64_t)r->in_len + r->generated;
	uint32_t need = ceil_div(ctx, c->p.block_tokens), F = c->p.fixed_blocks_per_seq;
	uint32_t m = r->dec_hit, s_end = m;
	while (c->p.decode_prefix_cache && s_end < r->n_blocks && !kv_lookup(in->kv, r->blocks[s_end]))
		s_end++;
	if (kv_free_or_evictable(in->kv) < (uint64_t)need - m + F)
		return ADMIT_FULL; /* its references stay until it fits */
	int64_t now = ev_engine_now(c->eng);
	for (uint32_t j = 0; j < m; j++) /* referenced here by cluster_decode_pin */
		r->slot[j] = kv_slot(in->kv, r->blocks[j]);
	for (uint32_t j = m; j < s_end; j++) {
		kv_alloc_slot(in->kv, r->blocks[j], j, KV_COMPUTING, 1, 0, now, &r->slot[j]);
		kv_ready_slot(in->kv, r->slot[j], now); /* its KV has landed */
	}
	kv_alloc_private(in->kv, need - s_end + F, now);
	c->kv_block_allocs += need + F; /* as release_blocks counts its frees */
	r->priv = need - s_end;
	r->fixed = F;
	r->held = r->shared_hold = r->ready = s_end;
	r->own_from = m;
	r->dec_hit = 0;
	r->target = r->done_tok = r->in_len; /* as after a prefill here */
	r->landed = 0; /* a preemption from here on recomputes, as vLLM's does */
	r->phase = RQ_RUNNING;
	return ADMIT_OK;
}

static int admit(cluster_t *c, sim_inst_t *in, sim_req_t *r, const double *resv)
{
	if (r->landed)
		return admit_landed(c, in, r);
	int64_t now = ev_engine_now(c->eng);
	uint32_t avail_before = kv_free_or_evictable(in->kv);
	uint32_t B = c->p.block_tokens;
	uint32_t target = r->in_len + r->generated;
	/* the prompt's blocks, and after a preemption the full output blocks */
	uint32_t nb = r->n_ids < target / B ? r->n_ids : target / B;
	uint32_t m = kv_match_slots(in->kv, r->blocks, nb, r->slot);
	uint32_t s_end = m; /* blocks [m, s_end) become shared blocks we compute */
	while (s_end < nb) {
		kv_prefetch(in->kv, r->blocks, s_end, nb);
		int st = kv_lookup(in->kv, r->blocks[s_end]);
		if (st == 0) {
			s_end++;
			continue;
		}
		if ((st == KV_COMPUTING || st == KV_INFLIGHT) && s_end == m &&
		    c->p.busy_rule == BUSY_WAIT &&
		    (st == KV_COMPUTING || !c->p.wait_inflight ||
		     c->p.wait_inflight(c->p.hook_ctx, in->id, r, m)))
			return ADMIT_SKIP; /* its KV does not exist yet: wait for it */
		break;                     /* compute the rest privately */
	}
	/* references first, so the hits cannot be evicted to make room */
	uint32_t spec_hits = ref_prefix(c, in, r->blocks, r->slot, m, now);
	uint32_t n_priv = ceil_div(target, B) > s_end ? ceil_div(target, B) - s_end : 0;
	/* the per-sequence KV (windows, states) in full from admission on: the
	 * rule is in sim/run/sim_core.c, where fixed_blocks_per_seq is set */
	uint32_t F = c->p.fixed_blocks_per_seq;
	uint32_t need = (s_end - m) + n_priv + F, avail = kv_free_or_evictable(in->kv);
	int full = avail < need;
	if (resv) {
		double total = (double)need * B + sg_new_tokens(r);
		full = total >= (double)avail_before * B - *resv || total > (double)avail * B - *resv;
	}
	if (full) {
		kv_unref_slots(in->kv, r->slot, m, now);
		return ADMIT_FULL;
	}
	for (uint32_t j = m; j < s_end; j++) { /* READY at once: the study's assumption */
		kv_prefetch(in->kv, r->blocks, j, s_end);
		kv_alloc_slot(in->kv, r->blocks[j], j,
			      c->p.resident_at_admission ? KV_READY : KV_COMPUTING, 1, 0, now,
			      &r->slot[j]);
	}
	kv_alloc_private(in->kv, n_priv + F, now);
	c->kv_block_allocs += s_end + n_priv + F;
	r->held = r->shared_hold = s_end;
	r->own_from = m;
	r->ready = c->p.resident_at_admission ? s_end : m;
	r->priv = n_priv;
	r->fixed = F;
	admit_account(c, in, r, m, spec_hits, target, now);
	return ADMIT_OK;
}

/* ---- the study's scheduler (SCHED_BTB) -------------------------------------- */

/* Id of a request's k-th synthetic output block: outside the chained ids
 * of any trace with overwhelming probability (splitmix64 finaliser). */
static uint64_t synth_id(uint64_t req, uint32_t k)
{
	return rng_fmix64(req * RNG_GOLDEN + k + 1) | (1ULL << 63);
}

/* Inserts one block into the prefix cache at admission: READY at once when
 * KV counts as resident at admission, else COMPUTING and held by r until its
 * prefill ends. 1 inserted, 0 no room. */
static int btb_insert(cluster_t *c, sim_inst_t *in, uint64_t id, uint32_t depth, int64_t now,
		      uint32_t *slot)
{
	int res = c->p.resident_at_admission;
	return kv_alloc_slot(in->kv, id, depth, res ? KV_READY : KV_COMPUTING, res ? 0 : 1, 0, now,
			     slot) == KS_OK;
}

/* SCHED_BTB: r meets the prefix cache: hits are touched (LRU), the prompt's
 * missing blocks and synthetic blocks covering its output go into the
 * cache. With resident_at_admission this happens at admission and r holds
 * no block; otherwise when its prefill starts (the KV that exists then), and
 * r holds what it matched and inserted until its prefill ends
 * (btb_prefilled). */
static void btb_bind(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	int64_t now = ev_engine_now(c->eng);
	uint32_t B = c->p.block_tokens, target = r->in_len + r->generated;
	int hold = !c->p.resident_at_admission;
	/* one lookup per hit: taking (and touching) a READY block changes no
	 * other block's state, and on_spec_hit does not reach the store */
	uint32_t m = 0, spec_hits = 0, tag = 0;
	int was_spec = 0;
	while (m < r->n_blocks && (r->slot[m] = kv_slot(in->kv, r->blocks[m])) != KV_NO_SLOT &&
	       kv_hit_slot(in->kv, r->slot[m], now, hold, &was_spec, &tag) == KS_OK) {
		if (was_spec && c->p.on_spec_hit)
			c->p.on_spec_hit(c->p.hook_ctx, in->id, tag, 1);
		spec_hits += (uint32_t)was_spec;
		m++;
	}
	/* kv_alloc answers KS_EEXIST for a block already here */
	uint32_t s_end = m;
	while (s_end < r->n_blocks && btb_insert(c, in, r->blocks[s_end], s_end, now, &r->slot[s_end]))
		s_end++;
	uint32_t n_synth = 0, total = ceil_div((uint64_t)r->in_len + r->out_len, B);
	if (s_end == r->n_blocks && r->preemptions == 0)
		while (r->n_blocks + n_synth < total &&
		       btb_insert(c, in, synth_id(r->id, n_synth), r->n_blocks + n_synth, now, NULL))
			n_synth++;
	r->n_synth = hold ? n_synth : 0;
	r->held = r->shared_hold = hold ? s_end : 0;
	r->own_from = m;
	r->ready = hold ? m : s_end;
	r->priv = 0;
	admit_account(c, in, r, m, spec_hits, target, now);
}

static int btb_bound(const sim_req_t *r)
{
	return r->t_admit >= 0;
}

/* End of a SCHED_BTB prefill: what r held becomes plain cache. */
static void btb_prefilled(sim_inst_t *in, sim_req_t *r, int64_t now)
{
	for (uint32_t j = r->ready; j < r->shared_hold; j++)
		kv_ready_slot(in->kv, r->slot[j], now);
	kv_unref_slots(in->kv, r->slot, r->shared_hold, now);
	for (uint32_t k = 0; k < r->n_synth; k++) {
		kv_ready(in->kv, synth_id(r->id, k), now);
		kv_unref(in->kv, synth_id(r->id, k), now);
	}
	r->held = r->shared_hold = r->n_synth = 0;
	r->ready = 0;
}

static void run_remove(sim_inst_t *in, uint32_t k)
{
	memmove(&in->run[k], &in->run[k + 1], (in->n_run - k - 1) * sizeof *in->run);
	in->n_run--;
}

/* Takes running request k back to the waiting queue (recompute mode): its
 * blocks are freed and its context computed again when it is readmitted; at
 * the queue's head (vLLM's prepend_request) or tail (SGLang's
 * _extend_requests_to_queue). */
static sim_req_t *preempt_at(cluster_t *c, sim_inst_t *in, uint32_t k, int front)
{
	sim_req_t *v = in->run[k];
	int64_t now = ev_engine_now(c->eng);
	in->decode_tokens -= decode_share(v);
	release_blocks(c, in, v);
	run_remove(in, k);
	v->phase = RQ_WAITING;
	v->done_tok = 0;
	v->in_batch = 0;
	v->preemptions++;
	in->prefill_tokens_queued += v->in_len;
	if (front)
		wait_push_front(in, v, now);
	else
		wait_push_back(in, v, now);
	return v;
}

/* Preempts the most recently admitted running request (vLLM). */
static sim_req_t *preempt_last(cluster_t *c, sim_inst_t *in)
{
	return preempt_at(c, in, in->n_run - 1, 1);
}

/* ---- iterations ------------------------------------------------------------ */

static void batch_add_prefill(sim_inst_t *in, sim_req_t *r, uint32_t chunk)
{
	in->batch.pre_new[in->batch.n_pre] = chunk;
	in->batch.pre_ctx[in->batch.n_pre] = r->done_tok;
	in->batch.n_pre++;
	r->chunk = chunk;
	r->in_batch = 1;
}

/* Tokens of r's remaining prefill that fit in budget, 0 if none. */
static uint32_t prefill_chunk(const cluster_t *c, const sim_req_t *r, uint32_t budget)
{
	uint32_t rem = r->target - r->done_tok;
	if (c->p.chunked_prefill)
		return rem < budget ? rem : budget;
	/* without chunking a prompt runs whole; an over-long one runs alone */
	if (rem <= budget || budget == c->p.max_batched_tokens)
		return rem;
	return 0;
}

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

/* ---- decode segments (DECODE_SEGMENT, cluster.h) ------------------------- */

/* Most iterations one segment plans. A cut throws away the durations
 * planned past the iteration in flight: on the Mooncake conversation trace
 * (512-token blocks) a bound of 1024 planned 2.87 M durations for 1.96 M
 * iterations. With the first closed-form cost_run (one cost per step),
 * 32, 128 and 512 gave 0.76, 0.73-0.76 and 0.80 CPU-s (145 K, 102 K and
 * 97 K events); own measurement, before the certified closed form and the
 * bulk token accounting made each planned iteration cheaper. */
#define SEG_MAX 128u

/* Iterations, from the one just built, that the decode batch of every
 * running request can run as one segment: the last may complete a request,
 * turn a block into a cache block (cache_full_blocks, which reads other
 * requests' blocks) or be followed by a block allocation; those before it
 * do none of these, so they change nothing outside their requests. */
static uint32_t seg_len(const cluster_t *c, const sim_inst_t *in)
{
	uint64_t B = c->p.block_tokens, n = SEG_MAX;
	for (uint32_t k = 0; k < in->n_run; k++) {
		const sim_req_t *r = in->run[k];
		uint64_t ctx = (uint64_t)r->in_len + r->generated; /* iteration 1's context */
		uint64_t room = (uint64_t)(r->shared_hold + r->priv) * B;
		if (r->done_tok < r->target || r->generated >= r->out_len || room < ctx)
			return 1;
		/* iteration j emits token generated + j and runs on ctx + j - 1 */
		uint64_t lim = r->out_len - r->generated;
		/* iteration j + 1 would need a block unless ctx + j <= room */
		if (room - ctx + 1 < lim)
			lim = room - ctx + 1;
		if (r->priv && r->shared_hold < r->n_ids && r->ready == r->shared_hold) {
			/* the end of iteration j caches a block once ctx + j - 1 covers it */
			uint64_t blk = (uint64_t)(r->shared_hold + 1) * B;
			uint64_t j = blk > ctx && blk > r->done_tok ? blk - ctx + 1 : 1;
			if (j < lim)
				lim = j;
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
	if (c->p.decode_mode != DECODE_SEGMENT || c->p.sched_mode == SCHED_BTB || in->batch.n_pre ||
	    in->batch.n_dec != in->n_run || in->n_wait || in->n_job)
		return 0;
	uint32_t n = seg_len(c, in);
	if (n < 2)
		return 0;
	if (VEC_GROW(in->seg_end, in->seg_cap, n, 16))
		return KS_ENOMEM;
	/* every bin the segment's gaps may add has room now (at most one per
	 * iteration, in seg_gaps too): a silent iteration cannot fail */
	tok_hist_clear(&in->seg_gaps);
	if (tok_hist_reserve(&in->seg_gaps, n))
		return KS_ENOMEM;
	for (uint32_t k = 0; k < in->n_run; k++)
		if (tok_hist_reserve(&in->run[k]->gaps, n))
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
		if (d > INT64_MAX - t) { /* the segment stops short: iter_launch says why */
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

static int emit_token(cluster_t *c, sim_req_t *r, int64_t now);
static void sg_decay(cluster_t *c, sim_inst_t *in);

/* Applies the segment's iterations [seg_next, end) at once, as iter_done
 * and the next iter_start would one by one: a token for every request at
 * each one's end, the batch one token longer each (for SCHED_SGLANG, one
 * decay of the ratio each). A request's first gap in the segment runs from
 * its own last token; every later one is an iteration's duration, the same
 * for every request of the batch (it neither gains nor loses one during a
 * segment), so those are binned once into seg_gaps and merged into each
 * request's histogram when the segment ends (seg_flush): per request, O(1)
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
			(void)emit_token(c, r, in->seg_end[0]);
		r->generated += a ? k : k - 1;
		r->t_last = t;
		in->batch.dec_ctx[i] += k;
	}
	in->decode_tokens += (uint64_t)k * in->n_run;
	in->iter_start = t;
	if (c->p.sched_mode == SCHED_SGLANG)
		for (uint32_t j = 0; j < k; j++)
			sg_decay(c, in);
	in->seg_next = end;
	c->seg_silent += k;
}

/* The segment ends: its silent gaps go into every request's histogram. */
static void seg_flush(sim_inst_t *in)
{
	if (in->seg_gaps.n)
		for (uint32_t i = 0; i < in->n_run; i++)
			(void)tok_hist_merge(&in->run[i]->gaps, &in->seg_gaps); /* reserved */
	tok_hist_clear(&in->seg_gaps);
	in->seg_n = 0;
}

/* Applies the silent iterations that ended before now (incl: at or before). */
static void seg_sync(cluster_t *c, sim_inst_t *in, int64_t now, int incl)
{
	uint32_t end = in->seg_next;
	while (end + 1 < in->seg_n && (in->seg_end[end] < now || (incl && in->seg_end[end] == now)))
		end++;
	seg_apply(c, in, end);
}

/* Something joins the instance's queue: the segment ends with the iteration
 * in flight, at its own end, as step mode would then schedule again. */
static int seg_cut(cluster_t *c, sim_inst_t *in)
{
	if (!in->seg_n)
		return 0;
	seg_sync(c, in, ev_engine_now(c->eng), 0);
	if (in->seg_next + 1 >= in->seg_n)
		return 0;
	in->seg_n = in->seg_next + 1;
	if (ev_engine_reschedule(c->eng, in->seg_ev, in->seg_end[in->seg_next]))
		return KS_ERUNTIME;
	return 0;
}

void cluster_sync(cluster_t *c, uint32_t inst)
{
	seg_sync(c, &c->inst[inst], ev_engine_now(c->eng), 0);
}

static int iter_launch(cluster_t *c, sim_inst_t *in)
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

/* SCHED_BTB admission: the study admits a queued request as soon as its
 * reservation fits, whether or not the node is busy (simulate.py admits at
 * every arrival and runs the node's clock ahead), so its blocks enter the
 * cache and routers see them before its prefill starts. FIFO with
 * head-of-line blocking. */
static void btb_admit_ready(cluster_t *c, sim_inst_t *in)
{
	sim_req_t *r;
	while ((r = in->wait_head) && in->n_run < c->p.max_num_seqs &&
	       in->resv_tokens + r->in_len + r->out_len <= c->p.resv_tokens_cap) {
		wait_unlink(in, NULL, r, ev_engine_now(c->eng));
		in->run[in->n_run++] = r;
		in->resv_tokens += (uint64_t)r->in_len + r->out_len;
		r->target = r->in_len + r->generated; /* prefill pending: not decoding */
		r->done_tok = 0;
		if (c->p.resident_at_admission)
			btb_bind(c, in, r);
	}
}

/* SCHED_BTB: the earliest admitted request's whole prefill (prefill before
 * decode), else one decode step of every running sequence. */
static int iter_start_btb(cluster_t *c, sim_inst_t *in)
{
	btb_admit_ready(c, in);
	for (uint32_t k = 0; k < in->n_run; k++) {
		sim_req_t *r = in->run[k];
		if (!btb_bound(r))
			btb_bind(c, in, r);
		if (r->done_tok < r->target) {
			batch_add_prefill(in, r, r->target - r->done_tok);
			return iter_launch(c, in);
		}
	}
	for (uint32_t k = 0; k < in->n_run; k++) {
		sim_req_t *q = in->run[k];
		in->batch.dec_ctx[in->batch.n_dec++] = q->in_len + q->generated;
		q->chunk = 1;
		q->in_batch = 1;
	}
	return iter_launch(c, in);
}

static void batch_add_decode(sim_inst_t *in, sim_req_t *r);

/* Adds r's next prefill chunk to the batch if the budget allows; returns
 * the chunk (0 if none). */
static uint32_t batch_add_chunk(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t *budget)
{
	uint32_t ch = prefill_chunk(c, r, *budget);
	if (ch && in->role == CL_ROLE_PREFILL && r->done_tok + ch == r->target &&
	    c->p.on_last_chunk)
		c->p.on_last_chunk(c->p.hook_ctx, in->id, r);
	if (ch) {
		batch_add_prefill(in, r, ch);
		*budget -= ch < *budget ? ch : *budget;
	}
	return ch;
}

/* Admits waiting requests in arrival order while the batch has room, each
 * with its first chunk. resv: as for admit (NULL under SCHED_VLLM); a
 * request whose chunk ends its prefill adds its own output reserve to it
 * (add_one_req reserves a request's output unless it is truncated). 1 when
 * the pool or the sequence cap stopped it, else 0. */
static int admit_waiting(cluster_t *c, sim_inst_t *in, uint32_t *budget, double *resv)
{
	sim_req_t *prev = NULL;
	for (sim_req_t *r = in->wait_head; r && *budget > 0;) {
		sim_req_t *next = r->next;
		if (in->n_run >= c->p.max_num_seqs)
			return 1;
		if (!c->p.chunked_prefill && *budget < c->p.max_batched_tokens &&
		    r->in_len + r->generated > *budget + (uint64_t)r->n_blocks * c->p.block_tokens)
			break; /* cannot fit whole even with a full hit: next iteration */
		int a = admit(c, in, r, resv);
		if (a == ADMIT_FULL)
			return 1;
		if (a == ADMIT_SKIP) {
			prev = r;
			r = next;
			continue;
		}
		wait_unlink(in, prev, r, ev_engine_now(c->eng));
		in->run[in->n_run++] = r;
		in->decode_tokens += decode_share(r);
		if (r->done_tok >= r->target) { /* landed KV (admit_landed): decodes now */
			batch_add_decode(in, r);
			(*budget)--;
			r = next;
			continue;
		}
		uint32_t ch = batch_add_chunk(c, in, r, budget);
		if (resv && ch && r->done_tok + ch == r->target)
			*resv += sg_new_tokens(r);
		r = next;
	}
	return 0;
}

static void batch_add_decode(sim_inst_t *in, sim_req_t *r)
{
	in->batch.dec_ctx[in->batch.n_dec++] = r->in_len + r->generated;
	r->chunk = 1;
	r->in_batch = 1;
}

/* SCHED_VLLM: one step of vLLM v1's Scheduler.schedule. */
static int iter_start_vllm(cluster_t *c, sim_inst_t *in)
{
	uint32_t budget = c->p.max_batched_tokens;
	int preempted = 0;
	for (uint32_t k = 0; k < in->n_run && budget > 0; k++) {
		sim_req_t *r = in->run[k];
		if (r->done_tok < r->target) {
			batch_add_chunk(c, in, r, &budget);
			continue;
		}
		uint64_t ctx = (uint64_t)r->in_len + r->generated;
		int preempted_self = 0;
		while (ensure_blocks(c, in, r, ctx) != KS_OK) {
			preempted = 1;
			if (preempt_last(c, in) == r) {
				preempted_self = 1;
				break;
			}
		}
		if (preempted_self)
			break; /* r was the last running request */
		batch_add_decode(in, r);
		budget--;
	}
	if (!preempted)
		admit_waiting(c, in, &budget, NULL);
	return iter_launch(c, in);
}

/* SCHED_SGLANG: one decode step's decay of new_token_ratio toward its floor. */
static void sg_decay(cluster_t *c, sim_inst_t *in)
{
	double lo = sg_min_ratio(c);
	double r = in->new_token_ratio - (sg_init_ratio(c) - lo) / SG_DECAY_STEPS;
	in->new_token_ratio = r > lo ? r : lo;
}

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
			preempt_at(c, in, sg_retract_victim(in), 0);
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
		if (ensure_blocks(c, in, r, (uint64_t)r->in_len + r->generated) != KS_OK) {
			/* blocks held by copies landing here: r waits for another turn */
			preempt_at(c, in, k, 0);
			continue;
		}
		batch_add_decode(in, r);
		k++;
	}
	return iter_launch(c, in);
}

/* SCHED_SGLANG: a prefill batch if one can be made (the unfinished chunked
 * prefill first, then admissions against the pool less the output reserve:
 * each decoding request's remaining output x new_token_ratio, in full for a
 * request whose prefill this batch ends), else a decode step. After an
 * admission fails for room, only the chunked prefill runs until the running
 * batch shrinks (batch_is_full in get_new_batch_prefill). */
static int iter_start_sglang(cluster_t *c, sim_inst_t *in)
{
	uint32_t budget = c->p.max_batched_tokens;
	double resv = 0;
	for (uint32_t k = 0; k < in->n_run; k++)
		if (in->run[k]->done_tok >= in->run[k]->target)
			resv += sg_new_tokens(in->run[k]) * in->new_token_ratio;
	for (uint32_t k = 0; k < in->n_run && budget > 0; k++) {
		sim_req_t *r = in->run[k];
		if (r->done_tok >= r->target)
			continue;
		uint32_t ch = batch_add_chunk(c, in, r, &budget);
		if (ch && r->done_tok + ch == r->target)
			resv += sg_new_tokens(r);
	}
	if (!in->batch_full || in->batch.n_pre)
		if (admit_waiting(c, in, &budget, &resv))
			in->batch_full = 1;
	if (in->batch.n_pre)
		return iter_launch(c, in);
	return iter_start_sglang_decode(c, in);
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
		wait_unlink(in, prev, r, now);
		in->prefill_tokens_queued -= r->in_len; /* counted at submit or requeue */
		int rc = record(c, r, REQ_ABANDONED);
		req_free(c, r);
		c->n_live--;
		if (rc)
			return rc;
	}
	return 0;
}

static int iter_start(cluster_t *c, sim_inst_t *in)
{
	if (c->p.on_touch) /* every step ends here, and every admission starts here */
		c->p.on_touch(c->p.hook_ctx, in->id);
	if (c->p.client_timeout_ns > 0 && in->wait_head) {
		int rc = abandon_expired(c, in);
		if (rc)
			return rc;
	}
	if (in->busy) {
		if (c->p.sched_mode == SCHED_BTB)
			btb_admit_ready(c, in);
		return 0;
	}
	int rc = job_start(c, in);
	if (rc)
		return rc < 0 ? rc : 0;
	in->batch.n_pre = in->batch.n_dec = 0;
	if (c->p.sched_mode == SCHED_BTB)
		return iter_start_btb(c, in);
	if (c->p.sched_mode == SCHED_SGLANG)
		return iter_start_sglang(c, in);
	return iter_start_vllm(c, in);
}

static int emit_token(cluster_t *c, sim_req_t *r, int64_t now)
{
	if (r->generated == 0)
		r->t_first = now;
	else if (tok_hist_add(&r->gaps, now - r->t_last, 1))
		return KS_ENOMEM;
	r->t_last = now;
	r->generated++;
	(void)c;
	return 0;
}

/* r's private full blocks, in chain order after its shared ones, become
 * cache blocks under their ids once their KV exists (the context of its
 * last step; the token just emitted has none yet): a new block READY at
 * once. One already cached here (r computed it privately beside another
 * request) is shared instead under SCHED_SGLANG, whose radix cache frees the
 * duplicate (RadixCache.cache_unfinished_req), and ends the conversion under
 * SCHED_VLLM, which keeps a duplicate as a block of its own
 * (BlockPool.cache_full_blocks). A block another request is still computing
 * or copying here stays private, and so do the blocks after it. */
static void cache_full_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r, int64_t now)
{
	uint32_t B = c->p.block_tokens;
	uint64_t kv_tok = (uint64_t)r->in_len + r->generated - 1;
	if (kv_tok < r->done_tok)
		kv_tok = r->done_tok;
	while (r->priv && r->shared_hold < r->n_ids && r->ready == r->shared_hold &&
	       (uint64_t)(r->shared_hold + 1) * B <= kv_tok) {
		uint64_t id = r->blocks[r->shared_hold];
		uint32_t *sl = &r->slot[r->shared_hold], found = kv_slot(in->kv, id), tag = 0;
		int was_spec = 0;
		/* one lookup: kv_hit_slot takes only a READY block, changing nothing else */
		if (found != KV_NO_SLOT && c->p.sched_mode == SCHED_SGLANG &&
		    kv_hit_slot(in->kv, found, now, 1, &was_spec, &tag) == KS_OK) {
			*sl = found;
			if (was_spec && c->p.on_spec_hit)
				c->p.on_spec_hit(c->p.hook_ctx, in->id, tag, 1);
			kv_free_private(in->kv, 1);
		} else if (found == KV_NO_SLOT) {
			kv_free_private(in->kv, 1);
			kv_alloc_slot(in->kv, id, r->shared_hold, KV_COMPUTING, 1, 0, now, sl);
			kv_ready_slot(in->kv, *sl, now);
		} else {
			break;
		}
		r->priv--;
		r->held = ++r->shared_hold;
		r->ready++;
		c->kv_block_frees++;
		c->kv_block_allocs++;
	}
}

/* CL_ROLE_PREFILL: run[k]'s prefill just ended with output left; it leaves
 * the instance (its cached prompt blocks stay, the rest is freed; it
 * forgets its block ids unless decode instances keep a prefix cache) for
 * the handoff hook. */
static int handoff(cluster_t *c, sim_inst_t *in, uint32_t k)
{
	sim_req_t *r = in->run[k];
	release_blocks(c, in, r);
	run_remove(in, k);
	in->batch_full = 0;
	/* a decode prefix cache shares its prompt blocks, not its output's */
	r->n_ids = r->n_blocks = c->p.decode_prefix_cache ? r->n_blocks : 0;
	r->phase = RQ_WAITING;
	return c->p.on_handoff(c->p.hook_ctx, in->id, r);
}

static int iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	cluster_t *c = ctx;
	sim_inst_t *in = &c->inst[ev->target];
	int64_t now = ev_engine_now(eng);
	uint32_t B = c->p.block_tokens;
	if (in->seg_n) { /* the segment's last iteration: the others first */
		seg_sync(c, in, now, 0);
		seg_flush(in);
	}
	in->busy = 0;
	in->busy_ns += now - in->iter_start;
	if (c->p.on_busy)
		c->p.on_busy(c->p.hook_ctx, in, in->iter_start, now, in->cur_job ? 0 : 1);
	if (in->cur_job) {
		uint64_t job = in->cur_job;
		in->cur_job = 0;
		int rc = c->p.on_job_done ? c->p.on_job_done(c->p.hook_ctx, in->id, job) : 0;
		return rc ? rc : iter_start(c, in);
	}
	in->iterations++;
	for (uint32_t k = 0; k < in->n_run;) {
		sim_req_t *r = in->run[k];
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
			while (r->ready < r->shared_hold && (uint64_t)(r->ready + 1) * B <= r->done_tok)
				kv_ready_slot(in->kv, r->slot[r->ready++], now);
			tok = r->done_tok == r->target;
			if (tok) {
				prefilled = 1;
				r->t_prefilled = now;
				if (c->p.sched_mode == SCHED_BTB)
					btb_prefilled(in, r, now);
				if (c->p.ttft_prefill_end && r->generated == 0)
					tok = 0; /* the first token comes from a decode step */
			}
		}
		if (tok) {
			int rc = emit_token(c, r, now);
			if (rc)
				return rc;
		}
		in->decode_tokens -= share;
		if (c->p.sched_mode != SCHED_BTB)
			cache_full_blocks(c, in, r, now);
		if (r->generated >= r->out_len) {
			release_blocks(c, in, r);
			if (c->p.sched_mode == SCHED_BTB)
				in->resv_tokens -= (uint64_t)r->in_len + r->out_len;
			int rc = record(c, r, REQ_COMPLETED);
			if (rc)
				return rc;
			run_remove(in, k);
			req_free(c, r);
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
	return iter_start(c, in);
}

/* ---- entry points ------------------------------------------------------------ */

int cluster_submit(cluster_t *c, uint32_t inst, uint64_t id, uint32_t in_len, uint32_t out_len,
		   const uint64_t *blocks, uint32_t n_blocks)
{
	sim_req_t *r;
	int rc = cluster_enqueue(c, inst, id, in_len, out_len, blocks, n_blocks, &r);
	return rc ? rc : cluster_kick(c, inst);
}

int cluster_kick(cluster_t *c, uint32_t inst)
{
	return iter_start(c, &c->inst[inst]);
}

int cluster_job_add(cluster_t *c, uint32_t inst, uint64_t job, int64_t dur_ns)
{
	sim_inst_t *in = &c->inst[inst];
	int rc = seg_cut(c, in);
	if (rc)
		return rc;
	if (in->n_job == in->cap_job) {
		size_t cap = vec_next_cap(in->cap_job, in->n_job + 1, 8);
		if (cap > UINT32_MAX || VEC_RESIZE(in->job_id, cap) || VEC_RESIZE(in->job_ns, cap))
			return KS_ENOMEM;
		in->cap_job = (uint32_t)cap;
	}
	in->job_id[in->n_job] = job;
	in->job_ns[in->n_job++] = dur_ns;
	return iter_start(c, in);
}

int cluster_job_cancel(cluster_t *c, uint32_t inst, uint64_t job)
{
	sim_inst_t *in = &c->inst[inst];
	for (uint32_t k = 0; k < in->n_job; k++)
		if (in->job_id[k] == job) {
			in->n_job--;
			memmove(in->job_id + k, in->job_id + k + 1, (in->n_job - k) * sizeof *in->job_id);
			memmove(in->job_ns + k, in->job_ns + k + 1, (in->n_job - k) * sizeof *in->job_ns);
			return 0;
		}
	return 1;
}

int cluster_enqueue(cluster_t *c, uint32_t inst, uint64_t id, uint32_t in_len, uint32_t out_len,
		    const uint64_t *blocks, uint32_t n_blocks, sim_req_t **out)
{
	int rc = seg_cut(c, &c->inst[inst]);
	if (rc)
		return rc;
	sim_req_t *r = req_get(c, n_blocks);
	if (!r)
		return KS_ENOMEM;
	if (n_blocks)
		memcpy(r->blocks, blocks, n_blocks * sizeof *blocks);
	r->id = id;
	r->arrival = ev_engine_now(c->eng);
	r->in_len = in_len ? in_len : 1;
	r->out_len = out_len ? out_len : 1;
	/* only full blocks of the prompt are shareable */
	r->n_blocks = n_blocks < r->in_len / c->p.block_tokens ? n_blocks
							       : r->in_len / c->p.block_tokens;
	r->n_ids = r->n_blocks;
	r->inst = (int32_t)inst;
	r->t_admit = -1;
	r->t_prefilled = -1;
	r->dec_inst = -1;
	r->t_landed = -1;
	sim_inst_t *in = &c->inst[inst];
	if (c->p.on_touch)
		c->p.on_touch(c->p.hook_ctx, inst);
	wait_push_back(in, r, ev_engine_now(c->eng));
	in->prefill_tokens_queued += r->in_len;
	c->n_live++;
	*out = r;
	return 0;
}

int cluster_handoff_land(cluster_t *c, uint32_t inst, sim_req_t *r)
{
	sim_inst_t *in = &c->inst[inst];
	int rc = seg_cut(c, in);
	if (rc)
		return rc;
	int64_t now = ev_engine_now(c->eng);
	r->dec_inst = (int32_t)inst;
	r->t_landed = now;
	r->landed = 1;
	wait_push_back(in, r, now);
	return iter_start(c, in);
}

uint32_t cluster_decode_pin(cluster_t *c, uint32_t inst, sim_req_t *r)
{
	sim_inst_t *in = &c->inst[inst];
	if (!c->p.decode_prefix_cache || in->role != CL_ROLE_DECODE)
		return r->dec_hit = 0;
	cluster_sync(c, inst);
	if (c->p.on_touch)
		c->p.on_touch(c->p.hook_ctx, inst);
	/* r->slot stays the prefill instance's: r may still hold blocks there
	 * (a layerwise handoff routes at its last chunk); admit_landed finds
	 * these slots again */
	r->dec_hit = kv_match(in->kv, r->blocks, r->n_blocks);
	ref_prefix(c, in, r->blocks, NULL, r->dec_hit, ev_engine_now(c->eng));
	return r->dec_hit;
}

int cluster_handoff_drop(cluster_t *c, sim_req_t *r)
{
	int rc = record(c, r, REQ_UNFINISHED);
	req_free(c, r);
	c->n_live--;
	return rc;
}

int cluster_req_output_ids(cluster_t *c, sim_req_t *r, const uint64_t *ids, uint32_t n)
{
	(void)c;
	if (VEC_GROW(r->blocks, r->cap_blocks, (size_t)r->n_blocks + n, 1) ||
	    VEC_GROW(r->slot, r->cap_slot, (size_t)r->n_blocks + n, 1))
		return KS_ENOMEM;
	memcpy(r->blocks + r->n_blocks, ids, (size_t)n * sizeof *r->blocks);
	r->n_ids = r->n_blocks + n;
	return 0;
}

int cluster_finish(cluster_t *c)
{
	for (uint32_t i = 0; i < c->p.n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		/* step mode dispatched every iteration ending by the run's end */
		seg_sync(c, in, ev_engine_now(c->eng), 1);
		seg_flush(in);
		while (in->n_run) {
			sim_req_t *r = in->run[in->n_run - 1];
			in->decode_tokens -= decode_share(r);
			release_blocks(c, in, r);
			int rc = record(c, r, REQ_UNFINISHED);
			if (rc)
				return rc;
			in->n_run--;
			req_free(c, r);
			c->n_live--;
		}
		while (in->wait_head) {
			sim_req_t *r = in->wait_head;
			wait_unlink(in, NULL, r, ev_engine_now(c->eng));
			int rc = record(c, r, REQ_UNFINISHED);
			if (rc)
				return rc;
			req_free(c, r);
			c->n_live--;
		}
	}
	return 0;
}

int cluster_check(const cluster_t *c)
{
	/* counters every call; the full O(blocks) walk of every store every
	 * 4096th call, so checked builds stay usable on large pools */
	static const uint64_t full_every = 4096;
	cluster_t *m = (cluster_t *)c;
	int full = m->checks++ % full_every == 0;
	for (uint32_t i = 0; i < c->p.n_instances; i++) {
		const sim_inst_t *in = &c->inst[i];
		if (full && kv_check(in->kv))
			return -1;
		if (kv_used(in->kv) > kv_capacity(in->kv))
			return -2;
		uint64_t priv = 0;
		for (uint32_t k = 0; k < in->n_run; k++)
			priv += in->run[k]->priv + in->run[k]->fixed;
		if (priv != kv_used_private(in->kv))
			return -3;
		/* a running request's slots name the blocks it holds (by slot) */
		for (uint32_t k = 0; k < in->n_run; k++) {
			const sim_req_t *r = in->run[k];
			for (uint32_t j = 0; j < r->shared_hold; j++)
				if (kv_slot_id(in->kv, r->slot[j]) != r->blocks[j])
					return -5;
		}
		if (in->decode_tokens != cluster_decode_tokens_recount(c, i))
			return -4;
	}
	return 0;
}

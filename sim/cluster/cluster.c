/* cluster — see cluster.h. The scheduler follows vLLM's continuous batching:
 * running requests first (decodes take one token, unfinished prefills take
 * a chunk), then waiting requests in arrival order while the batch has room
 * (max_num_seqs sequences, max_batched_tokens tokens). A decode that needs a
 * new block when the pool is full preempts the most recently admitted
 * request, which frees its blocks and later recomputes its context. */
#include "sim/base/rng.h"
#include "sim/cluster/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

enum { ADMIT_OK = 0, ADMIT_SKIP = 1, ADMIT_FULL = 2 };

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

static int iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

int cluster_init(cluster_t *c, const cluster_params_t *p, ev_engine_t *eng)
{
	memset(c, 0, sizeof *c);
	c->p = *p;
	c->eng = eng;
	if (!c->p.resv_tokens_cap)
		c->p.resv_tokens_cap = (uint64_t)p->kv_blocks * p->block_tokens;
	c->inst = calloc(p->n_instances, sizeof *c->inst);
	if (!c->inst)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < p->n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		in->id = i;
		in->kv = kv_store_new(p->kv_blocks);
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
	free(r->gaps);
	free(r);
}

/* A finished request goes to the cluster's free list with its buffers, so
 * the steady state allocates nothing per request (cluster.h: n_req_alloc). */
static void req_free(cluster_t *c, sim_req_t *r)
{
	r->next = c->req_pool;
	c->req_pool = r;
}

/* A request from the free list (its block and gap buffers kept, every other
 * field zeroed), or a new one. NULL when out of memory. */
static sim_req_t *req_get(cluster_t *c, uint32_t n_blocks)
{
	sim_req_t *r = c->req_pool;
	if (r) {
		c->req_pool = r->next;
		uint64_t *blocks = r->blocks;
		int64_t *gaps = r->gaps;
		uint32_t cap_blocks = r->cap_blocks, cap_gaps = r->cap_gaps;
		memset(r, 0, sizeof *r);
		r->blocks = blocks;
		r->gaps = gaps;
		r->cap_blocks = cap_blocks;
		r->cap_gaps = cap_gaps;
	} else {
		r = calloc(1, sizeof *r);
		if (!r)
			return NULL;
		c->n_req_alloc++;
	}
	if (VEC_GROW(r->blocks, r->cap_blocks, n_blocks ? n_blocks : 1, 1)) {
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
	}
	for (sim_req_t *r = c->req_pool, *n; r; r = n) {
		n = r->next;
		req_destroy(r);
	}
	c->req_pool = NULL;
	free(c->inst);
	free(c->res);
	memset(c, 0, sizeof *c);
}

int cluster_fits(const cluster_t *c, uint32_t in_len, uint32_t out_len)
{
	uint64_t tok = (uint64_t)in_len + out_len;
	if (c->p.sched_mode == SCHED_BTB && tok > c->p.resv_tokens_cap)
		return 0;
	return ceil_div(tok, c->p.block_tokens) <= c->p.kv_blocks;
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

static res_request_t *res_append(cluster_t *c)
{
	if (VEC_GROW(c->res, c->cap_res, c->n_res + 1, 1024))
		return NULL;
	res_request_t *r = &c->res[c->n_res++];
	memset(r, 0, sizeof *r);
	r->ttft_ns = r->tpot_ns = r->tbt_p90_ns = r->e2e_ns = r->queue_ns = -1;
	r->fetch_wait_ns = 0;
	return r;
}

int cluster_record_unrouted(cluster_t *c, uint64_t id, int64_t arrival, uint32_t in_len,
			    uint32_t out_len, int32_t status)
{
	res_request_t *r = res_append(c);
	if (!r)
		return KS_ENOMEM;
	r->id = id;
	r->arrival_ns = arrival;
	r->instance = -1;
	r->status = status;
	r->input_tokens = in_len;
	r->output_tokens = out_len;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int record(cluster_t *c, const sim_req_t *q, int32_t status)
{
	res_request_t *r = res_append(c);
	if (!r)
		return KS_ENOMEM;
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
	if (q->t_admit >= 0)
		r->queue_ns = q->t_admit - q->arrival;
	if (c->p.ttft_prefill_end && q->t_prefilled >= 0)
		r->ttft_ns = q->t_prefilled - q->arrival;
	else if (q->generated > 0)
		r->ttft_ns = q->t_first - q->arrival;
	if (status == REQ_COMPLETED) {
		r->e2e_ns = q->t_last - q->arrival;
		r->tpot_ns = q->out_len > 1 ? (q->t_last - q->t_first) / (q->out_len - 1) : 0;
		if (q->n_gaps) {
			/* p90 by the nearest-rank rule */
			qsort(q->gaps, q->n_gaps, sizeof *q->gaps, cmp_i64);
			uint32_t k = ceil_div(9ull * q->n_gaps, 10);
			r->tbt_p90_ns = q->gaps[k ? k - 1 : 0];
		} else {
			r->tbt_p90_ns = 0;
		}
	}
	return 0;
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
	for (uint32_t j = 0; j < r->shared_hold; j++) {
		kv_unref(in->kv, r->blocks[j], now);
		if (j >= r->ready)
			kv_drop(in->kv, r->blocks[j]);
	}
	kv_free_private(in->kv, r->priv);
	c->kv_block_frees += r->shared_hold + r->priv;
	r->shared_hold = r->held = r->ready = r->own_from = r->priv = 0;
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
		c->blocks_total += r->n_blocks;
		c->blocks_hit += m;
	}
	r->tok_recomputed += target - hit;
	in->prefill_tokens_queued -= r->in_len; /* counted at submit */
	r->phase = RQ_RUNNING;
}

/* Resolves r's prefix against the local cache and takes its blocks. */
static int admit(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	int64_t now = ev_engine_now(c->eng);
	uint32_t B = c->p.block_tokens;
	uint32_t target = r->in_len + r->generated;
	uint32_t m = kv_match(in->kv, r->blocks, r->n_blocks);
	uint32_t s_end = m; /* blocks [m, s_end) become shared blocks we compute */
	while (s_end < r->n_blocks) {
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
	uint32_t spec_hits = 0, run_tag = 0, run_n = 0;
	for (uint32_t j = 0; j < m; j++) {
		int was_spec = 0;
		uint32_t tag = kv_info(in->kv, r->blocks[j])->tag;
		kv_ref(in->kv, r->blocks[j], now, &was_spec);
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
	uint32_t n_priv = ceil_div(target, B) > s_end ? ceil_div(target, B) - s_end : 0;
	if (kv_free_or_evictable(in->kv) < (s_end - m) + n_priv) {
		for (uint32_t j = 0; j < m; j++)
			kv_unref(in->kv, r->blocks[j], now);
		return ADMIT_FULL;
	}
	for (uint32_t j = m; j < s_end; j++) {
		kv_alloc(in->kv, r->blocks[j], j, KV_COMPUTING, 1, 0, now);
		if (c->p.resident_at_admission)
			kv_ready(in->kv, r->blocks[j], now); /* the study's assumption */
	}
	kv_alloc_private(in->kv, n_priv, now);
	c->kv_block_allocs += s_end + n_priv;
	r->held = r->shared_hold = s_end;
	r->own_from = m;
	r->ready = c->p.resident_at_admission ? s_end : m;
	r->priv = n_priv;
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
static int btb_insert(cluster_t *c, sim_inst_t *in, uint64_t id, uint32_t depth, int64_t now)
{
	int res = c->p.resident_at_admission;
	if (kv_alloc(in->kv, id, depth, KV_COMPUTING, res ? 0 : 1, 0, now) != KS_OK)
		return 0;
	if (res)
		kv_ready(in->kv, id, now);
	return 1;
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
	uint32_t m = kv_match(in->kv, r->blocks, r->n_blocks), spec_hits = 0;
	for (uint32_t j = 0; j < m; j++) {
		int was_spec = 0;
		uint32_t tag = kv_info(in->kv, r->blocks[j])->tag;
		kv_ref(in->kv, r->blocks[j], now, &was_spec);
		if (was_spec && c->p.on_spec_hit)
			c->p.on_spec_hit(c->p.hook_ctx, in->id, tag, 1);
		spec_hits += (uint32_t)was_spec;
		if (!hold)
			kv_unref(in->kv, r->blocks[j], now);
	}
	uint32_t s_end = m;
	while (s_end < r->n_blocks && !kv_lookup(in->kv, r->blocks[s_end]) &&
	       btb_insert(c, in, r->blocks[s_end], s_end, now))
		s_end++;
	uint32_t n_synth = 0, total = ceil_div((uint64_t)r->in_len + r->out_len, B);
	if (s_end == r->n_blocks && r->preemptions == 0)
		while (r->n_blocks + n_synth < total &&
		       btb_insert(c, in, synth_id(r->id, n_synth), r->n_blocks + n_synth, now))
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
		kv_ready(in->kv, r->blocks[j], now);
	for (uint32_t j = 0; j < r->shared_hold; j++)
		kv_unref(in->kv, r->blocks[j], now);
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

/* Preempts the most recently admitted running request (recompute mode). */
static sim_req_t *preempt_last(cluster_t *c, sim_inst_t *in)
{
	sim_req_t *v = in->run[in->n_run - 1];
	in->decode_tokens -= decode_share(v);
	release_blocks(c, in, v);
	run_remove(in, in->n_run - 1);
	v->phase = RQ_WAITING;
	v->done_tok = 0;
	v->in_batch = 0;
	v->preemptions++;
	in->prefill_tokens_queued += v->in_len;
	wait_push_front(in, v, ev_engine_now(c->eng));
	return v;
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

static int iter_launch(cluster_t *c, sim_inst_t *in)
{
	if (in->batch.n_pre + in->batch.n_dec == 0)
		return 0;
	int64_t dur = c->p.cost(c->p.cost_ctx, &in->batch);
	if (dur < 1)
		dur = 1;
	in->busy = 1;
	in->iter_start = ev_engine_now(c->eng);
	if (ev_engine_after(c->eng, dur, c->ev_iter, in->id, 0) == EV_NONE)
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

static int iter_start(cluster_t *c, sim_inst_t *in)
{
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
	uint32_t budget = c->p.max_batched_tokens;
	for (uint32_t k = 0; k < in->n_run && budget > 0; k++) {
		sim_req_t *r = in->run[k];
		if (r->done_tok < r->target) {
			uint32_t ch = prefill_chunk(c, r, budget);
			if (!ch)
				continue;
			batch_add_prefill(in, r, ch);
			budget -= ch < budget ? ch : budget;
			continue;
		}
		uint64_t ctx = (uint64_t)r->in_len + r->generated;
		int preempted_self = 0;
		while (ensure_blocks(c, in, r, ctx) != KS_OK) {
			if (preempt_last(c, in) == r) {
				preempted_self = 1;
				break;
			}
		}
		if (preempted_self)
			break; /* r was the last running request */
		in->batch.dec_ctx[in->batch.n_dec++] = (uint32_t)ctx;
		r->chunk = 1;
		r->in_batch = 1;
		budget--;
	}
	/* admit waiting requests in arrival order */
	sim_req_t *prev = NULL;
	for (sim_req_t *r = in->wait_head; r && budget > 0 && in->n_run < c->p.max_num_seqs;) {
		sim_req_t *next = r->next;
		if (!c->p.chunked_prefill && budget < c->p.max_batched_tokens &&
		    r->in_len + r->generated > budget + (uint64_t)r->n_blocks * c->p.block_tokens)
			break; /* cannot fit whole even with a full hit: next iteration */
		int a = admit(c, in, r);
		if (a == ADMIT_FULL)
			break;
		if (a == ADMIT_SKIP) {
			prev = r;
			r = next;
			continue;
		}
		wait_unlink(in, prev, r, ev_engine_now(c->eng));
		in->run[in->n_run++] = r;
		in->decode_tokens += decode_share(r);
		uint32_t ch = prefill_chunk(c, r, budget);
		if (ch) {
			batch_add_prefill(in, r, ch);
			budget -= ch < budget ? ch : budget;
		}
		r = next;
	}
	return iter_launch(c, in);
}

static int emit_token(cluster_t *c, sim_req_t *r, int64_t now)
{
	if (r->generated == 0) {
		r->t_first = now;
	} else {
		/* room for every gap the request can have at once: out_len - 1
		 * (more only after a preemption recomputes it) */
		if (VEC_GROW(r->gaps, r->cap_gaps, r->n_gaps + 1, r->out_len > 1 ? r->out_len - 1 : 1))
			return KS_ENOMEM;
		r->gaps[r->n_gaps++] = now - r->t_last;
	}
	r->t_last = now;
	r->generated++;
	(void)c;
	return 0;
}

static int iter_done(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	cluster_t *c = ctx;
	sim_inst_t *in = &c->inst[ev->target];
	int64_t now = ev_engine_now(eng);
	uint32_t B = c->p.block_tokens;
	in->busy = 0;
	in->busy_ns += now - in->iter_start;
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
		int tok = 1;
		if (r->done_tok < r->target) {
			r->done_tok += r->chunk;
			/* blocks whose every token is now computed become usable */
			while (r->ready < r->shared_hold && (uint64_t)(r->ready + 1) * B <= r->done_tok)
				kv_ready(in->kv, r->blocks[r->ready++], now);
			tok = r->done_tok == r->target;
			if (tok) {
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
	r->inst = (int32_t)inst;
	r->t_admit = -1;
	r->t_prefilled = -1;
	sim_inst_t *in = &c->inst[inst];
	wait_push_back(in, r, ev_engine_now(c->eng));
	in->prefill_tokens_queued += r->in_len;
	c->n_live++;
	*out = r;
	return 0;
}

int cluster_finish(cluster_t *c)
{
	for (uint32_t i = 0; i < c->p.n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
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
			priv += in->run[k]->priv;
		if (priv != kv_used_private(in->kv))
			return -3;
		if (in->decode_tokens != cluster_decode_tokens_recount(c, i))
			return -4;
	}
	return 0;
}

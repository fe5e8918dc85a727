/* cluster_admit — a request's KV on its instance, shared by the
 * schedulers: admission (its prefix matched, its blocks taken), blocks grown
 * and given back, preemption, and the iteration's batch built from running
 * and waiting requests. */
#include "sim/cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"

enum { ADMIT_OK = 0, ADMIT_SKIP = 1, ADMIT_FULL = 2 };

/* ---- block holding -------------------------------------------------------- */

/* Gives back every block r holds on in. Blocks r was still computing are
 * dropped: their KV never came to exist. 0, or a store hook's error. */
int cl_release_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	int64_t now = ev_engine_now(c->eng);
	uint32_t ready = r->ready < r->shared_hold ? r->ready : r->shared_hold;
	int rc = KS_OK;
	kv_unref_slots(in->kv, r->slot, ready, now);
	for (uint32_t j = ready; j < r->shared_hold; j++) {
		kv_unref_slots(in->kv, r->slot + j, 1, now);
		int d = kv_hook_error(kv_drop_slot(in->kv, r->slot[j])); /* held by another */
		rc = rc ? rc : d;
	}
	kv_free_private(in->kv, r->priv + r->fixed);
	c->kv_block_frees += r->shared_hold + r->priv + r->fixed;
	r->shared_hold = r->held = r->ready = r->own_from = r->priv = r->fixed = 0;
	return rc;
}

/* Makes r hold enough blocks for ctx tokens of context: 0, KS_EFULL (no
 * room), or a store hook's error (the blocks are held). */
int cl_ensure_blocks(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint64_t ctx)
{
	uint32_t need = ceil_div(ctx, c->p.block_tokens);
	uint32_t have = r->shared_hold + r->priv;
	if (need <= have)
		return KS_OK;
	int rc = kv_alloc_private(in->kv, need - have, ev_engine_now(c->eng));
	if (rc == KS_EFULL)
		return rc;
	c->kv_block_allocs += need - have;
	r->priv += need - have;
	return rc;
}

/* What an admission found: hit tokens, where they came from, the first
 * admission's time and the cluster's block hit counters. 0, or on_admit's
 * error. */
int cl_admit_account(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t m,
		      uint32_t spec_hits, uint32_t target, int64_t now)
{
	uint32_t B = c->p.block_tokens;
	int rc = 0;
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
		rc = c->p.on_admit ? c->p.on_admit(c->p.hook_ctx, in->id, r) : 0;
		c->blocks_total += r->n_blocks;
		c->blocks_hit += m;
	}
	r->tok_recomputed += target - hit;
	in->prefill_tokens_queued -= r->in_len; /* counted at submit */
	r->phase = RQ_RUNNING;
	return rc;
}

/* References the READY blocks ids[0..m) on in (a hit each), found by
 * their slots[0..m) (NULL: by id), reporting speculative ones to
 * on_spec_hit in runs of one tag; how many were speculative to *spec (may
 * be NULL). 0, or on_spec_hit's first error (every block is referenced). */
int cl_ref_prefix(cluster_t *c, sim_inst_t *in, const uint64_t *ids, const uint32_t *slots,
		  uint32_t m, int64_t now, uint32_t *spec)
{
	uint32_t spec_hits = 0, run_tag = 0, run_n = 0;
	int rc = 0;
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
				int h = c->p.on_spec_hit(c->p.hook_ctx, in->id, run_tag, run_n);
				rc = rc ? rc : h;
				run_n = 0;
			}
			run_tag = tag;
			run_n++;
		}
	}
	if (run_n) {
		int h = c->p.on_spec_hit(c->p.hook_ctx, in->id, run_tag, run_n);
		rc = rc ? rc : h;
	}
	if (spec)
		*spec = spec_hits;
	return rc;
}

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
	int rc = 0;
	for (uint32_t j = m; j < s_end; j++) {
		int a = kv_alloc_slot(in->kv, r->blocks[j], j, KV_COMPUTING, 1, 0, now, &r->slot[j]);
		int b = kv_ready_slot(in->kv, r->slot[j], now); /* its KV has landed */
		a = kv_hook_error(a);
		rc = rc ? rc : a ? a : kv_hook_error(b);
	}
	int p = kv_hook_error(kv_alloc_private(in->kv, need - s_end + F, now));
	rc = rc ? rc : p;
	c->kv_block_allocs += need + F; /* as cl_release_blocks counts its frees */
	r->priv = need - s_end;
	r->fixed = F;
	r->held = r->shared_hold = r->ready = s_end;
	r->own_from = m;
	r->dec_hit = 0;
	r->target = r->done_tok = r->in_len; /* as after a prefill here */
	r->landed = 0; /* a preemption from here on recomputes, as vLLM's does */
	r->phase = RQ_RUNNING;
	return rc < 0 ? rc : ADMIT_OK;
}

/* Resolves r's prefix against the local cache and takes its blocks. resv
 * (SCHED_SGLANG, else NULL): tokens the batch already reserves for future
 * output; r is refused unless its blocks and its own output reserve fit
 * beside them (PrefillAdder.add_one_req: NO_TOKEN when total_tokens >=
 * rem_total_tokens before locking its prefix, or > after). */
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
	uint32_t spec_hits;
	int rc = cl_ref_prefix(c, in, r->blocks, r->slot, m, now, &spec_hits);
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
		return rc < 0 ? rc : ADMIT_FULL;
	}
	for (uint32_t j = m; j < s_end; j++) { /* READY at once: the study's assumption */
		kv_prefetch(in->kv, r->blocks, j, s_end);
		int a = kv_alloc_slot(in->kv, r->blocks[j], j,
				      c->p.resident_at_admission ? KV_READY : KV_COMPUTING, 1, 0,
				      now, &r->slot[j]);
		rc = rc ? rc : kv_hook_error(a);
	}
	int p = kv_hook_error(kv_alloc_private(in->kv, n_priv + F, now));
	rc = rc ? rc : p;
	c->kv_block_allocs += s_end + n_priv + F;
	r->held = r->shared_hold = s_end;
	r->own_from = m;
	r->ready = c->p.resident_at_admission ? s_end : m;
	r->priv = n_priv;
	r->fixed = F;
	int a = cl_admit_account(c, in, r, m, spec_hits, target, now);
	rc = rc ? rc : a;
	return rc < 0 ? rc : ADMIT_OK;
}

int cl_run_room(sim_inst_t *in, uint32_t most)
{
	if (in->n_run < in->cap_run)
		return 0;
	size_t cap = 2 * (size_t)in->cap_run;
	if (cap > most) /* no more than the sequence cap (cluster_bytes counts it) */
		cap = most > in->n_run ? most : (size_t)in->n_run + 1;
	sim_req_t **run = cap > UINT32_MAX ? NULL : malloc(cap * sizeof *run);
	uint32_t *bat = run ? malloc(3 * cap * sizeof *bat) : NULL; /* the batch's three */
	if (!bat) {
		free(run);
		return KS_ENOMEM;
	}
	memcpy(run, in->run, in->n_run * sizeof *run);
	memcpy(bat, in->batch.pre_new, in->batch.n_pre * sizeof *bat);
	memcpy(bat + cap, in->batch.pre_ctx, in->batch.n_pre * sizeof *bat);
	memcpy(bat + 2 * cap, in->batch.dec_ctx, in->batch.n_dec * sizeof *bat);
	if (in->run != in->run_inl) {
		free(in->run);
		free(in->batch.pre_new);
	}
	in->run = run;
	in->batch.pre_new = bat;
	in->batch.pre_ctx = bat + cap;
	in->batch.dec_ctx = bat + 2 * cap;
	in->cap_run = (uint32_t)cap;
	return 0;
}

void cl_run_remove(sim_inst_t *in, uint32_t k)
{
	memmove(&in->run[k], &in->run[k + 1], (in->n_run - k - 1) * sizeof *in->run);
	in->n_run--;
}

/* Takes running request k back to the waiting queue (recompute mode): its
 * blocks are freed and its context computed again when it is readmitted; at
 * the queue's head (vLLM's prepend_request) or tail (SGLang's
 * _extend_requests_to_queue). 0, or a store hook's error (it is preempted). */
int cl_preempt_at(cluster_t *c, sim_inst_t *in, uint32_t k, int front)
{
	sim_req_t *v = in->run[k];
	int64_t now = ev_engine_now(c->eng);
	in->decode_tokens -= decode_share(v);
	int rc = cl_release_blocks(c, in, v);
	cl_run_remove(in, k);
	v->phase = RQ_WAITING;
	v->done_tok = 0;
	v->in_batch = 0;
	v->preemptions++;
	in->prefill_tokens_queued += v->in_len;
	if (front)
		cl_wait_push_front(in, v, now);
	else
		cl_wait_push_back(in, v, now);
	return rc;
}

/* ---- the batch ------------------------------------------------------------- */

/* Adds a prefill chunk of r to the iteration's batch. */
void cl_batch_add_prefill(sim_inst_t *in, sim_req_t *r, uint32_t chunk)
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

/* Adds r's next prefill chunk to the batch if the budget allows; the
 * chunk (0 if none) to *chunk (may be NULL). 0, or on_last_chunk's error. */
int cl_batch_add_chunk(cluster_t *c, sim_inst_t *in, sim_req_t *r, uint32_t *budget,
		       uint32_t *chunk)
{
	uint32_t ch = prefill_chunk(c, r, *budget);
	int rc = 0;
	if (ch && in->role == CL_ROLE_PREFILL && r->done_tok + ch == r->target &&
	    c->p.on_last_chunk)
		rc = c->p.on_last_chunk(c->p.hook_ctx, in->id, r);
	if (ch) {
		cl_batch_add_prefill(in, r, ch);
		*budget -= ch < *budget ? ch : *budget;
	}
	if (chunk)
		*chunk = ch;
	return rc;
}

/* Admits waiting requests in arrival order while the batch has room, each
 * with its first chunk. resv: as for admit (NULL under SCHED_VLLM); a
 * request whose chunk ends its prefill adds its own output reserve to it
 * (add_one_req reserves a request's output unless it is truncated). 1 when
 * the pool or the sequence cap stopped it, else 0, or < 0 a hook's error. */
int cl_admit_waiting(cluster_t *c, sim_inst_t *in, uint32_t *budget, double *resv)
{
	sim_req_t *prev = NULL;
	for (sim_req_t *r = in->wait_head; r && *budget > 0;) {
		sim_req_t *next = r->next;
		if (in->n_run >= c->p.max_num_seqs)
			return 1;
		if (cl_run_room(in, c->p.max_num_seqs))
			return KS_ENOMEM;
		if (!c->p.chunked_prefill && *budget < c->p.max_batched_tokens &&
		    r->in_len + r->generated > *budget + (uint64_t)r->n_blocks * c->p.block_tokens)
			break; /* cannot fit whole even with a full hit: next iteration */
		int a = admit(c, in, r, resv);
		if (a < 0)
			return a;
		if (a == ADMIT_FULL)
			return 1;
		if (a == ADMIT_SKIP) {
			prev = r;
			r = next;
			continue;
		}
		cl_wait_unlink(in, prev, r, ev_engine_now(c->eng));
		in->run[in->n_run++] = r; /* room made before admit */
		in->decode_tokens += decode_share(r);
		if (r->done_tok >= r->target) { /* landed KV (admit_landed): decodes now */
			cl_batch_add_decode(in, r);
			(*budget)--;
			r = next;
			continue;
		}
		uint32_t ch;
		int rc = cl_batch_add_chunk(c, in, r, budget, &ch);
		if (rc)
			return rc;
		if (resv && ch && r->done_tok + ch == r->target)
			*resv += sg_new_tokens(r);
		r = next;
	}
	return 0;
}

/* Adds r's decode step (one token) to the iteration's batch. */
void cl_batch_add_decode(sim_inst_t *in, sim_req_t *r)
{
	in->batch.dec_ctx[in->batch.n_dec++] = r->in_len + r->generated;
	r->chunk = 1;
	r->in_batch = 1;
}

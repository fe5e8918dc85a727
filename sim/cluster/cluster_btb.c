/* cluster_btb — SCHED_BTB, the original study's scheduler (cluster.h):
 * reservations admitted FIFO as soon as they fit, a whole prefill before
 * any decode, and the prefix cache a budget of its own. */
#include "sim/cluster/cluster_int.h"

#include "sim/base/err.h"
#include "sim/base/rng.h"

/* Id of a request's k-th synthetic output block: outside the chained ids
 * of any trace with overwhelming probability (splitmix64 finaliser). */
static uint64_t synth_id(uint64_t req, uint32_t k)
{
	return rng_fmix64(req * RNG_GOLDEN + k + 1) | (1ULL << 63);
}

/* Inserts one block into the prefix cache at admission: READY at once when
 * KV counts as resident at admission, else COMPUTING and held by r until its
 * prefill ends. 1 inserted, 0 no room (or already here), < 0 a store
 * hook's error (*rc; it is inserted). */
static int btb_insert(cluster_t *c, sim_inst_t *in, uint64_t id, uint32_t depth, int64_t now,
		      uint32_t *slot, int *rc)
{
	int res = c->p.resident_at_admission;
	int a = kv_alloc_slot(in->kv, id, depth, res ? KV_READY : KV_COMPUTING, res ? 0 : 1, 0, now,
			      slot);
	if (a == KS_EFULL || a == KS_EEXIST)
		return 0;
	*rc = *rc ? *rc : a;
	return 1;
}

/* SCHED_BTB: r meets the prefix cache: hits are touched (LRU), the prompt's
 * missing blocks and synthetic blocks covering its output go into the
 * cache. With resident_at_admission this happens at admission and r holds
 * no block; otherwise when its prefill starts (the KV that exists then), and
 * r holds what it matched and inserted until its prefill ends
 * (btb_prefilled). */
static int btb_bind(cluster_t *c, sim_inst_t *in, sim_req_t *r)
{
	int rc = 0;
	int64_t now = ev_engine_now(c->eng);
	uint32_t B = c->p.block_tokens, target = r->in_len + r->generated;
	int hold = !c->p.resident_at_admission;
	/* one lookup per hit: taking (and touching) a READY block changes no
	 * other block's state, and on_spec_hit does not reach the store */
	uint32_t m = 0, spec_hits = 0, tag = 0;
	int was_spec = 0;
	while (m < r->n_blocks && (r->slot[m] = kv_slot(in->kv, r->blocks[m])) != KV_NO_SLOT &&
	       kv_hit_slot(in->kv, r->slot[m], now, hold, &was_spec, &tag) == KS_OK) {
		if (was_spec && c->p.on_spec_hit) {
			int h = c->p.on_spec_hit(c->p.hook_ctx, in->id, tag, 1);
			rc = rc ? rc : h;
		}
		spec_hits += (uint32_t)was_spec;
		m++;
	}
	/* kv_alloc answers KS_EEXIST for a block already here */
	uint32_t s_end = m;
	while (s_end < r->n_blocks &&
	       btb_insert(c, in, r->blocks[s_end], s_end, now, &r->slot[s_end], &rc))
		s_end++;
	uint32_t n_synth = 0, total = ceil_div((uint64_t)r->in_len + r->out_len, B);
	if (s_end == r->n_blocks && r->preemptions == 0)
		while (r->n_blocks + n_synth < total &&
		       btb_insert(c, in, synth_id(r->id, n_synth), r->n_blocks + n_synth, now, NULL,
				  &rc))
			n_synth++;
	r->n_synth = hold ? n_synth : 0;
	r->held = r->shared_hold = hold ? s_end : 0;
	r->own_from = m;
	r->ready = hold ? m : s_end;
	r->priv = 0;
	int a = cl_admit_account(c, in, r, m, spec_hits, target, now);
	return rc ? rc : a;
}

static int btb_bound(const sim_req_t *r)
{
	return r->t_admit >= 0;
}

/* End of a SCHED_BTB prefill: what r held becomes plain cache. 0, or a
 * store hook's first error. */
static int btb_prefilled(sim_inst_t *in, sim_req_t *r, int64_t now)
{
	int rc = 0;
	for (uint32_t j = r->ready; j < r->shared_hold; j++) {
		int b = kv_hook_error(kv_ready_slot(in->kv, r->slot[j], now)); /* READY already */
		rc = rc ? rc : b;
	}
	kv_unref_slots(in->kv, r->slot, r->shared_hold, now);
	for (uint32_t k = 0; k < r->n_synth; k++) {
		int b = kv_hook_error(kv_ready(in->kv, synth_id(r->id, k), now));
		rc = rc ? rc : b;
		kv_unref(in->kv, synth_id(r->id, k), now);
	}
	r->held = r->shared_hold = r->n_synth = 0;
	r->ready = 0;
	return rc;
}

/* SCHED_BTB admission: the study admits a queued request as soon as its
 * reservation fits, whether or not the node is busy (simulate.py admits at
 * every arrival and runs the node's clock ahead), so its blocks enter the
 * cache and routers see them before its prefill starts. FIFO with
 * head-of-line blocking. */
static int btb_admit_ready(cluster_t *c, sim_inst_t *in)
{
	sim_req_t *r;
	int rc;
	while ((r = in->wait_head) && in->n_run < c->p.max_num_seqs &&
	       in->resv_tokens + r->in_len + r->out_len <= c->p.resv_tokens_cap) {
		if (cl_run_room(in, c->p.max_num_seqs))
			return KS_ENOMEM;
		cl_wait_unlink(in, NULL, r, ev_engine_now(c->eng));
		in->run[in->n_run++] = r;
		in->resv_tokens += (uint64_t)r->in_len + r->out_len;
		r->target = r->in_len + r->generated; /* prefill pending: not decoding */
		r->done_tok = 0;
		if (c->p.resident_at_admission && (rc = btb_bind(c, in, r)))
			return rc;
	}
	return 0;
}

/* SCHED_BTB: the earliest admitted request's whole prefill (prefill before
 * decode), else one decode step of every running sequence. */
static int btb_step(cluster_t *c, sim_inst_t *in)
{
	int rc = btb_admit_ready(c, in);
	if (rc)
		return rc;
	for (uint32_t k = 0; k < in->n_run; k++) {
		sim_req_t *r = in->run[k];
		if (!btb_bound(r) && (rc = btb_bind(c, in, r)))
			return rc;
		if (r->done_tok < r->target) {
			cl_batch_add_prefill(in, r, r->target - r->done_tok);
			return cl_iter_launch(c, in);
		}
	}
	for (uint32_t k = 0; k < in->n_run; k++) {
		sim_req_t *q = in->run[k];
		in->batch.dec_ctx[in->batch.n_dec++] = q->in_len + q->generated;
		q->chunk = 1;
		q->in_batch = 1;
	}
	return cl_iter_launch(c, in);
}

/* A completed request's reservation returns to the budget. */
static void btb_completed(sim_inst_t *in, const sim_req_t *r)
{
	in->resv_tokens -= (uint64_t)r->in_len + r->out_len;
}

/* The whole reservation must fit the budget once. */
static int btb_fits(const cluster_t *c, uint64_t tok)
{
	return tok <= c->p.resv_tokens_cap;
}

/* The study takes vLLM's batch defaults and assumed KV matchable at
 * admission; its token reservation knows no per-sequence KV; it measured
 * the engine alone (no front-end) with NCCL's all-reduce.
 * Requests hold no blocks while they decode, and admit_busy lets one join
 * the running set while an iteration is in flight, so no decode segments. */
const cl_sched_ops_t cl_sched_btb = {
    .flags = CL_SCHED_F_RESIDENT_AT_ADMIT,
    .step = btb_step,
    .admit_busy = btb_admit_ready,
    .prefilled = btb_prefilled,
    .completed = btb_completed,
    .fits = btb_fits,
    .defaults = cl_vllm_defaults,
};

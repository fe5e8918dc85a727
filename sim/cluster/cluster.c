/* cluster — see cluster.h. This file builds and frees the cluster and
 * holds its entry points; the rest is in pieces of one job each, sharing
 * cluster_int.h: requests, their queue and rows (cluster_req.c); admission,
 * preemption and batch building (cluster_admit.c); an iteration's launch
 * and decode segments (cluster_seg.c); an iteration's start and end
 * (cluster_iter.c); and one file per scheduler, each citing the engine it
 * follows and defining its table: cluster_vllm.c (SCHED_VLLM, vLLM v1),
 * cluster_sglang.c (SCHED_SGLANG, SGLang v0.4.9), cluster_btb.c (SCHED_BTB,
 * the original study's), looked up by mode in cluster_sched.c only. */
#include "sim/cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

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
	c->sched = cl_sched(p->sched_mode);
	if (!p->on_result || !c->sched ||
	    (p->fixed_blocks_per_seq && !(c->sched->flags & CL_SCHED_F_FIXED_KV)))
		return KS_EINPUT;
	c->p = *p;
	c->p.inst_cost_ctx = NULL;
	c->p.inst_kv_blocks = NULL;
	c->p.inst_role = NULL;
	c->eng = eng;
	if (!c->p.resv_tokens_cap)
		c->p.resv_tokens_cap = (uint64_t)p->kv_blocks * p->block_tokens;
	c->inst = calloc(p->n_instances, sizeof *c->inst);
	c->kv_hook = calloc(p->n_instances, sizeof *c->kv_hook);
	if (!c->inst || !c->kv_hook) {
		free(c->inst);
		free(c->kv_hook);
		c->inst = NULL;
		c->kv_hook = NULL;
		return KS_ENOMEM;
	}
	for (uint32_t i = 0; i < p->n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		in->id = i;
		in->role = p->inst_role ? p->inst_role[i] : CL_ROLE_MIXED;
		if (in->role == CL_ROLE_PREFILL && !p->on_handoff)
			return KS_EINPUT;
		in->cost_ctx = p->inst_cost_ctx ? p->inst_cost_ctx[i] : p->cost_ctx;
		in->kv = kv_store_new(p->inst_kv_blocks ? p->inst_kv_blocks[i] : p->kv_blocks);
		in->new_token_ratio = sg_init_ratio(c);
		in->batch.pre_new = in->bat_inl[0];
		in->batch.pre_ctx = in->bat_inl[1];
		in->batch.dec_ctx = in->bat_inl[2];
		in->cap_run = CL_RUN_INLINE;
		in->run = in->run_inl;
		if (!in->kv)
			return KS_ENOMEM;
		c->kv_hook[i] = (cl_kv_hook_t){c, i};
		kv_store_set_on_change(in->kv, cl_on_kv_change, &c->kv_hook[i]);
	}
	return ev_engine_type_new(eng, cl_iter_done, c, &c->ev_iter);
}

void cluster_free(cluster_t *c)
{
	if (!c->inst)
		return;
	for (uint32_t i = 0; i < c->p.n_instances; i++) {
		sim_inst_t *in = &c->inst[i];
		for (sim_req_t *r = in->wait_head, *n; r; r = n) {
			n = r->next;
			cl_req_destroy(r);
		}
		for (uint32_t k = 0; k < in->n_run; k++)
			cl_req_destroy(in->run[k]);
		kv_store_free(in->kv);
		if (in->run != in->run_inl) { /* the batch's arrays moved with it */
			free(in->run);
			free(in->batch.pre_new);
		}
		free(in->job_id);
		free(in->job_ns);
		free(in->seg_end);
		tok_hist_free(&in->seg_gaps);
	}
	for (sim_req_t *r = c->req_pool, *n; r; r = n) {
		n = r->next;
		cl_req_destroy(r);
	}
	c->req_pool = NULL;
	free(c->inst);
	free(c->kv_hook);
	memset(c, 0, sizeof *c);
}

int cluster_fits(const cluster_t *c, uint32_t in_len, uint32_t out_len)
{
	uint64_t tok = (uint64_t)in_len + out_len;
	if (c->sched->fits && !c->sched->fits(c, tok))
		return 0;
	return (uint64_t)ceil_div(tok, c->p.block_tokens) + c->p.fixed_blocks_per_seq <=
	       c->p.kv_blocks;
}

uint32_t cluster_load(const cluster_t *c, uint32_t inst)
{
	return c->inst[inst].n_wait + c->inst[inst].n_run;
}

uint64_t cluster_decode_tokens_recount(const cluster_t *c, uint32_t inst)
{
	const sim_inst_t *in = &c->inst[inst];
	uint64_t n = 0;
	for (uint32_t k = 0; k < in->n_run; k++)
		n += decode_share(in->run[k]);
	return n;
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
	return cl_iter_start(c, &c->inst[inst]);
}

int cluster_job_add(cluster_t *c, uint32_t inst, uint64_t job, int64_t dur_ns)
{
	sim_inst_t *in = &c->inst[inst];
	int rc = cl_seg_cut(c, in);
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
	return cl_iter_start(c, in);
}

int cluster_job_cancel(cluster_t *c, uint32_t inst, uint64_t job, int64_t *started)
{
	sim_inst_t *in = &c->inst[inst];
	if (in->busy && in->cur_job == job) {
		if (started)
			*started = in->iter_start;
		return 1;
	}
	for (uint32_t k = 0; k < in->n_job; k++)
		if (in->job_id[k] == job) {
			in->n_job--;
			memmove(in->job_id + k, in->job_id + k + 1, (in->n_job - k) * sizeof *in->job_id);
			memmove(in->job_ns + k, in->job_ns + k + 1, (in->n_job - k) * sizeof *in->job_ns);
			return 0;
		}
	return 2;
}

int cluster_enqueue(cluster_t *c, uint32_t inst, uint64_t id, uint32_t in_len, uint32_t out_len,
		    const uint64_t *blocks, uint32_t n_blocks, sim_req_t **out)
{
	int rc = cl_seg_cut(c, &c->inst[inst]);
	if (rc)
		return rc;
	sim_req_t *r = cl_req_get(c, n_blocks);
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
	cl_wait_push_back(in, r, ev_engine_now(c->eng));
	in->prefill_tokens_queued += r->in_len;
	c->n_live++;
	*out = r;
	return 0;
}

int cluster_handoff_land(cluster_t *c, uint32_t inst, sim_req_t *r)
{
	sim_inst_t *in = &c->inst[inst];
	int rc = cl_seg_cut(c, in);
	if (rc)
		return rc;
	int64_t now = ev_engine_now(c->eng);
	r->dec_inst = (int32_t)inst;
	r->t_landed = now;
	r->landed = 1;
	cl_wait_push_back(in, r, now);
	return cl_iter_start(c, in);
}

int cluster_decode_pin(cluster_t *c, uint32_t inst, sim_req_t *r)
{
	sim_inst_t *in = &c->inst[inst];
	r->dec_hit = 0;
	if (!c->p.decode_prefix_cache || in->role != CL_ROLE_DECODE)
		return 0;
	cluster_sync(c, inst);
	if (c->p.on_touch)
		c->p.on_touch(c->p.hook_ctx, inst);
	/* r->slot stays the prefill instance's: r may still hold blocks there
	 * (a layerwise handoff routes at its last chunk); admit_landed finds
	 * these slots again */
	r->dec_hit = kv_match(in->kv, r->blocks, r->n_blocks);
	return cl_ref_prefix(c, in, r->blocks, NULL, r->dec_hit, ev_engine_now(c->eng), NULL);
}

int cluster_handoff_drop(cluster_t *c, sim_req_t *r)
{
	int rc = cl_record(c, r, REQ_UNFINISHED);
	cl_req_free(c, r);
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
		cl_seg_sync(c, in, ev_engine_now(c->eng), 1);
		cl_seg_flush(in);
		while (in->n_run) {
			sim_req_t *r = in->run[in->n_run - 1];
			in->decode_tokens -= decode_share(r);
			int rc = cl_release_blocks(c, in, r);
			if (rc || (rc = cl_record(c, r, REQ_UNFINISHED)))
				return rc;
			in->n_run--;
			cl_req_free(c, r);
			c->n_live--;
		}
		while (in->wait_head) {
			sim_req_t *r = in->wait_head;
			cl_wait_unlink(in, NULL, r, ev_engine_now(c->eng));
			int rc = cl_record(c, r, REQ_UNFINISHED);
			if (rc)
				return rc;
			cl_req_free(c, r);
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

/* cluster_req — a request's life outside the scheduler: the pool requests
 * are reused from, their result rows, the waiting queue and their tokens. */
#include "sim/cluster/cluster_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/vec.h"

void cl_req_destroy(sim_req_t *r)
{
	free(r->blocks);
	free(r->slot);
	tok_hist_free(&r->gaps);
	free(r);
}

/* A finished request goes to the cluster's free list with its buffers, so
 * the steady state allocates nothing per request (cluster.h: n_req_alloc). */
void cl_req_free(cluster_t *c, sim_req_t *r)
{
	r->next = c->req_pool;
	c->req_pool = r;
}

/* A request from the free list (its block and gap-histogram buffers kept,
 * every other field zeroed), or a new one. NULL when out of memory. */
sim_req_t *cl_req_get(cluster_t *c, uint32_t n_blocks)
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
		/* cluster.h: a request's per-token fields share one cache line */
		size_t sz = (sizeof *r + CL_REQ_ALIGN - 1) / CL_REQ_ALIGN * CL_REQ_ALIGN;
		r = aligned_alloc(CL_REQ_ALIGN, sz);
		if (!r)
			return NULL;
		memset(r, 0, sizeof *r);
		c->n_req_alloc++;
	}
	if (VEC_GROW(r->blocks, r->cap_blocks, n_blocks ? n_blocks : 1, 1) ||
	    VEC_GROW(r->slot, r->cap_slot, n_blocks ? n_blocks : 1, 1)) {
		cl_req_free(c, r);
		return NULL;
	}
	return r;
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

int cl_record(cluster_t *c, sim_req_t *q, int32_t status)
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
		if (cl_gaps_flush(q))
			return KS_ENOMEM;
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

void cl_wait_push_back(sim_inst_t *in, sim_req_t *r, int64_t now)
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

void cl_wait_push_front(sim_inst_t *in, sim_req_t *r, int64_t now)
{
	wait_account(in, now);
	r->next = in->wait_head;
	in->wait_head = r;
	if (!in->wait_tail)
		in->wait_tail = r;
	in->n_wait++;
}

void cl_wait_unlink(sim_inst_t *in, sim_req_t *prev, sim_req_t *r, int64_t now)
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

/* The hot lines end where cluster.h says (a request of any other layout
 * still runs the same, only slower). */
_Static_assert(offsetof(sim_req_t, held) + sizeof(uint32_t) <= CL_REQ_ALIGN,
	       "sim_req_t: the per-token fields outgrew their cache lines");

int cl_gaps_flush(sim_req_t *r)
{
	/* the histogram does not depend on the order of its gaps (tok_hist.h) */
	for (; r->n_gap; r->n_gap--)
		if (tok_hist_add(&r->gaps, r->gap_buf[r->n_gap - 1], 1))
			return KS_ENOMEM;
	return 0;
}

/* A token of r at now: its first, or the gap since its last, buffered in
 * r's own lines (a gap too long for the buffer goes straight in). */
int cl_emit_token(cluster_t *c, sim_req_t *r, int64_t now)
{
	if (r->generated == 0) {
		r->t_first = now;
	} else {
		int64_t v = now - r->t_last;
		if (v < 0 || v > UINT32_MAX) {
			if (tok_hist_add(&r->gaps, v, 1))
				return KS_ENOMEM;
		} else {
			if (r->n_gap == CL_GAP_BUF && cl_gaps_flush(r))
				return KS_ENOMEM;
			r->gap_buf[r->n_gap++] = (uint32_t)v;
		}
	}
	r->t_last = now;
	r->generated++;
	(void)c;
	return 0;
}

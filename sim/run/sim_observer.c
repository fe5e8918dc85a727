/* sim_observer — the trace observer (sim_run_opts_t.trace): the layout at
 * the start, each instance's state after every event that touched it
 * (sim_touch), its busy intervals, and its totals at the end. */
#include "sim/run/sim_int.h"

#include <stdlib.h>

static void trace_state(const sim_ctx_t *s, uint32_t i, sim_trace_state_t *v)
{
	const sim_inst_t *in = &s->cl.inst[i];
	double bb = (double)s->cl.p.block_bytes;
	uint32_t used = kv_used(in->kv), ev = kv_evictable(in->kv), sp = kv_spec_blocks(in->kv),
		 fl = kv_inflight_blocks(in->kv);
	/* speculative blocks are READY and unreferenced (kv_ref clears the mark),
	 * so among the evictable; the clamps only guard the partition */
	uint32_t spec = sp < ev ? sp : ev, rest = used - ev;
	uint32_t infl = fl < rest ? fl : rest;
	*v = (sim_trace_state_t){(rest - infl) * bb, (ev - spec) * bb, spec * bb, infl * bb,
				 in->n_wait, in->n_run};
}

/* The instances touched in the event just dispatched, sampled after it. */
int sim_observer_flush(sim_ctx_t *s)
{
	int64_t now = ev_engine_now(s->eng);
	for (uint32_t k = 0; k < s->n_tr_dirty; k++) {
		uint32_t i = s->tr_dirty_list[k];
		s->tr_dirty[i] = 0;
		sim_trace_state_t v;
		trace_state(s, i, &v);
		int rc = s->trace->state(s->trace->ctx, now, i, &v);
		if (rc && !s->trace_rc)
			s->trace_rc = rc;
	}
	s->n_tr_dirty = 0;
	return s->trace_rc;
}

/* cluster_params_t.on_busy (set only with an observer) */
void sim_observer_busy(void *ctx, const sim_inst_t *in, int64_t t0, int64_t t1, uint32_t n)
{
	sim_ctx_t *s = ctx;
	sim_trace_busy_t b = {in->id, t0, t1, n, n ? 0 : in->cur_job, 0, 0, 0, 0, 0, {0}};
	if (n) {
		b.n_prefill = in->batch.n_pre;
		b.n_decode = in->batch.n_dec;
		for (uint32_t k = 0; k < in->batch.n_pre; k++)
			b.prefill_tokens += in->batch.pre_new[k];
		for (uint32_t k = 0; k < in->batch.n_dec; k++)
			b.decode_ctx_tokens += in->batch.dec_ctx[k];
		for (uint32_t k = 0; k < in->n_run && b.n_ids < SIM_TRACE_IDS; k++)
			if (in->run[k]->in_batch)
				b.ids[b.n_ids++] = in->run[k]->id;
	}
	int rc = s->trace->busy(s->trace->ctx, &b);
	if (rc && !s->trace_rc)
		s->trace_rc = rc;
}

/* The observer's start: the layout, and every instance's state at t = 0. */
int sim_observer_begin(sim_ctx_t *s)
{
	uint32_t n = s->cl.p.n_instances;
	uint32_t *node = calloc(n ? n : 1, sizeof *node);
	s->tr_dirty = calloc(n ? n : 1, 1);
	s->tr_dirty_list = malloc((n ? n : 1) * sizeof *s->tr_dirty_list);
	if (!node || !s->tr_dirty || !s->tr_dirty_list) {
		free(node);
		return KS_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		node[i] = sim_inst_node(s, i);
	int rc = s->trace->begin(s->trace->ctx, n, node);
	free(node);
	for (uint32_t i = 0; i < n && !rc; i++)
		sim_touch(s, (int32_t)i);
	return rc ? rc : sim_observer_flush(s);
}

/* The observer's end: the last states, then each instance's totals. */
int sim_observer_end(sim_ctx_t *s)
{
	int rc = sim_observer_flush(s);
	for (uint32_t i = 0; i < s->cl.p.n_instances && !rc; i++)
		rc = s->trace->end(s->trace->ctx, i, s->cl.inst[i].busy_ns, s->cl.inst[i].iterations);
	return rc;
}

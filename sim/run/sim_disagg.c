/* sim_disagg — prefill/decode pools, the decode router and the KV handoff
 * (contract in sim_disagg.h). */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_disagg.h"
#include "sim/run/sim_int.h"

/* One request between the end of its prefill (or the start of its last
 * prefill iteration, layer-wise) and the landing of its KV. */
typedef struct hoff {
	sim_req_t *r;
	uint32_t src, dst;
	uint32_t copies_left;   /* handoff copies started and not landed */
	uint32_t need_blocks;   /* promised at dst (decode routers count them) */
	int prefilled;          /* the prefill ended: the last share has left */
	uint32_t next_free;     /* free list link, index + 1 */
} hoff_t;

typedef struct sim_disagg {
	sim_disagg_params_t prm;
	uint32_t n_prefill, n_inst;
	uint32_t tp_p, tp_d;
	uint64_t block_bytes_p;  /* one block over a prefill instance's group */
	uint32_t layers;
	mdl_compute_t comp_d;    /* the decode pool's compute model */
	void **cost_ctx;
	uint32_t *kv_blocks;
	uint8_t *role;
	uint64_t *promised;      /* per decode instance: blocks of handoffs headed there */
	gsl_rng *rng;            /* the decode router's ties */
	hoff_t *h;
	size_t n_h, cap_h;
	uint32_t free_h;         /* index + 1, 0: none */
} sim_disagg_t;

/* The decode router's stream: the one after the policy families' (rng.h),
 * so adding it perturbs no other. */
#define DISAGG_STREAM (SIM_STREAM_POLICY + POL_NFAMILY)

/* TP rules of one pool, as sim_core.c checks them for the mixed one. */
static int pool_tp_check(const cfg_t *cfg, err_t *e, const char *key, uint32_t tp,
			 uint32_t gpn, const mdl_llm_t *llm)
{
	char keys[160];
	snprintf(keys, sizeof keys, "cluster.%s,cluster.tp,cluster.gpus_per_node,model.name", key);
	if (gpn % tp || llm->heads % tp ||
	    (llm->attention == MDL_ATTN_GQA && llm->kv_heads % tp && tp % llm->kv_heads))
		return cfg_err_keys(cfg, e, keys,
				    "%s = %u must divide gpus_per_node = %u and %s's %u attention "
				    "heads, and divide or be divided by its %u KV heads",
				    key, tp, gpn, llm->name, llm->heads, llm->kv_heads);
	return 0;
}

static int named(const char *v)
{
	return v && v[0];
}

/* A pool's built-in GPU spec; the error names the key. */
static int pool_hw(const cfg_t *cfg, err_t *e, const char *key, const char *name, mdl_hw_t *hw)
{
	err_t sub = {0};
	if (!mdl_hw_builtin(name, hw, &sub))
		return 0;
	return cfg_err_keys(cfg, e, key, "%s", sub.msg);
}

/* prefill_share: the pool counts when neither is given (cluster.prefill_share). */
static int pool_split(sim_ctx_t *s, const cfg_t *cfg, err_t *e)
{
	sim_disagg_params_t *d = &s->prm.dg;
	if (d->prefill_nodes || d->decode_nodes || d->prefill_share <= 0)
		return 0;
	uint32_t n = s->prm.nodes;
	if (n < 2)
		return cfg_err_keys(cfg, e, "cluster.prefill_share,cluster.nodes",
				    "prefill_share = %g needs nodes >= 2 to split, nodes = %u",
				    d->prefill_share, n);
	uint32_t p = (uint32_t)floor(n * d->prefill_share + 0.5);
	d->prefill_nodes = p < 1 ? 1 : p > n - 1 ? n - 1 : p;
	d->decode_nodes = n - d->prefill_nodes;
	return 0;
}

int sim_disagg_check(sim_ctx_t *s, const cfg_t *cfg, const mdl_llm_t *llm, err_t *e)
{
	const sim_disagg_params_t *d = &s->prm.dg;
	int rc;
	if (d->on && (rc = pool_split(s, cfg, e)))
		return rc;
	if (!d->on) {
		if (d->prefill_nodes || d->decode_nodes || d->prefill_tp || d->decode_tp ||
		    named(d->prefill_gpu) || named(d->decode_gpu) || d->decode_prefix_cache)
			return cfg_err_keys(cfg, e,
					    "cluster.prefill_nodes,cluster.decode_nodes,cluster.prefill_tp,"
					    "cluster.decode_tp,cluster.prefill_gpu,cluster.decode_gpu,"
					    "cluster.decode_prefix_cache",
					    "pool keys are set but disagg = false: set disagg = true, "
					    "or remove them");
		return 0;
	}
	if (!d->prefill_nodes || !d->decode_nodes)
		return cfg_err_keys(cfg, e, "cluster.disagg,cluster.prefill_nodes,cluster.decode_nodes",
				    "disagg = true needs both pools: prefill_nodes = %u and "
				    "decode_nodes = %u must each be >= 1",
				    d->prefill_nodes, d->decode_nodes);
	if (d->prefill_nodes + d->decode_nodes != s->prm.nodes)
		return cfg_err_keys(cfg, e, "cluster.prefill_nodes,cluster.decode_nodes,cluster.nodes",
				    "prefill_nodes + decode_nodes = %u + %u must equal nodes = %u",
				    d->prefill_nodes, d->decode_nodes, s->prm.nodes);
	if (d->decode_routing == SIM_DROUTE_PREFIX_AWARE && !d->decode_prefix_cache)
		return cfg_err_keys(cfg, e, "cluster.decode_routing,cluster.decode_prefix_cache",
				    "decode_routing = prefix_aware needs decode_prefix_cache = true: "
				    "without it decode instances hold no prefix");
	char modes[128];
	if (!(cluster_sched_flags(s->prm.sched_mode) & CL_SCHED_F_DISAGG))
		return cfg_err_keys(cfg, e, "cluster.disagg,scheduler.mode",
				    "disagg = true is modelled under scheduler.mode = %s only",
				    cluster_sched_names(CL_SCHED_F_DISAGG, modes, sizeof modes));
	uint32_t tp_p = d->prefill_tp ? d->prefill_tp : s->prm.tp;
	uint32_t tp_d = d->decode_tp ? d->decode_tp : s->prm.tp;
	if ((rc = pool_tp_check(cfg, e, "prefill_tp", tp_p, s->prm.gpus_per_node, llm)) ||
	    (rc = pool_tp_check(cfg, e, "decode_tp", tp_d, s->prm.gpus_per_node, llm)))
		return rc;
	s->tp = tp_p;
	return named(d->prefill_gpu) ? pool_hw(cfg, e, "cluster.prefill_gpu", d->prefill_gpu, &s->hw)
				     : 0;
}

uint32_t sim_disagg_route_instances(const sim_ctx_t *s)
{
	return s->dg ? s->dg->n_prefill : s->cl.p.n_instances;
}

/* KV pool of an instance of tp GPUs of hw, as sim_core.c sizes the mixed one. */
static int pool_blocks(sim_ctx_t *s, const cfg_t *cfg, const mdl_hw_t *hw, const mdl_llm_t *llm,
		       uint32_t tp, const char *key, uint32_t *out, err_t *e)
{
	if (s->prm.kv_blocks) {
		*out = s->prm.kv_blocks;
		return 0;
	}
	uint64_t b = mdl_kv_tokens_per_instance(hw, llm, tp, s->prm.reserve_fraction) /
		     s->prm.block_tokens;
	if (!b)
		return cfg_err_keys(cfg, e, key, "%s weights at tp = %u leave no room for KV on %s",
				    llm->name, tp, hw->name);
	*out = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	return 0;
}

static int on_handoff(void *ctx, uint32_t inst, sim_req_t *r);
static int on_last_chunk(void *ctx, uint32_t inst, sim_req_t *r);
static int on_landed(sim_ctx_t *s, uint32_t tag);

int sim_disagg_setup(sim_ctx_t *s, const cfg_t *cfg, const mdl_llm_t *llm,
		     const mdl_compute_params_t *cp, cluster_params_t *p, err_t *e)
{
	const sim_disagg_params_t *d = &s->prm.dg;
	if (!d->on)
		return 0;
	sim_disagg_t *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->dg = g;
	g->prm = *d;
	g->tp_p = s->tp;
	g->tp_d = d->decode_tp ? d->decode_tp : s->prm.tp;
	g->layers = llm->layers ? llm->layers : 1;
	g->block_bytes_p = p->block_bytes;
	uint32_t G = s->gpus_per_node;
	g->n_prefill = d->prefill_nodes * (G / g->tp_p);
	g->n_inst = g->n_prefill + d->decode_nodes * (G / g->tp_d);
	mdl_hw_t hw_d = s->hw;
	int rc;
	if (named(d->decode_gpu) && (rc = pool_hw(cfg, e, "cluster.decode_gpu", d->decode_gpu, &hw_d)))
		return rc;
	if ((rc = mdl_compute_init(&g->comp_d, &hw_d, llm, g->tp_d, cp, e)) ||
	    (rc = mdl_compute_check_finite(&g->comp_d, e)))
		return rc;
	uint32_t kv_p = p->kv_blocks, kv_d = 0;
	if ((rc = pool_blocks(s, cfg, &hw_d, llm, g->tp_d, "cluster.decode_tp,cluster.decode_gpu",
			      &kv_d, e)))
		return rc;
	uint32_t n = g->n_inst;
	g->cost_ctx = calloc(n, sizeof *g->cost_ctx);
	g->kv_blocks = calloc(n, sizeof *g->kv_blocks);
	g->role = calloc(n, 1);
	g->promised = calloc(n, sizeof *g->promised);
	s->inst_node = calloc(n, sizeof *s->inst_node);
	s->inst_gpu0 = calloc(n, sizeof *s->inst_gpu0);
	g->rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!g->cost_ctx || !g->kv_blocks || !g->role || !g->promised || !s->inst_node ||
	    !s->inst_gpu0 || !g->rng)
		return err_set(e, KS_ENOMEM, "out of memory");
	uint64_t seed = sim_seed_for(s->prm.seed, DISAGG_STREAM);
	gsl_rng_set(g->rng, seed ? seed : 1);
	for (uint32_t i = 0; i < n; i++) {
		int pre = i < g->n_prefill;
		uint32_t tp = pre ? g->tp_p : g->tp_d, k = pre ? i : i - g->n_prefill;
		s->inst_node[i] = (pre ? 0 : d->prefill_nodes) + k * tp / G;
		s->inst_gpu0[i] = k * tp % G;
		g->role[i] = pre ? CL_ROLE_PREFILL : CL_ROLE_DECODE;
		g->cost_ctx[i] = pre ? (void *)&s->comp : (void *)&g->comp_d;
		g->kv_blocks[i] = pre ? kv_p : kv_d;
	}
	p->n_instances = n;
	p->inst_cost_ctx = g->cost_ctx;
	p->inst_kv_blocks = g->kv_blocks;
	p->inst_role = g->role;
	p->kv_blocks = kv_p < kv_d ? kv_p : kv_d;
	p->on_handoff = on_handoff;
	p->decode_prefix_cache = d->decode_prefix_cache;
	s->tp_decode = g->tp_d;
	s->handoff_landed = on_landed;
	p->on_last_chunk = d->handoff == SIM_HANDOFF_LAYERWISE ? on_last_chunk : NULL;
	return 0;
}

/* ---- the decode router ----------------------------------------------------- */

/* Decode instance for r: least_loaded takes the fewest decode tokens
 * (running and promised by handoffs under way), then the fewest requests;
 * kv_capacity the most free or evictable blocks less those promised;
 * prefix_aware the most of r's leading prompt blocks held there, then
 * least_loaded's decode tokens. Ties at random from the router's stream
 * (reservoir sampling, one draw per tie), never by index. */
static uint32_t decode_pick(sim_ctx_t *s, const sim_req_t *r)
{
	sim_disagg_t *g = s->dg;
	uint32_t best = g->n_prefill, ties = 0;
	double k1 = 0, k2 = 0;
	uint32_t B = s->cl.p.block_tokens;
	for (uint32_t i = g->n_prefill; i < g->n_inst; i++) {
		cluster_sync(&s->cl, i);
		const sim_inst_t *in = &s->cl.inst[i];
		double a, b;
		if (g->prm.decode_routing == SIM_DROUTE_KV_CAPACITY) {
			a = -((double)kv_free_or_evictable(in->kv) - (double)g->promised[i]);
			b = 0;
		} else if (g->prm.decode_routing == SIM_DROUTE_PREFIX_AWARE) {
			a = -(double)kv_match(in->kv, r->blocks, r->n_blocks);
			b = (double)in->decode_tokens + (double)g->promised[i] * B;
		} else {
			a = (double)in->decode_tokens + (double)g->promised[i] * B;
			b = (double)in->n_run + in->n_wait;
		}
		if (!ties || a < k1 || (a == k1 && b < k2)) {
			best = i;
			k1 = a;
			k2 = b;
			ties = 1;
		} else if (a == k1 && b == k2 && gsl_rng_uniform_int(g->rng, ++ties) == 0) {
			best = i;
		}
	}
	return best;
}

/* ---- handoffs -------------------------------------------------------------- */

static int hoff_new(sim_disagg_t *g, sim_req_t *r, uint32_t src, uint32_t *idx)
{
	if (g->free_h) {
		*idx = g->free_h - 1;
		g->free_h = g->h[*idx].next_free;
	} else {
		if (VEC_GROW(g->h, g->cap_h, g->n_h + 1, 64))
			return KS_ENOMEM;
		*idx = (uint32_t)g->n_h++;
	}
	g->h[*idx] = (hoff_t){.r = r, .src = src};
	r->handoff = *idx + 1;
	return 0;
}

/* Routes r to a decode instance (h->dst), promises it r's blocks there
 * and, with a decode prefix cache, holds the prompt blocks it has
 * (cluster_decode_pin). 0, or a hook's error. */
static int hoff_route(sim_ctx_t *s, hoff_t *h)
{
	uint32_t B = s->cl.p.block_tokens;
	h->dst = decode_pick(s, h->r);
	h->need_blocks = (uint32_t)(((uint64_t)h->r->in_len + h->r->out_len + B - 1) / B);
	s->dg->promised[h->dst] += h->need_blocks;
	return cluster_decode_pin(&s->cl, h->dst, h->r);
}

/* Bytes of r's prompt KV at the prefill TP: its full and partial blocks
 * but those its decode instance holds (r->dec_hit, set when routed). */
static uint64_t hoff_bytes(const sim_ctx_t *s, const sim_req_t *r, uint32_t *blocks)
{
	uint32_t B = s->cl.p.block_tokens;
	*blocks = (r->in_len + B - 1) / B - r->dec_hit;
	return (uint64_t)*blocks * s->dg->block_bytes_p;
}

static int hoff_send(sim_ctx_t *s, uint32_t idx, uint64_t bytes, uint32_t blocks)
{
	sim_disagg_t *g = s->dg;
	hoff_t *h = &g->h[idx];
	if (!bytes)
		return 0;
	h->copies_left++;
	return sim_copy_handoff(s, h->src, g->tp_p, h->dst, g->tp_d, bytes, blocks, idx + 1);
}

/* Layer-wise: every layer but the last streams while the last prefill
 * iteration runs (Mooncake's layer-wise transfer, FAST '25), so its share
 * leaves now; the last layer's share leaves when the prefill ends. A
 * request preempted and prefilled again sends it once. */
static int on_last_chunk(void *ctx, uint32_t inst, sim_req_t *r)
{
	sim_ctx_t *s = ctx;
	sim_disagg_t *g = s->dg;
	/* one that ends with the prefill's token never leaves (cluster.h
	 * CL_ROLE_PREFILL); under ttft = prefill_end such a one sends it all
	 * when handed off */
	if (r->handoff || r->generated + 1 >= r->out_len)
		return 0;
	uint32_t idx, blocks;
	int rc = hoff_new(g, r, inst, &idx);
	if (rc || (rc = hoff_route(s, &g->h[idx])))
		return rc;
	uint64_t all = hoff_bytes(s, r, &blocks);
	return hoff_send(s, idx, all / g->layers * (g->layers - 1), blocks);
}

static int hoff_land(sim_ctx_t *s, uint32_t idx)
{
	sim_disagg_t *g = s->dg;
	hoff_t *h = &g->h[idx];
	sim_req_t *r = h->r;
	uint32_t dst = h->dst;
	g->promised[dst] -= h->need_blocks;
	r->handoff = 0;
	h->r = NULL;
	h->next_free = g->free_h;
	g->free_h = idx + 1;
	return cluster_handoff_land(&s->cl, dst, r);
}

static int on_handoff(void *ctx, uint32_t inst, sim_req_t *r)
{
	sim_ctx_t *s = ctx;
	sim_disagg_t *g = s->dg;
	uint32_t idx, blocks;
	int rc, early = r->handoff != 0; /* layer-wise: all but the last layer's share left */
	if (early) {
		idx = r->handoff - 1;
	} else {
		if ((rc = hoff_new(g, r, inst, &idx)) || (rc = hoff_route(s, &g->h[idx])))
			return rc;
	}
	/* after the routing: what the decode instance holds is not moved */
	uint64_t all = hoff_bytes(s, r, &blocks);
	uint64_t sent = early ? all / g->layers * (g->layers - 1) : 0;
	g->h[idx].prefilled = 1;
	if ((rc = hoff_send(s, idx, all - sent, blocks)))
		return rc;
	return g->h[idx].copies_left ? 0 : hoff_land(s, idx);
}

static int on_landed(sim_ctx_t *s, uint32_t tag)
{
	hoff_t *h = &s->dg->h[tag - 1];
	if (--h->copies_left || !h->prefilled)
		return 0;
	return hoff_land(s, tag - 1);
}

int sim_disagg_finish(sim_ctx_t *s)
{
	sim_disagg_t *g = s->dg;
	for (size_t i = 0; g && i < g->n_h; i++) {
		hoff_t *h = &g->h[i];
		/* a layer-wise share in flight for a request still prefilling is
		 * the cluster's to record: only handed-off ones are here alone */
		if (!h->r || !h->prefilled)
			continue;
		sim_req_t *r = h->r;
		h->r = NULL;
		r->handoff = 0;
		int rc = cluster_handoff_drop(&s->cl, r);
		if (rc)
			return rc;
	}
	return 0;
}

/* res_rows_fn: the handed-off requests' waits, summed in ms and counted. */
typedef struct wait_sum {
	double sum;
	size_t n;
} wait_sum_t;
static int sum_handoff_wait(void *ctx, const void *rows, size_t n)
{
	wait_sum_t *w = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++)
		if (r->handoff_wait_ns >= 0) {
			w->sum += (double)r->handoff_wait_ns / 1e6;
			w->n++;
		}
	return 0;
}

int sim_disagg_report(const sim_ctx_t *s, sim_results_t *res)
{
	wait_sum_t w = {0, 0};
	int rc = s->dg ? sim_results_rows(res, RES_T_REQ, sum_handoff_wait, &w) : 0;
	if (rc)
		return rc;
	double sum = w.sum;
	size_t n = w.n;
	if (rec_metric(res, REC_DISAGG_HANDOFF_BYTES, (double)sim_copies_handoff_bytes(s->cp)) ||
	    rec_metric(res, REC_DISAGG_HANDOFF_WAIT_MEAN_MS, n ? sum / n : NAN))
		return KS_ENOMEM;
	return 0;
}

void sim_disagg_free(sim_ctx_t *s)
{
	sim_disagg_t *g = s->dg;
	if (!g)
		return;
	if (g->rng)
		gsl_rng_free(g->rng);
	FREE_ALL(g->cost_ctx, g->kv_blocks, g->role, g->promised, g->h, s->inst_node, s->inst_gpu0,
		 g);
	s->dg = NULL;
	s->inst_node = s->inst_gpu0 = NULL;
}

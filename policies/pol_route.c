/* pol_route — routing policies. Each picks one instance for a request from
 * the view. Every router but round_robin breaks ties by load (waiting +
 * running requests), then uniformly at random from its own GSL stream (the
 * seed its init receives, pol_pick), so no instance index is favoured and
 * runs stay deterministic per seed. Prefix matches come through the view the
 * simulator passes (policy.routing.view: the computed KV or the routers' own
 * approximate tree). Defaults cite the framework they follow; "own choice"
 * says where none is published. */
#include "policies/pol_int.h"
#include "sim/base/vec.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The state every tie-breaking router starts with: its own stream and a
 * per-instance scratch array grown on first use (no allocation once warm). */
typedef struct rt_base {
	gsl_rng *rng;
	uint32_t *m, cap;
	uint32_t *h, cap_h; /* min_ttft: the best prefix's holders */
} rt_base_t;

static void *rt_new(size_t size, uint64_t seed, err_t *e)
{
	rt_base_t *b = calloc(1, size);
	if (b && !(b->rng = pol_rng_new(seed))) {
		free(b);
		b = NULL;
	}
	if (!b)
		err_set(e, KS_ENOMEM, "out of memory");
	return b;
}

/* init of a router whose state is an rt_base_t with, at p_off, a copy of
 * its params struct (p_size bytes). */
static int rt_init_copy(size_t size, size_t p_off, const void *params, size_t p_size, uint64_t seed,
                        void **state, err_t *e)
{
	char *s = rt_new(size, seed, e);
	if (!s)
		return KS_ENOMEM;
	memcpy(s + p_off, params, p_size);
	*state = s;
	return 0;
}

static void rt_free(void *st)
{
	rt_base_t *b = st;
	if (!b)
		return;
	gsl_rng_free(b->rng);
	free(b->m);
	free(b->h);
	free(b);
}

/* Matched blocks of r on every instance through the view; NULL on ENOMEM. */
static const uint32_t *rt_matches(rt_base_t *b, const pol_view_t *v, const pol_req_t *r,
                                  uint32_t (*match)(void *, uint32_t, const uint64_t *, uint32_t),
                                  uint32_t *best)
{
	if (VEC_GROW(b->m, b->cap, v->n_inst, v->n_inst))
		return NULL;
	*best = pol_view_match_all(v, r, match, b->m);
	return b->m;
}

static uint64_t new_tokens(const pol_req_t *r, uint32_t cached_blocks, uint32_t B)
{
	uint64_t c = (uint64_t)cached_blocks * B;
	return r->input_tokens > c ? r->input_tokens - c : 0;
}

/* ---- round_robin ----------------------------------------------------------- */

static int rr_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)params;
	(void)seed;
	uint64_t *n = calloc(1, sizeof *n);
	if (!n)
		return err_set(e, KS_ENOMEM, "out of memory");
	*state = n;
	return 0;
}

static int rr_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	uint64_t *n = st;
	*inst = (uint32_t)(*n % v->n_inst);
	++*n;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_round_robin = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "round_robin",
             "Instances in turn, ignoring load and cache.", POL_NO_PARAMS, rr_init, free},
    .route = rr_route,
};

/* ---- random ------------------------------------------------------------------ */

static int rnd_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	*inst = (uint32_t)gsl_rng_uniform_int(st, v->n_inst);
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_random = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "random",
             "Uniformly random instance (seeded GSL stream).", POL_NO_PARAMS, pol_rng_state_init,
             pol_rng_state_free},
    .route = rnd_route,
};

/* ---- least_load ---------------------------------------------------------------- */

typedef struct ll_params {
	int metric; /* 0 requests, 1 tokens, 2 delay */
} ll_params_t;

static const cfg_enum_t ll_metric_map[] = {
    {"requests", 0}, {"tokens", 1}, {"delay", 2}, {NULL, 0}};
static const cfg_tkey_t ll_params[] = {
    POL_KEY("routing", "least_load", "load_metric", CFG_ENUM, "requests", 0, 0, NULL, "",
            "requests: waiting + running (SGLang's shortest queue); tokens: queued prefill + "
            "decoding tokens; delay: estimated queue delay",
            CFG_AT_ENUM(ll_params_t, metric, ll_metric_map)),
};

typedef struct ll_state {
	rt_base_t b;
	ll_params_t p;
} ll_state_t;

static int ll_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	return rt_init_copy(sizeof(ll_state_t), offsetof(ll_state_t, p), params,
	                    sizeof(ll_params_t), seed, state, e);
}

static double ll_load(int metric, const pol_inst_t *x)
{
	switch (metric) {
	case 0:
		return (double)pol_inst_load(x);
	case 1:
		return (double)(x->prefill_tokens + x->decode_tokens);
	default:
		return (double)x->queue_delay_ns;
	}
}

static int ll_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	ll_state_t *s = st;
	if (s->p.metric == 0 && v->least_loaded) {
		/* the tied least-loaded set as the scan below would find it, and
		 * one uniform draw among them (pol_pick's distribution) */
		uint32_t n;
		uint64_t mn, mx;
		const uint32_t *c = v->least_loaded(v->ctx, &n, &mn, &mx);
		*inst = n > 1 ? c[gsl_rng_uniform_int(s->b.rng, n)] : c[0];
		return POL_ACCEPT;
	}
	pol_inst_t x;
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		pol_pick_offer(&pk, i, ll_load(s->p.metric, &x), pol_inst_load(&x));
	}
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_least_load = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "least_load",
             "The instance with the least load (load_metric), ignoring cache.",
             POL_PARAMS(ll_params, ll_params_t), ll_init, rt_free},
    .route = ll_route,
};

/* ---- cache_aware (SGLang router) -----------------------------------------------
 * balance_rule = sglang, sgl-router's cache_aware policy: the system is
 * imbalanced when max_load - min_load > balance_abs_threshold AND max_load >
 * balance_rel_threshold x min_load (load = pending requests); then the least
 * loaded worker wins. Otherwise the worker with the longest prefix match
 * wins if match/request length > cache_threshold, else the one with the
 * smallest tree (the view's held_blocks: the routers' tree when
 * policy.routing.view = routed, the default here as there; resident blocks
 * in the computed view). Defaults are the router's:
 * cache_threshold 0.5, balance_abs_threshold 32, balance_rel_threshold
 * 1.0001 (sglang router README / launch_router --help). Matching here is at
 * block granularity, the router's is on text characters.
 * balance_rule = btb, the rule of the simulator behind the early_rdma study
 * (Infer-Sim router.py, see the btb reference notes, sec. 2.6): imbalanced
 * when max_load > balance_abs_threshold AND max_load >
 * balance_rel_threshold x min_load (the absolute max, not max - min); then
 * least load. Otherwise the most matched prefix blocks counting HBM and the
 * node's host tier, then lowest load, then random, so a request matching
 * nothing goes to the least loaded node. No cache_threshold, no smallest
 * tree. Its defaults there are ABS 64, REL 1.5 (SGLang's router defaults of
 * that time); set them with the rule. */

typedef struct ca_params {
	double cache_thr, abs_thr, rel_thr;
	int btb; /* balance_rule = btb */
} ca_params_t;

typedef struct ca_state {
	rt_base_t b;
	ca_params_t p;
} ca_state_t;

static const cfg_enum_t ca_rule_map[] = {{"sglang", 0}, {"btb", 1}, {NULL, 0}};
#define AT(member) CFG_AT(DOUBLE, ca_params_t, member)
static const cfg_tkey_t ca_params[] = {
    POL_KEY("routing", "cache_aware", "cache_threshold", CFG_FLOAT, "0.5", 0, 1, NULL, "",
            "min prefix match ratio for cache routing (SGLang router default 0.5; unused "
            "with balance_rule = btb)",
            AT(cache_thr)),
    POL_KEY("routing", "cache_aware", "balance_abs_threshold", CFG_FLOAT, "32", 0, 1e9, NULL,
            "requests",
            "imbalance needs max - min load (btb: max load) above this (SGLang default 32)",
            AT(abs_thr)),
    POL_KEY("routing", "cache_aware", "balance_rel_threshold", CFG_FLOAT, "1.0001", 1, 1e9, NULL,
            "", "and max load above this x min load (SGLang default 1.0001)", AT(rel_thr)),
    POL_KEY("routing", "cache_aware", "balance_rule", CFG_ENUM, "sglang", 0, 0, NULL, "",
            "sglang: sgl-router's rule; btb: the early_rdma study's (absolute max load, "
            "HBM + host-tier match, no cache_threshold or smallest tree; own choice of "
            "default: sglang)",
            CFG_AT_ENUM(ca_params_t, btb, ca_rule_map)),
};
#undef AT

static int ca_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	return rt_init_copy(sizeof(ca_state_t), offsetof(ca_state_t, p), params,
	                    sizeof(ca_params_t), seed, state, e);
}

static int ca_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	ca_state_t *s = st;
	uint32_t best;
	/* views from hosts before ABI 2 have no host-tier match */
	const uint32_t *m =
	    rt_matches(&s->b, v, r, s->p.btb && v->match_host ? v->match_host : v->match, &best);
	if (!m)
		return KS_ENOMEM;
	pol_inst_t x;
	double mx = -1, mn = INFINITY;
	if (v->least_loaded) {
		uint32_t n;
		uint64_t lo, hi;
		(void)v->least_loaded(v->ctx, &n, &lo, &hi);
		mn = (double)lo;
		mx = (double)hi;
	}
	for (uint32_t i = 0; !v->least_loaded && i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		double l = (double)pol_inst_load(&x);
		mx = fmax(mx, l);
		mn = fmin(mn, l);
	}
	int imbalanced = s->p.btb ? mx > s->p.abs_thr && mx > s->p.rel_thr * mn
	                          : mx - mn > s->p.abs_thr && mx > s->p.rel_thr * mn;
	/* 0 least load, 1 longest match, 2 smallest tree */
	int rule = imbalanced                                                   ? 0
	           : s->p.btb                                                   ? 1
	           : r->n_blocks && (double)best / r->n_blocks > s->p.cache_thr ? 1
	                                                                        : 2;
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		uint64_t l = pol_inst_load(&x);
		/* the smallest tree: sgl-router's get_smallest_tenant reads its
		 * own tree, which the routed view's held_blocks is */
		double tree =
		    v->held_blocks ? (double)v->held_blocks(v->ctx, i) : (double)x.kv_used_blocks;
		double sc = rule == 0 ? (double)l : rule == 1 ? -(double)m[i] : tree;
		pol_pick_offer(&pk, i, sc, l);
	}
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_cache_aware = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "cache_aware",
             "SGLang router cache-aware policy: least load when max - min load > "
             "balance_abs_threshold and max > balance_rel_threshold x min; else the longest "
             "prefix match if its ratio > cache_threshold; else the smallest cache tree. "
             "balance_rule = btb: the early_rdma study's rule (max load > abs threshold and > "
             "rel x min; else the most HBM + host-tier prefix blocks, then least load).",
             POL_PARAMS(ca_params, ca_params_t), ca_init, rt_free},
    .route = ca_route,
};

/* ---- kv_cost (Dynamo KV router) ---------------------------------------------
 * Dynamo's KV router cost: overlap_score_weight x potential prefill blocks +
 * potential active (decode) blocks, lowest wins (router design doc; default
 * weight 1.0, temperature 0 = deterministic). Prefill blocks =
 * (input tokens - overlap blocks x B) / B; active blocks = blocks of the
 * instance's queued prefill and decoding tokens. */

/* A router whose only parameter is one number: its params struct. */
typedef struct rt_num_params {
	double x;
} rt_num_params_t;

static const cfg_tkey_t kc_params[] = {
    POL_KEY("routing", "kv_cost", "overlap_score_weight", CFG_FLOAT, "1", 0, 1e6, NULL, "",
            "weight of prefill blocks against active blocks (Dynamo default 1.0)",
            CFG_AT(DOUBLE, rt_num_params_t, x)),
};

typedef struct rt_num {
	rt_base_t b;
	rt_num_params_t p;
} rt_num_t;

static int rt_num_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	return rt_init_copy(sizeof(rt_num_t), offsetof(rt_num_t, p), params,
	                    sizeof(rt_num_params_t), seed, state, e);
}

static int kc_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	rt_num_t *s = st;
	uint32_t B = v->block_tokens ? v->block_tokens : 1;
	pol_inst_t x;
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		double prefill = ceil((double)new_tokens(r, m, B) / B);
		double active = ceil((double)(x.prefill_tokens + x.decode_tokens) / B);
		pol_pick_offer(&pk, i, s->p.x * prefill + active, pol_inst_load(&x));
	}
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_kv_cost = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "kv_cost",
             "Dynamo KV router: minimise overlap_score_weight x blocks to prefill + blocks "
             "being processed (queued prefill + decoding) on the instance.",
             POL_PARAMS(kc_params, rt_num_params_t), rt_num_init, rt_free},
    .route = kc_route,
};

/* ---- weighted_score (llm-d) ---------------------------------------------------
 * llm-d inference scheduler: each scorer maps endpoints to [0, 1], the
 * weighted sum picks the maximum. queue: (max_q - q) / (max_q - min_q)
 * (1 when all equal); kv-cache utilisation: 1 - used/capacity; prefix:
 * matched blocks / request blocks. Default weights: queue 2, prefix 3 (the
 * default profile described in Red Hat's llm-d scheduler documentation);
 * kv utilisation 2 (llm-d sample configs as recalled, not verified). */

typedef struct ws_params {
	double wq, wk, wp;
} ws_params_t;

typedef struct ws_state {
	rt_base_t b;
	ws_params_t p;
} ws_state_t;

#define AT(member) CFG_AT(DOUBLE, ws_params_t, member)
static const cfg_tkey_t ws_params[] = {
    POL_KEY("routing", "weighted_score", "queue_weight", CFG_FLOAT, "2", 0, 1e6, NULL, "",
            "queue-scorer weight (llm-d default profile: 2)", AT(wq)),
    POL_KEY("routing", "weighted_score", "kv_util_weight", CFG_FLOAT, "2", 0, 1e6, NULL, "",
            "kv-cache-utilization-scorer weight (llm-d samples: 2, unverified)", AT(wk)),
    POL_KEY("routing", "weighted_score", "prefix_weight", CFG_FLOAT, "3", 0, 1e6, NULL, "",
            "prefix-cache-scorer weight (llm-d default profile: 3)", AT(wp)),
};
#undef AT

static int ws_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	return rt_init_copy(sizeof(ws_state_t), offsetof(ws_state_t, p), params,
	                    sizeof(ws_params_t), seed, state, e);
}

static int ws_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	ws_state_t *s = st;
	pol_inst_t x;
	double qmin = INFINITY, qmax = -INFINITY;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		qmin = fmin(qmin, (double)x.waiting);
		qmax = fmax(qmax, (double)x.waiting);
	}
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		double q = qmax > qmin ? (qmax - x.waiting) / (qmax - qmin) : 1.0;
		double k = x.kv_cap_blocks ? 1.0 - (double)x.kv_used_blocks / x.kv_cap_blocks : 0;
		double p = r->n_blocks
		               ? (double)v->match(v->ctx, i, r->blocks, r->n_blocks) / r->n_blocks
		               : 0;
		/* highest score first */
		pol_pick_offer(&pk, i, -(s->p.wq * q + s->p.wk * k + s->p.wp * p),
		               pol_inst_load(&x));
	}
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_weighted_score = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "weighted_score",
             "llm-d inference scheduler: maximise queue_weight x queue score + kv_util_weight "
             "x free-KV share + prefix_weight x prefix-match share, each score in [0, 1].",
             POL_PARAMS(ws_params, ws_params_t), ws_init, rt_free},
    .route = ws_route,
};

/* ---- preble ---------------------------------------------------------------------
 * Preble's E2 (Srivatsa et al., ICLR 2025, sec. 3.2): exploit when the
 * longest cached prefix covers more tokens than the request would compute
 * (cached > new, here cached > preble_exploit_ratio x new): the instance
 * with that match, least loaded among ties. Otherwise explore: the instance
 * with the lowest load cost. Preble's cost sums recent load, eviction cost
 * and this prefill; here it is the estimated queue delay + this request's
 * prefill time on the instance (a simplification: no eviction term). */

static const cfg_tkey_t pb_params[] = {
    POL_KEY("routing", "preble", "preble_exploit_ratio", CFG_FLOAT, "1", 0, 1e6, NULL, "",
            "exploit when cached tokens > ratio x new tokens (Preble: 1)",
            CFG_AT(DOUBLE, rt_num_params_t, x)),
};

static int pb_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	rt_num_t *s = st;
	uint32_t B = v->block_tokens, best;
	const uint32_t *m = rt_matches(&s->b, v, r, v->match, &best);
	if (!m)
		return KS_ENOMEM;
	pol_inst_t x;
	uint64_t cached = (uint64_t)best * B;
	if (cached > r->input_tokens)
		cached = r->input_tokens;
	int exploit = best > 0 && (double)cached > s->p.x * (double)(r->input_tokens - cached);
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		if (exploit && m[i] < best)
			continue;
		v->inst(v->ctx, i, &x);
		uint64_t l = pol_inst_load(&x);
		double c = exploit ? (double)l
		                   : (double)x.queue_delay_ns +
		                         (double)v->prefill_ns(v->ctx, i, new_tokens(r, m[i], B),
		                                               (uint64_t)m[i] * B);
		pol_pick_offer(&pk, i, c, l);
	}
	*inst = pk.inst;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_preble = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "preble",
             "Preble E2: exploit the longest cached prefix when it covers more tokens than "
             "would be computed; else explore by the lowest load cost (queue delay + this "
             "prefill).",
             POL_PARAMS(pb_params, rt_num_params_t), rt_num_init, rt_free},
    .route = pb_route,
};

/* ---- min_ttft (Mooncake conductor) ---------------------------------------------
 * Mooncake (Qin et al., FAST '25, Algorithm 1): for every prefill instance,
 * TTFT = queue time + min(prefill with the local prefix, transfer of the
 * best remote prefix + prefill with it); pick the minimum. With
 * ttft_early_reject, a request whose best TTFT exceeds its SLO ([slo]
 * ttft_ms; none when 0) is rejected at once (Mooncake's early rejection,
 * sec. 7). */

typedef struct mt_params {
	int reject;
} mt_params_t;

typedef struct mt_state {
	rt_base_t b;
	mt_params_t p;
} mt_state_t;

static const cfg_tkey_t mt_params[] = {
    POL_KEY("routing", "min_ttft", "ttft_early_reject", CFG_BOOL, "false", 0, 0, NULL, "",
            "reject when the best estimated TTFT exceeds the request's SLO ([slo] ttft_ms)",
            CFG_AT(BOOL, mt_params_t, reject)),
};

static int mt_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	return rt_init_copy(sizeof(mt_state_t), offsetof(mt_state_t, p), params,
	                    sizeof(mt_params_t), seed, state, e);
}

static int mt_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	mt_state_t *s = st;
	uint32_t rbest;
	const uint32_t *m = rt_matches(&s->b, v, r, v->match, &rbest);
	if (!m || VEC_GROW(s->b.h, s->b.cap_h, v->n_inst, v->n_inst))
		return KS_ENOMEM;
	uint32_t nh = pol_view_best_holders(v, m, rbest, s->b.h);
	pol_inst_t x;
	pol_pick_t pk;
	pol_pick_start(&pk, s->b.rng);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		int64_t t = pol_view_ttft_ns(v, r, m, rbest, s->b.h, nh, i, x.queue_delay_ns);
		pol_pick_offer(&pk, i, (double)t, pol_inst_load(&x));
	}
	*inst = pk.inst;
	if (s->p.reject && r->slo_ttft_ns > 0 && pk.score > (double)r->slo_ttft_ns)
		return POL_REJECT;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_min_ttft = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "min_ttft",
             "Mooncake conductor: minimise estimated queue time + min(local-prefix prefill, "
             "best remote prefix transfer + prefill); optional early rejection when the "
             "best estimate misses the TTFT SLO.",
             POL_PARAMS(mt_params, mt_params_t), mt_init, rt_free},
    .route = mt_route,
};

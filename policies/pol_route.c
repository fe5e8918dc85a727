/* pol_route — routing policies. Each picks one instance for a request from
 * the view; ties go to the lowest instance index so runs are deterministic.
 * Defaults cite the framework they follow; "own choice" says where none is
 * published. */
#include "policies/pol_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t req_count(const pol_inst_t *x)
{
	return (uint64_t)x->waiting + x->running;
}

static uint64_t new_tokens(const pol_req_t *r, uint32_t cached_blocks, uint32_t B)
{
	uint64_t c = (uint64_t)cached_blocks * B;
	return r->input_tokens > c ? r->input_tokens - c : 0;
}

/* ---- round_robin ----------------------------------------------------------- */

static int rr_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)p;
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
             "Instances in turn, ignoring load and cache.", NULL, 0, rr_init, free},
    .route = rr_route,
};

/* ---- random ------------------------------------------------------------------ */

static int rnd_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)p;
	gsl_rng *r = pol_rng_new(seed);
	if (!r)
		return err_set(e, KS_ENOMEM, "out of memory");
	*state = r;
	return 0;
}

static void rnd_free(void *st)
{
	gsl_rng_free(st);
}

static int rnd_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	*inst = (uint32_t)gsl_rng_uniform_int(st, v->n_inst);
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_random = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "random",
             "Uniformly random instance (seeded GSL stream).", NULL, 0, rnd_init, rnd_free},
    .route = rnd_route,
};

/* ---- least_load ---------------------------------------------------------------- */

static const cfg_key_t ll_params[] = {
    POL_KEY("routing", "least_load", "load_metric", CFG_ENUM, "requests", 0, 0,
            "requests,tokens,delay", "",
            "requests: waiting + running (SGLang's shortest queue); tokens: queued prefill + "
            "decoding tokens; delay: estimated queue delay"),
};

static int ll_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	int *m = malloc(sizeof *m);
	if (!m)
		return err_set(e, KS_ENOMEM, "out of memory");
	const char *s = pol_param_str(p, "load_metric");
	*m = !strcmp(s, "requests") ? 0 : !strcmp(s, "tokens") ? 1 : 2;
	*state = m;
	return 0;
}

static double ll_load(int metric, const pol_inst_t *x)
{
	switch (metric) {
	case 0:
		return (double)req_count(x);
	case 1:
		return (double)(x->prefill_tokens + x->decode_tokens);
	default:
		return (double)x->queue_delay_ns;
	}
}

static int ll_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)r;
	int metric = *(int *)st;
	double best = INFINITY;
	pol_inst_t x;
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		double l = ll_load(metric, &x);
		if (l < best) {
			best = l;
			*inst = i;
		}
	}
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_least_load = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "least_load",
             "The instance with the least load (load_metric), ignoring cache.", ll_params,
             sizeof ll_params / sizeof ll_params[0], ll_init, free},
    .route = ll_route,
};

/* ---- cache_aware (SGLang router) -----------------------------------------------
 * sgl-router's cache_aware policy: the system is imbalanced when
 * max_load - min_load > balance_abs_threshold AND max_load >
 * balance_rel_threshold x min_load (load = pending requests); then the least
 * loaded worker wins. Otherwise the worker with the longest prefix match
 * wins if match/request length > cache_threshold, else the one with the
 * smallest tree (fewest resident blocks). Defaults are the router's:
 * cache_threshold 0.5, balance_abs_threshold 32, balance_rel_threshold
 * 1.0001 (sglang router README / launch_router --help). Matching here is at
 * block granularity, the router's is on text characters. */

typedef struct ca_state {
	double cache_thr, abs_thr, rel_thr;
} ca_state_t;

static const cfg_key_t ca_params[] = {
    POL_KEY("routing", "cache_aware", "cache_threshold", CFG_FLOAT, "0.5", 0, 1, NULL, "",
            "min prefix match ratio for cache routing (SGLang router default 0.5)"),
    POL_KEY("routing", "cache_aware", "balance_abs_threshold", CFG_FLOAT, "32", 0, 1e9, NULL,
            "requests", "imbalance needs max - min load above this (SGLang default 32)"),
    POL_KEY("routing", "cache_aware", "balance_rel_threshold", CFG_FLOAT, "1.0001", 1, 1e9, NULL,
            "", "and max load above this x min load (SGLang default 1.0001)"),
};

static int ca_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	ca_state_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->cache_thr = pol_param_num(p, "cache_threshold");
	s->abs_thr = pol_param_num(p, "balance_abs_threshold");
	s->rel_thr = pol_param_num(p, "balance_rel_threshold");
	*state = s;
	return 0;
}

static int ca_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	const ca_state_t *s = st;
	pol_inst_t x;
	double mx = -1, mn = INFINITY;
	uint32_t imin = 0, itree = 0, imatch = 0, best = 0;
	uint64_t tree = UINT64_MAX;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		double l = (double)req_count(&x);
		if (l > mx)
			mx = l;
		if (l < mn) {
			mn = l;
			imin = i;
		}
		if (x.kv_used_blocks < tree) {
			tree = x.kv_used_blocks;
			itree = i;
		}
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		if (m > best) {
			best = m;
			imatch = i;
		}
	}
	if (mx - mn > s->abs_thr && mx > s->rel_thr * mn)
		*inst = imin;
	else if (r->n_blocks && (double)best / r->n_blocks > s->cache_thr)
		*inst = imatch;
	else
		*inst = itree;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_cache_aware = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "cache_aware",
             "SGLang router cache-aware policy: least load when max - min load > "
             "balance_abs_threshold and max > balance_rel_threshold x min; else the longest "
             "prefix match if its ratio > cache_threshold; else the smallest cache tree.",
             ca_params, sizeof ca_params / sizeof ca_params[0], ca_init, free},
    .route = ca_route,
};

/* ---- kv_cost (Dynamo KV router) ---------------------------------------------
 * Dynamo's KV router cost: overlap_score_weight x potential prefill blocks +
 * potential active (decode) blocks, lowest wins (router design doc; default
 * weight 1.0, temperature 0 = deterministic). Prefill blocks =
 * (input tokens - overlap blocks x B) / B; active blocks = blocks of the
 * instance's queued prefill and decoding tokens. */

static const cfg_key_t kc_params[] = {
    POL_KEY("routing", "kv_cost", "overlap_score_weight", CFG_FLOAT, "1", 0, 1e6, NULL, "",
            "weight of prefill blocks against active blocks (Dynamo default 1.0)"),
};

static int kc_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	double *w = malloc(sizeof *w);
	if (!w)
		return err_set(e, KS_ENOMEM, "out of memory");
	*w = pol_param_num(p, "overlap_score_weight");
	*state = w;
	return 0;
}

static int kc_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	double w = *(double *)st, best = INFINITY;
	uint32_t B = v->block_tokens ? v->block_tokens : 1;
	pol_inst_t x;
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		double prefill = ceil((double)new_tokens(r, m, B) / B);
		double active = ceil((double)(x.prefill_tokens + x.decode_tokens) / B);
		double cost = w * prefill + active;
		if (cost < best) {
			best = cost;
			*inst = i;
		}
	}
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_kv_cost = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "kv_cost",
             "Dynamo KV router: minimise overlap_score_weight x blocks to prefill + blocks "
             "being processed (queued prefill + decoding) on the instance.",
             kc_params, sizeof kc_params / sizeof kc_params[0], kc_init, free},
    .route = kc_route,
};

/* ---- weighted_score (llm-d) ---------------------------------------------------
 * llm-d inference scheduler: each scorer maps endpoints to [0, 1], the
 * weighted sum picks the maximum. queue: (max_q - q) / (max_q - min_q)
 * (1 when all equal); kv-cache utilisation: 1 - used/capacity; prefix:
 * matched blocks / request blocks. Default weights: queue 2, prefix 3 (the
 * default profile described in Red Hat's llm-d scheduler documentation);
 * kv utilisation 2 (llm-d sample configs as recalled, not verified). */

typedef struct ws_state {
	double wq, wk, wp;
} ws_state_t;

static const cfg_key_t ws_params[] = {
    POL_KEY("routing", "weighted_score", "queue_weight", CFG_FLOAT, "2", 0, 1e6, NULL, "",
            "queue-scorer weight (llm-d default profile: 2)"),
    POL_KEY("routing", "weighted_score", "kv_util_weight", CFG_FLOAT, "2", 0, 1e6, NULL, "",
            "kv-cache-utilization-scorer weight (llm-d samples: 2, unverified)"),
    POL_KEY("routing", "weighted_score", "prefix_weight", CFG_FLOAT, "3", 0, 1e6, NULL, "",
            "prefix-cache-scorer weight (llm-d default profile: 3)"),
};

static int ws_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	ws_state_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->wq = pol_param_num(p, "queue_weight");
	s->wk = pol_param_num(p, "kv_util_weight");
	s->wp = pol_param_num(p, "prefix_weight");
	*state = s;
	return 0;
}

static int ws_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	const ws_state_t *s = st;
	pol_inst_t x;
	double qmin = INFINITY, qmax = -INFINITY, best = -INFINITY;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		qmin = fmin(qmin, (double)x.waiting);
		qmax = fmax(qmax, (double)x.waiting);
	}
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		double q = qmax > qmin ? (qmax - x.waiting) / (qmax - qmin) : 1.0;
		double k = x.kv_cap_blocks ? 1.0 - (double)x.kv_used_blocks / x.kv_cap_blocks : 0;
		double p = r->n_blocks
		               ? (double)v->match(v->ctx, i, r->blocks, r->n_blocks) / r->n_blocks
		               : 0;
		double sc = s->wq * q + s->wk * k + s->wp * p;
		if (sc > best) {
			best = sc;
			*inst = i;
		}
	}
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_weighted_score = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "weighted_score",
             "llm-d inference scheduler: maximise queue_weight x queue score + kv_util_weight "
             "x free-KV share + prefix_weight x prefix-match share, each score in [0, 1].",
             ws_params, sizeof ws_params / sizeof ws_params[0], ws_init, free},
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

static const cfg_key_t pb_params[] = {
    POL_KEY("routing", "preble", "preble_exploit_ratio", CFG_FLOAT, "1", 0, 1e6, NULL, "",
            "exploit when cached tokens > ratio x new tokens (Preble: 1)"),
};

static int pb_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	double *r = malloc(sizeof *r);
	if (!r)
		return err_set(e, KS_ENOMEM, "out of memory");
	*r = pol_param_num(p, "preble_exploit_ratio");
	*state = r;
	return 0;
}

static int pb_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	double ratio = *(double *)st;
	uint32_t B = v->block_tokens;
	pol_inst_t x;
	uint32_t best = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		best = m > best ? m : best;
	}
	uint64_t cached = (uint64_t)best * B;
	if (cached > r->input_tokens)
		cached = r->input_tokens;
	int exploit = best > 0 && (double)cached > ratio * (double)(r->input_tokens - cached);
	double bestc = INFINITY;
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		if (exploit && m < best)
			continue;
		v->inst(v->ctx, i, &x);
		double c = exploit ? (double)req_count(&x)
		                   : (double)x.queue_delay_ns +
		                         (double)v->prefill_ns(v->ctx, i, new_tokens(r, m, B),
		                                               (uint64_t)m * B);
		if (c < bestc) {
			bestc = c;
			*inst = i;
		}
	}
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_preble = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "preble",
             "Preble E2: exploit the longest cached prefix when it covers more tokens than "
             "would be computed; else explore by the lowest load cost (queue delay + this "
             "prefill).",
             pb_params, sizeof pb_params / sizeof pb_params[0], pb_init, free},
    .route = pb_route,
};

/* ---- min_ttft (Mooncake conductor) ---------------------------------------------
 * Mooncake (Qin et al., FAST '25, Algorithm 1): for every prefill instance,
 * TTFT = queue time + min(prefill with the local prefix, transfer of the
 * best remote prefix + prefill with it); pick the minimum. With
 * ttft_early_reject, a request whose best TTFT exceeds its SLO (or
 * ttft_slo_ms when the request has none) is rejected at once (Mooncake's
 * early rejection, sec. 7). */

typedef struct mt_state {
	int reject;
	int64_t slo_ns;
} mt_state_t;

static const cfg_key_t mt_params[] = {
    POL_KEY("routing", "min_ttft", "ttft_early_reject", CFG_BOOL, "false", 0, 0, NULL, "",
            "reject when the best estimated TTFT exceeds the SLO"),
    POL_KEY("routing", "min_ttft", "ttft_slo_ms", CFG_FLOAT, "0", 0, 1e9, NULL, "ms",
            "SLO for requests without one; 0 = none"),
};

static int mt_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	mt_state_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->reject = pol_param_num(p, "ttft_early_reject") != 0;
	s->slo_ns = (int64_t)(pol_param_num(p, "ttft_slo_ms") * 1e6);
	*state = s;
	return 0;
}

static int mt_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	const mt_state_t *s = st;
	uint32_t B = v->block_tokens, src;
	uint32_t rbest = pol_view_best_match(v, r->blocks, r->n_blocks, &src);
	pol_inst_t x;
	int64_t best = INT64_MAX;
	*inst = 0;
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &x);
		uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
		int64_t t = v->prefill_ns(v->ctx, i, new_tokens(r, m, B), (uint64_t)m * B);
		if (rbest > m && src != i) {
			int64_t tf =
			    v->xfer_ns(v->ctx, src, i, rbest - m) +
			    v->prefill_ns(v->ctx, i, new_tokens(r, rbest, B), (uint64_t)rbest * B);
			if (tf < t)
				t = tf;
		}
		t += x.queue_delay_ns;
		if (t < best) {
			best = t;
			*inst = i;
		}
	}
	int64_t slo = r->slo_ttft_ns ? r->slo_ttft_ns : s->slo_ns;
	if (s->reject && slo > 0 && best > slo)
		return POL_REJECT;
	return POL_ACCEPT;
}

const struct pol_routing_ops pol_route_min_ttft = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "min_ttft",
             "Mooncake conductor: minimise estimated queue time + min(local-prefix prefill, "
             "best remote prefix transfer + prefill); optional early rejection when the "
             "best estimate misses the TTFT SLO.",
             mt_params, sizeof mt_params / sizeof mt_params[0], mt_init, free},
    .route = mt_route,
};

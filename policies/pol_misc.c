/* pol_misc — the small families: eviction priorities, background transfer
 * scheduling modes and admission. */
#include "policies/pol_int.h"

#include <stdlib.h>

/* ---- eviction ----------------------------------------------------------------- */

static double lru_prio(const void *st, const pol_block_meta_t *m)
{
	(void)st;
	return (double)m->last_access_ns;
}

const struct pol_eviction_ops pol_evict_lru = {
    .base = {POL_ABI_VERSION, POL_EVICTION, "lru",
             "Least recently used first (vLLM and SGLang evict unreferenced blocks / radix "
             "leaves in LRU order).",
             NULL, 0, NULL, NULL},
    .priority = lru_prio,
};

int pol_eviction_is_lru(const struct pol_eviction_ops *ops)
{
	return ops == &pol_evict_lru;
}

static double lfu_prio(const void *st, const pol_block_meta_t *m)
{
	(void)st;
	return (double)m->hits;
}

const struct pol_eviction_ops pol_evict_lfu = {
    .base = {POL_ABI_VERSION, POL_EVICTION, "lfu", "Fewest hits first; equal hits in LRU order.",
             NULL, 0, NULL, NULL},
    .priority = lfu_prio,
};

static double sf_prio(const void *st, const pol_block_meta_t *m)
{
	(void)st;
	return m->spec_unused ? 0.0 : 1.0;
}

const struct pol_eviction_ops pol_evict_spec_first = {
    .base = {POL_ABI_VERSION, POL_EVICTION, "spec_first",
             "Speculative replicas no request has used go first, then everything else; LRU "
             "within each class. Keeps wrong forecasts from displacing demand-fetched KV.",
             NULL, 0, NULL, NULL},
    .priority = sf_prio,
};

static const cfg_key_t ca_params[] = {
    POL_KEY("eviction", "cost_aware", "reuse_prior", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "uses added to the predicted reuse, so unpredicted blocks still order by cost "
            "(own choice)"),
    POL_KEY("eviction", "cost_aware", "spec_unused_weight", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "multiplier on unused speculative replicas' priority (< 1 evicts them sooner)"),
};

typedef struct ca_ev {
	double prior, spec_w;
} ca_ev_t;

static int cae_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	ca_ev_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->prior = pol_param_num(p, "reuse_prior");
	s->spec_w = pol_param_num(p, "spec_unused_weight");
	*state = s;
	return 0;
}

static double cae_prio(const void *st, const pol_block_meta_t *m)
{
	const ca_ev_t *s = st;
	double reuse = m->predicted_reuse >= 0 ? m->predicted_reuse : (double)m->hits;
	double p = (double)m->recompute_ns * (reuse + s->prior);
	return m->spec_unused ? p * s->spec_w : p;
}

const struct pol_eviction_ops pol_evict_cost_aware = {
    .base = {POL_ABI_VERSION, POL_EVICTION, "cost_aware",
             "Lowest recompute cost x (predicted reuse + reuse_prior) first (hits stand in "
             "when no prediction exists); ties in LRU order.",
             ca_params, sizeof ca_params / sizeof ca_params[0], cae_init, free},
    .priority = cae_prio,
};

/* ---- transfer scheduling -------------------------------------------------------- */

static void imm_mode(const void *st, pol_xfer_mode_t *mode, double *param)
{
	(void)st;
	*mode = POL_XFER_IMMEDIATE;
	*param = 0;
}

const struct pol_transfer_ops pol_xfer_immediate = {
    .base = {POL_ABI_VERSION, POL_TRANSFER, "immediate",
             "Background copies start at once and share links max-min fairly with foreground "
             "flows.",
             NULL, 0, NULL, NULL},
    .mode = imm_mode,
};

static const cfg_key_t iw_params[] = {
    POL_KEY("transfer", "idle_window", "idle_threshold", CFG_FLOAT, "0.2", 0, 1, NULL, "",
            "a background copy runs only while every link on its path carries less "
            "foreground than this share of capacity (own choice)"),
};

static int num_init(const pol_params_t *p, const char *name, void **state, err_t *e)
{
	double *x = malloc(sizeof *x);
	if (!x)
		return err_set(e, KS_ENOMEM, "out of memory");
	*x = pol_param_num(p, name);
	*state = x;
	return 0;
}

static int iw_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return num_init(p, "idle_threshold", state, e);
}

static void iw_mode(const void *st, pol_xfer_mode_t *mode, double *param)
{
	*mode = POL_XFER_IDLE_WINDOW;
	*param = *(const double *)st;
}

const struct pol_transfer_ops pol_xfer_idle_window = {
    .base = {POL_ABI_VERSION, POL_TRANSFER, "idle_window",
             "Background copies start or resume only while their links' foreground "
             "utilisation is below idle_threshold, and pause when it rises.",
             iw_params, sizeof iw_params / sizeof iw_params[0], iw_init, free},
    .mode = iw_mode,
};

static const cfg_key_t rc_params[] = {
    POL_KEY("transfer", "rate_cap", "rate_share", CFG_FLOAT, "0.25", 0.001, 1, NULL, "",
            "background flows together get at most this share of each link (own choice)"),
};

static int rcap_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return num_init(p, "rate_share", state, e);
}

static void rcap_mode(const void *st, pol_xfer_mode_t *mode, double *param)
{
	*mode = POL_XFER_RATE_CAP;
	*param = *(const double *)st;
}

const struct pol_transfer_ops pol_xfer_rate_cap = {
    .base = {POL_ABI_VERSION, POL_TRANSFER, "rate_cap",
             "Background copies are capped at rate_share of each link they cross.", rc_params,
             sizeof rc_params / sizeof rc_params[0], rcap_init, free},
    .mode = rcap_mode,
};

/* ---- admission ----------------------------------------------------------------------- */

static int all_admit(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t inst)
{
	(void)st;
	(void)v;
	(void)r;
	(void)inst;
	return POL_ACCEPT;
}

const struct pol_admission_ops pol_admit_accept_all = {
    .base = {POL_ABI_VERSION, POL_ADMISSION, "accept_all", "Every request is admitted.", NULL, 0,
             NULL, NULL},
    .admit = all_admit,
};

static const cfg_key_t sr_params[] = {
    POL_KEY("admission", "slo_reject", "slo_ttft_ms", CFG_FLOAT, "0", 0, 1e9, NULL, "ms",
            "TTFT SLO for requests without one; 0 = only requests' own SLOs"),
    POL_KEY("admission", "slo_reject", "slo_slack", CFG_FLOAT, "1", 0.01, 1e6, NULL, "",
            "reject when the estimate exceeds slack x SLO"),
};

typedef struct sr_state {
	int64_t slo_ns;
	double slack;
} sr_state_t;

static int sr_init(const pol_params_t *p, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	sr_state_t *s = malloc(sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->slo_ns = (int64_t)(pol_param_num(p, "slo_ttft_ms") * 1e6);
	s->slack = pol_param_num(p, "slo_slack");
	*state = s;
	return 0;
}

static int sr_admit(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t inst)
{
	const sr_state_t *s = st;
	int64_t slo = r->slo_ttft_ns ? r->slo_ttft_ns : s->slo_ns;
	if (slo <= 0)
		return POL_ACCEPT;
	pol_inst_t x;
	v->inst(v->ctx, inst, &x);
	uint32_t m = v->match(v->ctx, inst, r->blocks, r->n_blocks);
	uint64_t cached = (uint64_t)m * v->block_tokens;
	if (cached > r->input_tokens)
		cached = r->input_tokens;
	int64_t est =
	    x.queue_delay_ns + v->prefill_ns(v->ctx, inst, r->input_tokens - cached, cached);
	return (double)est > s->slack * (double)slo ? POL_REJECT : POL_ACCEPT;
}

const struct pol_admission_ops pol_admit_slo_reject = {
    .base = {POL_ABI_VERSION, POL_ADMISSION, "slo_reject",
             "Rejects a request at arrival when its estimated TTFT on the chosen instance "
             "(queue delay + prefill with the local prefix) exceeds slo_slack x its SLO "
             "(Mooncake-style early rejection, Qin et al. FAST '25 sec. 7).",
             sr_params, sizeof sr_params / sizeof sr_params[0], sr_init, free},
    .admit = sr_admit,
};

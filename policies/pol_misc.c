/* pol_misc — the small families: eviction priorities, background transfer
 * scheduling modes and admission. */
#include "policies/pol_int.h"

#include <stdlib.h>
#include <string.h>

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
             POL_NO_PARAMS, NULL, NULL},
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
             POL_NO_PARAMS, NULL, NULL},
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
             POL_NO_PARAMS, NULL, NULL},
    .priority = sf_prio,
};

/* Its parameters are its whole state. */
typedef struct ca_ev {
	double prior, spec_w;
} ca_ev_t;

static const cfg_tkey_t ca_params[] = {
    POL_KEY("eviction", "cost_aware", "reuse_prior", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "uses added to the predicted reuse, so unpredicted blocks still order by cost "
            "(own choice)",
            CFG_AT(DOUBLE, ca_ev_t, prior)),
    POL_KEY("eviction", "cost_aware", "spec_unused_weight", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "multiplier on unused speculative replicas' priority (< 1 evicts them sooner)",
            CFG_AT(DOUBLE, ca_ev_t, spec_w)),
};

static int cae_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return pol_copy_init(params, sizeof(ca_ev_t), state, e);
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
             POL_PARAMS(ca_params, ca_ev_t), cae_init, free},
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
             POL_NO_PARAMS, NULL, NULL},
    .mode = imm_mode,
};

/* The threshold is [network] idle_threshold, one key for both ways of
 * asking for idle windows (this policy and network.bg_schedule). */
static void iw_mode(const void *st, pol_xfer_mode_t *mode, double *param)
{
	(void)st;
	*mode = POL_XFER_IDLE_WINDOW;
	*param = 0;
}

const struct pol_transfer_ops pol_xfer_idle_window = {
    .base = {POL_ABI_VERSION, POL_TRANSFER, "idle_window",
             "Background copies start or resume only while their links' foreground "
             "utilisation is below [network] idle_threshold, and pause when it rises.",
             POL_NO_PARAMS, NULL, NULL},
    .mode = iw_mode,
};

typedef struct rc_params {
	double share;
} rc_params_t;

static const cfg_tkey_t rc_params[] = {
    POL_KEY("transfer", "rate_cap", "rate_share", CFG_FLOAT, "0.25", 0.001, 1, NULL, "",
            "background flows together get at most this share of each link (own choice)",
            CFG_AT(DOUBLE, rc_params_t, share)),
};

static int rcap_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return pol_copy_init(params, sizeof(rc_params_t), state, e);
}

static void rcap_mode(const void *st, pol_xfer_mode_t *mode, double *param)
{
	*mode = POL_XFER_RATE_CAP;
	*param = *(const double *)st;
}

const struct pol_transfer_ops pol_xfer_rate_cap = {
    .base = {POL_ABI_VERSION, POL_TRANSFER, "rate_cap",
             "Background copies are capped at rate_share of each link they cross.",
             POL_PARAMS(rc_params, rc_params_t), rcap_init, free},
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
    .base = {POL_ABI_VERSION, POL_ADMISSION, "accept_all", "Every request is admitted.",
             POL_NO_PARAMS, NULL, NULL},
    .admit = all_admit,
};

/* Its parameter is its whole state; the SLO is the request's ([slo]
 * ttft_ms). */
typedef struct sr_state {
	double slack;
} sr_state_t;

static const cfg_tkey_t sr_params[] = {
    POL_KEY("admission", "slo_reject", "slo_slack", CFG_FLOAT, "1", 0.01, 1e6, NULL, "",
            "reject when the estimate exceeds slack x the request's TTFT SLO ([slo] ttft_ms)",
            CFG_AT(DOUBLE, sr_state_t, slack)),
};

static int sr_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)seed;
	return pol_copy_init(params, sizeof(sr_state_t), state, e);
}

static int sr_admit(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t inst)
{
	const sr_state_t *s = st;
	int64_t slo = r->slo_ttft_ns;
	if (slo <= 0)
		return POL_ACCEPT;
	int64_t est = pol_view_local_ttft_ns(v, r, inst, NULL);
	return (double)est > s->slack * (double)slo ? POL_REJECT : POL_ACCEPT;
}

const struct pol_admission_ops pol_admit_slo_reject = {
    .base = {POL_ABI_VERSION, POL_ADMISSION, "slo_reject",
             "Rejects a request at arrival when its estimated TTFT on the chosen instance "
             "(queue delay + prefill with the local prefix) exceeds slo_slack x its SLO "
             "(Mooncake-style early rejection, Qin et al. FAST '25 sec. 7).",
             POL_PARAMS(sr_params, sr_state_t), sr_init, free},
    .admit = sr_admit,
};

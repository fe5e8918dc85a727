/* mdl_spec_check — the cross-field checks of a hardware and an LLM spec:
 * what must be positive, which keys go together (experts, MLA, layer
 * kinds), and that the byte counts derived from a spec fit 64 bits. Errors
 * are KS_EINPUT "ORIGIN: KEY: reason". See mdl.h.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/mdl.h"
#include "models/mdl_int.h"

int mdl_hw_check(const mdl_hw_t *hw, const char *origin, err_t *e)
{
	struct {
		const char *key;
		double v;
	} pos[] = {{"hbm_bytes", (double)hw->hbm_bytes},
	           {"hbm_bw", hw->hbm_bw},
	           {"flops_bf16", hw->flops_bf16},
	           {"pcie_bw", hw->pcie_bw},
	           {"nic_bw", hw->nic_bw}};
	for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
		if (!(pos[i].v > 0))
			return err_set(e, KS_EINPUT, "%s: %s: must be greater than 0", origin,
			               pos[i].key);
	if (!(hw->nvlink_bw >= 0) || !(hw->flops_fp8 >= 0) || hw->nvlink_lat_ns < 0 ||
	    hw->pcie_lat_ns < 0 || hw->nic_lat_ns < 0)
		return err_set(e, KS_EINPUT,
		               "%s: link bandwidths and latencies must not be negative", origin);
	if (!hw->name[0])
		return err_set(e, KS_EINPUT, "%s: name: empty", origin);
	return 0;
}

/* The layer_kind keys: each only with its kind, and what its kind needs.
 * On a fault returns -1 with *key the key to blame and the reason in why
 * (the parser adds the key's line, mdl_llm_check only the origin). */
int mdl_layers_fault(const mdl_llm_t *m, const char **key, char *why, size_t len)
{
	int sliding = m->layer_kind == MDL_LAYER_SLIDING, state = m->layer_kind == MDL_LAYER_STATE;
	struct {
		const char *key;
		uint32_t v;
	} st[] = {
	    {"state_conv_dim", m->state_conv_dim}, {"state_conv_kernel", m->state_conv_kernel},
	    {"state_heads", m->state_heads},       {"state_head_dim", m->state_head_dim},
	    {"state_dim", m->state_dim},           {"state_dtype_bytes", m->state_dtype_bytes}};
	*key = NULL;
	if (m->layer_kind == MDL_LAYER_FULL && (m->full_period || m->full_offset)) {
		*key = m->full_period ? "full_period" : "full_offset";
		snprintf(why, len, "only valid with layer_kind = sliding or state");
	} else if (m->full_period ? m->full_offset >= m->full_period : m->full_offset != 0) {
		*key = "full_offset";
		snprintf(why, len,
		         "%u must be below full_period %u (a position in the repeating "
		         "pattern)",
		         m->full_offset, m->full_period);
	} else if (m->full_period > m->layers) {
		*key = "full_period";
		snprintf(why, len, "%u exceeds layers %u (0: no full-attention layer)",
		         m->full_period, m->layers);
	} else if (!sliding && m->window) {
		*key = "window";
		snprintf(why, len, "only valid with layer_kind = sliding");
	} else if (sliding && !m->window) {
		*key = "window";
		snprintf(why, len, "required (> 0) with layer_kind = sliding");
	}
	for (size_t i = 0; !*key && i < sizeof st / sizeof st[0]; i++) {
		/* the conv may be absent (dim 0); everything else a state needs */
		if (!state && st[i].v) {
			*key = st[i].key;
			snprintf(why, len, "only valid with layer_kind = state");
		} else if (state && !st[i].v && i > 0) {
			*key = st[i].key;
			snprintf(why, len, "required (> 0) with layer_kind = state");
		}
	}
	return *key ? -1 : 0;
}

/* The counts every model has, its name and tied_embeddings. */
static int llm_counts_check(const mdl_llm_t *m, const char *origin, err_t *e)
{
	struct {
		const char *key;
		double v;
	} pos[] = {{"layers", m->layers},
	           {"hidden", m->hidden},
	           {"heads", m->heads},
	           {"kv_heads", m->kv_heads},
	           {"head_dim", m->head_dim},
	           {"intermediate", m->intermediate},
	           {"vocab", m->vocab},
	           {"dtype_bytes", m->dtype_bytes},
	           {"weight_bytes", m->weight_bytes},
	           {"params_total", (double)m->params_total},
	           {"params_active", (double)m->params_active}};
	for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
		if (!(pos[i].v > 0))
			return err_set(e, KS_EINPUT, "%s: %s: must be greater than 0", origin,
			               pos[i].key);
	if (!m->name[0])
		return err_set(e, KS_EINPUT, "%s: name: empty", origin);
	if (m->tied_embeddings > 1)
		return err_set(e, KS_EINPUT, "%s: tied_embeddings: must be 0 or 1", origin);
	return 0;
}

/* The expert keys, the weight widths and the parameter counts against the
 * embedding and, in an MoE model, the routed experts. */
static int llm_params_check(const mdl_llm_t *m, const char *origin, err_t *e)
{
	if (!m->experts && (m->expert_weight_bytes > 0 || m->shared_intermediate || m->dense_layers))
		return err_set(e, KS_EINPUT, "%s: %s: only valid with experts > 0", origin,
		               m->expert_weight_bytes > 0 ? "expert_weight_bytes"
		               : m->shared_intermediate ? "shared_intermediate"
		                                        : "dense_layers");
	if (m->dense_layers >= m->layers && m->experts)
		return err_set(e, KS_EINPUT, "%s: dense_layers: %u leaves no MoE layer of %u", origin,
		               m->dense_layers, m->layers);
	if (!(m->expert_weight_bytes >= 0) || !(m->embed_weight_bytes >= 0))
		return err_set(e, KS_EINPUT, "%s: expert_weight_bytes/embed_weight_bytes: must not be "
		               "negative", origin);
	if (m->params_active > m->params_total)
		return err_set(e, KS_EINPUT, "%s: params_active: %llu exceeds params_total %llu",
		               origin, (unsigned long long)m->params_active,
		               (unsigned long long)m->params_total);
	double emb = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
	if ((double)m->params_active <= emb)
		return err_set(e, KS_EINPUT,
		               "%s: params_active: must exceed the embedding and LM head "
		               "parameters (vocab*hidden*%d = %.0f)",
		               origin, m->tied_embeddings ? 1 : 2, emb);
	if (m->experts == 0) {
		if (m->experts_active)
			return err_set(e, KS_EINPUT, "%s: experts_active: set without experts",
			               origin);
		if (m->params_active != m->params_total)
			return err_set(e, KS_EINPUT,
			               "%s: params_active: must equal params_total for a dense "
			               "model (experts = 0)",
			               origin);
	} else {
		if (m->experts_active < 1 || m->experts_active >= m->experts)
			return err_set(e, KS_EINPUT,
			               "%s: experts_active: must be in [1, experts - 1] for an MoE "
			               "model",
			               origin);
		if (m->params_active >= m->params_total)
			return err_set(e, KS_EINPUT,
			               "%s: params_active: must be below params_total for an MoE "
			               "model",
			               origin);
		/* shared = active - k*X >= 0 with X = (total - active)/(E - k) */
		double x =
		    (double)(m->params_total - m->params_active) / (m->experts - m->experts_active);
		if ((double)m->params_active < m->experts_active * x)
			return err_set(e, KS_EINPUT,
			               "%s: params_active: smaller than experts_active routed "
			               "experts of size (params_total-params_active)/"
			               "(experts-experts_active)",
			               origin);
	}
	return 0;
}

/* The attention keys (MLA or GQA) and the layer kinds. */
static int llm_attn_check(const mdl_llm_t *m, const char *origin, err_t *e)
{
	if (m->attention == MDL_ATTN_MLA) {
		if (!m->mla_latent)
			return err_set(e, KS_EINPUT,
			               "%s: mla_latent: required (> 0) with "
			               "attention = mla",
			               origin);
	} else {
		if (m->mla_latent || m->mla_rope)
			return err_set(e, KS_EINPUT,
			               "%s: mla_latent/mla_rope: only valid with "
			               "attention = mla",
			               origin);
		if (m->heads % m->kv_heads)
			return err_set(e, KS_EINPUT, "%s: kv_heads: %u does not divide heads %u",
			               origin, m->kv_heads, m->heads);
	}
	const char *lkey;
	char lwhy[160];
	if (mdl_layers_fault(m, &lkey, lwhy, sizeof lwhy))
		return err_set(e, KS_EINPUT, "%s: %s: %s", origin, lkey, lwhy);
	return 0;
}

/* The shared experts' parameters, and the byte counts derived from the spec
 * within 64 bits. */
static int llm_bytes_check(const mdl_llm_t *m, const char *origin, err_t *e)
{
	if (m->shared_intermediate) {
		mdl_params_split_t sp;
		mdl_params_split(m, &sp);
		if (sp.other < 0)
			return err_set(e, KS_EINPUT,
			               "%s: shared_intermediate: the shared experts' %.0f parameters "
			               "exceed what params_active leaves beside the routed experts and "
			               "embeddings",
			               origin, sp.shared_experts);
	}
	/* The sizes derived from a spec are 64-bit byte counts: refuse a spec
	 * whose weights or KV bytes per token would not fit (1e308 bytes per
	 * weight is a number, not a model). */
	double wb = (double)m->params_total * m->weight_bytes;
	if (!mdl_weights_one_width(m)) {
		mdl_params_split_t sp;
		mdl_params_split(m, &sp);
		wb = sp.embed * mdl_embed_weight_bytes(m) + sp.experts * mdl_expert_weight_bytes(m) +
		     sp.other * m->weight_bytes;
	}
	if (!(wb < 9.2e18))
		return err_set(e, KS_EINPUT,
		               "%s: weight_bytes: params_total * weight_bytes = %.3g bytes is out of "
		               "range (at most 9.2e18)",
		               origin, wb);
	double kv = m->attention == MDL_ATTN_MLA
	                ? (double)m->layers * ((double)m->mla_latent + m->mla_rope) * m->dtype_bytes
	                : 2.0 * m->layers * m->kv_heads * m->head_dim * m->dtype_bytes;
	if (!(kv < 9.2e18))
		return err_set(e, KS_EINPUT,
		               "%s: dtype_bytes: KV cache bytes per token = %.3g is out of range (at "
		               "most 9.2e18)",
		               origin, kv);
	/* a sequence's window and state stay in range too */
	double fixed =
	    (double)m->layers *
	    ((double)m->window * (kv / m->layers) +
	     (double)m->state_conv_dim * m->state_conv_kernel * m->dtype_bytes +
	     (double)m->state_heads * m->state_head_dim * m->state_dim * m->state_dtype_bytes);
	if (!(fixed < 9.2e18))
		return err_set(e, KS_EINPUT,
		               "%s: window/state_*: fixed KV bytes of one sequence = %.3g are out "
		               "of range (at most 9.2e18)",
		               origin, fixed);
	return 0;
}

int mdl_llm_check(const mdl_llm_t *m, const char *origin, err_t *e)
{
	static int (*const check[])(const mdl_llm_t *, const char *, err_t *) = {
	    llm_counts_check, llm_params_check, llm_attn_check, llm_bytes_check};
	for (size_t i = 0; i < sizeof check / sizeof check[0]; i++) {
		int rc = check[i](m, origin, e);
		if (rc)
			return rc;
	}
	return 0;
}

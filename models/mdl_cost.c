/* mdl_cost — roofline time of one continuous-batching iteration. See mdl.h.
 *
 * An iteration computes T tokens for S sequences (prefill chunks and decode
 * steps) on a TP group of tp GPUs.
 *
 * FLOPs (whole group):
 *   matmuls   2*(params_active - emb)*T + 2*vocab*hidden*S
 *             2 FLOPs per weight per token (Kaplan et al. 2020, "Scaling Laws
 *             for Neural Language Models", Table 1: C_forward ~ 2N). The
 *             embedding table (emb = vocab*hidden, twice if untied) is a
 *             gather, not a matmul; the LM head runs only for each sequence's
 *             last position (vLLM prunes logits to the sampled positions).
 *   attention per (query, key) pair and layer: GQA 4*heads*head_dim
 *             (2*h*d for Q.K^T plus 2*h*d for P.V; Hoffmann et al. 2022,
 *             "Chinchilla", App. F). Pairs: a chunk of c tokens after p cached
 *             ones has c*p + c*(c+1)/2 (exact causal count); a decode step
 *             with context L has L + 1.
 *             MLA (DeepSeek-V2, arXiv:2405.04434, §2.1): decode uses the
 *             absorbed form, scores over latent+rope and values over the latent,
 *             2*heads*(2*latent + rope) per pair; prefill uses the
 *             non-absorbed form, 2*heads*(2*head_dim + rope) per pair, plus
 *             up-projecting each cached latent to K_nope and V once per chunk:
 *             2*latent*heads*2*head_dim per cached token and layer.
 * Bytes (per GPU):
 *   weights   read once per iteration: (params_total - untied embedding
 *             table)*weight_bytes/tp. MoE: only routed experts that some token
 *             picks are read; with uniform routing a given expert is missed by
 *             all T tokens with probability (1 - k/E)^T, so the expected read
 *             is shared + E*(1-(1-k/E)^T)*X, X = (total-active)/(E-k) the
 *             parameters of one expert over all layers, shared = active - k*X.
 *             Decode of one sequence reads ~active params, a large prefill
 *             reads all of them. Routing skew is ignored (uniform is the
 *             balancing target of Mixtral/DeepSeek-V3 training).
 *   KV read   once per sequence per iteration (an ideal fused attention
 *             kernel): kv_gpu*(cached tokens + decode contexts).
 *   KV write  kv_gpu*T. Activations are ignored (they stay in L2/SRAM or are
 *             small next to weights and KV).
 * Time:
 *   max(FLOPs/(tp*flops*mfu), bytes/(hbm_bw*mbu))            roofline
 *     (flops: BF16 rate; matmuls of <= 1-byte weights use flops_fp8 when
 *     the GPU has it: W8A8)
 *   + (tp > 1) 2*layers*(allreduce_lat + 2(tp-1)/tp * T*hidden*dtype_bytes
 *                        / (nvlink_bw*allreduce_bw_eff))        Megatron TP:
 *     two all-reduces per layer (Shoeybi et al. 2019, §3); ring all-reduce
 *     moves 2(p-1)/p of the message per GPU (Patarasuk & Yuan 2009; the
 *     nccl-tests "bus bandwidth" definition). Not overlapped with compute.
 *   + iter_overhead                                             scheduler,
 *     sampling and kernel launches. MFU/MBU follow the PaLM (Chowdhery et
 *     al. 2022) and Databricks/MosaicML inference-engineering definitions.
 * A roofline in the style of LLM-Viewer (Yuan et al. 2024, "LLM Inference
 * Unveiled"); Vidur (Agrawal et al., MLSys 2024) replaces such formulas with
 * profiled kernel tables, which a calibration may do here.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/mdl.h"

/* Defaults of [compute]. These are starting points, not measurements;
 * `kvsim calibrate` or --set replaces them.
 * - mfu 0.5: model FLOPs utilisation as defined by PaLM (Chowdhery et al.
 *   2022, App. B; PaLM 540B trained at 46.2% MFU); a round figure for large
 *   prefill GEMMs, assumption until calibrated.
 * - mbu 0.8: model bandwidth utilisation as defined in Databricks/MosaicML,
 *   "LLM Inference Performance Engineering: Best Practices" (2023); tuned
 *   decode kernels reach roughly 60-85% of peak HBM bandwidth.
 * - allreduce_bw_eff 0.8: NCCL ring bus bandwidth over NVSwitch is below the
 *   link's peak (nccl-tests "busbw" is the measure); assumption.
 * - allreduce_lat_ns 10 us: small-message all-reduce latency on one NVSwitch
 *   node is of order 10 us for NCCL; assumption.
 * - iter_overhead_ns 0.5 ms: scheduling, input preparation, sampling and
 *   launch gaps per iteration of an engine using CUDA graphs; assumption. */
const mdl_compute_params_t mdl_compute_params_default = {
    .mfu = 0.5,
    .mbu = 0.8,
    .allreduce_bw_eff = 0.8,
    .allreduce_lat_ns = 10000,
    .iter_overhead_ns = 500000,
    .model = MDL_MODEL_ROOFLINE,
};

/* Aggregates an iteration's cost depends on (all linear). */
typedef struct {
	double tokens;    /* T: tokens computed */
	double seqs;      /* S: sequences in the batch */
	double pairs_pf;  /* attention (query, key) pairs of prefill chunks */
	double pairs_dec; /* ... of decode steps */
	double cached_pf; /* cached tokens before prefill chunks */
	double kv_read;   /* tokens of KV read (cached_pf + decode contexts) */
	double pf_tokens; /* tokens of prefill chunks */
	double dec_seqs;  /* decode steps */
	double dec_ctx;   /* context tokens of decode steps */
} sums_t;

int mdl_compute_init(mdl_compute_t *c, const mdl_hw_t *hw, const mdl_llm_t *llm, uint32_t tp,
                     const mdl_compute_params_t *p, err_t *e)
{
	int rc = mdl_hw_check(hw, hw->name, e);
	if (!rc)
		rc = mdl_llm_check(llm, llm->name, e);
	if (rc)
		return rc;
	if (tp < 1)
		return err_set(e, KS_EINPUT, "tp: must be at least 1");
	if (llm->heads % tp)
		return err_set(e, KS_EINPUT, "tp: %u does not divide %s's %u attention heads", tp,
		               llm->name, llm->heads);
	if (llm->attention == MDL_ATTN_GQA && llm->kv_heads % tp && tp % llm->kv_heads)
		return err_set(e, KS_EINPUT,
		               "tp: %u and %s's %u KV heads: one must divide the other", tp,
		               llm->name, llm->kv_heads);
	if (!(p->mfu > 0 && p->mfu <= 1) || !(p->mbu > 0 && p->mbu <= 1))
		return err_set(e, KS_EINPUT, "mfu/mbu: must be in (0, 1]");
	if (!(p->allreduce_bw_eff > 0 && p->allreduce_bw_eff <= 1))
		return err_set(e, KS_EINPUT, "allreduce_bw_eff: must be in (0, 1]");
	if (p->allreduce_lat_ns < 0 || p->iter_overhead_ns < 0)
		return err_set(e, KS_EINPUT,
		               "allreduce_lat_ns/iter_overhead_ns: must not be negative");

	memset(c, 0, sizeof *c);
	c->hw = *hw;
	c->llm = *llm;
	c->tp = tp;
	c->p = *p;
	c->flops_rate = tp * hw->flops_bf16 * p->mfu;
	/* weights of 1 byte or less on a GPU with FP8 tensor cores: W8A8 GEMMs at
	 * the FP8 rate (DeepSeek-V3's FP8 checkpoint is served this way);
	 * attention stays BF16 (the KV cache is dtype_bytes wide). */
	c->mat_rate = llm->weight_bytes <= 1 && hw->flops_fp8 > 0 ? tp * hw->flops_fp8 * p->mfu
	                                                          : c->flops_rate;
	c->bytes_rate = hw->hbm_bw * p->mbu;
	if (llm->experts) {
		c->expert_params = (double)(llm->params_total - llm->params_active) /
		                   (llm->experts - llm->experts_active);
		c->shared_params =
		    (double)llm->params_active - llm->experts_active * c->expert_params;
	}
	c->kv_gpu = (double)mdl_kv_bytes_per_token_gpu(llm, tp);
	/* Without NVLink the TP all-reduce goes over PCIe. */
	c->ar_bw = (hw->nvlink_bw > 0 ? hw->nvlink_bw : hw->pcie_bw) * p->allreduce_bw_eff;
	return 0;
}

static double weights_read(const mdl_compute_t *c, double tokens)
{
	const mdl_llm_t *m = &c->llm;
	double untied_emb = m->tied_embeddings ? 0 : (double)m->vocab * m->hidden;
	double params;
	if (m->experts) {
		double k = m->experts_active, E = m->experts;
		double touched = E * (1 - pow(1 - k / E, tokens));
		params = c->shared_params + touched * c->expert_params;
	} else {
		params = (double)m->params_total;
	}
	return (params - untied_emb) * m->weight_bytes / c->tp;
}

static int64_t total_ns(double t)
{
	/* absurd inputs (billions of tokens at once) saturate rather than wrap */
	int64_t n = t < 9.2e18 ? (int64_t)ceil(t) : INT64_MAX;
	return n < 1 ? 1 : n; /* an iteration always advances time */
}

/* The study's linear model (Infer-Sim gpu.py, as read in the reference notes
 * sec. 2.2): prefill is compute-bound and linear in tokens, decode is
 * memory-bound over the active weights and the KV read; nothing else. */
static int64_t cost_linear(const mdl_compute_t *c, const sums_t *s, mdl_iter_cost_t *out)
{
	mdl_iter_cost_t r = {0};
	const mdl_llm_t *m = &c->llm;
	double act = (double)m->params_active;
	r.flops = 2 * act * s->pf_tokens;
	r.t_compute_ns = r.flops / c->flops_rate * 1e9;
	if (s->dec_seqs > 0) {
		r.bytes = (act * m->weight_bytes + c->kv_gpu * c->tp * s->dec_ctx) / c->tp;
		r.t_memory_ns = r.bytes / c->bytes_rate * 1e9;
	}
	r.total_ns = total_ns(r.t_compute_ns + r.t_memory_ns);
	if (out)
		*out = r;
	return r.total_ns;
}

static int64_t cost_from_sums(const mdl_compute_t *c, const sums_t *s, mdl_iter_cost_t *out)
{
	mdl_iter_cost_t r = {0};
	if (s->seqs <= 0) {
		if (out)
			*out = r;
		return 0;
	}
	if (c->p.model == MDL_MODEL_LINEAR)
		return cost_linear(c, s, out);
	const mdl_llm_t *m = &c->llm;
	double L = m->layers, H = m->heads;
	double emb = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
	double body = (double)m->params_active - emb;
	double f_mat = 2 * body * s->tokens + 2.0 * m->vocab * m->hidden * s->seqs;
	double f = 0; /* attention */
	if (m->attention == MDL_ATTN_MLA) {
		double lat = m->mla_latent, rope = m->mla_rope, d = m->head_dim;
		f += 2 * L * H * (2 * d + rope) * s->pairs_pf;
		f += 2 * L * H * (2 * lat + rope) * s->pairs_dec;
		f += L * s->cached_pf * 2 * lat * H * 2 * d;
	} else {
		f += 4 * L * H * m->head_dim * (s->pairs_pf + s->pairs_dec);
	}
	r.flops = f_mat + f;
	r.bytes = weights_read(c, s->tokens) + c->kv_gpu * (s->kv_read + s->tokens);
	r.t_compute_ns = (f_mat / c->mat_rate + f / c->flops_rate) * 1e9;
	r.t_memory_ns = r.bytes / c->bytes_rate * 1e9;
	if (c->tp > 1) {
		double p = c->tp;
		double msg = s->tokens * m->hidden * m->dtype_bytes;
		double one = (double)c->p.allreduce_lat_ns + 2 * (p - 1) / p * msg / c->ar_bw * 1e9;
		r.t_comm_ns = 2 * L * one;
	}
	r.t_overhead_ns = (double)c->p.iter_overhead_ns;
	double t = fmax(r.t_compute_ns, r.t_memory_ns) + r.t_comm_ns + r.t_overhead_ns;
	r.total_ns = total_ns(t);
	if (out)
		*out = r;
	return r.total_ns;
}

int64_t mdl_iter_cost(const mdl_compute_t *c, const mdl_batch_t *b, mdl_iter_cost_t *out)
{
	sums_t s = {0};
	for (size_t i = 0; i < b->n_prefill; i++) {
		double n = b->prefill_new[i], p = b->prefill_cached[i];
		if (n <= 0)
			continue; /* a chunk with no tokens contributes nothing */
		s.tokens += n;
		s.seqs += 1;
		s.pairs_pf += n * p + n * (n + 1) / 2;
		s.cached_pf += p;
		s.kv_read += p;
		s.pf_tokens += n;
	}
	for (size_t i = 0; i < b->n_decode; i++) {
		double ctx = b->decode_ctx[i];
		s.tokens += 1;
		s.seqs += 1;
		s.pairs_dec += ctx + 1;
		s.kv_read += ctx;
		s.dec_seqs += 1;
		s.dec_ctx += ctx;
	}
	return cost_from_sums(c, &s, out);
}

int64_t mdl_iter_time_ns(const mdl_compute_t *c, const mdl_batch_t *b)
{
	return mdl_iter_cost(c, b, NULL);
}

int64_t mdl_prefill_time_ns(const mdl_compute_t *c, uint32_t n, uint32_t cached)
{
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	return mdl_iter_cost(c, &b, NULL);
}

int64_t mdl_decode_step_ns(const mdl_compute_t *c, uint32_t n_seqs, uint32_t ctx)
{
	double n = n_seqs;
	sums_t s = {.tokens = n, .seqs = n, .pairs_dec = n * ((double)ctx + 1), .kv_read = n * ctx,
		    .dec_seqs = n, .dec_ctx = n * ctx};
	return cost_from_sums(c, &s, NULL);
}

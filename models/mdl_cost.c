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
 * Layers that are not full attention (mdl.h layer_kind), per kind:
 *   full      the pairs and KV reads above, over its layers only.
 *   sliding   a query sees the last W = window positions, itself included
 *             (vLLM's FlashAttention backend passes window_size = (W - 1, 0);
 *             HF's sliding mask kv_idx > q_idx - W): a chunk of c tokens
 *             after p cached has sum_{i=1..c} min(p + i, W) pairs per layer
 *             and reads min(p, W - 1) cached tokens; a decode step with
 *             context L has min(L + 1, W) pairs and reads min(L, W - 1). Every
 *             computed token is written, as in a full layer.
 *   state     no attention over the context: each sequence of the batch
 *             reads and writes its state once per iteration (2 x the state
 *             bytes of mdl_kv_state_bytes_per_seq_gpu, KV side); the mixer's
 *             projections are weights like any other (params).
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
 *
 * Separated terms (gemm_mfu > 0; the calibrated default). The same FLOPs and
 * bytes, split by the kernel that spends them, since one MFU for GEMMs and
 * attention and one MBU for every TP are wrong in opposite directions
 * (checked against Vidur's per-operator H100/A100 profiles, issue 19):
 *   GEMMs     per layer qkv, o, up (gate+up, SwiGLU) and down at their
 *             per-GPU shapes (Megatron column/row split), plus the LM head
 *             (vocab-parallel, one row per sequence). A GEMM of F FLOPs runs
 *             at gemm_mfu * F/(F + gemm_half_flops): a saturating curve,
 *             small GEMMs fill fewer SMs (wave quantisation; the fit puts
 *             the half point in the 1e9-1e10 FLOP range). Its compute pays
 *             for tokens rounded up to gemm_tile_tokens, to twice that tile
 *             beyond four tiles (tile quantisation, NVIDIA "Matrix
 *             Multiplication Background" guide; cuBLAS picks taller CTA
 *             tiles for larger M: the profiles step every 128 tokens up to
 *             512 and every 256 beyond on H100). MoE experts run as
 *             one grouped GEMM over the touched experts; MLA projections
 *             (no per-matrix shapes in the spec) as four equal GEMMs.
 *   weights   weight and activation bytes of those GEMMs at weight_mbu.
 *   attention prefill FLOPs at attn_prefill_eff of peak (FlashAttention-2 on
 *             H100: ~370 of 989 TFLOP/s, Shah et al. 2024, FA3 paper
 *             Fig. "attention forward speed", head dim 128).
 *   KV        KV read and write at attn_decode_eff of hbm_bw.
 *   fixed     per layer: gemm_kernel_ns per GEMM kernel, small_kernel_ns per
 *             small kernel (2 norms, rope, activation, add) and their
 *             activation bytes (norms 2Th, rope 2T(q+kv heads)d, act 3TI/tp,
 *             add 3Th elements) at elt_bw_eff. The per-kernel constant is
 *             what makes the weight read's effective MBU fall with TP: the
 *             per-GPU matrices shrink, the constant does not.
 *   time      max(GEMMs + attention, weights + KV) + fixed + all-reduce
 *             + iter_overhead; the all-reduce takes alpha and bus-bandwidth
 *             efficiency per TP from the calibration (NCCL, per node kind).
 * With gemm_mfu = 0 the single-efficiency roofline above is used unchanged.
 *
 * A roofline in the style of LLM-Viewer (Yuan et al. 2024, "LLM Inference
 * Unveiled"); Vidur (Agrawal et al., MLSys 2024) replaces such formulas with
 * profiled kernel tables, which a calibration may do here.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_int.h"
#include "models/mdl_prof.h"

/* Fitted by `kvsim calibrate compute fit` on Vidur's H100 Llama-2-70B
 * profile (models/calibration/compute-H100-SXM.ini carries the same values
 * and the held-out errors). */
#define MDL_DEF_GEMM_MFU 0.7162
#define MDL_DEF_GEMM_HALF 4.819e9
#define MDL_DEF_WEIGHT_MBU 0.8774
#define MDL_DEF_GEMM_KERNEL 1928.0
#define MDL_DEF_SMALL_KERNEL 3819.0
#define MDL_DEF_ELT_EFF 0.7304
#define MDL_DEF_TILE 128.0
#define MDL_DEF_Q 4.8218

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
    /* The separated terms for a GPU without a calibration file
     * (models/calibration/compute-<GPU>.ini replaces them; sources there):
     * the H100-SXM fit of Vidur's h100 Llama-2-70B mlp.csv
     * (models/calibration/compute-H100-SXM.ini) for the GEMM, weight-read and
     * per-kernel terms; attention as in the header (FA2 on H100 370/989). */
    .gemm_mfu = MDL_DEF_GEMM_MFU,
    .gemm_half_flops = MDL_DEF_GEMM_HALF,
    .weight_mbu = MDL_DEF_WEIGHT_MBU,
    .gemm_kernel_ns = MDL_DEF_GEMM_KERNEL,
    .small_kernel_ns = MDL_DEF_SMALL_KERNEL,
    .elt_bw_eff = MDL_DEF_ELT_EFF,
    .gemm_tile_tokens = MDL_DEF_TILE,
    .roofline_q = MDL_DEF_Q,
    .attn_prefill_eff = 0.37,
    /* own choice, not measured (the shipped profiles hold no attention
     * table): below the weight read's 0.88, since paged attention gathers
     * KV in block-sized pieces rather than streaming one matrix */
    .attn_decode_eff = 0.75,
    /* resolved by the run from the engine (sim_params_compute); NCCL here */
    .allreduce_impl = MDL_AR_AUTO,
};


static int ar_custom_row(const mdl_hw_t *hw, uint32_t tp);

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

	const double *fr[] = {&p->gemm_mfu, &p->weight_mbu, &p->elt_bw_eff, &p->attn_prefill_eff,
	                      &p->attn_decode_eff};
	for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
		if (!(*fr[i] >= 0 && *fr[i] <= 1))
			return err_set(e, KS_EINPUT,
			               "gemm_mfu/weight_mbu/elt_bw_eff/attn_*_eff: must be in [0, 1]");
	if (!(p->gemm_half_flops >= 0) || !(p->gemm_kernel_ns >= 0) || !(p->small_kernel_ns >= 0))
		return err_set(e, KS_EINPUT,
		               "gemm_half_flops/gemm_kernel_ns/small_kernel_ns: must not be negative");
	if (!(p->gemm_tile_tokens >= 0) || !(p->roofline_q == 0 || p->roofline_q >= 1))
		return err_set(e, KS_EINPUT, "gemm_tile_tokens/roofline_q: must be >= 0 / 0 or >= 1");
	if (p->n_ar > MDL_AR_POINTS)
		return err_set(e, KS_EINPUT, "all-reduce table: more than %d TP points",
		               MDL_AR_POINTS);
	for (size_t i = 0; i < p->n_ar; i++)
		if (!(p->ar[i].bw_eff > 0 && p->ar[i].bw_eff <= 1) || !(p->ar[i].lat_ns >= 0))
			return err_set(e, KS_EINPUT, "all-reduce table: tp %u: bad alpha or efficiency",
			               p->ar[i].tp);

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
	c->layers_full = mdl_layers_full(llm);
	c->layers_sw = llm->window ? mdl_layers_sliding(llm) : 0;
	uint32_t attn = c->layers_full + mdl_layers_sliding(llm);
	/* per-token bytes of one attention layer, times the layers of each kind */
	double tok = attn ? c->kv_gpu / attn : 0;
	c->kv_full_gpu = c->layers_full == attn ? c->kv_gpu : tok * c->layers_full;
	c->kv_sw_gpu = tok * c->layers_sw;
	c->state_rw_gpu = 2.0 * (double)mdl_kv_state_bytes_per_seq_gpu(llm, tp);
	/* Without NVLink the TP all-reduce goes over PCIe. */
	double ar_eff = p->allreduce_bw_eff;
	c->ar_lat_ns = (double)p->allreduce_lat_ns;
	/* per-TP constants: the measured TP nearest in log2 (ties: the smaller) */
	double best = INFINITY;
	/* (not for the single-efficiency roofline, which keeps its two keys) */
	for (size_t i = 0; i < p->n_ar && (p->gemm_mfu > 0 || p->model == MDL_MODEL_PROFILE); i++) {
		double d = fabs(log2((double)p->ar[i].tp / tp));
		if (d < best) {
			best = d;
			ar_eff = p->ar[i].bw_eff;
			c->ar_lat_ns = p->ar[i].lat_ns;
		}
	}
	c->ar_bw = (hw->nvlink_bw > 0 ? hw->nvlink_bw : hw->pcie_bw) * ar_eff;
	c->ar_custom = p->allreduce_impl == MDL_AR_CUSTOM ? ar_custom_row(hw, tp) : -1;
	if (p->model == MDL_MODEL_PROFILE)
		return mdl_prof_curves(c, e);
	return 0;
}

/* ---- separated terms ------------------------------------------------------ */

/* One GEMM kind of a layer on one GPU: `groups` matrices of k x n, each
 * multiplying m tokens, run as `kernels` launches, stored at wb bytes per
 * weight (mdl.h: weight_bytes, expert_weight_bytes, embed_weight_bytes). */
typedef struct {
	double m, k, n, groups, kernels, wb;
} gemm_t;

#define LAYER_GEMMS_MAX 6

/* The layer's GEMMs for T tokens (see the header): 2..5 kinds. */
static size_t layer_gemms(const mdl_compute_t *c, double T, gemm_t g[LAYER_GEMMS_MAX],
                          double *act_elems)
{
	const mdl_llm_t *m = &c->llm;
	double tp = c->tp, h = m->hidden, L = m->layers, d = m->head_dim;
	double qh = m->heads / tp;
	double kvh = m->kv_heads >= c->tp ? m->kv_heads / tp : 1;
	double emb = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
	double I = m->intermediate / tp;
	double wb = m->weight_bytes, xw = mdl_expert_weight_bytes(m);
	size_t n = 0;
	double attn = 0; /* attention projection parameters per layer (GQA) */
	if (m->attention == MDL_ATTN_GQA) {
		g[n++] = (gemm_t){T, h, (qh + 2 * kvh) * d, 1, 1, wb};
		g[n++] = (gemm_t){T, qh * d, h, 1, 1, wb};
		attn = h * (m->heads + 2.0 * m->kv_heads) * d + m->heads * d * h;
	}
	if (m->experts) {
		double k = m->experts_active, E = m->experts;
		double touched = E * (1 - pow(1 - k / E, T));
		/* the shared experts (mdl_params_split), averaged over the layers
		 * as the rest is, run beside the routed ones at their width */
		double se = (double)(m->layers - m->dense_layers) * 3.0 * h * m->shared_intermediate /
		            L / tp;
		double rest = ((c->shared_params - emb) / L - attn) / tp - se;
		int gqa = m->attention == MDL_ATTN_GQA;
		if (rest > 0) /* dense layers, router, MLA projections (and, without
		               * shared_intermediate, the shared experts) */
			g[n++] = (gemm_t){T, h, rest / h, 1, gqa ? (se > 0 ? 1 : 2) : 6, wb};
		if (se > 0)
			g[n++] = (gemm_t){T, h, se / h, 1, 2, xw};
		double x = c->expert_params / L / tp; /* one expert's matrices */
		g[n++] = (gemm_t){T * k / touched, h, x / h, touched, 2, xw};
		I = m->intermediate * k / tp; /* activation width per token */
	} else if (m->attention == MDL_ATTN_GQA) {
		g[n++] = (gemm_t){T, h, 2 * I, 1, 1, wb};
		g[n++] = (gemm_t){T, I, h, 1, 1, wb};
	} else {
		double body = ((double)m->params_active - emb) / L / tp;
		g[n++] = (gemm_t){T, h, body / h, 1, 4, wb};
	}
	/* elements the small kernels move (see the header) */
	*act_elems = T * (2 * 2 * h + 2 * (qh + kvh) * d + 3 * I + 3 * h);
	return n;
}

/* The tensor-core peak of weights of wb bytes: FP8 for <= 1-byte weights
 * on a GPU that has it (W8A8), else BF16. */
static double gemm_peak(const mdl_compute_t *c, double wb)
{
	return wb <= 1 && c->hw.flops_fp8 > 0 ? c->hw.flops_fp8 : c->hw.flops_bf16;
}

/* Time of GEMMs on their compute and memory sides, and their kernel count. */
static void gemm_sides(const mdl_compute_t *c, const gemm_t *g, size_t n, double *t_c,
                       double *t_m, double *flops, double *bytes, double *kernels)
{
	const mdl_compute_params_t *p = &c->p;
	const mdl_llm_t *m = &c->llm;
	for (size_t i = 0; i < n; i++) {
		double peak = gemm_peak(c, g[i].wb);
		double f = 2 * g[i].m * g[i].k * g[i].n * g[i].groups;
		double tile = p->gemm_tile_tokens, mt = g[i].m;
		if (tile > 0 && mt > 0)
			mt = ceil(mt / (mt > 4 * tile ? 2 * tile : tile)) * (mt > 4 * tile ? 2 * tile : tile);
		double one = f * mt / g[i].m / g[i].kernels; /* the size the MFU curve sees */
		double mfu = p->gemm_mfu * one / (one + p->gemm_half_flops);
		double w = g[i].k * g[i].n * g[i].groups * g[i].wb;
		double a = g[i].m * (g[i].k + g[i].n) * g[i].groups * m->dtype_bytes;
		if (f > 0)
			*t_c += f * mt / g[i].m / (peak * mfu) * 1e9;
		*t_m += (w + a) / (c->hw.hbm_bw * p->weight_mbu) * 1e9;
		*flops += f;
		*bytes += w;
		*kernels += g[i].kernels;
	}
}

/* The roofline: max of the sides, or their q-norm (a soft max, q >= 1). */
static double roof(const mdl_compute_params_t *p, double c, double m)
{
	double q = p->roofline_q;
	if (q <= 0 || c <= 0 || m <= 0)
		return fmax(c, m);
	double hi = fmax(c, m), lo = fmin(c, m);
	return hi * pow(1 + pow(lo / hi, q), 1 / q);
}

void mdl_layer_terms(const mdl_compute_t *c, double tokens, double *gemm_ns, double *small_ns)
{
	gemm_t g[LAYER_GEMMS_MAX];
	double act, tc = 0, tm = 0, f = 0, b = 0, k = 0;
	size_t n = layer_gemms(c, tokens, g, &act);
	if (c->p.gemm_mfu <= 0) {
		/* the single-efficiency roofline: the layer's weight FLOPs (each at
		 * its width's rate) and bytes */
		double t = 0; /* seconds, each GEMM at its width's rate */
		for (size_t i = 0; i < n; i++) {
			double fi = 2 * g[i].m * g[i].k * g[i].n * g[i].groups;
			f += fi;
			t += fi / (gemm_peak(c, g[i].wb) * c->p.mfu);
			b += g[i].k * g[i].n * g[i].groups * g[i].wb;
		}
		if (mdl_weights_one_width(&c->llm))
			t = f * c->tp / c->mat_rate; /* the same, as it always was computed */
		*gemm_ns = fmax(t, b / c->bytes_rate) * 1e9;
		*small_ns = 0;
		return;
	}
	gemm_sides(c, g, n, &tc, &tm, &f, &b, &k);
	*gemm_ns = roof(&c->p, tc, tm) + k * c->p.gemm_kernel_ns;
	*small_ns = 5 * c->p.small_kernel_ns;
	if (c->p.elt_bw_eff > 0)
		*small_ns += act * c->llm.dtype_bytes / (c->hw.hbm_bw * c->p.elt_bw_eff) * 1e9;
}

static double attn_flops(const mdl_compute_t *c, const mdl_sums_t *s)
{
	const mdl_llm_t *m = &c->llm;
	double L = c->layers_full, H = m->heads, f = 0;
	if (m->attention == MDL_ATTN_MLA) {
		double lat = m->mla_latent, rope = m->mla_rope, d = m->head_dim;
		f += 2 * L * H * (2 * d + rope) * s->pairs_pf;
		f += 2 * L * H * (2 * lat + rope) * s->pairs_dec;
		f += L * s->cached_pf * 2 * lat * H * 2 * d;
	} else {
		f += 4 * L * H * m->head_dim * (s->pairs_pf + s->pairs_dec);
	}
	if (c->layers_sw) /* GQA: no spec has sliding MLA layers */
		f += 4.0 * c->layers_sw * H * m->head_dim * s->pairs_sw;
	return f;
}

/* KV bytes an iteration moves per GPU: reads and writes of each attention
 * kind, and the state layers' state read and written per sequence. */
static double kv_bytes(const mdl_compute_t *c, const mdl_sums_t *s)
{
	double kv = c->kv_full_gpu * (s->kv_read + s->tokens);
	if (c->layers_sw)
		kv += c->kv_sw_gpu * (s->kv_read_sw + s->tokens);
	if (c->state_rw_gpu > 0)
		kv += c->state_rw_gpu * s->seqs;
	return kv;
}

/* The engines' custom all-reduce (MDL_AR_CUSTOM): vLLM's peer-to-peer
 * kernel (csrc/custom_all_reduce.cuh: one shot, every rank reading every
 * peer's buffer over NVLink, for small messages; reduce-scatter + all-gather
 * in two shots above), which SGLang also ships. Time of one call by message
 * bytes, measured on H100 SXM by SGLang's PR #2904 (test_trt_reduce.py, its
 * "vllm" rows, float32 tensors of 512 ... 1,048,576 elements, so 2 KiB to
 * 4 MiB; 100 calls timed per size, outside CUDA graphs) at TP 2, 4 and 8;
 * between points linearly, below the first its value, above the last along
 * the last segment (to MDL_AR_CUSTOM_MAX, vLLM's custom_all_reduce max_size;
 * NCCL beyond). Rows are made non-decreasing (the small-message points
 * differ by launch noise). Inside CUDA graphs the launch share is smaller,
 * so this is an upper bound of the engine's cost; the 70B TP4 check in
 * models/README.md is what it was judged by. */
static const double ar_custom_bytes[] = {2048, 16384, 131072, 1048576, 2097152, 4194304};
#define AR_CUSTOM_POINTS (sizeof ar_custom_bytes / sizeof ar_custom_bytes[0])
static const struct {
	uint32_t tp;
	double ns[AR_CUSTOM_POINTS];
} ar_custom_curve[] = {
    {2, {9500, 9500, 9500, 12900, 17700, 26600}},
    {4, {9100, 9100, 9200, 20600, 26900, 40200}},
    {8, {10100, 10100, 11800, 24100, 30400, 45000}},
};

/* The row of ar_custom_curve for tp (nearest in log2, ties the smaller), or
 * -1 where the engines fall back to NCCL: no NVLink, or a TP their kernel
 * does not take (vLLM: 2, 4, 6 or 8 ranks). */
static int ar_custom_row(const mdl_hw_t *hw, uint32_t tp)
{
	if (hw->nvlink_bw <= 0 || (tp != 2 && tp != 4 && tp != 6 && tp != 8))
		return -1;
	int best = 0;
	for (int i = 1; i < (int)(sizeof ar_custom_curve / sizeof ar_custom_curve[0]); i++)
		if (fabs(log2((double)ar_custom_curve[i].tp / tp)) <
		    fabs(log2((double)ar_custom_curve[best].tp / tp)))
			best = i;
	return best;
}

/* One custom all-reduce of msg bytes on row r (msg <= MDL_AR_CUSTOM_MAX). */
static double ar_custom_ns(int r, double msg)
{
	const double *x = ar_custom_bytes, *y = ar_custom_curve[r].ns;
	size_t n = AR_CUSTOM_POINTS;
	if (msg <= x[0])
		return y[0];
	size_t i = 1;
	while (i < n - 1 && msg > x[i])
		i++;
	return y[i - 1] + (y[i] - y[i - 1]) * (msg - x[i - 1]) / (x[i] - x[i - 1]);
}

double mdl_allreduce_one_ns(const mdl_compute_t *c, double msg)
{
	if (c->tp <= 1)
		return 0;
	if (c->ar_custom >= 0 && msg <= MDL_AR_CUSTOM_MAX)
		return ar_custom_ns(c->ar_custom, msg);
	double p = c->tp;
	return c->arc.n ? mdl_curve_at(&c->arc, msg)
	                : c->ar_lat_ns + 2 * (p - 1) / p * msg / c->ar_bw * 1e9;
}

static double allreduce_ns(const mdl_compute_t *c, double tokens)
{
	if (c->tp <= 1)
		return 0;
	double msg = tokens * c->llm.hidden * c->llm.dtype_bytes;
	return 2 * c->llm.layers * mdl_allreduce_one_ns(c, msg); /* Megatron: two per layer */
}

/* The terms of cost_terms fixed by the batch's token and sequence counts:
 * r's t_gemm, t_weight, t_fixed, t_comm and t_overhead, and the weight FLOPs
 * and bytes (*f, *wb), so a run of decode steps of one batch size computes
 * them once (mdl_decode_run_ns). */
static void terms_by_size(const mdl_compute_t *c, double tokens, double seqs, mdl_iter_cost_t *r,
                          double *f, double *wb)
{
	const mdl_compute_params_t *p = &c->p;
	const mdl_llm_t *m = &c->llm;
	double L = m->layers;
	double tc = 0, tm = 0, kern = 0;
	*f = *wb = 0;
	/* LM head: one row per sequence, vocab split over the group */
	gemm_t head = {seqs, m->hidden, (double)m->vocab / c->tp, 1, 1, mdl_embed_weight_bytes(m)};
	gemm_sides(c, &head, 1, &tc, &tm, f, wb, &kern);
	if (p->model == MDL_MODEL_PROFILE) {
		/* the table holds the layer's GEMMs and small kernels */
		r->t_fixed_ns = L * mdl_curve_at(&c->layer, tokens) + kern * p->gemm_kernel_ns;
		r->t_gemm_ns = tc;
		r->t_weight_ns = tm;
	} else {
		gemm_t g[LAYER_GEMMS_MAX];
		double act, ltc = 0, ltm = 0, lf = 0, lw = 0, lk = 0;
		size_t n = layer_gemms(c, tokens, g, &act);
		gemm_sides(c, g, n, &ltc, &ltm, &lf, &lw, &lk);
		r->t_gemm_ns = tc + L * ltc;
		r->t_weight_ns = tm + L * ltm;
		*f += L * lf;
		*wb += L * lw;
		double small = 5 * p->small_kernel_ns;
		if (p->elt_bw_eff > 0)
			small += act * m->dtype_bytes / (c->hw.hbm_bw * p->elt_bw_eff) * 1e9;
		r->t_fixed_ns = (kern + L * lk) * p->gemm_kernel_ns + L * small;
	}
	r->t_comm_ns = allreduce_ns(c, tokens);
	r->t_overhead_ns = (double)p->iter_overhead_ns;
}

/* The bytes of c that terms_by_size reads outside the profile curves: hw,
 * llm, tp and the params before their paths; the derived constants from
 * flops_rate to ar_lat_ns. */
#define KEY_A (offsetof(mdl_compute_t, p) + offsetof(mdl_compute_params_t, profile))
#define KEY_B0 offsetof(mdl_compute_t, flops_rate)
#define KEY_B (offsetof(mdl_compute_t, layer) - KEY_B0)
_Static_assert(KEY_A + KEY_B <= MDL_SIZE_KEY, "mdl_size_cache_t: key too small");

/* terms_by_size through c's size cache (mdl.h): the same doubles, computed
 * once per (tokens, seqs) while the inputs stay byte for byte the same. The
 * profile model (whose curves are not in the key) is not cached. */
void mdl_cost_size_terms(const mdl_compute_t *c, double tokens, double seqs, mdl_iter_cost_t *r,
                         double *f, double *wb)
{
	if (c->p.model == MDL_MODEL_PROFILE || c->arc.n || !(tokens >= 0 && tokens < 0x1p32) ||
	    !(seqs >= 0 && seqs < 0x1p32)) {
		terms_by_size(c, tokens, seqs, r, f, wb);
		return;
	}
	/* the cache is not part of the model's value: written through const */
	mdl_size_cache_t *k = (mdl_size_cache_t *)&c->size_cache;
	const unsigned char *b = (const unsigned char *)c;
	if (!k->valid || memcmp(k->key, b, KEY_A) || memcmp(k->key + KEY_A, b + KEY_B0, KEY_B)) {
		memcpy(k->key, b, KEY_A);
		memcpy(k->key + KEY_A, b + KEY_B0, KEY_B);
		for (size_t i = 0; i < MDL_SIZE_CACHE; i++)
			k->e[i].seqs = -1;
		k->valid = 1;
	}
	uint32_t t = (uint32_t)(uint64_t)tokens, s = (uint32_t)(uint64_t)seqs;
	mdl_size_terms_t *e = &k->e[(t ^ (s << 5)) % MDL_SIZE_CACHE];
	if (e->tokens != tokens || e->seqs != seqs) {
		terms_by_size(c, tokens, seqs, r, f, wb);
		*e = (mdl_size_terms_t){tokens,         seqs,           r->t_gemm_ns,
		                        r->t_weight_ns, r->t_fixed_ns,  r->t_comm_ns,
		                        r->t_overhead_ns, *f,           *wb};
		return;
	}
	r->t_gemm_ns = e->t_gemm_ns;
	r->t_weight_ns = e->t_weight_ns;
	r->t_fixed_ns = e->t_fixed_ns;
	r->t_comm_ns = e->t_comm_ns;
	r->t_overhead_ns = e->t_overhead_ns;
	*f = e->flops;
	*wb = e->wbytes;
}

/* The terms of cost_terms that depend on the contexts, on r from
 * terms_by_size: attention and KV, and the two roofline sides. */
void mdl_cost_terms_sides(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *r, double f,
                          double wb)
{
	const mdl_compute_params_t *p = &c->p;
	double fa = attn_flops(c, s);
	r->t_attn_ns = fa / c->tp / (c->hw.flops_bf16 * p->attn_prefill_eff) * 1e9;
	double kv = kv_bytes(c, s);
	r->t_kv_ns = kv / (c->hw.hbm_bw * p->attn_decode_eff) * 1e9;
	r->flops = f * c->tp + fa;
	r->bytes = wb + kv;
	r->t_compute_ns = r->t_gemm_ns + r->t_attn_ns;
	r->t_memory_ns = r->t_weight_ns + r->t_kv_ns;
}

/* The rest of cost_terms on r from terms_by_size: mdl_cost_terms_sides, the
 * roofline and the total. */
int64_t mdl_cost_terms_finish(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *r,
                              double f, double wb)
{
	mdl_cost_terms_sides(c, s, r, f, wb);
	r->total_ns =
	    mdl_cost_total_ns(mdl_cost_terms_time(r, roof(&c->p, r->t_compute_ns, r->t_memory_ns)));
	return r->total_ns;
}

static int64_t cost_terms(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *out)
{
	mdl_iter_cost_t r = {0};
	double f, wb;
	mdl_cost_size_terms(c, s->tokens, s->seqs, &r, &f, &wb);
	mdl_cost_terms_finish(c, s, &r, f, wb);
	if (out)
		*out = r;
	return r.total_ns;
}

static double weights_read(const mdl_compute_t *c, double tokens)
{
	const mdl_llm_t *m = &c->llm;
	double untied_emb = m->tied_embeddings ? 0 : (double)m->vocab * m->hidden;
	double params, expert = 0;
	if (m->experts) {
		double k = m->experts_active, E = m->experts;
		double touched = E * (1 - pow(1 - k / E, tokens));
		params = c->shared_params + touched * c->expert_params;
		expert = touched * c->expert_params;
	} else {
		params = (double)m->params_total;
	}
	if (mdl_weights_one_width(m))
		return (params - untied_emb) * m->weight_bytes / c->tp;
	/* each part at its width: the LM head (and a tied table) at the embed
	 * width, the touched and the shared experts at the experts' */
	mdl_params_split_t sp;
	mdl_params_split(m, &sp);
	double head = sp.embed - untied_emb;
	expert += sp.shared_experts;
	double other = params - untied_emb - head - expert;
	return (head * mdl_embed_weight_bytes(m) + expert * mdl_expert_weight_bytes(m) +
	        other * m->weight_bytes) /
	       c->tp;
}

/* Bytes of the weights one token uses (params_active), each part at its
 * width: the linear model's decode read. */
static double active_weight_bytes(const mdl_llm_t *m)
{
	double act = (double)m->params_active;
	if (mdl_weights_one_width(m))
		return act * m->weight_bytes;
	mdl_params_split_t sp;
	mdl_params_split(m, &sp);
	double expert = m->experts_active * sp.routed_one + sp.shared_experts;
	return sp.embed * mdl_embed_weight_bytes(m) + expert * mdl_expert_weight_bytes(m) +
	       (act - sp.embed - expert) * m->weight_bytes;
}

/* The study's linear model (Infer-Sim gpu.py, as read in the reference notes
 * sec. 2.2): prefill is compute-bound and linear in tokens, decode is
 * memory-bound over the active weights and the KV read; nothing else. */
static int64_t cost_linear(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *out)
{
	mdl_iter_cost_t r = {0};
	const mdl_llm_t *m = &c->llm;
	double act = (double)m->params_active;
	r.flops = 2 * act * s->pf_tokens;
	r.t_compute_ns = r.flops / c->flops_rate * 1e9;
	if (s->dec_seqs > 0) {
		double kv = c->kv_full_gpu * c->tp * s->dec_ctx;
		if (c->layers_sw)
			kv += c->kv_sw_gpu * c->tp * s->dec_ctx_sw;
		if (c->state_rw_gpu > 0)
			kv += c->state_rw_gpu / 2 * c->tp * s->dec_seqs; /* the read */
		r.bytes = (active_weight_bytes(m) + kv) / c->tp;
		r.t_memory_ns = r.bytes / c->bytes_rate * 1e9;
	}
	r.total_ns = mdl_cost_total_ns(r.t_compute_ns + r.t_memory_ns);
	if (out)
		*out = r;
	return r.total_ns;
}

int64_t mdl_cost_from_sums(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *out)
{
	mdl_iter_cost_t r = {0};
	if (s->seqs <= 0) {
		if (out)
			*out = r;
		return 0;
	}
	if (c->p.model == MDL_MODEL_LINEAR)
		return cost_linear(c, s, out);
	if (c->p.gemm_mfu > 0 || c->p.model == MDL_MODEL_PROFILE)
		return cost_terms(c, s, out);
	const mdl_llm_t *m = &c->llm;
	double L = m->layers;
	double emb = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
	double body = (double)m->params_active - emb;
	double f_mat = 2 * body * s->tokens + 2.0 * m->vocab * m->hidden * s->seqs;
	double f = attn_flops(c, s);
	r.flops = f_mat + f;
	r.bytes = weights_read(c, s->tokens) + kv_bytes(c, s);
	r.t_compute_ns = (f_mat / c->mat_rate + f / c->flops_rate) * 1e9;
	if (!mdl_weights_one_width(m)) {
		/* each part's matmul FLOPs at its width's rate: the LM head, the
		 * experts a token uses (experts_active routed + shared), the rest */
		mdl_params_split_t sp;
		mdl_params_split(m, &sp);
		double fx = 2 * (m->experts_active * sp.routed_one + sp.shared_experts) * s->tokens;
		double fh = 2.0 * m->vocab * m->hidden * s->seqs;
		double rate = c->tp * c->p.mfu;
		r.t_compute_ns = (fh / (rate * gemm_peak(c, mdl_embed_weight_bytes(m))) +
		                  fx / (rate * gemm_peak(c, mdl_expert_weight_bytes(m))) +
		                  (f_mat - fh - fx) / (rate * gemm_peak(c, m->weight_bytes)) +
		                  f / c->flops_rate) *
		                 1e9;
	}
	r.t_memory_ns = r.bytes / c->bytes_rate * 1e9;
	if (c->tp > 1) {
		double p = c->tp;
		double msg = s->tokens * m->hidden * m->dtype_bytes;
		double one = (double)c->p.allreduce_lat_ns + 2 * (p - 1) / p * msg / c->ar_bw * 1e9;
		r.t_comm_ns = 2 * L * one;
	}
	r.t_overhead_ns = (double)c->p.iter_overhead_ns;
	double t = fmax(r.t_compute_ns, r.t_memory_ns) + r.t_comm_ns + r.t_overhead_ns;
	r.total_ns = mdl_cost_total_ns(t);
	if (out)
		*out = r;
	return r.total_ns;
}

int64_t mdl_iter_cost(const mdl_compute_t *c, const mdl_batch_t *b, mdl_iter_cost_t *out)
{
	mdl_sums_t s = {0};
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
		if (c->layers_sw) {
			double W = c->llm.window;
			/* queries at p+1..p+k see all before them, the rest W keys */
			double k = fmin(fmax(W - p, 0), n);
			s.pairs_sw += k * p + k * (k + 1) / 2 + (n - k) * W;
			s.kv_read_sw += fmin(p, W - 1);
		}
	}
	for (size_t i = 0; i < b->n_decode; i++) {
		double ctx = b->decode_ctx[i];
		s.tokens += 1;
		s.seqs += 1;
		s.pairs_dec += ctx + 1;
		s.kv_read += ctx;
		s.dec_seqs += 1;
		s.dec_ctx += ctx;
		if (c->layers_sw) {
			double sw = fmin(ctx, (double)c->llm.window - 1);
			s.pairs_sw += sw + 1;
			s.kv_read_sw += sw;
			s.dec_ctx_sw += sw;
		}
	}
	return mdl_cost_from_sums(c, &s, out);
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
	mdl_sums_t s = {.tokens = n,
	                .seqs = n,
	                .pairs_dec = n * ((double)ctx + 1),
	                .kv_read = n * ctx,
	                .dec_seqs = n,
	                .dec_ctx = n * ctx};
	if (c->layers_sw) {
		double sw = n * fmin(ctx, (double)c->llm.window - 1);
		s.pairs_sw = sw + n;
		s.kv_read_sw = s.dec_ctx_sw = sw;
	}
	return mdl_cost_from_sums(c, &s, NULL);
}

/* Runs of decode steps in closed form (and the argument for their 1 ns
 * bound): mdl_decode_run.c. Blame for an absurd cost: mdl_cost_blame.c. */

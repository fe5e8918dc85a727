/* mdl — hardware and LLM specs, and the compute cost of one scheduler
 * iteration.
 *
 * Specs are INI files (models/hw/<NAME>.ini with a [gpu] section,
 * models/llm/<NAME>.ini with a [model] section); the built-in ones are
 * embedded in the binary, users may load their own. Parsing is strict (the
 * typed INI reader, sim/base/ini_typed.h): an unknown key or section, a
 * duplicate or missing required key, or a value that is not a number in
 * range gives KS_EINPUT "file:line: [section] key: reason".
 *
 * Units: bytes (uint64_t or double for rates: bytes/s), FLOP/s, nanoseconds
 * (int64_t). Structs are plain values: the caller owns them, nothing to free.
 * Functions that can fail return 0 or a negative KS_E* code and fill err_t.
 * The cost formulas and their sources are written out in models/mdl_cost.c.
 */
#ifndef KVSIM_MDL_H
#define KVSIM_MDL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"

#define MDL_NAME_MAX 64

/* One GPU and the node it sits in. Link rates are per GPU, per direction. */
typedef struct mdl_hw {
	char name[MDL_NAME_MAX];
	uint64_t hbm_bytes; /* HBM capacity */
	double hbm_bw;      /* HBM bandwidth, bytes/s */
	double flops_bf16;  /* dense BF16 tensor FLOP/s */
	double flops_fp8;   /* dense FP8 tensor FLOP/s; 0 = no FP8 (optional) */
	double nvlink_bw;   /* bytes/s per direction; 0 = no NVLink */
	int64_t nvlink_lat_ns;
	double pcie_bw; /* GPU<->host, bytes/s per direction */
	int64_t pcie_lat_ns;
	double nic_bw; /* the GPU's rail NIC, bytes/s per direction */
	int64_t nic_lat_ns;
	uint64_t host_dram_bytes; /* per node (optional key; default 0 = none) */
} mdl_hw_t;

typedef enum { MDL_ATTN_GQA = 0, MDL_ATTN_MLA = 1 } mdl_attn_t;

/* What the layers that are not full attention are ([model] layer_kind).
 * FULL: every layer is full attention (a spec without the key). SLIDING:
 * sliding-window attention of the full layers' shape over the last `window`
 * tokens. STATE: a state-space / linear-attention mixer holding a fixed state
 * per sequence (Mamba, Gated DeltaNet). */
typedef enum { MDL_LAYER_FULL = 0, MDL_LAYER_SLIDING = 1, MDL_LAYER_STATE = 2 } mdl_layer_t;

/* One model. For MoE, experts/experts_active > 0 and params_active counts
 * the shared parameters plus experts_active routed experts per layer. */
typedef struct mdl_llm {
	char name[MDL_NAME_MAX];
	uint32_t layers, hidden, heads, kv_heads, head_dim, intermediate, vocab;
	uint32_t dtype_bytes; /* KV cache and activation element size */
	double weight_bytes;  /* bytes per weight, may be fractional (4-bit:
	                       * 0.5); optional key, default dtype_bytes */
	uint64_t params_total, params_active;
	mdl_attn_t attention;
	uint32_t mla_latent, mla_rope;    /* MLA only (kv_lora_rank, rope dims) */
	uint32_t experts, experts_active; /* routed experts; 0 = dense */
	uint32_t tied_embeddings;         /* 1: embedding and LM head share weights */
	/* Per-component weight widths (optional; 0: weight_bytes), so a
	 * checkpoint with FP8 experts beside BF16 attention and router
	 * (Llama-4-Scout FP8) prices each component's bytes at its own width:
	 * expert_weight_bytes the routed and shared experts (MoE only),
	 * embed_weight_bytes the embedding table and LM head. weight_bytes
	 * covers every other weight (attention, router, dense MLPs, norms). */
	double expert_weight_bytes, embed_weight_bytes;
	/* MoE only (optional): shared_intermediate is the summed intermediate
	 * size of the shared experts of each MoE layer (DeepSeek n_shared *
	 * moe_intermediate, Llama-4 intermediate_size), costed with the routed
	 * experts at expert_weight_bytes; dense_layers the layers that have a
	 * dense MLP instead of experts (DeepSeek first_k_dense_replace). */
	uint32_t shared_intermediate, dense_layers;
	/* Per-layer KV kinds (all optional; zero: every layer full attention).
	 * With layer_kind != FULL, layer i (from 0) is full attention iff
	 * full_period > 0 and i % full_period == full_offset; every other layer
	 * is of layer_kind (full_period 0: none is full). */
	mdl_layer_t layer_kind;
	uint32_t full_period, full_offset;
	uint32_t window; /* SLIDING: tokens a local layer attends to (and keeps) */
	/* STATE: one layer's state per sequence is
	 * state_conv_dim * (state_conv_kernel - 1) * dtype_bytes   (conv state)
	 * + state_heads * state_head_dim * state_dim * state_dtype_bytes (SSM);
	 * the shapes of vLLM's MambaStateShapeCalculator (mamba_utils.py), see
	 * mdl_spec.c. */
	uint32_t state_conv_dim, state_conv_kernel;
	uint32_t state_heads, state_head_dim, state_dim;
	uint32_t state_dtype_bytes; /* SSM (temporal) state element size */
} mdl_llm_t;

/* All-reduce constants of one TP degree (a calibration's per-TP fit). */
typedef struct mdl_ar_point {
	uint32_t tp;
	double lat_ns; /* alpha: fixed cost of one all-reduce */
	double bw_eff; /* achieved ring bus bandwidth / link bandwidth */
} mdl_ar_point_t;

#define MDL_AR_POINTS 8
#define MDL_PATH_MAX 1024

/* Efficiency factors and communication constants of the compute model.
 * The fields after `model` are the separated roofline terms (mdl_cost.c);
 * each left at 0 falls back to the single-efficiency roofline of earlier
 * versions (gemm_mfu, attn_prefill_eff -> mfu; attn_decode_eff,
 * weight_mbu -> mbu; kernel costs and the elementwise term off), so a
 * struct that sets only the first six fields keeps its old meaning. */
typedef struct mdl_compute_params {
	double mfu;               /* achieved / peak FLOP/s, (0, 1] */
	double mbu;               /* achieved / peak HBM bandwidth, (0, 1] */
	double allreduce_bw_eff;  /* achieved ring bus bandwidth / nvlink_bw */
	int64_t allreduce_lat_ns; /* fixed cost of one all-reduce */
	int64_t iter_overhead_ns; /* scheduler + launch cost per iteration */
	int model;                /* MDL_MODEL_* */
	double gemm_mfu;          /* peak MFU of large weight GEMMs, [0, 1] */
	double gemm_half_flops;   /* FLOPs of one GEMM (per GPU) at which its MFU
	                           * is half of gemm_mfu; 0: MFU independent of size */
	double weight_mbu;        /* weight-read bandwidth / hbm_bw, [0, 1] */
	double gemm_kernel_ns;    /* fixed cost per GEMM kernel (4 per layer) */
	double small_kernel_ns;   /* fixed cost per small kernel (norms, rope,
	                           * activation, add: 5 per layer) */
	double elt_bw_eff;        /* elementwise kernels' bandwidth / hbm_bw; 0: off */
	double attn_prefill_eff;  /* prefill attention FLOP/s / peak */
	double attn_decode_eff;   /* decode attention KV-read bandwidth / hbm_bw */
	double gemm_tile_tokens;  /* GEMM compute pays for tokens rounded up to
	                           * this tile (0: no rounding) */
	double roofline_q;        /* sides combined as (c^q + m^q)^(1/q); 0: max */
	int allreduce_impl;       /* MDL_AR_*: how the engine runs the TP all-reduce */
	size_t n_ar;              /* per-TP all-reduce constants (0: the two above) */
	mdl_ar_point_t ar[MDL_AR_POINTS];
	char profile[MDL_PATH_MAX];    /* MDL_MODEL_PROFILE: per-operator table(s),
	                                * comma-separated paths */
	char ar_profile[MDL_PATH_MAX]; /* MDL_MODEL_PROFILE: all-reduce table ("" none) */
	char calibration[MDL_PATH_MAX]; /* where the terms came from ("" defaults) */
} mdl_compute_params_t;

/* Cost model kinds ([compute] model). ROOFLINE: the roofline in mdl_cost.c.
 * LINEAR: the study's simulator (see mdl_cost.c): prefill
 * 2*params_active*tokens/(tp*flops*mfu) with no attention, TP-communication
 * or overhead term; decode (params_active*weight_bytes + kv_bytes*context)
 * /(tp*hbm_bw*mbu); an iteration holding both pays the sum. PROFILE: the
 * per-layer operators and the all-reduce interpolated from measured tables
 * (mdl_prof.h), attention and the LM head from the roofline terms. */
enum { MDL_MODEL_ROOFLINE = 0, MDL_MODEL_LINEAR = 1, MDL_MODEL_PROFILE = 2 };

/* TP all-reduce implementations ([compute] allreduce). NCCL: the α + bus
 * bandwidth rule (the calibration's per-TP fit of an NCCL measurement, or
 * allreduce_lat_ns / allreduce_bw_eff). CUSTOM: the engines' own
 * peer-to-peer kernel over NVLink (vLLM's custom all-reduce, which SGLang
 * also ships) for messages up to MDL_AR_CUSTOM_MAX bytes at TP 2, 4, 6 or 8,
 * NCCL beyond (mdl_cost.c has the measured curve and its source). AUTO is
 * resolved by the run from the engine (sim_params.h); left unresolved it
 * means NCCL. */
enum { MDL_AR_AUTO = -1, MDL_AR_NCCL = 0, MDL_AR_CUSTOM = 1 };
#define MDL_AR_CUSTOM_MAX (8.0 * 1024 * 1024)

/* Defaults of the [compute] config keys (sources in mdl_cost.c). */
extern const mdl_compute_params_t mdl_compute_params_default;

/* ---- specs ---------------------------------------------------------------
 * origin names the text in error messages ("hw/H100-SXM.ini", a path). */
int mdl_hw_parse(const char *origin, const char *text, mdl_hw_t *hw, err_t *e);
int mdl_llm_parse(const char *origin, const char *text, mdl_llm_t *llm, err_t *e);
int mdl_hw_load_file(const char *path, mdl_hw_t *hw, err_t *e);
int mdl_llm_load_file(const char *path, mdl_llm_t *llm, err_t *e);
/* Built-in spec by name (case-insensitive); KS_EINPUT listing the names
 * when there is none. */
int mdl_hw_builtin(const char *name, mdl_hw_t *hw, err_t *e);
int mdl_llm_builtin(const char *name, mdl_llm_t *llm, err_t *e);
/* The i-th built-in name of a kind ("hw" or "llm"), NULL past the end; the
 * string lives in a per-thread buffer valid until the next call. */
const char *mdl_builtin_name(const char *kind, size_t i);
/* The embedded text of kind/NAME.ini (kind "hw", "llm", "calibration";
 * NAME case-insensitive), NULL when there is none; *path (may be NULL) gets
 * its name. */
const char *mdl_builtin_text(const char *kind, const char *name, const char **path);
/* Writes a spec as INI text the parsers read back to the same struct
 * (provenance: the resolved spec of a run). 0, KS_EIO, or KS_EINPUT (nothing
 * written) for a name the parsers refuse, such as one starting with ';'. */
int mdl_hw_write(const mdl_hw_t *hw, FILE *f);
int mdl_llm_write(const mdl_llm_t *llm, FILE *f);
/* Cross-field checks (run by the parsers and again after overrides). */
int mdl_hw_check(const mdl_hw_t *hw, const char *origin, err_t *e);
int mdl_llm_check(const mdl_llm_t *llm, const char *origin, err_t *e);

/* KV bytes one token occupies over the whole model, in every attention layer
 * (full and sliding; a state layer holds none per token):
 * GQA 2*attn_layers*kv_heads*head_dim*dtype_bytes; MLA
 * attn_layers*(latent+rope)*dtype. For a model whose layers are all full
 * attention (no layer_kind) attn_layers = layers, its meaning of old. */
uint64_t mdl_kv_bytes_per_token(const mdl_llm_t *llm);
/* The same on each GPU of a TP group: GQA KV heads are split over the group
 * (replicated when tp > kv_heads); the MLA latent is replicated on every rank
 * (as in vLLM and SGLang), so it does not shrink with tp. */
uint64_t mdl_kv_bytes_per_token_gpu(const mdl_llm_t *llm, uint32_t tp);

/* Layer counts by kind (sum: layers). */
uint32_t mdl_layers_full(const mdl_llm_t *llm);
uint32_t mdl_layers_sliding(const mdl_llm_t *llm);
uint32_t mdl_layers_state(const mdl_llm_t *llm);

/* Per-layer KV sizes, bytes; the _gpu forms are per GPU of a TP group of tp
 * (tp 0 or 1: the whole model), the plain forms the whole model.
 *
 * paged: bytes per token of the layers whose KV grows with the sequence
 * and is kept in blocks for all of it: the full-attention layers. A model
 * with no full-attention layer (every layer sliding, Mistral-7B-v0.1) pages
 * its sliding layers instead, as vLLM's SlidingWindowManager does (blocks
 * that leave the window are freed), and then has no fixed window part.
 * fixed: bytes a sequence holds beyond paged x its tokens at most: the
 * window of the sliding layers not paged (sliding_layers x window x per-layer
 * token bytes) plus the state of every state layer.
 * Every sequence of n tokens holds seq_bytes(n) <= paged x n + fixed. */
uint64_t mdl_kv_paged_bytes_per_token(const mdl_llm_t *llm);
uint64_t mdl_kv_paged_bytes_per_token_gpu(const mdl_llm_t *llm, uint32_t tp);
uint64_t mdl_kv_fixed_bytes_per_seq(const mdl_llm_t *llm);
uint64_t mdl_kv_fixed_bytes_per_seq_gpu(const mdl_llm_t *llm, uint32_t tp);
/* State bytes of one sequence over every state layer (0 without any). */
uint64_t mdl_kv_state_bytes_per_seq(const mdl_llm_t *llm);
uint64_t mdl_kv_state_bytes_per_seq_gpu(const mdl_llm_t *llm, uint32_t tp);
/* Bytes one sequence of n tokens holds: full layers x n + sliding layers x
 * min(n, window) (per-layer token bytes) + state layers x state. */
uint64_t mdl_kv_seq_bytes(const mdl_llm_t *llm, uint64_t n);
uint64_t mdl_kv_seq_bytes_gpu(const mdl_llm_t *llm, uint32_t tp, uint64_t n);
/* Bytes that move with a prefix of n tokens (a peer copy, a host fetch):
 * full layers x n + sliding layers x min(n, window), plus the state of the
 * state layers only when with_state is set: the prefix ends at a point where
 * the source saved the sequence's state. A state summarises the whole prefix
 * and cannot be cut at another token, so a hybrid model's cached prefix is
 * usable only up to such a point: SGLang's MambaRadixCache keeps one state
 * per radix node and matches a prefix only as deep as a node holding one,
 * and vLLM's hybrid KV cache manager caches Mamba states at block-aligned
 * points only (both as recalled from their docs, not checked against code).
 * For models without state layers with_state changes nothing. */
uint64_t mdl_kv_prefix_bytes(const mdl_llm_t *llm, uint64_t n, int with_state);
uint64_t mdl_kv_prefix_bytes_gpu(const mdl_llm_t *llm, uint32_t tp, uint64_t n, int with_state);
/* Weight bytes on each GPU of a TP group: ceil(bytes/tp), bytes being
 * params_total*weight_bytes when every component has that width, else
 * the sum over mdl_params_split_t's parts at their widths. */
uint64_t mdl_weights_bytes_per_gpu(const mdl_llm_t *llm, uint32_t tp);

/* A model's parameters by the width they are stored at (mdl_llm_t): embed
 * (vocab*hidden, twice when untied), experts (every routed expert, from
 * params_total - params_active over experts - experts_active, plus the
 * shared experts: (layers - dense_layers)*3*hidden*shared_intermediate,
 * gate, up and down) and other (the rest: attention, router, dense MLPs,
 * norms). The _active form counts experts_active routed experts. */
typedef struct mdl_params_split {
	double embed, experts, other;
	double routed_one; /* one routed expert over all MoE layers (0: dense) */
	double shared_experts;
} mdl_params_split_t;
void mdl_params_split(const mdl_llm_t *llm, mdl_params_split_t *s);
/* The widths the split's parts are stored at (0 fields resolved). */
double mdl_expert_weight_bytes(const mdl_llm_t *llm);
double mdl_embed_weight_bytes(const mdl_llm_t *llm);
/* Whether every component has weight_bytes' width (the single-width model). */
int mdl_weights_one_width(const mdl_llm_t *llm);

/* Tokens of KV an instance of tp GPUs can hold: per GPU, HBM less the
 * reserve fraction less the weights, divided by the per-GPU paged KV bytes
 * of a token (every GPU holds its shard of every token); the fixed bytes of
 * each running sequence are not subtracted (admission must reserve them).
 * 0 when the weights do not fit or the model pages nothing. */
uint64_t mdl_kv_tokens_per_instance(const mdl_hw_t *hw, const mdl_llm_t *llm, uint32_t tp,
                                    double reserve_fraction);

/* Resolves [gpu], [model] and [compute] of a config: the named built-in or
 * the given file, then every override key that is set. The keys are typed
 * (mdl_cfg.h): the config is read through cfg_fill, and by name only for
 * paths and error places. */
int mdl_load_cfg(const cfg_t *cfg, mdl_hw_t *hw, mdl_llm_t *llm, mdl_compute_params_t *cp,
                 err_t *e);

/* ---- compute cost -------------------------------------------------------- */
#define MDL_PROF_POINTS 1024

/* A measured curve, time against a size, for interpolation (mdl_prof.h). */
typedef struct mdl_curve {
	size_t n;
	double x[MDL_PROF_POINTS]; /* ascending size (tokens, bytes) */
	double y[MDL_PROF_POINTS]; /* ns */
} mdl_curve_t;

/* The terms of an iteration fixed by its token and sequence counts, as
 * mdl_cost.c computed them for one (tokens, seqs). */
typedef struct mdl_size_terms {
	double tokens, seqs; /* the key; seqs < 0: empty */
	double t_gemm_ns, t_weight_ns, t_fixed_ns, t_comm_ns, t_overhead_ns, flops, wbytes;
} mdl_size_terms_t;

#define MDL_SIZE_CACHE 256 /* entries, direct-mapped (own choice: a batch of up to
                            * 256 decode sequences has an entry per size) */
#define MDL_SIZE_KEY 1024  /* bytes of the inputs the entries were computed from */

/* mdl_cost.c's cache of mdl_size_terms_t. Its entries hold while the bytes
 * of the compute model they depend on (hw, llm, tp, the numeric params and
 * the derived constants) equal key: a change to any of those, however made,
 * empties it at the next cost query. Written by the cost queries through
 * their const pointer, so an mdl_compute_t is never defined const and one
 * is not queried from two threads at once. */
typedef struct mdl_size_cache {
	int valid; /* key holds a snapshot */
	unsigned char key[MDL_SIZE_KEY];
	mdl_size_terms_t e[MDL_SIZE_CACHE];
} mdl_size_cache_t;

typedef struct mdl_compute {
	mdl_hw_t hw;
	mdl_llm_t llm;
	uint32_t tp;
	mdl_compute_params_t p;
	/* derived once by mdl_compute_init */
	double flops_rate;    /* tp * flops_bf16 * mfu, FLOP/s (attention) */
	double mat_rate;      /* the same for weight matmuls (FP8 when W8A8) */
	double bytes_rate;    /* hbm_bw * mbu per GPU, bytes/s */
	double shared_params; /* MoE: parameters every token uses */
	double expert_params; /* MoE: parameters of one routed expert, all layers */
	double kv_gpu;        /* mdl_kv_bytes_per_token_gpu */
	/* per layer kind (mdl_cost.c): layers and per-GPU bytes per token of the
	 * full and the sliding layers (kv_full_gpu = kv_gpu for a model of full
	 * layers only), and a sequence's state read + write over its state
	 * layers per iteration (2 x mdl_kv_state_bytes_per_seq_gpu) */
	uint32_t layers_full, layers_sw;
	double kv_full_gpu, kv_sw_gpu, state_rw_gpu;
	double ar_bw;         /* all-reduce link rate, bytes/s */
	double ar_lat_ns;     /* all-reduce alpha at this tp */
	int ar_custom;        /* MDL_AR_CUSTOM in force: row of the custom curve
	                       * (mdl_cost.c) at this tp; -1: NCCL's rule */
	mdl_curve_t layer;    /* MDL_MODEL_PROFILE: one layer's operators, ns by tokens */
	mdl_curve_t arc;      /* MDL_MODEL_PROFILE: one all-reduce, ns by bytes (n 0: roofline) */
	mdl_size_cache_t size_cache; /* mdl_cost.c (empty after mdl_compute_init) */
} mdl_compute_t;

/* One iteration's work, as parallel arrays (the shape of the scheduler's
 * batch, so an adapter copies pointers): prefill chunk i computes
 * prefill_new[i] tokens after prefill_cached[i] tokens already in its KV;
 * decode sequence j has decode_ctx[j] tokens in KV and computes one more. */
typedef struct mdl_batch {
	size_t n_prefill;
	const uint32_t *prefill_new;
	const uint32_t *prefill_cached;
	size_t n_decode;
	const uint32_t *decode_ctx;
} mdl_batch_t;

/* Breakdown of one iteration (per GPU of the TP group). The roofline takes
 * the larger of its compute side (t_gemm_ns + t_attn_ns) and its memory side
 * (t_weight_ns + t_kv_ns); t_compute_ns and t_memory_ns are the two sides.
 * total_ns = ceil(max(sides) + t_fixed_ns + t_comm_ns + t_overhead_ns). */
typedef struct mdl_iter_cost {
	double flops; /* whole group */
	double bytes; /* per GPU: weights + KV read + KV write */
	double t_compute_ns, t_memory_ns, t_comm_ns, t_overhead_ns;
	double t_gemm_ns;   /* weight GEMMs at their MFU (compute side) */
	double t_attn_ns;   /* prefill attention at its efficiency (compute side) */
	double t_weight_ns; /* weight read at weight_mbu (memory side) */
	double t_kv_ns;     /* KV read and write, states read and written (memory side) */
	double t_fixed_ns;  /* per-layer fixed kernels, elementwise bytes;
	                     * PROFILE: the interpolated operators */
	int64_t total_ns;
} mdl_iter_cost_t;

/* Validates tp (>= 1, divides heads; kv_heads divides by or into tp) and the
 * parameters; copies hw, llm and p. */
int mdl_compute_init(mdl_compute_t *c, const mdl_hw_t *hw, const mdl_llm_t *llm, uint32_t tp,
                     const mdl_compute_params_t *p, err_t *e);
/* Duration of one continuous-batching iteration, >= 1 ns; 0 for an empty
 * batch (no sequence). mdl_iter_cost also fills out (may be NULL) with the
 * breakdown. Pure functions of their arguments. */
int64_t mdl_iter_time_ns(const mdl_compute_t *c, const mdl_batch_t *b);
/* One TP all-reduce of msg bytes as the separated terms cost it (ns; 0 at
 * tp 1): the custom kernel's curve where it is in force, else NCCL's rule. */
double mdl_allreduce_one_ns(const mdl_compute_t *c, double msg);
int64_t mdl_iter_cost(const mdl_compute_t *c, const mdl_batch_t *b, mdl_iter_cost_t *out);
/* Which figure makes the cost of b unrepresentable (infinite, NaN, or
 * >= limit_ns): each hardware or [compute] figure the cost divides by or
 * adds, in turn set to a harmless value (an efficiency to 1, a rate to
 * 1e18/s, a fixed cost to 0), until the cost of b falls under limit_ns.
 * Writes "[section] key: VALUE" of the first that does to why (n bytes);
 * when none does alone, the cost's largest term. Returns b's cost in
 * seconds (a double: may be inf). */
double mdl_cost_blame(const mdl_compute_t *c, const mdl_batch_t *b, double limit_ns, char *why,
                      size_t n);
/* KS_EINPUT naming the figure (mdl_cost_blame) when one iteration of one
 * token, prefill or decode, already costs more than the int64 nanoseconds
 * of simulated time hold: no run on c can finish. */
int mdl_compute_check_finite(const mdl_compute_t *c, err_t *e);
/* An iteration holding only one prefill of n new tokens after `cached`. */
int64_t mdl_prefill_time_ns(const mdl_compute_t *c, uint32_t n, uint32_t cached);
/* An iteration of n_seqs decode sequences, each with ctx tokens in KV. */
int64_t mdl_decode_step_ns(const mdl_compute_t *c, uint32_t n_seqs, uint32_t ctx);
/* out[j], j < steps: mdl_iter_time_ns of a decode-only iteration of n_seqs
 * sequences whose contexts sum to ctx_sum + j x n_seqs (each one token
 * longer per step; for a model with sliding layers, whose cost depends on
 * each context, the contexts split the sum evenly: ctx_sum % n_seqs of
 * them one longer), within 1 ns (certified; the argument is in mdl_decode_run.c),
 * with the terms set by the batch size alone (GEMMs, kernels, all-reduce)
 * computed once: the steps of a decode segment (sim/cluster/cluster.h
 * DECODE_SEGMENT). Equal to the nanosecond where the roofline is max()
 * (roofline_q 0, the single-efficiency roofline) and under the linear model;
 * a q-norm roofline is a Taylor polynomial over pieces of the run, from a
 * few exact evaluations instead of one per step. Pure, allocation-free.
 * Returns the number of full roofline evaluations made (steps when every
 * step is evaluated exactly; each costs two pow() under a q-norm). */
uint32_t mdl_decode_run_ns(const mdl_compute_t *c, uint32_t n_seqs, uint64_t ctx_sum,
                           uint32_t steps, int64_t *out);
/* The same, each step evaluated exactly: mdl_iter_time_ns to the
 * nanosecond (the reference of mdl_decode_run_ns's tests); returns steps. */
uint32_t mdl_decode_run_exact_ns(const mdl_compute_t *c, uint32_t n_seqs, uint64_t ctx_sum,
                                 uint32_t steps, int64_t *out);
/* mdl_decode_run_ns and mdl_decode_run_exact_ns for the sequences' own
 * contexts ctx[0..n_seqs) (at step j each ctx[i] + j). Sliding layers make
 * the step's cost piecewise affine in j, with a corner where a sequence
 * reaches its window: the run is cut there and each piece is a closed form
 * of its own (same bound). Without sliding layers only the sum matters. */
uint32_t mdl_decode_run_seqs_ns(const mdl_compute_t *c, uint32_t n_seqs, const uint32_t *ctx,
                                uint32_t steps, int64_t *out);
uint32_t mdl_decode_run_seqs_exact_ns(const mdl_compute_t *c, uint32_t n_seqs,
                                      const uint32_t *ctx, uint32_t steps, int64_t *out);

#endif

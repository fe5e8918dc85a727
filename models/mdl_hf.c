/* mdl_hf — Hugging Face config.json to an LLM spec. See mdl_hf.h.
 *
 * Parameter counts follow the module shapes of the transformers modeling
 * files the model types name (LlamaAttention/LlamaMLP, Qwen2 q/k/v biases,
 * Qwen3 q/k norms, MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock,
 * DeepseekV2Attention/DeepseekV2MoE, Llama4TextMoe with its shared expert):
 * per layer the attention projections, two RMSNorms of hidden and the MLP
 * (gate, up, down: 3*hidden*I) or the MoE block (router hidden*E, E routed
 * experts and the shared ones), plus the embedding table, the LM head
 * (unless tied) and the final norm.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl_field.h"
#include "models/mdl_hf.h"

#define HF_FILE_MAX (8u << 20) /* config.json files are a few KB (Scout's: 28 KB) */

typedef struct {
	const char *origin;
	const char *pre; /* "" or "text_config." */
	json_t *root, *t;
	mdl_hf_info_t *info;
	err_t *e;
} hf_t;

static int hf_err(hf_t *h, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int hf_err(hf_t *h, const char *field, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return err_set(h->e, KS_EINPUT, "%s: %s%s: %s", h->origin, h->pre, field, why);
}

static void hf_note(hf_t *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hf_note(hf_t *h, const char *fmt, ...)
{
	if (h->info->n_uncosted >= MDL_HF_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->info->uncosted[h->info->n_uncosted++], MDL_HF_NOTE_MAX, fmt, ap);
	va_end(ap);
}

/* t's field, NULL when absent or null */
static json_t *hf_get(hf_t *h, const char *k)
{
	json_t *v = json_object_get(h->t, k);
	return json_is_null(v) ? NULL : v;
}

/* A whole number field: 1 set, 0 absent (def kept), negative error. */
static int hf_u32(hf_t *h, const char *k, int required, uint32_t *out)
{
	json_t *v = hf_get(h, k);
	if (!v) {
		if (required)
			return hf_err(h, k, "missing (required)");
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 4294967295LL)
		return hf_err(h, k, "expected a whole number 0..4294967295");
	*out = (uint32_t)json_integer_value(v);
	return 1;
}

static int hf_bool(hf_t *h, const char *k, int *out)
{
	json_t *v = hf_get(h, k);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return hf_err(h, k, "expected true or false");
	*out = json_is_true(v);
	return 1;
}

static const char *hf_str(hf_t *h, const char *k)
{
	json_t *v = hf_get(h, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int is_type(const char *mt, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(mt, *list))
			return 1;
	return 0;
}

static const char *const known_types[] = {"llama",      "mistral",     "mixtral",   "qwen2",
                                          "qwen2_moe",  "qwen3",       "qwen3_moe", "deepseek_v2",
                                          "deepseek_v3", "llama4_text", "glm_moe_dsa", NULL};

/* Element bytes of a torch dtype name; 0 unknown. */
static uint32_t dtype_size(const char *s)
{
	if (!strcmp(s, "bfloat16") || !strcmp(s, "float16"))
		return 2;
	if (!strcmp(s, "float32"))
		return 4;
	return 0;
}

/* ---- quantization --------------------------------------------------------- */

typedef struct {
	double q;       /* bytes per quantized weight; 0: no quantization */
	int attn_kept;  /* attention projections left at the dtype, all layers */
	int mlp_kept;   /* MLPs / experts left at the dtype */
	int kv_bits;    /* kv_cache_scheme num_bits (0: none) */
} quant_t;

/* Classifies one entry of an ignore / modules_to_not_convert list. */
static void quant_ignore_one(const char *s, uint32_t *attn, int *attn_re, int *mlp)
{
	if (strstr(s, "vision") || strstr(s, "multi_modal"))
		return; /* the vision tower is not costed (named separately) */
	int re = !strncmp(s, "re:", 3);
	if (strstr(s, "self_attn") || strstr(s, "attention")) {
		if (re)
			*attn_re = 1;
		else if (strstr(s, "q_proj") || strstr(s, "q_a_proj") || strstr(s, "wq"))
			(*attn)++;
		else if (!strstr(s, "k_proj") && !strstr(s, "v_proj") && !strstr(s, "o_proj") &&
		         !strstr(s, "kv_") && !strstr(s, "q_b_proj"))
			*attn_re = 1; /* a whole attention module */
	} else if (strstr(s, "expert") || strstr(s, "mlp.") || strstr(s, "down_proj") ||
	           strstr(s, "up_proj") || strstr(s, "gate_proj")) {
		*mlp = 1;
	}
	/* lm_head, routers and gates stay at the dtype as the spec has them */
}

/* compressed-tensors: the groups' one weight width and the KV cache's. */
static int quant_groups(hf_t *h, quant_t *q)
{
	json_t *groups = hf_get(h, "config_groups");
	const char *gk;
	json_t *g;
	if (!json_is_object(groups) || !json_object_size(groups))
		return hf_err(h, "config_groups", "missing or empty (required with "
		                                  "compressed-tensors)");
	json_object_foreach(groups, gk, g)
	{
		json_t *w = json_object_get(g, "weights");
		json_t *nb = json_object_get(w, "num_bits");
		json_t *tg = json_object_get(g, "targets");
		char path[96];
		snprintf(path, sizeof path, "config_groups.%.40s.weights.num_bits", gk);
		if (!json_is_integer(nb) || json_integer_value(nb) < 1 || json_integer_value(nb) > 16)
			return hf_err(h, path, "expected a whole number of bits 1..16");
		double b = (double)json_integer_value(nb) / 8;
		if (q->q && q->q != b)
			return hf_err(h, path, "groups of different widths are not supported");
		q->q = b;
		size_t i;
		json_t *x;
		json_array_foreach(tg, i, x)
		{
			if (!json_is_string(x) || strcmp(json_string_value(x), "Linear")) {
				snprintf(path, sizeof path, "config_groups.%.40s.targets", gk);
				return hf_err(h, path, "only [\"Linear\"] is supported (every linear "
				                       "layer not ignored)");
			}
		}
	}
	json_t *kv = hf_get(h, "kv_cache_scheme");
	if (kv) {
		json_t *nb = json_object_get(kv, "num_bits");
		if (!json_is_integer(nb) || json_integer_value(nb) % 8 || json_integer_value(nb) < 8)
			return hf_err(h, "kv_cache_scheme.num_bits", "expected 8 or 16");
		q->kv_bits = (int)json_integer_value(nb);
	}
	return 0;
}

/* quant_method: the bytes of a quantized weight (and of a KV element). */
static int quant_method(hf_t *h, quant_t *q)
{
	int rc;
	const char *m = hf_str(h, "quant_method");
	if (!m)
		return hf_err(h, "quant_method", "missing (required in quantization_config)");
	if (!strcmp(m, "fp8")) {
		q->q = 1; /* e4m3 weights, block scales not counted */
	} else if (!strcmp(m, "awq") || !strcmp(m, "gptq")) {
		uint32_t bits = 0;
		if ((rc = hf_u32(h, "bits", 1, &bits)) < 0)
			return rc;
		if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
			return hf_err(h, "bits", "%u: expected 2, 3, 4 or 8", bits);
		q->q = bits / 8.0;
	} else if (!strcmp(m, "compressed-tensors")) {
		return quant_groups(h, q);
	} else {
		return hf_err(h, "quant_method",
		              "'%.40s' is not supported (known: fp8, compressed-tensors, awq, gptq)",
		              m);
	}
	return 0;
}

/* The ignore lists: whether attention (in every layer) and the MLPs stay
 * at the dtype. */
static int quant_kept(hf_t *h, uint32_t layers, quant_t *q)
{
	const char *lists[] = {"ignore", "modules_to_not_convert", "ignored_layers"};
	uint32_t attn = 0;
	int attn_re = 0;
	for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
		json_t *a = hf_get(h, lists[l]), *x;
		size_t i;
		if (a && !json_is_array(a))
			return hf_err(h, lists[l], "expected a list of module names");
		json_array_foreach(a, i, x)
		{
			if (json_is_string(x))
				quant_ignore_one(json_string_value(x), &attn, &attn_re, &q->mlp_kept);
		}
		if (attn && attn < layers && !attn_re)
			return hf_err(h, lists[l],
			              "attention left unquantized in %u of %u layers: per-layer widths "
			              "are not supported",
			              attn, layers);
	}
	q->attn_kept = attn_re || attn >= layers;
	return 0;
}

static int quant_read(hf_t *h, json_t *qc, uint32_t layers, quant_t *q)
{
	const char *saved = h->pre;
	json_t *saved_t = h->t;
	h->pre = "quantization_config.";
	h->t = qc;
	memset(q, 0, sizeof *q);
	int rc = quant_method(h, q);
	if (!rc)
		rc = quant_kept(h, layers, q);
	h->pre = saved;
	h->t = saved_t;
	return rc < 0 ? rc : 0;
}

/* ---- the reader ------------------------------------------------------------ */

static void hf_name(const char *origin, char *name)
{
	const char *b = strrchr(origin, '/');
	const char *s = b ? b + 1 : origin;
	size_t n = strlen(s);
	if (n > 5 && !strcmp(s + n - 5, ".json"))
		n -= 5;
	if (n == 6 && !strncmp(s, "config", 6) && b && b > origin) {
		/* .../NAME/config.json: the folder's name */
		const char *p = b;
		while (p > origin && p[-1] != '/')
			p--;
		s = p;
		n = (size_t)(b - p);
	}
	if (n >= MDL_NAME_MAX)
		n = MDL_NAME_MAX - 1;
	memcpy(name, s, n);
	name[n] = '\0';
	/* a name a spec file could not hold back (mdl_llm_write) */
	if (n == 0 || cfg_str_unstorable(name))
		snprintf(name, MDL_NAME_MAX, "hf-config");
}

/* What hf_read gathers from the config, step by step, for the spec. */
typedef struct {
	char mtype[48]; /* model_type ("llama4" read as "llama4_text") */
	uint32_t L, hid, H, KV, hd, I, V;
	uint32_t dbytes; /* element bytes of torch_dtype */
	int tied, attn_bias, mlp_bias;
	uint32_t window; /* every layer slides (Mistral, Mixtral); 0: none */
	int mla;
	double attn; /* parameters of one layer's attention */
	uint32_t latent, rope;
	uint32_t E, k, Ie, shared, dense; /* experts, MoE widths, dense layers */
	double total, active;             /* parameters */
	double wb, xw;                    /* weight bytes: attention and rest, experts */
	uint32_t kvb;                     /* KV cache element bytes */
} hf_shape_t;

/* The text config (text_config, else the root) and model_type. */
static int hf_model_type(hf_t *h, hf_shape_t *s)
{
	json_t *tc = json_object_get(h->root, "text_config");
	if (tc) {
		if (!json_is_object(tc))
			return hf_err(h, "text_config", "expected an object");
		h->t = tc;
		h->pre = "text_config.";
	}
	const char *mt = hf_str(h, "model_type");
	if (!mt && tc) { /* the root's names the checkpoint */
		h->t = h->root;
		h->pre = "";
		mt = hf_str(h, "model_type");
		h->t = tc;
		h->pre = "text_config.";
	}
	if (!mt)
		return hf_err(h, "model_type", "missing (required: it names the architecture)");
	snprintf(s->mtype, sizeof s->mtype, "%s", mt);
	if (!strcmp(s->mtype, "llama4"))
		snprintf(s->mtype, sizeof s->mtype, "llama4_text");
	if (!is_type(s->mtype, known_types))
		hf_note(h, "model_type '%s': not an architecture this reader knows; read as a "
		           "Llama-style decoder (attention, SwiGLU MLP), counts unchecked",
		        s->mtype);
	return 0;
}

/* Layers, widths, heads and vocabulary. */
static int hf_dims(hf_t *h, hf_shape_t *s)
{
	int rc;
	if ((rc = hf_u32(h, "num_hidden_layers", 1, &s->L)) < 0 ||
	    (rc = hf_u32(h, "hidden_size", 1, &s->hid)) < 0 ||
	    (rc = hf_u32(h, "num_attention_heads", 1, &s->H)) < 0 ||
	    (rc = hf_u32(h, "vocab_size", 1, &s->V)) < 0 ||
	    (rc = hf_u32(h, "intermediate_size", 1, &s->I)) < 0)
		return rc;
	if (!s->L || !s->hid || !s->H || !s->V)
		return hf_err(h, !s->L ? "num_hidden_layers" : !s->hid ? "hidden_size"
		                                              : !s->H  ? "num_attention_heads"
		                                                       : "vocab_size",
		              "must be greater than 0");
	s->KV = s->H; /* HF: num_key_value_heads defaults to the heads (MHA) */
	if ((rc = hf_u32(h, "num_key_value_heads", 0, &s->KV)) < 0)
		return rc;
	if (!s->KV || s->H % s->KV)
		return hf_err(h, "num_key_value_heads", "%u must divide num_attention_heads %u",
		              s->KV, s->H);
	s->hd = s->hid / s->H; /* HF's default; Mistral-Nemo and Qwen3 give head_dim */
	if ((rc = hf_u32(h, "head_dim", 0, &s->hd)) < 0)
		return rc;
	if (!s->hd)
		return hf_err(h, "head_dim", "must be greater than 0");
	return 0;
}

/* dtype: the text config's, else the root's */
static int hf_dtype(hf_t *h, hf_shape_t *s)
{
	const char *dt = hf_str(h, "torch_dtype");
	if (!dt)
		dt = hf_str(h, "dtype");
	if (!dt) {
		json_t *r = json_object_get(h->root, "torch_dtype");
		if (!json_is_string(r))
			r = json_object_get(h->root, "dtype");
		dt = json_is_string(r) ? json_string_value(r) : NULL;
	}
	if (!dt)
		return hf_err(h, "torch_dtype", "missing (required: the weights' and KV cache's "
		                                "element type)");
	s->dbytes = dtype_size(dt);
	if (!s->dbytes)
		return hf_err(h, "torch_dtype", "'%.40s': expected bfloat16, float16 or float32", dt);
	return 0;
}

/* Tied embeddings, biases, and which layers slide (only all or none). */
static int hf_flags(hf_t *h, hf_shape_t *s)
{
	int rc, use_sw = 0;
	if ((rc = hf_bool(h, "tie_word_embeddings", &s->tied)) < 0 ||
	    (rc = hf_bool(h, "attention_bias", &s->attn_bias)) < 0 ||
	    (rc = hf_bool(h, "mlp_bias", &s->mlp_bias)) < 0 ||
	    (rc = hf_bool(h, "use_sliding_window", &use_sw)) < 0)
		return rc;
	if (use_sw)
		return hf_err(h, "use_sliding_window",
		              "true: per-layer sliding windows (max_window_layers) are not supported");
	json_t *lt = hf_get(h, "layer_types"), *x;
	size_t i;
	json_array_foreach(lt, i, x)
	{
		if (!json_is_string(x) || strcmp(json_string_value(x), "full_attention"))
			return hf_err(h, "layer_types", "entry %zu is not full_attention: per-layer "
			                                "kinds from a config.json are not supported "
			                                "(write a spec file with layer_kind)",
			              i);
	}
	json_t *sw = hf_get(h, "sliding_window");
	if (sw) {
		if (!json_is_integer(sw) || json_integer_value(sw) < 1 ||
		    json_integer_value(sw) > 4294967295LL)
			return hf_err(h, "sliding_window", "expected a whole number of tokens or null");
		if (!strcmp(s->mtype, "mistral") || !strcmp(s->mtype, "mixtral"))
			s->window = (uint32_t)json_integer_value(sw); /* every layer slides */
		else if (strncmp(s->mtype, "qwen", 4))
			return hf_err(h, "sliding_window", "set for model_type '%s': which layers slide "
			                                   "is not known (write a spec file)",
			              s->mtype);
		/* Qwen: used only with use_sliding_window (refused above) */
	}
	return 0;
}

/* ---- attention ---- */
static int hf_attention(hf_t *h, hf_shape_t *s)
{
	int rc;
	uint32_t H = s->H, KV = s->KV, hd = s->hd, hid = s->hid;
	s->mla = hf_get(h, "kv_lora_rank") != NULL;
	if (s->mla) {
		uint32_t ql = 0, nope = 0, vd = 0, latent = 0, rope = 0;
		if ((rc = hf_u32(h, "kv_lora_rank", 1, &latent)) < 0 ||
		    (rc = hf_u32(h, "qk_rope_head_dim", 1, &rope)) < 0 ||
		    (rc = hf_u32(h, "qk_nope_head_dim", 1, &nope)) < 0 ||
		    (rc = hf_u32(h, "v_head_dim", 1, &vd)) < 0 || (rc = hf_u32(h, "q_lora_rank", 0, &ql)) < 0)
			return rc;
		s->latent = latent;
		s->rope = rope;
		/* DeepSeek-V2 (arXiv:2405.04434) sec. 2.1.2; DeepseekV2Attention:
		 * q (direct, or q_a + norm + q_b), kv_a_proj_with_mqa, its norm,
		 * kv_b_proj, o_proj */
		double qk = (double)nope + rope;
		double q = ql ? (double)hid * ql + ql + (double)ql * H * qk : (double)hid * H * qk;
		s->attn = q + (double)hid * (latent + rope) + latent +
		          (double)latent * H * (nope + vd) + (double)H * vd * hid;
		/* the cost model's one MLA head_dim: (nope + v)/2 gives the exact
		 * prefill pair FLOPs 2H(nope + rope + v) and up-projection */
		s->hd = (nope + vd) / 2;
		if ((nope + vd) % 2)
			hf_note(h, "MLA qk_nope_head_dim %u + v_head_dim %u odd: head_dim %u rounds "
			           "their mean down",
			        nope, vd, s->hd);
		s->KV = H;
	} else {
		double attn = (double)hid * H * hd + 2.0 * hid * KV * hd + (double)H * hd * hid;
		if (!strncmp(s->mtype, "qwen2", 5)) /* Qwen2Attention: bias on q, k, v */
			attn += ((double)H + 2.0 * KV) * hd;
		if (s->attn_bias) /* LlamaAttention: q, k, v and o biases */
			attn += ((double)H + 2.0 * KV) * hd + hid;
		if (!strncmp(s->mtype, "qwen3", 5)) /* Qwen3Attention: q_norm, k_norm */
			attn += 2.0 * hd;
		s->attn = attn;
	}
	if (h->info)
		h->info->params_attn = s->attn * s->L;
	return 0;
}

/* Which layers are MoE (transformers' own rules per family): their count,
 * *n, or an error naming ek (the experts' key) when there are none. */
static int hf_moe_layers(hf_t *h, const hf_shape_t *s, const char *ek, uint32_t *n)
{
	int rc;
	uint32_t first_dense = 0, freq = 1, step = 1, sparse_step = 1;
	if ((rc = hf_u32(h, "first_k_dense_replace", 0, &first_dense)) < 0 ||
	    (rc = hf_u32(h, "moe_layer_freq", 0, &freq)) < 0 ||
	    (rc = hf_u32(h, "interleave_moe_layer_step", 0, &step)) < 0 ||
	    (rc = hf_u32(h, "decoder_sparse_step", 0, &sparse_step)) < 0)
		return rc;
	if (!freq || !step || !sparse_step)
		return hf_err(h, !freq ? "moe_layer_freq" : !step ? "interleave_moe_layer_step"
		                                                   : "decoder_sparse_step",
		              "must be greater than 0");
	json_t *only = hf_get(h, "mlp_only_layers"), *x;
	size_t i;
	uint32_t moe_layers = 0;
	for (uint32_t l = 0; s->E && l < s->L; l++) {
		int moe = l >= first_dense && l % freq == 0 && (l + 1) % step == 0 &&
		          (l + 1) % sparse_step == 0;
		json_array_foreach(only, i, x)
		{
			if (json_is_integer(x) && json_integer_value(x) == (json_int_t)l)
				moe = 0;
		}
		moe_layers += (uint32_t)moe;
	}
	if (s->E && !moe_layers)
		return hf_err(h, ek, "%u experts but no layer is an MoE layer", s->E);
	*n = moe_layers;
	return 0;
}

/* ---- MLP and MoE ---- */
static int hf_mlp(hf_t *h, hf_shape_t *s)
{
	int rc;
	uint32_t E = 0, k = 0, Ie = s->I, Id = s->I, shared = 0, hid = s->hid, L = s->L;
	const char *ek = hf_get(h, "num_local_experts") ? "num_local_experts"
	                 : hf_get(h, "num_experts")     ? "num_experts"
	                                                : "n_routed_experts";
	if ((rc = hf_u32(h, ek, 0, &E)) < 0)
		return rc;
	if (E) {
		if ((rc = hf_u32(h, "num_experts_per_tok", 1, &k)) < 0 ||
		    (rc = hf_u32(h, "moe_intermediate_size", 0, &Ie)) < 0 ||
		    (rc = hf_u32(h, "intermediate_size_mlp", 0, &Id)) < 0)
			return rc;
		if (!k || k >= E)
			return hf_err(h, "num_experts_per_tok", "%u: must be in [1, %s - 1]", k, ek);
		uint32_t ns = 0;
		if ((rc = hf_u32(h, "n_shared_experts", 0, &ns)) < 0)
			return rc;
		shared = ns * Ie; /* DeepseekV2MoE: one MLP of n_shared * moe_intermediate */
		if (!strcmp(s->mtype, "llama4_text"))
			shared = Ie; /* Llama4TextMoe: one shared expert of intermediate_size */
		if ((rc = hf_u32(h, "shared_expert_intermediate_size", 0, &shared)) < 0)
			return rc; /* Qwen2MoE */
	}
	s->E = E;
	uint32_t moe_layers = 0;
	if ((rc = hf_moe_layers(h, s, ek, &moe_layers)) < 0)
		return rc;
	double mlp_bias_n = s->mlp_bias ? 2.0 * Id + hid : 0;
	double dense_mlp = 3.0 * hid * Id + mlp_bias_n;
	double expert = 3.0 * hid * Ie;
	double moe_fixed = (double)hid * E + 3.0 * hid * shared; /* router, shared experts */
	if (!strcmp(s->mtype, "qwen2_moe") && shared)
		moe_fixed += hid; /* shared_expert_gate */
	uint32_t dense = L - moe_layers;
	double layer = s->attn + 2.0 * hid; /* input and post-attention RMSNorms */
	double total = L * layer + dense * dense_mlp + moe_layers * (moe_fixed + E * expert);
	double active = L * layer + dense * dense_mlp + moe_layers * (moe_fixed + k * expert);
	double emb = (double)s->V * hid * (s->tied ? 1 : 2) + hid; /* + the final norm */
	s->total = total + emb;
	s->active = active + emb;
	s->k = k;
	s->Ie = Ie;
	s->shared = shared;
	s->dense = dense;
	return 0;
}

/* ---- weight widths ---- */
static int hf_widths(hf_t *h, hf_shape_t *s)
{
	int rc;
	uint32_t dbytes = s->dbytes;
	quant_t q = {0};
	json_t *qc = json_object_get(h->root, "quantization_config");
	if (!qc)
		qc = json_object_get(h->t, "quantization_config");
	if (qc && !json_is_null(qc)) {
		if (!json_is_object(qc))
			return hf_err(h, "quantization_config", "expected an object");
		if ((rc = quant_read(h, qc, s->L, &q)) < 0)
			return rc;
	}
	double wb = dbytes, xw = dbytes;
	if (q.q > 0) {
		wb = q.attn_kept ? dbytes : q.q;
		xw = q.mlp_kept ? dbytes : q.q;
		if (!s->E && wb != xw)
			return hf_err(h, "quantization_config",
			              "attention and MLP at different widths in a dense model are not "
			              "supported");
		if (s->E && s->dense && wb != xw)
			hf_note(h, "dense MLP layers (%u): quantized as the experts but counted at the "
			           "attention's width (%g bytes)",
			        s->dense, wb);
	}
	s->wb = wb;
	s->xw = xw;
	s->kvb = q.kv_bits ? (uint32_t)q.kv_bits / 8 : dbytes;
	return 0;
}

/* ---- parts kvsim does not cost ---- */
static int hf_uncosted(hf_t *h, hf_shape_t *s)
{
	int rc;
	uint32_t L = s->L;
	json_t *vc = json_object_get(h->root, "vision_config");
	if (json_is_object(vc)) {
		json_t *vl = json_object_get(vc, "num_hidden_layers");
		json_t *vh = json_object_get(vc, "hidden_size");
		hf_note(h, "vision tower (vision_config: %lld layers of hidden %lld): not costed, "
		           "its parameters not counted",
		        (long long)json_integer_value(vl), (long long)json_integer_value(vh));
	}
	if (json_is_object(json_object_get(h->root, "audio_config")))
		hf_note(h, "audio tower (audio_config): not costed, its parameters not counted");
	uint32_t mtp = 0;
	if ((rc = hf_u32(h, "num_nextn_predict_layers", 0, &mtp)) < 0)
		return rc;
	if (mtp)
		hf_note(h, "multi-token prediction (num_nextn_predict_layers %u): not costed, its "
		           "parameters not counted",
		        mtp);
	uint32_t chunk = 0;
	if ((rc = hf_u32(h, "attention_chunk_size", 0, &chunk)) < 0)
		return rc;
	if (chunk) {
		/* Llama4TextConfig: no_rope_layers empty means every 4th layer is
		 * NoPE global attention, the others chunked */
		json_t *nr = hf_get(h, "no_rope_layers"), *x;
		size_t i;
		uint32_t chunked = 0;
		if (json_array_size(nr)) {
			json_array_foreach(nr, i, x) chunked += json_is_integer(x) && json_integer_value(x);
		} else {
			chunked = L - L / 4;
		}
		hf_note(h, "chunked local attention (attention_chunk_size %u on %u of %u layers): "
		           "costed as full attention over the whole context",
		        chunk, chunked, L);
	}
	uint32_t topk = 0;
	if ((rc = hf_u32(h, "index_topk", 0, &topk)) < 0)
		return rc;
	if (topk)
		hf_note(h, "indexed sparse attention (index_topk %u): costed as dense attention; "
		           "the indexer's weights and key cache not counted",
		        topk);
	return 0;
}

/* ---- the spec ---- */
static int hf_spec(hf_t *h, const hf_shape_t *sh, mdl_llm_t *m)
{
	int rc;
	uint32_t E = sh->E;
	mdl_llm_t s;
	memset(&s, 0, sizeof s);
	hf_name(h->origin, s.name);
	s.layers = sh->L;
	s.hidden = sh->hid;
	s.heads = sh->H;
	s.kv_heads = sh->KV;
	s.head_dim = sh->hd;
	s.intermediate = E ? sh->Ie : sh->I;
	s.vocab = sh->V;
	s.dtype_bytes = sh->kvb;
	s.weight_bytes = sh->wb;
	s.embed_weight_bytes = sh->dbytes; /* embedding and LM head stay unquantized */
	if (E) {
		s.expert_weight_bytes = sh->xw;
		s.experts = E;
		s.experts_active = sh->k;
		s.shared_intermediate = sh->shared;
		s.dense_layers = sh->dense;
	}
	s.params_total = (uint64_t)sh->total;
	s.params_active = (uint64_t)sh->active;
	s.attention = sh->mla ? MDL_ATTN_MLA : MDL_ATTN_GQA;
	s.mla_latent = sh->latent;
	s.mla_rope = sh->rope;
	s.tied_embeddings = (uint32_t)sh->tied;
	if (sh->window) {
		s.layer_kind = MDL_LAYER_SLIDING;
		s.window = sh->window;
	}
	if ((rc = mdl_llm_check(&s, h->origin, h->e)))
		return rc;
	*m = s;
	return 0;
}

static int hf_read(hf_t *h, mdl_llm_t *m)
{
	/* each step reads its part into s, in this order: the first field at
	 * fault is the one named */
	static int (*const step[])(hf_t *, hf_shape_t *) = {
	    hf_model_type, hf_dims, hf_dtype, hf_flags, hf_attention, hf_mlp, hf_widths, hf_uncosted};
	hf_shape_t s;
	memset(&s, 0, sizeof s);
	for (size_t i = 0; i < sizeof step / sizeof step[0]; i++) {
		int rc = step[i](h, &s);
		if (rc)
			return rc;
	}
	return hf_spec(h, &s, m);
}

int mdl_hf_parse(const char *origin, const char *text, size_t len, mdl_llm_t *llm,
                 mdl_hf_info_t *info, err_t *e)
{
	mdl_hf_info_t local;
	mdl_hf_info_t *inf = info ? info : &local;
	memset(inf, 0, sizeof *inf);
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return err_set(e, KS_EINPUT, "%s:%d: %s", origin, je.line, je.text);
	hf_t h = {origin, "", root, root, inf, e};
	int rc = json_is_object(root) ? hf_read(&h, llm)
	                              : err_set(e, KS_EINPUT, "%s: (root): expected a JSON object",
	                                        origin);
	json_decref(root);
	if (rc)
		memset(inf, 0, sizeof *inf);
	return rc;
}

int mdl_hf_load_file(const char *path, mdl_llm_t *llm, mdl_hf_info_t *info, err_t *e)
{
	char *text = NULL;
	size_t n = 0;
	int rc = mdl_read_small_file(path, HF_FILE_MAX, "config.json", &text, &n, e);
	if (!rc)
		rc = mdl_hf_parse(path, text, n, llm, info, e);
	free(text);
	return rc;
}

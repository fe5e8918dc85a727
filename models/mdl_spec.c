/* mdl_spec — strict INI parsing of hardware and LLM specs (their keys,
 * values and files), writing them back, and KV sizes. See mdl.h. The
 * built-in specs are in mdl_builtin.c, the cross-field checks in
 * mdl_spec_check.c, the weight bytes in mdl_weights.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_field.h"
#include "models/mdl_int.h"

#define SPEC_FILE_MAX (1u << 20) /* a spec is a few hundred bytes */

/* The rows' ranges, as the override keys have always had them: a rate or
 * a byte count is a float key, a count an int key within uint32, a latency
 * an int key below 2^53 (doubles hold whole numbers exactly up to there). */
#define ANY_NUMBER 1e30
#define U32_TOP 4294967295.0
#define NS_TOP 9e15
#define FROM_SPEC " (-1: from the spec)"

/* The spec file's key of a member of kind K: a whole number (e-notation
 * allowed: "80e9") for an integer member, up to what the member holds
 * exactly (2^53 for 64 bits, as doubles hold whole numbers up to there), a
 * finite number for a double; never negative. */
#define FILE_TYPE_U32 CFG_INT
#define FILE_TYPE_U64 CFG_INT
#define FILE_TYPE_I64 CFG_INT
#define FILE_TYPE_DOUBLE CFG_FLOAT
#define FILE_TOP_U32 U32_TOP
#define FILE_TOP_U64 9007199254740992.0
#define FILE_TOP_I64 9007199254740992.0
#define FILE_TOP_DOUBLE ANY_NUMBER
#define FILE_TOP(kind, hi) ((hi) < FILE_TOP_##kind ? (hi) : FILE_TOP_##kind)
#define REQ(req) ((req) ? INI_REQUIRED : 0)

/* A number row: the override key [sec] nm (type, range [-1, hi], unit,
 * doc) filling mdl_over_t's v, and the spec file's key [sec] nm (range
 * [0, hi]) setting the member (kind) of type. */
#define NUM_KEY(sec, type, nm, ktype, hi, unit, doc, kind, member, req)                            \
	{{{sec, nm, ktype, "-1", -1, hi, NULL, unit, doc FROM_SPEC, NULL},                         \
	  CFG_AT(DOUBLE, mdl_over_t, v)},                                                          \
	 {{{sec, nm, FILE_TYPE_##kind, "0", 0, FILE_TOP(kind, hi), NULL, unit, doc, NULL},         \
	   CFG_AT(kind, type, member)},                                                            \
	  REQ(req) | INI_WHOLE_E,                                                                  \
	  0,                                                                                       \
	  NULL}}
#define HW(nm, ktype, hi, unit, doc, kind, member, req)                                            \
	NUM_KEY("gpu", mdl_hw_t, nm, ktype, hi, unit, doc, kind, member, req)
#define LLM(nm, ktype, hi, unit, doc, kind, member, req)                                           \
	NUM_KEY("model", mdl_llm_t, nm, ktype, hi, unit, doc, kind, member, req)
/* An enum row: the override's map is the spec's with "spec" first, which
 * its doc names (spec_doc). */
#define ENUM_KEY(nm, doc, spec_doc, member, over_map, req)                                         \
	{{{"model", nm, CFG_ENUM, "spec", 0, 0, NULL, "", doc spec_doc, NULL},                     \
	  CFG_AT_ENUM(mdl_over_t, choice, over_map)},                                              \
	 {{{"model", nm, CFG_ENUM, "", 0, 0, NULL, "", doc, NULL},                                 \
	   CFG_AT_ENUM(mdl_llm_t, member, &(over_map)[1])},                                        \
	  REQ(req),                                                                                \
	  0,                                                                                       \
	  NULL}}
/* The spec's own name: a spec-file key only ([gpu] name and [model] name
 * of a config pick a built-in spec instead, mdl_cfg.c), into the struct's
 * char[MDL_NAME_MAX]. */
#define NAME_KEY(sec, type)                                                                        \
	{{{sec, "name", CFG_STR, "", 0, 0, NULL, "", "the spec's name", NULL}, CFG_NOWHERE},       \
	 {{{sec, "name", CFG_STR, "", 0, 0, NULL, "", "the spec's name", NULL},                    \
	   {CFG_F_NONE, offsetof(type, name), NULL, NULL, NULL}},                                  \
	  INI_REQUIRED | INI_NONEMPTY,                                                             \
	  MDL_NAME_MAX,                                                                            \
	  NULL}}

_Static_assert(sizeof(mdl_attn_t) == sizeof(int), "an enum field is an int (cfg.h)");
/* The override's choices; a spec file takes the same names less "spec". */
static const cfg_enum_t attn_over_map[] = {
    {"spec", MDL_OVER_SPEC}, {"gqa", MDL_ATTN_GQA}, {"mla", MDL_ATTN_MLA}, {NULL, 0}};
_Static_assert(sizeof(mdl_layer_t) == sizeof(int), "an enum field is an int (cfg.h)");
static const cfg_enum_t layer_over_map[] = {{"spec", MDL_OVER_SPEC},
                                            {"full", MDL_LAYER_FULL},
                                            {"sliding", MDL_LAYER_SLIDING},
                                            {"state", MDL_LAYER_STATE},
                                            {NULL, 0}};

const mdl_spec_key_t mdl_hw_keys[] = {
    NAME_KEY("gpu", mdl_hw_t),
    HW("hbm_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "HBM capacity per GPU", U64, hbm_bytes, 1),
    HW("hbm_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "HBM bandwidth", DOUBLE, hbm_bw, 1),
    HW("flops_bf16", CFG_FLOAT, ANY_NUMBER, "FLOP/s", "dense BF16 tensor throughput", DOUBLE,
       flops_bf16, 1),
    HW("flops_fp8", CFG_FLOAT, ANY_NUMBER, "FLOP/s", "dense FP8 tensor throughput (0: no FP8)",
       DOUBLE, flops_fp8, 0),
    HW("nvlink_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "NVLink per GPU per direction (0: none)",
       DOUBLE, nvlink_bw, 1),
    HW("nvlink_lat_ns", CFG_INT, NS_TOP, "ns", "NVLink copy latency", I64, nvlink_lat_ns, 1),
    HW("pcie_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "PCIe GPU<->host per direction", DOUBLE,
       pcie_bw, 1),
    HW("pcie_lat_ns", CFG_INT, NS_TOP, "ns", "PCIe copy latency", I64, pcie_lat_ns, 1),
    HW("nic_bw", CFG_FLOAT, ANY_NUMBER, "bytes/s", "NIC per GPU per direction", DOUBLE, nic_bw,
       1),
    HW("nic_lat_ns", CFG_INT, NS_TOP, "ns", "NIC transfer latency", I64, nic_lat_ns, 1),
    HW("host_dram_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "host DRAM per node", U64,
       host_dram_bytes, 0),
};
const size_t mdl_hw_keys_n = sizeof mdl_hw_keys / sizeof mdl_hw_keys[0];

const mdl_spec_key_t mdl_llm_keys[] = {
    NAME_KEY("model", mdl_llm_t),
    LLM("layers", CFG_INT, U32_TOP, "", "transformer layers", U32, layers, 1),
    LLM("hidden", CFG_INT, U32_TOP, "", "hidden size", U32, hidden, 1),
    LLM("heads", CFG_INT, U32_TOP, "", "attention (query) heads", U32, heads, 1),
    LLM("kv_heads", CFG_INT, U32_TOP, "", "KV heads (GQA)", U32, kv_heads, 1),
    LLM("head_dim", CFG_INT, U32_TOP, "", "head dimension (MLA: v/qk_nope head dim)", U32,
        head_dim, 1),
    LLM("intermediate", CFG_INT, U32_TOP, "", "MLP intermediate size", U32, intermediate, 1),
    LLM("vocab", CFG_INT, U32_TOP, "tokens", "vocabulary size", U32, vocab, 1),
    LLM("dtype_bytes", CFG_INT, U32_TOP, "bytes", "KV cache and activation element size", U32,
        dtype_bytes, 1),
    LLM("weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes", "bytes per weight (0.5 for 4-bit)",
        DOUBLE, weight_bytes, 0),
    LLM("params_total", CFG_FLOAT, ANY_NUMBER, "", "parameters, all experts", U64, params_total,
        1),
    LLM("params_active", CFG_FLOAT, ANY_NUMBER, "", "parameters used per token", U64,
        params_active, 1),
    ENUM_KEY("attention", "attention kind", " (spec: from the spec)", attention, attn_over_map, 1),
    LLM("mla_latent", CFG_INT, U32_TOP, "", "MLA KV latent rank (kv_lora_rank)", U32, mla_latent,
        0),
    LLM("mla_rope", CFG_INT, U32_TOP, "", "MLA decoupled rope key dims", U32, mla_rope, 0),
    LLM("experts", CFG_INT, U32_TOP, "", "routed experts per MoE layer (0: dense)", U32, experts,
        0),
    LLM("experts_active", CFG_INT, U32_TOP, "", "routed experts per token", U32, experts_active,
        0),
    LLM("tied_embeddings", CFG_INT, U32_TOP, "", "1 if embedding and LM head share weights", U32,
        tied_embeddings, 0),
    /* Per-component widths and the shared experts (mdl.h): optional, a
     * spec without them stores every weight at weight_bytes. */
    LLM("expert_weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes",
        "bytes per weight of the routed and shared experts (0: weight_bytes; MoE only)", DOUBLE,
        expert_weight_bytes, 0),
    LLM("embed_weight_bytes", CFG_FLOAT, ANY_NUMBER, "bytes",
        "bytes per weight of the embedding table and LM head (0: weight_bytes)", DOUBLE,
        embed_weight_bytes, 0),
    LLM("shared_intermediate", CFG_INT, U32_TOP, "",
        "summed intermediate size of the shared experts of an MoE layer (MoE only)", U32,
        shared_intermediate, 0),
    LLM("dense_layers", CFG_INT, U32_TOP, "layers",
        "layers with a dense MLP instead of experts (MoE only)", U32, dense_layers, 0),
    /* Per-layer KV kinds: optional, a spec without them is all full
     * attention (each shipped spec cites its model's config.json). */
    ENUM_KEY("layer_kind",
             "kind of the layers that are not full attention: full (none), sliding (window), "
             "state (fixed state per sequence)",
             "; spec: from the spec", layer_kind, layer_over_map, 0),
    LLM("full_period", CFG_INT, U32_TOP, "layers",
        "layer i is full attention iff i % full_period == full_offset (0: no full layer; "
        "with layer_kind != full)",
        U32, full_period, 0),
    LLM("full_offset", CFG_INT, U32_TOP, "layers", "offset of the full layers (< full_period)", U32,
        full_offset, 0),
    LLM("window", CFG_INT, U32_TOP, "tokens", "sliding-window size (layer_kind = sliding)", U32,
        window, 0),
    LLM("state_conv_dim", CFG_INT, U32_TOP, "", "state layer: conv channels", U32, state_conv_dim,
        0),
    LLM("state_conv_kernel", CFG_INT, U32_TOP, "", "state layer: conv kernel width", U32,
        state_conv_kernel, 0),
    LLM("state_heads", CFG_INT, U32_TOP, "", "state layer: SSM state heads", U32, state_heads, 0),
    LLM("state_head_dim", CFG_INT, U32_TOP, "", "state layer: SSM head dimension", U32,
        state_head_dim, 0),
    LLM("state_dim", CFG_INT, U32_TOP, "", "state layer: SSM state size per head channel", U32,
        state_dim, 0),
    LLM("state_dtype_bytes", CFG_INT, U32_TOP, "bytes", "state layer: SSM state element size", U32,
        state_dtype_bytes, 0),
};
const size_t mdl_llm_keys_n = sizeof mdl_llm_keys / sizeof mdl_llm_keys[0];
_Static_assert(sizeof mdl_hw_keys / sizeof mdl_hw_keys[0] <= MDL_SPEC_KEYS_MAX, "seen[] size");
_Static_assert(sizeof mdl_llm_keys / sizeof mdl_llm_keys[0] <= MDL_SPEC_KEYS_MAX, "seen[] size");
#undef HW
#undef LLM
#undef NUM_KEY
#undef ENUM_KEY
#undef NAME_KEY
#undef REQ
#undef FILE_TOP

/* ---- overrides ------------------------------------------------------------ */

int mdl_spec_set_number(const mdl_spec_key_t *k, void *dst, double v, const char **why)
{
	const cfg_field_t *at = &k->file.t.at;
	char *p = (char *)dst + at->off;
	if (v < 0) {
		*why = "must not be negative";
		return -1;
	}
	if (at->kind != CFG_F_DOUBLE && v != floor(v)) {
		*why = "must be an integer";
		return -1;
	}
	switch (at->kind) {
	case CFG_F_DOUBLE:
		*(double *)p = v;
		return 0;
	case CFG_F_U32:
		if (v > 4294967295.0)
			break;
		*(uint32_t *)p = (uint32_t)v;
		return 0;
	case CFG_F_U64:
		/* doubles are exact integers up to 2^53, far above any spec value */
		if (v > 9007199254740992.0)
			break;
		*(uint64_t *)p = (uint64_t)v;
		return 0;
	case CFG_F_I64:
		if (v > 9007199254740992.0)
			break;
		*(int64_t *)p = (int64_t)v;
		return 0;
	default:
		*why = "not a numeric field";
		return -1;
	}
	*why = "number out of range";
	return -1;
}

/* The name of an enum member's value in its map ("?" for none). */
static const char *map_name(const cfg_enum_t *map, int v)
{
	for (; map->name; map++)
		if (map->value == v)
			return map->name;
	return "?";
}

const mdl_spec_key_t *mdl_spec_key_find(const mdl_spec_key_t *keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(mdl_spec_key_name(&keys[i]), name))
			return &keys[i];
	return NULL;
}

/* ---- spec files ------------------------------------------------------------ */

/* The spec-file key rows of a table: the file halves of its rows. */
static const ini_rows_t hw_rows = {&mdl_hw_keys[0].file,
                                   sizeof mdl_hw_keys / sizeof mdl_hw_keys[0],
                                   sizeof mdl_hw_keys[0]};
static const ini_rows_t llm_rows = {&mdl_llm_keys[0].file,
                                    sizeof mdl_llm_keys / sizeof mdl_llm_keys[0],
                                    sizeof mdl_llm_keys[0]};
static const ini_section_t hw_section = {"gpu", 0, 0, NULL, NULL};
static const ini_section_t llm_section = {"model", 0, 0, NULL, NULL};

/* weight_bytes defaults to dtype_bytes; then the layer kinds, a key at
 * fault named with its line (a key that is missing: the line of
 * layer_kind, else of the section). */
static int llm_finish(void *dst, const ini_run_t *r, err_t *e)
{
	mdl_llm_t *m = dst;
	if (m->weight_bytes < 0)
		m->weight_bytes = m->dtype_bytes;
	const char *key;
	char why[160];
	if (!mdl_layers_fault(m, &key, why, sizeof why))
		return 0;
	size_t k = (size_t)(mdl_spec_key_find(mdl_llm_keys, mdl_llm_keys_n, key) - mdl_llm_keys);
	size_t kind =
	    (size_t)(mdl_spec_key_find(mdl_llm_keys, mdl_llm_keys_n, "layer_kind") - mdl_llm_keys);
	int line = ini_line(r, k, 0);
	if (!line)
		line = ini_line(r, kind, 0);
	if (!line)
		line = ini_section_line(r, k, 0);
	return err_set(e, KS_EINPUT, "%s:%d: [model] %s: %s", ini_origin(r), line, key, why);
}

static const ini_table_t hw_table = {&hw_section, 1, &hw_rows, 1, NULL};
static const ini_table_t llm_table = {&llm_section, 1, &llm_rows, 1, llm_finish};

int mdl_hw_parse(const char *origin, const char *text, mdl_hw_t *hw, err_t *e)
{
	mdl_hw_t tmp;
	memset(&tmp, 0, sizeof tmp);
	int rc = ini_read(&hw_table, origin, text, &tmp, e);
	if (!rc)
		rc = mdl_hw_check(&tmp, origin, e);
	if (!rc)
		*hw = tmp; /* never half-loaded */
	return rc;
}

int mdl_llm_parse(const char *origin, const char *text, mdl_llm_t *llm, err_t *e)
{
	mdl_llm_t tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.weight_bytes = -1; /* resolved to dtype_bytes after parsing */
	int rc = ini_read(&llm_table, origin, text, &tmp, e);
	if (!rc)
		rc = mdl_llm_check(&tmp, origin, e);
	if (!rc)
		*llm = tmp;
	return rc;
}

int mdl_read_small_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                        err_t *e)
{
	FILE *f = err_fopen_in(path, e);
	if (!f)
		return e->code;
	char *buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		return err_set(e, KS_ENOMEM, "%s: out of memory", path);
	}
	size_t n = fread(buf, 1, max + 1, f);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return err_set(e, KS_EIO, "%s: read error", path);
	}
	if (n > max) {
		free(buf);
		return err_set(e, KS_EINPUT, "%s: larger than %zu bytes, not a %s", path, max, what);
	}
	if (memchr(buf, '\0', n)) {
		free(buf);
		return err_set(e, KS_EINPUT, "%s: contains a NUL byte, not a text %s", path, what);
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

/* Parses the spec file at path into hw when hw is given, else into llm. */
static int spec_load_file(const char *path, mdl_hw_t *hw, mdl_llm_t *llm, err_t *e)
{
	char *text;
	int rc = mdl_read_small_file(path, SPEC_FILE_MAX, "spec file", &text, NULL, e);
	if (rc)
		return rc;
	rc = hw ? mdl_hw_parse(path, text, hw, e) : mdl_llm_parse(path, text, llm, e);
	free(text);
	return rc;
}

int mdl_hw_load_file(const char *path, mdl_hw_t *hw, err_t *e)
{
	return spec_load_file(path, hw, NULL, e);
}

int mdl_llm_load_file(const char *path, mdl_llm_t *llm, err_t *e)
{
	return spec_load_file(path, NULL, llm, e);
}

/* ---- writing ------------------------------------------------------------ */

static int spec_write(const char *section, const mdl_spec_key_t *fields, size_t n, const void *src,
                      FILE *f)
{
	const char *p0 = src;
	/* the name must read back: the parser refuses what cannot */
	for (size_t i = 0; i < n; i++)
		if (fields[i].file.len && cfg_str_unstorable(p0 + fields[i].file.t.at.off))
			return KS_EINPUT;
	fprintf(f, "[%s]\n", section);
	for (size_t i = 0; i < n; i++) {
		const cfg_field_t *at = &fields[i].file.t.at;
		const char *p = p0 + at->off;
		fprintf(f, "%s = ", mdl_spec_key_name(&fields[i]));
		switch (at->kind) {
		case CFG_F_NONE:
			fprintf(f, "%s\n", p);
			break;
		case CFG_F_U32:
			fprintf(f, "%u\n", *(const uint32_t *)p);
			break;
		case CFG_F_U64:
			fprintf(f, "%llu\n", (unsigned long long)*(const uint64_t *)p);
			break;
		case CFG_F_I64:
			fprintf(f, "%lld\n", (long long)*(const int64_t *)p);
			break;
		case CFG_F_DOUBLE:
			fprintf(f, "%.17g\n", *(const double *)p);
			break;
		case CFG_F_ENUM:
			fprintf(f, "%s\n", map_name(at->map, *(const int *)p));
			break;
		default: /* no other kind in the tables */
			break;
		}
	}
	return ferror(f) ? KS_EIO : 0;
}

int mdl_hw_write(const mdl_hw_t *hw, FILE *f)
{
	return spec_write("gpu", mdl_hw_keys, mdl_hw_keys_n, hw, f);
}

int mdl_llm_write(const mdl_llm_t *llm, FILE *f)
{
	return spec_write("model", mdl_llm_keys, mdl_llm_keys_n, llm, f);
}

/* ---- sizes ---------------------------------------------------------------- */

uint32_t mdl_layers_full(const mdl_llm_t *m)
{
	if (m->layer_kind == MDL_LAYER_FULL)
		return m->layers;
	if (!m->full_period)
		return 0;
	/* layers full_offset, full_offset + period, ...: Gemma 2 (is_sliding =
	 * not layer_idx % 2) has period 2 offset 1, Gemma 3 ((i+1) % 6 != 0 is
	 * sliding) 6 and 5, Jamba (attn_layer_period/offset) 8 and 4 */
	uint32_t p = m->full_period;
	return m->layers / p + (m->layers % p > m->full_offset);
}

uint32_t mdl_layers_sliding(const mdl_llm_t *m)
{
	return m->layer_kind == MDL_LAYER_SLIDING ? m->layers - mdl_layers_full(m) : 0;
}

uint32_t mdl_layers_state(const mdl_llm_t *m)
{
	return m->layer_kind == MDL_LAYER_STATE ? m->layers - mdl_layers_full(m) : 0;
}

/* KV bytes of one token in one attention layer on one GPU of tp. */
static uint64_t layer_token_bytes_gpu(const mdl_llm_t *m, uint32_t tp)
{
	/* DeepSeek-V2 (arXiv:2405.04434) sec. 2.1: MLA caches c_KV and k_R, on every rank */
	if (m->attention == MDL_ATTN_MLA)
		return ((uint64_t)m->mla_latent + m->mla_rope) * m->dtype_bytes;
	/* vLLM/Megatron shard KV heads over TP ranks; with tp > kv_heads each rank
	 * holds one (replicated) head */
	uint64_t heads = tp <= 1 ? m->kv_heads : (m->kv_heads + tp - 1) / tp;
	return 2ull * heads * m->head_dim * m->dtype_bytes; /* K and V */
}

static uint64_t ceil_div(uint64_t a, uint32_t tp)
{
	return tp <= 1 ? a : (a + tp - 1) / tp;
}

/* One state layer's state on one GPU of tp. vLLM's MambaStateShapeCalculator
 * (vllm/model_executor/layers/mamba/mamba_utils.py): conv state
 * (conv_kernel - 1, conv_dim / tp), temporal (SSM) state (heads / tp,
 * head_dim, state) -- mamba1 with heads = intermediate, head_dim 1 and
 * state = d_state; mamba2 with conv_dim = intermediate + 2 * n_groups *
 * d_state; Gated DeltaNet with conv_dim = 2 * k_heads * k_dim + v_heads *
 * v_dim and state (v_heads / tp, k_dim, v_dim). The conv state is kept in the
 * activation dtype, the SSM state in its own (vLLM mamba_ssm_cache_dtype). */
static uint64_t layer_state_bytes_gpu(const mdl_llm_t *m, uint32_t tp)
{
	if (m->layer_kind != MDL_LAYER_STATE)
		return 0;
	uint64_t conv =
	    ceil_div(m->state_conv_dim, tp) * (m->state_conv_kernel - 1) * m->dtype_bytes;
	uint64_t ssm =
	    ceil_div(m->state_heads, tp) * m->state_head_dim * m->state_dim * m->state_dtype_bytes;
	return conv + ssm;
}

uint64_t mdl_kv_bytes_per_token_gpu(const mdl_llm_t *m, uint32_t tp)
{
	return (uint64_t)(mdl_layers_full(m) + mdl_layers_sliding(m)) *
	       layer_token_bytes_gpu(m, tp);
}

uint64_t mdl_kv_bytes_per_token(const mdl_llm_t *m)
{
	return mdl_kv_bytes_per_token_gpu(m, 1);
}

uint64_t mdl_kv_paged_bytes_per_token_gpu(const mdl_llm_t *m, uint32_t tp)
{
	uint32_t full = mdl_layers_full(m);
	return (uint64_t)(full ? full : mdl_layers_sliding(m)) * layer_token_bytes_gpu(m, tp);
}

uint64_t mdl_kv_paged_bytes_per_token(const mdl_llm_t *m)
{
	return mdl_kv_paged_bytes_per_token_gpu(m, 1);
}

uint64_t mdl_kv_state_bytes_per_seq_gpu(const mdl_llm_t *m, uint32_t tp)
{
	return (uint64_t)mdl_layers_state(m) * layer_state_bytes_gpu(m, tp);
}

uint64_t mdl_kv_state_bytes_per_seq(const mdl_llm_t *m)
{
	return mdl_kv_state_bytes_per_seq_gpu(m, 1);
}

uint64_t mdl_kv_fixed_bytes_per_seq_gpu(const mdl_llm_t *m, uint32_t tp)
{
	/* without full layers the sliding ones are paged (no window part) */
	uint64_t win = mdl_layers_full(m) ? (uint64_t)mdl_layers_sliding(m) * m->window *
	                                        layer_token_bytes_gpu(m, tp)
	                                  : 0;
	return win + mdl_kv_state_bytes_per_seq_gpu(m, tp);
}

uint64_t mdl_kv_fixed_bytes_per_seq(const mdl_llm_t *m)
{
	return mdl_kv_fixed_bytes_per_seq_gpu(m, 1);
}

uint64_t mdl_kv_prefix_bytes_gpu(const mdl_llm_t *m, uint32_t tp, uint64_t n, int with_state)
{
	uint64_t tok = layer_token_bytes_gpu(m, tp);
	uint64_t win = n < m->window ? n : m->window;
	return (uint64_t)mdl_layers_full(m) * n * tok +
	       (uint64_t)mdl_layers_sliding(m) * win * tok +
	       (with_state ? mdl_kv_state_bytes_per_seq_gpu(m, tp) : 0);
}

uint64_t mdl_kv_prefix_bytes(const mdl_llm_t *m, uint64_t n, int with_state)
{
	return mdl_kv_prefix_bytes_gpu(m, 1, n, with_state);
}

uint64_t mdl_kv_seq_bytes_gpu(const mdl_llm_t *m, uint32_t tp, uint64_t n)
{
	return mdl_kv_prefix_bytes_gpu(m, tp, n, 1); /* a sequence holds its state */
}

uint64_t mdl_kv_seq_bytes(const mdl_llm_t *m, uint64_t n)
{
	return mdl_kv_seq_bytes_gpu(m, 1, n);
}

uint64_t mdl_kv_tokens_per_instance(const mdl_hw_t *hw, const mdl_llm_t *m, uint32_t tp,
                                    double reserve_fraction)
{
	double free_b = (double)hw->hbm_bytes * (1 - reserve_fraction) -
	                (double)mdl_weights_bytes_per_gpu(m, tp);
	uint64_t kv = mdl_kv_paged_bytes_per_token_gpu(m, tp);
	if (!(free_b > 0) || kv == 0)
		return 0;
	return (uint64_t)floor(free_b / (double)kv);
}

/* Config keys of models/ (see sim/base/cfg.h) and mdl_load_cfg (see mdl.h).
 *
 * [gpu] and [model] pick a spec by built-in name or by file, then any
 * per-field override replaces the spec's value. Convention for overrides:
 * a numeric key left at -1 means "from the spec" (any other negative value
 * is an error); attention = spec means "from the spec".
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_field.h"
#include "models/mdl_prof.h"
#include "sim/base/cfg.h"

#define NOT_SET "-1"
#define OVF(sec, key, unit, doc)                                                                   \
	{                                                                                          \
		sec, key, CFG_FLOAT, NOT_SET, -1, 1e30, NULL, unit, doc " (-1: from the spec)",    \
		    NULL                                                                           \
	}
#define OVI(sec, key, unit, doc)                                                                   \
	{                                                                                          \
		sec, key, CFG_INT, NOT_SET, -1, 4294967295.0, NULL, unit,                          \
		    doc " (-1: from the spec)", NULL                                               \
	}
#define OVL(sec, key, unit, doc)                                                                   \
	{                                                                                          \
		sec, key, CFG_INT, NOT_SET, -1, 9e15, NULL, unit, doc " (-1: from the spec)", NULL \
	}

#define TERM(key, hi, unit, doc)                                                                   \
	{                                                                                          \
		"compute", key, CFG_FLOAT, NOT_SET, -1, hi, NULL, unit,                            \
		    doc " (-1: from compute.calibration)", NULL                                    \
	}

/* The [compute] defaults mirror mdl_compute_params_default (mdl_cost.c,
 * with their sources); tests check that they agree. */
const cfg_key_t mdl_cfg_keys[] = {
    {"gpu", "name", CFG_STR, "H100-SXM", 0, 0, NULL, "",
     "built-in GPU spec (A100-80GB, H100-SXM, H200, B200); ignored when file is set", NULL},
    {"gpu", "file", CFG_STR, "", 0, 0, NULL, "path",
     "GPU spec INI file ([gpu] section); relative to the config file, else the working dir", NULL},
    OVF("gpu", "hbm_bytes", "bytes", "HBM capacity per GPU"),
    OVF("gpu", "hbm_bw", "bytes/s", "HBM bandwidth"),
    OVF("gpu", "flops_bf16", "FLOP/s", "dense BF16 tensor throughput"),
    OVF("gpu", "flops_fp8", "FLOP/s", "dense FP8 tensor throughput (0: no FP8)"),
    OVF("gpu", "nvlink_bw", "bytes/s", "NVLink per GPU per direction (0: none)"),
    OVL("gpu", "nvlink_lat_ns", "ns", "NVLink copy latency"),
    OVF("gpu", "pcie_bw", "bytes/s", "PCIe GPU<->host per direction"),
    OVL("gpu", "pcie_lat_ns", "ns", "PCIe copy latency"),
    OVF("gpu", "nic_bw", "bytes/s", "NIC per GPU per direction"),
    OVL("gpu", "nic_lat_ns", "ns", "NIC transfer latency"),
    OVF("gpu", "host_dram_bytes", "bytes", "host DRAM per node"),

    {"model", "name", CFG_STR, "Llama-3-70B", 0, 0, NULL, "",
     "built-in LLM spec (Llama-3-8B, Llama-3-70B, Qwen2.5-72B, Mixtral-8x7B, DeepSeek-V3); "
     "ignored when file is set",
     NULL},
    {"model", "file", CFG_STR, "", 0, 0, NULL, "path",
     "LLM spec INI file ([model] section); relative to the config file, else the working dir",
     NULL},
    OVI("model", "layers", "", "transformer layers"),
    OVI("model", "hidden", "", "hidden size"),
    OVI("model", "heads", "", "attention (query) heads"),
    OVI("model", "kv_heads", "", "KV heads (GQA)"),
    OVI("model", "head_dim", "", "head dimension (MLA: v/qk_nope head dim)"),
    OVI("model", "intermediate", "", "MLP intermediate size"),
    OVI("model", "vocab", "tokens", "vocabulary size"),
    OVI("model", "dtype_bytes", "bytes", "KV cache and activation element size"),
    OVF("model", "weight_bytes", "bytes", "bytes per weight (0.5 for 4-bit)"),
    OVF("model", "params_total", "", "parameters, all experts"),
    OVF("model", "params_active", "", "parameters used per token"),
    {"model", "attention", CFG_ENUM, "spec", 0, 0, "spec,gqa,mla", "",
     "attention kind (spec: from the spec)", NULL},
    OVI("model", "mla_latent", "", "MLA KV latent rank (kv_lora_rank)"),
    OVI("model", "mla_rope", "", "MLA decoupled rope key dims"),
    OVI("model", "experts", "", "routed experts per MoE layer (0: dense)"),
    OVI("model", "experts_active", "", "routed experts per token"),
    OVI("model", "tied_embeddings", "", "1 if embedding and LM head share weights"),

    {"compute", "mfu", CFG_FLOAT, "0.5", 0.01, 1, NULL, "",
     "achieved/peak FLOP/s (PaLM's MFU) of the linear model and the single-efficiency "
     "roofline (gemm_mfu = 0); see models/mdl_cost.c for the source", NULL},
    {"compute", "mbu", CFG_FLOAT, "0.8", 0.01, 1, NULL, "",
     "achieved/peak HBM bandwidth (MBU) of the linear model and the single-efficiency "
     "roofline; see models/mdl_cost.c for the source", NULL},
    {"compute", "allreduce_bw_eff", CFG_FLOAT, "0.8", 0.01, 1, NULL, "",
     "TP all-reduce bus bandwidth / NVLink bandwidth; when set, for every TP instead of "
     "the calibration's per-TP fit (assumption)", NULL},
    {"compute", "allreduce_lat_ns", CFG_INT, "10000", 0, 1e12, NULL, "ns",
     "fixed cost of one TP all-reduce (2 per layer per iteration); when set, for every TP "
     "instead of the calibration's per-TP fit (assumption)", NULL},
    {"compute", "iter_overhead_ns", CFG_INT, "500000", 0, 1e12, NULL, "ns",
     "scheduler/launch overhead per iteration", NULL},
    {"compute", "model", CFG_ENUM, "roofline", 0, 0, "roofline,linear,profile", "",
     "roofline: GEMMs, attention, weight and KV reads, per-layer kernels, TP all-reduce and "
     "overhead, each at its own efficiency (models/mdl_cost.c); linear: the "
     "original study's model (prefill 2*params*tokens/(tp*flops*mfu), no attention, TP "
     "communication or overhead; decode memory-bound over weights + KV); profile: one "
     "layer's operators interpolated from compute.profile, attention and LM head from the "
     "roofline terms", NULL},
    {"compute", "calibration", CFG_STR, "auto", 0, 0, NULL, "path",
     "where the roofline terms come from: auto = the shipped fit for the GPU "
     "(models/calibration/compute-<gpu.name>.ini, embedded; the built-in defaults when none "
     "is shipped or gpu.file is set), none = the built-in defaults (models/mdl_cost.c), or "
     "a calibration file written by 'kvsim calibrate compute fit'; a term key below set to "
     "anything but -1 wins over it", NULL},
    {"compute", "profile", CFG_STR, "", 0, 0, NULL, "path",
     "model = profile: per-layer operator CSV(s) in Vidur's mlp.csv format, comma-separated",
     NULL},
    {"compute", "allreduce_profile", CFG_STR, "", 0, 0, NULL, "path",
     "model = profile: NCCL all-reduce CSV (Vidur's all_reduce.csv format); empty: the "
     "roofline all-reduce", NULL},
    TERM("gemm_mfu", 1, "", "peak MFU of large weight GEMMs (Vidur H100/A100 profile fit)"),
    TERM("gemm_half_flops", 1e30, "FLOP",
         "FLOPs of one GEMM on one GPU at which its MFU is half of gemm_mfu (0: flat)"),
    TERM("weight_mbu", 1, "", "weight-read bandwidth / peak HBM bandwidth (profile fit)"),
    TERM("gemm_kernel_ns", 1e9, "ns", "fixed cost per GEMM kernel (profile fit)"),
    TERM("small_kernel_ns", 1e9, "ns",
         "fixed cost per norm, rope, activation or add kernel, 5 per layer (profile fit)"),
    TERM("elt_bw_eff", 1, "",
         "bandwidth of those small kernels / peak HBM bandwidth (profile fit; 0: no term)"),
    TERM("gemm_tile_tokens", 1e6, "tokens",
         "GEMM compute pays for tokens rounded up to this tile (profile fit, 0: none)"),
    TERM("roofline_q", 1e3, "",
         "compute and memory sides combined as a q-norm (profile fit; 0: max)"),
    TERM("attn_prefill_eff", 1, "",
         "prefill attention FLOP/s / peak (default 0.37: FlashAttention-2 on H100, FA3 paper)"),
    TERM("attn_decode_eff", 1, "",
         "decode attention KV-read bandwidth / peak HBM bandwidth (default 0.75: own choice)"),
};
const size_t mdl_cfg_keys_n = sizeof mdl_cfg_keys / sizeof mdl_cfg_keys[0];

/* "ORIGIN: [section] key" for messages about one config key. */
static int key_error(const cfg_t *cfg, err_t *e, const char *sec, const char *key, const char *why)
{
	return err_set(e, KS_EINPUT, "%s: [%s] %s: %s", cfg_origin(cfg, sec, key), sec, key, why);
}

static int apply_overrides(const cfg_t *cfg, const char *sec, const mdl_field_t *fields, size_t n,
                           void *dst, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		const mdl_field_t *f = &fields[i];
		if (f->type == MDL_F_NAME)
			continue;
		if (f->type == MDL_F_ATTN) {
			const char *v = cfg_str(cfg, sec, f->key);
			const char *why;
			if (strcmp(v, "spec") && mdl_field_set_text(f, dst, v, &why))
				return key_error(cfg, e, sec, f->key, why);
			continue;
		}
		double v = (f->type == MDL_F_DBL || f->type == MDL_F_U64)
		               ? cfg_float(cfg, sec, f->key)
		               : (double)cfg_int(cfg, sec, f->key);
		if (v == -1)
			continue;
		const char *why;
		if (v < 0)
			return key_error(cfg, e, sec, f->key,
			                 "must be >= 0, or -1 for the spec's value");
		if (mdl_field_set_number(f, dst, v, &why))
			return key_error(cfg, e, sec, f->key, why);
	}
	return 0;
}

/* Loads the spec [gpu] (into a mdl_hw_t) or [model] (into a mdl_llm_t) picks
 * at dst: from its file, else by built-in name; then its overrides. */
static int load_spec(const cfg_t *cfg, const char *sec, void *dst, err_t *e)
{
	int hw = !strcmp(sec, "gpu");
	const char *file = cfg_str(cfg, sec, "file");
	const char *key = file[0] ? "file" : "name";
	int rc;
	if (file[0]) {
		char path[4096];
		/* relative to the config file that set it (cfg_path) */
		if ((rc = cfg_path(cfg, sec, "file", path, sizeof path, e)))
			return rc;
		rc = hw ? mdl_hw_load_file(path, dst, e) : mdl_llm_load_file(path, dst, e);
	} else {
		const char *name = cfg_str(cfg, sec, "name");
		rc = hw ? mdl_hw_builtin(name, dst, e) : mdl_llm_builtin(name, dst, e);
	}
	if (rc)
		return err_prefix(e, "%s: [%s] %s", cfg_origin(cfg, sec, key), sec, key);
	rc = hw ? apply_overrides(cfg, sec, mdl_hw_fields, mdl_hw_fields_n, dst, e)
	        : apply_overrides(cfg, sec, mdl_llm_fields, mdl_llm_fields_n, dst, e);
	if (rc)
		return rc;
	char what[64];
	snprintf(what, sizeof what, "[%s] after overrides", sec);
	return hw ? mdl_hw_check(dst, what, e) : mdl_llm_check(dst, what, e);
}



/* The separated roofline terms: built-in defaults, then the calibration,
 * then every term key that is set; explicit all-reduce keys replace the
 * calibration's per-TP table. */
static int load_terms(const cfg_t *cfg, const mdl_hw_t *hw, mdl_compute_params_t *p, err_t *e)
{
	const mdl_compute_params_t *d = &mdl_compute_params_default;
	for (size_t i = 0; i < mdl_term_keys_n; i++) {
		size_t off = mdl_term_keys[i].off;
		*(double *)((char *)p + off) = *(const double *)((const char *)d + off);
	}
	const char *cal = cfg_str(cfg, "compute", "calibration");
	int64_t overhead = p->iter_overhead_ns;
	int rc = 0;
	if (!strcmp(cal, "auto")) {
		if (!cfg_str(cfg, "gpu", "file")[0])
			rc = mdl_calib_builtin(hw->name, p, e);
		rc = rc > 0 ? 0 : rc;
	} else if (strcmp(cal, "none")) {
		char path[4096];
		rc = cfg_path(cfg, "compute", "calibration", path, sizeof path, e);
		if (!rc)
			rc = mdl_calib_load(path, p, e);
	}
	if (rc)
		return err_prefix(e, "%s: [compute] calibration", cfg_origin(cfg, "compute",
		                                                             "calibration"));
	if (strcmp(cfg_origin(cfg, "compute", "iter_overhead_ns"), "default"))
		p->iter_overhead_ns = overhead;
	if (strcmp(cfg_origin(cfg, "compute", "allreduce_lat_ns"), "default") ||
	    strcmp(cfg_origin(cfg, "compute", "allreduce_bw_eff"), "default"))
		p->n_ar = 0;
	for (size_t i = 0; i < mdl_term_keys_n; i++) {
		double v = cfg_float(cfg, "compute", mdl_term_keys[i].key);
		if (v == -1)
			continue;
		if (v < 0)
			return key_error(cfg, e, "compute", mdl_term_keys[i].key,
			                 "must be >= 0, or -1 for the calibration's value");
		*(double *)((char *)p + mdl_term_keys[i].off) = v;
	}
	const char *keys[] = {"profile", "allreduce_profile"};
	char *dst[] = {p->profile, p->ar_profile};
	for (int i = 0; i < 2; i++) {
		const char *v = cfg_str(cfg, "compute", keys[i]);
		if (!v[0])
			continue;
		if (strchr(v, ',')) { /* a list: each taken as given */
			if (strlen(v) >= MDL_PATH_MAX)
				return key_error(cfg, e, "compute", keys[i], "too long");
			snprintf(dst[i], MDL_PATH_MAX, "%s", v);
		} else if ((rc = cfg_path(cfg, "compute", keys[i], dst[i], MDL_PATH_MAX, e))) {
			return rc;
		}
	}
	if (p->model == MDL_MODEL_PROFILE && !p->profile[0])
		return key_error(cfg, e, "compute", "profile", "model = profile needs a table");
	return 0;
}

int mdl_load_cfg(const cfg_t *cfg, mdl_hw_t *hw, mdl_llm_t *llm, mdl_compute_params_t *cp, err_t *e)
{
	mdl_hw_t h;
	mdl_llm_t m;
	int rc = load_spec(cfg, "gpu", &h, e);
	if (!rc)
		rc = load_spec(cfg, "model", &m, e);
	if (rc)
		return rc;
	mdl_compute_params_t p;
	memset(&p, 0, sizeof p); /* padding too: callers compare whole structs */
	p.mfu = cfg_float(cfg, "compute", "mfu");
	p.mbu = cfg_float(cfg, "compute", "mbu");
	p.allreduce_bw_eff = cfg_float(cfg, "compute", "allreduce_bw_eff");
	p.allreduce_lat_ns = cfg_int(cfg, "compute", "allreduce_lat_ns");
	p.iter_overhead_ns = cfg_int(cfg, "compute", "iter_overhead_ns");
	const char *model = cfg_str(cfg, "compute", "model");
	p.model = !strcmp(model, "linear")    ? MDL_MODEL_LINEAR
	          : !strcmp(model, "profile") ? MDL_MODEL_PROFILE
	                                      : MDL_MODEL_ROOFLINE;
	if ((rc = load_terms(cfg, &h, &p, e)))
		return rc;
	if (hw)
		*hw = h;
	if (llm)
		*llm = m;
	if (cp)
		*cp = p;
	return 0;
}

/* Config keys of models/ as typed keys (mdl_cfg.h) and mdl_load_cfg (mdl.h).
 *
 * [gpu] and [model] pick a spec by built-in name or by file, then any
 * per-field override replaces the spec's value. Convention for overrides:
 * a numeric key left at -1 means "from the spec" (any other negative value
 * is an error); attention = spec means "from the spec". The override keys
 * are the spec tables' rows (mdl_field.h, mdl_spec.c); everything is read
 * from the filled mdl_cfg_t, the store only for paths and error places.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_cfg.h"
#include "models/mdl_field.h"
#include "models/mdl_hf.h"
#include "models/mdl_prof.h"
#include "sim/base/cfg.h"

/* Rows of the head tables whose place messages name. */
enum { K_NAME, K_FILE, K_HF };
/* Rows of mdl_compute_cfg_keys read by place (origin, path). */
enum { C_MFU, C_MBU, C_AR_BW, C_AR_LAT, C_OVERHEAD, C_MODEL, C_CALIBRATION, C_PROFILE,
       C_AR_PROFILE, C_AR_IMPL };

#define AT(kind, member) CFG_AT(kind, mdl_cfg_t, member)

/* [sec] name and file: which spec of a kind ("GPU", "LLM"), list naming
 * the built-ins; the members of mdl_cfg_t they fill. */
#define PICK_KEYS(sec, def, kind, list, name_member, file_member)                                  \
	[K_NAME] = {{sec, "name", CFG_STR, def, 0, 0, NULL, "",                                    \
	             "built-in " kind " spec (" list "); ignored when file is set", NULL},         \
	            AT(STR, name_member)},                                                         \
	[K_FILE] = {{sec, "file", CFG_STR, "", 0, 0, NULL, "path",                                 \
	             kind " spec INI file ([" sec "] section); relative to the config file, else " \
	                  "the working dir",                                                       \
	             NULL},                                                                        \
	            AT(STR, file_member)}

const cfg_tkey_t mdl_gpu_cfg_keys[] = {
    PICK_KEYS("gpu", "H100-SXM", "GPU", "A100-80GB, H100-SXM, H200, B200", gpu_name, gpu_file)};
const size_t mdl_gpu_cfg_keys_n = sizeof mdl_gpu_cfg_keys / sizeof mdl_gpu_cfg_keys[0];

const cfg_tkey_t mdl_model_cfg_keys[] = {
    PICK_KEYS("model", "Llama-3-70B", "LLM",
              "Llama-3-8B, Llama-3-70B, Qwen2.5-72B, Mixtral-8x7B, DeepSeek-V3", model_name,
              model_file),
    [K_HF] = {{"model", "hf_config", CFG_STR, "", 0, 0, NULL, "path",
               "a Hugging Face config.json as published (text_config and "
               "quantization_config read; models/README.md); relative to the config file, "
               "else the working dir; not with file",
               NULL},
              CFG_AT(STR, mdl_cfg_t, model_hf)}};
const size_t mdl_model_cfg_keys_n = sizeof mdl_model_cfg_keys / sizeof mdl_model_cfg_keys[0];
#undef PICK_KEYS

static const cfg_enum_t model_map[] = {{"roofline", MDL_MODEL_ROOFLINE},
                                       {"linear", MDL_MODEL_LINEAR},
                                       {"profile", MDL_MODEL_PROFILE},
                                       {NULL, 0}};
static const cfg_enum_t ar_impl_map[] = {{"auto", MDL_AR_AUTO},
                                         {"nccl", MDL_AR_NCCL},
                                         {"custom", MDL_AR_CUSTOM},
                                         {NULL, 0}};

/* The [compute] defaults mirror mdl_compute_params_default (mdl_cost.c,
 * with their sources); tests check that they agree. */
const cfg_tkey_t mdl_compute_cfg_keys[] = {
    [C_MFU] = {{"compute", "mfu", CFG_FLOAT, "0.5", 0.01, 1, NULL, "",
                "achieved/peak FLOP/s (PaLM's MFU) of the linear model and the "
                "single-efficiency roofline (gemm_mfu = 0); see models/mdl_cost.c for the "
                "source",
                NULL},
               AT(DOUBLE, compute.mfu)},
    [C_MBU] = {{"compute", "mbu", CFG_FLOAT, "0.8", 0.01, 1, NULL, "",
                "achieved/peak HBM bandwidth (MBU) of the linear model and the "
                "single-efficiency roofline; see models/mdl_cost.c for the source",
                NULL},
               AT(DOUBLE, compute.mbu)},
    [C_AR_BW] = {{"compute", "allreduce_bw_eff", CFG_FLOAT, "0.8", 0.01, 1, NULL, "",
                  "TP all-reduce bus bandwidth / NVLink bandwidth; when set, for every TP "
                  "instead of the calibration's per-TP fit (assumption)",
                  NULL},
                 AT(DOUBLE, compute.allreduce_bw_eff)},
    [C_AR_LAT] = {{"compute", "allreduce_lat_ns", CFG_INT, "10000", 0, 1e12, NULL, "ns",
                   "fixed cost of one TP all-reduce (2 per layer per iteration); when set, for "
                   "every TP instead of the calibration's per-TP fit (assumption)",
                   NULL},
                  AT(I64, compute.allreduce_lat_ns)},
    [C_OVERHEAD] = {{"compute", "iter_overhead_ns", CFG_INT, "500000", 0, 1e12, NULL, "ns",
                     "scheduler/launch overhead per iteration", NULL},
                    AT(I64, compute.iter_overhead_ns)},
    [C_MODEL] = {{"compute", "model", CFG_ENUM, "roofline", 0, 0, NULL, "",
                  "roofline: GEMMs, attention, weight and KV reads, per-layer kernels, TP "
                  "all-reduce and overhead, each at its own efficiency (models/mdl_cost.c); "
                  "linear: the original study's model (prefill 2*params*tokens/(tp*flops*mfu), "
                  "no attention, TP communication or overhead; decode memory-bound over "
                  "weights + KV); profile: one layer's operators interpolated from "
                  "compute.profile, attention and LM head from the roofline terms",
                  NULL},
                 CFG_AT_ENUM(mdl_cfg_t, compute.model, model_map)},
    [C_CALIBRATION] = {{"compute", "calibration", CFG_STR, "auto", 0, 0, NULL, "path",
                        "where the roofline terms come from: auto = the shipped fit for the GPU "
                        "(models/calibration/compute-<gpu.name>.ini, embedded; the built-in "
                        "defaults when none is shipped or gpu.file is set), none = the built-in "
                        "defaults (models/mdl_cost.c), or a calibration file written by 'kvsim "
                        "calibrate compute fit'; a term key below set to anything but -1 wins "
                        "over it",
                        NULL},
                       AT(STR, calibration)},
    [C_PROFILE] = {{"compute", "profile", CFG_STR, "", 0, 0, NULL, "path",
                    "model = profile: per-layer operator CSV(s) in Vidur's mlp.csv format, "
                    "comma-separated",
                    NULL},
                   AT(STR, profile)},
    [C_AR_PROFILE] = {{"compute", "allreduce_profile", CFG_STR, "", 0, 0, NULL, "path",
                       "model = profile: NCCL all-reduce CSV (Vidur's all_reduce.csv format); "
                       "empty: the roofline all-reduce",
                       NULL},
                      AT(STR, allreduce_profile)},
    [C_AR_IMPL] = {{"compute", "allreduce", CFG_ENUM, "auto", 0, 0, NULL, "",
                    "how the engine runs the TP all-reduce: nccl (alpha + bus bandwidth, the "
                    "calibration's per-TP fit of NCCL, or allreduce_lat_ns/allreduce_bw_eff), "
                    "custom (the engines' peer-to-peer kernel over NVLink inside CUDA graphs, "
                    "vLLM's custom all-reduce, which SGLang also ships: its measured H100 "
                    "curve up to 8 MiB at TP 2, 4, 6, 8, NCCL beyond or without NVLink; "
                    "models/mdl_cost.c), or auto: custom under scheduler.mode = vllm or "
                    "sglang, nccl under btb",
                    NULL},
                   CFG_AT_ENUM(mdl_cfg_t, compute.allreduce_impl, ar_impl_map)},
};
const size_t mdl_compute_cfg_keys_n = sizeof mdl_compute_cfg_keys / sizeof mdl_compute_cfg_keys[0];
#undef AT

/* The override rows of a spec table: every row but the name's. Each fills
 * its own slot, so the tables stay the one place a spec key is declared. */
static int register_spec(cfg_schema_t *s, const mdl_spec_key_t *keys, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		if (keys[i].cfg.at.kind != CFG_F_NONE)
			rc = cfg_schema_add_typed(s, &keys[i].cfg, 1);
	return rc;
}

int mdl_cfg_register(cfg_schema_t *s)
{
	int rc = cfg_schema_add_typed(s, mdl_gpu_cfg_keys, mdl_gpu_cfg_keys_n);
	if (!rc)
		rc = register_spec(s, mdl_hw_keys, mdl_hw_keys_n);
	if (!rc)
		rc = cfg_schema_add_typed(s, mdl_model_cfg_keys, mdl_model_cfg_keys_n);
	if (!rc)
		rc = register_spec(s, mdl_llm_keys, mdl_llm_keys_n);
	if (!rc)
		rc = cfg_schema_add_typed(s, mdl_compute_cfg_keys, mdl_compute_cfg_keys_n);
	for (size_t i = 0; i < mdl_term_keys_n && !rc; i++)
		rc = cfg_schema_add_typed(s, &mdl_term_keys[i].cfg, 1);
	return rc;
}

/* Row i of a spec table fills over[i]. */
static int fill_spec(const cfg_t *cfg, const mdl_spec_key_t *keys, size_t n, mdl_over_t *over,
                     err_t *e)
{
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = cfg_fill(cfg, &keys[i].cfg, 1, &over[i], e);
	return rc;
}

int mdl_cfg_fill(const cfg_t *cfg, mdl_cfg_t *m, err_t *e)
{
	memset(m, 0, sizeof *m); /* padding too: callers compare whole structs */
	for (size_t i = 0; i < MDL_SPEC_KEYS_MAX; i++)
		m->gpu[i] = m->model[i] = (mdl_over_t){-1, MDL_OVER_SPEC};
	int rc = cfg_fill(cfg, mdl_gpu_cfg_keys, mdl_gpu_cfg_keys_n, m, e);
	if (!rc)
		rc = fill_spec(cfg, mdl_hw_keys, mdl_hw_keys_n, m->gpu, e);
	if (!rc)
		rc = cfg_fill(cfg, mdl_model_cfg_keys, mdl_model_cfg_keys_n, m, e);
	if (!rc)
		rc = fill_spec(cfg, mdl_llm_keys, mdl_llm_keys_n, m->model, e);
	if (!rc)
		rc = cfg_fill(cfg, mdl_compute_cfg_keys, mdl_compute_cfg_keys_n, m, e);
	for (size_t i = 0; i < mdl_term_keys_n && !rc; i++)
		rc = cfg_fill(cfg, &mdl_term_keys[i].cfg, 1, &m->terms, e);
	return rc;
}

const char *mdl_compute_model_name(int model)
{
	return cfg_enum_name(model_map, model);
}

/* Whether key t was given (file, --set or a preset), not left at its default. */
static int key_given(const cfg_t *cfg, const cfg_tkey_t *t)
{
	return strcmp(cfg_origin(cfg, t->key.section, t->key.name), "default") != 0;
}

/* "ORIGIN: [section] key" for messages about one config key. */
static int key_error(const cfg_t *cfg, err_t *e, const char *sec, const char *key, const char *why)
{
	return err_set(e, KS_EINPUT, "%s: [%s] %s: %s", cfg_origin(cfg, sec, key), sec, key, why);
}

/* "ORIGIN: [section] key" of row t, for messages about one config key. */
static int row_error(const cfg_t *cfg, err_t *e, const cfg_tkey_t *t, const char *why)
{
	return key_error(cfg, e, t->key.section, t->key.name, why);
}

/* Sets every member of dst whose override in over is not "from the spec". */
static int apply_overrides(const cfg_t *cfg, const mdl_spec_key_t *keys, size_t n,
                           const mdl_over_t *over, void *dst, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		const mdl_spec_key_t *k = &keys[i];
		const char *why;
		if (k->cfg.at.kind == CFG_F_NONE)
			continue;
		if (k->cfg.at.kind == CFG_F_ENUM) {
			/* the override's map is the spec's plus "spec" (mdl_spec.c) */
			if (over[i].choice != MDL_OVER_SPEC)
				*(int *)((char *)dst + k->file.t.at.off) = over[i].choice;
			continue;
		}
		double v = over[i].v;
		if (v == -1)
			continue;
		if (v < 0)
			return row_error(cfg, e, &k->cfg, "must be >= 0, or -1 for the spec's value");
		if (mdl_spec_set_number(k, dst, v, &why))
			return row_error(cfg, e, &k->cfg, why);
	}
	return 0;
}

/* Loads the spec [gpu] (into a mdl_hw_t, hw set) or [model] (into a
 * mdl_llm_t) picks at dst: from its file (for [model] also hf_config),
 * else by built-in name; then its overrides. hf (may be NULL) gets what the
 * config.json reader names. */
static int load_spec(const cfg_t *cfg, const mdl_cfg_t *m, int hw, void *dst, mdl_hf_info_t *hf,
                     err_t *e)
{
	const cfg_tkey_t *head = hw ? mdl_gpu_cfg_keys : mdl_model_cfg_keys;
	const char *sec = head[K_FILE].key.section;
	const char *file = hw ? m->gpu_file : m->model_file;
	int use_hf = !hw && m->model_hf && m->model_hf[0];
	const cfg_tkey_t *picked = &head[use_hf ? K_HF : file[0] ? K_FILE : K_NAME];
	int rc;
	if (use_hf && file[0])
		return row_error(cfg, e, &head[K_HF], "set with [model] file: give one of them");
	if (use_hf) {
		char path[4096];
		mdl_hf_info_t info;
		if ((rc = cfg_path(cfg, sec, head[K_HF].key.name, path, sizeof path, e)))
			return rc;
		rc = mdl_hf_load_file(path, dst, &info, e);
		/* a run warns once, naming each part it does not cost */
		char all[MDL_HF_NOTES * (MDL_HF_NOTE_MAX + 16)];
		size_t k = 0;
		for (size_t i = 0; !rc && i < info.n_uncosted && k < sizeof all; i++)
			k += (size_t)snprintf(all + k, sizeof all - k, "%suncosted: %s", i ? "; " : "",
			                      info.uncosted[i]);
		if (!rc && info.n_uncosted)
			cfg_warn_once(cfg, sec, head[K_HF].key.name, "%s", all);
		if (!rc && hf)
			*hf = info;
	} else if (file[0]) {
		char path[4096];
		/* relative to the config file that set it (cfg_path) */
		if ((rc = cfg_path(cfg, sec, head[K_FILE].key.name, path, sizeof path, e)))
			return rc;
		rc = hw ? mdl_hw_load_file(path, dst, e) : mdl_llm_load_file(path, dst, e);
	} else {
		rc = hw ? mdl_hw_builtin(m->gpu_name, dst, e) : mdl_llm_builtin(m->model_name, dst, e);
	}
	if (rc)
		return err_prefix(e, "%s: [%s] %s", cfg_origin(cfg, sec, picked->key.name), sec,
		                  picked->key.name);
	rc = hw ? apply_overrides(cfg, mdl_hw_keys, mdl_hw_keys_n, m->gpu, dst, e)
	        : apply_overrides(cfg, mdl_llm_keys, mdl_llm_keys_n, m->model, dst, e);
	if (rc)
		return rc;
	char what[64];
	snprintf(what, sizeof what, "[%s] after overrides", sec);
	return hw ? mdl_hw_check(dst, what, e) : mdl_llm_check(dst, what, e);
}

/* The separated roofline terms: built-in defaults, then the calibration,
 * then every term key that is set; explicit all-reduce keys replace the
 * calibration's per-TP table. */
static int load_terms(const cfg_t *cfg, const mdl_cfg_t *m, const mdl_hw_t *hw,
                      mdl_compute_params_t *p, err_t *e)
{
	const mdl_compute_params_t *d = &mdl_compute_params_default;
	for (size_t i = 0; i < mdl_term_keys_n; i++) {
		size_t off = mdl_term_keys[i].cfg.at.off;
		*(double *)((char *)p + off) = *(const double *)((const char *)d + off);
	}
	const cfg_tkey_t *ck = mdl_compute_cfg_keys;
	const char *cal = m->calibration;
	int64_t overhead = p->iter_overhead_ns;
	int rc = 0;
	if (!strcmp(cal, "auto")) {
		if (!m->gpu_file[0])
			rc = mdl_calib_builtin(hw->name, p, e);
		rc = rc > 0 ? 0 : rc;
	} else if (strcmp(cal, "none")) {
		char path[4096];
		rc = cfg_path(cfg, ck[C_CALIBRATION].key.section, ck[C_CALIBRATION].key.name, path,
		              sizeof path, e);
		if (!rc)
			rc = mdl_calib_load(path, p, e);
	}
	if (rc)
		return err_prefix(e, "%s: [%s] %s",
		                  cfg_origin(cfg, ck[C_CALIBRATION].key.section,
		                             ck[C_CALIBRATION].key.name),
		                  ck[C_CALIBRATION].key.section, ck[C_CALIBRATION].key.name);
	if (key_given(cfg, &ck[C_OVERHEAD]))
		p->iter_overhead_ns = overhead;
	if (key_given(cfg, &ck[C_AR_LAT]) || key_given(cfg, &ck[C_AR_BW]))
		p->n_ar = 0;
	for (size_t i = 0; i < mdl_term_keys_n; i++) {
		size_t off = mdl_term_keys[i].cfg.at.off;
		double v = *(const double *)((const char *)&m->terms + off);
		if (v == -1)
			continue;
		if (v < 0)
			return row_error(cfg, e, &mdl_term_keys[i].cfg,
			                 "must be >= 0, or -1 for the calibration's value");
		*(double *)((char *)p + off) = v;
	}
	const cfg_tkey_t *rows[] = {&ck[C_PROFILE], &ck[C_AR_PROFILE]};
	const char *val[] = {m->profile, m->allreduce_profile};
	char *dst[] = {p->profile, p->ar_profile};
	for (int i = 0; i < 2; i++) {
		const char *v = val[i];
		if (!v[0])
			continue;
		if (strchr(v, ',')) { /* a list: each taken as given */
			if (strlen(v) >= MDL_PATH_MAX)
				return row_error(cfg, e, rows[i], "too long");
			snprintf(dst[i], MDL_PATH_MAX, "%s", v);
		} else if ((rc = cfg_path(cfg, rows[i]->key.section, rows[i]->key.name, dst[i],
		                          MDL_PATH_MAX, e))) {
			return rc;
		}
	}
	if (p->model == MDL_MODEL_PROFILE && !p->profile[0])
		return row_error(cfg, e, rows[0], "model = profile needs a table");
	return 0;
}

int mdl_load_cfg(const cfg_t *cfg, mdl_hw_t *hw, mdl_llm_t *llm, mdl_compute_params_t *cp, err_t *e)
{
	return mdl_load_cfg_hf(cfg, hw, llm, cp, NULL, e);
}

int mdl_load_cfg_hf(const cfg_t *cfg, mdl_hw_t *hw, mdl_llm_t *llm, mdl_compute_params_t *cp,
                    mdl_hf_info_t *hf, err_t *e)
{
	if (hf)
		memset(hf, 0, sizeof *hf);
	mdl_cfg_t m;
	mdl_hw_t h;
	mdl_llm_t l;
	int rc = mdl_cfg_fill(cfg, &m, e);
	if (!rc)
		rc = load_spec(cfg, &m, 1, &h, NULL, e);
	if (!rc)
		rc = load_spec(cfg, &m, 0, &l, hf, e);
	if (rc)
		return rc;
	mdl_compute_params_t p;
	memcpy(&p, &m.compute, sizeof p); /* zeroed past the [compute] keys, padding too */
	if ((rc = load_terms(cfg, &m, &h, &p, e)))
		return rc;
	if (hw)
		*hw = h;
	if (llm)
		*llm = l;
	if (cp)
		*cp = p;
	return 0;
}

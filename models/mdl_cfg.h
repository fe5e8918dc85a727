/* mdl_cfg — the config keys of models/ ([gpu], [model], [compute]) as
 * typed keys (cfg_tkey_t, sim/base/cfg.h) and the struct they fill.
 *
 * [gpu] and [model] pick a spec by built-in name or by file; every spec key
 * (mdl_field.h: one table per spec kind, shared with the spec-file parser)
 * is also an override whose value -1 (attention: spec) means "from the
 * spec". [compute] holds the cost model's parameters; its roofline term
 * keys at -1 mean "from compute.calibration". mdl_load_cfg (mdl.h) resolves
 * them all. Strings in a filled mdl_cfg_t are borrowed from the cfg_t (valid
 * while it lives unchanged); nothing to free. Errors: KS_EINPUT from
 * cfg_fill when a table does not match the schema (a programming error).
 */
#ifndef KVSIM_MDL_CFG_H
#define KVSIM_MDL_CFG_H

#include "models/mdl.h"
#include "models/mdl_field.h"
#include "sim/base/cfg.h"

typedef struct mdl_cfg {
	const char *gpu_name, *gpu_file;     /* [gpu] name, file ("" none) */
	const char *model_name, *model_file; /* [model] name, file ("" none) */
	const char *model_hf;                /* [model] hf_config ("" none) */
	/* override of spec key i of mdl_hw_keys / mdl_llm_keys (the name row
	 * has none) */
	mdl_over_t gpu[MDL_SPEC_KEYS_MAX];
	mdl_over_t model[MDL_SPEC_KEYS_MAX];
	/* mfu, mbu, allreduce_bw_eff, allreduce_lat_ns, iter_overhead_ns and
	 * model; the other fields stay 0 */
	mdl_compute_params_t compute;
	/* the roofline term keys (mdl_term_keys, mdl_prof.h; -1: from the
	 * calibration); the other fields stay 0 */
	mdl_compute_params_t terms;
	const char *calibration;                /* auto, none or a path */
	const char *profile, *allreduce_profile; /* "" none */
} mdl_cfg_t;

/* The typed keys of [gpu] and [model] before their spec keys (name, file),
 * and of [compute] before its roofline terms (mdl_term_keys). */
extern const cfg_tkey_t mdl_gpu_cfg_keys[];
extern const size_t mdl_gpu_cfg_keys_n;
extern const cfg_tkey_t mdl_model_cfg_keys[];
extern const size_t mdl_model_cfg_keys_n;
extern const cfg_tkey_t mdl_compute_cfg_keys[];
extern const size_t mdl_compute_cfg_keys_n;

struct mdl_hf_info;
/* mdl_load_cfg (mdl.h), also filling hf (may be NULL; zeroed when the model
 * is not read from [model] hf_config) with the parts the config.json reader
 * names as not costed. */
int mdl_load_cfg_hf(const cfg_t *cfg, mdl_hw_t *hw, mdl_llm_t *llm, mdl_compute_params_t *cp,
                    struct mdl_hf_info *hf, err_t *e);

/* Adds every key of models/ to s, in the order config listings show them:
 * [gpu] name, file and the spec overrides, the same for [model], then
 * [compute] and its roofline terms. */
int mdl_cfg_register(cfg_schema_t *s);
/* Fills m from cfg (cfg_fill over the tables above). */
int mdl_cfg_fill(const cfg_t *cfg, mdl_cfg_t *m, err_t *e);
/* [compute] model's name for its MDL_MODEL_* value ("roofline", ...), from
 * the map its choices come from; "" for a value the map lacks. */
const char *mdl_compute_model_name(int model);

#endif

/* cfg_schema — gathers every module's config keys into the default schema. */
#include <stdlib.h>

#include "sim/base/cfg.h"

extern const cfg_key_t sim_cfg_keys[];  extern const size_t sim_cfg_keys_n;
extern const cfg_key_t mdl_cfg_keys[];  extern const size_t mdl_cfg_keys_n;
extern const cfg_tkey_t tr_cfg_keys[];  extern const size_t tr_cfg_keys_n;
extern const cfg_key_t net_cfg_keys[];  extern const size_t net_cfg_keys_n;
extern const cfg_key_t out_cfg_keys[];  extern const size_t out_cfg_keys_n;
int pol_cfg_register(cfg_schema_t *s);
int pol_preset_register(cfg_schema_t *s);

cfg_schema_t *cfg_schema_default(void)
{
	cfg_schema_t *s = cfg_schema_new();
	if (!s)
		return NULL;
	if (cfg_schema_add(s, sim_cfg_keys, sim_cfg_keys_n) ||
	    cfg_schema_add(s, mdl_cfg_keys, mdl_cfg_keys_n) ||
	    cfg_schema_add_typed(s, tr_cfg_keys, tr_cfg_keys_n) ||
	    cfg_schema_add(s, net_cfg_keys, net_cfg_keys_n) ||
	    cfg_schema_add(s, out_cfg_keys, out_cfg_keys_n) || pol_cfg_register(s) ||
	    pol_preset_register(s)) { /* last: presets name keys of every module */
		cfg_schema_free(s);
		return NULL;
	}
	return s;
}

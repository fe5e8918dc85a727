/* sim_schema — gathers every module's config keys into the default schema,
 * and fills the run's typed parameters from the same tables. */
#include <stdlib.h>

#include "sim/base/cfg.h"
#include "sim/run/sim_params.h"
#include "sim/run/sim_schema.h"

extern const cfg_tkey_t sim_cfg_keys[]; extern const size_t sim_cfg_keys_n;
extern const cfg_tkey_t tr_cfg_keys[];  extern const size_t tr_cfg_keys_n;
extern const cfg_tkey_t tr_sess_cfg_keys[]; extern const size_t tr_sess_cfg_keys_n;
extern const cfg_tkey_t net_cfg_keys[]; extern const size_t net_cfg_keys_n;
extern const cfg_tkey_t out_cfg_keys[]; extern const size_t out_cfg_keys_n;
int mdl_cfg_register(cfg_schema_t *s);
int pol_cfg_register(cfg_schema_t *s);
int pol_preset_register(cfg_schema_t *s);

cfg_schema_t *cfg_schema_default(void)
{
	cfg_schema_t *s = cfg_schema_new();
	if (!s)
		return NULL;
	if (cfg_schema_add_typed(s, sim_cfg_keys, sim_cfg_keys_n) ||
	    mdl_cfg_register(s) ||
	    cfg_schema_add_typed(s, tr_cfg_keys, tr_cfg_keys_n) ||
	    cfg_schema_add_typed(s, tr_sess_cfg_keys, tr_sess_cfg_keys_n) ||
	    cfg_schema_add_typed(s, net_cfg_keys, net_cfg_keys_n) ||
	    cfg_schema_add_typed(s, out_cfg_keys, out_cfg_keys_n) || pol_cfg_register(s) ||
	    pol_preset_register(s) || /* presets name keys of every module */
	    cfg_schema_check_when(s)) { /* conditions too, with every key's choices */
		cfg_schema_free(s);
		return NULL;
	}
	return s;
}

int sim_out_params_fill(const cfg_t *c, sim_out_params_t *o, err_t *e)
{
	return cfg_fill(c, out_cfg_keys, out_cfg_keys_n, o, e);
}

int sim_params_fill(const cfg_t *c, sim_params_t *p, err_t *e)
{
	int rc = cfg_fill(c, sim_cfg_keys, sim_cfg_keys_n, p, e);
	if (!rc)
		rc = sim_out_params_fill(c, &p->out, e);
	if (!rc)
		rc = cfg_fill(c, net_cfg_keys, net_cfg_keys_n, &p->net, e);
	return rc;
}

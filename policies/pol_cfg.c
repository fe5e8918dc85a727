/* Config keys of the policy families (see sim/cfg.h). */
#include "sim/cfg.h"

int pol_cfg_register(cfg_schema_t *s)
{
	(void)s;
	return 0;
}

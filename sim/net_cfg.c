/* Config keys of this module (see sim/cfg.h). */
#include "sim/cfg.h"

const cfg_key_t net_cfg_keys[] = {
	{0},
};
const size_t net_cfg_keys_n = 0;

/* Config keys of the simulator core (see sim/cfg.h). Filled in with the
 * cluster model. */
#include "sim/cfg.h"

const cfg_key_t sim_cfg_keys[] = {
	{0},
};
const size_t sim_cfg_keys_n = 0;

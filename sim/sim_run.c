/* sim_run — placeholder until the cluster model lands. */
#include "sim/sim.h"

const char sim_default_experiment[] = "";

int sim_run(const cfg_t *cfg, sim_results_t *res, err_t *e)
{
	(void)cfg;
	(void)res;
	return err_set(e, KS_ERUNTIME, "sim_run: not implemented yet");
}

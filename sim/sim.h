/* sim — run one experiment: config in, results out.
 *
 * sim_run builds the cluster, network and policies from a finalized cfg_t,
 * streams the configured trace through the engine and fills *res (which the
 * caller later releases with sim_results_free). Returns 0, KS_EINPUT for bad
 * config or trace input (res left empty), or another KS_E* code.
 */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include "sim/cfg.h"
#include "sim/err.h"
#include "sim/results.h"

int sim_run(const cfg_t *cfg, sim_results_t *res, err_t *e);
/* Built-in default experiment, as INI text. */
extern const char sim_default_experiment[];

#endif

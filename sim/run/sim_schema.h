/* sim_schema — the full built-in config schema: every module's keys and the
 * built-in policies and presets, gathered by sim/run/sim_schema.c. */
#ifndef KVSIM_SIM_SCHEMA_H
#define KVSIM_SIM_SCHEMA_H

#include "sim/base/cfg.h"

/* A new schema holding every built-in key; the caller frees it with
 * cfg_schema_free. NULL when out of memory (or a registration clashes,
 * said on stderr). */
cfg_schema_t *cfg_schema_default(void);

#endif

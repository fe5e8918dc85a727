/* sim_copy_mode — the timing modes' registration: SIM_COPY_MODE_LIST
 * (sim_copy_mode.h) to each mode's table and name, and a copy's mode. */
#include "sim/run/sim_copy_mode.h"

#define SIM_COPY_MODE_ENTRY(M, name, ops) &ops,
static const sim_copy_mode_ops_t *const modes[COPY_MODE_N] = {
	SIM_COPY_MODE_LIST(SIM_COPY_MODE_ENTRY)};
#undef SIM_COPY_MODE_ENTRY

#define SIM_COPY_MODE_NAME(M, name, ops) name,
static const char *const names[COPY_MODE_N] = {SIM_COPY_MODE_LIST(SIM_COPY_MODE_NAME)};
#undef SIM_COPY_MODE_NAME

const sim_copy_mode_ops_t *sim_copy_mode_ops(int m)
{
	return m >= 0 && m < COPY_MODE_N ? modes[m] : NULL;
}

const char *sim_copy_mode_name(int m)
{
	return m >= 0 && m < COPY_MODE_N ? names[m] : "?";
}

int sim_copy_mode_pick(const net_params_t *np, int to_instance)
{
	int m = 0;
	while (m < COPY_MODE_N - 1 && !modes[m]->takes(np, to_instance))
		m++;
	return m; /* the last line takes what no line above it took */
}

int sim_copy_modes_init(sim_ctx_t *s, err_t *e)
{
	for (int m = 0; m < COPY_MODE_N; m++) {
		int rc = modes[m]->init ? modes[m]->init(s, e) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

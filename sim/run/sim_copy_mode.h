/* sim_copy_mode — how a copy's time is paid, one ops table per timing mode,
 * registered in SIM_COPY_MODE_LIST: the enum (COPY_*), the names and the
 * choice of a copy's mode all come from the list, and only the modes' own
 * files (sim_copy_flows.c, sim_copy_lone.c) and this registration
 * (sim_copy_mode.c) test a copy's mode; everything else calls its hooks
 * (a handoff is set to flows: it shares links whatever the run's mode). A
 * copy's mode is the first line of the list whose `takes` accepts it under
 * the run's [network] keys (contention, copy_charge), so a line sits above
 * those it overrides; flows, last, takes every copy. A copy not started yet (a deferred one) has mode
 * COPY_MODE_N, none: nothing of it is timed until sim_copy_flows_start
 * picks its mode.
 *
 * How each mode lands a copy: its shards' rows and bytes go through
 * sim_copy_shard_row and the copy lands with sim_copy_land (sim_copy_land.c),
 * called from the mode's own end: a flow's done callback (flows), the copy
 * timer's event (timer), the target's compute finishing the copy's job
 * (job, cluster_params_t.on_job_done). Times ns, sizes bytes; the tables are
 * static data, nothing here allocates. Hooks return 0 or a negative KS_E*.
 */
#ifndef KVSIM_SIM_COPY_MODE_H
#define KVSIM_SIM_COPY_MODE_H

#include "sim/run/sim_copies.h"

/* X(MODE, "name", table): COPY_<MODE>, its name and its ops table (defined
 * with external linkage in the mode's own file). In precedence order. */
#define SIM_COPY_MODE_LIST(X)                                                                      \
	X(JOB, "job", sim_copy_job)                                                                \
	X(TIMER, "timer", sim_copy_timer)                                                          \
	X(FLOWS, "flows", sim_copy_flows)

#define SIM_COPY_MODE_ENUM(M, name, ops) COPY_##M,
enum { SIM_COPY_MODE_LIST(SIM_COPY_MODE_ENUM) COPY_MODE_N };
#undef SIM_COPY_MODE_ENUM

typedef struct sim_copy_mode_ops {
	const char *name;
	/* Whether this mode times a copy under the run's [network] keys np;
	 * to_instance: the copy lands at an instance (not a tier below HBM). */
	int (*takes)(const net_params_t *np, int to_instance);
	/* Once per run at sim_net_init, for every mode in list order (NULL:
	 * nothing to set up): what it registers with the engine. */
	int (*init)(sim_ctx_t *s, err_t *e);
	/* Starts paying copy c's time (c->n_flows shards of c->shard_bytes,
	 * costs cc): links[0..len) is shard 0's path, of kind c->kind. */
	int (*start)(sim_ctx_t *s, kcopy_t *c, const copy_costs_t *cc, uint32_t *links, int len);
	/* Stops started copy k before it lands: its shards' rows and bytes,
	 * marked cancelled. */
	int (*cancel)(sim_ctx_t *s, kcopy_t *k);
	/* How long (ns) a copy of n blocks of class cls would take now on shard
	 * 0's path links[0..len) of kind `kind`, with costs cc. */
	int64_t (*estimate)(sim_ctx_t *s, const uint32_t *links, uint32_t len, int kind,
			    const copy_costs_t *cc, uint32_t n, int cls);
} sim_copy_mode_ops_t;

#define SIM_COPY_MODE_EXTERN(M, name, ops) extern const sim_copy_mode_ops_t ops;
SIM_COPY_MODE_LIST(SIM_COPY_MODE_EXTERN)
#undef SIM_COPY_MODE_EXTERN

/* The table of mode m (0 <= m < COPY_MODE_N), else NULL. */
const sim_copy_mode_ops_t *sim_copy_mode_ops(int m);
/* The list's name of mode m, "?" outside it. */
const char *sim_copy_mode_name(int m);
/* The mode of a copy under np (to_instance as in takes). */
int sim_copy_mode_pick(const net_params_t *np, int to_instance);
/* Every mode's init, in list order. */
int sim_copy_modes_init(sim_ctx_t *s, err_t *e);

/* sim_copy_flows.c: starts shard g's flow of copy c (c's class and ends) of
 * `bytes` on links[0..len), costs cc; it reports to the flows mode. Shared
 * by the flows mode and handoffs, whose flows always share links. */
int sim_copy_flow_start(sim_ctx_t *s, kcopy_t *c, uint32_t g, const uint32_t *links, int len,
			uint64_t bytes, const copy_costs_t *cc);

#endif

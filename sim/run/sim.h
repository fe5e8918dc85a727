/* sim — run one experiment: config in, results out.
 *
 * sim_run builds the cluster, network and policies from a finalized cfg_t,
 * streams the configured trace through the engine and fills *res (which the
 * caller later releases with sim_results_free). Returns 0, KS_EINPUT for bad
 * config or trace input (res left empty), or another KS_E* code.
 */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include "sim/base/cfg.h"
#include "sim/base/rng.h"
#include "sim/base/err.h"
#include "sim/base/results.h"

int sim_run(const cfg_t *cfg, sim_results_t *res, err_t *e);

/* A stream of arriving requests in nondecreasing arrival order; blocks are
 * chained prefix ids at the simulated block size, valid until the next call.
 * next returns 1 (one request), 0 (end) or a negative KS_E* code. */
typedef struct sim_arrival {
	uint64_t id;
	int64_t arrival_ns;
	uint32_t in_len, out_len, n_blocks;
	const uint64_t *blocks;
	int32_t status; /* 0 ok, 1 failed in the source trace */
	uint32_t n_out_blocks; /* ids after blocks[n_blocks]: full blocks ending in the output */
} sim_arrival_t;

typedef struct sim_source {
	int (*next)(void *ctx, sim_arrival_t *out, err_t *e);
	void *ctx;
	const char *name;       /* trace path or "gen:KIND" */
} sim_source_t;

/* Where a running simulation stands, for a progress line. */
typedef struct sim_progress {
	int64_t now_ns;    /* simulated time */
	uint64_t arrived;  /* requests that have arrived */
	uint64_t finished; /* requests that have completed or been rejected */
	double fraction;   /* share of the trace read, 0..1; < 0 when unknown */
} sim_progress_t;
/* Called from inside the run every few thousand events; it must not touch
 * the simulation (results are the same with or without it). A nonzero
 * return (a KS_E* code) stops the run with that code. */
typedef int (*sim_progress_fn)(void *ctx, const sim_progress_t *p);
typedef struct sim_run_opts {
	sim_progress_fn progress; /* NULL: none */
	void *progress_ctx;
	/* Share of the source read so far (sim_progress_t.fraction); NULL:
	 * unknown. sim_run_opts fills it from the trace reader. */
	double (*fraction)(void *ctx);
	void *fraction_ctx;
} sim_run_opts_t;

/* sim_run with the requests taken from src instead of the [trace] section. */
int sim_run_source(const cfg_t *cfg, sim_source_t *src, sim_results_t *res, err_t *e);
struct pol_registry;
/* sim_run_source with policies looked up in reg (built-ins when NULL),
 * for runs that load plugins. */
int sim_run_reg(const cfg_t *cfg, const struct pol_registry *reg, sim_source_t *src,
		sim_results_t *res, err_t *e);

/* sim_run with policies looked up in reg (plugins); NULL = built-ins. */
int sim_run_with(const cfg_t *cfg, const struct pol_registry *reg, sim_results_t *res,
		 err_t *e);
/* sim_run_with and sim_run_reg with options (o may be NULL). */
int sim_run_opts(const cfg_t *cfg, const struct pol_registry *reg, const sim_run_opts_t *o,
		 sim_results_t *res, err_t *e);
int sim_run_source_opts(const cfg_t *cfg, const struct pol_registry *reg, sim_source_t *src,
			const sim_run_opts_t *o, sim_results_t *res, err_t *e);

/* Seeds per component: sim_seed_for and SIM_STREAM_* in sim/base/rng.h. */
/* Built-in default experiment, as INI text. */
extern const char sim_default_experiment[];

#endif

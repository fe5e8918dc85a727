/* ev_bench — engine benchmarks: PHOLD over ev_engine and the classic hold
 * model over ev_queue, as library calls (for tests) and as `kvsim bench`
 * kinds (for users; see sim/cli/cli_bench.c).
 *
 * Times are int64 nanoseconds of simulated time; wall times are seconds of
 * CLOCK_MONOTONIC and cover only the measured loop, not setting up the
 * initial events. Randomness is one GSL taus2 stream (L'Ecuyer 1996, among
 * the fastest good generators GSL has) seeded by `seed`, so a
 * run's committed count and checksum are a pure function of the parameters.
 * Errors: KS_EINPUT for bad parameters, KS_ENOMEM when allocation fails, with
 * a message in the caller's err_t. The *_main functions follow sim/cli/cli.h:
 * they return an exit status (0 ok, 1 runtime, 2 usage).
 */
#ifndef KVSIM_EV_BENCH_H
#define KVSIM_EV_BENCH_H

#include <stdint.h>

#include "sim/base/err.h"

/* PHOLD (Fujimoto 1990): every event schedules one successor at
 * t + lookahead + Exp(mean - lookahead), sent to a uniformly random LP with
 * probability `remote`, else to its own LP; the pending count stays
 * lps * events_per_lp. */
typedef struct ev_phold_params {
	uint32_t lps;
	uint32_t events_per_lp;
	double remote;        /* probability in [0, 1] */
	int64_t lookahead_ns; /* >= 0 */
	int64_t mean_ns;      /* mean delay, > lookahead_ns */
	int64_t end_ns;       /* commit events at or before this time; INT64_MAX: no bound */
	uint64_t max_events;  /* stop after this many committed events; 0: no bound */
	unsigned long seed;
} ev_phold_params_t;

typedef struct ev_phold_result {
	uint64_t committed;   /* events executed (all commit: the run is sequential) */
	uint64_t remote_sent; /* successors sent to a random LP */
	int64_t sim_end_ns;   /* simulated time when the run stopped */
	uint64_t checksum;    /* hash over (time, target) of committed events */
	double wall_s;
	double cpu_s;         /* process CPU time of the loop: robust to a busy host */
} ev_phold_result_t;

/* Fills p with the defaults `kvsim bench phold` documents. */
void ev_phold_defaults(ev_phold_params_t *p);
int ev_phold_run(const ev_phold_params_t *p, ev_phold_result_t *r, err_t *e);

/* Hold model (Vaucher and Duval 1975; Jones 1986): with `size` events
 * pending, repeat `ops` times: pop the earliest, push it back at its time
 * plus an increment drawn from `dist` with mean mean_ns. */
typedef enum ev_hold_dist { EV_HOLD_EXP, EV_HOLD_UNIFORM, EV_HOLD_BIMODAL } ev_hold_dist_t;

typedef struct ev_hold_params {
	uint32_t size;
	uint64_t ops;
	ev_hold_dist_t dist;
	int64_t mean_ns; /* > 0 */
	unsigned long seed;
} ev_hold_params_t;

typedef struct ev_hold_result {
	uint64_t ops;
	uint64_t checksum; /* hash over popped (time, payload) */
	double wall_s;
	double cpu_s;
} ev_hold_result_t;

void ev_hold_defaults(ev_hold_params_t *p);
int ev_hold_run(const ev_hold_params_t *p, ev_hold_result_t *r, err_t *e);

int ev_bench_phold_main(int argc, char **argv);
int ev_bench_hold_main(int argc, char **argv);

#endif

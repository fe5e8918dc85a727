/* sim_timeline — the state of the run's timeline rows (sim_sample.c, which
 * owns it): output.timeline's rule (a row per instance and busy link at
 * every tick, or only the rows that changed), its interval, and under
 * `changed` each series' last row and the instances touched since the last
 * tick. Opaque; the run holds one (sim_timeline_new at setup, freed with
 * sim_timeline_free at the end). Times ns. Errors: NULL from new (out of
 * memory).
 */
#ifndef KVSIM_SIM_TIMELINE_H
#define KVSIM_SIM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

struct sim_timeline;

/* A timeline of n_inst instances and n_links links sampled every sample_ns
 * (0: never); every != 0 is output.timeline = every (no per-series state).
 * Under `changed`: no row yet for any series, every instance touched. */
struct sim_timeline *sim_timeline_new(int64_t sample_ns, int every, uint32_t n_inst,
				      size_t n_links);
void sim_timeline_free(struct sim_timeline *tl);
/* inst's sampled values may have changed: the next tick visits it (tl may
 * be NULL: none yet). */
void sim_timeline_touch(struct sim_timeline *tl, uint32_t inst);
/* The sampling interval, ns (0: no timeline). */
int64_t sim_timeline_interval(const struct sim_timeline *tl);

#endif

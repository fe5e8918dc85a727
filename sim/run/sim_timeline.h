/* sim_timeline — the run's timeline rows and their state (sim_timeline.c):
 * output.timeline's rule (a row per instance and busy link at
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
struct sim_ctx;

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
/* The sample event at now (sim_sample.c): the run's timeline rows at now to
 * its results, and *next, when the next sample is due (an idle timeline
 * skips the ticks that would record nothing). 0 or KS_ENOMEM (or the KVSIM_CHECK
 * builds' KS_ERUNTIME: an instance changed without being touched). */
int sim_timeline_sample(struct sim_ctx *s, int64_t now, int64_t *next);

#endif

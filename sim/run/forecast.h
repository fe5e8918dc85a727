/* forecast — how good a run's forecasts were: what the predictor said at
 * each tick against the arrivals that then came, and where speculative
 * replicas were against where requests went. The run feeds it (sim_sample.c
 * at each tick, sim_arrival.c at each arrival, sim_evict.c from its replica
 * accounting) and writes
 * its forecast.* metrics into /summary (recorder.h lists them).
 *
 * Definitions (H: the horizon the replication policy asks for):
 *  - an entry is one prefix of a forecast made at tick t, named by its last
 *    block id (chained ids, pol.h), counted once per tick however often the
 *    forecast repeats it; it is a hit for window w when a request whose
 *    blocks start with the entry's arrives in (t, t + w]. precision is the
 *    hit share for w = H, precision_h4 for H/4 and precision_x4 for 4H.
 *    A prefix a predictor keeps naming weighs once per tick there, so
 *    prefix_precision counts each distinct prefix once: of the prefixes
 *    any forecast named (prefixes), the share with an arrival in
 *    (t, t + H] after some tick t that named it. Both are recorded only by
 *    a run that asked a forecast.
 *  - a request's shared prefix is its longest prefix of blocks all seen in
 *    earlier arrivals (every arrival counts, rejected ones too: they are
 *    demand the predictor sees). It is eligible when that prefix has at least
 *    min_blocks blocks (the predictor's shortest reported prefix). recall:
 *    the share of eligible requests that an entry covering their whole
 *    shared prefix (an entry that is a prefix of theirs, of at least that
 *    length) forecast at some tick t with arrival in (t, t + H]; recall_h4
 *    and recall_x4 the same with H/4 and 4H in place of H;
 *    recall_partial: the same with any entry of >= min_blocks blocks that is
 *    a prefix of theirs.
 *  - a replica is a speculative copy of blocks[0..n) to one instance, named
 *    by blocks[n - 1]; it exists from its copy's start (in flight counts)
 *    until the copy is cancelled or that last block is evicted there.
 *    placement_acc: of the routed requests that arrived while a replica of a
 *    prefix of theirs existed, the share routed to an instance holding one.
 *  - lead: for each used replica, its first use (the admission that hit its
 *    blocks) minus its landing, in s; never negative, as only landed blocks
 *    can be hit.
 * A ratio with a zero denominator is NaN; a run whose replication policy
 * asks no forecast (horizon 0, no fcast_t) reports every forecast.* as NaN.
 *
 * Cost: per arrival O(its blocks) hash probes plus the tick records it
 * resolves; per tick O(entries); each record is resolved and expired once.
 * Memory: the ids of every arrival's blocks (the shared-prefix test), the
 * entries' and replicas' prefixes, and the tick records of the last 4H.
 * Ownership: fcast_new allocates everything, fcast_free frees it; inputs are
 * read, never kept. Errors: 0 or KS_ENOMEM (then the counts are incomplete,
 * and the run fails).
 */
#ifndef KVSIM_FORECAST_H
#define KVSIM_FORECAST_H

#include <stdint.h>

#include "policies/pol.h"
#include "sim/base/results.h"

typedef struct fcast fcast_t;

/* horizon_ns > 0; min_blocks >= 1. NULL on ENOMEM. */
fcast_t *fcast_new(int64_t horizon_ns, uint32_t min_blocks);
void fcast_free(fcast_t *f);
/* The forecast of the tick at now (now never decreases between calls). */
int fcast_tick(fcast_t *f, int64_t now, const pol_forecast_t *fc);
/* A request of prompt blocks b[0..n) arrived at now; inst is where it was
 * routed, or -1 when it was not (rejected, failed). */
int fcast_arrival(fcast_t *f, int64_t now, const uint64_t *b, uint32_t n, int32_t inst);
/* A speculative copy (copy id, > 0) of the prefix ending with block id key
 * was accepted towards inst. */
int fcast_replica_start(fcast_t *f, uint64_t copy, uint64_t key, uint32_t inst);
/* Copy id was cancelled (nothing for a copy that made no replica). */
void fcast_replica_cancel(fcast_t *f, uint64_t copy);
/* Block id was evicted at inst. */
void fcast_evicted(fcast_t *f, uint64_t id, uint32_t inst);
/* A replica that landed at landed_ns was used for the first time at now_ns. */
int fcast_replica_used(fcast_t *f, int64_t landed_ns, int64_t now_ns);
/* Appends the forecast.* metrics to res (f NULL: every one NaN); sorts the
 * leads it keeps, so call it once, at the end. */
int fcast_report(fcast_t *f, sim_results_t *res);

#endif

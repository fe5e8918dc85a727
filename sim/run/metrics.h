/* metrics — summary statistics of a run's per-request results.
 *
 * Reads res->req and appends named metrics to res (sim_results_metric):
 * counts by status; the offered requests (every status but
 * REQ_FAILED_IN_TRACE: rows the source trace marks failed, which the
 * simulator never routes, so they are neither served nor missed) and the
 * shares of them admitted (not rejected) and completed; p50/p90/p95/p99 of
 * TTFT over offered
 * requests, a request not completed (rejected for any reason, or unfinished
 * at the end) counting as +inf; mean/p50/p90/p95/p99 of TTFT, TPOT, TBT
 * p90, end-to-end latency and queueing delay over completed requests (ms);
 * throughput (requests/s, output tokens/s over the span from first arrival
 * to last completion); SLO attainment as a share of offered requests (not
 * completed: a miss) and of completed ones, and goodput; cache hit rates
 * (token-weighted: prompt tokens served from KV / prompt tokens;
 * block-weighted: shareable blocks matched / shareable blocks). Quantiles
 * use GSL's interpolated quantile on sorted data, +inf propagating
 * (sim/base/quantile.h). Returns 0 or KS_ENOMEM.
 */
#ifndef KVSIM_METRICS_H
#define KVSIM_METRICS_H

#include <stdint.h>

#include "sim/base/results.h"

typedef struct metrics_opts {
	int64_t ttft_slo_ns, tpot_slo_ns;
	uint64_t blocks_total, blocks_hit; /* shareable prompt blocks, and matched */
} metrics_opts_t;

int metrics_summarize(sim_results_t *res, const metrics_opts_t *o);

#endif

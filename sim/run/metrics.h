/* metrics — summary statistics of a run's per-request results.
 *
 * Reads res's request rows (sim_results_rows: those spilled by streaming
 * too) and appends named metrics to res (sim_results_metric):
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
 * (sim/base/quantile.h). The answers are exact, in memory that does not
 * keep rows: one pass to count, then one per latency, each gathering one
 * double per request (8 B a request, freed on return). Returns 0, KS_ENOMEM
 * or KS_EIO (a spill read failed).
 */
#ifndef KVSIM_METRICS_H
#define KVSIM_METRICS_H

#include <stdint.h>

#include "sim/base/err.h"
#include "sim/base/results.h"

typedef struct metrics_opts {
	int64_t ttft_slo_ns, tpot_slo_ns;
	uint64_t blocks_total, blocks_hit; /* shareable prompt blocks, and matched */
} metrics_opts_t;

int metrics_summarize(sim_results_t *res, const metrics_opts_t *o);

/* Per-window summaries: for each window i, [edges[i], edges[i + 1]) in ns
 * of arrival, every metric metrics_summarize gives (same definitions, same
 * order, same passes, a double per request of the window at most), over the
 * request rows that arrived in it, appended to res->win as
 * (window i, kind, its bounds, name, unit, value). hit_rate_blocks counts
 * the cluster's blocks, which rows do not carry: a window that holds every
 * row gets the run's value, any other NaN. 0, KS_ENOMEM or KS_EIO. */
int metrics_windows(sim_results_t *res, const metrics_opts_t *o, const int64_t *edges,
		    size_t n_edges, int kind);
/* Parses "t0,t1,..." (seconds, increasing, >= 0, at least two) into
 * *edges (ns, malloc'd) and *n: 0 or KS_EINPUT "[output] windows: reason",
 * KS_ENOMEM. "" gives *n = 0. */
int metrics_windows_parse(const char *s, int64_t **edges, size_t *n, err_t *e);

#endif

/* recorder — every result row and every summary metric of a run, in one
 * place.
 *
 * Rows: a run's per-request rows (the cluster hands each finished request
 * to rec_request, its on_result hook), transfers and timeline samples are
 * appended here to the run's sim_results_t, which owns them (freed by
 * sim_results_free). Metrics: every summary metric kvsim writes is one row
 * of REC_METRICS below (name, unit, meaning), in the order a run's /summary
 * lists them; code records a value by its id (rec_metric), so no other file
 * spells a metric's name. Families are consecutive ids: the five statistics
 * of a latency (mean, p50, p90, p95, p99) over completed requests, the four
 * percentiles of TTFT over offered requests (p50 .. p99), the four link
 * kinds by class and quantity, the speculation counters in pol_spec_metrics'
 * order, and the forecast accuracy in fcast_report's order
 * (sim/run/forecast.h).
 * Under streaming (sim_results_stream) rows go on to a spill file in
 * blocks, so memory holds at most a block of each table.
 * Errors: 0, KS_ENOMEM or, streaming, KS_EIO (the results keep what they
 * had).
 */
#ifndef KVSIM_RECORDER_H
#define KVSIM_RECORDER_H

#include <stdio.h>

#include "sim/base/results.h"

/* X(ID, name, unit, meaning) */
#define REC_LATENCY(P, p, what)                                                                    \
	X(P##_MEAN, p "_mean_ms", "ms", "mean " what " of completed requests")                     \
	X(P##_P50, p "_p50_ms", "ms", "median " what " of completed requests")                     \
	X(P##_P90, p "_p90_ms", "ms", "90th percentile " what " of completed requests")            \
	X(P##_P95, p "_p95_ms", "ms", "95th percentile " what " of completed requests")            \
	X(P##_P99, p "_p99_ms", "ms", "99th percentile " what " of completed requests")
/* TTFT over offered requests (every one but failed_in_trace): a request
 * not completed (rejected, unfinished) counts as +inf, so shedding load
 * cannot shorten the tail; a quantile interpolated towards +inf is +inf
 * (sim/base/quantile.h). No mean: one +inf would make it +inf. */
#define REC_LATENCY_OFFERED(P, p, what)                                                            \
	X(P##_P50, p "_p50_ms", "ms", "median " what " of offered requests (+inf: not completed)") \
	X(P##_P90, p "_p90_ms", "ms", "90th percentile " what " of offered requests (+inf: not completed)") \
	X(P##_P95, p "_p95_ms", "ms", "95th percentile " what " of offered requests (+inf: not completed)") \
	X(P##_P99, p "_p99_ms", "ms", "99th percentile " what " of offered requests (+inf: not completed)")
#define REC_LINK(K, k)                                                                             \
	X(LINK_BYTES_FG_##K, "link_bytes_fg." k, "bytes", "foreground bytes over " k " links")     \
	X(LINK_BUSY_FG_##K, "link_busy_s_fg." k, "s", "link-seconds " k " links carried foreground") \
	X(LINK_BYTES_BG_##K, "link_bytes_bg." k, "bytes", "background bytes over " k " links")     \
	X(LINK_BUSY_BG_##K, "link_busy_s_bg." k, "s", "link-seconds " k " links carried background")
/* Forecast accuracy (sim/run/forecast.h has the exact definitions); NaN
 * when the run asked no forecast, or a ratio's denominator is 0. */
#define REC_FORECAST                                                                               \
	X(FORECAST_ENTRIES, "forecast.entries", "", "forecast entries, once per prefix per tick")  \
	X(FORECAST_PRECISION, "forecast.precision", "", "entries whose prefix came within the horizon") \
	X(FORECAST_PRECISION_H4, "forecast.precision_h4", "", "entries whose prefix came within horizon/4") \
	X(FORECAST_PRECISION_X4, "forecast.precision_x4", "", "entries whose prefix came within 4 x horizon") \
	X(FORECAST_REQUESTS_ELIGIBLE, "forecast.requests_eligible", "", "arrivals sharing a prefix of >= the predictor's minimum") \
	X(FORECAST_RECALL, "forecast.recall", "", "eligible arrivals whose shared prefix was forecast for them") \
	X(FORECAST_RECALL_H4, "forecast.recall_h4", "", "... forecast within horizon/4 before they came") \
	X(FORECAST_RECALL_X4, "forecast.recall_x4", "", "... forecast within 4 x horizon before they came") \
	X(FORECAST_RECALL_PARTIAL, "forecast.recall_partial", "", "eligible arrivals with some prefix of theirs forecast") \
	X(FORECAST_PLACEMENT_REQUESTS, "forecast.placement_requests", "", "routed arrivals while a replica of their prefix existed") \
	X(FORECAST_PLACEMENT_ACC, "forecast.placement_acc", "", "... routed to an instance holding or receiving one") \
	X(FORECAST_LEADS, "forecast.leads", "", "replicas used (lead samples)")                       \
	X(FORECAST_LEAD_MEAN_S, "forecast.lead_mean_s", "s", "mean time from a replica's landing to its first use") \
	X(FORECAST_LEAD_P50_S, "forecast.lead_p50_s", "s", "median time from a replica's landing to its first use")
/* Recorded only when the run asked a forecast (fcast_report), so runs without
 * one keep their /summary. */
#define REC_FORECAST_PREFIX                                                                        \
	X(FORECAST_PREFIXES, "forecast.prefixes", "", "distinct prefixes any forecast named")      \
	X(FORECAST_PREFIX_PRECISION, "forecast.prefix_precision", "", "of those, the share whose prefix came within the horizon of a tick naming it")
/* The tiers below host memory (sim/run/sim_tiers.h), recorded only when
 * kvcache.nvme_kv_gb or pool_kv_gb is on, so runs without them keep their
 * /summary. Tiers are inclusive: offloaded = evicted + resident at the end. */
#define REC_TIER(P, p, what)                                                                       \
	X(P##_BLOCKS_OFFLOADED, p ".blocks_offloaded", "blocks", "blocks written to " what)          \
	X(P##_BLOCKS_EVICTED, p ".blocks_evicted", "blocks", "blocks evicted from " what)            \
	X(P##_BLOCKS_RESIDENT, p ".blocks_resident", "blocks", "blocks in " what " at the end (or landing)") \
	X(P##_BLOCKS_FETCHED, p ".blocks_fetched", "blocks", "blocks fetched from " what " into HBM")
#define REC_TIERS                                                                                  \
	X(TOK_FETCHED_NVME, "tok_fetched_nvme", "tokens", "of tok_fetched_host: prompt tokens fetched from NVMe") \
	X(TOK_FETCHED_POOL, "tok_fetched_pool", "tokens", "of tok_fetched_host: prompt tokens fetched from the pool") \
	REC_TIER(NVME, "nvme", "the nodes' NVMe tiers")                                            \
	REC_TIER(POOL, "pool", "the pooled store")                                                 \
	REC_LINK(NVME, "nvme")                                                                     \
	REC_LINK(POOL, "pool")
/* The offline eviction bound (sim/run/bound.h), recorded only when
 * output.oracle_bound is on, so runs without it keep their /summary. */
#define REC_BOUND                                                                                  \
	X(BOUND_LOOKUPS_BLOCKS, "bound.lookups_blocks", "blocks", "shareable blocks in the replayed streams (= the hit rate's denominator)") \
	X(BOUND_BELADY_HIT_RATE_BLOCKS, "bound.belady_hit_rate_blocks", "", "block hit rate of Belady's MIN on each instance's stream, same KV pool") \
	X(BOUND_BELADY_GAP_BLOCKS, "bound.belady_gap_blocks", "", "bound.belady_hit_rate_blocks - hit_rate_blocks") \
	X(BOUND_PLACE_HIT_RATE_BLOCKS, "bound.place_hit_rate_blocks", "", "block hit rate at best with copies within output.bound_bw_gbps") \
	X(BOUND_PLACE_UNLIMITED_BLOCKS, "bound.place_unlimited_hit_rate_blocks", "", "... with unlimited copy bandwidth (1 - the cluster's first touches / lookups)") \
	X(BOUND_PLACE_GAP_BLOCKS, "bound.place_gap_blocks", "", "bound.place_hit_rate_blocks - hit_rate_blocks") \
	X(BOUND_NETWORK_COST_BLOCKS, "bound.network_cost_blocks", "", "hit rate the copy budget costs the bound: unlimited - budgeted")
/* The routers' view against the true state (sim/run/sim_rquality.h),
 * recorded only when output.view_quality is on (or the routing view is
 * events, or replicas > 1), so other runs keep their /summary. */
#define REC_VIEW                                                                                   \
	X(VIEW_MISROUTED_SHARE, "view.misrouted_share", "", "routed decisions whose view believed more of the chosen instance's prefix than it held") \
	X(VIEW_STALE_SHARE, "view.stale_share", "", "... misrouted where the instance had held the first missing block before") \
	X(VIEW_NEVER_SHARE, "view.never_share", "", "... misrouted where the instance never held the first missing block") \
	X(VIEW_UNSEEN_SHARE, "view.unseen_share", "", "routed decisions whose view believed less of the chosen instance's prefix than it held") \
	X(VIEW_MISROUTE_COST_MS, "view.misroute_cost_ms", "ms", "mean true-state regret (estimated TTFT chosen - best) of misrouted decisions; 0 if none") \
	X(VIEW_REGRET_MEAN_MS, "view.regret_mean_ms", "ms", "mean true-state regret of every routed decision") \
	X(VIEW_EVENTS_SENT, "view.events_sent", "", "KV events sent, summed over router replicas") \
	X(VIEW_EVENTS_LOST, "view.events_lost", "", "KV events lost, summed over router replicas") \
	X(VIEW_INDEX_BYTES, "view.index_bytes", "bytes", "bytes of every replica's per-instance KV index at the end") \
	X(VIEW_DELAY_MEAN_MS, "view.delay_mean_ms", "ms", "mean delay of KV event messages, sending to applying")
/* Cold join (sim/run/sim_join.h), recorded only when cluster.join_instances
 * > 0, so other runs keep their /summary. */
#define REC_JOIN                                                                                   \
	X(JOIN_INSTANCES, "join.instances", "", "instances that joined the cluster cold (the last ones by index)") \
	X(JOIN_FIRST_S, "join.first_s", "s", "time the first cold instance joined") \
	X(JOIN_LAST_S, "join.last_s", "s", "time the last cold instance joined")
#define REC_METRICS                                                                                \
	X(REQUESTS, "requests", "", "requests in the run (every status)")                          \
	X(COMPLETED, "completed", "", "requests completed")                                        \
	X(REJECTED, "rejected", "", "requests rejected (too long, SLO, overload)")                 \
	X(REJECTED_OVERLOAD, "rejected_overload", "", "rejected: their instance's queue was full") \
	X(UNFINISHED, "unfinished", "", "still in the system when the run stopped")                \
	X(ABANDONED, "abandoned", "", "left their queue: no first token within client_timeout_s")  \
	X(FAILED_IN_TRACE, "failed_in_trace", "", "failed in the source trace, so never routed (not offered)") \
	X(OFFERED, "offered", "", "requests offered to the cluster: every status but failed_in_trace") \
	X(ADMITTED_SHARE, "admitted_share", "", "(offered - rejected) / offered")                   \
	X(COMPLETED_SHARE, "completed_share", "", "completed / offered")                             \
	X(SPAN_S, "span_s", "s", "first arrival to last completion")                              \
	X(OFFERED_RPS, "offered_rps", "1/s", "offered requests per second of their first to last arrival (NaN for < 2 arrival times)") \
	X(THROUGHPUT_RPS, "throughput_rps", "1/s", "completed requests per second of span")        \
	X(OUTPUT_TOKENS_PER_S, "output_tokens_per_s", "1/s", "output tokens per second of span")   \
	X(SLO_TTFT_ATTAINMENT, "slo_ttft_attainment", "", "share of offered requests completed within the TTFT SLO (not completed: a miss)") \
	X(SLO_TPOT_ATTAINMENT, "slo_tpot_attainment", "", "share of offered requests completed within the TPOT SLO (not completed: a miss)") \
	X(SLO_ATTAINMENT, "slo_attainment", "", "share of offered requests completed within both SLOs (not completed: a miss)") \
	X(SLO_ATTAINMENT_COMPLETED, "slo_attainment_completed", "", "share of completed requests meeting both SLOs") \
	X(GOODPUT_RPS, "goodput_rps", "1/s", "completed requests meeting both SLOs per second of span") \
	X(HIT_RATE_TOKENS, "hit_rate_tokens", "", "prompt tokens served from KV / prompt tokens")   \
	X(HIT_RATE_BLOCKS, "hit_rate_blocks", "", "shareable blocks matched / shareable blocks")   \
	X(SPEC_HIT_TOKENS, "spec_hit_tokens", "tokens", "prompt tokens found thanks to a speculative copy") \
	REC_LATENCY_OFFERED(TTFT, "ttft", "time to first token")                                   \
	REC_LATENCY(TTFT_COMPLETED, "ttft_completed", "time to first token")                       \
	REC_LATENCY(TPOT, "tpot", "time per output token")                                         \
	REC_LATENCY(TBT_P90, "tbt_p90",                                                            \
		    "per-request 90th-percentile time between tokens (exact or < 0.1% above, "     \
		    "sim/cluster/tok_hist.h)")                                                     \
	REC_LATENCY(E2E, "e2e", "arrival-to-last-token latency")                                   \
	REC_LATENCY(QUEUE, "queue", "queueing delay (arrival to admission)")                       \
	REC_LATENCY(TTFT_NOSPEC, "ttft_nospec",                                                    \
		    "time to first token without a speculative hit (the requests replication "     \
		    "did not serve: what its copies cost the others)")                             \
	X(TOK_FETCHED_PEER, "tok_fetched_peer", "tokens", "prompt tokens fetched from a peer's HBM") \
	X(TOK_FETCHED_HOST, "tok_fetched_host", "tokens", "prompt tokens fetched from host memory") \
	X(INSTANCES, "instances", "", "serving instances")                                         \
	X(KV_BLOCKS_PER_INSTANCE, "kv_blocks_per_instance", "blocks", "KV pool of one instance")   \
	X(KV_BLOCK_ALLOCS, "kv_block_allocs", "blocks", "KV block allocations")                    \
	X(KV_BLOCK_FREES, "kv_block_frees", "blocks", "KV block releases")                         \
	X(SIM_EVENTS, "sim_events", "", "engine events dispatched")                                \
	X(SIM_TIME_S, "sim_time_s", "s", "simulated time at the end")                              \
	X(QUEUE_LEN_MEAN, "queue_len_mean", "requests", "time-mean waiting requests per instance, summed") \
	X(SPEC_TRIGGERS, "spec.triggers", "", "replication triggers")                              \
	X(SPEC_REPLICAS_CREATED, "spec.replicas_created", "", "speculative replicas that landed")  \
	X(SPEC_REPLICAS_USED, "spec.replicas_used", "", "replicas a request used")                 \
	X(SPEC_REPLICAS_WASTED, "spec.replicas_wasted", "", "replicas gone unused")                \
	X(SPEC_WASTE_RATIO, "spec.waste_ratio", "", "wasted / (used + wasted)")                     \
	X(SPEC_UNUSED_VRAM_GB_S, "spec.unused_vram_gb_s", "GB-s", "VRAM-time held by unused replica blocks") \
	X(SPEC_BYTES_FG, "spec.bytes_fg", "bytes", "foreground copy bytes")                        \
	X(SPEC_BYTES_BG, "spec.bytes_bg", "bytes", "background (speculative) copy bytes")          \
	X(SPEC_COPIES_CANCELLED, "spec.copies_cancelled", "", "copies cancelled")                  \
	X(SPEC_COPIES_REFUSED, "spec.copies_refused", "", "copies refused (every reason)")         \
	X(SPEC_WARM_HITS, "spec.warm_hits", "", "admissions that hit speculative blocks")          \
	X(SPEC_FG_FLOWS, "spec.fg_flows", "", "foreground flows finished")                         \
	X(SPEC_FG_SLOWDOWN_MEAN_S, "spec.fg_slowdown_mean_s", "s", "foreground time lost to sharing, summed") \
	X(SPEC_BYTES_CANCELLED, "spec.bytes_cancelled", "bytes", "bytes of cancelled copies moved") \
	X(SPEC_REFUSED_VRAM, "spec.refused_vram", "", "refused: VRAM budget")                      \
	X(SPEC_REFUSED_BW, "spec.refused_bw", "", "refused: bandwidth budget")                     \
	X(SPEC_REFUSED_ROOM, "spec.refused_room", "", "refused: no room at the target")            \
	X(SPEC_REFUSED_SOURCE, "spec.refused_source", "", "refused: no source holds the blocks")   \
	X(SPEC_PREFIX_OVER_BUDGET, "spec.prefix_over_budget", "", "forecast prefixes larger than the budget") \
	X(SPEC_HINT_ROUTED, "spec.hint_routed", "", "requests routed by a replication hint")       \
	X(SPEC_COPIES_DEFERRED, "spec.copies_deferred", "", "copies that waited for their source") \
	X(SPEC_DEFERRED_CANCELLED, "spec.deferred_cancelled", "", "deferred copies cancelled")     \
	X(SPEC_DEFERRAL_MEAN_MS, "spec.deferral_mean_ms", "ms", "mean wait of a deferred copy")    \
	REC_LINK(NVLINK, "nvlink")                                                                 \
	REC_LINK(PCIE, "pcie")                                                                     \
	REC_LINK(NIC, "nic")                                                                       \
	REC_LINK(FABRIC, "fabric")                                                                 \
	X(FG_SLOWDOWN_MEAN, "fg_slowdown_mean", "", "mean foreground flow time / time alone")      \
	X(BYTES_FG, "bytes_fg", "bytes", "foreground bytes moved")                                 \
	X(BYTES_BG, "bytes_bg", "bytes", "background bytes moved")                                 \
	REC_TIERS                                                                                  \
	REC_FORECAST                                                                               \
	REC_FORECAST_PREFIX                                                                        \
	X(DISAGG_HANDOFF_BYTES, "disagg.handoff_bytes", "bytes", "KV bytes handoff flows moved (in bytes_fg; 0 with disagg off)") \
	X(DISAGG_HANDOFF_WAIT_MEAN_MS, "disagg.handoff_wait_mean_ms", "ms", "mean prefill end to KV landing of handed-off requests (NaN with disagg off)") \
	REC_BOUND                                                                                  \
	REC_VIEW                                                                                   \
	REC_JOIN

typedef enum {
#define X(id, name, unit, doc) REC_##id,
	REC_METRICS
#undef X
	REC_N_METRICS
} rec_metric_id_t;

typedef struct rec_metric_def {
	const char *name, *unit, *doc;
} rec_metric_def_t;

/* The definition of metric id (REC_*), or NULL outside the list. */
const rec_metric_def_t *rec_metric_def(int id);
/* Appends metric id with value v to res (0 or KS_ENOMEM). */
int rec_metric(sim_results_t *res, int id, double v);
/* Writes every metric as "name<TAB>unit<TAB>meaning" lines. */
void rec_metric_list(FILE *f);

/* Row appenders: rec_request matches cluster_params_t's on_result hook
 * (ctx: the sim_results_t). */
int rec_request(void *ctx, const res_request_t *row);
int rec_transfer(sim_results_t *res, const res_transfer_t *row);
int rec_sample(sim_results_t *res, const res_sample_t *row);

#endif

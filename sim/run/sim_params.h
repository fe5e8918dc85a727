/* sim_params — the typed parameters of one run: every key of [experiment],
 * [cluster], [kvcache], [scheduler], [slo], [output] and [network], filled
 * from a finalized config by sim_params_fill (the key tables of sim_cfg.c and
 * sim/net/net_cfg.c say where each value goes). The run reads
 * these fields, never the config store; cluster_params_t and the network's
 * settings are made from them. Units as each field says; strings are
 * borrowed from the config (valid while it lives unchanged).
 */
#ifndef KVSIM_SIM_PARAMS_H
#define KVSIM_SIM_PARAMS_H

#include <stdint.h>

#include "sim/base/cfg.h"
#include "sim/net/net.h"

/* [kvcache] fetch and host_fetch: when a missing block held elsewhere (a
 * peer instance, the node's host tier) is fetched instead of recomputed. */
typedef enum { SIM_FETCH_NEVER, SIM_FETCH_COST, SIM_FETCH_ALWAYS } sim_fetch_t;
/* Its name as the config gives it ("never", ...; sim_cfg.c's map). */
const char *sim_fetch_name(int fetch);

/* [output] timeline: which samples become /timeline rows. */
typedef enum { SIM_TL_CHANGED, SIM_TL_EVERY } sim_tl_t;

/* [cluster] handoff: when a request's KV leaves its prefill instance. */
typedef enum { SIM_HANDOFF_AFTER_PREFILL, SIM_HANDOFF_LAYERWISE } sim_handoff_t;
/* [cluster] decode_routing: how the decode pool is chosen from. */
typedef enum { SIM_DROUTE_LEAST_LOADED, SIM_DROUTE_KV_CAPACITY, SIM_DROUTE_PREFIX_AWARE } sim_droute_t;

/* [cluster] disaggregated prefill/decode pools (sim/run/sim_disagg.h). */
typedef struct sim_disagg_params {
	int on;                              /* disagg = true */
	uint32_t prefill_nodes, decode_nodes; /* resolved from prefill_share when both 0 */
	double prefill_share;                /* 0: the counts decide */
	uint32_t prefill_tp, decode_tp;      /* 0: cluster.tp */
	const char *prefill_gpu, *decode_gpu; /* "": gpu.name */
	int handoff;                         /* sim_handoff_t */
	int decode_routing;                  /* sim_droute_t */
	int decode_prefix_cache;             /* decode instances keep prompt blocks as cache */
} sim_disagg_params_t;

/* [cluster] cold join (sim/run/sim_join.h). */
typedef struct sim_join_params {
	uint32_t instances; /* the last ones start absent; 0: none */
	const char *at_s;   /* "t1,t2,...": a join time per instance, s; "": none */
	double every_s;     /* instance k joins at (k + 1) x every_s; 0: none */
} sim_join_params_t;

/* [output]: what the run and the writers read. */
typedef struct sim_out_params {
	const char *dir;
	double timeline_interval_ms;
	int timeline; /* sim_tl_t */
	uint32_t compression; /* deflate level 0..9 */
	uint64_t chunk_rows;
	int oracle_bound; /* record the block streams, report bound.* (sim/run/bound.h) */
	double bound_bw_gbps; /* the placement bound's copy budget per instance, 1e9 B/s; 0: none */
	const char *trace_events; /* "": none (sim/out/out_trace_events.h) */
	int decisions; /* a /decisions row per routing decision (sim/run/sim_decisions.h) */
	int view_quality; /* report view.* for any routing view (sim/run/sim_rquality.h) */
	const char *windows; /* "t0,t1,...": per-window summaries (metrics_windows); "": none */
} sim_out_params_t;

typedef struct sim_params {
	/* [experiment] */
	const char *name;
	uint64_t seed;
	double until_s;       /* 0: until the trace drains */
	uint32_t max_pending; /* per instance; 0: no cap */
	double client_timeout_s; /* waiting without a first token: abandoned; 0: never */
	double max_rss_gb;    /* 0: half of the memory this process may use */
	/* [cluster] */
	uint32_t nodes, gpus_per_node, tp;
	double reserve_fraction;
	uint32_t kv_blocks; /* per instance; 0: what HBM leaves */
	sim_disagg_params_t dg; /* disagg and the pools (sim_disagg.h) */
	sim_join_params_t jn;   /* cold join (sim_join.h) */
	/* [kvcache] */
	uint32_t block_tokens;
	int busy_rule;             /* BUSY_* (sim/cluster/cluster.h) */
	int fetch, host_fetch;     /* sim_fetch_t */
	int resident_at_admission; /* resident_at = admission */
	int copy_uncomputed;       /* copy_from = uncomputed */
	const char *transfer_engine;
	int copy_deferred;
	double host_kv_gb;
	int host_offload;
	/* [kvcache] deeper tiers (sim/run/sim_tiers.h) */
	double nvme_kv_gb;              /* per node; 0: none */
	double nvme_read_bw, nvme_write_bw; /* bytes/s */
	double nvme_lat_us;
	double pool_kv_gb;              /* whole cluster; 0: none */
	double pool_bw;                 /* bytes/s per direction */
	double pool_lat_us;
	/* [scheduler] */
	uint32_t max_num_seqs, max_batched_tokens;
	int chunked_prefill;
	int sched_mode;       /* SCHED_* (sim/cluster/cluster.h) */
	double conservativeness; /* mode = sglang: schedule_conservativeness */
	int ttft_prefill_end; /* ttft = prefill_end */
	double frontend_ms;   /* time outside the engine; < 0: by mode */
	int decode_mode;      /* DECODE_* (sim/cluster/cluster.h) */
	/* [slo] */
	double ttft_ms, tpot_ms;
	sim_out_params_t out;
	net_params_t net;
} sim_params_t;

/* Fills *p from c (cfg_fill over the three tables). KS_EINPUT only for a
 * table that does not match c's schema. */
int sim_params_fill(const cfg_t *c, sim_params_t *p, err_t *e);
struct mdl_compute_params;
/* Resolves what the compute model leaves to the engine: [compute]
 * allreduce = auto becomes custom under scheduler.mode = vllm or sglang
 * (both run their custom all-reduce kernel inside CUDA graphs) and nccl
 * under btb (the original study's simulator costs NCCL-style rings). */
void sim_params_compute(const sim_params_t *p, struct mdl_compute_params *cp);
/* The front-end time of scheduler.frontend_ms, ns: the key's value, or at
 * -1 0 under btb and SIM_FRONTEND_MS under vllm and sglang: the mean gap
 * between measured and simulated TTFT over the five reference vLLM runs
 * (models/README.md has the fit and its data). */
#define SIM_FRONTEND_MS 16.0
int64_t sim_params_frontend_ns(const sim_params_t *p);
/* [output] alone, for the writers and the sweep. */
int sim_out_params_fill(const cfg_t *c, sim_out_params_t *o, err_t *e);

#endif

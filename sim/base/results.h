/* results — what one simulation run produces, handed to the outputs.
 *
 * sim_run fills a sim_results_t; the HDF5 writer, the catalog and the
 * terminal summary read it. All arrays are malloc'd and owned by the struct
 * (sim_results_free releases them). Times are int64 ns, sizes bytes.
 * A field that a run cannot measure is -1 (times) or 0 (counts).
 */
#ifndef KVSIM_RESULTS_H
#define KVSIM_RESULTS_H

#include <stddef.h>
#include <stdint.h>

/* REQ_REJECTED_OVERLOAD: routed to an instance whose waiting queue held
 * experiment.max_pending requests already. REQ_ABANDONED: waited in an
 * instance's queue longer than experiment.client_timeout_s without a first
 * token, so its client gave up (the request leaves the queue). */
enum { REQ_COMPLETED = 0, REQ_REJECTED_TOO_LONG = 1, REQ_REJECTED_SLO = 2,
       REQ_UNFINISHED = 3, REQ_FAILED_IN_TRACE = 4, REQ_REJECTED_OVERLOAD = 5,
       REQ_ABANDONED = 6, REQ_STATUS_N = 7 };
/* XFER_HANDOFF: a request's KV from its prefill to its decode instance
 * (cluster.disagg). */
enum { XFER_FOREGROUND = 0, XFER_BACKGROUND = 1, XFER_HANDOFF = 2 };
/* PATH_NVME_* and PATH_POOL_* (sim/run/sim_tiers.h): a node's NVMe tier
 * read into a GPU / written from host memory; the pooled store read into a
 * GPU / written from a GPU, host memory or NVMe. */
enum { PATH_NVLINK = 0, PATH_PCIE_H2D = 1, PATH_PCIE_D2H = 2, PATH_NET = 3,
       PATH_NVME_READ = 4, PATH_NVME_WRITE = 5, PATH_POOL_GET = 6, PATH_POOL_PUT = 7 };
enum { TL_INSTANCE = 0, TL_LINK = 1 };

typedef struct res_request {
	uint64_t id;
	int64_t arrival_ns;
	int32_t instance;
	int32_t status;        /* REQ_* */
	int64_t ttft_ns, tpot_ns, tbt_p90_ns, e2e_ns, queue_ns, fetch_wait_ns;
	uint32_t input_tokens, output_tokens;
	uint32_t tok_local, tok_peer, tok_host, tok_recomputed;
	uint32_t tok_spec_hit; /* of tok_local: found warm thanks to a speculative copy */
	/* cluster.disagg: the decode instance (-1: none) and the prefill's end
	 * to its KV landing there (-1: no handoff) */
	int32_t decode_instance;
	int64_t handoff_wait_ns;
} res_request_t;

typedef struct res_transfer {
	uint64_t id;
	int32_t src_instance, src_gpu, dst_instance, dst_gpu; /* -1: host tier */
	uint64_t bytes;
	uint32_t blocks;
	int32_t klass;          /* XFER_* */
	int32_t path_kind;      /* PATH_* */
	int32_t granular;       /* 1: one copy per block, 0: contiguous */
	int64_t start_ns, end_ns;
	int32_t cancelled;
	int64_t requested_ns;   /* when the copy was asked for (< start_ns: deferred) */
} res_transfer_t;

/* One /timeline row. Under output.timeline = changed (the default) a series
 * (an instance, a link) gets a row only when one of its values differs from
 * its last row, and a link only while it carries flows plus one zero row as
 * it goes idle: read each series as a step function, its values holding
 * from t_ns until its next row (a link without a row is at 0). Under every,
 * a row per instance and per link in use at each sampling tick. */
typedef struct res_sample {
	int64_t t_ns;
	int32_t kind;           /* TL_* */
	int32_t index;          /* instance or link id */
	double queue_len, batch_size;
	double kv_used_bytes, spec_kv_bytes;
	double util_fg, util_bg; /* link utilisation by class, 0..1 */
} res_sample_t;

/* One /decisions row (output.decisions; sim/run/sim_decisions.h): a
 * routing decision (DEC_ROUTE), a copy a policy asked for (DEC_COPY), a
 * block a KV store evicted (DEC_EVICT) or an admission policy's verdict
 * (DEC_ADMIT). A route's estimates are the TTFT min_ttft minimises
 * (pol_view_ttft_ns) as the routers' view gave it at the decision,
 * whichever router decided; an admission's chosen_est_ns is its route
 * row's; copy and eviction rows carry -1 estimates.
 * DEC_OUT_*: what became of it (OK: routed and enqueued, copy started,
 * block evicted, request admitted). A field a kind does not use is -1
 * (signed) or 0. */
enum { DEC_ROUTE = 0, DEC_COPY = 1, DEC_EVICT = 2, DEC_ADMIT = 3 };
enum { DEC_OUT_OK = 0, DEC_OUT_REJECTED_ADMISSION = 1, DEC_OUT_REJECTED_OVERLOAD = 2,
       DEC_OUT_REFUSED = 3 };
enum { DEC_TOP_K = 4 };
typedef struct res_decision {
	int64_t t_ns;
	int32_t kind;           /* DEC_* */
	int32_t outcome;        /* DEC_OUT_* */
	uint64_t id;            /* route, admit: request id; copy: the id the policy got, 0
	                         * if refused; evict: 0 */
	int32_t chosen;         /* route, admit: its instance; copy: the destination;
	                         * evict: the instance (tier HBM), the node (host, NVMe),
	                         * 0 (pool) */
	int32_t hinted;         /* route: 1 when the replication policy's hint chose;
	                         * copy: 1 background (speculative), 0 foreground */
	uint32_t n_options;     /* route: instances to choose among; otherwise 0 */
	uint32_t chosen_matched; /* route: prompt blocks matched at chosen; admit: the
	                          * same in the view admission reads; evict: the
	                          * block's hits (times a request matched it) */
	int32_t src;            /* copy: the source instance; otherwise -1 */
	uint32_t blocks;        /* route, admit: the prompt's full blocks; copy: blocks
	                         * asked; evict: 1 */
	uint64_t prefix;        /* route, copy, admit: the first block's chained id (0:
	                         * none); evict: the evicted block's id */
	int64_t chosen_est_ns, best_est_ns;
	int64_t regret_ns;      /* chosen_est_ns - best_est_ns, >= 0 */
	/* the DEC_TOP_K options with the lowest estimates, lowest first (ties
	 * by instance index); -1 past n_options */
	int32_t opt0_inst, opt1_inst, opt2_inst, opt3_inst;
	int64_t opt0_score, opt1_score, opt2_score, opt3_score; /* their estimates, ns */
	int32_t tier;           /* evict: the store's tier (0 HBM, 1 host, 2 NVMe, 3 pool,
	                         * sim/run/sim_tiers.h); otherwise -1 */
	uint32_t depth;         /* evict: the block's position in its prefix (0 = first) */
	int32_t spec;           /* evict: 1 when it came by a speculative copy and no
	                         * request used it (a used replica's block reads 0) */
	int32_t used;           /* evict: 1 when a request matched it (hits > 0) */
	int64_t age_ns;         /* evict: now - its last use; otherwise -1 */
	double score;           /* evict: the eviction policy's priority of the victim
	                         * (lowest goes first; LRU: its last use, ns); admit: the
	                         * admission's estimate, ns (sim_decisions.h); otherwise -1 */
	int64_t slo_ns;         /* admit: the request's TTFT SLO (<= 0: none); otherwise -1 */
	uint64_t seq;           /* evict: the store's evictions before this one (kv_stats) */
} res_decision_t;

typedef struct res_metric {
	char name[48];
	char unit[16];
	double value;
} res_metric_t;

/* One /windows row: metric `name` of window `window` (a workload stage, or
 * the interval between two [output] windows edges), over the request rows
 * that arrived in [t0_ns, t1_ns), by the same definitions as /summary's
 * (sim/run/metrics.h metrics_windows). */
typedef struct res_window {
	int32_t window;
	int32_t kind; /* RES_WIN_* */
	int64_t t0_ns, t1_ns;
	char name[48];
	char unit[16];
	double value;
} res_window_t;
enum { RES_WIN_STAGE = 0, RES_WIN_OUTPUT = 1 };

/* The tables a run can stream (sim_results_stream). */
enum { RES_T_REQ = 0, RES_T_XFER = 1, RES_T_TL = 2, RES_T_N = 3 };

typedef struct sim_results {
	/* rows and their capacities (a capacity below the count, e.g. 0 for an
	 * array filled elsewhere, only makes the next append reallocate); a
	 * streamed table (below) holds only its rows since the last spill */
	res_request_t *req;   size_t n_req, cap_req;
	res_transfer_t *xfer; size_t n_xfer, cap_xfer;
	res_sample_t *tl;     size_t n_tl, cap_tl;
	res_metric_t *metric; size_t n_metric, cap_metric;
	res_decision_t *dec;  size_t n_dec, cap_dec;
	res_window_t *win;    size_t n_win, cap_win; /* per-window summaries; none: not written */
	int decisions;        /* output.decisions: /decisions is written (0 rows too) */
	char *config_text;    /* resolved config (cfg_text) */
	uint64_t seed;
	char trace_path[1024];
	char trace_sha256[65];
	int64_t start_unix;   /* wall-clock start, seconds since epoch */
	double wall_s;
	uint64_t events;      /* engine events dispatched */
	char git_rev[64];     /* build revision that made it; "": this build's
			       * (out_build_rev), which out_hdf5_write records */
	/* What the caller should say about a run that succeeded but is likely
	 * not what was meant (no request passed the trace window), in the
	 * "PLACE: [section] key: reason" form; "" when nothing. Callers print
	 * it as a warning, or refuse the run when asked to be strict. */
	char warning[1024];
	/* Streaming, for runs of any length in flat memory (0: off, every row
	 * in the arrays above): req, xfer and tl each hold at most stream_rows
	 * rows; a full one goes, in append order, to a temporary file of its
	 * own (unlinked at creation: nothing is left behind), and spilled[t]
	 * counts the rows of table t there, which come before those in memory.
	 * Read a table whole with sim_results_rows. spill_fd_: the files'
	 * descriptors + 1 (0: none), owned by the struct. */
	size_t stream_rows;
	size_t spilled[RES_T_N];
	int spill_fd_[RES_T_N];
} sim_results_t;

/* Frees every array and closes the spill files; r is zeroed. */
void sim_results_free(sim_results_t *r);
/* Turns streaming on for r (before its first row) with blocks of rows
 * rows (> 0). The spill files go to $TMPDIR (/tmp when unset): a table
 * spills rows x its row size bytes at a time, and holds on disk the rows
 * a run makes (about 130 B a request, 64 B a timeline sample). */
void sim_results_stream(sim_results_t *r, size_t rows);
/* Appends one row (a res_request_t, res_transfer_t or res_sample_t) to
 * table RES_T_*: 0, KS_ENOMEM, or KS_EIO when a spill write fails (the
 * results keep what they had). */
int sim_results_append(sim_results_t *r, int table, const void *row);
/* Rows of table RES_T_* in all: spilled and in memory. */
size_t sim_results_count(const sim_results_t *r, int table);
/* Calls fn(ctx, rows, n) on every row of table RES_T_* in append order, in
 * blocks of at most max(stream_rows, the rows in memory) rows (spilled
 * ones read into a buffer of stream_rows rows, valid during the call).
 * Returns 0, fn's first nonzero return, KS_ENOMEM or KS_EIO. */
typedef int (*res_rows_fn)(void *ctx, const void *rows, size_t n);
int sim_results_rows(const sim_results_t *r, int table, res_rows_fn fn, void *ctx);
/* The size of one row of table RES_T_*, 0 outside them. */
size_t sim_results_row_size(int table);
/* Appends a metric (name truncated to 47 chars); 0 or KS_ENOMEM. */
int sim_results_metric(sim_results_t *r, const char *name, const char *unit, double v);
/* Value of a named metric, or NAN. */
double sim_results_get(const sim_results_t *r, const char *name);

#endif

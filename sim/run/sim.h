/* sim — run one experiment: config in, results out.
 *
 * sim_run, the one entry point, builds the cluster, network and policies
 * from a finalized cfg_t, streams the configured trace (or the options'
 * source) through the engine and fills *res (which the caller later
 * releases with sim_results_free). Returns 0, KS_EINPUT for bad config or
 * trace input (res left empty), or another KS_E* code.
 */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include "sim/base/cfg.h"
#include "sim/base/rng.h"
#include "sim/base/err.h"
#include "sim/base/results.h"

typedef struct sim_run_opts sim_run_opts_t;
/* Runs cfg; o may be NULL (built-in policies, the [trace] section's
 * requests, no progress, trace events or feedback). res is zeroed first and
 * left empty on failure. */
int sim_run(const cfg_t *cfg, const sim_run_opts_t *o, sim_results_t *res, err_t *e);

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
	uint64_t session_id;   /* the request's session (trace or generator); 0: none */
	uint32_t turn;         /* its 1-based turn in the session; 0: unknown */
} sim_arrival_t;

/* A closed-loop source (clients that wait for their answers, sim_clients.h)
 * may have no request to give yet while it waits for results: next then
 * returns SIM_SRC_WAIT with out->arrival_ns the time to ask again
 * (INT64_MAX: only after a result). Such a source comes with a
 * sim_feedback_t (sim_run_opts_t.feedback). */
#define SIM_SRC_WAIT 2

typedef struct sim_source {
	int (*next)(void *ctx, sim_arrival_t *out, err_t *e);
	void *ctx;
	const char *name;       /* trace path or "gen:KIND" */
} sim_source_t;

/* What a closed-loop source hears from the run: the simulated time before
 * each next, and every request row (completed, rejected, or unfinished at
 * the end) at the time it is made; the run asks the source again after a
 * row. A run with feedback has no trace ahead of it: predictors that peek
 * are refused. */
typedef struct sim_feedback {
	void *ctx;
	void (*at)(void *ctx, int64_t now);
	int (*done)(void *ctx, int64_t now, const res_request_t *row, err_t *e);
} sim_feedback_t;

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

/* A timeline observer (kvsim run --trace-events: sim/out/out_trace_events.h
 * writes one): the run calls it from inside, it only reads, so results are
 * the same with or without it. Times ns, sizes bytes. Each call returns 0
 * or a KS_E* code, which stops the run with that code. */
#define SIM_TRACE_IDS 8 /* request ids a busy interval names, at most */
/* An instance's compute busy over [t0_ns, t1_ns): `iterations` scheduler
 * iterations of one batch (more than 1: a decode segment's, applied at once,
 * cluster.h DECODE_SEGMENT), or, iterations = 0, a job (a copy charged to
 * its compute, `job` its id). One instance's intervals come in time order,
 * never overlap, and add up to its busy time (sim_trace_sink_t.end). */
typedef struct sim_trace_busy {
	uint32_t inst;
	int64_t t0_ns, t1_ns;
	uint32_t iterations;
	uint64_t job;
	uint32_t n_prefill, n_decode;  /* sequences prefilling (chunks) and decoding */
	uint64_t prefill_tokens;       /* tokens the chunks compute, per iteration */
	uint64_t decode_ctx_tokens;    /* context tokens of the decoding sequences, first iteration */
	uint32_t n_ids;                /* ids[0..n_ids): the batch's first requests */
	uint64_t ids[SIM_TRACE_IDS];
} sim_trace_busy_t;
/* An instance's sampled state. The four KV states partition its pool's
 * used blocks (sum = the /timeline row's kv_used_bytes): cached = READY
 * and unreferenced, not speculative; speculative = brought by a speculative
 * copy, not used yet (/timeline spec_kv_bytes); in flight = a copy brings
 * them; in use = the rest (held by requests, being computed, private). */
typedef struct sim_trace_state {
	double kv_in_use, kv_cached, kv_spec, kv_inflight; /* bytes */
	uint32_t waiting, running;                         /* requests */
} sim_trace_state_t;
typedef struct sim_trace_sink {
	void *ctx;
	/* Once, before any other call: instance i runs on node inst_node[i]. */
	int (*begin)(void *ctx, uint32_t n_inst, const uint32_t *inst_node);
	int (*busy)(void *ctx, const sim_trace_busy_t *b);
	/* A copy's row as /transfers gets it (when it ends or is cancelled). */
	int (*flow)(void *ctx, const res_transfer_t *t);
	/* inst's state after the events at t_ns (non-decreasing per instance;
	 * every instance at t = 0, then after each event that may change it). */
	int (*state)(void *ctx, int64_t t_ns, uint32_t inst, const sim_trace_state_t *v);
	/* Once per instance when the run ends well: its busy time and iterations
	 * as the cluster counts them. */
	int (*end)(void *ctx, uint32_t inst, int64_t busy_ns, uint64_t iterations);
} sim_trace_sink_t;

struct pol_registry;
struct sim_run_opts {
	/* Policies looked up here (runs that load plugins); NULL: built-ins. */
	const struct pol_registry *reg;
	/* The requests; NULL: those of the [trace] section (a trace file, a
	 * generator, a closed loop or a workload spec). */
	sim_source_t *source;
	sim_progress_fn progress; /* NULL: none */
	void *progress_ctx;
	/* Share of the source read so far (sim_progress_t.fraction); NULL:
	 * unknown. sim_run fills it from the trace reader. */
	double (*fraction)(void *ctx);
	void *fraction_ctx;
	const sim_trace_sink_t *trace; /* NULL: none */
	const sim_feedback_t *feedback; /* a closed-loop source's (NULL: none) */
	/* The source's own windows (a workload's stages, known once the run has
	 * drained them), asked once when the run ends: fills edges[0 .. n) of at
	 * most cap, n - 1 windows [edges[i], edges[i + 1]); returns n. NULL:
	 * none. [output] windows, when set, replaces them. */
	size_t (*windows)(void *ctx, int64_t *edges, size_t cap);
	void *windows_ctx;
	/* Rows per block of the results' streamed tables (requests, transfers,
	 * timeline: sim_results_stream in sim/base/results.h), so a run's
	 * memory does not grow with its rows; 0: every row stays in memory. */
	size_t stream_rows;
};
/* The block kvsim run and kvsim sweep stream with: 16,384 rows (2 MB of
 * request rows, 1 MB of timeline samples; own choice). */
#define SIM_STREAM_ROWS 16384

/* Seeds per component: sim_seed_for and SIM_STREAM_* in sim/base/rng.h. */
/* Built-in default experiment, as INI text. */
extern const char sim_default_experiment[];

#endif

/* sim_int — the state of one run, shared by the pieces of the run: setup,
 * hooks and end (sim_core.c), the policies' view (sim_view.c), arrivals
 * (sim_arrival.c), periodic events (sim_sample.c), the timeline
 * (sim_timeline.c), the trace observer
 * (sim_observer.c), the memory limit (sim_rss.c), and KV movement over the
 * network (sim_copy.c and its pieces: sim_copy_time.c, sim_copy_eta.c,
 * sim_copy_begin.c, the timing modes of sim_copy_mode.h, sim_copy_land.c,
 * sim_copy_cancel.c, sim_copy_defer.c, sim_evict.c, sim_fetch.c). Internal to
 * sim/run; not an API. Times ns, sizes bytes. Everything here is owned by the
 * sim_ctx_t and freed with it at the end of sim_core_run. The run's
 * components (the arrivals, the timeline, ...) keep their fields in their
 * own files: the run holds pointers to them and the other pieces call
 * their functions.
 */
#ifndef KVSIM_SIM_INT_H
#define KVSIM_SIM_INT_H

#include <gsl/gsl_rng.h>

#include "models/mdl.h"
#include "policies/pol.h"
#include "sim/cluster/cluster.h"
#include "sim/net/net.h"
#include "sim/net/net_topo.h"
#include "sim/run/forecast.h"
#include "sim/run/sim.h"
#include "sim/run/sim_holders.h"
#include "sim/run/sim_load.h"
#include "sim/run/sim_params.h"
#include "sim/run/sim_place.h"
#include "sim/run/sim_timeline.h"

/* The run's own event types, handed out by the engine (sim_core.c setup and
 * sim_copy.c sim_net_init register them; the cluster and the network take
 * theirs). */
typedef struct sim_ev_types {
	uint32_t arrival, peek, tick, sample;
	uint32_t src_retry; /* ask a closed-loop source again (sim.h SIM_SRC_WAIT) */
	uint32_t kick;      /* cluster_kick(target) */
	uint32_t defer;     /* start the flows of deferred copy payload (sim_copy_defer.c) */
	uint32_t lone_copy; /* a copy's timer fires (sim_copy_lone.c) */
} sim_ev_types_t;

/* Context of an instance store's eviction hooks. */
typedef struct hook {
	struct sim_ctx *s;
	uint32_t inst;
} hook_t;

typedef struct sim_ctx {
	cluster_t cl;
	ev_engine_t *eng;
	sim_ev_types_t ev;
	mdl_compute_t comp;
	mdl_hw_t hw;
	uint32_t tp, gpus_per_node, nodes;
	sim_params_t prm;       /* the run's parameters (sim_params_fill) */
	int64_t frontend_ns;    /* sim_params_frontend_ns: added to TTFT and E2E */
	const cfg_t *cfg;       /* for cross-key error places and /config only */
	err_t *err;
	struct sim_arrivals *arr; /* the source and its read-ahead (sim_arrival.c) */
	/* per-window summaries: the source's windows (sim_run_opts_t.windows),
	 * replaced by [output] windows when set (win_edges, parsed at setup) */
	size_t (*win_fn)(void *ctx, int64_t *edges, size_t cap);
	void *win_ctx;
	int64_t *win_edges;
	size_t n_win_edges;
	/* policies */
	pol_set_t pol;
	int pol_open;
	struct sim_views *vw;   /* the policies' and routers' views (sim_view.c) */
	struct sim_rv *rvw;     /* events view, router replicas, view quality
	                         * (sim_rview.h); NULL when none is asked */
	pol_actions_t act;
	pol_spec_stats_t spec;
	int64_t tick_ns, horizon_ns;
	int warned_over_budget; /* the over-budget warning was printed */
	fcast_t *fc;            /* forecast accuracy; NULL when no forecast is asked */
	/* bounded memory ([experiment] max_pending, max_rss_gb) */
	uint32_t max_pending;   /* waiting requests per instance; 0 = no cap */
	int warned_overload;    /* the first overload rejection was said */
	uint64_t rss_limit;     /* bytes */
	int rss_auto;           /* the limit is half of physical memory */
	uint64_t events_seen;   /* by the after-event hook */
	/* network and copies */
	net_t *net;
	net_topo_t *topo;
	struct sim_copies *cp;  /* the copies and their rules (sim_copies.h) */
	kv_store_t **host;      /* per node host tier, NULL entries when off */
	int host_offload;
	struct sim_tiers *tiers; /* NVMe and pool tiers (sim_tiers.h); NULL when off */
	sim_results_t *res;     /* the caller's results: the recorder appends every
	                         * row here during the run (sim/run/recorder.h) */
	struct sim_timeline *tl; /* output.timeline (sim_timeline.h) */
	sim_load_t *load;       /* waiting + running per instance (least_loaded view) */
	hook_t *hooks;          /* one per instance */
	/* which instances may hold a prefix (sim_holders.h): peer fetch and the
	 * views' candidates read it */
	sim_holders_t *holders;
	const sim_run_opts_t *opts; /* NULL: none */
	/* cluster.disagg (sim_disagg.h; NULL when off): the handoffs, and each
	 * instance's node and first GPU there (NULL: the uniform layout) */
	struct sim_disagg *dg;
	struct sim_join *jn; /* cluster.join_instances (sim_join.h; NULL when off) */
	uint32_t *inst_node, *inst_gpu0;
	uint32_t tp_decode; /* GPUs of a decode instance (sim_disagg.c; 0 when off) */
	/* a handoff copy's last flow ended (sim_disagg.c sets it: copies do
	 * not call back into the module that starts them by name) */
	int (*handoff_landed)(struct sim_ctx *s, uint32_t tag);
	struct bound_stream *bound; /* output.oracle_bound: the block streams; NULL: off */
	struct sim_dec *dec; /* output.decisions: the decision trace; NULL: off */
	/* the timeline observer (sim_run_opts_t.trace; NULL: none), its first
	 * error, and the instances touched since the last event (sim_touch) */
	const sim_trace_sink_t *trace;
	int trace_rc;
	uint8_t *tr_dirty;
	uint32_t *tr_dirty_list;
	uint32_t n_tr_dirty;
} sim_ctx_t;

/* Node of instance i and its first GPU there: pools of different TP lay
 * out their own instances (sim_disagg.c), else i * tp GPUs precede it. */
static inline uint32_t sim_inst_node(const sim_ctx_t *s, uint32_t i)
{
	return s->inst_node ? s->inst_node[i] : i * s->tp / s->gpus_per_node;
}

static inline uint32_t sim_inst_gpu0(const sim_ctx_t *s, uint32_t i)
{
	return s->inst_gpu0 ? s->inst_gpu0[i] : i * s->tp % s->gpus_per_node;
}

/* inst's sampled values (queue, batch, KV used and speculative) may change
 * in the current event: the trace observer samples it after the event, the
 * next timeline tick (sim_sample.c
 * sample_changed). Inline: the copies call it, and the files that call the
 * copies would otherwise be called back (no call loops between files). */
static inline void sim_touch(sim_ctx_t *s, uint32_t inst)
{
	if (s->tr_dirty && !s->tr_dirty[inst]) { /* the trace samples it after the event */
		s->tr_dirty[inst] = 1;
		s->tr_dirty_list[s->n_tr_dirty++] = inst;
	}
	sim_timeline_touch(s->tl, inst);
}

/* sim_touch of a copy's end: a tier below HBM has no timeline series. */
static inline void sim_touch_place(sim_ctx_t *s, place_t at)
{
	if (place_is_inst(at))
		sim_touch(s, at.index);
}

/* sim_view.c: the views component (s->vw): the policies' view and the
 * routers', with their memos and the routers' own tree; its fields are its
 * own, read and changed only through these calls. */
/* The views of the cluster (p: its parameters; s->cp and s->host made);
 * NULL on ENOMEM. sim_views_free frees it (NULL: nothing). */
struct sim_views *sim_views_new(sim_ctx_t *s, const cluster_params_t *p);
void sim_views_free(struct sim_views *v);
/* The routers' view as policy.routing.view asks, once the router replicas
 * are set up (sim_rv_setup): their own when they own it (events, replicas >
 * 1); under view = routed, the routers' own tree. 0 or KS_ENOMEM. */
int sim_views_routed(sim_ctx_t *s, const cfg_t *cfg, const cluster_params_t *p, err_t *e);
/* The policies' view (what exists) and the routers' (policy.routing.view),
 * valid while v lives. */
const pol_view_t *sim_views_policy(const struct sim_views *v);
const pol_view_t *sim_views_route(const struct sim_views *v);
/* Both views see instances [0, n) (a cold join's present ones). */
void sim_views_set_present(struct sim_views *v, uint32_t n);
/* Both views scan the instances for the least loaded, not the load index
 * (which also counts absent instances). */
void sim_views_scan_loads(struct sim_views *v);
/* Whether the views read the load index. */
int sim_views_use_load(const struct sim_views *v);
/* The routers' own tree (view = routed) learns that inst holds b[0..n);
 * 0 or KS_ENOMEM; nothing without a tree. */
int sim_views_routed_insert(struct sim_views *v, uint32_t inst, const uint64_t *b, uint32_t n);
/* The actions policies take (pol_actions_t): copies, cancels, announcements. */
void sim_view_actions(sim_ctx_t *s);

/* sim_core.c: builds the run from cfg, streams src through it into *res
 * (sim_run's work once the requests' source is known). */
int sim_core_run(const cfg_t *cfg, sim_source_t *src, const sim_run_opts_t *o,
		 sim_results_t *res, err_t *e);

/* sim_arrival.c: the source read ahead, arrivals, a request's life */
/* The source (fb: its closed loop's feedback, NULL: none) and its
 * read-ahead, owned by sim_arrival.c; NULL: out of memory. */
struct sim_arrivals *sim_arrivals_new(sim_source_t *src, const sim_feedback_t *fb);
void sim_arrivals_free(struct sim_arrivals *ar);
/* The predictor (named predictor) reads arrivals ns ahead (0: not); a
 * closed loop refuses it (KS_EINPUT at cfg's keys). */
int sim_arrivals_peek_ahead(struct sim_arrivals *ar, int64_t ns, const char *predictor,
			    const cfg_t *cfg, err_t *e);
/* The source's name (NULL: none). */
const char *sim_arrivals_source_name(const struct sim_arrivals *ar);
/* The source is not asked again (the run's end). */
void sim_arrivals_stop(struct sim_arrivals *ar);
/* Whether a request may still arrive (read ahead, or the source not done). */
int sim_arrivals_active(const struct sim_arrivals *ar);
/* Requests arrived so far. */
uint64_t sim_arrivals_arrived(const struct sim_arrivals *ar);
/* Reads the next request of the source into the read-ahead ring and
 * schedules its arrival (and peek). */
int sim_arrival_read(sim_ctx_t *s);
int sim_on_arrival(void *ctx, ev_engine_t *eng, const ev_event_t *ev);
int sim_on_peek(void *ctx, ev_engine_t *eng, const ev_event_t *ev);
int sim_on_src_retry(void *ctx, ev_engine_t *eng, const ev_event_t *ev);
int sim_on_admit(void *ctx, uint32_t inst, const sim_req_t *r);
int sim_on_result(void *ctx, const res_request_t *row);

/* sim_sample.c: the policies' tick and the timeline */
int sim_on_tick(void *ctx, ev_engine_t *eng, const ev_event_t *ev);
int sim_on_sample(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

/* sim_observer.c: the trace observer (s->trace set) */
int sim_observer_begin(sim_ctx_t *s);
void sim_observer_busy(void *ctx, const sim_inst_t *in, int64_t t0, int64_t t1, uint32_t n);
int sim_observer_flush(sim_ctx_t *s);
int sim_observer_end(sim_ctx_t *s);

/* sim_rss.c: [experiment] max_rss_gb */
/* Sets s's limit (bytes) from max_rss_gb (0: half of the memory available). */
void sim_rss_limit_set(sim_ctx_t *s, double gb);
/* The peak resident memory since sim_rss_peak_reset (or the current one). */
uint64_t sim_rss_peak_bytes(void);
/* [experiment] max_rss_gb (max_rss_gb; 0: half of the memory available)
 * outside a run's own steps: KS_ERUNTIME naming what (the step just done)
 * and fix when resident memory has passed it, else 0. */
int sim_rss_check(double max_rss_gb, const char *what, const char *fix, err_t *e);
/* Inside the run's setup: refuses a step whose allocation of need bytes,
 * estimated before it is made, would take resident memory past max_rss_gb
 * (KS_ERUNTIME naming what and fix, nothing allocated); need 0 checks what
 * has been taken so far. */
int sim_rss_room(sim_ctx_t *s, const char *what, uint64_t need, const char *fix);
/* Makes the current resident size the peak that max_rss_gb's checks read
 * (Linux's VmHWM), so a run is held to its own peak, transient allocations
 * included; -1 where the kernel cannot (the checks then read the current
 * size). */
int sim_rss_peak_reset(void);

/* sim_copy.c: the network, copies asked for, their summary */
/* How background flows are scheduled: the transfer policy's mode (pm,
 * pparam from its mode hook) when it is not immediate, else [network]
 * bg_schedule. An idle window without a threshold of its own (pparam 0, the
 * built-in idle_window) takes [network] idle_threshold. */
void sim_bg_schedule(pol_xfer_mode_t pm, double pparam, const net_params_t *np,
		     net_bg_mode_t *mode, double *param);
/* Builds the network, the copy rules and host tiers from p ([network] and
 * [kvcache]); the transfer policy is open (it may set the background mode). */
int sim_net_init(sim_ctx_t *s, const sim_params_t *p, err_t *e);
void sim_net_free(sim_ctx_t *s);
/* Starts a copy of blocks[0..n) (those missing at dst) from src (an
 * instance, or a tier of dst's node or the pool) to instance dst. Returns
 * POL_COPY_OK with *id, POL_COPY_REFUSED when a block is not READY at the
 * source or dst has no room, or < 0. With kvcache.copy_deferred, a copy
 * whose source blocks are READY or still COMPUTING is accepted as deferred:
 * its blocks are reserved INFLIGHT at dst now and its flows start when the
 * last source block becomes READY (cancelled if one is dropped first). */
int sim_copy_start(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks, uint32_t n,
		   int cls, int spec, int from_policy, sim_req_t *req, uint64_t *id);
/* End of run: replicas still resident count as unused; flows as records. */
int sim_copy_finish(sim_ctx_t *s, sim_results_t *res);
/* The copies' state (sim_ctx_t.cp) as the rest of the run reads it: copies
 * in flight (their events still to come); whether a deferred copy waits for
 * its source now; kvcache.copy_deferred; the bytes moved by handoffs. */
int sim_copies_live(const struct sim_copies *cp);
int sim_copies_any_deferred(const struct sim_copies *cp);
int sim_copies_defer_on(const struct sim_copies *cp);
uint64_t sim_copies_handoff_bytes(const struct sim_copies *cp);

/* sim_copy_eta.c: estimates and landing times */
/* Copy time estimate of n blocks from src to dst at current link rates. */
int64_t sim_copy_estimate(sim_ctx_t *s, place_t src, uint32_t dst, uint32_t n, int cls);
/* cluster_params_t.wait_inflight: waiting for the copies bringing r's
 * blocks [first, ...) beats recomputing them. */
int sim_wait_inflight(void *ctx, uint32_t inst, const sim_req_t *r, uint32_t first);

/* sim_copy_begin.c: a copy started */
/* Starts the handoff flows of `bytes` of request KV (`blocks` blocks) from
 * prefill instance src (TP tp_src) to decode instance dst (TP tp_dst):
 * max(tp_src, tp_dst) flows, flow f from src GPU f*tp_src/n to dst GPU
 * f*tp_dst/n, the bytes split evenly (the first bytes % n flows one byte
 * more), on shared links whatever network.contention says, /transfers
 * class XFER_HANDOFF. When the last flow ends, s->handoff_landed(s, tag). */
int sim_copy_handoff(sim_ctx_t *s, uint32_t src, uint32_t tp_src, uint32_t dst, uint32_t tp_dst,
		     uint64_t bytes, uint32_t blocks, uint32_t tag);

/* sim_copy_cancel.c */
int sim_copy_cancel(sim_ctx_t *s, uint64_t id);

/* sim_copy_lone.c: cluster_params_t.on_job_done: a copy charged to a
 * target's compute (job mode) ends. */
int sim_on_job_done(void *ctx, uint32_t inst, uint64_t job);

/* sim_copy_defer.c: deferred copies */
/* Store hook: a source block a deferred copy waits for became READY or was
 * dropped (ctx: the instance's hook_t). 0 or KS_ENOMEM. */
int sim_on_kv_watch(void *ctx, const kv_block_info_t *b, int event);
/* Whether b is INFLIGHT for a deferred copy whose flows have not started
 * (its source still computing): KV neither here nor on its way yet. */
int sim_copy_block_deferred(const sim_ctx_t *s, const kv_block_info_t *b);
/* The defer event's handler: starts the flows of a deferred copy whose source is ready. */
int sim_copy_deferred_start(void *ctx, ev_engine_t *eng, const ev_event_t *ev);

/* sim_evict.c: eviction hooks and speculative replicas */
/* The eviction policy's priority of block b at an instance store (ctx: its
 * hook_t), the store's kv_prio_fn when the policy is not LRU. */
double sim_evict_prio(void *ctx, const kv_block_info_t *b, int64_t now);
/* Eviction hook of instance stores (offload to host, replica accounting).
 * Errors (these hooks' and the ones below): KS_ENOMEM. */
int sim_on_evict(void *ctx, const kv_block_info_t *b, int64_t now);
/* Eviction hook of the stores below HBM (ctx: a sim_tier_hook_t): the block
 * moves to the next tier on (sim_tiers.h). */
int sim_on_tier_evict(void *ctx, const kv_block_info_t *b, int64_t now);
int sim_on_spec_hit(void *ctx, uint32_t inst, uint32_t tag, uint32_t blocks);

/* sim_fetch.c */
/* Fetch-or-recompute for a request just routed to dst (before enqueueing). */
int sim_fetch_decide(sim_ctx_t *s, sim_req_t *r, uint32_t dst);

#endif

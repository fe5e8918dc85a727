/* net — flow-level network model: directed links, flows, max-min fair rates.
 *
 * Owns links (one id per direction: capacity in bytes/s, latency in ns) and
 * flows (size in bytes over a path of link ids, class foreground/background,
 * optional per-flow rate cap in bytes/s). A flow first waits its path latency
 * (sum of link latencies, plus n_copies * copy_overhead_ns for block-granular
 * copies; the links are not occupied meanwhile), then shares bandwidth:
 * max-min fair by progressive filling over the links it crosses, caps honoured.
 * Background takes only what foreground leaves (NET_SHARE_STRICT) or gets
 * weight w < 1 against foreground's 1 (NET_SHARE_WEIGHTED); background
 * scheduling adds an idle window (run only while the foreground utilisation of
 * every link on the path is below a threshold) or a rate cap (background may
 * use at most a share of each link). Rates are re-solved only for the flows
 * connected to the changed links through shared links (by default only those
 * coupled through links near saturation: net_set_solver), once per simulated
 * instant (changes at the same instant are batched; queries flush first).
 *
 * Flows with the same path, class and cap form an aggregate that shares one
 * rate and one "served" counter (bytes per member since the aggregate formed),
 * so an event costs O(distinct active paths in the component), not O(flows).
 *
 * Idle-window rule (any share mode): the test reads the foreground-only
 * fill, the rates foreground would get with every background flow paused
 * (its demand), never the weighted allocation. A link is busy when that
 * load is >= threshold * capacity, less a relative 1e-9, so a link that
 * foreground fills is busy at threshold 1 whatever the float rounding. A
 * background flow runs only while no link on its path is busy; those that
 * run then share with foreground as the share mode says. Why: the weighted
 * allocation depends on which background flows run (a running one lowers
 * foreground's rate, so it would pass its own test, and pausing it would
 * fail it: no fixed point in general), and the rates in force before a
 * re-solve depend on event order. Under strict sharing the two readings
 * agree, as background never changes foreground's rates.
 *
 * Time rule (exact, tests rely on it): a flow with r > 0 bytes left at rate
 * p bytes/ns finishes at now + ceil(r/p - 1e-9*r/p) ns; a remainder at most
 * 1e-9 of the flow size counts as delivered. Rates are kept as doubles.
 * Times saturate: a finish past INT64_MAX ns (292 years) is never reached
 * (no completion event; net_flow_eta and net_path_estimate answer
 * INT64_MAX), and net_flow_start refuses (KS_EINPUT) a flow whose start +
 * path latency + copy overhead passes INT64_MAX.
 *
 * Ownership: net_t owns everything it allocates; records returned by
 * net_records stay valid until the next call that may add one. Errors: int
 * status (0 or KS_E*), message in a caller err_t (may be NULL). Done
 * callbacks run from the engine's event; they may start or cancel flows.
 */
#ifndef KVSIM_NET_H
#define KVSIM_NET_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"
#include "sim/engine/ev_engine.h"

#define NET_PATH_MAX 16 /* links per path */
#define NET_FLOW_NONE 0 /* never a valid flow id */

typedef struct net net_t;
typedef enum { NET_FG = 0, NET_BG = 1 } net_class_t;
typedef enum { NET_SHARE_STRICT = 0, NET_SHARE_WEIGHTED = 1 } net_share_t;
typedef enum { NET_BG_IMMEDIATE = 0, NET_BG_IDLE_WINDOW = 1, NET_BG_RATE_CAP = 2 } net_bg_mode_t;
typedef enum { NET_SOLVER_INCREMENTAL = 0, NET_SOLVER_FULL = 1 } net_solver_t;

/* One finished or cancelled flow. */
typedef struct net_flow_rec {
	uint64_t id;
	int64_t start_ns;  /* net_flow_start time */
	int64_t join_ns;   /* latency paid, bytes start moving */
	int64_t end_ns;    /* finish or cancel time */
	uint64_t bytes;    /* requested size */
	uint64_t delivered; /* == bytes unless cancelled */
	net_class_t cls;
	uint32_t src, dst; /* caller tags */
	uint64_t tag;      /* caller tag */
	int cancelled;
} net_flow_rec_t;

/* Called once when a flow finishes (not when cancelled); nonzero stops the run. */
typedef int (*net_done_fn)(void *ctx, net_t *net, const net_flow_rec_t *rec);

typedef struct net_flow_spec {
	uint64_t bytes;
	const uint32_t *path;  /* link ids, copied */
	uint32_t path_len;     /* 1..NET_PATH_MAX */
	net_class_t cls;
	double rate_cap;       /* bytes/s, 0 = none */
	uint32_t n_copies;     /* block copies (0 or 1: one contiguous copy) */
	int64_t copy_overhead_ns; /* per copy, added to the startup latency */
	uint32_t src, dst;
	uint64_t tag;
	net_done_fn done;      /* may be NULL */
	void *ctx;
} net_flow_spec_t;

typedef struct net_link_stats {
	double capacity;       /* bytes/s */
	int64_t latency_ns;
	double rate[2];        /* current rate by class, bytes/s (summed exactly in
				* fixed point, each flow's share rounded up to
				* 2^-52 of capacity: independent of update order) */
	double bytes[2];       /* bytes moved by class so far */
	int64_t busy_ns[2];    /* time with a nonzero rate of the class */
} net_link_stats_t;

typedef struct net_stats {
	uint64_t started, finished, cancelled, active;
	uint64_t solves, solved_aggs; /* re-solves and aggregates they touched */
	/* Foreground slowdown: actual (end - start) vs alone on the path
	 * (latency + overhead + ceil(bytes / min(capacity on path, cap))). */
	uint64_t fg_done;
	double fg_actual_ns, fg_alone_ns;
} net_stats_t;

/* The [network] keys, filled by the key table in net_cfg.c: how the fabric
 * is built and how the classes share links. The run applies them (sim/run);
 * enum fields are ints holding the named C values. */
typedef struct net_params {
	int fabric;              /* net_fabric_t (net_topo.h) */
	double oversubscription; /* leaf/spine: leaf downlink / uplink bandwidth */
	uint32_t gpus_per_leaf;
	int64_t switch_lat_ns;   /* per extra hop of a cross-leaf path */
	int bg_share;            /* net_share_t */
	double bg_weight;        /* NET_SHARE_WEIGHTED */
	int bg_schedule;         /* net_bg_mode_t, unless the transfer policy sets one */
	double idle_threshold;   /* NET_BG_IDLE_WINDOW: foreground share of capacity */
	double bg_rate_share;    /* NET_BG_RATE_CAP: share of each link */
	int block_granular;      /* one copy per block, each paying copy_overhead_ns */
	int64_t copy_overhead_ns;
	int64_t solve_quantum_ns; /* net_set_quantum */
	const char *calibration;  /* transfer calibration INI; "" none */
	int contention_none;      /* contention = none: each copy as if alone */
	int copy_charge_compute;  /* copy_charge = target_compute */
} net_params_t;

/* Takes an event type of its own from eng (ev_engine_type_new). */
net_t *net_new(ev_engine_t *eng, err_t *e);
void net_free(net_t *net);
int net_link_add(net_t *net, double capacity_Bps, int64_t latency_ns, uint32_t *id, err_t *e);
size_t net_link_count(const net_t *net);
/* The links that hold at least one flow past its latency (its rate may be 0
 * while background is paused), in no set order: *n ids, kept as flows join
 * and leave (O(1) each), so a caller that samples use visits only these.
 * Valid until the next flow start, join, finish or cancel. */
const uint32_t *net_links_active(const net_t *net, size_t *n);
/* Weighted mode: a background flow's weight against a foreground flow's 1,
 * in [NET_BG_WEIGHT_MIN, 1]. The floor keeps capacity / weight finite in the
 * solver (a weight of 1e-300 made it infinite) and is the range of the
 * network.bg_weight key. */
#define NET_BG_WEIGHT_MIN 0.001
int net_set_share(net_t *net, net_share_t mode, double bg_weight, err_t *e);
/* param: threshold in (0,1] for IDLE_WINDOW, share in (0,1] for RATE_CAP. */
int net_set_bg_mode(net_t *net, net_bg_mode_t mode, double param, err_t *e);
/* Speed/accuracy knob, default 0 (exact). With q > 0 ns, flows join and
 * rates are re-solved only at multiples of q: a new flow waits up to q
 * beyond its latency, and capacity freed by a finish or cancel goes unused
 * until the next tick, so links are never over capacity. Queries answer
 * the rates in force. Set it before starting flows. */
int net_set_quantum(net_t *net, int64_t ns, err_t *e);
/* Which flows a re-solve fills (default INCREMENTAL). FULL: every flow of
 * the component of the changed links, the reference. INCREMENTAL: only the
 * flows coupled to the change through links loaded to at least (1 - 1e-6)
 * of capacity (of the background share too, in rate-cap mode); a link below
 * that never holds back a flow in progressive filling, so the others keep
 * their rates. The filling order is a total order (levels, then link and
 * aggregate ids), so both give the same rates bit for bit and the same
 * finish times. Idle-window mode, and the first solve after a share or
 * background mode change, always solve in full (the idle test reads
 * foreground load on links beyond the coupled part). KS_EINPUT for an
 * unknown value. */
int net_set_solver(net_t *net, net_solver_t solver, err_t *e);
/* Keep a record per finished/cancelled flow (default on). */
void net_set_record(net_t *net, int on);

int net_flow_start(net_t *net, const net_flow_spec_t *spec, uint64_t *id, err_t *e);
/* Stops a pending or active flow; *delivered = whole bytes moved so far.
 * KS_EINPUT for an unknown or finished id. */
int net_flow_cancel(net_t *net, uint64_t id, uint64_t *delivered, err_t *e);
/* Current rate in bytes/s (0 while paying latency or paused); -1 if unknown. */
double net_flow_rate(net_t *net, uint64_t id);
/* Bytes still to move (the size while pending); -1 if unknown. */
double net_flow_remaining(net_t *net, uint64_t id);
/* Completion time at current rates (INT64_MAX when paused or past the int64
 * horizon), -1 if unknown. */
int64_t net_flow_eta(net_t *net, uint64_t id);
/* A new flow's finish estimate from current rates: latency + overhead +
 * bytes / min over the path of capacity/(flows of its class or above + 1). */
int64_t net_path_estimate(net_t *net, const uint32_t *path, uint32_t len, net_class_t cls,
			  uint64_t bytes);
int net_link_stats(net_t *net, uint32_t link, net_link_stats_t *out);
/* A link's fixed figures, without re-solving anything. */
int net_link_info(const net_t *net, uint32_t link, double *capacity_Bps, int64_t *latency_ns);
void net_get_stats(net_t *net, net_stats_t *out);
const net_flow_rec_t *net_records(const net_t *net, size_t *n);
/* Runs the pending re-solve now (queries do it themselves). */
void net_flush(net_t *net);

/* Benchmark support: mode 1 (wall clock) or 2 (thread CPU time) keeps the
 * time of every handler call, charged to flow events (join = start, done =
 * finish), each re-solve's time split evenly over the flow events it
 * batched; 0 turns it off. Setting it clears what was kept. */
void net_set_profile(net_t *net, int mode);
/* ns per flow event; (*finish)[i] is 1 for a finish, 0 for a start. */
const double *net_profile(const net_t *net, const uint8_t **finish, size_t *n);

#endif

/* net_int — the state of a net_t, shared by net.c (flows, the API),
 * net_agg.c (aggregates, link loads, completion events) and net_solve.c
 * (max-min rates by progressive filling). Internal to sim/net; not an API.
 * Units as in net.h, except that rates and capacities are in bytes/ns here.
 * Everything is owned by the net_t (net_free releases it); functions that
 * can fail return 0 or KS_ENOMEM, with no message.
 */
#ifndef KVSIM_NET_INT_H
#define KVSIM_NET_INT_H

#include <math.h>
#include <stdint.h>

#include "sim/net/net.h"

enum { K_JOIN = 1, K_DONE = 2, K_SOLVE = 3 };
enum { F_FREE = 0, F_PENDING = 1, F_ACTIVE = 2 };
#define REL_EPS 1e-9
/* Link load in fixed point: 2^52 units = the link's capacity. Integer sums
 * are exact and order-free, so both solvers and any update order give the
 * same load; each contribution rounds up by < 1 unit (2.2e-16 of capacity). */
#define FX_ONE 4503599627370496.0

typedef struct link {
	double cap; /* bytes/ns */
	int64_t lat;
	uint32_t *aggs;
	uint32_t n_aggs, cap_aggs;
	uint32_t n_fl[2]; /* active flows through it by class (its aggregates' members) */
	double use[2]; /* bytes/ns by class */
	double bytes[2];
	int64_t busy[2];
	int64_t t_acc;
	uint64_t mark;
	uint32_t local; /* row index / 2 in this solve */
	uint32_t bidx;  /* index in bnd while a boundary row, else UINT32_MAX */
	int64_t fx[2];  /* load by class, FX_ONE = capacity */
	uint8_t dirty;
	uint8_t tight; /* load at or above (1 - SLACK) of a row: couples its flows */
	uint8_t prom;  /* boundary row to be made a coupling row */
	uint32_t apos; /* index in net->act while it holds an aggregate, else UINT32_MAX */
} link_t;

typedef struct agg {
	/* hot in the solve first */
	uint8_t len, cls, live, frozen, sched; /* sched: members changed */
	uint32_t n;      /* members */
	uint64_t mark, pass;
	double w, new_rate;
	double served, rate; /* bytes per member; bytes/ns per member */
	double cap;          /* per member, bytes/ns; INFINITY = none */
	double load;         /* rate * n as counted in its links' fx */
	int64_t t_last;
	uint32_t path[NET_PATH_MAX];
	uint32_t *heap;      /* member flow indices, min target first */
	ev_handle_t ev;
	int64_t ev_time;
	uint32_t pos[NET_PATH_MAX]; /* index in each link's aggs */
	uint32_t gen, hnext, heap_cap;
	uint64_t hash;
} agg_t;

typedef struct flow {
	uint32_t gen;
	uint8_t state, cls, len;
	uint32_t agg, hpos;
	double target, cap;
	uint64_t bytes;
	int64_t t_start, t_join, alone;
	uint32_t path[NET_PATH_MAX];
	ev_handle_t ev;
	uint32_t src, dst;
	uint64_t tag;
	net_done_fn done;
	void *ctx;
	uint32_t next_free;
} flow_t;

struct done_item {
	net_flow_rec_t rec;
	net_done_fn fn;
	void *ctx;
};

struct net {
	ev_engine_t *eng;
	uint32_t type;
	link_t *links;
	uint32_t n_links, cap_links;
	flow_t *flows;
	uint32_t n_flows, cap_flows, free_flow;
	agg_t *aggs;
	uint32_t n_aggs, cap_aggs, free_agg, live_aggs;
	uint32_t *buckets;
	uint32_t n_buckets;
	net_share_t share;
	double bg_weight;
	net_bg_mode_t bg_mode;
	double bg_param;
	int64_t quantum; /* ns; 0 = re-solve at every instant */
	net_solver_t solver;
	int full_next; /* a mode changed: the next solve covers whole components */
	/* solve */
	uint32_t *chg; /* aggregates whose members changed since the last solve */
	uint32_t n_chg, cap_chg;
	uint32_t *bnd; /* boundary links of an incremental solve */
	uint32_t n_bnd, cap_bnd, n_comp_bg;
	int64_t *bnd_fx; /* per boundary row and class: load of aggregates not in the solve */
	uint32_t cap_bnd_fx;
	uint32_t *prom; /* boundary rows to promote */
	uint32_t n_prom, cap_prom;
	uint32_t *dirty;
	uint32_t n_dirty, cap_dirty;
	ev_handle_t solve_ev;
	uint64_t epoch, pass;
	uint32_t *comp_aggs, *comp_links, *capped;
	uint32_t n_comp_aggs, n_comp_links, cap_comp_aggs, cap_comp_links, cap_capped;
	double *row_rem, *row_w, *row_cap, *row_kv;
	uint32_t *row_cnt, *heap, *hpos;
	uint32_t n_heap, cap_rows;
	/* completion scratch */
	struct done_item *done;
	uint32_t n_done, cap_done;
	/* outputs */
	int record;
	net_flow_rec_t *recs;
	size_t n_recs, cap_recs;
	net_stats_t st;
	int prof;
	double *prof_ns;
	uint8_t *prof_kind;
	size_t cap_prof_kind;
	size_t n_prof, cap_prof, prof_since_solve;
	/* links holding at least one aggregate (net_links_active), unordered */
	uint32_t *act;
	uint32_t n_act, cap_act;
};

/* ---- small helpers --------------------------------------------------------- */

/* Remainder that counts as delivered: 1e-9 of the size, plus float noise of
 * the aggregate's served counter (relative 1e-13 of the target). */
static inline double done_eps(double bytes, double target)
{
	return REL_EPS * bytes + 1e-13 * fabs(target);
}

/* ns to move r bytes at p bytes/ns under the documented rounding rule;
 * INT64_MAX (never) when that does not fit in int64 ns. */
static inline int64_t dur_ns(double r, double p)
{
	double d = r / p;
	d -= d * REL_EPS;
	if (d <= 0)
		return 0;
	d = ceil(d);
	return d < 9223372036854775808.0 ? (int64_t)d : INT64_MAX; /* 2^63 */
}

/* a + b for times >= 0, saturating at INT64_MAX (never; net.h). */
static inline int64_t t_add(int64_t a, int64_t b)
{
	int64_t t;
	return __builtin_add_overflow(a, b, &t) ? INT64_MAX : t;
}

/* The next re-solve tick at or after t (t itself when exact). */
static inline int64_t tick_up(const net_t *net, int64_t t)
{
	if (net->quantum <= 0 || t % net->quantum == 0)
		return t;
	return t_add((t / net->quantum) * net->quantum, net->quantum);
}

static inline void agg_advance(agg_t *a, int64_t now)
{
	if (now > a->t_last) {
		a->served += a->rate * (double)(now - a->t_last);
		a->t_last = now;
	}
}

static inline int64_t fx_of(const link_t *l, double load)
{
	return load > 0 ? (int64_t)ceil(load * (FX_ONE / l->cap)) : 0;
}

/* ---- aggregates (net_agg.c) ------------------------------------------------ */

/* Adds d (+1 a member joins, -1 one leaves) to the class count n_fl of
 * every link on a's path: what net_path_estimate reads in place of a pass
 * over each link's aggregates. */
static inline void net_links_count(net_t *net, const agg_t *a, int d)
{
	for (uint32_t k = 0; k < a->len; k++)
		net->links[a->path[k]].n_fl[a->cls] += (uint32_t)d;
}

/* The member heap of aggregate a (min target first): sift member i up;
 * remove member i (its links' counts too). */
void net_mh_up(net_t *net, agg_t *a, uint32_t i);
void net_mh_remove(net_t *net, agg_t *a, uint32_t i);
/* Marks the links of a path for the next solve, scheduling it. */
int net_mark_dirty(net_t *net, const uint32_t *path, uint32_t len);
/* Adds the link's traffic since its last accounting to its bytes and busy
 * times. */
void net_link_account(link_t *l, int64_t now);
/* The aggregate's contribution to its links' loads becomes load. */
void net_agg_set_load(net_t *net, agg_t *a, double load, int64_t now);
/* Notes that the aggregate's members changed: the next solve starts there. */
int net_agg_touch(net_t *net, uint32_t ai);
/* Schedules (or moves/cancels) the aggregate's completion event. */
int net_agg_schedule(net_t *net, uint32_t ai, int64_t now);
/* The live aggregate of f's path, class and cap, made when there is none. */
int net_agg_find_or_make(net_t *net, const flow_t *f, uint32_t *out);
void net_agg_destroy(net_t *net, uint32_t ai);

/* ---- rates (net_solve.c) --------------------------------------------------- */

/* Re-solves the rates the changes since the last solve can move, and sets
 * the changed aggregates' loads and completion events. */
int net_solve(net_t *net);

#endif

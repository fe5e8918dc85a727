/* net — see net.h. Max-min fairness by progressive filling (Bertsekas &
 * Gallager, Data Networks, 2nd ed., sec. 6.5.2), over aggregates of flows that
 * share path, class and cap, restricted to the connected component of the
 * links that changed since the last solve (NET_SOLVER_FULL), or to the part
 * of it coupled to the change through links near saturation
 * (NET_SOLVER_INCREMENTAL, the default; see solve()).
 */
#include "sim/base/mem.h"
#include "sim/net/net.h"
#include "sim/base/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { K_JOIN = 1, K_DONE = 2, K_SOLVE = 3 };
enum { F_FREE = 0, F_PENDING = 1, F_ACTIVE = 2 };
#define REL_EPS 1e-9
/* Link load in fixed point: 2^52 units = the link's capacity. Integer sums
 * are exact and order-free, so both solvers and any update order give the
 * same load; each contribution rounds up by < 1 unit (2.2e-16 of capacity). */
#define FX_ONE 4503599627370496.0
/* A link whose load stays below (1 - SLACK) of every row's capacity never
 * freezes a flow in progressive filling (freezing fills a row to within
 * ~1e-12), so it does not couple the flows that cross it. Own choice: far
 * above float noise, far below any real headroom. */
#define SLACK 1e-6

typedef struct link {
	double cap; /* bytes/ns */
	int64_t lat;
	uint32_t *aggs;
	uint32_t n_aggs, cap_aggs;
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

static double prof_clock(const net_t *net)
{
	struct timespec ts;
	clock_gettime(net->prof == 2 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Remainder that counts as delivered: 1e-9 of the size, plus float noise of
 * the aggregate's served counter (relative 1e-13 of the target). */
static double done_eps(double bytes, double target)
{
	return REL_EPS * bytes + 1e-13 * fabs(target);
}

/* ns to move r bytes at p bytes/ns under the documented rounding rule;
 * INT64_MAX (never) when that does not fit in int64 ns. */
static int64_t dur_ns(double r, double p)
{
	double d = r / p;
	d -= d * REL_EPS;
	if (d <= 0)
		return 0;
	d = ceil(d);
	return d < 9223372036854775808.0 ? (int64_t)d : INT64_MAX; /* 2^63 */
}

/* a + b for times >= 0, saturating at INT64_MAX (never; net.h). */
static int64_t t_add(int64_t a, int64_t b)
{
	int64_t t;
	return __builtin_add_overflow(a, b, &t) ? INT64_MAX : t;
}

static uint64_t flow_id(const net_t *net, uint32_t i)
{
	return ((uint64_t)net->flows[i].gen << 32) | (uint64_t)(i + 1);
}

static flow_t *flow_get(net_t *net, uint64_t id, uint32_t *idx)
{
	uint32_t i = (uint32_t)(id & 0xffffffffu);
	if (i == 0 || i > net->n_flows)
		return NULL;
	flow_t *f = &net->flows[i - 1];
	if (f->state == F_FREE || f->gen != (uint32_t)(id >> 32))
		return NULL;
	if (idx)
		*idx = i - 1;
	return f;
}

/* ---- aggregate member heap (min target) ------------------------------------ */

static void mh_set(net_t *net, agg_t *a, uint32_t i, uint32_t fi)
{
	a->heap[i] = fi;
	net->flows[fi].hpos = i;
}

static void mh_up(net_t *net, agg_t *a, uint32_t i)
{
	uint32_t fi = a->heap[i];
	double t = net->flows[fi].target;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (net->flows[a->heap[p]].target <= t)
			break;
		mh_set(net, a, i, a->heap[p]);
		i = p;
	}
	mh_set(net, a, i, fi);
}

static void mh_down(net_t *net, agg_t *a, uint32_t i)
{
	uint32_t fi = a->heap[i];
	double t = net->flows[fi].target;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= a->n)
			break;
		if (c + 1 < a->n && net->flows[a->heap[c + 1]].target < net->flows[a->heap[c]].target)
			c++;
		if (net->flows[a->heap[c]].target >= t)
			break;
		mh_set(net, a, i, a->heap[c]);
		i = c;
	}
	mh_set(net, a, i, fi);
}

static void mh_remove(net_t *net, agg_t *a, uint32_t i)
{
	a->n--;
	if (i == a->n)
		return;
	mh_set(net, a, i, a->heap[a->n]);
	mh_up(net, a, i);
	mh_down(net, a, net->flows[a->heap[i]].hpos);
}

/* ---- dirty links and solve scheduling -------------------------------------- */

/* The next re-solve tick at or after t (t itself when exact). */
static int64_t tick_up(const net_t *net, int64_t t)
{
	if (net->quantum <= 0 || t % net->quantum == 0)
		return t;
	return t_add((t / net->quantum) * net->quantum, net->quantum);
}

static int mark_dirty(net_t *net, const uint32_t *path, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++) {
		link_t *l = &net->links[path[k]];
		if (l->dirty)
			continue;
		if (VEC_GROW(net->dirty, net->cap_dirty, net->n_dirty + 1, 16))
			return KS_ENOMEM;
		l->dirty = 1;
		net->dirty[net->n_dirty++] = path[k];
	}
	if (net->solve_ev == EV_NONE) {
		net->solve_ev = ev_engine_at(net->eng, tick_up(net, ev_engine_now(net->eng)),
					     net->type, 0, (uint64_t)K_SOLVE << 32);
		if (net->solve_ev == EV_NONE)
			return KS_ENOMEM;
	}
	return 0;
}

static void agg_advance(agg_t *a, int64_t now)
{
	if (now > a->t_last) {
		a->served += a->rate * (double)(now - a->t_last);
		a->t_last = now;
	}
}

static void link_account(link_t *l, int64_t now)
{
	if (now <= l->t_acc)
		return;
	int64_t dt = now - l->t_acc;
	for (int c = 0; c < 2; c++) {
		if (l->use[c] > 0) {
			l->bytes[c] += l->use[c] * (double)dt;
			l->busy[c] += dt;
		}
	}
	l->t_acc = now;
}

static int64_t fx_of(const link_t *l, double load)
{
	return load > 0 ? (int64_t)ceil(load * (FX_ONE / l->cap)) : 0;
}

/* Whether a link with these loads couples its flows (see SLACK). */
static int fx_tight(const net_t *net, const int64_t fx[2])
{
	double lim = FX_ONE * (1 - SLACK);
	if ((double)(fx[0] + fx[1]) >= lim)
		return 1;
	return net->bg_mode == NET_BG_RATE_CAP && (double)fx[1] >= lim * net->bg_param;
}

/* Moves the aggregate's contribution to its links from a->load to load
 * (accounting the links up to now first). The links' tight flags stay as
 * the last solve left them until the next one (solve()): a link that was
 * tight must couple the flows that stay when one leaves it. */
static void agg_set_load(net_t *net, agg_t *a, double load, int64_t now)
{
	for (uint32_t k = 0; k < a->len; k++) {
		link_t *l = &net->links[a->path[k]];
		link_account(l, now);
		l->fx[a->cls] += fx_of(l, load) - fx_of(l, a->load);
		l->use[a->cls] = (double)l->fx[a->cls] * l->cap / FX_ONE;
	}
	a->load = load;
}

/* Notes that the aggregate's members changed: the next solve starts there. */
static int agg_touch(net_t *net, uint32_t ai)
{
	agg_t *a = &net->aggs[ai];
	if (a->sched)
		return 0;
	if (VEC_GROW(net->chg, net->cap_chg, net->n_chg + 1, 16))
		return KS_ENOMEM;
	a->sched = 1;
	net->chg[net->n_chg++] = ai;
	return 0;
}

/* Schedules (or moves/cancels) the aggregate's completion event. */
static int agg_schedule(net_t *net, uint32_t ai, int64_t now)
{
	agg_t *a = &net->aggs[ai];
	int64_t t = INT64_MAX;
	if (a->n > 0) {
		flow_t *f = &net->flows[a->heap[0]];
		double r = f->target - a->served;
		if (r <= done_eps((double)f->bytes, f->target))
			t = now;
		else if (a->rate > 0)
			t = t_add(now, dur_ns(r, a->rate)); /* past INT64_MAX: never */
	}
	if (t == INT64_MAX) {
		if (a->ev != EV_NONE)
			ev_engine_cancel(net->eng, a->ev);
		a->ev = EV_NONE;
		return 0;
	}
	if (a->ev != EV_NONE && a->ev_time == t)
		return 0;
	if (a->ev != EV_NONE && ev_engine_reschedule(net->eng, a->ev, t) == 0) {
		a->ev_time = t;
		return 0;
	}
	a->ev = ev_engine_at(net->eng, t, net->type, ai, ((uint64_t)K_DONE << 32) | a->gen);
	if (a->ev == EV_NONE)
		return KS_ENOMEM;
	a->ev_time = t;
	return 0;
}

/* ---- aggregates ------------------------------------------------------------ */

static uint64_t agg_hash(const uint32_t *path, uint32_t len, int cls, double cap)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)cls;
	uint64_t cb;
	memcpy(&cb, &cap, sizeof cb);
	h = (h ^ cb) * 1099511628211ull;
	for (uint32_t k = 0; k < len; k++)
		h = (h ^ (path[k] + 0x9e3779b97f4a7c15ull)) * 1099511628211ull;
	return h ^ (h >> 29);
}

static int rehash(net_t *net, uint32_t nb)
{
	uint32_t *b = malloc((size_t)nb * sizeof *b);
	if (!b)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < nb; i++)
		b[i] = UINT32_MAX;
	for (uint32_t i = 0; i < net->n_aggs; i++) {
		agg_t *a = &net->aggs[i];
		if (!a->live)
			continue;
		uint32_t s = (uint32_t)(a->hash & (nb - 1));
		a->hnext = b[s];
		b[s] = i;
	}
	free(net->buckets);
	net->buckets = b;
	net->n_buckets = nb;
	return 0;
}

static int agg_find_or_make(net_t *net, const flow_t *f, uint32_t *out)
{
	uint64_t h = agg_hash(f->path, f->len, f->cls, f->cap);
	if (net->n_buckets) {
		for (uint32_t i = net->buckets[h & (net->n_buckets - 1)]; i != UINT32_MAX;
		     i = net->aggs[i].hnext) {
			agg_t *a = &net->aggs[i];
			if (a->hash == h && a->len == f->len && a->cls == f->cls && a->cap == f->cap &&
			    !memcmp(a->path, f->path, f->len * sizeof(uint32_t))) {
				*out = i;
				return 0;
			}
		}
	}
	uint32_t ai;
	if (net->free_agg != UINT32_MAX) {
		ai = net->free_agg;
		net->free_agg = net->aggs[ai].hnext;
	} else {
		if (VEC_GROW(net->aggs, net->cap_aggs, net->n_aggs + 1, 16))
			return KS_ENOMEM;
		ai = net->n_aggs++;
		memset(&net->aggs[ai], 0, sizeof(agg_t));
	}
	agg_t *a = &net->aggs[ai];
	for (uint32_t k = 0; k < f->len; k++) {
		link_t *l = &net->links[f->path[k]];
		if (VEC_GROW(l->aggs, l->cap_aggs, l->n_aggs + 1, 16))
			return KS_ENOMEM; /* (links before k keep a slot; harmless) */
	}
	if (VEC_GROW(net->act, net->cap_act, net->n_act + f->len, 16))
		return KS_ENOMEM;
	memcpy(a->path, f->path, f->len * sizeof(uint32_t));
	a->len = f->len;
	a->cls = f->cls;
	a->cap = f->cap;
	a->hash = h;
	a->live = 1;
	a->gen++;
	a->n = 0;
	a->served = 0;
	a->rate = 0;
	a->t_last = ev_engine_now(net->eng);
	a->ev = EV_NONE;
	a->mark = 0;
	a->pass = 0;
	a->load = 0;
	for (uint32_t k = 0; k < f->len; k++) {
		link_t *l = &net->links[f->path[k]];
		a->pos[k] = l->n_aggs;
		l->aggs[l->n_aggs++] = ai;
		if (l->n_aggs == 1) {
			l->apos = net->n_act;
			net->act[net->n_act++] = f->path[k];
		}
	}
	net->live_aggs++;
	if (net->live_aggs > net->n_buckets / 2) {
		if (rehash(net, net->n_buckets ? net->n_buckets * 4 : 64))
			return KS_ENOMEM;
	} else {
		uint32_t s = (uint32_t)(h & (net->n_buckets - 1));
		a->hnext = net->buckets[s];
		net->buckets[s] = ai;
	}
	*out = ai;
	return 0;
}

static void agg_destroy(net_t *net, uint32_t ai)
{
	agg_t *a = &net->aggs[ai];
	agg_set_load(net, a, 0, ev_engine_now(net->eng));
	for (uint32_t k = 0; k < a->len; k++) {
		link_t *l = &net->links[a->path[k]];
		uint32_t p = a->pos[k];
		uint32_t last = l->aggs[--l->n_aggs];
		if (l->n_aggs == 0) {
			uint32_t moved = net->act[--net->n_act];
			net->act[l->apos] = moved;
			net->links[moved].apos = l->apos;
			l->apos = UINT32_MAX;
		}
		if (p != l->n_aggs) {
			l->aggs[p] = last;
			agg_t *m = &net->aggs[last];
			for (uint32_t j = 0; j < m->len; j++)
				if (m->path[j] == a->path[k]) {
					m->pos[j] = p;
					break;
				}
		}
	}
	uint32_t *pp = &net->buckets[a->hash & (net->n_buckets - 1)];
	while (*pp != ai)
		pp = &net->aggs[*pp].hnext;
	*pp = a->hnext;
	if (a->ev != EV_NONE)
		ev_engine_cancel(net->eng, a->ev);
	a->ev = EV_NONE;
	a->live = 0;
	a->hnext = net->free_agg;
	net->free_agg = ai;
	net->live_aggs--;
}

/* ---- progressive filling --------------------------------------------------- */

/* Rows: 2*local for a link's whole capacity, 2*local+1 for its background
 * share (rate-cap mode). A min-heap of rows keyed by fill level rem/w, kept
 * lazily: freezing flows at the current level never lowers another row's
 * level, so keys are refreshed only when a row reaches the top. Equal
 * levels go by link id, so the order rows freeze in (and with it every
 * float operation of the fill) does not depend on the heap's layout or on
 * which other rows share the solve: both solvers then compute the same
 * rates to the last bit. */
static double row_key(const net_t *net, uint32_t r)
{
	double rem = net->row_rem[r];
	return (rem > 0 ? rem : 0) / net->row_w[r];
}

static int rh_less(const net_t *net, uint32_t r, uint32_t q)
{
	double kr = net->row_kv[r], kq = net->row_kv[q];
	if (kr != kq)
		return kr < kq;
	uint64_t ir = 2 * (uint64_t)net->comp_links[r / 2] + (r & 1);
	uint64_t iq = 2 * (uint64_t)net->comp_links[q / 2] + (q & 1);
	return ir < iq;
}

static void rh_swap(net_t *net, uint32_t i, uint32_t j)
{
	uint32_t a = net->heap[i], b = net->heap[j];
	net->heap[i] = b;
	net->heap[j] = a;
	net->hpos[b] = i;
	net->hpos[a] = j;
}

static void rh_up(net_t *net, uint32_t i)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!rh_less(net, net->heap[i], net->heap[p]))
			break;
		rh_swap(net, i, p);
		i = p;
	}
}

static void rh_down(net_t *net, uint32_t i)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= net->n_heap)
			break;
		if (c + 1 < net->n_heap && rh_less(net, net->heap[c + 1], net->heap[c]))
			c++;
		if (!rh_less(net, net->heap[c], net->heap[i]))
			break;
		rh_swap(net, i, c);
		i = c;
	}
}

static void rh_remove(net_t *net, uint32_t r)
{
	uint32_t i = net->hpos[r];
	if (i == UINT32_MAX)
		return;
	net->hpos[r] = UINT32_MAX;
	net->n_heap--;
	if (i == net->n_heap)
		return;
	uint32_t m = net->heap[net->n_heap];
	net->heap[i] = m;
	net->hpos[m] = i;
	rh_up(net, i);
	rh_down(net, net->hpos[m]);
}

static int uses_sub(const net_t *net, const agg_t *a)
{
	return a->cls == NET_BG && net->bg_mode == NET_BG_RATE_CAP;
}

static void freeze(net_t *net, agg_t *a, double rate)
{
	a->frozen = 1;
	a->new_rate = rate;
	double load = rate * (double)a->n;
	int sub = uses_sub(net, a);
	for (uint32_t k = 0; k < a->len; k++) {
		uint32_t local = net->links[a->path[k]].local;
		for (uint32_t r = 2 * local; r <= 2 * local + (uint32_t)sub; r++) {
			net->row_rem[r] -= load;
			net->row_w[r] -= a->w;
			net->row_cnt[r]--;
		}
	}
}

static int cmp_cap_level(const void *x, const void *y, void *ctx)
{
	const net_t *net = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	const agg_t *a = &net->aggs[i], *b = &net->aggs[j];
	double la = a->cap / (a->w / a->n), lb = b->cap / (b->w / b->n);
	if (la != lb)
		return (la > lb) - (la < lb);
	return (i > j) - (i < j); /* ties by id: a total order (see row_key) */
}

/* Fills the aggregates of comp_aggs whose pass == net->pass, with class
 * weights wfg/wbg, against row_cap; leaves each one's new_rate. Coupling
 * rows sum over the link's own aggregate list, whose order does not depend
 * on the solve; boundary rows (solve()) over the aggregates in the solve,
 * and one that would freeze a flow is marked for promotion. */
static int fill(net_t *net, double wfg, double wbg)
{
	uint32_t n_capped = 0;
	for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
		agg_t *a = &net->aggs[net->comp_aggs[i]];
		if (a->pass != net->pass)
			continue;
		a->frozen = 0;
		a->w = (a->cls == NET_FG ? wfg : wbg) * (double)a->n;
		if (a->cap < INFINITY) {
			if (VEC_GROW(net->capped, net->cap_capped, n_capped + 1, 16))
				return KS_ENOMEM;
			net->capped[n_capped++] = net->comp_aggs[i];
		}
	}
	net->n_heap = 0;
	for (uint32_t r = 0; r < 2 * net->n_comp_links; r++) {
		net->row_rem[r] = net->row_cap[r];
		net->row_w[r] = 0;
		net->row_cnt[r] = 0;
		net->hpos[r] = UINT32_MAX;
	}
	for (uint32_t i = 0; net->n_bnd && i < net->n_comp_aggs; i++) {
		const agg_t *a = &net->aggs[net->comp_aggs[i]];
		if (a->pass != net->pass)
			continue;
		for (uint32_t k = 0; k < a->len; k++) {
			const link_t *l = &net->links[a->path[k]];
			if (l->bidx == UINT32_MAX)
				continue;
			for (uint32_t r = 2 * l->local; r <= 2 * l->local + (uint32_t)uses_sub(net, a);
			     r++) {
				net->row_w[r] += a->w;
				net->row_cnt[r]++;
			}
		}
	}
	for (uint32_t i = 0; i < net->n_comp_links; i++) {
		const link_t *l = &net->links[net->comp_links[i]];
		for (uint32_t j = 0; l->bidx == UINT32_MAX && j < l->n_aggs; j++) {
			const agg_t *a = &net->aggs[l->aggs[j]];
			if (a->pass != net->pass)
				continue;
			for (uint32_t r = 2 * i; r <= 2 * i + (uint32_t)uses_sub(net, a); r++) {
				net->row_w[r] += a->w;
				net->row_cnt[r]++;
			}
		}
		for (uint32_t r = 2 * i; r <= 2 * i + 1; r++) {
			if (net->row_cnt[r] == 0)
				continue;
			net->row_kv[r] = row_key(net, r);
			net->hpos[r] = net->n_heap;
			net->heap[net->n_heap++] = r;
			rh_up(net, net->n_heap - 1);
		}
	}
	if (n_capped > 1)
		qsort_r(net->capped, n_capped, sizeof(uint32_t), cmp_cap_level, net);
	uint32_t ci = 0;
	for (;;) {
		while (ci < n_capped && net->aggs[net->capped[ci]].frozen)
			ci++;
		double lcap = INFINITY;
		if (ci < n_capped) {
			agg_t *a = &net->aggs[net->capped[ci]];
			lcap = a->cap / (a->w / a->n);
		}
		/* settle the top row: drop empty rows, refresh stale keys */
		double lrow = INFINITY;
		while (net->n_heap) {
			uint32_t r = net->heap[0];
			if (net->row_cnt[r] == 0) {
				rh_remove(net, r);
				continue;
			}
			double k = row_key(net, r);
			if (k > net->row_kv[r]) {
				net->row_kv[r] = k;
				rh_down(net, 0);
				continue;
			}
			lrow = k;
			break;
		}
		if (net->n_heap == 0 && ci >= n_capped)
			break;
		if (ci < n_capped && lcap <= lrow) { /* lrow may be infinite too */
			agg_t *a = &net->aggs[net->capped[ci++]];
			freeze(net, a, a->cap);
			continue;
		}
		uint32_t r = net->heap[0];
		int sub = (int)(r & 1);
		link_t *l = &net->links[net->comp_links[r / 2]];
		if (l->bidx != UINT32_MAX && !l->prom) {
			if (VEC_GROW(net->prom, net->cap_prom, net->n_prom + 1, 16))
				return KS_ENOMEM;
			l->prom = 1;
			net->prom[net->n_prom++] = net->comp_links[r / 2];
		}
		for (uint32_t j = 0; j < l->n_aggs; j++) {
			agg_t *a = &net->aggs[l->aggs[j]];
			if (a->pass != net->pass || a->frozen || (sub && !uses_sub(net, a)))
				continue;
			freeze(net, a, lrow * (a->w / a->n));
		}
		if (net->hpos[r] != UINT32_MAX) /* float residue: drop the row */
			rh_remove(net, r);
	}
	return 0;
}

/* The idle-window test (net.h): fg_use is the foreground-only fill per
 * local link; a link is busy from threshold * capacity less a relative
 * REL_EPS, so one that foreground fills is busy at threshold 1 whatever the
 * rounding of the rates that fill it. */
static int path_busy(net_t *net, const agg_t *a, const double *fg_use)
{
	for (uint32_t k = 0; k < a->len; k++) {
		const link_t *l = &net->links[a->path[k]];
		if (fg_use[l->local] >= net->bg_param * l->cap * (1 - REL_EPS))
			return 1;
	}
	return 0;
}

static int grow_rows(net_t *net, uint32_t need)
{
	size_t c = vec_next_cap(net->cap_rows, need, 64);
	if (!c || c > UINT32_MAX || VEC_RESIZE(net->row_rem, c) || VEC_RESIZE(net->row_kv, c) ||
	    VEC_RESIZE(net->row_w, c) || VEC_RESIZE(net->row_cap, c) ||
	    VEC_RESIZE(net->row_cnt, c) || VEC_RESIZE(net->heap, c) || VEC_RESIZE(net->hpos, c))
		return KS_ENOMEM;
	net->cap_rows = (uint32_t)c;
	return 0;
}

/* Boundary rows' load from aggregates outside the solve (bnd_fx). */
static int bnd_outside(net_t *net)
{
	if (2 * net->n_bnd > net->cap_bnd_fx) {
		size_t c = vec_next_cap(net->cap_bnd_fx, 2 * (size_t)net->n_bnd, 64);
		if (!c || c > UINT32_MAX || VEC_RESIZE(net->bnd_fx, c))
			return KS_ENOMEM;
		net->cap_bnd_fx = (uint32_t)c;
	}
	for (uint32_t b = 0; b < net->n_bnd; b++) {
		const link_t *l = &net->links[net->bnd[b]];
		net->bnd_fx[2 * b] = l->fx[0];
		net->bnd_fx[2 * b + 1] = l->fx[1];
	}
	for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
		const agg_t *a = &net->aggs[net->comp_aggs[i]];
		for (uint32_t k = 0; k < a->len; k++) {
			const link_t *l = &net->links[a->path[k]];
			if (l->bidx != UINT32_MAX)
				net->bnd_fx[2 * l->bidx + a->cls] -= fx_of(l, a->load);
		}
	}
	return 0;
}

/* Row capacities: a coupling row gets the link's (or background share's);
 * a boundary row what (1 - SLACK) of it leaves beside the flows outside the
 * solve and, when fg_use is given, the foreground inside it. A boundary row
 * only stops flows from overloading the link; its exact value does not
 * matter, as one that would freeze a flow is promoted and the fill redone. */
static void row_caps(net_t *net, int bg_pass, const double *fg_use)
{
	int strict = net->share == NET_SHARE_STRICT;
	for (uint32_t i = 0; i < net->n_comp_links; i++) {
		const link_t *l = &net->links[net->comp_links[i]];
		double cap = l->cap, sub = net->bg_mode == NET_BG_RATE_CAP && bg_pass
						   ? net->bg_param * cap
						   : INFINITY;
		if (bg_pass && strict)
			cap = fmax(0.0, cap - fg_use[i]);
		if (l->bidx != UINT32_MAX) {
			const int64_t *o = &net->bnd_fx[2 * l->bidx];
			cap = l->cap * (1 - SLACK) - (double)(o[0] + o[1]) * l->cap / FX_ONE;
			if (bg_pass && strict)
				cap -= fg_use[i];
			sub = sub * (1 - SLACK) - (double)o[1] * l->cap / FX_ONE;
			cap = fmax(0.0, cap);
			sub = fmax(0.0, sub);
		}
		net->row_cap[2 * i] = cap;
		net->row_cap[2 * i + 1] = sub;
	}
}

/* The two passes over comp_aggs/comp_links: leaves every new_rate. */
static int fill_passes(net_t *net)
{
	uint32_t nrows = 2 * net->n_comp_links;
	if (nrows > net->cap_rows && grow_rows(net, nrows))
		return KS_ENOMEM;
	if (bnd_outside(net))
		return KS_ENOMEM;
	for (uint32_t i = 0; i < net->n_comp_aggs; i++)
		net->aggs[net->comp_aggs[i]].new_rate = 0;
	uint32_t n_bg = net->n_comp_bg;
	int strict = net->share == NET_SHARE_STRICT;
	int need_fg_first = strict || (net->bg_mode == NET_BG_IDLE_WINDOW && n_bg > 0);
	/* pass 1: foreground alone (strict, or to measure fg load for idle window) */
	double *fg_use = NULL;
	if (need_fg_first) {
		net->pass++;
		for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
			agg_t *a = &net->aggs[net->comp_aggs[i]];
			if (a->cls == NET_FG)
				a->pass = net->pass;
		}
		row_caps(net, 0, NULL);
		if (fill(net, 1.0, 1.0))
			return KS_ENOMEM;
		if (n_bg == 0)
			return 0; /* strict and nothing in the background */
		/* foreground load per local link, in row_w (the next fill resets it),
		 * summed in the link's own order on coupling rows (see fill) */
		fg_use = net->row_w;
		for (uint32_t i = 0; i < net->n_comp_links; i++) {
			const link_t *l = &net->links[net->comp_links[i]];
			double u = 0;
			for (uint32_t j = 0; l->bidx == UINT32_MAX && j < l->n_aggs; j++) {
				const agg_t *a = &net->aggs[l->aggs[j]];
				if (a->cls == NET_FG)
					u += a->new_rate * (double)a->n;
			}
			fg_use[i] = u;
		}
		for (uint32_t i = 0; net->n_bnd && i < net->n_comp_aggs; i++) {
			const agg_t *a = &net->aggs[net->comp_aggs[i]];
			for (uint32_t k = 0; a->cls == NET_FG && k < a->len; k++) {
				const link_t *l = &net->links[a->path[k]];
				if (l->bidx != UINT32_MAX)
					fg_use[l->local] += a->new_rate * (double)a->n;
			}
		}
	}
	/* pass 2: background on the residual (strict) or everything (weighted) */
	row_caps(net, 1, fg_use);
	net->pass++;
	for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
		agg_t *a = &net->aggs[net->comp_aggs[i]];
		if (a->cls == NET_FG) {
			if (!strict)
				a->pass = net->pass;
			continue;
		}
		if (net->bg_mode == NET_BG_IDLE_WINDOW && path_busy(net, a, fg_use))
			continue; /* paused: rate 0 */
		a->pass = net->pass;
	}
	return fill(net, 1.0, strict ? 1.0 : net->bg_weight);
}

/* Puts a link into this solve as a row: coupling (tight, or any link in a
 * full solve) or boundary. */
static int comp_link_add(net_t *net, uint32_t li, int full)
{
	link_t *l = &net->links[li];
	if (l->mark == net->epoch)
		return 0;
	l->mark = net->epoch;
	if (VEC_GROW(net->comp_links, net->cap_comp_links, net->n_comp_links + 1, 16))
		return KS_ENOMEM;
	l->local = net->n_comp_links;
	net->comp_links[net->n_comp_links++] = li;
	l->bidx = UINT32_MAX;
	if (full || l->tight)
		return 0;
	if (VEC_GROW(net->bnd, net->cap_bnd, net->n_bnd + 1, 16))
		return KS_ENOMEM;
	l->bidx = net->n_bnd;
	net->bnd[net->n_bnd++] = li;
	return 0;
}

static int comp_agg_add(net_t *net, uint32_t ai, int full)
{
	agg_t *a = &net->aggs[ai];
	if (a->mark == net->epoch)
		return 0;
	a->mark = net->epoch;
	if (VEC_GROW(net->comp_aggs, net->cap_comp_aggs, net->n_comp_aggs + 1, 16))
		return KS_ENOMEM;
	net->comp_aggs[net->n_comp_aggs++] = ai;
	net->n_comp_bg += a->cls == NET_BG;
	for (uint32_t k = 0; k < a->len; k++)
		if (comp_link_add(net, a->path[k], full))
			return KS_ENOMEM;
	return 0;
}

/* Every aggregate on the coupling rows from comp_links[from] on, and theirs
 * in turn. */
static int comp_grow(net_t *net, uint32_t from, int full)
{
	for (uint32_t q = from; q < net->n_comp_links; q++) {
		const link_t *l = &net->links[net->comp_links[q]];
		for (uint32_t j = 0; l->bidx == UINT32_MAX && j < l->n_aggs; j++)
			if (comp_agg_add(net, l->aggs[j], full))
				return KS_ENOMEM;
	}
	return 0;
}

/* Re-solves the rates the changes since the last solve can move.
 *
 * Full: the whole component of the dirty links (all links and aggregates
 * reachable through shared links). Incremental: starts from the aggregates
 * whose members changed and the dirty links, and crosses only tight links
 * (fx_tight), whose aggregates all join; any other link on the way is a
 * boundary row, which holds only the aggregates in the solve, against what
 * the others leave. In progressive filling over the whole component a link
 * whose final load stays below (1 - SLACK) of capacity never freezes a flow,
 * and a tight link's aggregates all lie on one side, so the coupling rows
 * see exactly the operations, in the same order (rh_less, cmp_cap_level), as
 * in the full fill: the same rates to the last bit, and the rest keeps its
 * rates, as the full solve would recompute them. A boundary row holds
 * (1 - SLACK) of what the others leave, so while none freezes a flow the
 * link's final load stays below that; one that would freeze a flow becomes
 * a coupling row, its aggregates join, and the part is filled again.
 * Idle-window mode and a changed share or background mode solve in full:
 * the idle test reads boundary links' foreground load, whose change could
 * pause background flows beyond them. */
static int solve(net_t *net)
{
	int64_t now = ev_engine_now(net->eng);
	int full = net->solver == NET_SOLVER_FULL || net->full_next ||
		   net->bg_mode == NET_BG_IDLE_WINDOW;
	net->full_next = 0;
	net->epoch++;
	net->n_comp_aggs = net->n_comp_links = net->n_bnd = net->n_comp_bg = 0;
	for (uint32_t i = 0; i < net->n_dirty; i++) {
		net->links[net->dirty[i]].dirty = 0;
		if (comp_link_add(net, net->dirty[i], full))
			return KS_ENOMEM;
	}
	net->n_dirty = 0;
	for (uint32_t i = 0; i < net->n_chg; i++) {
		agg_t *a = &net->aggs[net->chg[i]];
		if (!a->live)
			a->sched = 0; /* gone since: its links are dirty */
		else if (comp_agg_add(net, net->chg[i], full))
			return KS_ENOMEM;
	}
	net->n_chg = 0;
	if (comp_grow(net, 0, full))
		return KS_ENOMEM;
	for (;;) {
		net->n_prom = 0;
		if (fill_passes(net))
			return KS_ENOMEM;
		if (net->n_prom == 0)
			break;
		for (uint32_t i = 0; i < net->n_prom; i++) {
			link_t *l = &net->links[net->prom[i]];
			l->prom = 0;
			l->bidx = UINT32_MAX;
			uint32_t from = net->n_comp_links;
			for (uint32_t j = 0; j < l->n_aggs; j++)
				if (comp_agg_add(net, l->aggs[j], 0))
					return KS_ENOMEM;
			if (comp_grow(net, from, 0))
				return KS_ENOMEM;
		}
	}
	net->st.solves++;
	net->st.solved_aggs += net->n_comp_aggs;

	/* rates, link loads, completion events. Unchanged aggregates are not
	 * advanced nor their links accounted, so served counters and link
	 * bytes see the same additions in both solvers. */
	for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
		uint32_t ai = net->comp_aggs[i];
		agg_t *a = &net->aggs[ai];
		if (a->new_rate == a->rate && !a->sched)
			continue; /* (its event, or none past the horizon, stands) */
		agg_advance(a, now);
		a->rate = a->new_rate;
		a->sched = 0;
		agg_set_load(net, a, a->rate * (double)a->n, now);
		if (agg_schedule(net, ai, now))
			return KS_ENOMEM;
	}
	for (uint32_t i = 0; i < net->n_comp_links; i++) {
		link_t *l = &net->links[net->comp_links[i]];
		l->tight = (uint8_t)fx_tight(net, l->fx);
	}
	return 0;
}

/* ---- flow lifecycle -------------------------------------------------------- */

static int record(net_t *net, const net_flow_rec_t *r)
{
	if (!net->record)
		return 0;
	if (VEC_GROW(net->recs, net->cap_recs, net->n_recs + 1, 64))
		return KS_ENOMEM;
	net->recs[net->n_recs++] = *r;
	return 0;
}

static void fill_rec(const net_t *net, uint32_t fi, int64_t now, uint64_t delivered, int canc,
		     net_flow_rec_t *r)
{
	const flow_t *f = &net->flows[fi];
	r->id = flow_id(net, fi);
	r->start_ns = f->t_start;
	r->join_ns = f->state == F_ACTIVE ? f->t_join : -1;
	r->end_ns = now;
	r->bytes = f->bytes;
	r->delivered = delivered;
	r->cls = (net_class_t)f->cls;
	r->src = f->src;
	r->dst = f->dst;
	r->tag = f->tag;
	r->cancelled = canc;
}

static void flow_release(net_t *net, uint32_t fi)
{
	flow_t *f = &net->flows[fi];
	f->state = F_FREE;
	f->gen++;
	if (f->gen == 0)
		f->gen = 1;
	f->next_free = net->free_flow;
	net->free_flow = fi;
}

static int on_join(net_t *net, uint32_t fi, uint32_t gen)
{
	if (fi >= net->n_flows)
		return KS_ERUNTIME;
	flow_t *f = &net->flows[fi];
	if (f->state != F_PENDING || f->gen != gen)
		return 0;
	int64_t now = ev_engine_now(net->eng);
	f->ev = EV_NONE;
	uint32_t ai;
	if (agg_find_or_make(net, f, &ai))
		return KS_ENOMEM;
	agg_t *a = &net->aggs[ai];
	if (VEC_GROW(a->heap, a->heap_cap, a->n + 1, 16))
		return KS_ENOMEM;
	agg_advance(a, now);
	f->state = F_ACTIVE;
	f->t_join = now;
	f->agg = ai;
	f->target = a->served + (double)f->bytes;
	a->heap[a->n++] = fi;
	mh_up(net, a, a->n - 1);
	if (agg_touch(net, ai))
		return KS_ENOMEM;
	return mark_dirty(net, a->path, a->len);
}

static int on_done(net_t *net, uint32_t ai, uint32_t gen)
{
	agg_t *a = &net->aggs[ai];
	if (!a->live || a->gen != gen)
		return 0;
	int64_t now = ev_engine_now(net->eng);
	a->ev = EV_NONE;
	agg_advance(a, now);
	net->n_done = 0;
	while (a->n > 0) {
		uint32_t fi = a->heap[0];
		flow_t *f = &net->flows[fi];
		double r = f->target - a->served;
		if (r > done_eps((double)f->bytes, f->target))
			break;
		mh_remove(net, a, 0);
		if (VEC_GROW(net->done, net->cap_done, net->n_done + 1, 16))
			return KS_ENOMEM;
		struct done_item *d = &net->done[net->n_done++];
		net_flow_rec_t *rec = &d->rec;
		fill_rec(net, fi, now, f->bytes, 0, rec);
		d->fn = f->done;
		d->ctx = f->ctx;
		if (f->cls == NET_FG) {
			net->st.fg_done++;
			net->st.fg_actual_ns += (double)(now - f->t_start);
			net->st.fg_alone_ns += (double)f->alone;
		}
		net->st.finished++;
		net->st.active--;
		if (record(net, rec))
			return KS_ENOMEM;
		flow_release(net, fi);
	}
	if (net->n_done == 0) /* float noise left a sliver: re-arm */
		return agg_schedule(net, ai, now);
	if (agg_touch(net, ai) || mark_dirty(net, a->path, a->len))
		return KS_ENOMEM;
	if (a->n == 0)
		agg_destroy(net, ai);
	else if (net->quantum > 0 && agg_schedule(net, ai, now)) /* old rate runs to the tick */
		return KS_ENOMEM;
	/* callbacks last: they may start or cancel flows (never re-enter on_done) */
	uint32_t nd = net->n_done;
	for (uint32_t i = 0; i < nd; i++) {
		if (!net->done[i].fn)
			continue;
		net_flow_rec_t rec = net->done[i].rec;
		int rc = net->done[i].fn(net->done[i].ctx, net, &rec);
		if (rc)
			return rc;
	}
	return 0;
}

static void prof_charge(net_t *net, double ns, uint32_t kind)
{
	if (kind != K_SOLVE) {
		if (VEC_GROW(net->prof_ns, net->cap_prof, net->n_prof + 1, 64) ||
		    VEC_GROW(net->prof_kind, net->cap_prof_kind, net->n_prof + 1, 64))
			return;
		net->prof_kind[net->n_prof] = kind == K_DONE;
		net->prof_ns[net->n_prof++] = ns;
		net->prof_since_solve++;
		return;
	}
	size_t k = net->prof_since_solve;
	if (k == 0)
		return;
	for (size_t i = net->n_prof - k; i < net->n_prof; i++)
		net->prof_ns[i] += ns / (double)k;
	net->prof_since_solve = 0;
}

static int on_event(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	net_t *net = ctx;
	(void)eng;
	uint32_t kind = (uint32_t)(ev->payload >> 32), gen = (uint32_t)ev->payload;
	double t0 = net->prof ? prof_clock(net) : 0;
	int rc = 0;
	switch (kind) {
	case K_JOIN:
		rc = on_join(net, ev->target, gen);
		break;
	case K_DONE:
		rc = on_done(net, ev->target, gen);
		break;
	case K_SOLVE:
		net->solve_ev = EV_NONE;
		rc = net->n_dirty ? solve(net) : 0;
		break;
	default:
		rc = KS_ERUNTIME;
	}
	if (net->prof)
		prof_charge(net, prof_clock(net) - t0, kind);
	return rc;
}

/* ---- public API ------------------------------------------------------------ */

net_t *net_new(ev_engine_t *eng, err_t *e)
{
	net_t *net = calloc(1, sizeof *net);
	if (!net) {
		err_set(e, KS_ENOMEM, "net: out of memory");
		return NULL;
	}
	net->eng = eng;
	net->free_flow = UINT32_MAX;
	net->free_agg = UINT32_MAX;
	net->share = NET_SHARE_STRICT;
	net->bg_weight = 1.0;
	net->record = 1;
	if (ev_engine_type_new(eng, on_event, net, &net->type)) {
		err_set(e, KS_ERUNTIME, "net: no event type left (EV_MAX_TYPES)");
		free(net);
		return NULL;
	}
	return net;
}

void net_free(net_t *net)
{
	if (!net)
		return;
	for (uint32_t i = 0; i < net->n_links; i++)
		free(net->links[i].aggs);
	for (uint32_t i = 0; i < net->n_aggs; i++)
		free(net->aggs[i].heap);
	FREE_ALL(net->links, net->flows, net->aggs, net->buckets, net->dirty, net->chg, net->bnd,
	         net->bnd_fx, net->prom, net->comp_aggs, net->comp_links, net->capped, net->row_rem,
	         net->row_w, net->row_cap, net->row_kv, net->row_cnt, net->heap, net->hpos,
	         net->done, net->recs, net->prof_ns, net->prof_kind, net->act, net);
}

int net_link_add(net_t *net, double capacity_Bps, int64_t latency_ns, uint32_t *id, err_t *e)
{
	if (!(capacity_Bps > 0) || !isfinite(capacity_Bps))
		return err_set(e, KS_EINPUT, "link capacity must be a positive number of bytes/s");
	if (latency_ns < 0)
		return err_set(e, KS_EINPUT, "link latency must be >= 0 ns");
	if (VEC_GROW(net->links, net->cap_links, net->n_links + 1, 16))
		return err_set(e, KS_ENOMEM, "net: out of memory");
	link_t *l = &net->links[net->n_links];
	memset(l, 0, sizeof *l);
	l->cap = capacity_Bps / 1e9;
	l->lat = latency_ns;
	l->t_acc = ev_engine_now(net->eng);
	l->apos = UINT32_MAX;
	if (id)
		*id = net->n_links;
	net->n_links++;
	return 0;
}

size_t net_link_count(const net_t *net)
{
	return net->n_links;
}

const uint32_t *net_links_active(const net_t *net, size_t *n)
{
	*n = net->n_act;
	return net->act;
}

int net_set_share(net_t *net, net_share_t mode, double bg_weight, err_t *e)
{
	if (mode != NET_SHARE_STRICT && mode != NET_SHARE_WEIGHTED)
		return err_set(e, KS_EINPUT, "unknown share mode %d", (int)mode);
	if (mode == NET_SHARE_WEIGHTED && !(bg_weight >= NET_BG_WEIGHT_MIN && bg_weight <= 1))
		return err_set(e, KS_EINPUT, "background weight must be in [%g, 1], got %g",
			       NET_BG_WEIGHT_MIN, bg_weight);
	net->share = mode;
	net->bg_weight = mode == NET_SHARE_WEIGHTED ? bg_weight : 1.0;
	net->full_next = 1;
	for (uint32_t i = 0; i < net->n_links; i++)
		if (net->links[i].n_aggs && mark_dirty(net, &i, 1))
			return err_set(e, KS_ENOMEM, "net: out of memory");
	return 0;
}

int net_set_bg_mode(net_t *net, net_bg_mode_t mode, double param, err_t *e)
{
	if (mode != NET_BG_IMMEDIATE && mode != NET_BG_IDLE_WINDOW && mode != NET_BG_RATE_CAP)
		return err_set(e, KS_EINPUT, "unknown background mode %d", (int)mode);
	if (mode != NET_BG_IMMEDIATE && !(param > 0 && param <= 1))
		return err_set(e, KS_EINPUT, "background %s must be in (0, 1], got %g",
			       mode == NET_BG_IDLE_WINDOW ? "threshold" : "share", param);
	net->bg_mode = mode;
	net->bg_param = param;
	net->full_next = 1;
	for (uint32_t i = 0; i < net->n_links; i++)
		if (net->links[i].n_aggs && mark_dirty(net, &i, 1))
			return err_set(e, KS_ENOMEM, "net: out of memory");
	return 0;
}

int net_set_solver(net_t *net, net_solver_t solver, err_t *e)
{
	if (solver != NET_SOLVER_INCREMENTAL && solver != NET_SOLVER_FULL)
		return err_set(e, KS_EINPUT, "unknown solver %d", (int)solver);
	net->solver = solver;
	net->full_next = 1;
	return 0;
}

int net_set_quantum(net_t *net, int64_t ns, err_t *e)
{
	if (ns < 0)
		return err_set(e, KS_EINPUT, "solve quantum must be >= 0 ns, got %lld", (long long)ns);
	net->quantum = ns;
	return 0;
}

void net_set_record(net_t *net, int on)
{
	net->record = on;
}

int net_flow_start(net_t *net, const net_flow_spec_t *s, uint64_t *id, err_t *e)
{
	if (!s->path || s->path_len == 0 || s->path_len > NET_PATH_MAX)
		return err_set(e, KS_EINPUT, "flow path must have 1..%d links, got %u",
			       NET_PATH_MAX, s->path_len);
	if (s->cls != NET_FG && s->cls != NET_BG)
		return err_set(e, KS_EINPUT, "unknown flow class %d", (int)s->cls);
	if (!(s->rate_cap >= 0) || s->copy_overhead_ns < 0)
		return err_set(e, KS_EINPUT, "flow rate cap and copy overhead must be >= 0");
	int64_t lat = 0, ovh;
	double minc = INFINITY;
	int over = 0;
	for (uint32_t k = 0; k < s->path_len; k++) {
		if (s->path[k] >= net->n_links)
			return err_set(e, KS_EINPUT, "flow path: no link %u", s->path[k]);
		for (uint32_t j = 0; j < k; j++)
			if (s->path[j] == s->path[k])
				return err_set(e, KS_EINPUT, "flow path crosses link %u twice",
					       s->path[k]);
		over |= __builtin_add_overflow(lat, net->links[s->path[k]].lat, &lat);
		minc = fmin(minc, net->links[s->path[k]].cap);
	}
	over |= __builtin_mul_overflow((int64_t)(s->n_copies ? s->n_copies : 1),
				       s->copy_overhead_ns, &ovh);
	over |= __builtin_add_overflow(lat, ovh, &lat);
	int64_t now = ev_engine_now(net->eng), join;
	over |= __builtin_add_overflow(now, lat, &join);
	if (over)
		return err_set(e, KS_EINPUT,
			       "flow start + path latency + copy overhead passes INT64_MAX ns");
	uint32_t fi;
	if (net->free_flow != UINT32_MAX) {
		fi = net->free_flow;
		net->free_flow = net->flows[fi].next_free;
	} else {
		if (net->n_flows == UINT32_MAX - 1 ||
		    VEC_GROW(net->flows, net->cap_flows, net->n_flows + 1, 16))
			return err_set(e, KS_ENOMEM, "net: out of memory");
		fi = net->n_flows++;
		net->flows[fi].gen = 1;
	}
	flow_t *f = &net->flows[fi];
	f->state = F_PENDING;
	f->cls = (uint8_t)s->cls;
	f->len = (uint8_t)s->path_len;
	memcpy(f->path, s->path, s->path_len * sizeof(uint32_t));
	f->cap = s->rate_cap > 0 ? s->rate_cap / 1e9 : INFINITY;
	f->bytes = s->bytes;
	f->t_start = now;
	f->t_join = -1;
	f->src = s->src;
	f->dst = s->dst;
	f->tag = s->tag;
	f->done = s->done;
	f->ctx = s->ctx;
	f->alone = t_add(lat, s->bytes ? dur_ns((double)s->bytes, fmin(minc, f->cap)) : 0);
	/* with a quantum, joins wait for the next tick: rates only rise there */
	f->ev = ev_engine_at(net->eng, tick_up(net, join), net->type, fi,
			     ((uint64_t)K_JOIN << 32) | f->gen);
	if (f->ev == EV_NONE) {
		flow_release(net, fi);
		return err_set(e, KS_ENOMEM, "net: cannot schedule flow start");
	}
	net->st.started++;
	net->st.active++;
	if (id)
		*id = flow_id(net, fi);
	return 0;
}

int net_flow_cancel(net_t *net, uint64_t id, uint64_t *delivered, err_t *e)
{
	uint32_t fi;
	flow_t *f = flow_get(net, id, &fi);
	if (!f)
		return err_set(e, KS_EINPUT, "net: no active flow %llu", (unsigned long long)id);
	int64_t now = ev_engine_now(net->eng);
	uint64_t got = 0;
	if (f->state == F_PENDING) {
		ev_engine_cancel(net->eng, f->ev);
	} else {
		uint32_t ai = f->agg;
		agg_t *a = &net->aggs[ai];
		agg_advance(a, now);
		double left = f->target - a->served;
		double d = (double)f->bytes - (left > 0 ? left : 0);
		got = d <= 0 ? 0 : d >= (double)f->bytes ? f->bytes : (uint64_t)d;
		mh_remove(net, a, f->hpos);
		if (agg_touch(net, ai) || mark_dirty(net, a->path, a->len))
			return err_set(e, KS_ENOMEM, "net: out of memory");
		if (a->n == 0)
			agg_destroy(net, ai);
	}
	net_flow_rec_t rec;
	fill_rec(net, fi, now, got, 1, &rec);
	net->st.cancelled++;
	net->st.active--;
	if (record(net, &rec))
		return err_set(e, KS_ENOMEM, "net: out of memory");
	flow_release(net, fi);
	if (delivered)
		*delivered = got;
	return 0;
}

void net_flush(net_t *net)
{
	int64_t now = ev_engine_now(net->eng);
	if (net->n_dirty == 0 || tick_up(net, now) != now)
		return; /* with a quantum, the rates in force hold until the tick */
	if (net->solve_ev != EV_NONE) {
		ev_engine_cancel(net->eng, net->solve_ev);
		net->solve_ev = EV_NONE;
	}
	(void)solve(net); /* only KS_ENOMEM; rates then stay as they were */
}

double net_flow_rate(net_t *net, uint64_t id)
{
	flow_t *f = flow_get(net, id, NULL);
	if (!f)
		return -1;
	net_flush(net);
	return f->state == F_ACTIVE ? net->aggs[f->agg].rate * 1e9 : 0;
}

double net_flow_remaining(net_t *net, uint64_t id)
{
	flow_t *f = flow_get(net, id, NULL);
	if (!f)
		return -1;
	if (f->state != F_ACTIVE)
		return (double)f->bytes;
	net_flush(net);
	agg_t *a = &net->aggs[f->agg];
	double r = f->target - a->served - a->rate * (double)(ev_engine_now(net->eng) - a->t_last);
	return r > 0 ? r : 0;
}

int64_t net_flow_eta(net_t *net, uint64_t id)
{
	flow_t *f = flow_get(net, id, NULL);
	if (!f)
		return -1;
	net_flush(net);
	int64_t now = ev_engine_now(net->eng);
	if (f->state == F_PENDING) {
		/* joins at its event; rate unknown until then: estimate alone */
		return t_add(f->t_start, f->alone);
	}
	agg_t *a = &net->aggs[f->agg];
	double r = net_flow_remaining(net, id);
	if (r <= done_eps((double)f->bytes, f->target))
		return now;
	if (a->rate <= 0)
		return INT64_MAX;
	return t_add(now, dur_ns(r, a->rate));
}

int64_t net_path_estimate(net_t *net, const uint32_t *path, uint32_t len, net_class_t cls,
			  uint64_t bytes)
{
	net_flush(net);
	int64_t lat = 0;
	double rate = INFINITY;
	for (uint32_t k = 0; k < len; k++) {
		if (path[k] >= net->n_links)
			return -1;
		const link_t *l = &net->links[path[k]];
		lat = t_add(lat, l->lat);
		uint64_t n = 1;
		for (uint32_t j = 0; j < l->n_aggs; j++) {
			const agg_t *a = &net->aggs[l->aggs[j]];
			if (a->cls == NET_FG || cls == NET_BG)
				n += a->n;
		}
		double share = l->cap / (double)n;
		if (cls == NET_BG && net->share == NET_SHARE_STRICT)
			share = fmin(share, fmax(0.0, l->cap - l->use[NET_FG]));
		rate = fmin(rate, share);
	}
	if (!(rate > 0))
		return INT64_MAX;
	return t_add(t_add(ev_engine_now(net->eng), lat), bytes ? dur_ns((double)bytes, rate) : 0);
}

int net_link_info(const net_t *net, uint32_t link, double *capacity_Bps, int64_t *latency_ns)
{
	if (link >= net->n_links)
		return KS_EINPUT;
	*capacity_Bps = net->links[link].cap * 1e9;
	*latency_ns = net->links[link].lat;
	return 0;
}

int net_link_stats(net_t *net, uint32_t link, net_link_stats_t *out)
{
	if (link >= net->n_links)
		return KS_EINPUT;
	net_flush(net);
	link_t *l = &net->links[link];
	link_account(l, ev_engine_now(net->eng));
	out->capacity = l->cap * 1e9;
	out->latency_ns = l->lat;
	for (int c = 0; c < 2; c++) {
		out->rate[c] = l->use[c] * 1e9;
		out->bytes[c] = l->bytes[c];
		out->busy_ns[c] = l->busy[c];
	}
	return 0;
}

void net_get_stats(net_t *net, net_stats_t *out)
{
	*out = net->st;
}

const net_flow_rec_t *net_records(const net_t *net, size_t *n)
{
	*n = net->n_recs;
	return net->recs;
}

void net_set_profile(net_t *net, int mode)
{
	net->prof = mode;
	net->n_prof = 0;
	net->prof_since_solve = 0;
}

const double *net_profile(const net_t *net, const uint8_t **finish, size_t *n)
{
	*n = net->n_prof;
	if (finish)
		*finish = net->prof_kind;
	return net->prof_ns;
}

/* net_solve — the rates of a net_t (see net_int.h): max-min fairness by
 * progressive filling (Bertsekas & Gallager, Data Networks, 2nd ed., sec.
 * 6.5.2), over aggregates of flows that share path, class and cap,
 * restricted to the connected component of the links that changed since
 * the last solve (NET_SOLVER_FULL), or to the part of it coupled to the
 * change through links near saturation (NET_SOLVER_INCREMENTAL, the
 * default; see net_solve()).
 */
#include "sim/net/net_int.h"
#include "sim/base/vec.h"

#include <stdlib.h>

/* A link whose load stays below (1 - SLACK) of every row's capacity never
 * freezes a flow in progressive filling (freezing fills a row to within
 * ~1e-12), so it does not couple the flows that cross it. Own choice: far
 * above float noise, far below any real headroom. */
#define SLACK 1e-6

/* Whether a link with these loads couples its flows (see SLACK). */
static int fx_tight(const net_t *net, const int64_t fx[2])
{
	double lim = FX_ONE * (1 - SLACK);
	if ((double)(fx[0] + fx[1]) >= lim)
		return 1;
	return net->bg_mode == NET_BG_RATE_CAP && (double)fx[1] >= lim * net->bg_param;
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

/* The aggregates of this pass: unfrozen, weighted by class (wfg/wbg), and
 * those with a cap listed in net->capped (*n_capped of them). */
static int fill_weights(net_t *net, double wfg, double wbg, uint32_t *n_capped)
{
	*n_capped = 0;
	for (uint32_t i = 0; i < net->n_comp_aggs; i++) {
		agg_t *a = &net->aggs[net->comp_aggs[i]];
		if (a->pass != net->pass)
			continue;
		a->frozen = 0;
		a->w = (a->cls == NET_FG ? wfg : wbg) * (double)a->n;
		if (a->cap < INFINITY) {
			if (VEC_GROW(net->capped, net->cap_capped, *n_capped + 1, 16))
				return KS_ENOMEM;
			net->capped[(*n_capped)++] = net->comp_aggs[i];
		}
	}
	return 0;
}

/* Every row back at its capacity with the weights and counts of this
 * pass's aggregates, and each row that holds one in the heap. */
static void fill_rows(net_t *net)
{
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
}

/* The fill level of the top row (INFINITY when the heap is empty), after
 * settling it: empty rows dropped, stale keys refreshed. */
static double top_level(net_t *net)
{
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
		return k;
	}
	return INFINITY;
}

/* Freezes the unfrozen aggregates of the top row at level lrow; a boundary
 * row doing so is marked for promotion. */
static int freeze_top(net_t *net, double lrow)
{
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
	return 0;
}

/* Fills the aggregates of comp_aggs whose pass == net->pass, with class
 * weights wfg/wbg, against row_cap; leaves each one's new_rate. Coupling
 * rows sum over the link's own aggregate list, whose order does not depend
 * on the solve; boundary rows (net_solve()) over the aggregates in the solve,
 * and one that would freeze a flow is marked for promotion. */
static int fill(net_t *net, double wfg, double wbg)
{
	uint32_t n_capped;
	if (fill_weights(net, wfg, wbg, &n_capped))
		return KS_ENOMEM;
	fill_rows(net);
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
		double lrow = top_level(net);
		if (net->n_heap == 0 && ci >= n_capped)
			break;
		if (ci < n_capped && lcap <= lrow) { /* lrow may be infinite too */
			agg_t *a = &net->aggs[net->capped[ci++]];
			freeze(net, a, a->cap);
			continue;
		}
		if (freeze_top(net, lrow))
			return KS_ENOMEM;
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
int net_solve(net_t *net)
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
		net_agg_set_load(net, a, a->rate * (double)a->n, now);
		if (net_agg_schedule(net, ai, now))
			return KS_ENOMEM;
	}
	for (uint32_t i = 0; i < net->n_comp_links; i++) {
		link_t *l = &net->links[net->comp_links[i]];
		l->tight = (uint8_t)fx_tight(net, l->fx);
	}
	return 0;
}

/* net — see net.h: flows from start to finish or cancel, and the API.
 * Aggregates are in net_agg.c, the rates in net_solve.c.
 */
#include "sim/base/mem.h"
#include "sim/net/net_int.h"
#include "sim/base/vec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers --------------------------------------------------------- */

static double prof_clock(const net_t *net)
{
	struct timespec ts;
	clock_gettime(net->prof == 2 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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
	if (net_agg_find_or_make(net, f, &ai))
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
	net_links_count(net, a, 1);
	net_mh_up(net, a, a->n - 1);
	if (net_agg_touch(net, ai))
		return KS_ENOMEM;
	return net_mark_dirty(net, a->path, a->len);
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
		net_mh_remove(net, a, 0);
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
		return net_agg_schedule(net, ai, now);
	if (net_agg_touch(net, ai) || net_mark_dirty(net, a->path, a->len))
		return KS_ENOMEM;
	if (a->n == 0)
		net_agg_destroy(net, ai);
	else if (net->quantum > 0 && net_agg_schedule(net, ai, now)) /* old rate runs to the tick */
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
		rc = net->n_dirty ? net_solve(net) : 0;
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
		if (net->links[i].n_aggs && net_mark_dirty(net, &i, 1))
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
		if (net->links[i].n_aggs && net_mark_dirty(net, &i, 1))
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
		net_mh_remove(net, a, f->hpos);
		if (net_agg_touch(net, ai) || net_mark_dirty(net, a->path, a->len))
			return err_set(e, KS_ENOMEM, "net: out of memory");
		if (a->n == 0)
			net_agg_destroy(net, ai);
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
	(void)net_solve(net); /* only KS_ENOMEM; rates then stay as they were */
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
		/* its flows of this class or above, counted as they join and leave */
		uint64_t n = 1 + (uint64_t)l->n_fl[NET_FG] + (cls == NET_BG ? l->n_fl[NET_BG] : 0);
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
	net_link_account(l, ev_engine_now(net->eng));
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

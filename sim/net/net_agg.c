/* net_agg — the aggregates of a net_t (see net_int.h): their member heaps,
 * their links' loads and accounting, their completion events, the dirty
 * links that schedule the next solve, and the table that finds the
 * aggregate of a path, class and cap.
 */
#include "sim/net/net_int.h"
#include "sim/base/vec.h"

#include <stdlib.h>
#include <string.h>

/* ---- aggregate member heap (min target) ------------------------------------ */

static void mh_set(net_t *net, agg_t *a, uint32_t i, uint32_t fi)
{
	a->heap[i] = fi;
	net->flows[fi].hpos = i;
}

void net_mh_up(net_t *net, agg_t *a, uint32_t i)
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

void net_mh_remove(net_t *net, agg_t *a, uint32_t i)
{
	net_links_count(net, a, -1);
	a->n--;
	if (i == a->n)
		return;
	mh_set(net, a, i, a->heap[a->n]);
	net_mh_up(net, a, i);
	mh_down(net, a, net->flows[a->heap[i]].hpos);
}

/* ---- dirty links and solve scheduling -------------------------------------- */

int net_mark_dirty(net_t *net, const uint32_t *path, uint32_t len)
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

void net_link_account(link_t *l, int64_t now)
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

/* Moves the aggregate's contribution to its links from a->load to load
 * (accounting the links up to now first). The links' tight flags stay as
 * the last solve left them until the next one (net_solve()): a link that was
 * tight must couple the flows that stay when one leaves it. */
void net_agg_set_load(net_t *net, agg_t *a, double load, int64_t now)
{
	for (uint32_t k = 0; k < a->len; k++) {
		link_t *l = &net->links[a->path[k]];
		net_link_account(l, now);
		l->fx[a->cls] += fx_of(l, load) - fx_of(l, a->load);
		l->use[a->cls] = (double)l->fx[a->cls] * l->cap / FX_ONE;
	}
	a->load = load;
}

/* Notes that the aggregate's members changed: the next solve starts there. */
int net_agg_touch(net_t *net, uint32_t ai)
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
int net_agg_schedule(net_t *net, uint32_t ai, int64_t now)
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

int net_agg_find_or_make(net_t *net, const flow_t *f, uint32_t *out)
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

void net_agg_destroy(net_t *net, uint32_t ai)
{
	agg_t *a = &net->aggs[ai];
	net_agg_set_load(net, a, 0, ev_engine_now(net->eng));
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

/* forecast — see forecast.h. One open-addressing table (linear probing, no
 * deletion) maps a prefix id to its entry in `keys`, where the ticks that
 * forecast it, its unresolved tick records and its replicas hang; a second
 * one is the set of block ids seen in arrivals. Tick records sit in a ring in
 * time order, chained per prefix, so an arrival resolves exactly the records
 * of the prefixes it starts with, and a tick expires those older than 4H. */
#include "sim/run/forecast.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "sim/run/recorder.h"

#define NONE UINT64_MAX

/* id -> value + 1 (0: free slot) */
typedef struct idmap {
	uint64_t *id;
	uint32_t *val;
	uint32_t mask, count;
} idmap_t;

typedef struct fkey {
	int64_t last, prev; /* the two latest ticks that forecast it (INT64_MIN: none) */
	uint64_t head, tail; /* its oldest unresolved and newest tick records (NONE) */
	uint32_t rep;        /* its first replica + 1 (0: none) */
	uint8_t named, hit;  /* a forecast named it; an arrival came within H of one */
} fkey_t;

typedef struct frec {
	int64_t t;
	uint64_t next; /* the prefix's next record (NONE) */
	uint32_t key;
} frec_t;

typedef struct frep {
	uint32_t inst, next; /* next: the prefix's next replica + 1 */
	int live;
} frep_t;

struct fcast {
	int64_t h;
	uint32_t min_blocks;
	idmap_t map, seen;
	fkey_t *keys;
	size_t n_keys, cap_keys;
	frec_t *ring;         /* records lo..hi-1 at seq % cap */
	uint64_t lo, hi, cap;
	frep_t *rep;
	size_t n_rep, cap_rep;
	uint32_t *copy_rep;   /* by copy id: its replica + 1 (0: none) */
	size_t cap_copy;
	double *lead;         /* s, one per used replica */
	size_t n_lead, cap_lead;
	/* counts */
	uint64_t entries, hit_h4, hit_h, hit_x4;
	uint64_t prefixes, prefix_hits; /* distinct prefixes named, and come within H */
	uint64_t eligible, recalled_h4, recalled, recalled_x4, recalled_part;
	uint64_t placed_eligible, placed_hit;
};

static int map_init(idmap_t *m)
{
	m->mask = 1023;
	m->count = 0;
	m->id = calloc(m->mask + 1, sizeof *m->id);
	m->val = calloc(m->mask + 1, sizeof *m->val);
	return m->id && m->val ? 0 : KS_ENOMEM;
}

static uint32_t map_slot(const idmap_t *m, uint64_t id)
{
	uint32_t i = (uint32_t)rng_fmix64(id) & m->mask;
	while (m->val[i] && m->id[i] != id)
		i = (i + 1) & m->mask;
	return i;
}

/* The value of id, or 0 when absent. */
static uint32_t map_get(const idmap_t *m, uint64_t id)
{
	return m->val[map_slot(m, id)];
}

/* Sets id to val (> 0) when absent; doubles the table past half load. */
static int map_put(idmap_t *m, uint64_t id, uint32_t val)
{
	if (2 * (m->count + 1) > m->mask + 1) {
		idmap_t n = {calloc(2 * (size_t)m->mask + 2, sizeof *n.id),
			     calloc(2 * (size_t)m->mask + 2, sizeof *n.val), 2 * m->mask + 1, m->count};
		if (!n.id || !n.val) {
			FREE_ALL(n.id, n.val);
			return KS_ENOMEM;
		}
		for (uint32_t i = 0; i <= m->mask; i++)
			if (m->val[i]) {
				uint32_t j = map_slot(&n, m->id[i]);
				n.id[j] = m->id[i];
				n.val[j] = m->val[i];
			}
		FREE_ALL(m->id, m->val);
		*m = n;
	}
	uint32_t i = map_slot(m, id);
	if (!m->val[i]) {
		m->id[i] = id;
		m->val[i] = val;
		m->count++;
	}
	return 0;
}

fcast_t *fcast_new(int64_t horizon_ns, uint32_t min_blocks)
{
	fcast_t *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->h = horizon_ns;
	f->min_blocks = min_blocks ? min_blocks : 1;
	if (map_init(&f->map) || map_init(&f->seen)) {
		fcast_free(f);
		return NULL;
	}
	return f;
}

void fcast_free(fcast_t *f)
{
	if (!f)
		return;
	FREE_ALL(f->map.id, f->map.val, f->seen.id, f->seen.val, f->keys, f->ring, f->rep,
		 f->copy_rep, f->lead, f);
}

/* The entry of prefix id, made when absent: its index, or -1 on ENOMEM. */
static int64_t key_get(fcast_t *f, uint64_t id)
{
	uint32_t v = map_get(&f->map, id);
	if (v)
		return v - 1;
	if (f->n_keys >= UINT32_MAX - 1 || VEC_GROW(f->keys, f->cap_keys, f->n_keys + 1, 256) ||
	    map_put(&f->map, id, (uint32_t)f->n_keys + 1))
		return -1;
	f->keys[f->n_keys] = (fkey_t){INT64_MIN, INT64_MIN, NONE, NONE, 0, 0, 0};
	return (int64_t)f->n_keys++;
}

static frec_t *rec_at(const fcast_t *f, uint64_t seq)
{
	return &f->ring[seq % f->cap];
}

/* Appends a tick record for key at t, growing the ring (entries keep their
 * seq, so the chains stay valid). */
static int rec_push(fcast_t *f, uint32_t key, int64_t t)
{
	if (f->hi - f->lo == f->cap) {
		uint64_t cap = f->cap ? 2 * f->cap : 256;
		frec_t *n = malloc(cap * sizeof *n);
		if (!n)
			return KS_ENOMEM;
		for (uint64_t q = f->lo; q < f->hi; q++)
			n[q % cap] = *rec_at(f, q);
		free(f->ring);
		f->ring = n;
		f->cap = cap;
	}
	uint64_t q = f->hi++;
	*rec_at(f, q) = (frec_t){t, NONE, key};
	fkey_t *k = &f->keys[key];
	if (k->head == NONE)
		k->head = q;
	else
		rec_at(f, k->tail)->next = q;
	k->tail = q;
	return 0;
}

int fcast_tick(fcast_t *f, int64_t now, const pol_forecast_t *fc)
{
	/* no arrival from now on can fall in the 4H window of these */
	while (f->lo < f->hi && rec_at(f, f->lo)->t < now - 4 * f->h) {
		fkey_t *k = &f->keys[rec_at(f, f->lo)->key];
		if (k->head == f->lo)
			k->head = rec_at(f, f->lo)->next;
		f->lo++;
	}
	for (size_t i = 0; fc && i < fc->n; i++) {
		const pol_fc_t *e = &fc->e[i];
		if (!e->n_blocks)
			continue;
		int64_t ki = key_get(f, e->blocks[e->n_blocks - 1]);
		if (ki < 0)
			return KS_ENOMEM;
		fkey_t *k = &f->keys[ki];
		if (k->last == now)
			continue; /* once per tick */
		k->prev = k->last;
		k->last = now;
		f->entries++;
		if (!k->named) {
			k->named = 1;
			f->prefixes++;
		}
		if (rec_push(f, (uint32_t)ki, now))
			return KS_ENOMEM;
	}
	return 0;
}

/* The latest tick before now that forecast k (INT64_MIN: none). */
static int64_t key_before(const fkey_t *k, int64_t now)
{
	return k->last < now ? k->last : k->prev;
}

/* An arrival at now starts with prefix k: its tick records before now are
 * resolved by it, the first arrival after each. */
static void key_resolve(fcast_t *f, fkey_t *k, int64_t now)
{
	uint64_t q = k->head;
	for (; q != NONE && rec_at(f, q)->t < now; q = rec_at(f, q)->next) {
		int64_t d = now - rec_at(f, q)->t;
		f->hit_h4 += d <= f->h / 4;
		f->hit_h += d <= f->h;
		f->hit_x4 += d <= 4 * f->h;
		if (d <= f->h && !k->hit) {
			k->hit = 1;
			f->prefix_hits++;
		}
	}
	k->head = q;
}

/* Whether k has a replica that exists, and one at inst (dead ones unlinked). */
static void key_replicas(fcast_t *f, fkey_t *k, int32_t inst, int *any, int *here)
{
	uint32_t *link = &k->rep;
	while (*link) {
		frep_t *r = &f->rep[*link - 1];
		if (!r->live) {
			*link = r->next;
			continue;
		}
		*any = 1;
		*here |= inst >= 0 && r->inst == (uint32_t)inst;
		link = &r->next;
	}
}

int fcast_arrival(fcast_t *f, int64_t now, const uint64_t *b, uint32_t n, int32_t inst)
{
	uint32_t m = 0; /* the shared prefix: chained ids, so the first unseen ends it */
	while (m < n && map_get(&f->seen, b[m]))
		m++;
	for (uint32_t j = m; j < n; j++)
		if (map_put(&f->seen, b[j], 1))
			return KS_ENOMEM;
	/* the latest tick before now that forecast a prefix of >= min_blocks of
	 * theirs, and one that covers their whole shared prefix */
	int64_t part = INT64_MIN, full = INT64_MIN;
	int any = 0, here = 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t v = map_get(&f->map, b[j]);
		if (!v)
			continue;
		fkey_t *k = &f->keys[v - 1];
		int64_t t = key_before(k, now);
		if (j + 1 >= f->min_blocks && t > part)
			part = t;
		if (j + 1 >= f->min_blocks && j + 1 >= m && t > full)
			full = t;
		key_resolve(f, k, now);
		if (inst >= 0)
			key_replicas(f, k, inst, &any, &here);
	}
	if (m >= f->min_blocks) {
		f->eligible++;
		f->recalled_h4 += full != INT64_MIN && now - full <= f->h / 4;
		f->recalled += full != INT64_MIN && now - full <= f->h;
		f->recalled_x4 += full != INT64_MIN && now - full <= 4 * f->h;
		f->recalled_part += part != INT64_MIN && now - part <= f->h;
	}
	f->placed_eligible += (uint64_t)any;
	f->placed_hit += (uint64_t)here;
	return 0;
}

int fcast_replica_start(fcast_t *f, uint64_t copy, uint64_t key, uint32_t inst)
{
	int64_t ki = key_get(f, key);
	size_t had = f->cap_copy;
	if (ki < 0 || f->n_rep >= UINT32_MAX - 1 || VEC_GROW(f->rep, f->cap_rep, f->n_rep + 1, 64) ||
	    VEC_GROW(f->copy_rep, f->cap_copy, copy + 1, 256))
		return KS_ENOMEM;
	memset(f->copy_rep + had, 0, (f->cap_copy - had) * sizeof *f->copy_rep);
	fkey_t *k = &f->keys[ki];
	f->rep[f->n_rep] = (frep_t){inst, k->rep, 1};
	k->rep = (uint32_t)++f->n_rep;
	f->copy_rep[copy] = k->rep;
	return 0;
}

void fcast_replica_cancel(fcast_t *f, uint64_t copy)
{
	if (copy < f->cap_copy && f->copy_rep[copy])
		f->rep[f->copy_rep[copy] - 1].live = 0;
}

void fcast_evicted(fcast_t *f, uint64_t id, uint32_t inst)
{
	uint32_t v = map_get(&f->map, id);
	for (uint32_t r = v ? f->keys[v - 1].rep : 0; r; r = f->rep[r - 1].next)
		if (f->rep[r - 1].inst == inst)
			f->rep[r - 1].live = 0;
}

int fcast_replica_used(fcast_t *f, int64_t landed_ns, int64_t now_ns)
{
	if (VEC_GROW(f->lead, f->cap_lead, f->n_lead + 1, 64))
		return KS_ENOMEM;
	f->lead[f->n_lead++] = (double)(now_ns - landed_ns) / 1e9;
	return 0;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : NAN;
}

int fcast_report(fcast_t *f, sim_results_t *res)
{
	double m[REC_FORECAST_LEAD_P50_S - REC_FORECAST_ENTRIES + 1];
	size_t nm = sizeof m / sizeof m[0];
	for (size_t i = 0; i < nm; i++)
		m[i] = NAN;
	if (f) {
		double lead_mean = NAN, lead_p50 = NAN;
		if (f->n_lead) {
			gsl_sort(f->lead, 1, f->n_lead); /* at the end: nothing reads their order */
			lead_mean = gsl_stats_mean(f->lead, 1, f->n_lead);
			lead_p50 = gsl_stats_quantile_from_sorted_data(f->lead, 1, f->n_lead, 0.5);
		}
		/* REC_FORECAST_ENTRIES .. REC_FORECAST_LEAD_P50_S, in the recorder's order */
		const double v[] = {
		    (double)f->entries, ratio(f->hit_h, f->entries), ratio(f->hit_h4, f->entries),
		    ratio(f->hit_x4, f->entries), (double)f->eligible, ratio(f->recalled, f->eligible),
		    ratio(f->recalled_h4, f->eligible), ratio(f->recalled_x4, f->eligible),
		    ratio(f->recalled_part, f->eligible), (double)f->placed_eligible,
		    ratio(f->placed_hit, f->placed_eligible), (double)f->n_lead, lead_mean, lead_p50,
		};
		_Static_assert(sizeof v / sizeof v[0] == sizeof m / sizeof m[0], "one value per metric");
		memcpy(m, v, sizeof m);
	}
	for (size_t i = 0; i < nm; i++)
		if (rec_metric(res, REC_FORECAST_ENTRIES + (int)i, m[i]))
			return KS_ENOMEM;
	/* only for a run that asked a forecast, so the others keep their /summary */
	if (f && (rec_metric(res, REC_FORECAST_PREFIXES, (double)f->prefixes) ||
		  rec_metric(res, REC_FORECAST_PREFIX_PRECISION, ratio(f->prefix_hits, f->prefixes))))
		return KS_ENOMEM;
	return 0;
}

/* kv_filter — a stand-in for the filters of kv_filter.h: every kind keeps an
 * exact multiset of ids (open addressing, linear probing, tombstones), and
 * BLOOM/CUCKOO answer has() also true for an id whose 64-bit mix with the
 * seed falls below fpr * 2^64 (a deterministic false positive at the target
 * rate). Sizes and counts follow the exact set, not the real structures;
 * kvf_theory_fpr gives the header's formulas. */
#include "sim/base/kv_filter.h"

#include <math.h>
#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/base/rng.h"

typedef struct kvf_ent {
	uint64_t id;
	int64_t stamp;  /* TTL: last insert, ns */
	uint32_t count; /* occurrences (BLOOM/CUCKOO count twice); 0: free or tombstone */
	uint8_t used;   /* 1: live or tombstone (probing goes on) */
} kvf_ent_t;

struct kv_filter {
	kvf_params_t p;
	kvf_ent_t *t;
	uint64_t cap, n_used, count;
};

static uint64_t slot_of(const kv_filter_t *f, uint64_t id)
{
	return rng_fmix64(id ^ f->p.seed) & (f->cap - 1);
}

static int grow(kv_filter_t *f)
{
	uint64_t ncap = f->cap ? 2 * f->cap : 16;
	kvf_ent_t *old = f->t, *nt = calloc(ncap, sizeof *nt);
	if (!nt)
		return KS_ENOMEM;
	uint64_t ocap = f->cap;
	f->t = nt;
	f->cap = ncap;
	f->n_used = 0;
	for (uint64_t i = 0; i < ocap; i++) {
		if (!old[i].count)
			continue;
		uint64_t j = slot_of(f, old[i].id);
		while (nt[j].used)
			j = (j + 1) & (ncap - 1);
		nt[j] = old[i];
		f->n_used++;
	}
	free(old);
	return 0;
}

static kvf_ent_t *find(const kv_filter_t *f, uint64_t id)
{
	if (!f->cap)
		return NULL;
	for (uint64_t j = slot_of(f, id);; j = (j + 1) & (f->cap - 1)) {
		kvf_ent_t *x = &f->t[j];
		if (!x->used)
			return NULL;
		if (x->count && x->id == id)
			return x;
	}
}

kv_filter_t *kvf_new(const kvf_params_t *p)
{
	if (!p || !p->capacity)
		return NULL;
	if ((p->kind == KVF_BLOOM || p->kind == KVF_CUCKOO) && !(p->fpr > 0 && p->fpr < 1))
		return NULL;
	if (p->kind == KVF_TTL && p->ttl_ns <= 0)
		return NULL;
	if (p->kind > KVF_TTL)
		return NULL;
	kv_filter_t *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->p = *p;
	if (grow(f)) {
		free(f);
		return NULL;
	}
	return f;
}

void kvf_free(kv_filter_t *f)
{
	if (!f)
		return;
	free(f->t);
	free(f);
}

int kvf_insert(kv_filter_t *f, uint64_t id, int64_t now_ns)
{
	kvf_ent_t *x = find(f, id);
	int multi = f->p.kind == KVF_BLOOM || f->p.kind == KVF_CUCKOO;
	if (x) {
		if (multi) {
			x->count++;
			f->count++;
		}
		x->stamp = now_ns;
		return 0;
	}
	if (2 * (f->n_used + 1) > f->cap && grow(f))
		return KS_ENOMEM;
	uint64_t j = slot_of(f, id);
	while (f->t[j].used && f->t[j].count)
		j = (j + 1) & (f->cap - 1);
	f->n_used += !f->t[j].used;
	f->t[j] = (kvf_ent_t){id, now_ns, 1, 1};
	f->count++;
	return 0;
}

void kvf_remove(kv_filter_t *f, uint64_t id)
{
	kvf_ent_t *x = find(f, id);
	if (!x)
		return;
	x->count--;
	f->count--;
}

static int false_positive(const kv_filter_t *f, uint64_t id)
{
	if (f->p.kind != KVF_BLOOM && f->p.kind != KVF_CUCKOO)
		return 0;
	/* rng_fmix64 is a bijection: a uniform mix, compared with fpr * 2^64 */
	double u = (double)rng_fmix64(rng_fmix64(id) ^ (f->p.seed + RNG_GOLDEN)) / 18446744073709551616.0;
	return u < f->p.fpr;
}

int kvf_has(const kv_filter_t *f, uint64_t id, int64_t now_ns)
{
	const kvf_ent_t *x = find(f, id);
	if (x && (f->p.kind != KVF_TTL || now_ns - x->stamp < f->p.ttl_ns))
		return 1;
	return false_positive(f, id);
}

uint64_t kvf_count(const kv_filter_t *f)
{
	return f->count;
}

uint64_t kvf_bytes(const kv_filter_t *f)
{
	return f->cap * sizeof *f->t;
}

double kvf_theory_fpr(const kvf_params_t *p)
{
	if (p->kind == KVF_BLOOM) {
		/* m = -n ln p / ln^2 2, k = round(m/n ln 2); (1 - e^{-kn/m})^k */
		double n = (double)p->capacity, m = ceil(-n * log(p->fpr) / (M_LN2 * M_LN2));
		double k = fmax(1, round(m / n * M_LN2));
		return pow(1 - exp(-k * n / m), k);
	}
	if (p->kind == KVF_CUCKOO) {
		int fb = 1;
		while (8.0 / ldexp(1, fb) > p->fpr && fb < 32)
			fb++;
		return 8.0 / ldexp(1, fb);
	}
	return 0;
}

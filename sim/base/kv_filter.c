/* kv_filter — exact, TTL, counting Bloom and cuckoo sets of block ids. */
#include "sim/base/kv_filter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/base/rng.h"

#define BLOOM_MAX 15               /* a 4-bit counter saturates here */
#define CK_SLOTS 4                 /* fingerprints per bucket (Fan et al. 2014, b = 4) */
#define CK_LOAD 0.95               /* highest load the buckets are sized for (ibid., b = 4) */
#define CK_KICKS 500               /* most relocations per insert (ibid.) */
#define CK_FP_MAX 32               /* widest fingerprint, bits */
#define SET_MIN_SLOTS 16u          /* own choice */
#define SET_MAX_START (1ull << 26) /* own choice: a larger hint starts here and grows */

struct kv_filter {
	kvf_params_t p;
	uint64_t salt;  /* from p.seed: salts every hash */
	uint64_t count; /* see kvf_count */
	/* EXACT / TTL: open addressing, linear probing; key 0 marks an empty
	 * slot, so id 0 lives apart (zero_in, zero_t). */
	uint64_t *key;
	int64_t *t; /* last insert time per slot (TTL only) */
	uint64_t nslot;
	int zero_in;
	int64_t zero_t;
	/* BLOOM: m counters, two per byte; k probes. */
	uint8_t *ctr;
	uint64_t m;
	uint32_t k;
	/* CUCKOO: nb buckets of CK_SLOTS f-bit fingerprints, bit-packed. */
	uint8_t *fp;
	uint64_t nb;
	uint32_t f;
	uint64_t kick_rng; /* splitmix64 state for the victim choice */
};

static uint64_t hash_id(const kv_filter_t *f, uint64_t id)
{
	return rng_fmix64(id ^ f->salt);
}

/* ---- EXACT / TTL ---- */

static int ttl_live(const kv_filter_t *f, int64_t t, int64_t now)
{
	if (f->p.kind != KVF_TTL || now < t)
		return 1;
	return (uint64_t)now - (uint64_t)t < (uint64_t)f->p.ttl_ns;
}

/* The slot holding id (id != 0), or the empty slot where it would go. */
static uint64_t set_slot(const kv_filter_t *f, uint64_t id)
{
	uint64_t mask = f->nslot - 1, s = hash_id(f, id) & mask;
	while (f->key[s] && f->key[s] != id)
		s = (s + 1) & mask;
	return s;
}

/* Knuth's deletion for linear probing (TAOCP 6.4, algorithm R): later
 * entries of the cluster move back so every probe path stays unbroken. */
static void set_del(kv_filter_t *f, uint64_t s)
{
	uint64_t mask = f->nslot - 1;
	f->key[s] = 0;
	for (uint64_t j = (s + 1) & mask; f->key[j]; j = (j + 1) & mask) {
		uint64_t home = hash_id(f, f->key[j]) & mask;
		/* j's entry may fill the hole at s unless its home lies in (s, j] */
		if (((j - home) & mask) >= ((j - s) & mask)) {
			f->key[s] = f->key[j];
			if (f->t)
				f->t[s] = f->t[j];
			f->key[j] = 0;
			s = j;
		}
	}
}

/* Moves the entries into nslot slots, dropping those expired at now (TTL).
 * 0 or KS_ENOMEM (nothing changed). */
static int set_rehash(kv_filter_t *f, uint64_t nslot, int64_t now)
{
	uint64_t *key = calloc(nslot, sizeof *key);
	int64_t *t = f->p.kind == KVF_TTL ? malloc(nslot * sizeof *t) : NULL;
	if (!key || (f->p.kind == KVF_TTL && !t)) {
		FREE_ALL(key, t);
		return KS_ENOMEM;
	}
	uint64_t *okey = f->key, on = f->nslot;
	int64_t *ot = f->t;
	f->key = key;
	f->t = t;
	f->nslot = nslot;
	if (f->zero_in && t && !ttl_live(f, f->zero_t, now))
		f->zero_in = 0;
	f->count = f->zero_in;
	for (uint64_t i = 0; i < on; i++) {
		if (!okey[i] || (ot && !ttl_live(f, ot[i], now)))
			continue;
		uint64_t s = set_slot(f, okey[i]);
		key[s] = okey[i];
		if (t)
			t[s] = ot[i];
		f->count++;
	}
	FREE_ALL(okey, ot);
	return 0;
}

static int set_insert(kv_filter_t *f, uint64_t id, int64_t now)
{
	if (!id) {
		f->count += !f->zero_in;
		f->zero_in = 1;
		f->zero_t = now;
		return 0;
	}
	uint64_t s = set_slot(f, id);
	if (f->key[s]) {
		if (f->t)
			f->t[s] = now;
		return 0;
	}
	uint64_t held = f->count - f->zero_in;
	if (2 * (held + 1) > f->nslot) {
		uint64_t live = held;
		if (f->t) {
			live = 0;
			for (uint64_t i = 0; i < f->nslot; i++)
				live += f->key[i] && ttl_live(f, f->t[i], now);
		}
		/* double unless purging leaves the table at most a quarter full,
		 * so every rehash is paid for by nslot/4 inserts */
		uint64_t nslot = 4 * (live + 1) > f->nslot ? 2 * f->nslot : f->nslot;
		if (set_rehash(f, nslot, now))
			return KS_ENOMEM;
		s = set_slot(f, id);
	}
	f->key[s] = id;
	if (f->t)
		f->t[s] = now;
	f->count++;
	return 0;
}

static void set_remove(kv_filter_t *f, uint64_t id)
{
	if (!id) {
		f->count -= f->zero_in;
		f->zero_in = 0;
		return;
	}
	uint64_t s = set_slot(f, id);
	if (f->key[s]) {
		set_del(f, s);
		f->count--;
	}
}

static int set_has(const kv_filter_t *f, uint64_t id, int64_t now)
{
	if (!id)
		return f->zero_in && ttl_live(f, f->zero_t, now);
	uint64_t s = set_slot(f, id);
	return f->key[s] && (!f->t || ttl_live(f, f->t[s], now));
}

/* ---- BLOOM ---- */

/* m = -n ln p / ln^2 2 and k = round(m/n ln 2) (Bloom 1970; the optimum for
 * a given n and p, e.g. Broder, Mitzenmacher, Internet Math. 2004).
 * 0 when too large to allocate. */
static int bloom_size(const kvf_params_t *p, uint64_t *m, uint32_t *k)
{
	double n = (double)p->capacity, mm = ceil(-n * log(p->fpr) / (M_LN2 * M_LN2));
	if (!(mm < 0x1p62))
		return 0;
	*m = mm < 1 ? 1 : (uint64_t)mm;
	double kk = round((double)*m / n * M_LN2);
	*k = kk < 1 ? 1 : kk > 1000 ? 1000 : (uint32_t)kk;
	return 1;
}

static unsigned ctr_get(const kv_filter_t *f, uint64_t i)
{
	return (f->ctr[i >> 1] >> ((i & 1) * 4)) & 0xf;
}

static void ctr_add(kv_filter_t *f, uint64_t i, int d)
{
	/* modulo 256: d = -1 takes 1 from the nibble (never at 0 here) */
	f->ctr[i >> 1] = (uint8_t)(f->ctr[i >> 1] + (unsigned)d * (1u << ((i & 1) * 4)));
}

/* Enhanced double hashing (Dillinger, Manolios, FMCAD 2004): probe j is
 * x_j mod m with x_{j+1} = x_j + y_j, y_{j+1} = y_j + j. */
typedef struct {
	uint64_t x, y;
} probe_t;

static probe_t probe_start(const kv_filter_t *f, uint64_t id)
{
	uint64_t x = hash_id(f, id);
	return (probe_t){x, rng_fmix64(x ^ RNG_GOLDEN)};
}

static uint64_t probe_next(const kv_filter_t *f, probe_t *pr, uint32_t j)
{
	uint64_t i = pr->x % f->m;
	pr->x += pr->y;
	pr->y += j;
	return i;
}

static void bloom_insert(kv_filter_t *f, uint64_t id)
{
	probe_t pr = probe_start(f, id);
	for (uint32_t j = 0; j < f->k; j++) {
		uint64_t i = probe_next(f, &pr, j);
		if (ctr_get(f, i) < BLOOM_MAX)
			ctr_add(f, i, 1);
	}
	f->count++;
}

static int bloom_has(const kv_filter_t *f, uint64_t id)
{
	probe_t pr = probe_start(f, id);
	for (uint32_t j = 0; j < f->k; j++)
		if (!ctr_get(f, probe_next(f, &pr, j)))
			return 0;
	return 1;
}

static void bloom_remove(kv_filter_t *f, uint64_t id)
{
	if (bloom_has(f, id) && f->count)
		f->count--;
	probe_t pr = probe_start(f, id);
	for (uint32_t j = 0; j < f->k; j++) {
		uint64_t i = probe_next(f, &pr, j);
		unsigned c = ctr_get(f, i);
		if (c && c < BLOOM_MAX)
			ctr_add(f, i, -1);
	}
}

/* ---- CUCKOO ---- */

/* f = ceil(log2(2b/fpr)) so that 2b/2^f <= fpr (Fan et al. 2014, eq. 6),
 * and the fewest power-of-two buckets holding capacity at load CK_LOAD.
 * 0 when too large to allocate. */
static int cuckoo_size(const kvf_params_t *p, uint64_t *nb, uint32_t *fbits)
{
	double fb = ceil(log2(2.0 * CK_SLOTS / p->fpr));
	*fbits = fb > CK_FP_MAX ? CK_FP_MAX : (uint32_t)fb;
	double need = ceil((double)p->capacity / (CK_SLOTS * CK_LOAD));
	if (!(need < 0x1p56))
		return 0;
	for (*nb = 1; (double)*nb < need; *nb <<= 1)
		;
	return 1;
}

static uint64_t ck_bytes(uint64_t nb, uint32_t fbits)
{
	return (nb * CK_SLOTS * fbits + 7) / 8;
}

static uint32_t ck_get(const kv_filter_t *f, uint64_t b, unsigned s)
{
	uint64_t bit = (b * CK_SLOTS + s) * f->f, w = 0;
	const uint8_t *p = f->fp + bit / 8;
	unsigned nbytes = (unsigned)((bit % 8 + f->f + 7) / 8);
	for (unsigned i = 0; i < nbytes; i++)
		w |= (uint64_t)p[i] << (8 * i);
	return (uint32_t)((w >> (bit % 8)) & ((1ull << f->f) - 1));
}

static void ck_set(kv_filter_t *f, uint64_t b, unsigned s, uint32_t v)
{
	uint64_t bit = (b * CK_SLOTS + s) * f->f, w = 0;
	uint8_t *p = f->fp + bit / 8;
	unsigned sh = (unsigned)(bit % 8), nbytes = (sh + f->f + 7) / 8;
	uint64_t mask = ((1ull << f->f) - 1) << sh;
	for (unsigned i = 0; i < nbytes; i++)
		w |= (uint64_t)p[i] << (8 * i);
	w = (w & ~mask) | ((uint64_t)v << sh);
	for (unsigned i = 0; i < nbytes; i++)
		p[i] = (uint8_t)(w >> (8 * i));
}

/* The id's first bucket and its fingerprint (never 0: 0 marks empty). */
static uint64_t ck_locate(const kv_filter_t *f, uint64_t id, uint32_t *fp)
{
	uint64_t h = hash_id(f, id);
	*fp = (uint32_t)(rng_fmix64(h + RNG_GOLDEN) & ((1ull << f->f) - 1));
	*fp += !*fp;
	return h & (f->nb - 1);
}

/* Partial-key cuckoo hashing: the other bucket from either one. */
static uint64_t ck_alt(const kv_filter_t *f, uint64_t b, uint32_t fp)
{
	return (b ^ rng_fmix64(fp ^ f->salt)) & (f->nb - 1);
}

/* The slot of bucket b holding v, or -1. */
static int ck_find(const kv_filter_t *f, uint64_t b, uint32_t v)
{
	for (unsigned s = 0; s < CK_SLOTS; s++)
		if (ck_get(f, b, s) == v)
			return (int)s;
	return -1;
}

static int cuckoo_insert(kv_filter_t *f, uint64_t id)
{
	uint32_t cur;
	uint64_t b1 = ck_locate(f, id, &cur), b2 = ck_alt(f, b1, cur);
	uint64_t b = b1;
	int s = ck_find(f, b1, 0);
	if (s < 0)
		s = ck_find(f, b = b2, 0);
	if (s >= 0) {
		ck_set(f, b, (unsigned)s, cur);
		f->count++;
		return 0;
	}
	struct {
		uint64_t b;
		unsigned s;
	} path[CK_KICKS];
	f->kick_rng += RNG_GOLDEN;
	b = (rng_fmix64(f->kick_rng) & 1) ? b2 : b1;
	for (int n = 0; n < CK_KICKS; n++) {
		f->kick_rng += RNG_GOLDEN;
		unsigned v = (unsigned)(rng_fmix64(f->kick_rng) % CK_SLOTS);
		uint32_t victim = ck_get(f, b, v);
		ck_set(f, b, v, cur);
		path[n].b = b;
		path[n].s = v;
		cur = victim;
		b = ck_alt(f, b, cur);
		if ((s = ck_find(f, b, 0)) >= 0) {
			ck_set(f, b, (unsigned)s, cur);
			f->count++;
			return 0;
		}
	}
	/* undo: each kicked fingerprint goes back where it was */
	for (int n = CK_KICKS - 1; n >= 0; n--) {
		uint32_t back = ck_get(f, path[n].b, path[n].s);
		ck_set(f, path[n].b, path[n].s, cur);
		cur = back;
	}
	return KVF_FULL;
}

static int cuckoo_has(const kv_filter_t *f, uint64_t id)
{
	uint32_t fp;
	uint64_t b1 = ck_locate(f, id, &fp);
	return ck_find(f, b1, fp) >= 0 || ck_find(f, ck_alt(f, b1, fp), fp) >= 0;
}

static void cuckoo_remove(kv_filter_t *f, uint64_t id)
{
	uint32_t fp;
	uint64_t b = ck_locate(f, id, &fp);
	int s = ck_find(f, b, fp);
	if (s < 0) {
		b = ck_alt(f, b, fp);
		s = ck_find(f, b, fp);
	}
	if (s >= 0) {
		ck_set(f, b, (unsigned)s, 0);
		f->count--;
	}
}

/* ---- the interface ---- */

/* EXACT/TTL's first table: slots for capacity at load <= 1/2, a power of
 * two, capped (it grows by doubling past that). */
static uint64_t set_start_slots(uint64_t capacity)
{
	uint64_t n = SET_MIN_SLOTS;
	while (n / 2 < capacity && n < SET_MAX_START)
		n <<= 1;
	return n;
}

static int params_ok(const kvf_params_t *p)
{
	if (!p || !p->capacity)
		return 0;
	switch (p->kind) {
	case KVF_EXACT:
		return 1;
	case KVF_TTL:
		return p->ttl_ns > 0;
	case KVF_BLOOM:
	case KVF_CUCKOO:
		return p->fpr > 0 && p->fpr < 1;
	}
	return 0;
}

kv_filter_t *kvf_new(const kvf_params_t *p)
{
	if (!params_ok(p))
		return NULL;
	kv_filter_t *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->p = *p;
	f->salt = rng_splitmix64(p->seed);
	f->kick_rng = p->seed;
	int ok = 0;
	if (p->kind == KVF_EXACT || p->kind == KVF_TTL) {
		uint64_t n = set_start_slots(p->capacity);
		f->nslot = n;
		f->key = calloc(n, sizeof *f->key);
		f->t = p->kind == KVF_TTL ? malloc(n * sizeof *f->t) : NULL;
		ok = f->key && (p->kind != KVF_TTL || f->t);
	} else if (p->kind == KVF_BLOOM) {
		ok = bloom_size(p, &f->m, &f->k) && (f->ctr = calloc((f->m + 1) / 2, 1));
	} else {
		ok = cuckoo_size(p, &f->nb, &f->f) && (f->fp = calloc(ck_bytes(f->nb, f->f), 1));
	}
	if (!ok) {
		kvf_free(f);
		return NULL;
	}
	return f;
}

void kvf_free(kv_filter_t *f)
{
	if (f)
		FREE_ALL(f->key, f->t, f->ctr, f->fp, f);
}

int kvf_insert(kv_filter_t *f, uint64_t id, int64_t now_ns)
{
	switch (f->p.kind) {
	case KVF_BLOOM:
		bloom_insert(f, id);
		return 0;
	case KVF_CUCKOO:
		return cuckoo_insert(f, id);
	default:
		return set_insert(f, id, now_ns);
	}
}

void kvf_remove(kv_filter_t *f, uint64_t id)
{
	switch (f->p.kind) {
	case KVF_BLOOM:
		bloom_remove(f, id);
		break;
	case KVF_CUCKOO:
		cuckoo_remove(f, id);
		break;
	default:
		set_remove(f, id);
	}
}

int kvf_has(const kv_filter_t *f, uint64_t id, int64_t now_ns)
{
	switch (f->p.kind) {
	case KVF_BLOOM:
		return bloom_has(f, id);
	case KVF_CUCKOO:
		return cuckoo_has(f, id);
	default:
		return set_has(f, id, now_ns);
	}
}

uint64_t kvf_count(const kv_filter_t *f)
{
	return f->count;
}

uint64_t kvf_bytes(const kv_filter_t *f)
{
	switch (f->p.kind) {
	case KVF_BLOOM:
		return (f->m + 1) / 2;
	case KVF_CUCKOO:
		return ck_bytes(f->nb, f->f);
	case KVF_TTL:
		return f->nslot * (sizeof *f->key + sizeof *f->t);
	default:
		return f->nslot * sizeof *f->key;
	}
}

uint64_t kvf_bytes_for(const kvf_params_t *p)
{
	if (!params_ok(p))
		return 0;
	uint64_t m, nb;
	uint32_t k, fb;
	switch (p->kind) {
	case KVF_BLOOM:
		return bloom_size(p, &m, &k) ? (m + 1) / 2 : 0;
	case KVF_CUCKOO:
		return cuckoo_size(p, &nb, &fb) ? ck_bytes(nb, fb) : 0;
	default:
		return set_start_slots(p->capacity) *
		       (sizeof(uint64_t) + (p->kind == KVF_TTL ? sizeof(int64_t) : 0));
	}
}

double kvf_theory_fpr(const kvf_params_t *p)
{
	if (!params_ok(p))
		return NAN;
	if (p->kind == KVF_BLOOM) {
		uint64_t m;
		uint32_t k;
		if (!bloom_size(p, &m, &k))
			return NAN;
		return pow(1 - exp(-(double)k * (double)p->capacity / (double)m), k);
	}
	if (p->kind == KVF_CUCKOO) {
		uint64_t nb;
		uint32_t fb;
		if (!cuckoo_size(p, &nb, &fb))
			return NAN;
		return 2.0 * CK_SLOTS / ldexp(1, (int)fb);
	}
	return 0;
}

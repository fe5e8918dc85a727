/* sim_holders — the block -> holders index (see sim_holders.h): an
 * open-addressing table with linear probing and backward-shift deletion
 * (Knuth, TAOCP vol. 3, 6.4 Algorithm R), so no tombstones pile up as ids
 * come and go; each entry keeps a sorted array of instances. */
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"
#include "sim/base/rng.h"
#include "sim/base/vec.h"
#include "sim/run/sim_holders.h"

typedef struct hentry {
	uint64_t id;
	uint32_t *inst; /* ascending; NULL and n == 0 when the slot is free */
	uint32_t n, cap;
} hentry_t;

struct sim_holders {
	hentry_t *t;
	uint32_t mask, count; /* table size - 1 (a power of two), used slots */
};

/* First position in e's list not below inst (binary search). */
static uint32_t lower_bound(const hentry_t *e, uint32_t inst)
{
	uint32_t lo = 0, hi = e->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (e->inst[mid] < inst)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t home(const sim_holders_t *h, uint64_t id)
{
	return (uint32_t)rng_fmix64(id) & h->mask;
}

sim_holders_t *sim_holders_new(void)
{
	sim_holders_t *h = calloc(1, sizeof *h);
	if (h && !(h->t = calloc(64, sizeof *h->t))) {
		free(h);
		return NULL;
	}
	if (h)
		h->mask = 63;
	return h;
}

void sim_holders_free(sim_holders_t *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i <= h->mask; i++)
		free(h->t[i].inst);
	free(h->t);
	free(h);
}

/* The slot holding id, or the free slot where it would go. */
static uint32_t slot_of(const sim_holders_t *h, uint64_t id)
{
	uint32_t i = home(h, id);
	while (h->t[i].n && h->t[i].id != id)
		i = (i + 1) & h->mask;
	return i;
}

/* Doubles the table at 3/4 load, so probes stay short. */
static int grow(sim_holders_t *h)
{
	uint32_t size = h->mask + 1;
	hentry_t *t = calloc((size_t)size * 2, sizeof *t), *old = h->t;
	if (!t)
		return KS_ENOMEM;
	h->t = t;
	h->mask = size * 2 - 1;
	for (uint32_t i = 0; i < size; i++)
		if (old[i].n)
			h->t[slot_of(h, old[i].id)] = old[i];
		else
			free(old[i].inst);
	free(old);
	return 0;
}

int sim_holders_add(sim_holders_t *h, uint64_t id, uint32_t inst)
{
	if ((h->count + 1) * 4 > (h->mask + 1) * 3 && grow(h))
		return KS_ENOMEM;
	hentry_t *e = &h->t[slot_of(h, id)];
	uint32_t k = lower_bound(e, inst);
	if (k < e->n && e->inst[k] == inst)
		return 0;
	if (VEC_GROW(e->inst, e->cap, e->n + 1, 4))
		return KS_ENOMEM;
	memmove(e->inst + k + 1, e->inst + k, (e->n - k) * sizeof *e->inst);
	e->inst[k] = inst;
	if (!e->n++) {
		e->id = id;
		h->count++;
	}
	return 0;
}

/* Empties slot i and shifts back the entries after it that probed past it. */
static void slot_clear(sim_holders_t *h, uint32_t i)
{
	free(h->t[i].inst);
	h->t[i] = (hentry_t){0};
	h->count--;
	for (uint32_t j = (i + 1) & h->mask; h->t[j].n; j = (j + 1) & h->mask) {
		uint32_t r = home(h, h->t[j].id);
		/* j's entry may move to i only if its home is not in (i, j] */
		if (i <= j ? (i < r && r <= j) : (i < r || r <= j))
			continue;
		h->t[i] = h->t[j];
		h->t[j] = (hentry_t){0};
		i = j;
	}
}

void sim_holders_remove(sim_holders_t *h, uint64_t id, uint32_t inst)
{
	uint32_t i = slot_of(h, id);
	hentry_t *e = &h->t[i];
	uint32_t k = lower_bound(e, inst);
	if (k == e->n || e->inst[k] != inst)
		return;
	memmove(e->inst + k, e->inst + k + 1, (e->n - k - 1) * sizeof *e->inst);
	if (!--e->n)
		slot_clear(h, i);
}

const uint32_t *sim_holders_of(const sim_holders_t *h, uint64_t id, uint32_t *n)
{
	const hentry_t *e = &h->t[slot_of(h, id)];
	*n = e->n;
	return e->n ? e->inst : NULL;
}

uint32_t sim_holders_ids(const sim_holders_t *h)
{
	return h->count;
}

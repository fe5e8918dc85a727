/* pol_rview — the routers' approximate view (see pol.h): per instance, a
 * set of chained block ids in LRU order, as sgl-router's cache_aware policy
 * keeps one radix tree per worker. Each instance's set is a slab of nodes
 * on a doubly linked list (most recent at head) and an open-addressing map
 * id -> node (linear probing, backward-shift deletion, load <= 1/2), both
 * grown by doubling up to the set's cap, then reused in place. */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <stdlib.h>

#define NIL UINT32_MAX

typedef struct rv_set {
	uint64_t *id;
	uint32_t *prev, *next; /* list links, NIL at the ends */
	uint32_t n, alloc;     /* nodes in use / allocated */
	uint32_t head, tail;
	uint32_t *slot; /* node index or NIL */
	uint32_t mask;  /* slots - 1 (0 before the first insert) */
} rv_set_t;

struct pol_rview {
	uint32_t n_inst, cap;
	rv_set_t *set;
};

pol_rview_t *pol_rview_new(uint32_t n_inst, uint32_t cap_blocks)
{
	pol_rview_t *rv = calloc(1, sizeof *rv);
	if (!rv)
		return NULL;
	rv->n_inst = n_inst;
	rv->cap = cap_blocks;
	if (!(rv->set = calloc(n_inst ? n_inst : 1, sizeof *rv->set))) {
		free(rv);
		return NULL;
	}
	for (uint32_t i = 0; i < n_inst; i++)
		rv->set[i].head = rv->set[i].tail = NIL;
	return rv;
}

void pol_rview_free(pol_rview_t *rv)
{
	if (!rv)
		return;
	for (uint32_t i = 0; i < rv->n_inst; i++) {
		rv_set_t *t = &rv->set[i];
		FREE_ALL(t->id, t->prev, t->next, t->slot);
	}
	FREE_ALL(rv->set, rv);
}

/* The slot holding id, or the empty slot where it would go. */
static uint32_t slot_of(const rv_set_t *t, uint64_t id)
{
	uint32_t s = (uint32_t)pol_mix64(id) & t->mask;
	while (t->slot[s] != NIL && t->id[t->slot[s]] != id)
		s = (s + 1) & t->mask;
	return s;
}

static uint32_t node_of(const rv_set_t *t, uint64_t id)
{
	return t->mask ? t->slot[slot_of(t, id)] : NIL;
}

/* Knuth's deletion for linear probing (TAOCP 6.4, algorithm R): later
 * entries of the cluster move back so every probe path stays unbroken. */
static void map_del(rv_set_t *t, uint32_t s)
{
	t->slot[s] = NIL;
	for (uint32_t j = (s + 1) & t->mask; t->slot[j] != NIL; j = (j + 1) & t->mask) {
		uint32_t home = (uint32_t)pol_mix64(t->id[t->slot[j]]) & t->mask;
		/* j's entry may fill the hole at s unless its home lies in (s, j] */
		if (((j - home) & t->mask) >= ((j - s) & t->mask)) {
			t->slot[s] = t->slot[j];
			t->slot[j] = NIL;
			s = j;
		}
	}
}

static void list_unlink(rv_set_t *t, uint32_t k)
{
	if (t->prev[k] != NIL)
		t->next[t->prev[k]] = t->next[k];
	else
		t->head = t->next[k];
	if (t->next[k] != NIL)
		t->prev[t->next[k]] = t->prev[k];
	else
		t->tail = t->prev[k];
}

static void list_push_head(rv_set_t *t, uint32_t k)
{
	t->prev[k] = NIL;
	t->next[k] = t->head;
	if (t->head != NIL)
		t->prev[t->head] = k;
	else
		t->tail = k;
	t->head = k;
}

/* Room for one more node: 0 or KS_ENOMEM (nothing changed). */
static int grow(rv_set_t *t, uint32_t cap)
{
	uint32_t alloc = t->alloc ? 2 * t->alloc : 64;
	alloc = alloc < cap ? alloc : cap;
	if (VEC_RESIZE(t->id, alloc) || VEC_RESIZE(t->prev, alloc) || VEC_RESIZE(t->next, alloc))
		return KS_ENOMEM;
	uint32_t nslot = 1;
	while (nslot < 2 * alloc)
		nslot <<= 1;
	uint32_t *slot = malloc(nslot * sizeof *slot);
	if (!slot)
		return KS_ENOMEM;
	for (uint32_t s = 0; s < nslot; s++)
		slot[s] = NIL;
	free(t->slot);
	t->slot = slot;
	t->mask = nslot - 1;
	t->alloc = alloc;
	for (uint32_t k = 0; k < t->n; k++)
		t->slot[slot_of(t, t->id[k])] = k;
	return 0;
}

int pol_rview_insert(pol_rview_t *rv, uint32_t inst, const uint64_t *blocks, uint32_t n)
{
	if (inst >= rv->n_inst || !rv->cap)
		return 0;
	rv_set_t *t = &rv->set[inst];
	/* refresh what is held first, so making room never takes the path's
	 * own blocks while older ones remain */
	for (uint32_t j = n; j-- > 0;) {
		uint32_t k = node_of(t, blocks[j]);
		if (k != NIL) {
			list_unlink(t, k);
			list_push_head(t, k);
		}
	}
	/* then deepest first: every block ends more recent than its descendants */
	for (uint32_t j = n; j-- > 0;) {
		uint32_t k = node_of(t, blocks[j]);
		if (k != NIL) {
			list_unlink(t, k);
			list_push_head(t, k);
			continue;
		}
		if (t->n == rv->cap) {
			/* the least recent node is a leaf: drop it, reuse its node */
			k = t->tail;
			list_unlink(t, k);
			map_del(t, slot_of(t, t->id[k]));
		} else {
			if (t->n == t->alloc) {
				int rc = grow(t, rv->cap);
				if (rc)
					return rc;
			}
			k = t->n++;
		}
		t->id[k] = blocks[j];
		t->slot[slot_of(t, blocks[j])] = k;
		list_push_head(t, k);
	}
	return 0;
}

int pol_rview_has(const pol_rview_t *rv, uint32_t inst, uint64_t id)
{
	return inst < rv->n_inst && node_of(&rv->set[inst], id) != NIL;
}

uint32_t pol_rview_match(const pol_rview_t *rv, uint32_t inst, const uint64_t *blocks, uint32_t n)
{
	uint32_t k = 0;
	while (k < n && pol_rview_has(rv, inst, blocks[k]))
		k++;
	return k;
}

uint32_t pol_rview_size(const pol_rview_t *rv, uint32_t inst)
{
	return inst < rv->n_inst ? rv->set[inst].n : 0;
}

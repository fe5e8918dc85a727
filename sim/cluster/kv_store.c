/* kv_store — see kv_store.h. Open-addressing map (linear probing, backward
 * shift deletion) from block id to slab slot, each entry tagged with the
 * id's 32-bit hash so that probing and deletion touch the slab only on a
 * tag match. Evictable slots are ordered by (priority, last use, -depth,
 * id): in a
 * binary min-heap under a priority function, or, in LRU mode (no function:
 * the priority is the last use), in a doubly linked list kept in that same
 * order, where every change is O(1) in the usual case (see lru_insert). */
#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "sim/cluster/kv_store.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
	kv_block_info_t b;
	double prio;
	int32_t heap;  /* index in heap (LRU mode: 0), -1 when not evictable */
	uint32_t next_free;
	uint32_t prev, next; /* LRU mode: neighbours in eviction order (NIL at ends) */
} slot_t;

/* A map entry: the id's hash (its home is tag & mask) and slot index + 1
 * (0: empty). */
typedef struct map_ent {
	uint32_t tag, slot1;
} map_ent_t;

/* An erased block, as the erase log keeps it (kv_kept). */
typedef struct kv_erased {
	uint64_t id;
	uint32_t depth;
} kv_erased_t;

struct kv_store {
	uint32_t cap, used_shared, used_private, n_spec;
	uint32_t n_inflight; /* INFLIGHT blocks (kv_inflight_blocks) */
	slot_t *slot;
	uint32_t free_head;
	map_ent_t *map;
	uint32_t mask;
	uint32_t *heap;
	uint32_t heap_n;     /* evictable slots (heap or list) */
	uint32_t lru_head, lru_tail, lru_grp; /* LRU mode; grp: first of the tail's
	                                       * run of equal last use */
	uint32_t lru_fing; /* LRU mode: the slot inserted last while it stays
	                    * linked, else NIL (where lru_insert's walk starts) */
	kv_prio_fn prio;
	kv_evict_fn on_evict;
	void *pctx;
	kv_watch_fn watch;
	void *wctx;
	kv_ready_fn on_ready;
	void *rctx;
	kv_change_fn on_change;
	void *cctx;
	kv_stats_t st;
	uint64_t removed; /* ids erased from the map so far (kv_removed) */
	kv_erased_t *erased; /* the erase log: the k-th erased at k & elog_mask */
	uint32_t elog_mask;
};

#define NIL UINT32_MAX


/* The erase log's entries (kv_kept). */
static uint32_t elog_size(uint32_t cap)
{
	uint32_t n = 16;
	while (n < cap / 8 && n < 4096)
		n *= 2;
	return n;
}

/* The map's entries: a power of two at least twice the blocks (load <= 1/2). */
static uint64_t map_size(uint32_t cap)
{
	uint64_t msize = 16;
	while (msize < 2 * (uint64_t)cap + 2)
		msize <<= 1;
	return msize;
}

uint64_t kv_store_bytes(uint32_t cap)
{
	kv_store_t *s = NULL;
	uint64_t n = cap ? cap : 1;
	return sizeof *s + n * (sizeof *s->slot + sizeof *s->heap) + map_size(cap) * sizeof *s->map +
	       elog_size(cap) * sizeof *s->erased;
}

kv_store_t *kv_store_new(uint32_t cap)
{
	kv_store_t *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	uint32_t msize = (uint32_t)map_size(cap);
	s->cap = cap;
	s->slot = calloc(cap ? cap : 1, sizeof *s->slot);
	s->map = calloc(msize, sizeof *s->map);
	s->heap = calloc(cap ? cap : 1, sizeof *s->heap);
	s->elog_mask = elog_size(cap) - 1;
	s->erased = calloc((size_t)s->elog_mask + 1, sizeof *s->erased);
	if (!s->slot || !s->map || !s->heap || !s->erased) {
		kv_store_free(s);
		return NULL;
	}
	s->mask = msize - 1;
	for (uint32_t i = 0; i < cap; i++)
		s->slot[i].next_free = i + 1 < cap ? i + 1 : NIL;
	s->free_head = cap ? 0 : NIL;
	s->lru_head = s->lru_tail = s->lru_grp = s->lru_fing = NIL;
	return s;
}

void kv_store_free(kv_store_t *s)
{
	if (!s)
		return;
	FREE_ALL(s->slot, s->map, s->heap, s->erased, s);
}

void kv_store_set_policy(kv_store_t *s, kv_prio_fn prio, kv_evict_fn on_evict, void *ctx)
{
	s->prio = prio;
	s->on_evict = on_evict;
	s->pctx = ctx;
}

void kv_store_set_watch(kv_store_t *s, kv_watch_fn fn, void *ctx)
{
	s->watch = fn;
	s->wctx = ctx;
}

void kv_store_set_on_ready(kv_store_t *s, kv_ready_fn fn, void *ctx)
{
	s->on_ready = fn;
	s->rctx = ctx;
}

void kv_store_set_on_change(kv_store_t *s, kv_change_fn fn, void *ctx)
{
	s->on_change = fn;
	s->cctx = ctx;
}

/* ---- map -------------------------------------------------------------- */

static inline uint32_t map_hash(uint64_t id)
{
	return (uint32_t)rng_fmix64(id);
}

static uint32_t map_find(const kv_store_t *s, uint64_t id)
{
	uint32_t h = map_hash(id);
	for (uint32_t i = h & s->mask;; i = (i + 1) & s->mask) {
		const map_ent_t *m = &s->map[i];
		if (!m->slot1)
			return NIL;
		if (m->tag == h && s->slot[m->slot1 - 1].b.id == id)
			return m->slot1 - 1;
	}
}

/* How many ids ahead a run of lookups asks for its map entries: the map of
 * a large store misses the cache on nearly every lookup (perf on the
 * 1,024-GPU hour), and a request's blocks are looked up in a row. Half as
 * far ahead, the map entry asked for earlier is read (a hint only: its
 * home, when the tag matches) and the slot it names asked for, which a
 * found id reads next. */
enum { MAP_AHEAD = 8, SLOT_AHEAD = 4 };

static inline void map_prefetch(const kv_store_t *s, const uint64_t *ids, uint32_t k, uint32_t n)
{
	if (k + MAP_AHEAD < n)
		__builtin_prefetch(&s->map[map_hash(ids[k + MAP_AHEAD]) & s->mask]);
	if (k + SLOT_AHEAD < n) {
		uint32_t h = map_hash(ids[k + SLOT_AHEAD]);
		const map_ent_t *m = &s->map[h & s->mask];
		if (m->slot1 && m->tag == h)
			__builtin_prefetch(&s->slot[m->slot1 - 1]);
	}
}

void kv_prefetch(const kv_store_t *s, const uint64_t *ids, uint32_t k, uint32_t n)
{
	map_prefetch(s, ids, k, n);
}

static void map_insert(kv_store_t *s, uint64_t id, uint32_t slot)
{
	uint32_t h = map_hash(id), i = h & s->mask;
	while (s->map[i].slot1)
		i = (i + 1) & s->mask;
	s->map[i] = (map_ent_t){h, slot + 1};
}

/* Erases the entry of id, which names slot v: found by the slot it names,
 * without reading other entries' slots. */
static void map_erase_slot(kv_store_t *s, uint64_t id, uint32_t v)
{
	s->erased[s->removed++ & s->elog_mask] = (kv_erased_t){id, s->slot[v].b.depth};
	uint32_t h = map_hash(id), i = h & s->mask;
	while (s->map[i].slot1 != v + 1)
		i = (i + 1) & s->mask;
	/* backward-shift deletion keeps probe chains intact without tombstones */
	uint32_t j = i;
	for (;;) {
		s->map[i].slot1 = 0;
		for (;;) {
			j = (j + 1) & s->mask;
			if (!s->map[j].slot1)
				return;
			uint32_t home = s->map[j].tag & s->mask;
			/* move j back to i unless its home lies cyclically in (i, j] */
			if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
				continue;
			break;
		}
		s->map[i] = s->map[j];
		i = j;
	}
}

/* ---- heap of evictable slots ------------------------------------------ */

static int heap_less(const kv_store_t *s, uint32_t a, uint32_t b)
{
	const slot_t *x = &s->slot[a], *y = &s->slot[b];
	if (x->prio != y->prio)
		return x->prio < y->prio;
	/* equal priority (equal hits under lfu, one class under spec_first):
	 * least recently used first, as the policies document */
	if (x->b.last_use != y->b.last_use)
		return x->b.last_use < y->b.last_use;
	if (x->b.depth != y->b.depth)
		return x->b.depth > y->b.depth; /* deeper blocks leave first */
	return x->b.id < y->b.id;
}

/* ---- LRU mode: the evictable slots in a list, in heap_less order --------- */

static void lru_link_after(kv_store_t *s, uint32_t v, uint32_t after)
{
	slot_t *sl = &s->slot[v];
	sl->prev = after;
	sl->next = after == NIL ? s->lru_head : s->slot[after].next;
	if (sl->next == NIL)
		s->lru_tail = v;
	else
		s->slot[sl->next].prev = v;
	if (after == NIL)
		s->lru_head = v;
	else
		s->slot[after].next = v;
}

/* Whether v fits in the list right after p (NIL: at the head), p and the
 * slot after it being in the list. The list is sorted, so this holds for
 * any p that precedes v and whose successor follows v, wherever the
 * guess came from: unlinking keeps a slot's links, which are the guess. */
static int lru_fits_between(const kv_store_t *s, uint32_t v, uint32_t p)
{
	uint32_t n;
	if (p == NIL) {
		n = s->lru_head;
	} else {
		if (p >= s->cap || p == v || s->slot[p].heap < 0 || !heap_less(s, p, v))
			return 0;
		n = s->slot[p].next;
	}
	return n != v && (n == NIL || heap_less(s, v, n));
}

/* Inserts v (its prio already its last use) at its place. A newly
 * evictable block was used now, so it belongs at the tail's run of equal
 * last use: before the run when it precedes the run's first (a request
 * releasing its prefix shallow to deep), else walked from the tail. */
static void lru_insert(kv_store_t *s, uint32_t v)
{
	uint32_t p = s->slot[v].prev;
	if (lru_fits_between(s, v, p)) {
		/* back where it left: a block unpinned at the instant it was
		 * pinned (a hit under kvcache.resident_at = admission), which
		 * walking from the tail costs its depth in the tail's run */
		lru_link_after(s, v, p);
		if (s->slot[s->lru_tail].prio == s->slot[v].prio &&
		    (p == NIL || s->slot[p].prio != s->slot[v].prio))
			s->lru_grp = v;
		return;
	}
	uint32_t g = s->lru_grp;
	if (g != NIL && s->slot[g].prio == s->slot[v].prio && heap_less(s, v, g)) {
		lru_link_after(s, v, s->slot[g].prev);
		s->lru_grp = v;
		return;
	}
	/* The place is the same from any start in a sorted list; from the last
	 * insert when it is in v's run, since a request's blocks entering at
	 * one instant land side by side, between the blocks other requests
	 * released then (deeper first), where a walk from the tail would pass
	 * every shallower one. */
	uint32_t at = s->lru_tail, f = s->lru_fing;
	if (f != NIL && s->slot[f].prio == s->slot[v].prio) {
		at = f;
		if (heap_less(s, v, f)) {
			do
				at = s->slot[at].prev;
			while (at != NIL && heap_less(s, v, at));
		} else {
			while (s->slot[at].next != NIL && !heap_less(s, v, s->slot[at].next))
				at = s->slot[at].next;
		}
	} else {
		while (at != NIL && heap_less(s, v, at))
			at = s->slot[at].prev;
	}
	lru_link_after(s, v, at);
	s->lru_fing = v;
	if (s->slot[v].next == NIL &&
	    (at == NIL || s->slot[at].prio != s->slot[v].prio))
		s->lru_grp = v;
}

/* Unlinks v. Removing the first of the tail's run hands the mark to the
 * next one; when the run empties the mark is unknown (NIL) and lru_insert
 * walks until a new run starts. */
static void lru_unlink(kv_store_t *s, uint32_t v)
{
	slot_t *sl = &s->slot[v];
	if (s->lru_grp == v)
		s->lru_grp = sl->next;
	if (s->lru_fing == v)
		s->lru_fing = NIL;
	if (sl->prev == NIL)
		s->lru_head = sl->next;
	else
		s->slot[sl->prev].next = sl->next;
	if (sl->next == NIL)
		s->lru_tail = sl->prev;
	else
		s->slot[sl->next].prev = sl->prev;
}

static void heap_set(kv_store_t *s, uint32_t i, uint32_t v)
{
	s->heap[i] = v;
	s->slot[v].heap = (int32_t)i;
}

static void heap_up(kv_store_t *s, uint32_t i)
{
	uint32_t v = s->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!heap_less(s, v, s->heap[p]))
			break;
		heap_set(s, i, s->heap[p]);
		i = p;
	}
	heap_set(s, i, v);
}

static void heap_down(kv_store_t *s, uint32_t i)
{
	uint32_t v = s->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= s->heap_n)
			break;
		if (c + 1 < s->heap_n && heap_less(s, s->heap[c + 1], s->heap[c]))
			c++;
		if (!heap_less(s, s->heap[c], v))
			break;
		heap_set(s, i, s->heap[c]);
		i = c;
	}
	heap_set(s, i, v);
}

/* Makes slot evictable (heap or list). */
static void heap_push(kv_store_t *s, uint32_t slot, int64_t now)
{
	slot_t *sl = &s->slot[slot];
	s->heap_n++;
	if (!s->prio) {
		sl->prio = (double)sl->b.last_use;
		sl->heap = 0;
		lru_insert(s, slot);
		return;
	}
	sl->prio = s->prio(s->pctx, &sl->b, now);
	s->heap[s->heap_n - 1] = slot;
	sl->heap = (int32_t)(s->heap_n - 1);
	heap_up(s, s->heap_n - 1);
}

static void heap_remove(kv_store_t *s, uint32_t slot)
{
	uint32_t i = (uint32_t)s->slot[slot].heap;
	s->slot[slot].heap = -1;
	s->heap_n--;
	if (!s->prio) {
		lru_unlink(s, slot);
		return;
	}
	if (i == s->heap_n)
		return;
	heap_set(s, i, s->heap[s->heap_n]);
	heap_up(s, i);
	heap_down(s, (uint32_t)s->slot[s->heap[i]].heap);
}

/* The evictable slot that goes first. */
static uint32_t heap_top(const kv_store_t *s)
{
	return s->prio ? s->heap[0] : s->lru_head;
}

/* A hit released at once on v, evictable under LRU: its last use becomes
 * now. When its new key still sorts before the slot after it (nothing that
 * follows it in the list is older, which holds for a block of the tail's
 * run), it stays where it is and only the key and the marks change, exactly
 * as lru_unlink and lru_insert's "back where it left" would leave them;
 * returns 1. Else changes nothing and returns 0 (the caller unlinks and
 * reinserts). The slot before v needs no check: it preceded v's old key,
 * and the key only grows. */
static int lru_touch_in_place(kv_store_t *s, uint32_t v, int64_t now)
{
	slot_t *sl = &s->slot[v];
	int64_t was = sl->b.last_use;
	double was_prio = sl->prio;
	sl->b.last_use = now;
	sl->prio = (double)now; /* heap_push's key in LRU mode */
	uint32_t n = sl->next, p = sl->prev;
	if (n != NIL && !heap_less(s, v, n)) {
		sl->b.last_use = was;
		sl->prio = was_prio;
		return 0;
	}
	if (s->lru_grp == v) /* lru_unlink's marks */
		s->lru_grp = n;
	if (s->lru_fing == v)
		s->lru_fing = NIL;
	if (s->slot[s->lru_tail].prio == sl->prio && (p == NIL || s->slot[p].prio != sl->prio))
		s->lru_grp = v; /* lru_insert's */
	return 1;
}

/* ---- queries ----------------------------------------------------------- */

uint32_t kv_evict_next(const kv_store_t *s, uint32_t k, uint64_t *ids, double *prio)
{
	if (k > KV_EVICT_NEXT_MAX)
		k = KV_EVICT_NEXT_MAX;
	if (k > s->heap_n)
		k = s->heap_n;
	if (!s->prio) { /* the list is the order */
		uint32_t v = s->lru_head;
		for (uint32_t j = 0; j < k; j++, v = s->slot[v].next) {
			ids[j] = s->slot[v].b.id;
			prio[j] = s->slot[v].prio;
		}
		return k;
	}
	/* best-first over the heap: the next smallest is the root or a child of
	 * one already taken, so a frontier of 2k + 1 heap positions suffices */
	uint32_t fr[2 * KV_EVICT_NEXT_MAX + 1], nf = k ? 1 : 0;
	fr[0] = 0;
	for (uint32_t j = 0; j < k; j++) {
		uint32_t b = 0;
		for (uint32_t f = 1; f < nf; f++)
			if (heap_less(s, s->heap[fr[f]], s->heap[fr[b]]))
				b = f;
		uint32_t h = fr[b], v = s->heap[h];
		ids[j] = s->slot[v].b.id;
		prio[j] = s->slot[v].prio;
		fr[b] = fr[--nf];
		for (uint32_t c = 2 * h + 1; c <= 2 * h + 2 && c < s->heap_n; c++)
			fr[nf++] = c;
	}
	return k;
}

uint32_t kv_capacity(const kv_store_t *s) { return s->cap; }
uint32_t kv_used(const kv_store_t *s) { return s->used_shared + s->used_private; }
uint32_t kv_used_shared(const kv_store_t *s) { return s->used_shared; }
uint32_t kv_used_private(const kv_store_t *s) { return s->used_private; }
uint32_t kv_evictable(const kv_store_t *s) { return s->heap_n; }
uint32_t kv_spec_blocks(const kv_store_t *s) { return s->n_spec; }
uint32_t kv_inflight_blocks(const kv_store_t *s) { return s->n_inflight; }
kv_stats_t kv_stats(const kv_store_t *s) { return s->st; }

uint32_t kv_free_or_evictable(const kv_store_t *s)
{
	return s->cap - kv_used(s) + s->heap_n;
}

int kv_lookup(const kv_store_t *s, uint64_t id)
{
	uint32_t i = map_find(s, id);
	return i == NIL ? 0 : s->slot[i].b.state;
}

const kv_block_info_t *kv_info(const kv_store_t *s, uint64_t id)
{
	uint32_t i = map_find(s, id);
	return i == NIL ? NULL : &s->slot[i].b;
}

uint64_t kv_removed(const kv_store_t *s)
{
	return s->removed;
}

uint32_t kv_kept(const kv_store_t *s, const uint64_t *ids, uint32_t m, uint64_t since)
{
	/* past the log, or past 32 erases a block of m (a lookup costs tens of
	 * the log's sequential reads): a fresh match is the answer */
	uint64_t n = s->removed - since;
	if (since > s->removed || n > (uint64_t)s->elog_mask + 1 || n > 32 * (uint64_t)m)
		return 0;
	for (uint64_t k = since; k < s->removed; k++) {
		const kv_erased_t *x = &s->erased[k & s->elog_mask];
		if (x->depth < m && ids[x->depth] == x->id)
			m = x->depth;
	}
	return m;
}

uint32_t kv_match(const kv_store_t *s, const uint64_t *ids, uint32_t n)
{
	return kv_match_slots(s, ids, n, NULL);
}

int kv_visible(const kv_store_t *s, uint64_t id)
{
	int st = kv_lookup(s, id);
	return st == KV_READY || st == KV_INFLIGHT;
}

uint32_t kv_match_visible(const kv_store_t *s, const uint64_t *ids, uint32_t n)
{
	uint32_t k = 0;
	while (k < n && (map_prefetch(s, ids, k, n), kv_visible(s, ids[k])))
		k++;
	return k;
}

/* ---- changes ----------------------------------------------------------- */

int kv_evict_one(kv_store_t *s, int64_t now)
{
	if (!s->heap_n)
		return KS_EFULL;
	uint32_t v = heap_top(s);
	heap_remove(s, v);
	slot_t *sl = &s->slot[v];
	if (sl->b.spec) {
		s->n_spec--;
		s->st.spec_evicted_unused++;
	}
	int rc = s->on_evict ? s->on_evict(s->pctx, &sl->b, now) : KS_OK;
	map_erase_slot(s, sl->b.id, v);
	sl->b.state = 0;
	sl->next_free = s->free_head;
	s->free_head = v;
	s->used_shared--;
	s->st.evictions++;
	int c = s->on_change ? s->on_change(s->cctx) : KS_OK;
	return rc ? rc : c;
}

/* Makes room for n blocks; all-or-nothing: KS_EFULL changes nothing, a
 * hook's error comes back once the room is made. */
static int make_room(kv_store_t *s, uint32_t n, int64_t now)
{
	if (kv_free_or_evictable(s) < n)
		return KS_EFULL;
	int rc = KS_OK;
	while (s->cap - kv_used(s) < n) {
		int r = kv_evict_one(s, now);
		rc = rc ? rc : r;
	}
	return rc;
}

/* A match of a READY slot: counted, and a speculative block is used. */
static void count_hit(kv_store_t *s, slot_t *sl, int *was_spec)
{
	if (was_spec)
		*was_spec = sl->b.spec;
	if (sl->b.spec) {
		sl->b.spec = 0;
		s->n_spec--;
	}
	sl->b.hits++;
	s->st.hits++;
}

/* kv_ref on a slot found READY. */
static void ref_slot(kv_store_t *s, uint32_t i, int64_t now, int *was_spec)
{
	slot_t *sl = &s->slot[i];
	if (sl->heap >= 0)
		heap_remove(s, i);
	count_hit(s, sl, was_spec);
	sl->b.ref++;
	sl->b.last_use = now;
}

/* kv_unref on a slot found holding a reference. */
static void unref_slot(kv_store_t *s, uint32_t i, int64_t now)
{
	slot_t *sl = &s->slot[i];
	sl->b.ref--;
	sl->b.last_use = now;
	if (sl->b.ref == 0 && sl->b.state == KV_READY)
		heap_push(s, i, now);
}

int kv_ref(kv_store_t *s, uint64_t id, int64_t now, int *was_spec)
{
	uint32_t i = map_find(s, id);
	if (i == NIL || s->slot[i].b.state != KV_READY)
		return KS_ESTATE;
	ref_slot(s, i, now, was_spec);
	return KS_OK;
}

int kv_hit(kv_store_t *s, uint64_t id, int64_t now, int hold, int *was_spec, uint32_t *tag)
{
	return kv_hit_slot(s, map_find(s, id), now, hold, was_spec, tag); /* NIL: not stored */
}

static int pin_state(kv_store_t *s, uint64_t id, int computing_too)
{
	uint32_t i = map_find(s, id);
	if (i == NIL || !(s->slot[i].b.state == KV_READY ||
	                  (computing_too && s->slot[i].b.state == KV_COMPUTING)))
		return KS_ESTATE;
	if (s->slot[i].heap >= 0)
		heap_remove(s, i);
	s->slot[i].b.ref++;
	return KS_OK;
}

int kv_pin(kv_store_t *s, uint64_t id, int64_t now)
{
	(void)now;
	return pin_state(s, id, 0);
}

int kv_pin_any(kv_store_t *s, uint64_t id, int64_t now)
{
	(void)now;
	return pin_state(s, id, 1);
}

int kv_watch(kv_store_t *s, uint64_t id)
{
	uint32_t i = map_find(s, id);
	if (i == NIL || s->slot[i].b.state == KV_READY)
		return KS_ESTATE;
	s->slot[i].b.watched = 1;
	return KS_OK;
}

int kv_set_tag(kv_store_t *s, uint64_t id, uint32_t tag)
{
	uint32_t i = map_find(s, id);
	if (i == NIL)
		return KS_ESTATE;
	s->slot[i].b.tag = tag;
	return KS_OK;
}

static int ready_slot(kv_store_t *s, uint32_t i, int64_t now);

int kv_alloc_slot(kv_store_t *s, uint64_t id, uint32_t depth, int state, uint32_t ref, int spec,
		  int64_t now, uint32_t *slot)
{
	if (map_find(s, id) != NIL)
		return KS_EEXIST;
	int rc = make_room(s, 1, now);
	if (rc == KS_EFULL)
		return rc;
	uint32_t v = s->free_head;
	slot_t *sl = &s->slot[v];
	s->free_head = sl->next_free;
	memset(&sl->b, 0, sizeof sl->b);
	sl->b.id = id;
	sl->b.depth = depth;
	sl->b.state = (uint8_t)(state == KV_READY ? KV_COMPUTING : state);
	s->n_inflight += state == KV_INFLIGHT;
	sl->b.ref = ref;
	sl->b.spec = (uint8_t)(spec != 0);
	sl->b.last_use = now;
	sl->heap = -1;
	map_insert(s, id, v);
	s->used_shared++;
	s->st.allocs++;
	if (slot)
		*slot = v;
	if (state == KV_READY) {
		int r = ready_slot(s, v, now);
		rc = rc ? rc : r;
	}
	return rc;
}

int kv_alloc(kv_store_t *s, uint64_t id, uint32_t depth, int state, uint32_t ref, int spec,
	     int64_t now)
{
	return kv_alloc_slot(s, id, depth, state, ref, spec, now, NULL);
}

/* kv_ready on a slot found COMPUTING or INFLIGHT: 0 or a hook's error. */
static int ready_slot(kv_store_t *s, uint32_t i, int64_t now)
{
	slot_t *sl = &s->slot[i];
	s->n_inflight -= sl->b.state == KV_INFLIGHT;
	sl->b.state = KV_READY;
	sl->b.created = now;
	sl->b.last_use = now;
	if (sl->b.spec)
		s->n_spec++;
	if (sl->b.ref == 0)
		heap_push(s, i, now);
	int rc = s->on_change ? s->on_change(s->cctx) : KS_OK;
	int h = s->on_ready ? s->on_ready(s->rctx, &sl->b, now) : KS_OK;
	rc = rc ? rc : h;
	if (sl->b.watched) {
		sl->b.watched = 0;
		int r = s->watch ? s->watch(s->wctx, &sl->b, KV_WATCH_READY) : KS_OK;
		rc = rc ? rc : r;
	}
	return rc;
}

int kv_ready(kv_store_t *s, uint64_t id, int64_t now)
{
	return kv_ready_slot(s, map_find(s, id), now); /* NIL: not stored */
}

int kv_unref(kv_store_t *s, uint64_t id, int64_t now)
{
	uint32_t i = map_find(s, id);
	return kv_unref_slots(s, &i, 1, now); /* NIL: not stored */
}

int kv_drop(kv_store_t *s, uint64_t id)
{
	return kv_drop_slot(s, map_find(s, id)); /* NIL: not stored */
}

/* ---- by slot ------------------------------------------------------------ */

/* Whether i names a stored block. */
static int stored(const kv_store_t *s, uint32_t i)
{
	return i < s->cap && s->slot[i].b.state;
}

uint32_t kv_slot(const kv_store_t *s, uint64_t id)
{
	uint32_t i = map_find(s, id);
	return i == NIL ? KV_NO_SLOT : i;
}

uint32_t kv_match_slots(const kv_store_t *s, const uint64_t *ids, uint32_t n, uint32_t *slots)
{
	uint32_t k = 0;
	for (; k < n; k++) {
		map_prefetch(s, ids, k, n);
		uint32_t i = map_find(s, ids[k]);
		if (i == NIL || s->slot[i].b.state != KV_READY)
			break;
		if (slots)
			slots[k] = i;
	}
	return k;
}

int kv_hit_slot(kv_store_t *s, uint32_t i, int64_t now, int hold, int *was_spec, uint32_t *tag)
{
	if (!stored(s, i) || s->slot[i].b.state != KV_READY)
		return KS_ESTATE;
	if (tag)
		*tag = s->slot[i].b.tag;
	slot_t *sl = &s->slot[i];
	if (!hold && !s->prio && sl->heap >= 0 && lru_touch_in_place(s, i, now)) {
		count_hit(s, sl, was_spec);
		return KS_OK;
	}
	ref_slot(s, i, now, was_spec);
	if (!hold)
		unref_slot(s, i, now);
	return KS_OK;
}

int kv_ready_slot(kv_store_t *s, uint32_t i, int64_t now)
{
	if (!stored(s, i) || s->slot[i].b.state == KV_READY)
		return KS_ESTATE;
	return ready_slot(s, i, now);
}

int kv_unref_slots(kv_store_t *s, const uint32_t *slots, uint32_t n, int64_t now)
{
	int rc = KS_OK;
	for (uint32_t k = 0; k < n; k++) {
		if (k + SLOT_AHEAD < n && slots[k + SLOT_AHEAD] < s->cap)
			__builtin_prefetch(&s->slot[slots[k + SLOT_AHEAD]]);
		uint32_t i = slots[k];
		if (!stored(s, i) || s->slot[i].b.ref == 0)
			rc = KS_ESTATE;
		else
			unref_slot(s, i, now);
	}
	return rc;
}

int kv_drop_slot(kv_store_t *s, uint32_t i)
{
	if (!stored(s, i) || s->slot[i].b.state == KV_READY || s->slot[i].b.ref)
		return KS_ESTATE;
	kv_block_info_t last = s->slot[i].b;
	s->n_inflight -= last.state == KV_INFLIGHT;
	map_erase_slot(s, last.id, i);
	s->slot[i].b.state = 0;
	s->slot[i].next_free = s->free_head;
	s->free_head = i;
	s->used_shared--;
	int rc = s->on_change ? s->on_change(s->cctx) : KS_OK;
	if (last.watched && s->watch) {
		last.watched = 0;
		int w = s->watch(s->wctx, &last, KV_WATCH_DROP);
		rc = rc ? rc : w;
	}
	return rc;
}

uint64_t kv_slot_id(const kv_store_t *s, uint32_t i)
{
	return stored(s, i) ? s->slot[i].b.id : 0;
}

int kv_alloc_private(kv_store_t *s, uint32_t n, int64_t now)
{
	int rc = make_room(s, n, now);
	if (rc == KS_EFULL)
		return rc;
	s->used_private += n;
	return rc;
}

void kv_free_private(kv_store_t *s, uint32_t n)
{
	s->used_private -= n < s->used_private ? n : s->used_private;
}

int kv_foreach(const kv_store_t *s, int (*fn)(void *ctx, const kv_block_info_t *b), void *ctx)
{
	for (uint32_t i = 0; i <= s->mask; i++)
		if (s->map[i].slot1) {
			int r = fn(ctx, &s->slot[s->map[i].slot1 - 1].b);
			if (r)
				return r;
		}
	return 0;
}

int kv_check(const kv_store_t *s)
{
	if (kv_used(s) > s->cap)
		return KS_ERUNTIME;
	uint32_t n = 0, nspec = 0, nevict = 0, ninfl = 0;
	for (uint32_t i = 0; i <= s->mask; i++) {
		if (!s->map[i].slot1)
			continue;
		uint32_t v = s->map[i].slot1 - 1;
		const slot_t *sl = &s->slot[v];
		if (s->map[i].tag != map_hash(sl->b.id) || map_find(s, sl->b.id) != v)
			return KS_ERUNTIME;
		n++;
		int evictable = sl->b.state == KV_READY && sl->b.ref == 0;
		if (evictable != (sl->heap >= 0))
			return KS_ERUNTIME;
		nevict += evictable;
		nspec += sl->b.state == KV_READY && sl->b.spec;
		ninfl += sl->b.state == KV_INFLIGHT;
	}
	if (n != s->used_shared || nevict != s->heap_n || nspec != s->n_spec ||
	    ninfl != s->n_inflight)
		return KS_ERUNTIME;
	if (s->prio) {
		for (uint32_t i = 1; i < s->heap_n; i++)
			if (heap_less(s, s->heap[i], s->heap[(i - 1) / 2]))
				return KS_ERUNTIME;
		return 0;
	}
	/* the list: every evictable slot once, in order, linked both ways, and
	 * the mark (when known) on the first of the tail's run */
	uint32_t k = 0, prev = NIL;
	for (uint32_t v = s->lru_head; v != NIL; prev = v, v = s->slot[v].next) {
		if (++k > s->heap_n || s->slot[v].heap < 0 || s->slot[v].prev != prev ||
		    (prev != NIL && heap_less(s, v, prev)))
			return KS_ERUNTIME;
	}
	if (k != s->heap_n || s->lru_tail != prev)
		return KS_ERUNTIME;
	uint32_t f = s->lru_fing;
	if (f != NIL && (f >= s->cap || s->slot[f].heap < 0))
		return KS_ERUNTIME;
	uint32_t g = s->lru_grp;
	if (g != NIL && (s->slot[g].heap < 0 || s->slot[g].prio != s->slot[s->lru_tail].prio ||
	                 (s->slot[g].prev != NIL &&
	                  s->slot[s->slot[g].prev].prio == s->slot[g].prio)))
		return KS_ERUNTIME;
	return 0;
}

/* ev_queue — see ev_queue.h.
 *
 * Structure, chosen by measurement (hold model and PHOLD at 1K, 16K and 256K
 * pending; tests/README.md, "Performance"): an indexed 4-ary min-heap of 16-byte keys
 * over a slab of event bodies.
 * - Keys are (time, tie key, slot) packed in one unsigned 128-bit integer, so
 *   a comparison is one cmp/sbb pair and children are picked with conditional
 *   moves. Four children fill one 64-byte line (the array is offset so that
 *   children 4i+1..4i+4 share a line): half the depth of a binary heap for
 *   the same lines touched per level.
 * - pos[slot] is the heap index, so cancel and reschedule are O(log n).
 * - Pop refills the root bottom-up (Wegener 1993): walk the smaller children
 *   to a leaf, then sift the last entry up from there.
 * - Sifts prefetch the four lines the next level may use.
 * - Slots are reused LIFO, so a handler's push writes the body line its pop
 *   just read. The tie key is 32 bits and is renumbered (order kept) when it
 *   would wrap; the 64-bit seq reported in ev_event_t never wraps.
 * No allocation after the slab has grown to the peak pending count; growth
 * doubles all arrays. Big arrays ask for transparent huge pages.
 */
#include "sim/base/mem.h"
#include "sim/engine/ev_queue.h"
#include "sim/engine/ev_queue_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARITY 4

/* Heap entry: one 128-bit key, compared with a single unsigned compare.
 * High half: time with the sign bit flipped (order-preserving as unsigned);
 * low half: (tie key << 32) | slot, the tie key counting pushes. */
typedef unsigned __int128 hent_t;
#define HENT_LESS(a, b) ((a) < (b))
#define SIGN64 ((uint64_t)1 << 63)
#define HENT_SLOT(e) ((uint32_t)(e))
#define HENT_TIME(e) ((int64_t)((uint64_t)((e) >> 64) ^ SIGN64))
static inline hent_t hent_make(int64_t time, uint32_t key, uint32_t slot)
{
	return ((hent_t)((uint64_t)time ^ SIGN64) << 64) | ((uint64_t)key << 32) | slot;
}

/* Per-slot data other than the key: 32 bytes, so one line holds two slots
 * and a pop touches one line for the body and the generation together. The
 * heap position lives in its own array (pos): the sifts write it for every
 * entry they move, and a dense 4-byte array keeps those writes in cache. */
typedef struct ev_body {
	uint64_t seq;
	uint64_t payload;
	uint32_t type;
	uint32_t target;
	uint32_t gen;       /* odd while pending, even while free */
	uint32_t next_free; /* free-list link while free */
} ev_body_t;

#define NO_SLOT UINT32_MAX

struct ev_queue {
	hent_t *heap;
	void *heap_mem;
	uint32_t *pos;
	ev_body_t *body;
	size_t n;
	size_t cap;
	uint32_t free_head;
	uint32_t next_key;
	uint64_t next_seq;
};


/* Big arrays get 2 MiB alignment and transparent huge pages: at 256K pending
 * events the heap, positions and bodies span ~13 MB, and TLB misses on 4 KiB
 * pages would add to the heap's cache misses. */
static void *big_alloc(size_t bytes)
{
	size_t align = bytes >= (2u << 20) ? (2u << 20) : 128;
	void *p;
	if (posix_memalign(&p, align, bytes))
		return NULL;
#ifdef MADV_HUGEPAGE
	if (align > 128)
		madvise(p, bytes, MADV_HUGEPAGE);
#endif
	return p;
}

static int queue_grow(ev_queue_t *q, size_t want)
{
	size_t cap = q->cap ? q->cap : 64;
	while (cap < want)
		cap *= 2;
	if (cap > NO_SLOT)
		return -1;
	/* ARITY-1 spare entries in front put each group of children
	 * (4i+1 .. 4i+4, 64 bytes) on its own cache line. */
	void *hm = big_alloc((cap + ARITY) * sizeof(hent_t));
	uint32_t *pos = big_alloc(cap * sizeof *pos);
	ev_body_t *body = big_alloc(cap * sizeof *body);
	if (!hm || !pos || !body) {
		free(hm);
		free(pos);
		free(body);
		return -1;
	}
	hent_t *heap = (hent_t *)hm + (ARITY - 1);
	if (q->cap) {
		memcpy(heap, q->heap, q->n * sizeof *heap);
		memcpy(pos, q->pos, q->cap * sizeof *pos);
		memcpy(body, q->body, q->cap * sizeof *body);
	}
	free(q->heap_mem);
	free(q->pos);
	free(q->body);
	q->heap_mem = hm;
	q->heap = heap;
	q->pos = pos;
	q->body = body;
	/* New slots join the free list in index order. */
	for (size_t i = q->cap; i < cap; i++) {
		body[i].gen = 0;
		body[i].next_free = i + 1 < cap ? (uint32_t)(i + 1) : q->free_head;
	}
	q->free_head = (uint32_t)q->cap;
	q->cap = cap;
	return 0;
}

ev_queue_t *ev_queue_new(size_t capacity_hint)
{
	ev_queue_t *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->free_head = NO_SLOT;
	if (queue_grow(q, capacity_hint ? capacity_hint : 64)) {
		ev_queue_free(q);
		return NULL;
	}
	return q;
}

void ev_queue_free(ev_queue_t *q)
{
	if (!q)
		return;
	FREE_ALL(q->heap_mem, q->pos, q->body, q);
}

static inline void heap_set(ev_queue_t *q, size_t i, hent_t e)
{
	q->heap[i] = e;
	q->pos[HENT_SLOT(e)] = (uint32_t)i;
}

static void sift_up(ev_queue_t *q, size_t i, hent_t e)
{
	hent_t *h = q->heap;
	while (i > 0) {
		size_t p = (i - 1) / ARITY;
		if (!HENT_LESS(e, h[p]))
			break;
		heap_set(q, i, h[p]);
		i = p;
	}
	heap_set(q, i, e);
}

/* The smallest of the four children starting at c (all present). Written as
 * selects on indices: which child is smallest is a coin toss the branch
 * predictor cannot learn, so conditional moves win. */
static inline size_t min_child4(const hent_t *h, size_t c)
{
	size_t a = h[c + 1] < h[c] ? c + 1 : c;
	size_t b = h[c + 3] < h[c + 2] ? c + 3 : c + 2;
	return h[b] < h[a] ? b : a;
}

/* The smallest child of i in a last, partly filled group c..n-1. */
static size_t min_child_part(const hent_t *h, size_t c, size_t n)
{
	size_t m = c;
	for (size_t k = c + 1; k < n; k++)
		if (HENT_LESS(h[k], h[m]))
			m = k;
	return m;
}

/* "prefetch": in both sift loops the next level lies in one of the four
 * lines under children c..c+3, so all four are fetched while this level's
 * comparisons run. Cheap when they hit; at 256K pending the lower levels live
 * in L3 and this about halves the time per event. They are written in the
 * loops, unconditionally: GCC 12 silently dropped them when they sat behind a
 * depth test or in an inline helper (check: objdump -d | grep prefetch).
 * Integer arithmetic: near the bottom the address lies past the array, which
 * a prefetch may touch but C pointer arithmetic may not. */

/* Places e at i or below, moving smaller children up. */
static void sift_down(ev_queue_t *q, size_t i, hent_t e)
{
	hent_t *h = q->heap;
	size_t n = q->n, c;
	while ((c = ARITY * i + 1) + ARITY <= n) {
		for (size_t k = 0; k < ARITY; k++) /* see "prefetch" above */
			__builtin_prefetch((const void *)((uintptr_t)h +
							  (ARITY * (c + k) + 1) * sizeof *h));
		size_t m = min_child4(h, c);
		if (!HENT_LESS(h[m], e))
			goto done;
		heap_set(q, i, h[m]);
		i = m;
	}
	if (c < n) {
		size_t m = min_child_part(h, c, n);
		if (HENT_LESS(h[m], e)) {
			heap_set(q, i, h[m]);
			i = m;
		}
	}
done:
	heap_set(q, i, e);
}

/* Fills an empty root with e, an entry from the end of the array and so most
 * likely among the latest: walk the hole down the smaller children to a leaf
 * without comparing against e, then sift e up from there (Wegener's
 * bottom-up heapsort, 1993): one comparison per level fewer than sift_down.
 * `prefetch` is a constant at each call, so each caller gets its own loop. */
static inline void refill_walk(ev_queue_t *q, hent_t e, const int prefetch)
{
	hent_t *h = q->heap;
	size_t n = q->n, i = 0, c;
	while ((c = ARITY * i + 1) + ARITY <= n) {
		if (prefetch)
			for (size_t k = 0; k < ARITY; k++) /* see "prefetch" above */
				__builtin_prefetch((const void *)((uintptr_t)h +
								  (ARITY * (c + k) + 1) * sizeof *h));
		size_t m = min_child4(h, c);
		heap_set(q, i, h[m]);
		i = m;
	}
	if (c < n) {
		size_t m = min_child_part(h, c, n);
		heap_set(q, i, h[m]);
		i = m;
	}
	sift_up(q, i, e);
}

/* Heaps up to this many entries (256 KB) stay in L2: prefetching there only
 * costs instructions (measured: ~5% at 1K pending). */
#define PREFETCH_MIN_N 16384

static void refill_root(ev_queue_t *q, hent_t e)
{
	if (q->n > PREFETCH_MIN_N)
		refill_walk(q, e, 1);
	else
		refill_walk(q, e, 0);
}

static int cmp_hent(const void *a, const void *b)
{
	hent_t x = *(const hent_t *)a, y = *(const hent_t *)b;
	return x < y ? -1 : y < x ? 1 : 0;
}

/* The 32-bit tie key wraps after 2^32 pushes: renumber the pending events in
 * (time, key) order. A sorted array is a valid heap, so order is kept. */
static void renumber(ev_queue_t *q)
{
	qsort(q->heap, q->n, sizeof *q->heap, cmp_hent);
	for (size_t i = 0; i < q->n; i++) {
		uint32_t s = HENT_SLOT(q->heap[i]);
		q->heap[i] = hent_make(HENT_TIME(q->heap[i]), (uint32_t)i, s);
		q->pos[s] = (uint32_t)i;
	}
	q->next_key = (uint32_t)q->n;
}

static inline hent_t make_entry(ev_queue_t *q, int64_t time, uint32_t slot)
{
	q->body[slot].seq = q->next_seq++;
	if (q->next_key == UINT32_MAX)
		renumber(q);
	return hent_make(time, q->next_key++, slot);
}

ev_handle_t ev_push(ev_queue_t *q, int64_t time, uint32_t type, uint32_t target,
		    uint64_t payload)
{
	if (q->free_head == NO_SLOT && queue_grow(q, q->cap + 1))
		return EV_NONE;
	uint32_t s = q->free_head;
	ev_body_t *b = &q->body[s];
	q->free_head = b->next_free;
	b->gen++;
	b->payload = payload;
	b->type = type;
	b->target = target;
	sift_up(q, q->n++, make_entry(q, time, s));
	return ((uint64_t)b->gen << 32) | s;
}

static inline void slot_release(ev_queue_t *q, uint32_t s)
{
	q->body[s].gen++;
	q->body[s].next_free = q->free_head;
	q->free_head = s;
}

int ev_pop(ev_queue_t *q, ev_event_t *out)
{
	if (q->n == 0)
		return 1;
	hent_t top = q->heap[0];
	uint32_t s = HENT_SLOT(top);
	const ev_body_t *b = &q->body[s];
	out->time = HENT_TIME(top);
	out->seq = b->seq;
	out->type = b->type;
	out->target = b->target;
	out->payload = b->payload;
	slot_release(q, s);
	if (--q->n) {
		refill_root(q, q->heap[q->n]);
		/* The next pop most likely returns the new root: start the miss on
		 * its body now, so it overlaps the caller's handler. */
		__builtin_prefetch(&q->body[HENT_SLOT(q->heap[0])]);
	}
	return 0;
}

int64_t ev_peek_time(const ev_queue_t *q)
{
	return q->n ? HENT_TIME(q->heap[0]) : INT64_MAX;
}

int ev_pop_until(ev_queue_t *q, int64_t until, ev_event_t *out)
{
	if (q->n == 0 || ev_peek_time(q) > until)
		return 1;
	return ev_pop(q, out);
}

/* Slot named by h when it is pending, else NO_SLOT. */
static uint32_t handle_slot(const ev_queue_t *q, ev_handle_t h)
{
	uint32_t s = (uint32_t)h, gen = (uint32_t)(h >> 32);
	if (s >= q->cap || !(gen & 1) || q->body[s].gen != gen)
		return NO_SLOT;
	return s;
}

int ev_pending(const ev_queue_t *q, ev_handle_t h)
{
	return handle_slot(q, h) != NO_SLOT;
}

/* Puts e at index i, where an entry old used to be, restoring heap order. */
static void heap_fix(ev_queue_t *q, size_t i, hent_t old, hent_t e)
{
	if (HENT_LESS(e, old))
		sift_up(q, i, e);
	else
		sift_down(q, i, e);
}

int ev_cancel(ev_queue_t *q, ev_handle_t h)
{
	uint32_t s = handle_slot(q, h);
	if (s == NO_SLOT)
		return -1;
	size_t i = q->pos[s];
	hent_t old = q->heap[i];
	slot_release(q, s);
	size_t n = --q->n;
	if (i < n)
		heap_fix(q, i, old, q->heap[n]);
	return 0;
}

int ev_reschedule(ev_queue_t *q, ev_handle_t h, int64_t new_time)
{
	uint32_t s = handle_slot(q, h);
	if (s == NO_SLOT)
		return -1;
	hent_t e = make_entry(q, new_time, s);
	size_t i = q->pos[s]; /* read after make_entry: renumber() moves entries */
	heap_fix(q, i, q->heap[i], e);
	return 0;
}

size_t ev_size(const ev_queue_t *q)
{
	return q->n;
}

void ev_queue_test_set_tie_key(ev_queue_t *q, uint32_t key)
{
	q->next_key = key;
}

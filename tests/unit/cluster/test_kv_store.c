/* Tests of sim/cluster/kv_store.c: sharing, reference counts, causality states,
 * LRU eviction order, capacity, watches on blocks not yet READY, and a
 * random-operation consistency check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sim/base/err.h"
#include "sim/cluster/kv_store.h"

/* Every refusal is one of the shared negative codes of sim/base/err.h, so a
 * caller can pass it up unchanged. */
static void test_refusals_are_shared_negative_codes(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(1);
	assert_int_equal(kv_ref(s, 5, 0, NULL), KS_ESTATE); /* absent */
	assert_int_equal(kv_alloc(s, 5, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 5, 0, KV_COMPUTING, 1, 0, 0), KS_EEXIST);
	assert_int_equal(kv_alloc(s, 6, 0, KV_COMPUTING, 1, 0, 0), KS_EFULL);
	assert_int_equal(kv_alloc_private(s, 1, 0), KS_EFULL);
	assert_int_equal(kv_evict_one(s, 0), KS_EFULL); /* referenced: not evictable */
	assert_int_equal(kv_pin(s, 5, 0), KS_ESTATE); /* still computing */
	assert_int_equal(kv_drop(s, 5), KS_ESTATE); /* still referenced */
	assert_int_equal(kv_ready(s, 5, 1), KS_OK);
	assert_int_equal(kv_ready(s, 5, 1), KS_ESTATE); /* already READY */
	assert_int_equal(kv_watch(s, 5), KS_ESTATE);
	assert_int_equal(kv_set_tag(s, 7, 1), KS_ESTATE);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
	/* the store's refusals are named codes of the shared space; reaching
	 * main, each is an internal failure (sim/base/err.h: exit 1) */
	static const struct {
		int code;
		const char *name;
	} refusal[] = {
	    {KS_EFULL, "no room"}, {KS_EEXIST, "already exists"}, {KS_ESTATE, "wrong state"}};
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(err_name(refusal[i].code), refusal[i].name);
		assert_int_equal(err_exit_status(refusal[i].code), 1);
	}
}

static void test_shared_block_stored_once(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(4);
	assert_int_equal(kv_alloc(s, 11, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 11, 0, KV_COMPUTING, 1, 0, 0), KS_EEXIST);
	assert_int_equal(kv_ready(s, 11, 10), KS_OK);
	assert_int_equal(kv_ref(s, 11, 20, NULL), KS_OK);
	assert_int_equal(kv_used(s), 1);
	assert_int_equal(kv_info(s, 11)->ref, 2);
	assert_int_equal(kv_evictable(s), 0);
	kv_unref(s, 11, 30);
	kv_unref(s, 11, 30);
	assert_int_equal(kv_evictable(s), 1);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

static void test_computing_block_not_matchable(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(4);
	uint64_t ids[3] = {1, 2, 3};
	kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0);
	kv_ready(s, 1, 5);
	kv_alloc(s, 2, 1, KV_COMPUTING, 1, 0, 5);
	assert_int_equal(kv_match(s, ids, 3), 1);
	assert_int_not_equal(kv_ref(s, 2, 6, NULL), KS_OK); /* cannot read early */
	kv_ready(s, 2, 7);
	assert_int_equal(kv_match(s, ids, 3), 2);
	kv_store_free(s);
}

/* Blocks 1 READY, 2 INFLIGHT (a copy bringing it), 3 COMPUTING: routers
 * see the first two, use (kv_match) only the first; a dropped copy leaves
 * nothing visible. */
static void test_inflight_copy_visible_computing_not(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(8);
	uint64_t ids[4] = {1, 2, 3, 4};
	kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0);
	kv_ready(s, 1, 5);
	kv_alloc(s, 2, 1, KV_INFLIGHT, 0, 0, 5);
	kv_alloc(s, 3, 2, KV_COMPUTING, 1, 0, 5);
	assert_int_equal(kv_match(s, ids, 4), 1);
	assert_int_equal(kv_match_visible(s, ids, 4), 2);
	assert_true(kv_visible(s, 1) && kv_visible(s, 2));
	assert_false(kv_visible(s, 3) || kv_visible(s, 4));
	kv_ready(s, 3, 6); /* computed, but block 2 still travels */
	assert_int_equal(kv_match(s, ids, 4), 1);
	assert_int_equal(kv_match_visible(s, ids, 4), 3);
	kv_drop(s, 2);
	assert_int_equal(kv_match_visible(s, ids, 4), 1);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

static void test_lru_evicts_oldest_and_deepest_first(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(3);
	for (uint64_t i = 0; i < 3; i++) {
		kv_alloc(s, 100 + i, (uint32_t)i, KV_COMPUTING, 1, 0, 0);
		kv_ready(s, 100 + i, 0);
		kv_unref(s, 100 + i, 0); /* same time: deeper goes first */
	}
	kv_ref(s, 102, 50, NULL);
	kv_unref(s, 102, 60); /* 102 now most recent */
	assert_int_equal(kv_alloc(s, 200, 0, KV_COMPUTING, 1, 0, 70), KS_OK);
	assert_int_equal(kv_lookup(s, 101), 0); /* depth 1 at t=0 */
	assert_int_equal(kv_lookup(s, 100), KV_READY);
	assert_int_equal(kv_alloc(s, 201, 0, KV_COMPUTING, 1, 0, 80), KS_OK);
	assert_int_equal(kv_lookup(s, 100), 0);
	assert_int_equal(kv_lookup(s, 102), KV_READY);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

static void test_capacity_never_exceeded(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(2);
	assert_int_equal(kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_alloc_private(s, 1, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 2, 0, KV_COMPUTING, 1, 0, 0), KS_EFULL);
	assert_int_equal(kv_alloc_private(s, 1, 0), KS_EFULL);
	assert_int_equal(kv_used(s), 2);
	/* all-or-nothing: 2 private blocks do not fit even with 1 evictable */
	kv_ready(s, 1, 1);
	kv_unref(s, 1, 1);
	assert_int_equal(kv_alloc_private(s, 2, 2), KS_EFULL);
	assert_int_equal(kv_lookup(s, 1), KV_READY);
	assert_int_equal(kv_alloc_private(s, 1, 2), KS_OK);
	assert_int_equal(kv_lookup(s, 1), 0);
	kv_store_free(s);
}

static void test_speculative_flag_cleared_on_use(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(4);
	kv_alloc(s, 5, 0, KV_INFLIGHT, 0, 1, 0);
	assert_int_equal(kv_spec_blocks(s), 0); /* not counted until it lands */
	kv_ready(s, 5, 10);
	assert_int_equal(kv_spec_blocks(s), 1);
	int was = 0;
	kv_ref(s, 5, 20, &was);
	assert_int_equal(was, 1);
	assert_int_equal(kv_spec_blocks(s), 0);
	kv_unref(s, 5, 30);
	/* an unused speculative block evicted counts as waste */
	kv_alloc(s, 6, 0, KV_INFLIGHT, 0, 1, 40);
	kv_ready(s, 6, 50);
	kv_evict_one(s, 60);
	kv_evict_one(s, 60);
	assert_int_equal(kv_stats(s).spec_evicted_unused, 1);
	kv_store_free(s);
}

static void test_drop_inflight_block(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(2);
	kv_alloc(s, 9, 0, KV_INFLIGHT, 0, 1, 0);
	assert_int_equal(kv_drop(s, 9), KS_OK);
	assert_int_equal(kv_used(s), 0);
	kv_alloc(s, 9, 0, KV_COMPUTING, 1, 0, 0);
	kv_ready(s, 9, 1);
	assert_int_not_equal(kv_drop(s, 9), KS_OK); /* READY blocks are evicted, not dropped */
	kv_store_free(s);
}

static void test_random_operations_stay_consistent(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(64);
	uint32_t refs[256] = {0};
	srand(7);
	for (int step = 0; step < 200000; step++) {
		uint64_t id = (uint64_t)(rand() % 256);
		int op = rand() % 4;
		int state = kv_lookup(s, id);
		if (op == 0 && !state) {
			if (kv_alloc(s, id, (uint32_t)(id % 8), KV_COMPUTING, 1, 0, step) == KS_OK)
				refs[id] = 1;
		} else if (op == 1 && state && state != KV_READY) {
			kv_ready(s, id, step);
		} else if (op == 2 && state == KV_READY) {
			kv_ref(s, id, step, NULL);
			refs[id]++;
		} else if (op == 3 && state && refs[id]) {
			kv_unref(s, id, step);
			refs[id]--;
			if (!refs[id] && state != KV_READY)
				kv_drop(s, id);
		}
		if (!kv_lookup(s, id))
			refs[id] = 0;
		assert_true(kv_used(s) <= kv_capacity(s));
		if (step % 997 == 0)
			assert_int_equal(kv_check(s), 0);
	}
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

typedef struct seen {
	uint64_t id[8];
	int ev[8], n;
	kv_store_t *s;
	int state_then; /* the block's state as the watcher sees it */
} seen_t;

static int watcher(void *ctx, const kv_block_info_t *b, int event)
{
	seen_t *w = ctx;
	w->id[w->n] = b->id;
	w->ev[w->n++] = event;
	w->state_then = kv_lookup(w->s, b->id);
	if (event == KV_WATCH_READY)
		kv_pin(w->s, b->id, 0); /* the hook may change the store */
	return 0;
}

static void test_watch_reports_ready_and_drop_once(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(4);
	seen_t w = {.s = s};
	kv_store_set_watch(s, watcher, &w);
	kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0);
	kv_alloc(s, 2, 1, KV_COMPUTING, 1, 0, 0);
	kv_alloc(s, 3, 2, KV_INFLIGHT, 0, 0, 0);
	kv_alloc(s, 4, 3, KV_COMPUTING, 1, 0, 0);
	assert_int_equal(kv_watch(s, 1), KS_OK);
	assert_int_equal(kv_watch(s, 2), KS_OK);
	assert_int_equal(kv_watch(s, 3), KS_OK);
	kv_ready(s, 4, 5); /* not watched: silent */
	assert_int_equal(w.n, 0);
	assert_int_equal(kv_watch(s, 4), KS_ESTATE); /* READY: nothing to wait for */
	assert_int_equal(kv_watch(s, 99), KS_ESTATE);
	kv_ready(s, 1, 10);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.id[0], 1);
	assert_int_equal(w.ev[0], KV_WATCH_READY);
	assert_int_equal(w.state_then, KV_READY); /* called after the change */
	assert_int_equal(kv_info(s, 1)->ref, 2);  /* the watcher's pin held */
	kv_unref(s, 2, 11);
	kv_drop(s, 2);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.id[1], 2);
	assert_int_equal(w.ev[1], KV_WATCH_DROP);
	assert_int_equal(w.state_then, 0); /* gone by then */
	kv_drop(s, 3);
	assert_int_equal(w.ev[2], KV_WATCH_DROP);
	/* a new block under the same id starts unwatched */
	kv_alloc(s, 2, 1, KV_COMPUTING, 1, 0, 12);
	kv_ready(s, 2, 13);
	assert_int_equal(w.n, 3);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

/* Hooks that fail: each returns KS_ENOMEM. */
static int evict_fails(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)b;
	(void)now;
	++*(int *)ctx;
	return KS_ENOMEM;
}

static int watch_fails(void *ctx, const kv_block_info_t *b, int event)
{
	(void)b;
	(void)event;
	++*(int *)ctx;
	return KS_ENOMEM;
}

/* A hook's error comes back from the call that ran it, after the call's
 * change is complete and the store consistent: an allocation that evicted
 * (the block is allocated, the victim gone), a kv_ready that woke a watch
 * (the block is READY), a kv_drop that did (the block is gone), private
 * blocks that evicted. The store's own answers are unchanged. */
static void test_hook_errors_come_back_from_the_call(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(2);
	int evicted = 0, watched = 0;
	kv_store_set_policy(s, NULL, evict_fails, &evicted);
	kv_store_set_watch(s, watch_fails, &watched);
	assert_int_equal(kv_alloc(s, 1, 0, KV_READY, 0, 0, 1), KS_OK);
	assert_int_equal(kv_alloc(s, 2, 1, KV_COMPUTING, 1, 0, 2), KS_OK);
	assert_int_equal(kv_alloc(s, 3, 2, KV_COMPUTING, 1, 0, 3), KS_ENOMEM); /* evicts 1 */
	assert_int_equal(evicted, 1);
	assert_int_equal(kv_lookup(s, 1), 0);
	assert_int_equal(kv_lookup(s, 3), KV_COMPUTING);
	assert_int_equal(kv_alloc(s, 4, 0, KV_COMPUTING, 1, 0, 4), KS_EFULL); /* nothing evictable */
	assert_int_equal(kv_watch(s, 2), KS_OK);
	assert_int_equal(kv_watch(s, 3), KS_OK);
	assert_int_equal(kv_ready(s, 2, 5), KS_ENOMEM);
	assert_int_equal(kv_lookup(s, 2), KV_READY);
	kv_unref(s, 3, 6);
	assert_int_equal(kv_drop(s, 3), KS_ENOMEM);
	assert_int_equal(kv_lookup(s, 3), 0);
	assert_int_equal(watched, 2);
	kv_unref(s, 2, 7);
	assert_int_equal(kv_alloc_private(s, 2, 8), KS_ENOMEM); /* evicts 2 */
	assert_int_equal(evicted, 2);
	assert_int_equal(kv_used_private(s), 2);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

/* The by-slot calls do what their id calls do: two stores driven by the
 * same random operations, one by id and one by the slots its holders
 * kept, stay identical block by block (state, references, hits, last use,
 * eviction order); a held block's slot keeps naming it; a slot no longer
 * stored is refused, as an absent id is. */
static void test_slot_calls_equal_id_calls(void **st)
{
	(void)st;
	kv_store_t *a = kv_store_new(48), *b = kv_store_new(48);
	uint32_t refs[128] = {0}, slot[128];
	srand(11);
	for (int step = 0; step < 100000; step++) {
		uint64_t id = (uint64_t)(rand() % 128);
		int op = rand() % 5, state = kv_lookup(a, id);
		assert_int_equal(state, kv_lookup(b, id));
		if (op == 0 && !state) {
			uint32_t v = KV_NO_SLOT;
			int ra = kv_alloc(a, id, (uint32_t)(id % 8), KV_COMPUTING, 1, 0, step);
			assert_int_equal(kv_alloc_slot(b, id, (uint32_t)(id % 8), KV_COMPUTING, 1, 0,
						       step, &v), ra);
			if (ra == KS_OK) {
				refs[id] = 1;
				slot[id] = v;
			}
		} else if (op == 1 && state && state != KV_READY && refs[id]) {
			assert_int_equal(kv_ready_slot(b, slot[id], step), kv_ready(a, id, step));
		} else if (op == 2 && state == KV_READY) {
			/* a prefix matched by slots, then its blocks hit by slot */
			uint64_t ids[3] = {id, (id + 1) % 128, (id + 2) % 128};
			uint32_t sl[3];
			uint32_t m = kv_match_slots(b, ids, 3, sl);
			assert_int_equal(m, kv_match(a, ids, 3));
			int wa = 0, wb = 0;
			uint32_t ta = 1, tb = 2;
			assert_int_equal(kv_hit(a, id, step, 1, &wa, &ta), KS_OK);
			assert_int_equal(kv_hit_slot(b, sl[0], step, 1, &wb, &tb), KS_OK);
			assert_int_equal(wa, wb);
			assert_int_equal(ta, tb);
			slot[id] = sl[0];
			refs[id]++;
		} else if (op == 3 && state && refs[id]) {
			assert_int_equal(kv_unref_slots(b, &slot[id], 1, step), kv_unref(a, id, step));
			refs[id]--;
			if (!refs[id] && state != KV_READY)
				assert_int_equal(kv_drop_slot(b, slot[id]), kv_drop(a, id));
		} else if (op == 4 && state == KV_READY) {
			assert_int_equal(kv_hit_slot(b, kv_slot(b, id), step, 0, NULL, NULL),
					 kv_hit(a, id, step, 0, NULL, NULL));
		}
		if (!kv_lookup(a, id))
			refs[id] = 0;
		if (refs[id])
			assert_true(kv_slot_id(b, slot[id]) == id);
		if (step % 499 == 0) {
			for (uint64_t k = 0; k < 128; k++) {
				const kv_block_info_t *x = kv_info(a, k), *y = kv_info(b, k);
				assert_true((x == NULL) == (y == NULL));
				if (!x)
					continue;
				assert_int_equal(x->state, y->state);
				assert_int_equal(x->ref, y->ref);
				assert_int_equal(x->hits, y->hits);
				assert_int_equal(x->last_use, y->last_use);
			}
			uint64_t ea[KV_EVICT_NEXT_MAX], eb[KV_EVICT_NEXT_MAX];
			double pa[KV_EVICT_NEXT_MAX], pb[KV_EVICT_NEXT_MAX];
			uint32_t na = kv_evict_next(a, KV_EVICT_NEXT_MAX, ea, pa);
			assert_int_equal(kv_evict_next(b, KV_EVICT_NEXT_MAX, eb, pb), na);
			assert_memory_equal(ea, eb, na * sizeof *ea);
			assert_int_equal(kv_check(b), 0);
		}
	}
	assert_int_equal(kv_stats(a).evictions, kv_stats(b).evictions);
	assert_true(kv_stats(b).evictions > 0);
	/* a slot whose block left names nothing */
	kv_store_t *c = kv_store_new(1);
	uint32_t v;
	assert_int_equal(kv_alloc_slot(c, 9, 0, KV_READY, 0, 0, 0, &v), KS_OK);
	assert_true(kv_slot_id(c, v) == 9);
	assert_int_equal(kv_evict_one(c, 1), KS_OK);
	assert_true(kv_slot_id(c, v) == 0);
	assert_int_equal(kv_slot(c, 9), KV_NO_SLOT);
	assert_int_equal(kv_hit_slot(c, v, 2, 1, NULL, NULL), KS_ESTATE);
	assert_int_equal(kv_ready_slot(c, v, 2), KS_ESTATE);
	assert_int_equal(kv_unref_slots(c, &v, 1, 2), KS_ESTATE);
	assert_int_equal(kv_drop_slot(c, v), KS_ESTATE);
	assert_int_equal(kv_hit_slot(c, 5, 2, 1, NULL, NULL), KS_ESTATE); /* past the slab */
	kv_store_free(c);
	kv_store_free(a);
	kv_store_free(b);
}

/* kv_removed counts every erase and nothing else, and while it stands
 * still every block found READY (or COMPUTING or READY) stays so: the
 * promise the views' match memo rests on (sim/run/sim_view.c). Random
 * operations on 8 ids in 4 blocks, the claim checked after each. */
static int held_or_computing(const kv_store_t *s, uint64_t id)
{
	int st = kv_lookup(s, id);
	return st == KV_READY || st == KV_COMPUTING;
}

static void test_removed_counts_erases_and_found_blocks_stay(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(4);
	assert_int_equal(kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_ready(s, 1, 1), KS_OK);
	assert_int_equal(kv_unref(s, 1, 2), KS_OK);
	assert_int_equal(kv_removed(s), 0); /* READY, evictable: still there */
	assert_int_equal(kv_evict_one(s, 3), KS_OK);
	assert_int_equal(kv_removed(s), 1);
	assert_int_equal(kv_alloc(s, 2, 0, KV_COMPUTING, 1, 0, 3), KS_OK);
	assert_int_equal(kv_unref(s, 2, 4), KS_OK);
	assert_int_equal(kv_drop(s, 2), KS_OK); /* dropped while computing */
	assert_int_equal(kv_removed(s), 2);
	uint64_t seed = 12345, rem = kv_removed(s);
	int ready[9] = {0}, near[9] = {0}; /* found READY / READY or COMPUTING at rem */
	for (int step = 0; step < 20000; step++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t id = 1 + (seed >> 33) % 8;
		int64_t now = step;
		switch ((seed >> 40) % 7) {
		case 0: (void)kv_alloc(s, id, (uint32_t)id, KV_COMPUTING, 1, 0, now); break;
		case 1: (void)kv_ready(s, id, now); break;
		case 2: (void)kv_unref(s, id, now); break;
		case 3: (void)kv_evict_one(s, now); break;
		case 4: (void)kv_drop(s, id); break;
		case 5: (void)kv_ref(s, id, now, NULL); break;
		default: (void)kv_pin(s, id, now); break;
		}
		if (kv_removed(s) != rem) {
			assert_true(kv_removed(s) > rem);
			rem = kv_removed(s);
			for (int k = 1; k <= 8; k++)
				ready[k] = near[k] = 0;
		}
		for (int k = 1; k <= 8; k++) {
			if (ready[k])
				assert_int_equal(kv_lookup(s, (uint64_t)k), KV_READY);
			if (near[k])
				assert_true(held_or_computing(s, (uint64_t)k));
			ready[k] |= kv_lookup(s, (uint64_t)k) == KV_READY;
			near[k] |= held_or_computing(s, (uint64_t)k);
		}
	}
	assert_true(rem > 2); /* the walk did erase */
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

/* kv_kept against the truth on a random walk: the blocks it keeps of an
 * earlier match are still READY; it keeps the whole match when none of its
 * blocks was erased and the log (16 entries in a store of 8 blocks) still
 * reaches back; 0 once it does not. Other ids sit at the same depths, so
 * an answer that looked at depths alone, or kept the match whatever was
 * erased, fails. */
static void test_kept_names_the_blocks_erased_since(void **st)
{
	(void)st;
	enum { D = 6, SNAPS = 4 };
	kv_store_t *s = kv_store_new(8);
	uint64_t q[D], seed = 777;
	for (uint32_t d = 0; d < D; d++)
		q[d] = 101 + d; /* the query; ids 201.. sit at the same depths */
	struct {
		uint64_t since;
		uint32_t m;
		int erased; /* some q[d < m] erased since */
		int live;
	} sn[SNAPS] = {{0}};
	int kept_whole = 0, kept_part = 0, forgot = 0;
	for (int step = 0; step < 30000; step++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t d = (uint32_t)((seed >> 33) % D);
		uint64_t id = (seed >> 50) & 1 ? q[d] : 201 + d;
		int64_t now = step;
		int had[D];
		for (uint32_t k = 0; k < D; k++)
			had[k] = kv_info(s, q[k]) != NULL;
		switch ((seed >> 40) % 9) {
		case 0: (void)kv_alloc(s, id, d, KV_COMPUTING, 1, 0, now); break;
		case 1: (void)kv_ready(s, id, now); break;
		case 2: case 3: (void)kv_unref(s, id, now); break;
		case 4: case 5: (void)kv_evict_one(s, now); break;
		case 6: (void)kv_drop(s, id); break;
		case 7: (void)kv_ref(s, id, now, NULL); break;
		default: (void)kv_alloc(s, id, d, KV_READY, 0, 0, now); break;
		}
		for (int j = 0; j < SNAPS; j++)
			for (uint32_t k = 0; k < D; k++)
				sn[j].erased |= had[k] && !kv_info(s, q[k]) && k < sn[j].m;
		for (int j = 0; j < SNAPS; j++) {
			if (!sn[j].live)
				continue;
			uint32_t kept = kv_kept(s, q, sn[j].m, sn[j].since);
			assert_true(kept <= sn[j].m);
			assert_true(kv_match(s, q, kept) == kept); /* sound */
			if (kv_removed(s) - sn[j].since > 16) {
				assert_int_equal(kept, 0);
				forgot++;
				sn[j].live = 0;
			} else if (!sn[j].erased) {
				assert_int_equal(kept, sn[j].m); /* tight */
				kept_whole += sn[j].m > 0;
			} else {
				kept_part += kept < sn[j].m;
			}
		}
		if ((seed >> 20) % 128 == 0) { /* a new match to remember */
			int j = (int)((seed >> 24) % SNAPS);
			sn[j].since = kv_removed(s);
			sn[j].m = kv_match(s, q, D);
			sn[j].erased = 0;
			sn[j].live = 1;
		}
	}
	assert_true(kept_whole > 100 && kept_part > 100 && forgot > 20); /* each case met */
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

/* The change hook (kv_store_set_on_change) runs once per id that leaves
 * (an eviction, a drop) and per block that becomes READY (computed, or a
 * copy landed), and for nothing else: not an allocation, a reference, an
 * unreference or a refusal; its error comes back from the call. */
static int changes, change_rc;

static int count_change(void *ctx)
{
	(void)ctx;
	changes++;
	return change_rc;
}

static void test_change_hook_reports_leaving_ids_and_ready_blocks(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(2);
	kv_store_set_on_change(s, count_change, NULL);
	changes = change_rc = 0;
	assert_int_equal(kv_alloc(s, 1, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 2, 0, KV_INFLIGHT, 0, 0, 0), KS_OK);
	assert_int_equal(changes, 0);
	assert_int_equal(kv_ready(s, 1, 1), KS_OK); /* computed */
	assert_int_equal(changes, 1);
	assert_int_equal(kv_ready(s, 1, 1), KS_ESTATE); /* refused: no change */
	assert_int_equal(changes, 1);
	assert_int_equal(kv_drop(s, 2), KS_OK); /* a copy that never landed */
	assert_int_equal(changes, 2);
	assert_int_equal(kv_unref(s, 1, 2), KS_OK);
	assert_int_equal(kv_ref(s, 1, 3, NULL), KS_OK);
	assert_int_equal(kv_unref(s, 1, 4), KS_OK);
	assert_int_equal(changes, 2);
	assert_int_equal(kv_alloc(s, 3, 0, KV_INFLIGHT, 0, 0, 5), KS_OK);
	assert_int_equal(kv_alloc(s, 4, 0, KV_COMPUTING, 1, 0, 5), KS_OK); /* evicts 1 */
	assert_int_equal(kv_lookup(s, 1), 0);
	assert_int_equal(changes, 3);
	change_rc = KS_ERUNTIME;
	assert_int_equal(kv_ready(s, 3, 6), KS_ERUNTIME); /* landed; the hook's error */
	assert_int_equal(kv_lookup(s, 3), KV_READY);
	assert_int_equal(changes, 4);
	kv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_are_shared_negative_codes),
		cmocka_unit_test(test_removed_counts_erases_and_found_blocks_stay),
		cmocka_unit_test(test_kept_names_the_blocks_erased_since),
		cmocka_unit_test(test_shared_block_stored_once),
		cmocka_unit_test(test_computing_block_not_matchable),
		cmocka_unit_test(test_inflight_copy_visible_computing_not),
		cmocka_unit_test(test_lru_evicts_oldest_and_deepest_first),
		cmocka_unit_test(test_capacity_never_exceeded),
		cmocka_unit_test(test_speculative_flag_cleared_on_use),
		cmocka_unit_test(test_drop_inflight_block),
		cmocka_unit_test(test_watch_reports_ready_and_drop_once),
		cmocka_unit_test(test_change_hook_reports_leaving_ids_and_ready_blocks),
	    cmocka_unit_test(test_hook_errors_come_back_from_the_call),
		cmocka_unit_test(test_random_operations_stay_consistent),
		cmocka_unit_test(test_slot_calls_equal_id_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* kv_store — one instance's paged KV cache: fixed-size blocks of B tokens.
 *
 * Shared (prefix) blocks are named by chained prefix ids (block i's id covers
 * every token before it), stored once however many requests use them, and
 * reference-counted by the requests that hold them. Private blocks (a
 * request's partial last prompt block and its generated tokens) are counted,
 * not named. A shared block is COMPUTING while the prefill that produces it
 * runs, INFLIGHT while a copy brings it, READY once its KV exists here; only
 * READY blocks may be matched or copied out (causality). READY blocks with no
 * reference are cached and evictable, lowest eviction priority first (LRU by
 * default); equal priorities go least recently used first, then deeper
 * blocks of a prefix before shallower ones, then by id.
 * Capacity (blocks, shared + private) is never exceeded: allocations that do
 * not fit after evicting return KS_EFULL and change nothing.
 * Memory: the store owns its slab, map and heap; no allocation after
 * kv_store_new. Errors: the shared negative codes of sim/base/err.h, named
 * at each declaration: KS_EFULL (no room), KS_EEXIST (already stored),
 * KS_ESTATE (absent, or not in the state the call needs; a call that fails
 * changes nothing). They are answers for the caller, never messages: no
 * err_t is filled. Hooks (eviction, watch, ready) return 0 or a negative
 * KS_ error of their own; the call that ran a failing hook completes its
 * change (the store stays consistent) and returns the hook's first error,
 * which the caller passes up: kv_alloc*, kv_alloc_private, kv_evict_one,
 * kv_ready*, kv_drop*.
 */
#ifndef KVSIM_KV_STORE_H
#define KVSIM_KV_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"

enum { KV_COMPUTING = 1, KV_INFLIGHT = 2, KV_READY = 3 };

typedef struct kv_block_info {
	uint64_t id;
	uint32_t depth;    /* position in its prefix (0 = first block) */
	uint32_t ref;      /* running requests holding it */
	uint32_t hits;     /* times matched by a request */
	uint8_t state;     /* KV_* */
	uint8_t spec;      /* 1: arrived by speculative copy and not used yet */
	int64_t last_use;  /* ns */
	int64_t created;   /* ns (READY time) */
	uint32_t tag;      /* caller's label (the copy bringing an INFLIGHT block, the
			    * replica a speculative block came with) */
	uint8_t watched;   /* kv_watch: report when it becomes READY or is dropped */
} kv_block_info_t;

/* Eviction priority: lower is evicted first. */
typedef double (*kv_prio_fn)(void *ctx, const kv_block_info_t *b, int64_t now);
/* Called for each block evicted (for offload to a host tier and
 * accounting): 0, or a negative KS_ error (see the top). */
typedef int (*kv_evict_fn)(void *ctx, const kv_block_info_t *b, int64_t now);

/* A watched block became READY (KV_WATCH_READY) or was dropped before it
 * did (KV_WATCH_DROP; b is then a copy of its last state). Called once per
 * kv_watch, after the store has changed; it may change the store itself. */
enum { KV_WATCH_READY = 1, KV_WATCH_DROP = 2 };
typedef int (*kv_watch_fn)(void *ctx, const kv_block_info_t *b, int event);

/* Any shared block became READY (computed, a copy landed, an output block
 * became cacheable), watched or not: called after the change, before a
 * kv_watch_fn; it must not change the store. Unset (NULL) by default.
 * Both return 0 or a negative KS_ error (see the top). */
typedef int (*kv_ready_fn)(void *ctx, const kv_block_info_t *b, int64_t now);

/* An id left the store (evicted or dropped) or a block became READY: the
 * two changes that can let a cache conversion the store barred go on
 * (cluster_seg.c). Called after the change (after the kv_evict_fn of an
 * eviction, before a kv_ready_fn or kv_watch_fn); it must not change the
 * store. Unset (NULL) by default. */
typedef int (*kv_change_fn)(void *ctx);

typedef struct kv_store kv_store_t;

/* rc less the store's own answers (KS_EFULL, KS_EEXIST, KS_ESTATE: 0): what
 * a hook returned, for callers that act on the change whatever the answer. */
static inline int kv_hook_error(int rc)
{
	return rc == KS_EFULL || rc == KS_EEXIST || rc == KS_ESTATE ? KS_OK : rc;
}

kv_store_t *kv_store_new(uint32_t capacity_blocks);
/* Bytes kv_store_new(capacity_blocks) allocates, all of it touched once the
 * store fills: callers bound their memory before making stores. */
uint64_t kv_store_bytes(uint32_t capacity_blocks);
void kv_store_free(kv_store_t *s);
/* prio NULL (the default): LRU, the last use as priority, kept in a list
 * in O(1) per change. Set it before any block is evictable. */
void kv_store_set_policy(kv_store_t *s, kv_prio_fn prio, kv_evict_fn on_evict, void *ctx);
void kv_store_set_watch(kv_store_t *s, kv_watch_fn fn, void *ctx);
void kv_store_set_on_ready(kv_store_t *s, kv_ready_fn fn, void *ctx);
void kv_store_set_on_change(kv_store_t *s, kv_change_fn fn, void *ctx);

uint32_t kv_capacity(const kv_store_t *s);
uint32_t kv_used(const kv_store_t *s);          /* shared + private blocks */
uint32_t kv_used_shared(const kv_store_t *s);
uint32_t kv_used_private(const kv_store_t *s);
uint32_t kv_evictable(const kv_store_t *s);     /* READY with ref 0 */
/* The next k (<= KV_EVICT_NEXT_MAX) blocks eviction would take, first
 * first (up to k; returns how many): their ids to ids, the priority the
 * store ranks each by to prio (LRU mode: the last use, ns; otherwise the
 * eviction policy's priority computed when the block became evictable).
 * O(k) in LRU mode, O(k^2) otherwise; changes nothing (the decision trace's
 * eviction rows read it). */
#define KV_EVICT_NEXT_MAX 8
uint32_t kv_evict_next(const kv_store_t *s, uint32_t k, uint64_t *ids, double *prio);
uint32_t kv_spec_blocks(const kv_store_t *s);   /* READY, speculative, unused */
uint32_t kv_inflight_blocks(const kv_store_t *s); /* INFLIGHT: a copy brings them */
/* Blocks that could be allocated now, evicting as needed. */
uint32_t kv_free_or_evictable(const kv_store_t *s);

/* State of a shared block, 0 when absent. */
int kv_lookup(const kv_store_t *s, uint64_t id);
const kv_block_info_t *kv_info(const kv_store_t *s, uint64_t id);
/* Ids erased so far (evicted, freed, dropped, whatever their state): a
 * block stays in its state or moves on to READY (COMPUTING, INFLIGHT ->
 * READY) until it is erased, so while this count is unchanged every block
 * found READY (or COMPUTING or READY) is still so. */
uint64_t kv_removed(const kv_store_t *s);
/* Of a query's first m blocks, every one found READY (or READY or
 * COMPUTING) when kv_removed was `since`: how many leading ones surely
 * still are. The store logs the last ids it erased with their depths (a
 * power of two of them, about an eighth of its capacity, 16 to 4096: 2
 * bytes a block), and a block id names its whole prefix (traces chain
 * them, tr.h), so the query's block at position d has depth d: the answer
 * is the least depth among the query's blocks erased since, or m, at one
 * comparison per erase, never a lookup. 0 once the log no longer reaches
 * back to `since`, or past 32 erases a block of m (a lookup costs tens of
 * the log's reads): the caller then matches afresh. */
uint32_t kv_kept(const kv_store_t *s, const uint64_t *ids, uint32_t m, uint64_t since);
/* Number of leading ids that are READY here. */
uint32_t kv_match(const kv_store_t *s, const uint64_t *ids, uint32_t n);
/* Number of leading ids READY or INFLIGHT here: KV that exists or is on its
 * way by a copy, what a router may count on (a COMPUTING block is not
 * shown until its prefill ends). Not for use: use needs READY. */
uint32_t kv_match_visible(const kv_store_t *s, const uint64_t *ids, uint32_t n);
/* Whether id is READY or INFLIGHT here. */
int kv_visible(const kv_store_t *s, uint64_t id);
/* A hint before the call on ids[k] of a run of calls on ids[0..n) in
 * order: asks the memory for what the calls on a few ids ahead will read
 * (the lookups of a large store miss the cache). Changes nothing. */
void kv_prefetch(const kv_store_t *s, const uint64_t *ids, uint32_t k, uint32_t n);

/* Takes a reference on a READY block (a hit); counts a hit, clears spec
 * (reporting in *was_spec whether it was speculative). 0, or KS_ESTATE
 * when id is absent or not READY. */
int kv_ref(kv_store_t *s, uint64_t id, int64_t now, int *was_spec);
/* kv_ref of a hit that also reports the block's tag (NULL: not wanted) and,
 * with hold 0, drops the reference at once (kv_ref then kv_unref, as a
 * touch), in one lookup. 0, or KS_ESTATE when id is absent or not READY
 * (nothing changes). */
int kv_hit(kv_store_t *s, uint64_t id, int64_t now, int hold, int *was_spec, uint32_t *tag);
/* Allocates a new shared block in state (COMPUTING or INFLIGHT) with ref
 * refs (1 for a prefill, 0 for an incoming copy), evicting if needed;
 * state READY is kv_alloc as COMPUTING then kv_ready at once, in one
 * lookup. 0, KS_EEXIST when id is already stored, KS_EFULL when no room
 * can be made. */
int kv_alloc(kv_store_t *s, uint64_t id, uint32_t depth, int state, uint32_t ref,
	     int spec, int64_t now);
/* Pins a READY block (a copy reads it) without counting a hit; 0, or
 * KS_ESTATE if it is absent or not READY. kv_pin_any also pins a COMPUTING
 * block (copies that may read KV not yet computed, kvcache.copy_from =
 * uncomputed); KS_ESTATE for an absent or INFLIGHT block. */
int kv_pin(kv_store_t *s, uint64_t id, int64_t now);
int kv_pin_any(kv_store_t *s, uint64_t id, int64_t now);
/* Watches a COMPUTING or INFLIGHT block (see kv_watch_fn); 0, or
 * KS_ESTATE when the block is absent or already READY. */
int kv_watch(kv_store_t *s, uint64_t id);
/* Sets the caller's tag of a block; 0, or KS_ESTATE when it is absent. */
int kv_set_tag(kv_store_t *s, uint64_t id, uint32_t tag);
/* COMPUTING/INFLIGHT -> READY; 0, or KS_ESTATE when absent or READY. */
int kv_ready(kv_store_t *s, uint64_t id, int64_t now);
/* Drops one reference; at zero the block becomes evictable (if READY).
 * 0, or KS_ESTATE when absent or holding no reference. */
int kv_unref(kv_store_t *s, uint64_t id, int64_t now);
/* Removes a non-READY block with ref 0 (a cancelled copy, an aborted
 * prefill's block); 0, or KS_ESTATE for any other block or an absent one. */
int kv_drop(kv_store_t *s, uint64_t id);
/* Private blocks: n more (0, or KS_EFULL when no room can be made) / n
 * fewer. */
int kv_alloc_private(kv_store_t *s, uint32_t n, int64_t now);
void kv_free_private(kv_store_t *s, uint32_t n);
/* Evicts one block chosen by policy; 0, or KS_EFULL if none is evictable. */
int kv_evict_one(kv_store_t *s, int64_t now);

/* By slot: a slot names a stored block while it stays stored, and a block
 * with a reference stays (it is neither evicted nor dropped), so a holder
 * may keep the slot from kv_alloc_slot or kv_match_slots until its last
 * kv_unref and skip the id lookups. A slot of a block no longer stored
 * names nothing or, later, another block: calls on a slot not stored
 * answer KS_ESTATE (or 0 from kv_slot_id), as the id calls do for an
 * absent id; each otherwise does what its id call does. */
#define KV_NO_SLOT UINT32_MAX
uint32_t kv_slot(const kv_store_t *s, uint64_t id);  /* KV_NO_SLOT when absent */
uint64_t kv_slot_id(const kv_store_t *s, uint32_t slot);
/* kv_match, writing the slots of the matched blocks to slots[0..result)
 * (when slots is not NULL). */
uint32_t kv_match_slots(const kv_store_t *s, const uint64_t *ids, uint32_t n, uint32_t *slots);
/* kv_alloc, writing the new block's slot to *slot (when 0 is returned). */
int kv_alloc_slot(kv_store_t *s, uint64_t id, uint32_t depth, int state, uint32_t ref,
		  int spec, int64_t now, uint32_t *slot);
int kv_hit_slot(kv_store_t *s, uint32_t slot, int64_t now, int hold, int *was_spec,
		uint32_t *tag);
int kv_ready_slot(kv_store_t *s, uint32_t slot, int64_t now);
int kv_unref_slots(kv_store_t *s, const uint32_t *slots, uint32_t n, int64_t now);
int kv_drop_slot(kv_store_t *s, uint32_t slot);

/* Iterates over every shared block (any state); stop when fn returns != 0. */
int kv_foreach(const kv_store_t *s, int (*fn)(void *ctx, const kv_block_info_t *b),
	       void *ctx);
/* Full consistency check (map, heap, counters); 0 when consistent,
 * KS_ERUNTIME when not (a bug in the store). */
int kv_check(const kv_store_t *s);

/* Counters since creation. */
typedef struct kv_stats {
	uint64_t allocs, evictions, spec_evicted_unused, hits;
} kv_stats_t;
kv_stats_t kv_stats(const kv_store_t *s);

#endif

/* kv_filter — a set of 64-bit block ids, exact or approximate, as a router's
 * KV index keeps one per instance: an exact hash set, a counting Bloom
 * filter, a cuckoo filter (partial-key cuckoo hashing with fingerprints), or
 * an exact set whose entries expire ttl_ns after their last insert.
 *
 * Semantics per kind:
 *   EXACT   has() is true iff id was inserted and not removed since.
 *   BLOOM   counting Bloom filter (4-bit saturating counters, k hash functions
 *           by double hashing of one 64-bit mix); m and k chosen from
 *           capacity and fpr (m = -n ln p / ln^2 2, k = round(m/n ln 2)). No
 *           false negatives for ids inserted and not removed, unless a remove
 *           of an id never inserted decremented shared counters (counters stop
 *           at 0), which is what a lost "stored" event followed by its
 *           "removed" event does to a real counting filter. A remove always
 *           decrements the id's nonzero counters; it counts as applied (for
 *           kvf_count) when has() was true for it. A counter that reached 15
 *           saturates and is never decremented again. Counters are indexed by
 *           enhanced double hashing (Dillinger, Manolios, FMCAD 2004).
 *   CUCKOO  buckets of 4 fingerprints, fingerprint bits f chosen so that the
 *           bound 2*4/2^f <= fpr (f capped at 32 bits, so fpr below 2^-29 gets
 *           the 32-bit bound); 2^j buckets, the fewest with capacity/(4*2^j)
 *           <= 0.95; fingerprint 0 marks an empty slot; alternate bucket
 *           i XOR hash(fp) (Fan et al., CoNEXT 2014); at most 500 kicks on
 *           insert; an insert that fails is undone (every kicked fingerprint
 *           back in place), leaves the id absent and returns KVF_FULL.
 *           Removing an id never inserted may remove another id with the
 *           same fingerprint in one of its two buckets (as a real cuckoo
 *           filter does).
 *   TTL     exact set; an entry is present until ttl_ns after its last insert
 *           (insert refreshes); remove works as in EXACT. Boundary: inserted
 *           last at t, it is present for now_ns < t + ttl_ns (at t+ttl-1) and
 *           absent from now_ns = t + ttl_ns on. Times are expected not to go
 *           backwards across calls; expired entries are purged when the table
 *           would otherwise grow.
 * Inserting an id twice: EXACT/TTL keep one entry (TTL refreshed); BLOOM and
 * CUCKOO count it twice (a multiset): callers insert an id once per
 * "stored" event.
 * Memory: the filter owns its tables; EXACT/TTL grow by doubling, BLOOM and
 * CUCKOO are sized once from capacity. kvf_bytes: EXACT 8 bytes per slot,
 * TTL 16 (id and insert time), slots a power of two at load <= 1/2; BLOOM
 * ceil(m/2) (two 4-bit counters a byte); CUCKOO ceil(buckets*4*f/8)
 * (fingerprints bit-packed). Errors: kvf_new returns NULL on bad
 * parameters (capacity 0, fpr outside (0, 1) for BLOOM/CUCKOO, ttl_ns <= 0 for
 * TTL) or out of memory; kvf_insert returns 0, KVF_FULL or KS_ENOMEM. Not
 * thread-safe. Deterministic: same parameters and calls, same answers.
 */
#ifndef KVSIM_KV_FILTER_H
#define KVSIM_KV_FILTER_H

#include <stdint.h>

#include "sim/base/err.h" /* KS_ENOMEM */

typedef enum { KVF_EXACT, KVF_BLOOM, KVF_CUCKOO, KVF_TTL } kvf_kind_t;

typedef struct kvf_params {
	kvf_kind_t kind;
	uint64_t capacity; /* entries the filter is sized for (BLOOM/CUCKOO), a hint otherwise */
	double fpr;        /* target false-positive rate at capacity (BLOOM/CUCKOO) */
	int64_t ttl_ns;    /* entry lifetime (TTL) */
	uint64_t seed;     /* salts the hashes */
} kvf_params_t;

enum { KVF_FULL = 1 };

typedef struct kv_filter kv_filter_t;

kv_filter_t *kvf_new(const kvf_params_t *p);
void kvf_free(kv_filter_t *f);
/* Adds id at time now_ns (TTL uses the time; the others ignore it). */
int kvf_insert(kv_filter_t *f, uint64_t id, int64_t now_ns);
/* Removes one occurrence of id (see the kinds above for an absent id). */
void kvf_remove(kv_filter_t *f, uint64_t id);
/* 1 if id may be present at now_ns (exactly: is present, for EXACT/TTL). */
int kvf_has(const kv_filter_t *f, uint64_t id, int64_t now_ns);
/* Inserts accepted minus removes applied (EXACT/TTL: entries held, expired
 * ones included until they are next looked at or purged). */
uint64_t kvf_count(const kv_filter_t *f);
/* Bytes of the filter's tables (what a router would keep in memory). */
uint64_t kvf_bytes(const kv_filter_t *f);
/* kvf_bytes of the filter kvf_new(p) would make, before it is made (0 for
 * parameters kvf_new rejects). */
uint64_t kvf_bytes_for(const kvf_params_t *p);
/* The false-positive rate the parameters give at capacity, by the kind's
 * formula (0 for EXACT/TTL): BLOOM (1 - e^{-kn/m})^k with the m and k
 * kvf_new chooses, CUCKOO the bound 2*4/2^f. NaN for parameters kvf_new
 * rejects. */
double kvf_theory_fpr(const kvf_params_t *p);

#endif

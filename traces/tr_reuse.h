/* tr_reuse — reuse analysis of a trace before a run (`kvsim trace reuse`):
 * LRU stack distances, miss-ratio curves per cluster and per instance,
 * SHARDS sampling, hot-prefix concentration and think-time gaps.
 *
 * The reference stream. Requests are taken in trace order, at the block
 * size the reader hashes to (tr.h: chained prefix ids, re-hashed exactly
 * when the trace's own block size differs). A request's prompt blocks are
 * looked up in the LRU stack as it stands when the request arrives (its
 * position, 1 = most recent, is the block's stack distance; a block never
 * seen before has an infinite one, a cold miss); then every block of the
 * request, prompt and output ids alike (output ids are stored, as the
 * simulator stores them, but never counted), moves to the top, deepest
 * first, so the root block ends on top. Ancestors are then always at least
 * as recent as their descendants and every cache of the top C entries holds
 * whole prefixes: a block hit is a prefix hit, and the deeper block of a
 * prefix goes first on equal recency, as in the simulator's KV store. A
 * cache of C blocks hits exactly the prompt blocks at distance <= C (LRU's
 * inclusion property, Mattson et al., "Evaluation techniques for storage
 * hierarchies", IBM Systems Journal 9(2), 1970), so one pass gives the hit
 * rate at every capacity; at unbounded capacity it is the share of prompt
 * blocks seen in an earlier request, the block hit rate of an unbounded
 * simulated cache. The cache is ideal: no block is pinned by a running
 * request, nothing is in flight, and time plays no part.
 *
 * Distances are exact, from a Fenwick tree over access time stamps with a 1
 * at each block's latest stamp (Bennett and Kruskal, "LRU stack processing",
 * IBM J. Res. Dev. 19(4), 1975): O(log n) per access, O(n log n) in all,
 * memory linear in accesses and distinct blocks.
 *
 * Per instance: request i goes to instance i mod n_instances (round-robin,
 * a rule that uses no cache state, so the curve is the trace's, not a
 * policy's); each instance has its own stack, and the per-instance curve is
 * the hit rate over all instances when each has a cache of C blocks.
 *
 * SHARDS (Waldspurger et al., "Efficient MRC Construction with SHARDS",
 * FAST'15): with sample_rate R < 1 only blocks whose spatial hash
 * (tr_mix(TR_REUSE_SALT, id) mod 2^24) is below round(R * 2^24) enter the
 * stacks; their distances, scaled by 1/R, estimate the full stream's.
 * Rates use SHARDS-adj (the paper's section 4.2): they are over the expected
 * sample, R times the prompt blocks, and the shortfall (or excess) of the
 * sample drawn counts as hits at the smallest distance, so a hot block drawn
 * in or left out does not shift the whole curve. Memory and time shrink by
 * R. Stated error, measured at R = 0.1: on the generated trace of
 * tests/unit/traces/test_tr_reuse_shards.c (389,533 prompt blocks, 2,000 Zipf-popular
 * shared prompts) the sampled curve is within 0.08 (absolute hit rate) of
 * the exact one at every capacity and within 0.03 from 1,000 blocks on (the
 * adjustment lands on small caches, where the blocks it stands for did not
 * sit); on the Mooncake conversation trace within 0.017 at every power of
 * two, its shared first block being at distance 1. A smaller R is noisier:
 * the unbounded point of Mooncake at R = 0.01 is 0.353 against 0.382. Hot
 * prefixes and think-time gaps are always exact (all requests).
 *
 * Ownership: tr_reuse_compute fills a tr_reuse_t whose arrays it allocates;
 * tr_reuse_free releases them. Errors: the reader's (KS_EINPUT "file:line:
 * field: reason"), KS_ENOMEM, KS_EIO from tr_reuse_write_h5; nothing exits.
 */
#ifndef KVSIM_TR_REUSE_H
#define KVSIM_TR_REUSE_H

#include <stdint.h>
#include <stdio.h>

#include "traces/tr.h"

#define TR_REUSE_SALT 0x5348415244535f31ULL /* "SHARDS_1" */
#define TR_REUSE_DEPTHS 3                   /* hot-prefix depths and top-k: 1, 10, 100 */
#define TR_REUSE_GAP_BINS 40                /* think-time gap bins, 5 per decade */

typedef struct tr_reuse_opts {
	uint32_t n_instances; /* >= 1 */
	double sample_rate;   /* (0, 1]; 1 = exact */
} tr_reuse_opts_t;

/* A stack-distance histogram: count[d] prompt accesses at sampled distance
 * d (1..n_count - 1; count[0] unused), cold the infinite ones. A distance d
 * stands for d / sample_rate blocks. */
typedef struct tr_reuse_hist {
	uint64_t *count;
	size_t n_count;
	uint64_t cold, accesses; /* accesses = cold + sum(count) */
	uint64_t blocks;         /* prompt-block accesses before sampling */
} tr_reuse_hist_t;

typedef struct tr_reuse {
	tr_reuse_opts_t o;
	uint32_t block_tokens;
	uint64_t requests, prompt_blocks; /* all requests; prompt blocks before sampling */
	tr_reuse_hist_t cluster;          /* one cache for every request */
	tr_reuse_hist_t *inst;            /* n_instances, one per instance */
	tr_reuse_hist_t inst_all;         /* the sum of inst: every instance a C-block cache */
	/* hot[i][j]: share of all requests whose first depth[i]-block prefix is
	 * among the top_k[j] most frequent such prefixes (requests shorter than
	 * depth[i] blocks never count) */
	uint32_t depth[TR_REUSE_DEPTHS], top_k[TR_REUSE_DEPTHS];
	double hot[TR_REUSE_DEPTHS][TR_REUSE_DEPTHS];
	/* Think time: for a request whose first block was seen before, the gap
	 * from the latest earlier request holding its longest seen prefix (the
	 * previous turn of a conversation) to its own arrival. gap_edges_s are
	 * 1 ms .. 10^5 s, 5 per decade; gap_count[0] also holds gaps below
	 * 1 ms, the last bin those above. */
	double gap_edges_s[TR_REUSE_GAP_BINS + 1];
	uint64_t gap_count[TR_REUSE_GAP_BINS];
	uint64_t gaps;       /* requests with a gap */
	double gap_median_s; /* nearest rank over the exact gaps; 0 without */
} tr_reuse_t;

/* Reads r to its end. e gets the reader's error for bad input. */
int tr_reuse_compute(tr_reader_t *r, const tr_reuse_opts_t *o, tr_reuse_t *out, err_t *e);
void tr_reuse_free(tr_reuse_t *u);

/* Hit rate of h at a capacity of cap blocks (UINT64_MAX: unbounded),
 * scaling distances by 1 / rate; 0 without accesses. */
double tr_reuse_hit_rate(const tr_reuse_hist_t *h, double rate, uint64_t cap);
/* The largest distance h holds, in blocks (scaled): every larger capacity
 * gives the unbounded hit rate. */
uint64_t tr_reuse_max_distance(const tr_reuse_hist_t *h, double rate);

/* The capacity grid of the table and the HDF5 file: 1, then 8 points per
 * octave (rounded, duplicates dropped) up to the largest distance of u's
 * cluster stack, which is the last point. *caps is malloc'd. */
int tr_reuse_grid(const tr_reuse_t *u, uint64_t **caps, size_t *n, err_t *e);

/* The table on f: the curve at each power of two of the grid and
 * unbounded, hot prefixes, the gap histogram. */
void tr_reuse_print(const tr_reuse_t *u, const char *source, FILE *f);

/* Writes u as HDF5 (a new file at path), every dataset with a "unit"
 * attribute; layout in analysis/README.md (plot_reuse.py reads it). */
int tr_reuse_write_h5(const tr_reuse_t *u, const char *source, const char *path, err_t *e);

#endif

/* bound — offline bounds on a run's block hits (output.oracle_bound = true):
 * Belady's MIN on each instance's block stream, and a placement and
 * replication bound over the whole trace.
 *
 * What it bounds. The run records, per instance, the requests it was handed
 * in the order it got them: each request's shareable prompt blocks (the ids
 * its admission looks up, counted like hit_rate_blocks) followed by the ids
 * of its full output blocks (inserted without a lookup, cluster.h
 * cluster_req_output_ids). After the run, the requests that were admitted
 * (their row has queue_ns >= 0) are replayed offline under MIN with the
 * instance's whole KV pool (kv_blocks) as capacity. Demand paging, as a
 * run's store does: every looked-up or inserted block is resident after its
 * access, in place of the one needed farthest ahead, where a block is needed
 * at its next access if that is a lookup and never if it is an insert (it
 * comes back then at no cost; keying by the next lookup alone is not
 * optimal with inserts, the exhaustive test finds): MIN of Belady 1966, "A
 * study of replacement algorithms for a virtual-storage computer", IBM
 * Syst. J. 5(2), optimal for hit count (Mattson et al. 1970, IBM Syst. J.
 * 9(2)). Each block counts on its own, not only as part of a matched
 * prefix, and no capacity is lost to running requests' private blocks:
 * both only loosen the bound. So
 * bound.belady_hit_rate_blocks is the highest block hit rate any eviction
 * policy could reach on this run's routing and admission order with the
 * instance's own lookups; hits that copies bring in (peer or host fetch,
 * speculative replicas) are not in the stream, so a run with those on may
 * lie above it (their worth is what the placement bound measures).
 *
 * Placement and replication (bound.place_*). Copies (speculative
 * replicas, peer and host fetches) can add hits MIN on the instance's own
 * stream cannot have, within a copy budget of output.bound_bw_gbps into
 * each instance over the run (0: unlimited), copy_blocks = bw x
 * sim_time_s / block_bytes. It bounds runs whose copies into each instance,
 * speculative and fetched together, stay within that budget: set it to
 * what the online policy may use (spec_bw_gbps bounds only its speculative
 * copies). Two facts bound instance i's hits: (1) a schedule with k
 * copies has at most k more hits than MIN: make it demand paging by loading
 * each copied block at its next use instead, which costs at most that one
 * lookup and no other (the lazy-conversion argument of Borodin & El-Yaniv
 * 1998, "Online Computation and Competitive Analysis", ch. 3); (2) a lookup
 * that is the cluster's first touch of its block (no admitted request got
 * it earlier, anywhere) misses under any placement. So hits_i <= min(MIN_i
 * + copy_blocks, L_i - F_i), L lookups, F first touches. What it relaxes:
 * copies land just in time (no transfer time, no VRAM-time held before
 * use), so the policy's VRAM budget (spec_vram_frac) does not bind it; a
 * block is available from its first routing on, before it is computed;
 * every block is worth the same (saved prefill is linear in tokens, so the
 * greedy knapsack by saving per byte that a fractional relaxation solves
 * exactly, Dantzig 1957, takes blocks in any order and is the count above).
 * With an unlimited budget it is the cluster's compulsory-miss bound
 * (reusable / lookups): the hit rate of one infinite cache on the whole
 * trace. The network's capacity costs unlimited minus budgeted; what
 * mis-predicted reuse costs is an oracle-predictor run minus the policy's
 * (two runs: analysis/oracle_gap.py).
 *
 * Closed loops (trace.gen = sessions): the streams are the requests the
 * run made, so the bound holds for that realized stream; another policy
 * that answers sooner makes more or earlier requests, and its bound is over
 * another stream.
 *
 * Cost: O(n log n) in the accesses n (sorts for the next-use indices and
 * the first touches, a binary heap with lazy deletion for the farthest).
 * Ownership: a bound_stream_t is owned by its creator (bound_free); it
 * copies the ids it is given. Errors: 0, KS_ENOMEM (the stream keeps what
 * it had), KS_EINPUT (an instance out of range).
 */
#ifndef KVSIM_BOUND_H
#define KVSIM_BOUND_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/results.h"

typedef struct bound_stream bound_stream_t;

/* Hits of MIN over one access sequence: ids[i] is looked up when
 * counted[i] is 1 (a hit or a miss), inserted uncounted when 0; capacity
 * in blocks (0: nothing is resident). *hits counts the looked-up
 * accesses that find their block resident. 0 or KS_ENOMEM. */
int bound_belady(const uint64_t *ids, const uint8_t *counted, size_t n, uint64_t capacity,
                 uint64_t *hits);

/* An empty stream for n_inst instances, or NULL (out of memory). */
bound_stream_t *bound_new(uint32_t n_inst);
void bound_free(bound_stream_t *b);
/* Appends request req_id handed to instance inst at t_ns: ids[0..n_lookup)
 * looked up, then ids[n_lookup..n_lookup+n_insert) inserted. */
int bound_record(bound_stream_t *b, uint32_t inst, uint64_t req_id, int64_t t_ns,
                 const uint64_t *ids, uint32_t n_lookup, uint32_t n_insert);
/* What bound_compute finds, in blocks, summed over the instances. */
typedef struct bound_out {
	uint64_t lookups;    /* looked-up blocks of admitted requests (= blocks_total) */
	uint64_t min_hits;   /* MIN's hits, each instance on its own stream */
	uint64_t reusable;   /* lookups that are not the cluster's first touch of a block */
	uint64_t place_hits; /* the placement bound within the copy budget */
} bound_out_t;

/* Replays every instance's admitted requests (rows[0..n_rows): the run's
 * request rows; a request id whose row has queue_ns >= 0 was admitted)
 * under MIN with capacity cap[inst] blocks, and bounds placement with
 * copy_blocks copied blocks into each instance over the run (< 0:
 * unlimited). 0 or KS_ENOMEM. */
int bound_compute(const bound_stream_t *b, const res_request_t *rows, size_t n_rows,
                  const uint32_t *cap, double copy_blocks, bound_out_t *o);
/* The same from the admitted requests' ids (a->id[0 .. a->n), sorted in
 * place), gathered by bound_admitted_ids from the rows of a run, spilled
 * ones included (sim_results_rows): 8 B an admitted request. */
typedef struct bound_ids {
	uint64_t *id;
	size_t n, cap;
} bound_ids_t;
int bound_compute_ids(const bound_stream_t *b, bound_ids_t *a, const uint32_t *cap,
                      double copy_blocks, bound_out_t *o);
/* res_rows_fn over request rows: appends the ids of those admitted
 * (queue_ns >= 0) to ctx, a bound_ids_t the caller frees (its id). 0 or
 * KS_ENOMEM. */
int bound_admitted_ids(void *ctx, const void *rows, size_t n);

#endif

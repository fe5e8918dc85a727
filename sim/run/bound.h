/* bound — an offline eviction bound: Belady's MIN on each instance's block
 * stream (output.oracle_bound = true).
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
 * 9(2)). Each block counts on
 * its own, not only as part of a matched prefix, and no capacity is lost to
 * running requests' private blocks: both only loosen the bound. So
 * bound.belady_hit_rate_blocks is the highest block hit rate any eviction
 * policy could reach on this run's routing and admission order with the
 * instance's own lookups; hits that copies bring in (peer or host fetch,
 * speculative replicas) are not in the stream, so a run with those on may
 * lie above it (their worth is what the placement bound measures).
 *
 * Cost: O(n log n) in the accesses n of an instance (one sort for the
 * next-use indices, a binary heap with lazy deletion for the farthest).
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
/* Replays every instance's admitted requests (rows[0..n_rows): the run's
 * request rows; a request id whose row has queue_ns >= 0 was admitted)
 * under MIN with capacity cap[inst] blocks, summing the looked-up blocks
 * (*lookups) and MIN's hits (*hits) over the instances. */
int bound_eviction(const bound_stream_t *b, const res_request_t *rows, size_t n_rows,
                   const uint32_t *cap, uint64_t *lookups, uint64_t *hits);

#endif

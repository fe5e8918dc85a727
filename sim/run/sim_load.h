/* sim_load — every instance's load (waiting + running requests, the
 * cluster's cluster_load) kept on change, grouped by value, so that the
 * least-loaded instances, their load and the largest load are read in O(1).
 *
 * The instances sit in one permutation ordered by load; group l (the
 * instances of load l) is the slice [start[l], start[l + 1]). A +1 swaps the
 * instance with the last of its group and moves the boundary down one, a -1
 * swaps it with the first and moves the boundary up one: O(1) each, and the
 * least-loaded group is always the permutation's first slice (the bucket
 * structure of constant-time priority updates, as in Fiduccia-Mattheyses'
 * gain buckets). The order inside a group depends only on the sequence of
 * changes, so a pick by position is deterministic per run.
 * Loads are request counts; instance ids 0 .. n-1. Memory: the index owns
 * its arrays (freed by sim_load_free); it allocates only when the largest
 * load passes every earlier one. Errors: KS_ENOMEM.
 */
#ifndef KVSIM_SIM_LOAD_H
#define KVSIM_SIM_LOAD_H

#include <stdint.h>

typedef struct sim_load sim_load_t;

/* n instances, every load 0; NULL when out of memory. */
sim_load_t *sim_load_new(uint32_t n);
void sim_load_free(sim_load_t *l);
/* inst's load + 1 (a request enqueued there); 0 or KS_ENOMEM. */
int sim_load_inc(sim_load_t *l, uint32_t inst);
/* inst's load - 1 (a request left it); a load of 0 stays 0 (a caller's
 * bug, caught by the checks that compare the index with the cluster). */
void sim_load_dec(sim_load_t *l, uint32_t inst);
uint32_t sim_load_of(const sim_load_t *l, uint32_t inst);
/* The instances of the least load, *count of them (>= 1), in the index's
 * own order, valid until the next change; *min and *max the least and the
 * largest load over all instances (pol_view_t.least_loaded's answer). */
const uint32_t *sim_load_least(const sim_load_t *l, uint32_t *count, uint64_t *min,
                               uint64_t *max);
/* 0 when the permutation, positions and group starts agree with the loads. */
int sim_load_check(const sim_load_t *l);

#endif

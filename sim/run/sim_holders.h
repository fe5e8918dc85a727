/* sim_holders — which instances may hold a prefix: for each first block id
 * (depth 0), the instances that may hold it in any state, ascending.
 *
 * The list is a superset kept on change: an instance is added when a request
 * carrying the block is routed to it or a copy reserves it there, and
 * removed when the block is evicted there or a reader finds it gone (a
 * dropped copy or prefill). A prefix can match on an instance only if its
 * first block is there, so the instances that match blocks[0..n) at all are
 * among sim_holders_of(blocks[0]): finding them costs O(holders), not
 * O(instances). Readers confirm each candidate with the store (kv_match).
 * Memory: the index owns its table and lists (freed by sim_holders_free);
 * allocation only when a new id or a longer list appears. Errors: KS_ENOMEM.
 */
#ifndef KVSIM_SIM_HOLDERS_H
#define KVSIM_SIM_HOLDERS_H

#include <stdint.h>

typedef struct sim_holders sim_holders_t;

sim_holders_t *sim_holders_new(void);
void sim_holders_free(sim_holders_t *h);
/* Adds inst to id's holders (nothing when it is there); 0 or KS_ENOMEM. */
int sim_holders_add(sim_holders_t *h, uint64_t id, uint32_t inst);
/* Removes inst from id's holders (nothing when it is not there). */
void sim_holders_remove(sim_holders_t *h, uint64_t id, uint32_t inst);
/* id's holders, ascending (*n of them; NULL when none). Valid until the
 * next add or remove. */
const uint32_t *sim_holders_of(const sim_holders_t *h, uint64_t id, uint32_t *n);
/* Ids with at least one holder. */
uint32_t sim_holders_ids(const sim_holders_t *h);

#endif

/* ev_queue_internal — for ev_engine and tests only, not the queue's contract.
 *
 * The heap orders ties by a 32-bit key that is renumbered when it would wrap
 * (after 2^32 pushes); tests move the key close to the wrap to exercise that
 * path without pushing four billion events.
 */
#ifndef KVSIM_EV_QUEUE_INTERNAL_H
#define KVSIM_EV_QUEUE_INTERNAL_H

#include <stdint.h>

#include "sim/engine/ev_queue.h"

/* Pops the earliest event into *out if its time is <= until: 0 popped, 1
 * not (queue empty or earliest later). The engine's loop in one call. */
int ev_pop_until(ev_queue_t *q, int64_t until, ev_event_t *out);

/* Sets the tie key the next push or reschedule takes. Only valid when every
 * pending event's key is below `key` (e.g. on an empty queue). */
void ev_queue_test_set_tie_key(ev_queue_t *q, uint32_t key);

#endif

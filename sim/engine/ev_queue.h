/* ev_queue — the pending-event set of the discrete-event engine.
 *
 * Owns a slab of fixed-size events and a priority structure over them, ordered
 * by (time, seq): time is simulated int64 nanoseconds, seq a counter assigned
 * at push/reschedule so events at the same instant pop in insertion order.
 * Handles name a pending event and carry a generation, so a stale handle
 * (event already popped or cancelled) is detected and rejected, never reused.
 * push/pop/cancel/reschedule are O(log n); no allocation once the slab has
 * grown to the peak number of pending events. Errors: ev_push returns
 * EV_NONE when the slab cannot grow; cancel/reschedule return -1 on a stale
 * handle. Replace the structure behind this header, not the header.
 */
#ifndef KVSIM_EV_QUEUE_H
#define KVSIM_EV_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ev_handle_t; /* (generation << 32) | slot; 0 is never valid */
#define EV_NONE ((ev_handle_t)0)

typedef struct ev_event {
	int64_t time;     /* ns */
	uint64_t seq;     /* tie-breaker, assigned by the queue */
	uint32_t type;    /* handler index */
	uint32_t target;  /* entity id (instance, link, flow, ...) */
	uint64_t payload; /* opaque to the queue */
} ev_event_t;

typedef struct ev_queue ev_queue_t;

ev_queue_t *ev_queue_new(size_t capacity_hint);
void ev_queue_free(ev_queue_t *q);
ev_handle_t ev_push(ev_queue_t *q, int64_t time, uint32_t type, uint32_t target,
		    uint64_t payload);
/* Removes the earliest event into *out; returns 0, or 1 when empty. */
int ev_pop(ev_queue_t *q, ev_event_t *out);
/* Earliest time, or INT64_MAX when empty. */
int64_t ev_peek_time(const ev_queue_t *q);
int ev_cancel(ev_queue_t *q, ev_handle_t h);
/* Moves a pending event to new_time (it gets a fresh seq). */
int ev_reschedule(ev_queue_t *q, ev_handle_t h, int64_t new_time);
/* Whether h still names a pending event. */
int ev_pending(const ev_queue_t *q, ev_handle_t h);
size_t ev_size(const ev_queue_t *q);

#endif

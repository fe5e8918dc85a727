/* ev_engine — the event loop: a clock, an ev_queue and a handler table.
 *
 * Handlers are registered per event type (small integers, < EV_MAX_TYPES)
 * with a context pointer. Modules ask the engine for their types
 * (ev_engine_type_new) rather than numbering them in headers, so no two
 * modules can pick the same one; ev_engine_register binds a type the caller
 * chose (stand-alone tests and tools), and refuses one already bound. Types
 * never decide the order of events, so which id a module gets does not
 * change a run; the engine pops events in (time, seq) order, sets
 * now to the event's time and calls the handler. A handler returns 0 to go
 * on or a negative KS_E* code, which stops the run and is returned by
 * ev_engine_run. The engine never frees handler contexts. An optional check
 * hook runs after every event (the invariant checker in KVSIM_CHECK builds).
 */
#ifndef KVSIM_EV_ENGINE_H
#define KVSIM_EV_ENGINE_H

#include "sim/engine/ev_queue.h"

#define EV_MAX_TYPES 64

typedef struct ev_engine ev_engine_t;
typedef int (*ev_handler_fn)(void *ctx, ev_engine_t *eng, const ev_event_t *ev);
typedef int (*ev_check_fn)(void *ctx, ev_engine_t *eng);

ev_engine_t *ev_engine_new(size_t capacity_hint);
void ev_engine_free(ev_engine_t *eng);
/* Binds fn/ctx to type; KS_EINPUT when type >= EV_MAX_TYPES, fn is NULL or
 * type is already bound. */
int ev_engine_register(ev_engine_t *eng, uint32_t type, ev_handler_fn fn, void *ctx);
/* Binds fn/ctx to the lowest unbound type and stores it in *type; KS_EINPUT
 * when fn is NULL, KS_ENOMEM when all EV_MAX_TYPES are bound. */
int ev_engine_type_new(ev_engine_t *eng, ev_handler_fn fn, void *ctx, uint32_t *type);
void ev_engine_set_check(ev_engine_t *eng, ev_check_fn fn, void *ctx);
/* Calls fn after every `every` dispatched events (0 or NULL: never), for
 * reports that must not change the run: no event is added, so results stay
 * the same. A nonzero return stops the run, as from a handler. */
void ev_engine_set_tick(ev_engine_t *eng, uint64_t every, ev_check_fn fn, void *ctx);
int64_t ev_engine_now(const ev_engine_t *eng);
/* Schedules at absolute time t (>= now); EV_NONE on failure. */
ev_handle_t ev_engine_at(ev_engine_t *eng, int64_t t, uint32_t type, uint32_t target,
			 uint64_t payload);
ev_handle_t ev_engine_after(ev_engine_t *eng, int64_t delay, uint32_t type,
			    uint32_t target, uint64_t payload);
int ev_engine_cancel(ev_engine_t *eng, ev_handle_t h);
int ev_engine_reschedule(ev_engine_t *eng, ev_handle_t h, int64_t t);
ev_queue_t *ev_engine_queue(ev_engine_t *eng);
/* Runs until the queue is empty, now would pass until_ns, or ev_engine_stop. */
int ev_engine_run(ev_engine_t *eng, int64_t until_ns);
void ev_engine_stop(ev_engine_t *eng);
uint64_t ev_engine_events(const ev_engine_t *eng); /* events dispatched so far */

#endif

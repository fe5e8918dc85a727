/* ev_engine — see ev_engine.h.
 *
 * Clock rules: an event may be scheduled at now or later, never earlier.
 * ev_engine_run dispatches every event with time <= until_ns; when it returns
 * because the queue ran dry or the next event lies beyond until_ns (not on
 * stop or error), a finite until_ns advances now to until_ns, as SimPy's
 * run(until=...) does, so the caller can continue from that instant. An
 * event of a type with no handler is a runtime error (KS_ERUNTIME). A stop
 * requested before run makes the next run return at once; the request is
 * cleared when run returns.
 */
#include "sim/engine/ev_engine.h"

#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/engine/ev_queue_internal.h"

typedef struct ev_slot_handler {
	ev_handler_fn fn;
	void *ctx;
} ev_slot_handler_t;

struct ev_engine {
	ev_queue_t *q;
	int64_t now;
	uint64_t events;
	int stop;
	ev_check_fn check;
	void *check_ctx;
	ev_check_fn tick; /* every tick_every events (progress reports) */
	void *tick_ctx;
	uint64_t tick_every, tick_left;
	ev_slot_handler_t handlers[EV_MAX_TYPES];
};

ev_engine_t *ev_engine_new(size_t capacity_hint)
{
	ev_engine_t *eng = calloc(1, sizeof *eng);
	if (!eng)
		return NULL;
	eng->q = ev_queue_new(capacity_hint);
	if (!eng->q) {
		free(eng);
		return NULL;
	}
	return eng;
}

void ev_engine_free(ev_engine_t *eng)
{
	if (!eng)
		return;
	ev_queue_free(eng->q);
	free(eng);
}

int ev_engine_register(ev_engine_t *eng, uint32_t type, ev_handler_fn fn, void *ctx)
{
	if (type >= EV_MAX_TYPES || !fn || eng->handlers[type].fn)
		return KS_EINPUT;
	eng->handlers[type].fn = fn;
	eng->handlers[type].ctx = ctx;
	return KS_OK;
}

int ev_engine_type_new(ev_engine_t *eng, ev_handler_fn fn, void *ctx, uint32_t *type)
{
	if (!fn)
		return KS_EINPUT;
	for (uint32_t t = 0; t < EV_MAX_TYPES; t++)
		if (!eng->handlers[t].fn) {
			*type = t;
			return ev_engine_register(eng, t, fn, ctx);
		}
	return KS_ENOMEM;
}

void ev_engine_set_check(ev_engine_t *eng, ev_check_fn fn, void *ctx)
{
	eng->check = fn;
	eng->check_ctx = ctx;
}

int64_t ev_engine_now(const ev_engine_t *eng)
{
	return eng->now;
}

ev_handle_t ev_engine_at(ev_engine_t *eng, int64_t t, uint32_t type, uint32_t target,
			 uint64_t payload)
{
	if (t < eng->now)
		return EV_NONE;
	return ev_push(eng->q, t, type, target, payload);
}

ev_handle_t ev_engine_after(ev_engine_t *eng, int64_t delay, uint32_t type,
			    uint32_t target, uint64_t payload)
{
	if (delay < 0 || delay > INT64_MAX - eng->now)
		return EV_NONE;
	return ev_push(eng->q, eng->now + delay, type, target, payload);
}

int ev_engine_cancel(ev_engine_t *eng, ev_handle_t h)
{
	return ev_cancel(eng->q, h);
}

int ev_engine_reschedule(ev_engine_t *eng, ev_handle_t h, int64_t t)
{
	if (t < eng->now)
		return -1;
	return ev_reschedule(eng->q, h, t);
}

ev_queue_t *ev_engine_queue(ev_engine_t *eng)
{
	return eng->q;
}

int ev_engine_run(ev_engine_t *eng, int64_t until_ns)
{
	ev_queue_t *q = eng->q;
	ev_event_t ev;
	int rc = KS_OK;
	for (;;) {
		if (eng->stop)
			break;
		if (ev_pop_until(q, until_ns, &ev)) {
			if (until_ns != INT64_MAX && until_ns > eng->now)
				eng->now = until_ns;
			break;
		}
		eng->now = ev.time;
		if (ev.type >= EV_MAX_TYPES || !eng->handlers[ev.type].fn) {
			rc = KS_ERUNTIME;
			break;
		}
		eng->events++;
		const ev_slot_handler_t *hd = &eng->handlers[ev.type];
		rc = hd->fn(hd->ctx, eng, &ev);
		if (rc)
			break;
		if (eng->check && (rc = eng->check(eng->check_ctx, eng)))
			break;
		if (eng->tick && !--eng->tick_left) {
			eng->tick_left = eng->tick_every;
			if ((rc = eng->tick(eng->tick_ctx, eng)))
				break;
		}
	}
	eng->stop = 0;
	return rc > 0 ? KS_ERUNTIME : rc;
}

void ev_engine_set_tick(ev_engine_t *eng, uint64_t every, ev_check_fn fn, void *ctx)
{
	eng->tick = every ? fn : NULL;
	eng->tick_ctx = ctx;
	eng->tick_every = eng->tick_left = every;
}

void ev_engine_stop(ev_engine_t *eng)
{
	eng->stop = 1;
}

uint64_t ev_engine_events(const ev_engine_t *eng)
{
	return eng->events;
}

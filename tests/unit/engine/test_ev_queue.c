/* Tests for sim/engine/ev_queue.c: order, ties, handles, cancel, reschedule, and a
 * long random run checked against a linear-scan reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim/engine/ev_queue.h"
#include "sim/engine/ev_queue_internal.h"

static void pop_expect(ev_queue_t *q, int64_t time, uint64_t payload)
{
	ev_event_t ev;
	assert_int_equal(ev_pop(q, &ev), 0);
	assert_int_equal(ev.time, time);
	assert_int_equal(ev.payload, payload);
}

/* Pops n events with want's times and payloads, in that order; the queue
 * is then empty and is freed. */
static void pop_all_expect(ev_queue_t *q, const ev_event_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pop_expect(q, want[i].time, want[i].payload);
	assert_int_equal(ev_size(q), 0);
	ev_queue_free(q);
}

/* The same for events whose payload is their time. */
static void pop_times_expect(ev_queue_t *q, const int64_t *times, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pop_expect(q, times[i], (uint64_t)times[i]);
	assert_int_equal(ev_size(q), 0);
	ev_queue_free(q);
}

/* A new queue holding n events, the i-th at t0 + i * dt ns with payload i;
 * their handles go to h[0 .. n-1]. */
static ev_queue_t *queue_of_n(ev_handle_t *h, int n, int64_t t0, int64_t dt)
{
	ev_queue_t *q = ev_queue_new(0);
	assert_non_null(q);
	for (int i = 0; i < n; i++)
		h[i] = ev_push(q, t0 + i * dt, 0, 0, (uint64_t)i);
	return q;
}

static void test_pop_returns_events_in_time_order(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(4);
	assert_non_null(q);
	int64_t times[] = {50, 10, 40, -5, 30, 20, 1000000000000LL, 0};
	for (size_t i = 0; i < 8; i++)
		assert_int_not_equal(ev_push(q, times[i], 1, 2, (uint64_t)times[i]), EV_NONE);
	assert_int_equal(ev_size(q), 8);
	int64_t sorted[] = {-5, 0, 10, 20, 30, 40, 50, 1000000000000LL};
	pop_times_expect(q, sorted, 8);
}

static void test_pop_copies_type_target_payload_and_seq(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_push(q, 7, 3, 99, 0xdeadbeefcafeULL);
	ev_push(q, 5, 4, 98, 12);
	/* everything but seq comes back as pushed, earliest first */
	const ev_event_t want[2] = {{.time = 5, .type = 4, .target = 98, .payload = 12},
	                            {.time = 7, .type = 3, .target = 99, .payload = 0xdeadbeefcafeULL}};
	ev_event_t got[2];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ev_pop(q, &got[i]), 0);
		assert_int_equal(got[i].time, want[i].time);
		assert_int_equal(got[i].type, want[i].type);
		assert_int_equal(got[i].target, want[i].target);
		assert_int_equal(got[i].payload, want[i].payload);
	}
	assert_true(got[0].seq > got[1].seq); /* pushed later */
	ev_queue_free(q);
}

static void test_equal_times_pop_in_insertion_order(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(8);
	/* Interleave two instants so the heap has to reorder. */
	for (uint64_t i = 0; i < 1000; i++)
		ev_push(q, (i % 2) ? 100 : 200, 0, 0, i);
	for (uint64_t i = 1; i < 1000; i += 2)
		pop_expect(q, 100, i);
	for (uint64_t i = 0; i < 1000; i += 2)
		pop_expect(q, 200, i);
	ev_queue_free(q);
}

static void test_empty_pop_returns_1_and_peek_is_int64_max(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_event_t ev;
	assert_int_equal(ev_pop(q, &ev), 1);
	assert_int_equal(ev_peek_time(q), INT64_MAX);
	ev_push(q, 3, 0, 0, 0);
	pop_expect(q, 3, 0);
	assert_int_equal(ev_pop(q, &ev), 1);
	assert_int_equal(ev_size(q), 0);
	ev_queue_free(q);
}

static void test_peek_shows_earliest_without_removing(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_push(q, 30, 0, 0, 0);
	assert_int_equal(ev_peek_time(q), 30);
	ev_push(q, 10, 0, 0, 0);
	assert_int_equal(ev_peek_time(q), 10);
	ev_push(q, 20, 0, 0, 0);
	assert_int_equal(ev_peek_time(q), 10);
	assert_int_equal(ev_size(q), 3);
	pop_expect(q, 10, 0);
	assert_int_equal(ev_peek_time(q), 20);
	ev_queue_free(q);
}

static void test_cancel_removes_event_and_rejects_stale_handle(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_handle_t a = ev_push(q, 10, 0, 0, 1);
	ev_handle_t b = ev_push(q, 20, 0, 0, 2);
	ev_handle_t c = ev_push(q, 30, 0, 0, 3);
	assert_true(ev_pending(q, b));
	assert_int_equal(ev_cancel(q, b), 0);
	assert_false(ev_pending(q, b));
	assert_int_equal(ev_size(q), 2);
	assert_int_equal(ev_cancel(q, b), -1);           /* twice */
	/* The free slot's next generation was never handed out. */
	assert_false(ev_pending(q, b + (1ULL << 32)));
	assert_int_equal(ev_cancel(q, b + (1ULL << 32)), -1);
	assert_int_equal(ev_reschedule(q, b, 5), -1);    /* stale */
	pop_expect(q, 10, 1);
	assert_int_equal(ev_cancel(q, a), -1);           /* already popped */
	/* The freed slots are reused; the old handles must stay dead. */
	ev_handle_t d = ev_push(q, 15, 0, 0, 4);
	ev_handle_t e = ev_push(q, 16, 0, 0, 5);
	assert_int_not_equal(d, a);
	assert_int_not_equal(d, b);
	assert_int_not_equal(e, a);
	assert_int_not_equal(e, b);
	assert_false(ev_pending(q, a));
	assert_false(ev_pending(q, b));
	assert_int_equal(ev_cancel(q, a), -1);
	assert_int_equal(ev_cancel(q, b), -1);
	assert_int_equal(ev_size(q), 3);
	/* Handles that were never issued. */
	assert_int_equal(ev_cancel(q, EV_NONE), -1);
	assert_int_equal(ev_cancel(q, (c & 0xffffffff00000000ULL) | 0xfffffff0u), -1);
	assert_int_equal(ev_cancel(q, c + (2ULL << 32)), -1);
	const ev_event_t rest[] = {
	    {.time = 15, .payload = 4}, {.time = 16, .payload = 5}, {.time = 30, .payload = 3}};
	pop_all_expect(q, rest, 3);
}

static void test_cancel_of_root_and_last_keeps_order(void **state)
{
	(void)state;
	ev_handle_t h[10];
	ev_queue_t *q = queue_of_n(h, 10, 0, 1);
	assert_int_equal(ev_cancel(q, h[0]), 0); /* root */
	assert_int_equal(ev_cancel(q, h[9]), 0); /* last pushed, latest */
	assert_int_equal(ev_cancel(q, h[5]), 0);
	int64_t want[] = {1, 2, 3, 4, 6, 7, 8};
	pop_times_expect(q, want, 7);
}

static void test_reschedule_earlier_and_later_moves_event(void **state)
{
	(void)state;
	ev_handle_t h[6];
	ev_queue_t *q = queue_of_n(h, 6, 10, 10); /* 10..60 */
	assert_int_equal(ev_reschedule(q, h[4], 5), 0);         /* 50 -> 5: earlier */
	assert_int_equal(ev_reschedule(q, h[0], 45), 0);        /* 10 -> 45: later */
	assert_true(ev_pending(q, h[4]));
	assert_true(ev_pending(q, h[0]));
	assert_int_equal(ev_peek_time(q), 5);
	const ev_event_t order[] = {{.time = 5, .payload = 4},  {.time = 20, .payload = 1},
	                            {.time = 30, .payload = 2}, {.time = 40, .payload = 3},
	                            {.time = 45, .payload = 0}, {.time = 60, .payload = 5}};
	pop_all_expect(q, order, 6);
}

static void test_reschedule_gets_fresh_seq_behind_equal_times(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_handle_t a = ev_push(q, 100, 0, 0, 1);
	ev_push(q, 100, 0, 0, 2);
	ev_push(q, 100, 0, 0, 3);
	/* Same time, but rescheduled: it now counts as inserted last. */
	assert_int_equal(ev_reschedule(q, a, 100), 0);
	const ev_event_t order[] = {
	    {.time = 100, .payload = 2}, {.time = 100, .payload = 3}, {.time = 100, .payload = 1}};
	pop_all_expect(q, order, 3);
}

static void test_queue_grows_far_past_capacity_hint(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(1);
	for (int64_t i = 0; i < 5000; i++)
		assert_int_not_equal(ev_push(q, (i * 7919) % 5000, 0, 0, 0), EV_NONE);
	assert_int_equal(ev_size(q), 5000);
	for (int64_t i = 0; i < 5000; i++) {
		ev_event_t ev;
		assert_int_equal(ev_pop(q, &ev), 0);
		assert_int_equal(ev.time, i);
	}
	ev_queue_free(q);
}

static void test_tie_key_wrap_renumbers_and_keeps_insertion_order(void **state)
{
	(void)state;
	ev_queue_t *q = ev_queue_new(0);
	ev_queue_test_set_tie_key(q, UINT32_MAX - 40);
	ev_handle_t h[100];
	/* 100 pushes cross the wrap: ties at three instants plus a reschedule. */
	for (uint64_t i = 0; i < 100; i++)
		h[i] = ev_push(q, (int64_t)(i % 3), 0, 0, i);
	assert_int_equal(ev_reschedule(q, h[3], 0), 0); /* now last among time 0 */
	assert_int_equal(ev_cancel(q, h[6]), 0);
	for (int64_t t = 0; t < 3; t++) {
		for (uint64_t i = (uint64_t)t; i < 100; i += 3) {
			if (i == 3 || i == 6)
				continue;
			pop_expect(q, t, i);
		}
		if (t == 0)
			pop_expect(q, 0, 3);
	}
	assert_int_equal(ev_size(q), 0);
	ev_queue_free(q);
}

/* ---- random operations against a reference ------------------------------- */

typedef struct ref_ev {
	int64_t time;
	uint64_t order; /* insertion order, renewed on reschedule */
	uint64_t payload;
	ev_handle_t h;
} ref_ev_t;

typedef struct ref {
	ref_ev_t *ev;
	size_t n;
	uint64_t next_order;
} ref_t;

static size_t ref_min(const ref_t *r)
{
	size_t m = 0;
	for (size_t i = 1; i < r->n; i++)
		if (r->ev[i].time < r->ev[m].time ||
		    (r->ev[i].time == r->ev[m].time && r->ev[i].order < r->ev[m].order))
			m = i;
	return m;
}

static void ref_remove(ref_t *r, size_t i)
{
	r->ev[i] = r->ev[--r->n];
}

/* xorshift64* (Vigna 2016): a self-contained stream for the test. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void run_random_ops(uint64_t seed, int ops, int64_t time_range, uint32_t key_start)
{
	ev_queue_t *q = ev_queue_new(16);
	ev_queue_test_set_tie_key(q, key_start);
	ref_t r = {.ev = calloc((size_t)ops, sizeof(ref_ev_t))};
	ev_handle_t *dead = calloc((size_t)ops, sizeof *dead);
	size_t ndead = 0;
	assert_non_null(r.ev);
	assert_non_null(dead);
	int64_t now = 0;
	uint64_t s = seed;
	for (int k = 0; k < ops; k++) {
		unsigned op = (unsigned)(rnd(&s) % 100);
		if (op < 45 || r.n == 0) { /* push, never before the last pop */
			int64_t t = now + (int64_t)(rnd(&s) % (uint64_t)time_range);
			uint64_t pl = rnd(&s);
			ev_handle_t h = ev_push(q, t, (uint32_t)(pl & 63), (uint32_t)(pl >> 40), pl);
			assert_int_not_equal(h, EV_NONE);
			r.ev[r.n++] = (ref_ev_t){t, r.next_order++, pl, h};
		} else if (op < 70) { /* pop */
			size_t m = ref_min(&r);
			ev_event_t ev;
			assert_int_equal(ev_peek_time(q), r.ev[m].time);
			assert_int_equal(ev_pop(q, &ev), 0);
			assert_int_equal(ev.time, r.ev[m].time);
			assert_int_equal(ev.payload, r.ev[m].payload);
			assert_int_equal(ev.type, (uint32_t)(r.ev[m].payload & 63));
			assert_int_equal(ev.target, (uint32_t)(r.ev[m].payload >> 40));
			now = ev.time;
			dead[ndead++] = r.ev[m].h;
			ref_remove(&r, m);
		} else if (op < 83) { /* cancel a random pending event */
			size_t i = (size_t)(rnd(&s) % r.n);
			assert_int_equal(ev_cancel(q, r.ev[i].h), 0);
			dead[ndead++] = r.ev[i].h;
			ref_remove(&r, i);
		} else if (op < 97) { /* reschedule, earlier or later, not before now */
			size_t i = (size_t)(rnd(&s) % r.n);
			int64_t t = now + (int64_t)(rnd(&s) % (uint64_t)time_range);
			assert_int_equal(ev_reschedule(q, r.ev[i].h, t), 0);
			r.ev[i].time = t;
			r.ev[i].order = r.next_order++;
		} else if (ndead) { /* a stale handle must be refused */
			ev_handle_t h = dead[rnd(&s) % ndead];
			assert_false(ev_pending(q, h));
			assert_int_equal(ev_cancel(q, h), -1);
			assert_int_equal(ev_reschedule(q, h, now), -1);
		}
		assert_int_equal(ev_size(q), r.n);
	}
	for (size_t i = 0; i < r.n; i++)
		assert_true(ev_pending(q, r.ev[i].h));
	while (r.n) { /* drain */
		size_t m = ref_min(&r);
		ev_event_t ev;
		assert_int_equal(ev_pop(q, &ev), 0);
		assert_int_equal(ev.time, r.ev[m].time);
		assert_int_equal(ev.payload, r.ev[m].payload);
		ref_remove(&r, m);
	}
	ev_event_t ev;
	assert_int_equal(ev_pop(q, &ev), 1);
	free(dead);
	free(r.ev);
	ev_queue_free(q);
}

static void test_100000_random_ops_match_reference(void **state)
{
	(void)state;
	run_random_ops(0x9e3779b97f4a7c15ULL, 100000, 1000, 0);
}

static void test_random_ops_with_many_ties_match_reference(void **state)
{
	(void)state;
	run_random_ops(12345, 50000, 4, 0); /* times in [now, now+3]: ties everywhere */
}

static void test_random_ops_across_tie_key_wraps_match_reference(void **state)
{
	(void)state;
	run_random_ops(777, 20000, 8, UINT32_MAX - 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pop_returns_events_in_time_order),
		cmocka_unit_test(test_pop_copies_type_target_payload_and_seq),
		cmocka_unit_test(test_equal_times_pop_in_insertion_order),
		cmocka_unit_test(test_empty_pop_returns_1_and_peek_is_int64_max),
		cmocka_unit_test(test_peek_shows_earliest_without_removing),
		cmocka_unit_test(test_cancel_removes_event_and_rejects_stale_handle),
		cmocka_unit_test(test_cancel_of_root_and_last_keeps_order),
		cmocka_unit_test(test_reschedule_earlier_and_later_moves_event),
		cmocka_unit_test(test_reschedule_gets_fresh_seq_behind_equal_times),
		cmocka_unit_test(test_queue_grows_far_past_capacity_hint),
		cmocka_unit_test(test_tie_key_wrap_renumbers_and_keeps_insertion_order),
		cmocka_unit_test(test_100000_random_ops_match_reference),
		cmocka_unit_test(test_random_ops_with_many_ties_match_reference),
		cmocka_unit_test(test_random_ops_across_tie_key_wraps_match_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for sim/engine/ev_engine.c: dispatch by type, clock, until bound, stop,
 * handler errors and the check hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/base/err.h"
#include "sim/engine/ev_engine.h"

#define LOG_MAX 64

typedef struct log {
	int n;
	uint32_t type[LOG_MAX];
	int64_t now[LOG_MAX];
	uint64_t payload[LOG_MAX];
	int fail_at;   /* 1-based event index whose handler fails; 0 none */
	int stop_at;   /* 1-based event index whose handler stops the run */
	int checks;
	int check_fail_at;
} log_t;

static int record(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	log_t *lg = ctx;
	assert_true(lg->n < LOG_MAX);
	assert_int_equal(ev_engine_now(eng), ev->time);
	lg->type[lg->n] = ev->type;
	lg->now[lg->n] = ev->time;
	lg->payload[lg->n] = ev->payload;
	lg->n++;
	if (lg->stop_at == lg->n)
		ev_engine_stop(eng);
	return lg->fail_at == lg->n ? KS_EIO : 0;
}

/* A second handler that tags its calls, to show dispatch by type. */
static int record_b(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	log_t *lg = ctx;
	int rc = record(lg, eng, ev);
	lg->payload[lg->n - 1] += 1000;
	return rc;
}

/* A new engine whose events of type 0 go to record, logging into lg. */
static ev_engine_t *recording_engine(log_t *lg)
{
	ev_engine_t *eng = ev_engine_new(0);
	assert_non_null(eng);
	assert_int_equal(ev_engine_register(eng, 0, record, lg), 0);
	return eng;
}

/* n events of type 0 at 10, 20, ..., 10 n ns with payloads 1 .. n. */
static void every_10_ns(ev_engine_t *eng, int n)
{
	for (int i = 1; i <= n; i++)
		assert_int_not_equal(ev_engine_at(eng, i * 10, 0, 0, (uint64_t)i), EV_NONE);
}

/* A recording engine (into lg) holding every_10_ns's n events. */
static ev_engine_t *recording_engine_every_10_ns(log_t *lg, int n)
{
	ev_engine_t *eng = recording_engine(lg);
	every_10_ns(eng, n);
	return eng;
}

/* Runs eng until `until` (ns) and checks that the run returned rc with lg
 * holding n events. */
static void run_n(ev_engine_t *eng, int64_t until, int rc, const log_t *lg, int n)
{
	assert_int_equal(ev_engine_run(eng, until), rc);
	assert_int_equal(lg->n, n);
}

/* run_n, and the clock is at now (ns). */
static void run_expect(ev_engine_t *eng, int64_t until, int rc, const log_t *lg, int n, int64_t now)
{
	run_n(eng, until, rc, lg, n);
	assert_int_equal(ev_engine_now(eng), now);
}

static int check(void *ctx, ev_engine_t *eng)
{
	log_t *lg = ctx;
	lg->checks++;
	/* The hook runs after the event's handler, at the event's time. */
	assert_int_equal(lg->checks, lg->n);
	assert_int_equal(ev_engine_now(eng), lg->now[lg->n - 1]);
	return lg->check_fail_at == lg->checks ? KS_ERUNTIME : 0;
}

static void test_dispatch_calls_handler_of_each_type_in_time_order(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = ev_engine_new(0);
	assert_non_null(eng);
	assert_int_equal(ev_engine_register(eng, 1, record, &lg), 0);
	assert_int_equal(ev_engine_register(eng, 7, record_b, &lg), 0);
	ev_engine_at(eng, 30, 7, 0, 3);
	ev_engine_at(eng, 10, 1, 0, 1);
	ev_engine_at(eng, 20, 7, 0, 2);
	ev_engine_at(eng, 20, 1, 0, 4); /* same instant: after the one pushed first */
	run_n(eng, INT64_MAX, 0, &lg, 4);
	assert_int_equal(lg.type[0], 1);
	assert_int_equal(lg.payload[0], 1);
	assert_int_equal(lg.type[1], 7);
	assert_int_equal(lg.payload[1], 1002);
	assert_int_equal(lg.type[2], 1);
	assert_int_equal(lg.payload[2], 4);
	assert_int_equal(lg.payload[3], 1003);
	assert_int_equal(ev_engine_now(eng), 30);
	assert_int_equal(ev_engine_events(eng), 4);
	ev_engine_free(eng);
}

/* Schedules a chain: each event schedules the next one `payload` ns later. */
static int chain(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	int *count = ctx;
	(*count)++;
	if (ev->payload > 1)
		return ev_engine_after(eng, 5, ev->type, ev->target, ev->payload - 1) == EV_NONE
			       ? KS_ENOMEM
			       : 0;
	return 0;
}

static void test_handlers_schedule_relative_to_now(void **state)
{
	(void)state;
	int count = 0;
	ev_engine_t *eng = ev_engine_new(0);
	ev_engine_register(eng, 0, chain, &count);
	ev_engine_after(eng, 100, 0, 0, 10);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(count, 10);
	assert_int_equal(ev_engine_now(eng), 100 + 9 * 5);
	ev_engine_free(eng);
}

static void test_handler_error_stops_run_and_is_returned(void **state)
{
	(void)state;
	log_t lg = {.fail_at = 2};
	ev_engine_t *eng = recording_engine_every_10_ns(&lg, 4);
	run_expect(eng, INT64_MAX, KS_EIO, &lg, 2, 20);
	assert_int_equal(ev_size(ev_engine_queue(eng)), 2);
	/* The run can be resumed after the failure. */
	lg.fail_at = 0;
	run_n(eng, INT64_MAX, 0, &lg, 4);
	ev_engine_free(eng);
}

static int positive(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ctx;
	(void)eng;
	(void)ev;
	return 3;
}

static void test_positive_handler_return_is_runtime_error(void **state)
{
	(void)state;
	ev_engine_t *eng = ev_engine_new(0);
	ev_engine_register(eng, 0, positive, NULL);
	ev_engine_at(eng, 1, 0, 0, 0);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), KS_ERUNTIME);
	ev_engine_free(eng);
}

static void test_event_without_handler_is_runtime_error(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine(&lg);
	ev_engine_at(eng, 1, 0, 0, 0);
	ev_engine_at(eng, 2, 5, 0, 0); /* type 5 has no handler */
	ev_engine_at(eng, 3, EV_MAX_TYPES + 1, 0, 0);
	run_n(eng, INT64_MAX, KS_ERUNTIME, &lg, 1);
	assert_int_equal(ev_engine_events(eng), 1);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), KS_ERUNTIME); /* out-of-range type */
	ev_engine_free(eng);
}

static void test_register_rejects_out_of_range_type_and_null(void **state)
{
	(void)state;
	ev_engine_t *eng = ev_engine_new(0);
	assert_int_equal(ev_engine_register(eng, EV_MAX_TYPES, record, NULL), KS_EINPUT);
	assert_int_equal(ev_engine_register(eng, 0, NULL, NULL), KS_EINPUT);
	assert_int_equal(ev_engine_register(eng, EV_MAX_TYPES - 1, record, NULL), 0);
	ev_engine_free(eng);
}

/* Types handed out skip the bound ones, are all different, dispatch to their
 * own handlers, and run out only when the table is full; a bound type
 * cannot be bound again, so two modules never share one. */
static void test_type_new_hands_out_each_free_type_once(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine(&lg);
	uint32_t a, b, t;
	assert_int_equal(ev_engine_type_new(eng, record, &lg, &a), 0);
	assert_int_equal(ev_engine_type_new(eng, record_b, &lg, &b), 0);
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(ev_engine_register(eng, a, record_b, &lg), KS_EINPUT);
	assert_int_equal(ev_engine_type_new(eng, NULL, &lg, &t), KS_EINPUT);
	ev_engine_at(eng, 10, b, 0, 1);
	ev_engine_at(eng, 20, a, 0, 2);
	run_n(eng, INT64_MAX, 0, &lg, 2);
	assert_int_equal(lg.payload[0], 1001); /* b's handler */
	assert_int_equal(lg.payload[1], 2);    /* a's, not rebound */
	for (uint32_t i = 3; i < EV_MAX_TYPES; i++) {
		assert_int_equal(ev_engine_type_new(eng, record, &lg, &t), 0);
		assert_int_equal(t, i);
	}
	assert_int_equal(ev_engine_type_new(eng, record, &lg, &t), KS_ENOMEM);
	ev_engine_free(eng);
}

static void test_run_until_stops_at_bound_and_advances_clock(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine_every_10_ns(&lg, 5);
	assert_int_equal(ev_engine_run(eng, 30), 0); /* inclusive bound */
	assert_int_equal(lg.n, 3);
	assert_int_equal(ev_engine_now(eng), 30);
	run_expect(eng, 45, 0, &lg, 4, 45); /* clock moves to the bound */
	/* Nothing may be scheduled before the clock. */
	assert_int_equal(ev_engine_at(eng, 44, 0, 0, 0), EV_NONE);
	assert_int_not_equal(ev_engine_at(eng, 45, 0, 0, 9), EV_NONE);
	run_n(eng, 1000, 0, &lg, 6);
	assert_int_equal(lg.now[4], 45);
	assert_int_equal(lg.now[5], 50);
	assert_int_equal(ev_engine_now(eng), 1000); /* queue ran dry before the bound */
	ev_engine_free(eng);
}

static void test_stop_from_handler_ends_run_after_that_event(void **state)
{
	(void)state;
	log_t lg = {.stop_at = 2};
	ev_engine_t *eng = recording_engine_every_10_ns(&lg, 4);
	run_expect(eng, 1000, 0, &lg, 2, 20); /* not moved to the bound */
	/* The stop request was consumed: the next run goes on. */
	run_n(eng, INT64_MAX, 0, &lg, 4);
	/* A stop before run returns at once, dispatching nothing. */
	ev_engine_at(eng, 50, 0, 0, 5);
	ev_engine_stop(eng);
	run_n(eng, INT64_MAX, 0, &lg, 4);
	ev_engine_free(eng);
}

static void test_check_hook_runs_after_every_event_and_its_error_stops(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine(&lg);
	for (int i = 1; i <= 3; i++)
		ev_engine_at(eng, i, 0, 0, 0);
	ev_engine_set_check(eng, check, &lg);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(lg.checks, 3);
	lg.check_fail_at = 5;
	for (int i = 4; i <= 8; i++)
		ev_engine_at(eng, i, 0, 0, 0);
	run_n(eng, INT64_MAX, KS_ERUNTIME, &lg, 5);
	/* Unset: no more checks. */
	ev_engine_set_check(eng, NULL, NULL);
	run_n(eng, INT64_MAX, 0, &lg, 8);
	assert_int_equal(lg.checks, 5);
	ev_engine_free(eng);
}

static void test_cancel_and_reschedule_through_engine(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine(&lg);
	ev_handle_t a = ev_engine_at(eng, 10, 0, 0, 1);
	ev_handle_t b = ev_engine_at(eng, 20, 0, 0, 2);
	ev_handle_t c = ev_engine_at(eng, 30, 0, 0, 3);
	assert_int_equal(ev_engine_cancel(eng, b), 0);
	assert_int_equal(ev_engine_cancel(eng, b), -1);
	assert_int_equal(ev_engine_reschedule(eng, c, 5), 0);
	run_n(eng, 7, 0, &lg, 1);
	assert_int_equal(lg.payload[0], 3);
	/* Rescheduling into the past is refused; the event stays where it was. */
	assert_int_equal(ev_engine_reschedule(eng, a, 6), -1);
	assert_true(ev_pending(ev_engine_queue(eng), a));
	run_n(eng, INT64_MAX, 0, &lg, 2);
	assert_int_equal(lg.now[1], 10);
	ev_engine_free(eng);
}

static void test_after_rejects_negative_and_overflowing_delays(void **state)
{
	(void)state;
	log_t lg = {0};
	ev_engine_t *eng = recording_engine(&lg);
	assert_int_equal(ev_engine_after(eng, -1, 0, 0, 0), EV_NONE);
	assert_int_not_equal(ev_engine_after(eng, 10, 0, 0, 0), EV_NONE);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(ev_engine_now(eng), 10);
	assert_int_equal(ev_engine_after(eng, INT64_MAX, 0, 0, 0), EV_NONE);
	assert_int_equal(ev_engine_after(eng, INT64_MAX - 9, 0, 0, 0), EV_NONE);
	assert_int_not_equal(ev_engine_after(eng, INT64_MAX - 10, 0, 0, 0), EV_NONE);
	assert_int_equal(ev_engine_run(eng, INT64_MAX), 0);
	assert_int_equal(ev_engine_now(eng), INT64_MAX);
	ev_engine_free(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch_calls_handler_of_each_type_in_time_order),
		cmocka_unit_test(test_handlers_schedule_relative_to_now),
		cmocka_unit_test(test_handler_error_stops_run_and_is_returned),
		cmocka_unit_test(test_positive_handler_return_is_runtime_error),
		cmocka_unit_test(test_event_without_handler_is_runtime_error),
		cmocka_unit_test(test_register_rejects_out_of_range_type_and_null),
		cmocka_unit_test(test_run_until_stops_at_bound_and_advances_clock),
		cmocka_unit_test(test_stop_from_handler_ends_run_after_that_event),
		cmocka_unit_test(test_check_hook_runs_after_every_event_and_its_error_stops),
		cmocka_unit_test(test_cancel_and_reschedule_through_engine),
		cmocka_unit_test(test_after_rejects_negative_and_overflowing_delays),
		cmocka_unit_test(test_type_new_hands_out_each_free_type_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The lookahead predictor (policies/pol_pred_lookahead.c) on hand-built
 * request lives: arrivals, admissions (STARTED) and ends (ENDED), each with
 * the forecast worked out beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pol.h"
#include "tests/fixtures/pol_fake.h"
#include "tests/fixtures/test_main.h"

#define S 1000000000LL

static const struct pol_predictor_ops *P(const pol_handle_t *h)
{
	return (const void *)h->ops;
}

/* A prompt of `shared` blocks of family `fam` then `own` blocks unique to
 * request `id`, then n_out output ids unique to it (ids in b, n_blocks
 * returned: the prompt's). */
static uint32_t prompt(uint64_t *b, uint64_t fam, uint32_t shared, uint64_t id, uint32_t own,
                       uint32_t n_out)
{
	for (uint32_t i = 0; i < shared; i++)
		b[i] = fam * 1000 + i;
	for (uint32_t i = 0; i < own + n_out; i++)
		b[shared + i] = (id << 20) + 7777 + i;
	return shared + own;
}

static void arrive_sess(pol_handle_t *h, int64_t t, uint64_t id, uint64_t fam, uint32_t shared,
                        uint32_t own, int32_t inst, uint64_t session, uint32_t n_out)
{
	uint64_t b[64];
	uint32_t n = prompt(b, fam, shared, id, own, n_out);
	pol_arrival_t a = {t, b, n, inst};
	err_t e;
	assert_int_equal(P(h)->observe(h->state, &a, &e), 0);
	pol_req_event_t ev = {POL_REQ_ROUTED, t, id, inst, 0, b, n, n_out, session};
	if (inst >= 0) /* as the simulator does (pol.h "request life") */
		assert_int_equal(P(h)->on_request(h->state, &ev, &e), 0);
}

static void arrive(pol_handle_t *h, int64_t t, uint64_t id, uint64_t fam, uint32_t shared,
                   uint32_t own, int32_t inst)
{
	arrive_sess(h, t, id, fam, shared, own, inst, 0, 0);
}

static void event(pol_handle_t *h, pol_req_phase_t ph, int64_t t, uint64_t id, int32_t inst,
                  int completed)
{
	pol_req_event_t ev = {ph, t, id, inst, completed, NULL, 0, 0, 0};
	err_t e;
	assert_int_equal(P(h)->on_request(h->state, &ev, &e), 0);
}

static pol_forecast_t forecast(pol_handle_t *h, int64_t now)
{
	pol_forecast_t fc;
	err_t e;
	assert_int_equal(P(h)->forecast(h->state, now, 10 * S, &fc, &e), 0);
	return fc;
}

static pol_handle_t open_la(const char *over)
{
	return fk_open(POL_PREDICTOR, "lookahead", over, 5);
}

/* ---- queue ---------------------------------------------------------------- */

/* A (inst 0) brings family 1's 8 blocks; B (inst 3) shares them and waits:
 * its 8-block prefix is forecast for instance 3, once, until it is
 * admitted. A itself shared nothing with an earlier prompt: no entry. */
static void test_lookahead_forecasts_queued_prefix_for_its_instance(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_session=false");
	arrive(&h, 0, 1, 1, 8, 2, 0);
	assert_int_equal(forecast(&h, S / 10).n, 0);
	arrive(&h, S, 2, 1, 8, 2, 3);
	pol_forecast_t fc = forecast(&h, S + S / 10);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.e[0].n_blocks, 8); /* the shared part, not B's own blocks */
	assert_int_equal(fc.e[0].blocks[7], 1007);
	assert_true(fc.e[0].expected == 1);
	assert_int_equal(fc.e[0].n_likely, 1);
	assert_int_equal(fc.e[0].likely[0], 3);
	event(&h, POL_REQ_STARTED, 2 * S, 2, 3, 0);
	assert_int_equal(forecast(&h, 2 * S).n, 0); /* left the queue */
	pol_close(&h);
}

/* Three requests wait on family 1's prefix, two at instance 4 and one at 1:
 * one entry expecting 3, instance 4 first. */
static void test_lookahead_merges_queued_requests_of_one_prefix(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_session=false");
	arrive(&h, 0, 1, 1, 8, 2, 0);
	arrive(&h, S, 2, 1, 8, 2, 1);
	arrive(&h, S, 3, 1, 8, 2, 4);
	arrive(&h, S, 4, 1, 8, 2, 4);
	pol_forecast_t fc = forecast(&h, 2 * S);
	assert_int_equal(fc.n, 1);
	assert_true(fc.e[0].expected == 3);
	assert_int_equal(fc.e[0].n_likely, 2);
	assert_int_equal(fc.e[0].likely[0], 4);
	assert_int_equal(fc.e[0].likely[1], 1);
	pol_close(&h);
}

/* An idle instance admits a request inside the call that routes it, before
 * the predictor observes it (sim_arrival.c): that request never waited. */
static void test_lookahead_request_admitted_before_observed_is_not_queued(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_session=false");
	arrive(&h, 0, 1, 1, 8, 2, 0);
	event(&h, POL_REQ_STARTED, S, 2, 3, 0);
	arrive(&h, S, 2, 1, 8, 2, 3);
	assert_int_equal(forecast(&h, S).n, 0);
	pol_close(&h);
}

/* la_min_blocks = 2: a request that shares only the one-block system
 * prompt with earlier ones (Mooncake's hash id 0) is not forecast. */
static void test_lookahead_ignores_prefixes_shorter_than_min_blocks(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_session=false");
	arrive(&h, 0, 1, 1, 1, 6, 0);
	arrive(&h, S, 2, 1, 1, 6, 1);
	assert_int_equal(forecast(&h, S).n, 0);
	pol_close(&h);
}

/* ---- sessions ------------------------------------------------------------- */

/* Turn 1 (10 blocks: family 1's 8 + 2 own, no session id) runs on
 * instance 2. Nothing is forecast while it runs; once it completes its 10
 * prompt blocks are the next turn's prefix, forecast for instance 2 with
 * la_next_p expected; the next turn (its prompt extends them) ends it. */
static void test_lookahead_forecasts_next_turn_after_previous_ends_not_before(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_queue=false");
	arrive(&h, 0, 1, 1, 8, 2, 2);
	event(&h, POL_REQ_STARTED, 0, 1, 2, 0);
	assert_int_equal(forecast(&h, S).n, 0); /* running: not before it ends */
	event(&h, POL_REQ_ENDED, 5 * S, 1, 2, 1);
	pol_forecast_t fc = forecast(&h, 6 * S);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.e[0].n_blocks, 10);
	assert_int_equal(fc.e[0].blocks[9], (1ULL << 20) + 7777 + 1);
	assert_true(fabs(fc.e[0].expected - 0.37) < 1e-12);
	assert_int_equal(fc.e[0].n_likely, 1);
	assert_int_equal(fc.e[0].likely[0], 2);
	/* turn 2: turn 1's 10 blocks (family 1's 8 + request 1's 2) + 3 new */
	uint64_t b[16];
	prompt(b, 1, 8, 1, 2, 0);
	for (uint32_t i = 10; i < 13; i++)
		b[i] = 99000 + i;
	pol_arrival_t a = {60 * S, b, 13, 5};
	err_t e;
	assert_int_equal(P(&h)->observe(h.state, &a, &e), 0);
	assert_int_equal(forecast(&h, 60 * S).n, 0); /* the next turn came */
	pol_close(&h);
}

/* An open session that no next turn extends leaves after la_session_s. */
static void test_lookahead_session_window_ends(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_queue=false,la_session_s=30");
	arrive(&h, 0, 1, 1, 8, 2, 2);
	event(&h, POL_REQ_ENDED, 5 * S, 1, 2, 1);
	assert_int_equal(forecast(&h, 35 * S).n, 1);
	assert_int_equal(forecast(&h, 35 * S + 1).n, 0);
	pol_close(&h);
}

/* With a session id the reader continues the chain over the output
 * (traces/tr.h), so the next turn's prefix includes the output's 3 full
 * blocks; a request that did not complete opens no session. */
static void test_lookahead_session_id_adds_output_blocks(void **st)
{
	(void)st;
	pol_handle_t h = open_la("la_queue=false");
	arrive_sess(&h, 0, 1, 1, 8, 2, 1, 77, 3);
	arrive_sess(&h, 0, 2, 2, 8, 2, 1, 78, 3);
	event(&h, POL_REQ_ENDED, 4 * S, 1, 1, 1);
	event(&h, POL_REQ_ENDED, 4 * S, 2, 1, 0); /* not completed */
	pol_forecast_t fc = forecast(&h, 5 * S);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.e[0].n_blocks, 13);
	assert_int_equal(fc.e[0].blocks[0], 1000);
	pol_close(&h);
}

/* ---- nothing to say ----------------------------------------------------- */

/* No request waits (each admitted at once) and none has ended: nothing is
 * forecast; with both parts off nothing is forecast even when requests
 * wait and turns end. */
static void test_lookahead_forecasts_nothing_without_queue_or_session(void **st)
{
	(void)st;
	pol_handle_t h = open_la(NULL);
	for (uint64_t id = 1; id <= 5; id++) {
		event(&h, POL_REQ_STARTED, (int64_t)id * S, id, 0, 0);
		arrive(&h, (int64_t)id * S, id, 1, 8, 2, 0);
	}
	assert_int_equal(forecast(&h, 6 * S).n, 0);
	pol_close(&h);

	h = open_la("la_queue=false,la_session=false");
	for (uint64_t id = 1; id <= 5; id++)
		arrive(&h, (int64_t)id * S, id, 1, 8, 2, (int32_t)id);
	event(&h, POL_REQ_ENDED, 7 * S, 3, 3, 1);
	assert_int_equal(forecast(&h, 8 * S).n, 0);
	pol_close(&h);
}

/* Registered: `kvsim policies` and pol_find list it among the predictors. */
static void test_lookahead_is_registered(void **st)
{
	(void)st;
	const pol_base_t *b = pol_find(NULL, POL_PREDICTOR, "lookahead");
	assert_non_null(b);
	assert_true(b->version >= 4);
	assert_non_null(((const struct pol_predictor_ops *)(const void *)b)->on_request);
	char *names = pol_names(NULL, POL_PREDICTOR);
	assert_non_null(strstr(names, "lookahead"));
	free(names);
}

TEST_MAIN(cmocka_unit_test(test_lookahead_forecasts_queued_prefix_for_its_instance),
          cmocka_unit_test(test_lookahead_merges_queued_requests_of_one_prefix),
          cmocka_unit_test(test_lookahead_request_admitted_before_observed_is_not_queued),
          cmocka_unit_test(test_lookahead_ignores_prefixes_shorter_than_min_blocks),
          cmocka_unit_test(test_lookahead_forecasts_next_turn_after_previous_ends_not_before),
          cmocka_unit_test(test_lookahead_session_window_ends),
          cmocka_unit_test(test_lookahead_session_id_adds_output_blocks),
          cmocka_unit_test(test_lookahead_forecasts_nothing_without_queue_or_session),
          cmocka_unit_test(test_lookahead_is_registered))

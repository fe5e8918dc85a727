/* Speculative replication under disaggregation (sim/run/sim_disagg.h,
 * sim/run/sim_copy.c): the replication policies see the prefill pool only,
 * so every speculative copy runs between prefill instances; handoff flows
 * are foreground and never counted as speculative background bytes; the
 * disagg.* summary metrics equal what /transfers and /requests hold, and
 * are 0 / NaN with disagg off. On the built-in default experiment (fan-out
 * bursts, 4 nodes of 8 GPUs, TP4: 2 prefill and 2 decode nodes). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"

static void near(double got, double want, double tol, const char *what)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("%s: %.17g, want %.17g", what, got, want);
}

static const char *spec_sets[] = {"cluster.disagg=true", "cluster.prefill_share=0.5",
				  "policy.replication.name=speculative",
				  "policy.predictor.name=oracle"};

static void test_speculative_copies_stay_in_the_prefill_pool(void **st)
{
	(void)st;
	sim_results_t r = sf_run(NULL, spec_sets, 4);
	const int32_t n_prefill = 4; /* 2 nodes x 2 instances of TP4 */
	assert_true(sf_metric(&r, "spec.replicas_created") > 0);
	size_t bg = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		const res_transfer_t *x = &r.xfer[i];
		if (x->klass == XFER_HANDOFF) {
			assert_true(x->src_instance < n_prefill && x->dst_instance >= n_prefill);
			continue;
		}
		/* peer and host copies alike: no decode instance on either end */
		if (x->src_instance >= n_prefill || x->dst_instance >= n_prefill)
			fail_msg("transfer %zu (class %d) %d -> %d touches the decode pool", i,
				 x->klass, x->src_instance, x->dst_instance);
		bg += x->klass == XFER_BACKGROUND;
	}
	assert_true(bg > 0);
	for (size_t i = 0; i < r.n_req; i++)
		if (r.req[i].status == REQ_COMPLETED) {
			assert_true(r.req[i].instance < n_prefill);
			assert_true(r.req[i].decode_instance >= n_prefill);
		}
	sim_results_free(&r);
}

/* Every byte in /transfers is in the summary once, by class: background
 * (speculative) bytes exclude the handoffs, which are foreground and also
 * disagg.handoff_bytes. */
static void test_handoff_bytes_are_foreground_not_speculative(void **st)
{
	(void)st;
	sim_results_t r = sf_run(NULL, spec_sets, 4);
	double fg = 0, bg = 0, hoff = 0, wait = 0;
	size_t n_wait = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		const res_transfer_t *x = &r.xfer[i];
		if (x->klass == XFER_BACKGROUND)
			bg += (double)x->bytes;
		else
			fg += (double)x->bytes;
		if (x->klass == XFER_HANDOFF)
			hoff += (double)x->bytes;
	}
	for (size_t i = 0; i < r.n_req; i++)
		if (r.req[i].handoff_wait_ns >= 0) {
			wait += (double)r.req[i].handoff_wait_ns / 1e6;
			n_wait++;
		}
	assert_true(hoff > 0 && bg > 0 && n_wait > 0);
	near(sf_metric(&r, "disagg.handoff_bytes"), hoff, 0, "handoff bytes");
	near(sf_metric(&r, "spec.bytes_bg"), bg, 0, "spec.bytes_bg");
	near(sf_metric(&r, "spec.bytes_fg"), fg, 0, "spec.bytes_fg");
	near(sf_metric(&r, "bytes_bg"), bg, 0, "bytes_bg");
	near(sf_metric(&r, "disagg.handoff_wait_mean_ms"), wait / n_wait, 1e-12 * wait / n_wait,
	     "handoff wait");
	sim_results_free(&r);
}

static void test_disagg_metrics_are_zero_and_nan_when_off(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle"};
	sim_results_t r = sf_run(NULL, sets, 2);
	assert_true(sf_metric(&r, "spec.bytes_bg") > 0);
	near(sf_metric(&r, "disagg.handoff_bytes"), 0, 0, "handoff bytes off");
	assert_true(isnan(sf_metric(&r, "disagg.handoff_wait_mean_ms")));
	/* the last two rows of /summary, in the recorder's order */
	assert_string_equal(r.metric[r.n_metric - 2].name, "disagg.handoff_bytes");
	assert_string_equal(r.metric[r.n_metric - 1].name, "disagg.handoff_wait_mean_ms");
	sim_results_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_speculative_copies_stay_in_the_prefill_pool),
	    cmocka_unit_test(test_handoff_bytes_are_foreground_not_speculative),
	    cmocka_unit_test(test_disagg_metrics_are_zero_and_nan_when_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

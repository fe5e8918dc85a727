/* The decision trace (output.decisions, sim/run/sim_decisions.c) inside
 * whole runs of the default experiment: a row per routed request whose
 * outcome and instance agree with /requests, a regret of exactly 0 under
 * the router that minimises the estimate and above 0 for some decisions of
 * one that ignores it, and off leaves the results as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

static const res_request_t *find_req(const sim_results_t *r, uint64_t id)
{
	for (size_t i = 0; i < r->n_req; i++)
		if (r->req[i].id == id)
			return &r->req[i];
	return NULL;
}

/* Each row's options are the lowest estimates in order, its regret is
 * chosen minus best, best the first option's. */
static void assert_rows_consistent(const sim_results_t *r)
{
	for (size_t i = 0; i < r->n_dec; i++) {
		const res_decision_t *d = &r->dec[i];
		if (d->kind != DEC_ROUTE)
			continue;
		assert_true(d->n_options >= 1);
		assert_int_equal(d->regret_ns, d->chosen_est_ns - d->best_est_ns);
		assert_true(d->regret_ns >= 0);
		assert_int_equal(d->opt0_score, d->best_est_ns);
		const int64_t s[] = {d->opt0_score, d->opt1_score, d->opt2_score, d->opt3_score};
		const int32_t o[] = {d->opt0_inst, d->opt1_inst, d->opt2_inst, d->opt3_inst};
		for (uint32_t k = 0; k < DEC_TOP_K; k++) {
			assert_int_equal(o[k] < 0, k >= d->n_options);
			if (k && o[k] >= 0)
				assert_true(s[k] >= s[k - 1]);
		}
	}
}

static void test_decisions_one_row_per_routed_request_matching_requests(void **st)
{
	(void)st;
	/* slo_reject with a tight SLO rejects some routed requests at
	 * admission, max_pending 1 some at a full queue */
	const char *sets[] = {"output.decisions=true", "policy.admission.name=slo_reject",
	                      "slo.ttft_ms=400", "experiment.max_pending=1",
	                      /* the slower engine this scenario was sized on */
	                      "compute.allreduce=nccl"};
	sim_results_t r = sf_run(NULL, sets, 5);
	assert_true(r.decisions);
	size_t by_out[3] = {0}, routed = 0, n_route = 0;
	for (size_t i = 0; i < r.n_dec; i++) {
		const res_decision_t *d = &r.dec[i];
		if (d->kind == DEC_ADMIT || d->kind == DEC_EVICT)
			continue; /* test_sim_decisions_evict.c */
		assert_int_equal(d->kind, DEC_ROUTE); /* no replication, no copies */
		n_route++;
		const res_request_t *q = find_req(&r, d->id);
		assert_non_null(q);
		by_out[d->outcome]++;
		if (d->outcome == DEC_OUT_OK)
			assert_int_equal(d->chosen, q->instance);
		int want = d->outcome == DEC_OUT_REJECTED_ADMISSION  ? REQ_REJECTED_SLO
		           : d->outcome == DEC_OUT_REJECTED_OVERLOAD ? REQ_REJECTED_OVERLOAD
		                                                     : -1;
		if (want >= 0)
			assert_int_equal(q->status, want);
		else
			assert_true(q->status == REQ_COMPLETED || q->status == REQ_UNFINISHED);
	}
	for (size_t i = 0; i < r.n_req; i++)
		routed += r.req[i].status == REQ_COMPLETED || r.req[i].status == REQ_UNFINISHED ||
		          r.req[i].status == REQ_REJECTED_SLO ||
		          r.req[i].status == REQ_REJECTED_OVERLOAD;
	assert_int_equal(n_route, routed);
	assert_true(by_out[DEC_OUT_OK] > 0);
	assert_true(by_out[DEC_OUT_REJECTED_ADMISSION] > 0);
	assert_true(by_out[DEC_OUT_REJECTED_OVERLOAD] > 0);
	assert_rows_consistent(&r);
	sim_results_free(&r);
}

static void test_decisions_regret_zero_under_min_ttft_not_under_least_load(void **st)
{
	(void)st;
	const char *mt[] = {"output.decisions=true", "policy.routing.name=min_ttft"};
	sim_results_t r = sf_run(NULL, mt, 2);
	assert_true(r.n_dec > 0);
	assert_rows_consistent(&r);
	for (size_t i = 0; i < r.n_dec; i++)
		if (r.dec[i].kind == DEC_ROUTE)
			assert_int_equal(r.dec[i].regret_ns, 0);
	sim_results_free(&r);
	const char *ll[] = {"output.decisions=true", "policy.routing.name=least_load"};
	r = sf_run(NULL, ll, 2);
	assert_rows_consistent(&r);
	size_t pos = 0;
	for (size_t i = 0; i < r.n_dec; i++)
		pos += r.dec[i].regret_ns > 0;
	assert_true(pos > 0);
	sim_results_free(&r);
}

static void test_decisions_off_leaves_results_identical(void **st)
{
	(void)st;
	const char *on[] = {"output.decisions=true"};
	sim_results_t off = sf_run(NULL, NULL, 0), a = sf_run(NULL, on, 1), b = sf_run(NULL, on, 1);
	assert_false(off.decisions);
	assert_int_equal(off.n_dec, 0);
	assert_int_equal(off.n_req, a.n_req);
	assert_memory_equal(off.req, a.req, off.n_req * sizeof *off.req);
	assert_int_equal(off.n_metric, a.n_metric);
	for (size_t i = 0; i < off.n_metric; i++)
		if (strcmp(off.metric[i].name, "sim_events"))
			assert_memory_equal(&off.metric[i], &a.metric[i], sizeof off.metric[i]);
	/* and the trace itself is the same for the same seed */
	assert_int_equal(a.n_dec, b.n_dec);
	assert_memory_equal(a.dec, b.dec, a.n_dec * sizeof *a.dec);
	sim_results_free(&off);
	sim_results_free(&a);
	sim_results_free(&b);
}

/* The started DEC_COPY row a /transfers row's copy came from: asked for
 * at its requested_ns from its source to its destination, for at least the
 * blocks it moved (those already there are not moved); NULL when none. */
static const res_decision_t *find_copy(const sim_results_t *r, const res_transfer_t *x)
{
	for (size_t i = 0; i < r->n_dec; i++) {
		const res_decision_t *d = &r->dec[i];
		if (d->kind == DEC_COPY && d->outcome == DEC_OUT_OK && d->t_ns == x->requested_ns &&
		    d->src == x->src_instance && d->chosen == x->dst_instance && x->blocks <= d->blocks)
			return d;
	}
	return NULL;
}

/* Speculative replication's copies are rows: every background flow in
 * /transfers is one of a started copy row's. */
static void test_decisions_copy_rows_are_the_policy_copies_in_transfers(void **st)
{
	(void)st;
	const char *sets[] = {"output.decisions=true", "policy.replication.name=speculative",
	                      "policy.predictor.name=oracle"};
	sim_results_t r = sf_run(NULL, sets, 3);
	size_t bg = 0, routes = 0;
	for (size_t i = 0; i < r.n_dec; i++) {
		routes += r.dec[i].kind == DEC_ROUTE;
		if (r.dec[i].kind == DEC_COPY)
			assert_int_equal(r.dec[i].regret_ns, -1);
	}
	for (size_t j = 0; j < r.n_xfer; j++) {
		if (r.xfer[j].klass != XFER_BACKGROUND)
			continue;
		bg++;
		const res_decision_t *d = find_copy(&r, &r.xfer[j]);
		assert_non_null(d);
		assert_int_equal(d->hinted, 1);
	}
	assert_true(bg > 0);
	assert_true(routes > 0);
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_decisions_one_row_per_routed_request_matching_requests),
          cmocka_unit_test(test_decisions_regret_zero_under_min_ttft_not_under_least_load),
          cmocka_unit_test(test_decisions_off_leaves_results_identical),
          cmocka_unit_test(test_decisions_copy_rows_are_the_policy_copies_in_transfers))

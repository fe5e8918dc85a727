/* Cold join (sim/run/sim_join.h) and the crowd workload in whole runs: no
 * router or replication policy reaches an instance before it joins, a
 * joined instance serves and starts with an empty cache, bad join keys are
 * config errors naming the key, and on a crowd (tr_gen_crowd.c) speculative
 * copies from the warm-up's KV land before the crowd, which fresh fan-out
 * prefixes never allow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/test_main.h"

#define NS 1000000000LL

/* The default experiment's 8 instances; the last 3 join at 8, 16, 16 s. */
static const char *const join_sets[] = {
    "cluster.join_instances=3", "cluster.join_at_s=8,16,16", "trace.gen=crowd",
    "trace.duration_s=40",      "trace.crowd_count=2",       "trace.crowd_size=24",
    "trace.crowd_bg_rate=6",
};
#define N_JOIN_SETS (sizeof join_sets / sizeof join_sets[0])
static const int64_t join_ns[8] = {0, 0, 0, 0, 0, 8 * NS, 16 * NS, 16 * NS};

static int run_sets(const char *const *base, size_t nb, const char *const *more, size_t nm,
		    sim_results_t *r, err_t *e)
{
	const char *sets[32];
	assert_true(nb + nm <= 32);
	memcpy(sets, base, nb * sizeof *sets);
	memcpy(sets + nb, more, nm * sizeof *sets);
	cfg_t *cfg = NULL;
	int rc = cli_load_config(NULL, sets, (int)(nb + nm), &cfg, e);
	if (!rc)
		rc = sim_run(cfg, NULL, r, e);
	cli_config_free(cfg);
	return rc;
}

static sim_results_t run_ok(const char *const *base, size_t nb, const char *const *more,
			    size_t nm)
{
	sim_results_t r;
	err_t e = {0};
	if (run_sets(base, nb, more, nm, &r, &e))
		fail_msg("%s", e.msg);
	return r;
}

/* Requests routed to cold instance i arrived at or after its join time;
 * returns how many of them the joined instances got. */
static size_t check_joined_after(const sim_results_t *r, const char *what)
{
	size_t on_joined = 0;
	for (size_t k = 0; k < r->n_req; k++) {
		const res_request_t *q = &r->req[k];
		if (q->instance < 5)
			continue;
		if (q->arrival_ns < join_ns[q->instance])
			fail_msg("%s: request %llu at %.3f s on instance %d, which joins at %.0f s", what,
				 (unsigned long long)q->id, q->arrival_ns / 1e9, q->instance,
				 join_ns[q->instance] / 1e9);
		on_joined++;
	}
	return on_joined;
}

/* Every registered router, on the computed view and with two router
 * replicas on the events view (their own load indexes and KV indexes). */
static void test_no_router_reaches_an_instance_before_it_joins(void **st)
{
	(void)st;
	size_t n = pol_count(NULL, POL_ROUTING);
	assert_true(n >= 9);
	for (size_t i = 0; i < n; i++) {
		const char *name = pol_at(NULL, POL_ROUTING, i)->name;
		char set[128];
		snprintf(set, sizeof set, "policy.routing.name=%s", name);
		const char *more[] = {set, "policy.routing.view=events", "policy.routing.replicas=2"};
		for (size_t nm = 1; nm <= 3; nm += 2) {
			sim_results_t r = run_ok(join_sets, N_JOIN_SETS, more, nm);
			check_joined_after(&r, name);
			assert_true(sim_results_get(&r, "join.instances") == 3);
			assert_true(sim_results_get(&r, "join.first_s") == 8);
			assert_true(sim_results_get(&r, "join.last_s") == 16);
			sim_results_free(&r);
		}
	}
}

/* A joined instance serves, and its first request finds nothing cached
 * there (no copies, no peer fetch) although the default experiment's shared
 * prompts are hot elsewhere. With the speculative policy and the oracle,
 * no copy goes to an instance before it joins. */
static void test_joined_instance_serves_from_an_empty_cache(void **st)
{
	(void)st;
	const char *ll[] = {"policy.routing.name=least_load"};
	sim_results_t r = run_ok(join_sets, N_JOIN_SETS, ll, 1);
	assert_true(check_joined_after(&r, "least_load") > 0);
	for (int inst = 5; inst < 8; inst++) {
		const res_request_t *first = NULL;
		for (size_t k = 0; k < r.n_req; k++)
			if (r.req[k].instance == inst &&
			    (!first || r.req[k].arrival_ns < first->arrival_ns))
				first = &r.req[k];
		assert_non_null(first);
		assert_int_equal(first->tok_local, 0);
	}
	sim_results_free(&r);
	const char *spec[] = {"policy.routing.name=least_load",
			      "policy.replication.name=speculative", "policy.predictor.name=oracle"};
	r = run_ok(join_sets, N_JOIN_SETS, spec, 3);
	size_t bg = 0, to_joined = 0;
	for (size_t k = 0; k < r.n_xfer; k++) {
		const res_transfer_t *x = &r.xfer[k];
		if (x->dst_instance >= 5 && x->start_ns < join_ns[x->dst_instance])
			fail_msg("copy to instance %d at %.3f s, before it joins", x->dst_instance,
				 x->start_ns / 1e9);
		bg += x->klass == XFER_BACKGROUND;
		to_joined += x->dst_instance >= 5;
	}
	assert_true(bg > 0 && to_joined > 0);
	sim_results_free(&r);
}

static void expect_join_error(const char *const *more, size_t nm, const char *msg)
{
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(run_sets(join_sets, N_JOIN_SETS, more, nm, &r, &e), KS_EINPUT);
	if (!strstr(e.msg, msg))
		fail_msg("got '%s', expected '%s'", e.msg, msg);
}

static void test_bad_join_keys_are_config_errors(void **st)
{
	(void)st;
	const char *nan[] = {"cluster.join_at_s=8,x,16"};
	expect_join_error(nan, 1, "[cluster] join_at_s: '8,x,16': entry 2 is not a number");
	const char *back[] = {"cluster.join_at_s=8,16,10"};
	expect_join_error(back, 1, "[cluster] join_at_s: '8,16,10': entry 3 (10 s) comes before "
				   "entry 2 (16 s)");
	const char *zero[] = {"cluster.join_at_s=0,16,16"};
	expect_join_error(zero, 1, "entry 1 (0 s) is out of range (0, 4e9]");
	const char *few[] = {"cluster.join_at_s=8,16"};
	expect_join_error(few, 1, "join_at_s: '8,16' gives 2 join times for join_instances = 3");
	const char *both[] = {"cluster.join_every_s=5"};
	expect_join_error(both, 1, "join_every_s: join_instances = 3 needs exactly one of");
	const char *all[] = {"cluster.join_instances=8"};
	expect_join_error(all, 1, "[cluster] join_instances: 8 of 8 instances: at least one");
	const char *none[] = {"cluster.join_instances=0"};
	expect_join_error(none, 1, "[cluster] join_at_s: set, but join_instances = 0");
	const char *dg[] = {"cluster.disagg=true", "cluster.prefill_share=0.5"};
	expect_join_error(dg, 2, "cold join needs disagg = false");
	/* from a file, the error names its line */
	char path[] = "/tmp/test_sim_join_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("[trace]\nkind = gen\n[cluster]\njoin_instances = 2\njoin_at_s = 5,x\n", f);
	fclose(f);
	cfg_t *cfg = NULL;
	err_t e = {0};
	sim_results_t fr;
	assert_int_equal(cli_load_config(path, NULL, 0, &cfg, &e), 0);
	assert_int_equal(sim_run(cfg, NULL, &fr, &e), KS_EINPUT);
	cli_config_free(cfg);
	char want[256];
	snprintf(want, sizeof want, "%s:5: [cluster] join_at_s: '5,x': entry 2 is not a number",
		 path);
	remove(path);
	if (strncmp(e.msg, want, strlen(want)))
		fail_msg("got '%s', expected '%s...'", e.msg, want);
	/* join_every_s alone: instances 5, 6, 7 at 4, 8, 12 s */
	const char *every[] = {"cluster.join_at_s=", "cluster.join_every_s=4"};
	sim_results_t r = run_ok(join_sets, N_JOIN_SETS, every, 2);
	assert_true(sim_results_get(&r, "join.first_s") == 4);
	assert_true(sim_results_get(&r, "join.last_s") == 12);
	for (size_t k = 0; k < r.n_req; k++)
		assert_true(r.req[k].instance < 5 ||
			    r.req[k].arrival_ns >= (r.req[k].instance - 4) * 4 * NS);
	sim_results_free(&r);
}

/* One burst of 24 requests on a 16K-token prefix, no background. On the
 * crowd generator the prefix is computed by 2 warm-up requests 10 s
 * earlier, so the speculative policy with the oracle lands copies of it
 * before the crowd's first request; on fanout the prefix is fresh and no
 * copy can land before the burst's first request (nothing to copy yet). */
static size_t landed_before_burst(const char *const *sets, size_t n, double *used)
{
	const char *spec[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
			      "trace.prefix_shared_prob=0"};
	sim_results_t r = run_ok(sets, n, spec, 3);
	int64_t burst = INT64_MAX; /* the burst's first request: the crowd's, not a warm-up */
	for (size_t k = 0; k < r.n_req; k++)
		if (r.req[k].input_tokens >= 16384 && r.req[k].arrival_ns > 0 &&
		    r.req[k].arrival_ns < burst)
			burst = r.req[k].arrival_ns;
	if (!strcmp(sets[0], "trace.gen=fanout"))
		burst = 0; /* fanout: the burst is the first request */
	size_t landed = 0;
	for (size_t k = 0; k < r.n_xfer; k++)
		landed += r.xfer[k].klass == XFER_BACKGROUND && !r.xfer[k].cancelled &&
			  r.xfer[k].end_ns <= burst;
	*used = sim_results_get(&r, "spec.replicas_used");
	sim_results_free(&r);
	return landed;
}

static void test_crowd_lands_copies_before_the_crowd_fanout_cannot(void **st)
{
	(void)st;
	const char *crowd[] = {"trace.gen=crowd",        "trace.duration_s=20",
			       "trace.crowd_count=1",    "trace.crowd_size=24",
			       "trace.crowd_bg_rate=0",  "trace.crowd_prefix_tokens=16384"};
	const char *fan[] = {"trace.gen=fanout",      "trace.duration_s=20",
			     "trace.fanout_bursts=1", "trace.fanout_size=24",
			     "trace.fanout_bg_rate=0", "trace.fanout_prefix_tokens=16384",
			     "trace.fanout_decoys=0"};
	double used_crowd, used_fan;
	size_t c = landed_before_burst(crowd, 6, &used_crowd);
	size_t f = landed_before_burst(fan, 7, &used_fan);
	printf("copies landed before the burst: crowd %zu (replicas used %.0f), fanout %zu "
	       "(replicas used %.0f)\n",
	       c, used_crowd, f, used_fan);
	assert_true(c > 0 && used_crowd > 0);
	assert_int_equal(f, 0);
}

TEST_MAIN(cmocka_unit_test(test_no_router_reaches_an_instance_before_it_joins),
	  cmocka_unit_test(test_joined_instance_serves_from_an_empty_cache),
	  cmocka_unit_test(test_bad_join_keys_are_config_errors),
	  cmocka_unit_test(test_crowd_lands_copies_before_the_crowd_fanout_cannot))

/* Tests of sim/run/sim_core.c's bounded memory: experiment.max_pending rejects
 * arrivals routed to a full waiting queue with status overload (counted in
 * the summary), experiment.client_timeout_s abandons requests waiting past
 * it, and experiment.max_rss_gb stops a run with a clear error and
 * no results, nor any output file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "sim/run/sim_int.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* One single-GPU instance running one sequence at a time. */
static const char *base_sets[] = {"model.name=Llama-3-8B", "cluster.nodes=1",
                                  "cluster.gpus_per_node=1", "cluster.tp=1",
                                  "kvcache.block_tokens=16", "scheduler.max_num_seqs=1"};
#define N_BASE 6

static int run_flood(const char *extra, int n, sim_results_t *r, err_t *e)
{
	const char *sets[N_BASE + 1];
	memcpy(sets, base_sets, sizeof base_sets);
	sets[N_BASE] = extra;
	cfg_t *cfg = NULL;
	int rc = cli_load_config_ex(NULL, sets, N_BASE + 1, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, e);
	if (rc)
		fail_msg("%s", e->msg);
	/* n requests of 64 tokens, all arriving at t = 0, none sharing a block. */
	sf_prefix_t f = sf_prefix(n, 0, 0, 1000, 4);
	f.block_tokens = 64;
	sim_source_t src = {sf_prefix_next, &f, "flood"};
	FILE *saved = stderr; /* the once-per-run overload warning */
	stderr = fopen("/dev/null", "w");
	rc = sim_run(cfg, &(sim_run_opts_t){.source = &src}, r, e);
	fclose(stderr);
	stderr = saved;
	cli_config_free(cfg);
	return rc;
}

/* 20 arrivals at t = 0: the first is admitted at once (one sequence runs),
 * the next 5 wait, and with max_pending = 5 the other 14 find the queue
 * full: rejected as overload, never reaching the instance. */
static void test_max_pending_rejects_arrivals_to_a_full_queue_as_overload(void **st)
{
	(void)st;
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(run_flood("experiment.max_pending=5", 20, &r, &e), 0);
	assert_int_equal(r.n_req, 20);
	int overload = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		if (q->status == REQ_REJECTED_OVERLOAD) {
			overload++;
			assert_true(q->id >= 6);
			assert_int_equal(q->instance, -1);
			assert_true(q->ttft_ns == -1);
		} else {
			assert_int_equal(q->status, REQ_COMPLETED);
			assert_true(q->id < 6);
		}
	}
	assert_int_equal(overload, 14);
	assert_true(sim_results_get(&r, "rejected_overload") == 14);
	assert_true(sim_results_get(&r, "rejected") == 14);
	assert_true(sim_results_get(&r, "completed") == 6);
	sim_results_free(&r);

	/* 0 = no cap: every request waits its turn */
	assert_int_equal(run_flood("experiment.max_pending=0", 20, &r, &e), 0);
	assert_true(sim_results_get(&r, "completed") == 20);
	assert_true(sim_results_get(&r, "rejected_overload") == 0);
	sim_results_free(&r);
}

/* 200 arrivals at t = 0 on an instance that serves one at a time (tens of
 * ms each): with experiment.client_timeout_s = 0.5 the queue is bounded in
 * time. Those admitted waited at most 0.5 s (the check runs before every
 * admission); the rest, the later arrivals (FIFO), leave as abandoned with
 * no token, are counted, and miss the SLOs in slo_attainment's denominator.
 * With 0 (clients wait forever) the same flood drains, its last admission
 * well past 0.5 s. */
static void test_client_timeout_abandons_requests_waiting_past_it(void **st)
{
	(void)st;
	sim_results_t r;
	err_t e = {0};
	const int64_t T = 500000000;
	assert_int_equal(run_flood("experiment.client_timeout_s=0.5", 200, &r, &e), 0);
	assert_int_equal(r.n_req, 200);
	size_t done = 0, gone = 0, ok = 0;
	uint64_t last_done = 0, first_gone = UINT64_MAX;
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		if (q->status == REQ_COMPLETED) {
			done++;
			assert_true(q->queue_ns >= 0 && q->queue_ns <= T);
			last_done = q->id > last_done ? q->id : last_done;
			ok += q->ttft_ns <= 2000000000LL && q->tpot_ns <= 100000000LL;
		} else {
			assert_int_equal(q->status, REQ_ABANDONED);
			gone++;
			assert_int_equal(q->instance, 0);
			assert_true(q->ttft_ns == -1 && q->e2e_ns == -1);
			first_gone = q->id < first_gone ? q->id : first_gone;
		}
	}
	assert_true(done > 0 && gone > 0 && done + gone == 200);
	assert_true(last_done < first_gone);
	assert_true(sim_results_get(&r, "abandoned") == (double)gone);
	assert_true(sim_results_get(&r, "completed") == (double)done);
	assert_true(sim_results_get(&r, "unfinished") == 0);
	/* the default SLOs (TTFT 2 s, TPOT 100 ms) over completed + abandoned */
	assert_true(sim_results_get(&r, "slo_attainment") == (double)ok / 200);
	/* the run ends once the last admitted request is served: its simulated
	 * time is bounded by the timeout, not by the backlog */
	double bounded = sim_results_get(&r, "sim_time_s");
	assert_true(bounded < 1);
	sim_results_free(&r);

	assert_int_equal(run_flood("experiment.client_timeout_s=0", 200, &r, &e), 0);
	assert_true(sim_results_get(&r, "completed") == 200);
	assert_true(sim_results_get(&r, "abandoned") == 0);
	int64_t longest = 0;
	for (size_t i = 0; i < r.n_req; i++)
		longest = r.req[i].queue_ns > longest ? r.req[i].queue_ns : longest;
	assert_true(longest > T);
	printf("simulated time: %.3f s with the timeout, %.3f s draining\n", bounded,
	       sim_results_get(&r, "sim_time_s"));
	assert_true(sim_results_get(&r, "sim_time_s") > 4 * bounded);
	sim_results_free(&r);
}

/* Any test process holds more than 1 MB, so a 0.001 GB limit stops the run
 * at its first check, with the key named and no results kept; a limit far
 * above lets the same run finish. */
static void test_max_rss_stops_the_run_with_an_error_and_no_results(void **st)
{
	(void)st;
	sim_results_t r;
	err_t e = {0};
	assert_int_equal(run_flood("experiment.max_rss_gb=0.001", 20, &r, &e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, "[experiment] max_rss_gb: resident memory "));
	assert_non_null(strstr(e.msg, "passed the limit of 0.001 GB"));
	assert_int_equal(r.n_req, 0);
	assert_null(r.req);
	assert_int_equal(run_flood("experiment.max_rss_gb=1e6", 20, &r, &e), 0);
	assert_int_equal(r.n_req, 20);
	sim_results_free(&r);
}

/* 8,192 instances (4,096 nodes of two GPUs) need ~0.8 GB of KV stores,
 * allocated before the first event: under a 0.3 GB limit the run is
 * refused before it builds them, naming the key and what the cluster
 * needs, and the process never holds them (its peak RSS stays well under
 * 0.3 GB; it reached 0.85 GB when only the events' check saw memory). Runs
 * first, so the peak is this test's. */
static void test_max_rss_refuses_a_cluster_too_big_before_building_it(void **st)
{
	(void)st;
	struct rusage ru;
	sim_results_t r;
	err_t e = {0};
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=4096",
			      "cluster.gpus_per_node=2", "cluster.tp=1", "experiment.max_rss_gb=0.3"};
	cfg_t *cfg = NULL;
	if (cli_load_config_ex(NULL, sets, 5, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e))
		fail_msg("%s", e.msg);
	sf_prefix_t f = sf_prefix(4, 0, 0, 1000, 4);
	sim_source_t src = {sf_prefix_next, &f, "few"};
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), KS_ERUNTIME);
	cli_config_free(cfg);
	assert_non_null(strstr(e.msg, "[experiment] max_rss_gb: building the cluster (8192 instances"));
	assert_non_null(strstr(e.msg, "over the limit of 0.3 GB; nothing was allocated"));
	assert_int_equal(r.n_req, 0);
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	assert_true(ru.ru_maxrss < 200 * 1024); /* KB */
}

/* The routing view's Bloom filters are sized from their capacity when the
 * view is built: the default experiment's 8 instances' filters for 2e9
 * entries at 1% need 76.7 GB,
 * refused before they are allocated, naming the step, what it needs and
 * the keys that shrink it. */
static void test_max_rss_refuses_routing_indexes_too_big_before_building_them(void **st)
{
	(void)st;
	const char *sets[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
			      "policy.routing.index=bloom", "policy.routing.index_capacity=2000000000",
			      "policy.routing.index_fpr=0.01", "experiment.max_rss_gb=1"};
	cfg_t *cfg = NULL;
	err_t e = {0};
	sim_results_t r;
	if (cli_load_config_ex(NULL, sets, 6, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e))
		fail_msg("%s", e.msg);
	sf_prefix_t f = sf_prefix(4, 0, 0, 1000, 4);
	sim_source_t src = {sf_prefix_next, &f, "few"};
	assert_int_equal(sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e), KS_ERUNTIME);
	cli_config_free(cfg);
	printf("%s\n", e.msg);
	assert_non_null(strstr(e.msg, "[experiment] max_rss_gb: building the routing view's "
				      "indexes needs "));
	assert_non_null(strstr(e.msg, "nothing was allocated"));
	assert_non_null(strstr(e.msg, "index_capacity"));
	assert_int_equal(r.n_req, 0);
}

/* A fanout generator plans its 4M requests (~100 MB) when the trace is
 * opened, before the cluster is built: under a limit of 0.07 GB the run
 * stops right there, naming the step and the keys that shrink the plan. */
static void test_max_rss_is_checked_once_the_trace_is_opened(void **st)
{
	(void)st;
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=1", "cluster.gpus_per_node=1",
			      "cluster.tp=1", "trace.kind=gen", "trace.gen=fanout",
			      "trace.duration_s=100", "trace.fanout_bursts=4000",
			      "trace.fanout_size=1000", "trace.fanout_decoys=0",
			      "experiment.max_rss_gb=0.07"};
	cfg_t *cfg = NULL;
	err_t e = {0};
	if (cli_load_config_ex(NULL, sets, 11, CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e))
		fail_msg("%s", e.msg);
	sim_results_t r;
	assert_int_equal(sim_run(cfg, NULL, &r, &e), KS_ERUNTIME);
	cli_config_free(cfg);
	assert_non_null(strstr(e.msg, "[experiment] max_rss_gb: resident memory "));
	assert_non_null(strstr(e.msg, " while opening the trace; nothing was written"));
	assert_non_null(strstr(e.msg, "trace.fanout_bursts"));
	assert_int_equal(r.n_req, 0);
}

static uint64_t rss_now(void)
{
	unsigned long long pages[2] = {0, 0};
	FILE *f = fopen("/proc/self/statm", "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu %llu", &pages[0], &pages[1]), 2);
	fclose(f);
	return pages[1] * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The checks read the peak since the run began: 200 MB touched and freed
 * (given back to the kernel) passes a limit 100 MB above the resident size
 * though the size is back under it, and after a reset it no longer does. */
static void test_max_rss_checks_read_the_peak_since_the_run_began(void **st)
{
	(void)st;
	if (sim_rss_peak_reset())
		skip(); /* a kernel without a resettable peak: the checks read the size */
	double gb = (double)(rss_now() + (100u << 20)) / 1e9;
	size_t n = 200u << 20;
	volatile char *p = malloc(n);
	assert_non_null((void *)p);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	free((void *)p);
	err_t e = {0};
	assert_int_equal(sim_rss_check(gb, "testing", "nothing", &e), KS_ERUNTIME);
	assert_non_null(strstr(e.msg, " while testing; nothing was written"));
	assert_int_equal(sim_rss_peak_reset(), 0);
	assert_int_equal(sim_rss_check(gb, "testing", "nothing", &e), 0);
}

/* kvsim run -o DIR under the limit: exit 1, and no DIR, catalog or run file. */
static void test_run_over_rss_limit_writes_no_output(void **st)
{
	(void)st;
	char dir[64];
	snprintf(dir, sizeof dir, "/tmp/kvsim-simcore-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char out[96];
	snprintf(out, sizeof out, "%s/out", dir);
	char *argv[] = {"run", "--set", "experiment.max_rss_gb=0.001", "-o", out, "-q", NULL};
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int rc = cli_run_main(6, argv);
	fclose(stderr);
	stderr = saved;
	assert_int_equal(rc, 1);
	assert_int_equal(access(out, F_OK), -1);
	assert_int_equal(rmdir(dir), 0);
}

TEST_MAIN(cmocka_unit_test(test_max_rss_refuses_a_cluster_too_big_before_building_it),
	    cmocka_unit_test(test_max_rss_refuses_routing_indexes_too_big_before_building_them),
          cmocka_unit_test(test_max_pending_rejects_arrivals_to_a_full_queue_as_overload),
          cmocka_unit_test(test_client_timeout_abandons_requests_waiting_past_it),
          cmocka_unit_test(test_max_rss_stops_the_run_with_an_error_and_no_results),
          cmocka_unit_test(test_max_rss_is_checked_once_the_trace_is_opened),
          cmocka_unit_test(test_max_rss_checks_read_the_peak_since_the_run_began),
          cmocka_unit_test(test_run_over_rss_limit_writes_no_output))

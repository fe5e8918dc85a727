/* The bounds on the Mooncake conversation trace (skipped when
 * ../shared/traces/mooncake is absent): with one instance whose pool holds
 * the whole trace, MIN equals the run's block hit rate; on the 16-instance
 * experiment the placement bound with unlimited copies equals that same
 * rate (one infinite cache on the whole trace), whatever the routing, and
 * MIN on each instance lies between the run and it. Both runs keep every
 * request (experiment.client_timeout_s = 0): the one instance is far past
 * its capacity, and a request its client abandoned looks nothing up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#define TRACE "../shared/traces/mooncake/conversation_trace.jsonl"
#define EXPERIMENT "analysis/experiments/mooncake_conversation.ini"

static void test_bounds_on_mooncake_conversation(void **st)
{
	(void)st;
	if (access(TRACE, R_OK) != 0)
		skip();
	const char *one[] = {"model.name=Llama-3-8B",    "cluster.nodes=1",
	                     "cluster.gpus_per_node=1",  "cluster.tp=1",
	                     "cluster.kv_blocks=400000", "output.oracle_bound=true",
	                     "experiment.client_timeout_s=0"};
	sim_results_t r1 = sf_run(EXPERIMENT, one, 7);
	double inf = sim_results_get(&r1, "hit_rate_blocks");
	assert_true(fabs(sim_results_get(&r1, "bound.belady_hit_rate_blocks") - inf) < 1e-12);
	assert_true(fabs(sim_results_get(&r1, "bound.place_unlimited_hit_rate_blocks") - inf) <
	            1e-12);

	const char *many[] = {"output.oracle_bound=true", "experiment.client_timeout_s=0"};
	sim_results_t r16 = sf_run(EXPERIMENT, many, 2);
	double run = sim_results_get(&r16, "hit_rate_blocks");
	double min = sim_results_get(&r16, "bound.belady_hit_rate_blocks");
	double unl = sim_results_get(&r16, "bound.place_unlimited_hit_rate_blocks");
	printf("one infinite cache %.4f; 16 instances: run %.4f, MIN %.4f, placement %.4f\n", inf,
	       run, min, unl);
	assert_true(fabs(unl - inf) < 1e-12);
	assert_true(min > run && min < unl);
	assert_true(sim_results_get(&r16, "bound.lookups_blocks") ==
	            sim_results_get(&r1, "bound.lookups_blocks"));
	sim_results_free(&r1);
	sim_results_free(&r16);
}

TEST_MAIN(cmocka_unit_test(test_bounds_on_mooncake_conversation))

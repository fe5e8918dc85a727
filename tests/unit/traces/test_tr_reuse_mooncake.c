/* tr_reuse on the Mooncake conversation trace (skipped when
 * ../shared/traces/mooncake is absent): the cluster miss-ratio curve's point
 * at unbounded capacity equals the block hit rate the simulator reaches with
 * one instance whose cache holds the whole trace (the run of
 * tests/unit/traces/test_trace_sim.c), from the library and from `kvsim trace reuse`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/run/sim_params.h"
#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"
#include "traces/tr_reuse.h"

#define CONFIG "analysis/experiments/mooncake_conversation.ini"
#define TRACE "../shared/traces/mooncake/conversation_trace.jsonl"

/* one instance whose KV pool holds the whole trace, keeping every request
 * (far past its capacity, clients would abandon some: they look nothing up) */
static const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=1", "cluster.gpus_per_node=1",
                             "cluster.tp=1", "cluster.kv_blocks=400000",
                             "experiment.client_timeout_s=0"};

static void test_unbounded_point_equals_simulated_block_hit_rate(void **st)
{
	(void)st;
	if (access(TRACE, R_OK))
		skip();
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(CONFIG, sets, 6, &cfg, &e), 0);
	sim_params_t sp;
	tr_opts_t o;
	tr_paths_t paths;
	assert_int_equal(sim_params_fill(cfg, &sp, &e), 0);
	assert_int_equal(tr_opts_from_cfg(cfg, &o, &e), 0);
	assert_int_equal(tr_opts_paths(cfg, &o, &paths, &e), 0);
	tr_reader_t *r;
	assert_int_equal(tr_open(&o, sp.block_tokens, sp.seed, &r, &e), 0);
	tr_reuse_opts_t ro = {16, 1};
	tr_reuse_t u;
	assert_int_equal(tr_reuse_compute(r, &ro, &u, &e), 0);
	tr_close(r);
	cli_config_free(cfg);
	sim_results_t res = sf_run(CONFIG, sets, 6);
	double sim = sim_results_get(&res, "hit_rate_blocks");
	double got = tr_reuse_hit_rate(&u.cluster, 1, UINT64_MAX);
	printf("unbounded LRU hit rate %.6f; simulated block hit rate %.6f\n", got, sim);
	assert_true(fabs(got - sim) < 1e-12);
	/* 16 caches fed round-robin share less than one */
	assert_true(tr_reuse_hit_rate(&u.inst_all, 1, UINT64_MAX) < got);

	/* the command prints the same point, to its 6 decimals */
	const char *kvsim = cli_kvsim();
	if (kvsim) {
		cli_result_t c = cli_run(kvsim, tmp_dir, "trace", "reuse", TRACE, NULL);
		assert_int_equal(c.status, 0);
		const char *line = strstr(c.out, "unbounded");
		assert_non_null(line);
		double v = -1;
		assert_int_equal(sscanf(line, "unbounded %lf", &v), 1);
		assert_true(fabs(v - sim) < 5e-7);
		cli_result_free(&c);
	}
	sim_results_free(&res);
	tr_reuse_free(&u);
}

TEST_MAIN_FIXTURE(tmp_group_setup, tmp_group_teardown,
                  cmocka_unit_test(test_unbounded_point_equals_simulated_block_hit_rate))

/* The cluster's hooks return an error (sim/cluster/cluster.h: on_admit,
 * on_spec_hit, on_last_chunk; the stores' hooks, kv_store.h), and the
 * cluster passes it up from the call that ran the hook, under every
 * scheduler of CLUSTER_SCHED_LIST: a request's admission whose on_admit
 * fails stops the submit (or the engine's run) with that error, the
 * request admitted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "tests/fixtures/toy_cluster.h"

static int admit_fails(void *ctx, uint32_t inst, const struct sim_req *r)
{
	(void)inst;
	(void)r;
	++*(int *)ctx;
	return KS_ENOMEM;
}

static void test_admission_hook_error_stops_every_scheduler(void **st)
{
	(void)st;
	for (int mode = 0; mode < SCHED_N; mode++) {
		int calls = 0;
		cluster_params_t p = toy_params(mode);
		p.on_admit = admit_fails;
		p.hook_ctx = &calls;
		toy_t t;
		toy_start(&t, &p);
		uint64_t b[4] = {1, 2, 3, 4};
		int rc = cluster_submit(&t.cl, 0, 1, 16, 2, b, 4);
		if (!rc)
			rc = ev_engine_run(t.eng, INT64_MAX);
		printf("%s: %d (%d calls)\n", cluster_sched_name(mode), rc, calls);
		assert_int_equal(rc, KS_ENOMEM);
		assert_int_equal(calls, 1);
		toy_free(&t);
	}
}

TEST_MAIN(cmocka_unit_test(test_admission_hook_error_stops_every_scheduler))

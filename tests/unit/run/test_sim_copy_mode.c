/* The copy timing modes (sim/run/sim_copy_mode.h): SIM_COPY_MODE_LIST is the
 * one list. Each line gives its COPY_* constant, its name and its table, in
 * list order; every table has the hooks the copies call (start, cancel,
 * estimate, and takes, which picks a copy's mode); and the [network] keys
 * pick each mode as the run's documentation says (contention = none: the
 * timer; copy_charge = target_compute: the job, for copies that land at an
 * instance; else flows), so no line of the list is unreachable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/run/sim_copy_mode.h"
#include "tests/fixtures/test_main.h"

static void test_list_drives_enum_names_and_tables(void **st)
{
	(void)st;
	int seen = 0;
#define CHECK_LINE(M, nm, ops)                                                                     \
	assert_int_equal(COPY_##M, seen);                                                          \
	assert_ptr_equal(sim_copy_mode_ops(COPY_##M), &ops);                                       \
	assert_string_equal(sim_copy_mode_name(COPY_##M), nm);                                     \
	assert_string_equal(ops.name, nm);                                                         \
	seen++;
	SIM_COPY_MODE_LIST(CHECK_LINE)
#undef CHECK_LINE
	assert_int_equal(seen, COPY_MODE_N);
	assert_null(sim_copy_mode_ops(COPY_MODE_N));
	assert_null(sim_copy_mode_ops(-1));
	assert_string_equal(sim_copy_mode_name(COPY_MODE_N), "?");
	for (int m = 0; m < COPY_MODE_N; m++)
		for (int o = 0; o < m; o++)
			assert_string_not_equal(sim_copy_mode_name(m), sim_copy_mode_name(o));
}

static void test_every_table_has_its_hooks(void **st)
{
	(void)st;
	for (int m = 0; m < COPY_MODE_N; m++) {
		const sim_copy_mode_ops_t *ops = sim_copy_mode_ops(m);
		assert_non_null(ops);
		assert_non_null(ops->takes);
		assert_non_null(ops->start);
		assert_non_null(ops->cancel);
		assert_non_null(ops->estimate);
	}
}

static int pick(int contention_none, int charge_compute, int to_instance)
{
	net_params_t np;
	memset(&np, 0, sizeof np);
	np.contention_none = contention_none;
	np.copy_charge_compute = charge_compute;
	return sim_copy_mode_pick(&np, to_instance);
}

static void test_network_keys_pick_each_mode(void **st)
{
	(void)st;
	assert_int_equal(pick(0, 0, 1), COPY_FLOWS);
	assert_int_equal(pick(0, 0, 0), COPY_FLOWS);
	assert_int_equal(pick(1, 0, 1), COPY_TIMER);
	assert_int_equal(pick(1, 0, 0), COPY_TIMER);
	assert_int_equal(pick(0, 1, 1), COPY_JOB);
	assert_int_equal(pick(1, 1, 1), COPY_JOB);
	/* an offload has no target compute: the contention key times it */
	assert_int_equal(pick(0, 1, 0), COPY_FLOWS);
	assert_int_equal(pick(1, 1, 0), COPY_TIMER);
	/* the last line takes every copy, whatever the keys */
	net_params_t np;
	memset(&np, 0, sizeof np);
	const sim_copy_mode_ops_t *last = sim_copy_mode_ops(COPY_MODE_N - 1);
	for (int k = 0; k < 8; k++) {
		np.contention_none = k & 1;
		np.copy_charge_compute = (k >> 1) & 1;
		assert_true(last->takes(&np, k >> 2));
	}
}

TEST_MAIN(cmocka_unit_test(test_list_drives_enum_names_and_tables),
          cmocka_unit_test(test_every_table_has_its_hooks),
          cmocka_unit_test(test_network_keys_pick_each_mode))

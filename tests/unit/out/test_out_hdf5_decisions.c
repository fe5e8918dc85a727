/* /decisions in the run's HDF5 file (sim/out/out_hdf5.c): written, with its
 * enum labels, only when the run had output.decisions on, and read back row
 * for row; a file of a run without it has no /decisions, as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <hdf5.h>

#include "sim/out/out_hdf5.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

/* Whether path holds the object name, and (when attr) that attribute on it. */
static int h5_has(const char *path, const char *name, const char *attr)
{
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	int has = H5Lexists(f, name, H5P_DEFAULT) > 0;
	if (has && attr)
		has = H5Aexists_by_name(f, name, attr, H5P_DEFAULT) > 0;
	H5Fclose(f);
	return has;
}

static void test_decisions_table_round_trips_and_is_absent_when_off(void **st)
{
	(void)st;
	/* a small KV pool evicts and an SLO admission decides: every kind of row */
	const char *on[] = {"output.decisions=true", "cluster.kv_blocks=120",
	                    "policy.admission.name=slo_reject", "slo.ttft_ms=2000"};
	sim_results_t r = sf_run(NULL, on, 4), off = sf_run(NULL, NULL, 0), b;
	size_t kinds[4] = {0};
	for (size_t i = 0; i < r.n_dec; i++)
		kinds[r.dec[i].kind]++;
	assert_true(kinds[DEC_ROUTE] > 0 && kinds[DEC_EVICT] > 0 && kinds[DEC_ADMIT] > 0);
	char p_on[128], p_off[128];
	snprintf(p_on, sizeof p_on, "%s/on.h5", tmp_dir);
	snprintf(p_off, sizeof p_off, "%s/off.h5", tmp_dir);
	err_t e = {0};
	assert_int_equal(out_hdf5_write(p_on, &r, NULL, &e), 0);
	assert_int_equal(out_hdf5_write(p_off, &off, NULL, &e), 0);
	assert_true(h5_has(p_on, "decisions", "values.kind"));
	assert_true(h5_has(p_on, "decisions", "values.outcome"));
	assert_true(h5_has(p_on, "decisions", "unit.regret_ns"));
	assert_true(h5_has(p_on, "decisions", "values.tier"));
	assert_true(h5_has(p_on, "decisions", "unit.age_ns"));
	assert_false(h5_has(p_off, "decisions", NULL));
	assert_int_equal(out_hdf5_read(p_on, &b, &e), 0);
	assert_true(b.decisions);
	assert_int_equal(b.n_dec, r.n_dec);
	assert_memory_equal(b.dec, r.dec, r.n_dec * sizeof *r.dec);
	sim_results_free(&b);
	assert_int_equal(out_hdf5_read(p_off, &b, &e), 0);
	assert_false(b.decisions);
	assert_int_equal(b.n_dec, 0);
	sim_results_free(&b);
	sim_results_free(&r);
	sim_results_free(&off);
}

TEST_MAIN_FIXTURE(tmp_group_setup, tmp_group_teardown,
                  cmocka_unit_test(test_decisions_table_round_trips_and_is_absent_when_off))

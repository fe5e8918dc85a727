/* Streamed runs written out (sim/out/out_hdf5.h, out_csv_write): a run whose
 * rows were spilled in blocks (sim_run_opts_t.stream_rows) gives the same
 * HDF5 tables, row for row and in order, with the same chunking, and the
 * same CSV files, as the run with every row in memory; tables of more rows
 * than one chunk and one block. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hdf5.h>

#include "sim/out/out_hdf5.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

/* speculative copies, so /transfers has rows too */
static const char *const sets[] = {"policy.replication.name=speculative",
				   "policy.predictor.name=oracle", "trace.duration_s=20"};

/* The default experiment with sets, its rows in blocks of block (0: all in
 * memory), written to tmp_dir/name with 64-row chunks. */
static sim_results_t run_written(size_t block, const char *name, char *path, size_t n)
{
	sim_run_opts_t o = {.stream_rows = block};
	sim_results_t r = sf_run_opts(NULL, sets, 3, NULL, &o);
	snprintf(path, n, "%s/%s", tmp_dir, name);
	out_hdf5_opts_t h = {4, 64};
	err_t e = {0};
	if (out_hdf5_write(path, &r, &h, &e))
		fail_msg("%s", e.msg);
	return r;
}

static hsize_t chunk_of(const char *path, const char *table)
{
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, table, H5P_DEFAULT);
	hid_t p = H5Dget_create_plist(d);
	hsize_t c = 0;
	assert_int_equal(H5Pget_chunk(p, 1, &c), 1);
	H5Pclose(p);
	H5Dclose(d);
	H5Fclose(f);
	return c;
}

static void test_streamed_run_writes_the_same_tables_in_the_same_order(void **st)
{
	(void)st;
	char pa[600], pb[600];
	sim_results_t a = run_written(0, "mem.h5", pa, sizeof pa);
	sim_results_t b = run_written(100, "stream.h5", pb, sizeof pb);
	/* more rows than a block and a chunk, most of them spilled */
	assert_true(b.spilled[RES_T_REQ] >= 100 && b.n_req <= 100);
	assert_true(b.spilled[RES_T_TL] >= 100 && b.spilled[RES_T_XFER] >= 100);
	sim_results_t ra, rb;
	err_t e = {0};
	assert_int_equal(out_hdf5_read(pa, &ra, &e), 0);
	assert_int_equal(out_hdf5_read(pb, &rb, &e), 0);
	assert_int_equal(ra.n_req, a.n_req);
	assert_int_equal(rb.n_req, ra.n_req);
	assert_int_equal(rb.n_xfer, ra.n_xfer);
	assert_int_equal(rb.n_tl, ra.n_tl);
	assert_memory_equal(rb.req, ra.req, ra.n_req * sizeof *ra.req);
	assert_memory_equal(rb.xfer, ra.xfer, ra.n_xfer * sizeof *ra.xfer);
	assert_memory_equal(rb.tl, ra.tl, ra.n_tl * sizeof *ra.tl);
	assert_int_equal(rb.n_metric, ra.n_metric);
	for (size_t i = 0; i < ra.n_metric; i++)
		assert_memory_equal(&rb.metric[i].value, &ra.metric[i].value, sizeof(double));
	static const char *const tables[] = {"requests", "transfers", "timeline"};
	for (int t = 0; t < 3; t++) {
		assert_int_equal(chunk_of(pa, tables[t]), 64);
		assert_int_equal(chunk_of(pb, tables[t]), 64);
	}
	/* CSV: the same files, byte for byte */
	char da[600], db[600], cmd[1400];
	snprintf(da, sizeof da, "%s/csv_mem", tmp_dir);
	snprintf(db, sizeof db, "%s/csv_stream", tmp_dir);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s'", da, db);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(out_csv_write(&a, da, &e), 0);
	assert_int_equal(out_csv_write(&b, db, &e), 0);
	snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' > /dev/null", da, db);
	assert_int_equal(system(cmd), 0);
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&ra);
	sim_results_free(&rb);
}

/* A table of fewer rows than a chunk keeps its chunk of that many rows. */
static void test_a_table_smaller_than_a_chunk_keeps_its_size_as_chunk(void **st)
{
	(void)st;
	sim_results_t r = {0};
	sim_results_stream(&r, 4);
	for (int i = 0; i < 10; i++) {
		res_request_t q;
		memset(&q, 0, sizeof q);
		q.id = (uint64_t)i;
		assert_int_equal(sim_results_append(&r, RES_T_REQ, &q), 0);
	}
	char path[600];
	snprintf(path, sizeof path, "%s/small.h5", tmp_dir);
	err_t e = {0};
	out_hdf5_opts_t h = {4, 64};
	assert_int_equal(out_hdf5_write(path, &r, &h, &e), 0);
	assert_int_equal(chunk_of(path, "requests"), 10);
	sim_results_t b;
	assert_int_equal(out_hdf5_read(path, &b, &e), 0);
	assert_int_equal(b.n_req, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(b.req[i].id, i);
	sim_results_free(&r);
	sim_results_free(&b);
}

TEST_MAIN_FIXTURE(tmp_group_setup, tmp_group_teardown,
                  cmocka_unit_test(test_streamed_run_writes_the_same_tables_in_the_same_order),
                  cmocka_unit_test(test_a_table_smaller_than_a_chunk_keeps_its_size_as_chunk))

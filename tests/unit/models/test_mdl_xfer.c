/* Tests for models/mdl_xfer: piecewise Hockney times, shapes, sharing and the
 * calibration file format. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "models/mdl.h"
#include "models/mdl_xfer.h"
#include "tests/fixtures/mdl_fixture.h"

static const char *three_pieces = "# test calibration\n"
				  "[meta]\ndevice = test gpu\n"
				  "measured = 2025-01-01 ; notes beside the known keys\n"
				  "[link.pcie_h2d]\n"
				  "edges = 65536, 2097152\n"
				  "alpha_ns = 5000, 8000, 20000\n"
				  "bw_gbps = 10, 40, 50\n"
				  "overhead_ns = 1500\n"
				  "batch_overhead_ns = 200\n"
				  "share_same = 0.9\n"
				  "share_opp = 0.1\n"
				  "[compute]\nmfu = 0.6\nmbu = 0.8\npeak_tflops = 989\n";

static void test_default_time_is_alpha_plus_bytes_over_bandwidth(void **state)
{
	(void)state;
	mdl_xfer_t x;
	mdl_xfer_default(&x);
	const mdl_xfer_piece_t *p = mdl_xfer_piece(&x, MDL_LINK_PCIE_H2D, 1 << 20);
	int64_t t = mdl_xfer_time_ns(&x, MDL_LINK_PCIE_H2D, 1 << 20);
	assert_int_equal(t, llround(p->alpha_ns + (1 << 20) / p->bw_gbps));
	assert_true(mdl_xfer_time_ns(&x, MDL_LINK_NVLINK, 1 << 20) < t); /* NVLink is faster */
	assert_true(isnan(x.mfu));
	assert_string_equal(x.source, "defaults");
}

/* x = the defaults with three_pieces loaded over them. */
static void load_three(mdl_xfer_t *x)
{
	err_t e = {0};
	mdl_xfer_default(x);
	assert_int_equal(mdl_xfer_load_string(x, "t.ini", three_pieces, &e), 0);
}

static void test_piece_chosen_by_size_with_edges_inclusive(void **state)
{
	(void)state;
	mdl_xfer_t x;
	load_three(&x);
	assert_int_equal(x.link[MDL_LINK_PCIE_H2D].n_pieces, 3);
	assert_true(mdl_xfer_latency_ns(&x, MDL_LINK_PCIE_H2D, 65536) == 5000);
	assert_true(mdl_xfer_latency_ns(&x, MDL_LINK_PCIE_H2D, 65537) == 8000);
	assert_true(mdl_xfer_bw(&x, MDL_LINK_PCIE_H2D, 2097152) == 40);
	assert_true(mdl_xfer_bw(&x, MDL_LINK_PCIE_H2D, 2097153) == 50);
	assert_int_equal(mdl_xfer_time_ns(&x, MDL_LINK_PCIE_H2D, 4 << 20), 20000 + (4 << 20) / 50);
	assert_string_equal(x.device, "test gpu");
	assert_true(fabs(x.mfu - 0.6) < 1e-12 && fabs(x.mbu - 0.8) < 1e-12);
	/* links the file does not name keep their values */
	mdl_xfer_t d;
	mdl_xfer_default(&d);
	assert_memory_equal(&x.link[MDL_LINK_NVLINK], &d.link[MDL_LINK_NVLINK], sizeof d.link[0]);
}

static void test_granular_transfer_pays_overhead_per_block_at_block_size_rate(void **state)
{
	(void)state;
	mdl_xfer_t x;
	load_three(&x);
	/* 64 blocks of 16 KiB: each copy is in piece 0 (10 GB/s) */
	double g =
	    mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_GRANULAR, 1 << 20, 64, 1, 0);
	assert_true(fabs(g - (5000 + 64 * 1500 + (1 << 20) / 10.0)) < 1e-6);
	double b = mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_BATCH, 1 << 20, 64, 1, 0);
	assert_true(fabs(b - (5000 + 64 * 200 + (1 << 20) / 10.0)) < 1e-6);
	double c = mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_CONTIG, 1 << 20, 64, 1, 0);
	assert_true(fabs(c - (8000 + (1 << 20) / 40.0)) < 1e-6);
	assert_int_equal(
	    mdl_xfer_copy_overhead_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_GRANULAR, 64, 16384),
	    64 * 1500);
	assert_int_equal(
	    mdl_xfer_copy_overhead_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_CONTIG, 64, 16384), 0);
}

static void test_concurrent_copies_stretch_only_the_bandwidth_term(void **state)
{
	(void)state;
	mdl_xfer_t x;
	load_three(&x);
	double n = 8 << 20, bwt = n / 50;
	double t4 = mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_CONTIG, 8 << 20, 1, 4, 2);
	assert_true(fabs(t4 - (20000 + bwt * (1 + 0.9 * 3 + 0.1 * 2))) < 1e-6);
	/* m_same < 1 is treated as alone */
	double t0 = mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_CONTIG, 8 << 20, 1, 0, 0);
	assert_true(fabs(t0 - (20000 + bwt)) < 1e-6);
}

static void test_written_file_loads_back_identically(void **state)
{
	(void)state;
	mdl_xfer_t x, y;
	err_t e = {0};
	load_three(&x);
	char path[] = "/tmp/test_mdl_xfer_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_int_equal(mdl_xfer_write(&x, f, "line one\nline two", 0), 0);
	fclose(f);
	mdl_xfer_default(&y);
	y.link[MDL_LINK_NET].piece[0].bw_gbps = 1; /* must be overwritten by the file */
	assert_int_equal(mdl_xfer_load(&y, path, &e), 0);
	unlink(path);
	for (int k = 0; k < MDL_LINK_N; k++) {
		assert_int_equal(x.link[k].n_pieces, y.link[k].n_pieces);
		for (int i = 0; i < x.link[k].n_pieces; i++) {
			assert_true(x.link[k].piece[i].max_bytes == y.link[k].piece[i].max_bytes);
			assert_true(fabs(x.link[k].piece[i].bw_gbps - y.link[k].piece[i].bw_gbps) <=
			            1e-5 * x.link[k].piece[i].bw_gbps);
			assert_true(
			    fabs(x.link[k].piece[i].alpha_ns - y.link[k].piece[i].alpha_ns) <=
			    1e-5 * fabs(x.link[k].piece[i].alpha_ns));
		}
		assert_true(fabs(x.link[k].share_same - y.link[k].share_same) < 1e-9);
	}
	assert_true(fabs(y.mfu - 0.6) < 1e-9);
}

static void test_write_with_mask_names_only_those_links(void **state)
{
	(void)state;
	mdl_xfer_t x;
	mdl_xfer_default(&x);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(mdl_xfer_write(&x, f, NULL, 1u << MDL_LINK_PCIE_D2H), 0);
	fclose(f);
	assert_non_null(strstr(buf, "[link.pcie_d2h]"));
	assert_null(strstr(buf, "[link.nvlink]"));
	assert_null(strstr(buf, "[compute]")); /* unknown MFU is not written */
	free(buf);
}

static void expect_load_error(const char *text, int code, const char *needle)
{
	mdl_xfer_t x, before;
	err_t e = {0};
	mdl_xfer_default(&x);
	before = x;
	assert_int_equal(mdl_xfer_load_string(&x, "bad.ini", text, &e), code);
	if (!strstr(e.msg, needle))
		fail_msg("message '%s' lacks '%s'", e.msg, needle);
	assert_memory_equal(&x, &before, sizeof x); /* never half-loaded */
}

static void test_bad_calibration_files_are_rejected_with_file_and_line(void **state)
{
	(void)state;
	expect_load_error("[link.pcie_h2d]\nshare_same = 1\nfoo = 2\n", KS_EINPUT,
	                  "bad.ini:3: [link.pcie_h2d] foo: unknown key (known: edges, alpha_ns,");
	expect_load_error("[link.nvlink]\nbw_gpbs = 1\n", KS_EINPUT,
	                  "bad.ini:2: [link.nvlink] bw_gpbs: unknown key (did you mean 'bw_gbps'?)");
	expect_load_error("[link.warp]\nbw_gbps = 1\n", KS_EINPUT,
	                  "bad.ini:1: [link.warp]: unknown link kind (nvlink, pcie_h2d,");
	expect_load_error("[link.nvlink]\nbw_gbps = 0\nalpha_ns = 1\n", KS_EINPUT,
	                  "bad.ini:2: [link.nvlink] bw_gbps: entry 1 (0) must be above 0");
	expect_load_error("[link.nvlink]\nedges = 100\nbw_gbps = 1\nalpha_ns = 1\n", KS_EINPUT,
	                  "bad.ini:4: [link.nvlink] alpha_ns: edges has 1 entries, so alpha_ns and "
	                  "bw_gbps need 2 each (have 1 and 1)");
	/* a list not given is named at its section's header */
	expect_load_error("\n[link.net]\nalpha_ns = 1\n", KS_EINPUT,
	                  "bad.ini:2: [link.net] bw_gbps: edges has 0 entries");
	expect_load_error("[link.nvlink]\nedges = 100, 50\n", KS_EINPUT,
	                  "bad.ini:2: [link.nvlink] edges: entry 2 (50) must be above entry 1 (100)");
	expect_load_error("[link.nvlink]\nalpha_ns = 1, x\n", KS_EINPUT,
	                  "bad.ini:2: [link.nvlink] alpha_ns: entry 2 'x' is not a finite number");
	expect_load_error("[link.nvlink]\noverhead_ns = fast\n", KS_EINPUT,
	                  "bad.ini:2: [link.nvlink] overhead_ns: expected a number, got 'fast'");
	expect_load_error("[link.nvlink]\nshare_opp = 0\nshare_opp = 1\n", KS_EINPUT,
	                  "bad.ini:3: [link.nvlink] share_opp: duplicate key (first set on line 2)");
	expect_load_error("[oops]\nx = 1\n", KS_EINPUT,
	                  "bad.ini:1: [oops]: unknown section (known: [meta], [compute], [link.KIND])");
	expect_load_error("[compute]\nmfu = 1.5\n", KS_EINPUT,
	                  "bad.ini:2: [compute] mfu: 1.5 is out of range (0, 1]");
	expect_load_error("[compute]\nmbu = 0\n", KS_EINPUT,
	                  "bad.ini:2: [compute] mbu: 0 is out of range (0, 1]");
	mdl_xfer_t x;
	err_t e = {0};
	mdl_xfer_default(&x);
	assert_int_equal(mdl_xfer_load(&x, "/nonexistent/cal.ini", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "/nonexistent/cal.ini"));
}

static void test_init_uses_defaults_unless_a_file_is_named(void **state)
{
	(void)state;
	mdl_xfer_t x, d;
	err_t e = {0};
	mdl_xfer_default(&d);
	assert_int_equal(mdl_xfer_init(&x, NULL, "", &e), 0);
	assert_memory_equal(&x.link, &d.link, sizeof d.link);
	assert_int_equal(mdl_xfer_init(&x, NULL, NULL, &e), 0);
	assert_int_equal(mdl_xfer_init(&x, NULL, "/nonexistent/cal.ini", &e), KS_EINPUT);
}

static void test_links_seeded_from_the_hardware_spec(void **state)
{
	(void)state;
	mdl_hw_t hw;
	mf_builtin("H200", &hw, NULL, NULL);
	mdl_xfer_t x;
	err_t e = {0};
	assert_int_equal(mdl_xfer_init(&x, &hw, NULL, &e), 0);
	assert_true(fabs(mdl_xfer_bw(&x, MDL_LINK_PCIE_H2D, 1 << 20) - hw.pcie_bw / 1e9) < 1e-9);
	assert_true(fabs(mdl_xfer_bw(&x, MDL_LINK_NVLINK, 1 << 20) - hw.nvlink_bw / 1e9) < 1e-9);
	assert_true(mdl_xfer_latency_ns(&x, MDL_LINK_NET, 1) == (double)hw.nic_lat_ns);
	assert_true(fabs(mdl_xfer_bw(&x, MDL_LINK_LOCAL, 1) - hw.hbm_bw / 2e9) < 1e-9);
	/* a calibration file still wins over the spec */
	char path[] = "/tmp/test_mdl_xfer_hw_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(write(fd, three_pieces, strlen(three_pieces)) == (ssize_t)strlen(three_pieces));
	close(fd);
	assert_int_equal(mdl_xfer_init(&x, &hw, path, &e), 0);
	unlink(path);
	assert_true(mdl_xfer_bw(&x, MDL_LINK_PCIE_H2D, 8 << 20) == 50);
	assert_true(fabs(mdl_xfer_bw(&x, MDL_LINK_NVLINK, 1 << 20) - hw.nvlink_bw / 1e9) < 1e-9);
}

static void test_link_names_round_trip(void **state)
{
	(void)state;
	for (int k = 0; k < MDL_LINK_N; k++)
		assert_int_equal(mdl_xfer_link_parse(mdl_xfer_link_name(k)), k);
	assert_int_equal(mdl_xfer_link_parse("infiniband"), -1);
	/* link ids agree with the results' path kinds */
	assert_int_equal(mdl_xfer_link_parse("pcie_h2d"), 1);
	assert_int_equal(mdl_xfer_link_parse("net"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_time_is_alpha_plus_bytes_over_bandwidth),
	    cmocka_unit_test(test_piece_chosen_by_size_with_edges_inclusive),
	    cmocka_unit_test(test_granular_transfer_pays_overhead_per_block_at_block_size_rate),
	    cmocka_unit_test(test_concurrent_copies_stretch_only_the_bandwidth_term),
	    cmocka_unit_test(test_written_file_loads_back_identically),
	    cmocka_unit_test(test_write_with_mask_names_only_those_links),
	    cmocka_unit_test(test_bad_calibration_files_are_rejected_with_file_and_line),
	    cmocka_unit_test(test_link_names_round_trip),
	    cmocka_unit_test(test_init_uses_defaults_unless_a_file_is_named),
	    cmocka_unit_test(test_links_seeded_from_the_hardware_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

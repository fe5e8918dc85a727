/* `kvsim trace reuse` (sim/cli/tr_cli.c): bad input and bad options fail
 * with exit status 2 and a message naming the place (file:line: field, or
 * the option); --h5 writes the curves with a unit on every dataset, its last
 * capacity at the unbounded point the table prints; --png draws a PNG from
 * it (skipped without Debian's python3 with h5py and matplotlib). The binary
 * is $KVSIM (or build/kvsim); the tests skip without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

/* Mooncake rows (512-token blocks): two sessions, each second turn
 * repeating its first turn's blocks. */
static const char *GOOD =
    "{\"timestamp\": 0, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [1, 2, 3, 4]}\n"
    "{\"timestamp\": 10, \"input_length\": 1536, \"output_length\": 5, \"hash_ids\": [7, 8, 9]}\n"
    "{\"timestamp\": 2000, \"input_length\": 2560, \"output_length\": 5, \"hash_ids\": [1, 2, 3, "
    "4, 5]}\n"
    "{\"timestamp\": 2500, \"input_length\": 2048, \"output_length\": 5, \"hash_ids\": [7, 8, 9, "
    "10]}\n";

static char *path_in(const char *name)
{
	static char p[4][256];
	static int i;
	char *s = p[i++ & 3];
	snprintf(s, 256, "%s/%s", tmp_dir, name);
	return s;
}

static void expect_usage_error(const char *frag, const char *a1, const char *a2, const char *a3)
{
	const char *k = cli_kvsim_or_skip();
	cli_result_t r = cli_run(k, tmp_dir, "trace", "reuse", a1, a2, a3, NULL);
	if (r.status != 2 || !strstr(r.err, frag))
		fail_msg("status %d, stderr '%s'; wanted 2 and '%s'", r.status, r.err, frag);
	cli_result_free(&r);
}

static void test_bad_row_names_file_line_and_field(void **st)
{
	(void)st;
	char *bad = path_in("bad.jsonl");
	tmp_write(bad, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, "
	               "\"hash_ids\": [1, 2]}\n"
	               "{\"timestamp\": 5, \"input_length\": \"x\", \"output_length\": 5, "
	               "\"hash_ids\": [1]}\n");
	char want[300];
	snprintf(want, sizeof want, "%s:2: input_length", bad);
	expect_usage_error(want, bad, NULL, NULL);
	expect_usage_error("No such file", path_in("absent.jsonl"), NULL, NULL);
}

static void test_bad_options_are_usage_errors(void **st)
{
	(void)st;
	char *good = path_in("good.jsonl");
	tmp_write(good, GOOD);
	expect_usage_error("--sample: '0' is not a rate in (0, 1]", good, "--sample", "0");
	expect_usage_error("--sample: '1.5'", good, "--sample", "1.5");
	expect_usage_error("--sample: 'x'", good, "--sample", "x");
	expect_usage_error("--instances: '0'", good, "--instances", "0");
	expect_usage_error("--png needs --h5", good, "--png", path_in("x.png"));
	expect_usage_error("--h5 needs a value", good, "--h5", NULL);
}

static double read_attr(hid_t f, const char *obj, const char *name)
{
	double v = NAN;
	assert_true(H5LTget_attribute_double(f, obj, name, &v) >= 0);
	return v;
}

static void expect_unit(hid_t f, const char *dset, const char *unit)
{
	char got[64] = "";
	assert_true(H5LTget_attribute_string(f, dset, "unit", got) >= 0);
	assert_string_equal(got, unit);
}

static void test_h5_has_units_and_the_unbounded_point(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	char *good = path_in("good.jsonl"), *h5 = path_in("reuse.h5");
	tmp_write(good, GOOD);
	cli_result_t r =
	    cli_run(k, tmp_dir, "trace", "reuse", good, "--instances", "3", "--h5", h5, NULL);
	assert_int_equal(r.status, 0);
	/* 16 prompt blocks; blocks 1-4 and 7-9 come again: 7 hits */
	const char *line = strstr(r.out, "unbounded");
	assert_non_null(line);
	double cl = -1, in = -1;
	assert_int_equal(sscanf(line, "unbounded %lf %lf", &cl, &in), 2);
	assert_true(fabs(cl - 7.0 / 16) < 1e-6);
	assert_true(fabs(in - 0.0) < 1e-6); /* round-robin: each session's turns split */
	cli_result_free(&r);

	hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	expect_unit(f, "/mrc/capacity", "blocks");
	expect_unit(f, "/mrc/cluster_hit_rate", "1");
	expect_unit(f, "/mrc/instance_hit_rate_each", "1");
	expect_unit(f, "/reuse_distance/distance", "blocks");
	expect_unit(f, "/reuse_distance/count", "prompt-block accesses");
	expect_unit(f, "/hot_prefix/share", "1");
	expect_unit(f, "/session/gap_edges", "s");
	expect_unit(f, "/session/gap_count", "requests");
	hsize_t dims[2];
	assert_true(H5LTget_dataset_info(f, "/mrc/cluster_hit_rate", dims, NULL, NULL) >= 0);
	double *v = calloc(dims[0], sizeof *v);
	assert_true(H5LTread_dataset_double(f, "/mrc/cluster_hit_rate", v) >= 0);
	assert_true(v[dims[0] - 1] == read_attr(f, "/mrc", "cluster_hit_rate_unbounded"));
	assert_true(fabs(v[dims[0] - 1] - 7.0 / 16) < 1e-12);
	/* the two later turns came 2.0 and 2.49 s after their first (nearest rank) */
	assert_true(fabs(read_attr(f, "/session", "median_gap_s") - 2.0) < 1e-9);
	free(v);
	H5Fclose(f);
}

static void test_png_is_drawn_from_the_h5(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	if (system("/usr/bin/python3 -c 'import h5py, matplotlib' 2>/dev/null"))
		skip();
	char *good = path_in("good.jsonl"), *h5 = path_in("p.h5"), *png = path_in("p.png");
	tmp_write(good, GOOD);
	setenv("KVSIM_PLOT_REUSE", "analysis/plot_reuse.py", 1);
	cli_result_t r =
	    cli_run(k, tmp_dir, "trace", "reuse", good, "--h5", h5, "--png", png, NULL);
	if (r.status)
		fail_msg("status %d: %s", r.status, r.err);
	cli_result_free(&r);
	FILE *f = fopen(png, "rb");
	assert_non_null(f);
	unsigned char sig[8] = {0};
	assert_int_equal(fread(sig, 1, 8, f), 8);
	fclose(f);
	assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
}

TEST_MAIN_FIXTURE(tmp_group_setup, tmp_group_teardown,
                  cmocka_unit_test(test_bad_row_names_file_line_and_field),
                  cmocka_unit_test(test_bad_options_are_usage_errors),
                  cmocka_unit_test(test_h5_has_units_and_the_unbounded_point),
                  cmocka_unit_test(test_png_is_drawn_from_the_h5))

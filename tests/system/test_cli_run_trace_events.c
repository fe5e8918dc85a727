/* `kvsim run --trace-events FILE` and [output] trace_events (sim/cli/
 * cli_run.c): either writes a trace-event JSON file that parses, the flag
 * wins over the key, no temporary is left, and a run --strict refuses
 * writes none. The binary is $KVSIM (or build/kvsim); the tests skip
 * without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/fixtures/cli_fixture.h"
#include "tests/fixtures/tmp_fixture.h"
#include "tests/fixtures/test_main.h"

/* path holds a trace-event file with iteration slices, and no PATH.tmp
 * is beside it. */
static void assert_trace_file(const char *path)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	assert_non_null(root);
	json_t *ev = json_object_get(root, "traceEvents");
	size_t i, slices = 0;
	json_t *e;
	json_array_foreach(ev, i, e)
		slices += !strcmp(json_string_value(json_object_get(e, "ph")), "X");
	assert_true(slices > 100);
	json_decref(root);
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_int_not_equal(access(tmp, F_OK), 0);
}

static void test_flag_and_key_write_the_file_and_the_flag_wins(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char a[128], b[128], c[128], set[192];
	snprintf(a, sizeof a, "%s/a.json", tmp_dir);
	snprintf(b, sizeof b, "%s/b.json", tmp_dir);
	snprintf(c, sizeof c, "%s/c.json", tmp_dir);
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "-q", "--trace-events", a, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	assert_trace_file(a);
	snprintf(set, sizeof set, "output.trace_events=%s", b);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--set", set, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	assert_trace_file(b);
	unlink(b);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--set", set, "--trace-events", c, NULL);
	assert_int_equal(r.status, 0);
	cli_result_free(&r);
	assert_trace_file(c);
	assert_int_not_equal(access(b, F_OK), 0);
}

static void test_strict_refusal_and_bad_path_write_no_file(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char d[128], tmp[160];
	snprintf(d, sizeof d, "%s/d.json", tmp_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", d);
	/* the default experiment's trace lasts 60 s: no request from 600 s on */
	cli_result_t r = cli_run(kvsim, tmp_dir, "run", "-q", "--strict", "--set",
				 "trace.start_s=600", "--trace-events", d, NULL);
	assert_int_equal(r.status, 2);
	cli_result_free(&r);
	assert_int_not_equal(access(d, F_OK), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
	char bad[160];
	snprintf(bad, sizeof bad, "%s/no/such/e.json", tmp_dir);
	r = cli_run(kvsim, tmp_dir, "run", "-q", "--trace-events", bad, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no/such/e.json: cannot create"));
	cli_result_free(&r);
}

/* A write the file system refuses mid-run (EFBIG here, under a file size
 * limit: kvsim ignores SIGXFSZ itself, so the shell's default disposition
 * does not kill it; ENOSPC alike) stops the run with exit 1 and
 * a message naming the file and the reason, not "simulation failed", and
 * leaves neither the file nor its temporary. */
static void test_refused_write_names_the_file_and_its_errno(void **st)
{
	(void)st;
	const char *kvsim = cli_kvsim_or_skip();
	char f[128], tmp[160];
	snprintf(f, sizeof f, "%s/big.json", tmp_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", f);
	cli_result_t r = cli_run("/bin/sh", tmp_dir, "-c",
	                         "ulimit -f 64; exec \"$0\" run -q --trace-events \"$1\"",
	                         kvsim, f, NULL);
	assert_int_equal(r.status, 1);
	char want[300];
	snprintf(want, sizeof want, "kvsim run: %s: write failed: %s (the run stopped there", f,
	         strerror(EFBIG));
	if (strncmp(r.err, want, strlen(want)))
		fail_msg("'%s'; wanted '%s...'", r.err, want);
	assert_null(strstr(r.err, "simulation failed"));
	cli_result_free(&r);
	assert_int_not_equal(access(f, F_OK), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
}

TEST_MAIN_FIXTURE(tmp_group_setup, tmp_group_teardown,
		  cmocka_unit_test(test_flag_and_key_write_the_file_and_the_flag_wins),
		  cmocka_unit_test(test_strict_refusal_and_bad_path_write_no_file),
		  cmocka_unit_test(test_refused_write_names_the_file_and_its_errno))

/* Tests for analysis/plot_trace_events.py: a tiny hand-written trace-event
 * file (two instance tracks on one node, a link lane, a KV and a queue
 * counter, the metadata that names them) drawn to a PNG, whole and over a
 * window; the rows it reads from the file (order, clipping to the window,
 * the counter value in force at the window's start); a file kvsim run
 * --trace-events wrote; bad JSON, JSON without traceEvents and a file of
 * metadata only (nothing to draw) each exit 1 with a message. Skipped when /usr/bin/python3 lacks
 * matplotlib (the kvsim-file test also when no kvsim is built). */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tmp_fixture.h"

#define SCRIPT "/usr/bin/python3 analysis/plot_trace_events.py"

/* ts and dur in microseconds: instance 0 busy 0-1.5 s and 2-4 s, instance 1
 * 0.5-1 s, one background copy 1-1.2 s; instance 0's KV and queue change
 * at 0, 1 and 3 s. */
static const char tiny[] =
    "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
    "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":0,\"args\":{\"name\":\"node 0\"}},\n"
    "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":0,\"args\":{\"sort_index\":0}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":2,\"args\":{\"name\":\"instance 1\"}},\n"
    "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":2,\"args\":{\"sort_index\":1}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":1,\"args\":{\"name\":\"instance 0\"}},\n"
    "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":1,\"args\":{\"sort_index\":0}},\n"
    "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":2,\"tid\":0,\"args\":{\"name\":\"links\"}},\n"
    "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":2,\"tid\":0,\"args\":{\"sort_index\":1}},\n"
    "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":2,\"tid\":200001,\"args\":{\"name\":\"NIC+fabric 0\"}},\n"
    "{\"name\":\"prefill\",\"ph\":\"X\",\"ts\":0.000,\"pid\":1,\"tid\":1,\"dur\":1500000.000,\"cat\":\"iteration\"},\n"
    "{\"name\":\"decode\",\"ph\":\"X\",\"ts\":2000000.000,\"pid\":1,\"tid\":1,\"dur\":2000000.000,\"cat\":\"iteration\"},\n"
    "{\"name\":\"prefill+decode\",\"ph\":\"X\",\"ts\":500000.000,\"pid\":1,\"tid\":2,\"dur\":500000.000},\n"
    "{\"name\":\"background copy\",\"ph\":\"X\",\"ts\":1000000.000,\"pid\":2,\"tid\":200001,\"dur\":200000.000,\"cat\":\"flow\"},\n"
    "{\"name\":\"instance 0 KV\",\"ph\":\"C\",\"ts\":0.000,\"pid\":1,\"tid\":1,\"args\":{\"in_use\":1000000000,\"cached\":0}},\n"
    "{\"name\":\"instance 0 KV\",\"ph\":\"C\",\"ts\":1000000.000,\"pid\":1,\"tid\":1,\"args\":{\"in_use\":3000000000,\"cached\":500000000}},\n"
    "{\"name\":\"instance 0 KV\",\"ph\":\"C\",\"ts\":3000000.000,\"pid\":1,\"tid\":1,\"args\":{\"in_use\":2000000000,\"cached\":500000000}},\n"
    "{\"name\":\"instance 0 queue\",\"ph\":\"C\",\"ts\":0.000,\"pid\":1,\"tid\":1,\"args\":{\"waiting\":2,\"running\":1}}\n"
    "],\"otherData\":{}}\n";

static int have_python;

static int setup(void **st)
{
	have_python = system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
	if (tmp_group_setup(st))
		return -1;
	char path[128];
	snprintf(path, sizeof path, "%s/tiny.json", tmp_dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(tiny, f);
	return fclose(f) ? -1 : 0;
}

/* 1 when path is a PNG (its signature) of more than 1 kB. */
static int is_png(const char *path)
{
	unsigned char sig[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(sig, 1, sizeof sig, f);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	return n == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8) && size > 1024;
}

static void test_tiny_file_draws_a_png_whole_and_windowed(void **st)
{
	(void)st;
	if (!have_python)
		skip();
	char png[128];
	snprintf(png, sizeof png, "%s/whole.png", tmp_dir);
	assert_int_equal(tmp_sh(SCRIPT " %s/tiny.json --png %s", tmp_dir, png), 0);
	assert_true(is_png(png));
	snprintf(png, sizeof png, "%s/window.png", tmp_dir);
	assert_int_equal(tmp_sh(SCRIPT " %s/tiny.json --png %s --from 0.8 --to 2.5", tmp_dir, png), 0);
	assert_true(is_png(png));
}

/* The rows of the tiny file over 0.8-2.5 s: instance 0's track (its
 * slices cut to the window), its KV and queue counters, instance 1's
 * track, the link lane, in sort order; the KV counter starts at the value
 * in force at 0.8 s. */
static void test_rows_follow_sort_order_and_clip_to_the_window(void **st)
{
	(void)st;
	if (!have_python)
		skip();
	assert_int_equal(
	    tmp_sh("/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"analysis\"); "
	       "import plot_trace_events as p; "
	       "r = p.collect(p.load_events(sys.argv[1]), 0.8e6, 2.5e6); "
	       "got = [(k, l) for _, k, l, _ in r]; "
	       "want = [(\"slices\", \"node 0 / instance 0\"), (\"counter\", \"instance 0 KV\"), "
	       "(\"counter\", \"instance 0 queue\"), (\"slices\", \"node 0 / instance 1\"), "
	       "(\"slices\", \"links / NIC+fabric 0\")]; "
	       "assert got == want, got; "
	       "s0 = [(round(a, 6), round(d, 6), n) for a, d, n in r[0][3]]; "
	       "assert s0 == [(0.8, 0.7, \"prefill\"), (2.0, 0.5, \"decode\")], s0; "
	       "kv = r[1][3][\"in_use\"]; "
	       "assert kv == [(0.8, 1e9), (1.0, 3e9)], kv; "
	       "assert [round(d, 6) for _, d, _ in r[3][3]] == [0.2], r[3][3]' %s/tiny.json",
	       tmp_dir),
	    0);
}

/* A file kvsim run --trace-events wrote (the default experiment's first 2 s). */
static void test_draws_what_kvsim_writes(void **st)
{
	(void)st;
	const char *k = tmp_kvsim_with_python("matplotlib");
	if (!k)
		skip();
	char png[128];
	snprintf(png, sizeof png, "%s/kvsim.png", tmp_dir);
	assert_int_equal(tmp_sh("%s run -q --set experiment.until_s=2 --trace-events %s/kvsim.json "
	                    ">/dev/null && " SCRIPT " %s/kvsim.json --png %s --to 2",
	                    k, tmp_dir, tmp_dir, png),
	                 0);
	assert_true(is_png(png));
}

/* Exit 1 with the file named and why, and no image: bad JSON, JSON with
 * no traceEvents, events that name tracks but draw nothing. */
static void test_bad_input_is_an_error_naming_the_file(void **st)
{
	(void)st;
	if (!have_python)
		skip();
	char path[128];
	snprintf(path, sizeof path, "%s/bad.json", tmp_dir);
	tmp_write(path, "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1,\n");
	assert_int_equal(tmp_sh(SCRIPT " %s --png %s/bad.png 2>%s/err", path, tmp_dir, tmp_dir), 1);
	assert_int_equal(tmp_sh("grep -q 'plot_trace_events.py: %s: not JSON' %s/err", path, tmp_dir),
	                 0);
	tmp_write(path, "{\"events\": []}\n");
	assert_int_equal(tmp_sh(SCRIPT " %s --png %s/bad.png 2>%s/err", path, tmp_dir, tmp_dir), 1);
	assert_int_equal(tmp_sh("grep -q 'no traceEvents array' %s/err", tmp_dir), 0);
	tmp_write(path, "[{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, "
	                "\"args\": {\"name\": \"node 0\"}}]\n");
	assert_int_equal(tmp_sh(SCRIPT " %s --png %s/bad.png 2>%s/err", path, tmp_dir, tmp_dir), 1);
	assert_int_equal(tmp_sh("grep -q 'no slice or counter in the window' %s/err", tmp_dir), 0);
	char png[128];
	snprintf(png, sizeof png, "%s/bad.png", tmp_dir);
	assert_int_not_equal(access(png, F_OK), 0);
}

TEST_MAIN_FIXTURE(setup, tmp_group_teardown,
                  cmocka_unit_test(test_tiny_file_draws_a_png_whole_and_windowed),
                  cmocka_unit_test(test_rows_follow_sort_order_and_clip_to_the_window),
                  cmocka_unit_test(test_draws_what_kvsim_writes),
                  cmocka_unit_test(test_bad_input_is_an_error_naming_the_file))

/* Tests for sim/base/file.c: whole-file reads across chunk boundaries, NUL
 * bytes counted, and the open errors of err_fopen_in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/base/file.h"
#include "tests/test_main.h"

/* Writes n bytes to a fresh temporary file; its path goes to path. */
static void write_tmp(char *path, const char *bytes, size_t n)
{
	strcpy(path, "/tmp/kvsim_test_file_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, n), (ssize_t)n);
	close(fd);
}

static void test_file_read_all_reads_past_several_chunks_exactly(void **state)
{
	(void)state;
	size_t n = 3 * 4096 + 17; /* ends inside a chunk */
	char *want = malloc(n);
	assert_non_null(want);
	for (size_t i = 0; i < n; i++)
		want[i] = (char)('a' + i % 26);
	want[5000] = '\0'; /* a NUL inside is kept and counted */
	char path[64];
	write_tmp(path, want, n);
	char *buf;
	size_t len;
	err_t e = {0};
	assert_int_equal(file_read_all(path, &buf, &len, &e), 0);
	assert_int_equal(len, n);
	assert_memory_equal(buf, want, n);
	assert_int_equal(buf[len], '\0');
	free(buf);
	free(want);
	unlink(path);
}

static void test_file_read_all_reads_an_empty_file_as_an_empty_string(void **state)
{
	(void)state;
	char path[64];
	write_tmp(path, "", 0);
	char *buf;
	size_t len = 99;
	err_t e = {0};
	assert_int_equal(file_read_all(path, &buf, &len, &e), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	unlink(path);
}

static void test_file_read_all_reports_a_missing_file_or_a_directory(void **state)
{
	(void)state;
	char *buf = (char *)"untouched";
	size_t len;
	err_t e = {0};
	assert_int_equal(file_read_all("/nonexistent/kvsim.ini", &buf, &len, &e), KS_EINPUT);
	assert_null(buf);
	assert_non_null(strstr(e.msg, "/nonexistent/kvsim.ini: cannot open"));
	assert_int_equal(file_read_all("/tmp", &buf, &len, &e), KS_EINPUT);
	assert_null(buf);
	assert_non_null(strstr(e.msg, "/tmp: cannot open"));
}

TEST_MAIN(cmocka_unit_test(test_file_read_all_reads_past_several_chunks_exactly),
          cmocka_unit_test(test_file_read_all_reads_an_empty_file_as_an_empty_string),
          cmocka_unit_test(test_file_read_all_reports_a_missing_file_or_a_directory))

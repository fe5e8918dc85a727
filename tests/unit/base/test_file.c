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
#include "tests/fixtures/test_main.h"

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

/* A parse callback that keeps the text's length and where it came from,
 * and fails on text starting with '!'. */
typedef struct seen {
	int calls;
	size_t len;
	char origin[64];
} seen_t;

static int seen_parse(void *obj, const char *origin, const char *text, err_t *e)
{
	seen_t *s = obj;
	s->calls++;
	s->len = strlen(text);
	snprintf(s->origin, sizeof s->origin, "%s", origin);
	return text[0] == '!' ? err_set(e, KS_EINPUT, "%s:1: bad", origin) : 0;
}

static void test_file_parse_hands_the_text_to_the_parser_once(void **state)
{
	(void)state;
	char path[64];
	write_tmp(path, "a = 1\n", 6);
	seen_t s = {0};
	err_t e = {0};
	assert_int_equal(file_parse(path, seen_parse, &s, &e), 0);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.len, 6);
	assert_string_equal(s.origin, path);
	unlink(path);
	write_tmp(path, "!x", 2);
	assert_int_equal(file_parse(path, seen_parse, &s, &e), KS_EINPUT);
	assert_int_equal(s.calls, 2);
	assert_non_null(strstr(e.msg, ":1: bad"));
	unlink(path);
	/* a file that cannot be read never reaches the parser */
	assert_int_equal(file_parse("/nonexistent/kvsim.ini", seen_parse, &s, &e), KS_EINPUT);
	assert_int_equal(s.calls, 2);
}

TEST_MAIN(cmocka_unit_test(test_file_read_all_reads_past_several_chunks_exactly),
          cmocka_unit_test(test_file_parse_hands_the_text_to_the_parser_once),
          cmocka_unit_test(test_file_read_all_reads_an_empty_file_as_an_empty_string),
          cmocka_unit_test(test_file_read_all_reports_a_missing_file_or_a_directory))

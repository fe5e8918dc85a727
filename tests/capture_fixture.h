/* capture_fixture — what a test's code writes to stdout or stderr:
 * capture(fd) sends fd (1 or 2) to a temporary file, captured(fd) puts it
 * back and returns what was written (malloc'd; the caller frees it). One
 * capture at a time. Header-only (static); for tests that include cmocka.h
 * first. */
#ifndef KVSIM_TESTS_CAPTURE_FIXTURE_H
#define KVSIM_TESTS_CAPTURE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int saved_fd = -1;
static FILE *cap;

/* Sends fd (1 or 2) to a temporary file until captured(fd). */
__attribute__((unused)) static void capture(int fd)
{
	fflush(fd == 1 ? stdout : stderr);
	cap = tmpfile();
	assert_non_null(cap);
	saved_fd = dup(fd);
	assert_true(saved_fd >= 0);
	assert_true(dup2(fileno(cap), fd) >= 0);
}

/* What was written to fd since capture(fd) (malloc'd). */
__attribute__((unused)) static char *captured(int fd)
{
	fflush(fd == 1 ? stdout : stderr);
	dup2(saved_fd, fd);
	close(saved_fd);
	long n = ftell(cap);
	char *buf = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	rewind(cap);
	if (n > 0 && fread(buf, 1, (size_t)n, cap) != (size_t)n)
		buf[0] = '\0';
	fclose(cap);
	return buf;
}

#endif

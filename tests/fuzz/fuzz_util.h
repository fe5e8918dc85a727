/* Helpers shared by the fuzz targets (header-only): the input as a C string
 * and as a file the code under test can open by name. */
#ifndef KVSIM_FUZZ_UTIL_H
#define KVSIM_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The input with a NUL appended (malloc'd; NULL when out of memory). Text
 * with a NUL inside reads as the part before it. */
__attribute__((unused)) static char *fuzz_text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	if (t) {
		memcpy(t, data, size);
		t[size] = '\0';
	}
	return t;
}

/* A memfd holding data, or -1; path names it (/proc/self/fd/N) for code
 * that opens files by name. */
__attribute__((unused)) static int fuzz_file(const uint8_t *data, size_t size, char path[64])
{
	int fd = memfd_create("kvsim-fuzz", 0);
	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, 64, "/proc/self/fd/%d", fd);
	return fd;
}

#endif

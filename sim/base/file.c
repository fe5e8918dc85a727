/* file — see file.h. */
#include "sim/base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/base/vec.h"

enum { FILE_CHUNK = 4096 };

int file_read_all(const char *path, char **buf, size_t *len, err_t *e)
{
	*buf = NULL;
	*len = 0;
	FILE *f = err_fopen_in(path, e);
	if (!f)
		return e->code;
	char *b = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (VEC_GROW(b, cap, n + FILE_CHUNK + 1, 2 * FILE_CHUNK)) {
			free(b);
			fclose(f);
			return err_set(e, KS_ENOMEM, "%s: out of memory", path);
		}
		size_t got = fread(b + n, 1, FILE_CHUNK, f);
		n += got;
		if (got < FILE_CHUNK)
			break;
	}
	int ioerr = ferror(f);
	fclose(f);
	if (ioerr) {
		free(b);
		return err_set(e, KS_EIO, "%s: read error", path);
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int file_parse(const char *path, file_parse_fn parse, void *obj, err_t *e)
{
	char *buf;
	size_t len;
	if (file_read_all(path, &buf, &len, e))
		return e->code;
	int rc = parse(obj, path, buf, e);
	free(buf);
	return rc;
}

int file_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	const size_t chunk = (size_t)256 << 10;
	while (n) {
		ssize_t w = write(fd, b, n < chunk ? n : chunk);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

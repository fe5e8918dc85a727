/* file — see file.h. */
#include "sim/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int file_out_begin(file_out_t *o, const char *path, int flags, err_t *e)
{
	memset(o, 0, sizeof *o);
	size_t n = strlen(path);
	if (!n || n + 5 > sizeof o->path)
		return err_set(e, KS_EINPUT, "%s: cannot write: %s", path,
		               strerror(n ? ENAMETOOLONG : ENOENT));
	memcpy(o->path, path, n + 1);
	struct stat sb;
	if (stat(path, &sb) || S_ISREG(sb.st_mode)) {
		o->how = FILE_OUT_RENAME;
		snprintf(o->tmp, sizeof o->tmp, "%s.tmp", path);
		return 0;
	}
	if (!S_ISFIFO(sb.st_mode) && !S_ISCHR(sb.st_mode))
		return err_set(e, KS_EINPUT, "%s: cannot write: %s", path,
		               S_ISDIR(sb.st_mode)
		                   ? strerror(EISDIR)
		                   : "not a regular file, FIFO or character device");
	if (!(flags & FILE_OUT_SEEKABLE)) {
		o->how = FILE_OUT_THROUGH;
		memcpy(o->tmp, path, n + 1);
		return 0;
	}
	const char *dir = getenv("TMPDIR");
	snprintf(o->tmp, sizeof o->tmp, "%s/kvsim-out.XXXXXX", dir && dir[0] ? dir : "/tmp");
	int fd = mkstemp(o->tmp);
	if (fd < 0)
		return err_set(e, KS_EIO, "%s: cannot create a temporary file in %s: %s", path,
		               dir && dir[0] ? dir : "/tmp", strerror(errno));
	close(fd);
	o->how = FILE_OUT_COPY;
	return 0;
}

/* Copies the finished temporary into the node, without creating or
 * truncating it (a FIFO or a device). 0 or an errno. */
static int file_out_copy(const file_out_t *o)
{
	int in = open(o->tmp, O_RDONLY | O_CLOEXEC), out = -1, en = 0;
	if (in < 0 || (out = open(o->path, O_WRONLY | O_CLOEXEC)) < 0)
		en = errno;
	char buf[1 << 16];
	while (!en) {
		ssize_t got = read(in, buf, sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			en = got < 0 ? errno : 0;
			break;
		}
		if (file_write_all(out, buf, (size_t)got))
			en = errno ? errno : EIO;
	}
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !en)
		en = errno;
	return en;
}

int file_out_commit(file_out_t *o, int sync, err_t *e)
{
	int en = 0;
	if (o->how == FILE_OUT_THROUGH)
		return 0;
	if (o->how == FILE_OUT_COPY) {
		en = file_out_copy(o);
	} else if (sync) {
		/* data on disk before the name says "complete" */
		int fd = open(o->tmp, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0)
			en = errno;
		if (fd >= 0)
			close(fd);
	}
	if (!en && o->how == FILE_OUT_RENAME && rename(o->tmp, o->path) < 0)
		en = errno;
	if (en || o->how == FILE_OUT_COPY)
		file_out_abort(o);
	o->tmp[0] = '\0';
	return en ? err_set(e, err_path_code(en), "%s: cannot replace: %s", o->path, strerror(en))
	          : 0;
}

void file_out_abort(file_out_t *o)
{
	if (o->how != FILE_OUT_THROUGH && o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
}

int file_out_not_input(const char *out, const char *in, err_t *e)
{
	struct stat so, si;
	if (!out || !in || !in[0] || stat(out, &so) || stat(in, &si) || S_ISCHR(so.st_mode) ||
	    so.st_dev != si.st_dev || so.st_ino != si.st_ino)
		return 0;
	return err_set(e, KS_EINPUT, "%s: is also the input %s: write to another name", out, in);
}

/* err — see err.h. */
#include "sim/base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int err_set(err_t *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = code;
	}
	return code;
}

int err_prefix(err_t *e, const char *fmt, ...)
{
	if (!e)
		return KS_ERUNTIME;
	char head[512], old[sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	char buf[sizeof head + sizeof old + 2];
	memcpy(old, e->msg, sizeof old);
	snprintf(buf, sizeof buf, "%s: %s", head, old);
	memcpy(e->msg, buf, sizeof e->msg - 1);
	e->msg[sizeof e->msg - 1] = '\0';
	return e->code;
}

int err_exit_status(int code)
{
	if (code == KS_OK)
		return 0;
	return code == KS_EINPUT ? 2 : 1;
}

const char *err_name(int code)
{
	switch (code) {
	case KS_OK: return "ok";
	case KS_ERUNTIME: return "runtime error";
	case KS_EINPUT: return "input error";
	case KS_ENOMEM: return "out of memory";
	case KS_EIO: return "I/O error";
	case KS_EFULL: return "no room";
	case KS_EEXIST: return "already exists";
	case KS_ESTATE: return "wrong state";
	default: return "unknown error";
	}
}

int err_path_code(int errnum)
{
	switch (errnum) {
	case ENOENT:
	case ENOTDIR:
	case EISDIR:
	case EACCES:
	case EPERM:
	case ELOOP:
	case ENAMETOOLONG:
	case EROFS:
		return KS_EINPUT;
	default:
		return KS_EIO;
	}
}

FILE *err_fopen_in(const char *path, err_t *e)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	int en = f ? 0 : errno;
	if (f && !fstat(fileno(f), &sb) && S_ISDIR(sb.st_mode))
		en = EISDIR;
	if (!en)
		return f;
	if (f)
		fclose(f);
	err_set(e, err_path_code(en), "%s: cannot open: %s", path, strerror(en));
	return NULL;
}

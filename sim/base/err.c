/* err — see err.h. */
#include "sim/base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* UTF-8 continuation bytes (10xxxxxx) never start or end a kept piece. */
static int utf8_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

void err_fit(char *dst, size_t cap, const char *s, size_t len)
{
	static const char cut[] = "[...]";
	if (len < cap) {
		memcpy(dst, s, len + 1);
		return;
	}
	/* the start (the place) and the end (the reason) */
	size_t room = cap - sizeof cut, head = room / 2, tail = room - head;
	while (head && utf8_cont(s[head]))
		head--;
	while (tail && utf8_cont(s[len - tail]))
		tail--;
	memcpy(dst, s, head);
	memcpy(dst + head, cut, sizeof cut - 1);
	memcpy(dst + head + sizeof cut - 1, s + len - tail, tail);
	dst[head + sizeof cut - 1 + tail] = '\0';
}

/* Formats into e->msg, a message longer than it shortened in the middle. */
static void msg_vset(err_t *e, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	char *all = n >= (int)sizeof e->msg ? malloc((size_t)n + 1) : NULL;
	if (all) { /* else the end is lost: the message as it was cut */
		vsnprintf(all, (size_t)n + 1, fmt, again);
		err_fit(e->msg, sizeof e->msg, all, (size_t)n);
		free(all);
	}
	va_end(again);
}

int err_vset(err_t *e, int code, const char *fmt, va_list ap)
{
	if (e) {
		msg_vset(e, fmt, ap);
		e->code = code;
	}
	return code;
}

int err_set(err_t *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	return code;
}

static void msg_set(err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg_set(err_t *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	msg_vset(e, fmt, ap);
	va_end(ap);
}

int err_prefix(err_t *e, const char *fmt, ...)
{
	if (!e)
		return KS_ERUNTIME;
	char head[sizeof e->msg], old[sizeof e->msg];
	memcpy(old, e->msg, sizeof old);
	va_list ap;
	va_start(ap, fmt);
	msg_vset(e, fmt, ap);
	va_end(ap);
	memcpy(head, e->msg, sizeof head);
	msg_set(e, "%s: %s", head, old);
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

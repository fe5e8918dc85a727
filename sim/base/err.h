/* err — status codes and error messages shared by every kvsim module.
 *
 * Functions that can fail return an int: 0 on success or a negative KS_E*
 * code, and fill a caller-owned err_t with a message that carries context
 * ("file:line: [section] key: reason"). Only main() turns a code into an exit
 * status (err_exit_status); nothing below it exits the process.
 */
#ifndef KVSIM_ERR_H
#define KVSIM_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

enum {
	KS_OK = 0,
	KS_ERUNTIME = -1, /* failure while running (exit 1) */
	KS_EINPUT = -2,   /* bad usage, config or input file (exit 2) */
	KS_ENOMEM = -3,   /* allocation failed (exit 1) */
	KS_EIO = -4,      /* file system or library I/O error (exit 1) */
	/* Answers of fixed-capacity stores (sim/cluster/kv_store.h): the caller
	 * decides what to do (evict, preempt, recompute); they reach main only
	 * as a bug (exit 1). */
	KS_EFULL = -5,  /* no room, even after evicting what may be evicted */
	KS_EEXIST = -6, /* the named object is already there */
	KS_ESTATE = -7, /* absent, or not in the state the call needs */
};

typedef struct err {
	int code;
	char msg[1024];
} err_t;

/* Sets e (may be NULL) to code and a printf-style message; returns code.
 * A message longer than e->msg keeps its start (the place) and its end
 * (the reason) around "[...]" (err_fit): long paths lose their middle. */
int err_set(err_t *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int err_vset(err_t *e, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* Copies s (len bytes) into dst (cap > 8 bytes, NUL-terminated): whole
 * when it fits, else its first and last bytes around "[...]" (UTF-8
 * characters kept whole). */
void err_fit(char *dst, size_t cap, const char *s, size_t len);
/* Prepends "prefix: " to the message already in e, shortened in the middle
 * as err_set does; returns e->code. */
int err_prefix(err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties e (may be NULL), so that a callee's silence can be told from its
 * message. */
static inline void err_clear(err_t *e)
{
	if (e) {
		e->code = KS_OK;
		e->msg[0] = '\0';
	}
}
/* 0 for KS_OK, 2 for KS_EINPUT, 1 otherwise. */
int err_exit_status(int code);
/* A fixed English name for a code ("input error", ...). */
const char *err_name(int code);

/* The code for a failed open or create of a path the user named: KS_EINPUT
 * when the path itself is wrong (ENOENT, ENOTDIR, EISDIR, EACCES, EPERM,
 * ELOOP, ENAMETOOLONG, EROFS), KS_EIO otherwise (a full disk, an I/O error). */
int err_path_code(int errnum);
/* Opens an input file for reading (binary): a directory is refused here,
 * where fopen would accept it and the first read fail. NULL with e set to
 * "PATH: cannot open: REASON" and err_path_code's code. */
FILE *err_fopen_in(const char *path, err_t *e);

#endif

/* file — whole-file reads for the small text inputs kvsim loads at start
 * (configs, calibration tables).
 *
 * file_read_all reads a file the user named into one malloc'd buffer with
 * a '\0' after its last byte (the file may itself hold NUL bytes: *len
 * counts them). The caller owns *buf and frees it with free(). Errors: 0,
 * or a negative KS_E* code with *buf NULL and e set: err_fopen_in's
 * message and code when the file cannot be opened, "PATH: out of memory"
 * (KS_ENOMEM), "PATH: read error" (KS_EIO).
 */
#ifndef KVSIM_FILE_H
#define KVSIM_FILE_H

#include <stddef.h>

#include "sim/base/err.h"

int file_read_all(const char *path, char **buf, size_t *len, err_t *e);

/* Reads path whole and hands its text to parse(obj, path, text, e), the
 * string form of a loader; returns parse's status, or file_read_all's
 * error without calling it. The text is freed after. */
typedef int (*file_parse_fn)(void *obj, const char *origin, const char *text, err_t *e);
int file_parse(const char *path, file_parse_fn parse, void *obj, err_t *e);

/* Writes all n bytes of p to fd, retrying on EINTR and short writes, in
 * write(2) calls of at most 256 KiB (one write of a whole multi-megabyte
 * buffer cost 25-35 ms of kernel time on ext4 here, the same bytes in
 * 64 KiB-1 MiB writes 3-4 ms). 0, or -1 with errno set (0 when write
 * returned 0). */
int file_write_all(int fd, const void *p, size_t n);

/* ---- outputs written whole ----------------------------------------------
 * Every file kvsim writes at a path the user names goes through these. A
 * regular file (or a new name) is written as PATH.tmp and renamed over PATH
 * by file_out_commit, so a failure leaves PATH as it was. A FIFO or a
 * character device (/dev/null, /dev/stdout) is the user's node, never
 * replaced or removed: a streaming writer writes it in place; a writer that
 * needs a seekable file (HDF5: FILE_OUT_SEEKABLE) builds a temporary file in
 * $TMPDIR (/tmp) that commit copies into the node. A directory, a block
 * device or a socket is refused. Errors name PATH, never the temporary. */
enum { FILE_OUT_STREAM = 0, FILE_OUT_SEEKABLE = 1 };
enum { FILE_OUT_RENAME, FILE_OUT_THROUGH, FILE_OUT_COPY };
typedef struct file_out {
	char path[4096]; /* the name the user gave */
	char tmp[4096];  /* the name to write (PATH itself when FILE_OUT_THROUGH) */
	int how;         /* FILE_OUT_RENAME, FILE_OUT_THROUGH or FILE_OUT_COPY */
} file_out_t;

/* Chooses how path is written (flags: FILE_OUT_STREAM or _SEEKABLE) and
 * fills o; creates nothing but COPY's temporary. 0, or KS_EINPUT ("PATH:
 * cannot write: REASON"), KS_EIO. */
int file_out_begin(file_out_t *o, const char *path, int flags, err_t *e);
/* After the writer closed o->tmp: renames it over PATH (fsync'd first when
 * sync), or copies it into the node; nothing for a node written in place.
 * On failure the temporary is removed: "PATH: cannot replace: REASON". */
int file_out_commit(file_out_t *o, int sync, err_t *e);
/* Removes the temporary, if any; a node written in place is left as it is. */
void file_out_abort(file_out_t *o);
/* KS_EINPUT "OUT: is also the input IN: write to another name" when out
 * already exists and is the same file as in (same device and inode; a
 * character device such as /dev/null may be both); 0 otherwise (in may be
 * NULL or ""). */
int file_out_not_input(const char *out, const char *in, err_t *e);

#endif

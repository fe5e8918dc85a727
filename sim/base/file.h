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

#endif

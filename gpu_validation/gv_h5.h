/* gv_h5 — small HDF5 helpers shared by the gpu_validation files (internal). */
#ifndef KVSIM_GV_H5_H
#define KVSIM_GV_H5_H

#include <hdf5.h>
#include <stddef.h>

#include "sim/base/err.h"
#include "sim/base/file.h"

/* Turns off HDF5's automatic error stack printing (we report our own). */
void gv_h5_quiet(void);
/* Opens path read-only; H5I_INVALID_HID with e filled on failure. */
hid_t gv_h5_open(const char *path, err_t *e);
/* Creates the file that will become path (fo->tmp, file_out in
 * sim/base/file.h: PATH.tmp, or a temporary for a FIFO or a device);
 * H5I_INVALID_HID with e filled on failure. */
hid_t gv_h5_create(file_out_t *fo, const char *path, err_t *e);
/* Closes f (made by gv_h5_create) and, when rc is 0 and the close
 * succeeds, puts it at fo->path (file_out_commit); otherwise removes it, so
 * a failed write leaves no file. Returns rc, or KS_EIO with e filled. */
int gv_h5_finish(hid_t f, file_out_t *fo, int rc, err_t *e);
/* Writes a 1-D compound dataset of n records (n may be 0), chunked + deflate. */
int gv_h5_write_table(hid_t file, const char *name, hid_t type, const void *rows, size_t n,
                      const char *path, err_t *e);
/* Reads a 1-D compound dataset into a malloc'd array of rows of `type` (matched
 * by member name). Each name in `required` must be a member of the file's
 * type. *rows is NULL when n is 0. */
int gv_h5_read_table(hid_t file, const char *name, hid_t type, const char *const *required,
                     size_t n_required, void **rows, size_t *n, const char *path, err_t *e);
int gv_h5_attr_str(hid_t obj, const char *name, const char *value);
int gv_h5_attr_i64(hid_t obj, const char *name, long long value);
int gv_h5_attr_f64(hid_t obj, const char *name, double value);
/* Reads an attribute if present: 1 read, 0 absent, negative on error. */
int gv_h5_get_str(hid_t obj, const char *name, char *out, size_t cap);
int gv_h5_get_i64(hid_t obj, const char *name, long long *out);
int gv_h5_get_f64(hid_t obj, const char *name, double *out);

/* The compound type of res_transfer_t (sim/base/results.h) in native layout, the
 * /transfers row type (caller H5Tclose's); negative on failure. */
hid_t gv_sched_h5type(void);

#endif

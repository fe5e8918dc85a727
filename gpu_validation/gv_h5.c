/* gv_h5 — HDF5 helpers for the gpu_validation files (see gv_h5.h). */
#include "gpu_validation/gv_h5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gv_h5_quiet(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

hid_t gv_h5_open(const char *path, err_t *e)
{
	/* A path that names nothing readable, or not an HDF5 file, is the
	 * user's input; an HDF5 file that fails to open is an I/O error. */
	FILE *in = err_fopen_in(path, e);
	if (!in)
		return -1;
	fclose(in);
	gv_h5_quiet();
	if (H5Fis_hdf5(path) <= 0) {
		err_set(e, KS_EINPUT, "%s: not an HDF5 file", path);
		return -1;
	}
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		err_set(e, KS_EIO, "%s: cannot open as HDF5", path);
	return f;
}

hid_t gv_h5_create(file_out_t *fo, const char *path, err_t *e)
{
	gv_h5_quiet();
	if (file_out_begin(fo, path, FILE_OUT_SEEKABLE, e))
		return H5I_INVALID_HID;
	hid_t f = H5Fcreate(fo->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (f < 0) {
		err_set(e, KS_EIO, "%s: cannot create HDF5 file", path);
		file_out_abort(fo);
	}
	return f;
}

int gv_h5_finish(hid_t f, file_out_t *fo, int rc, err_t *e)
{
	if (H5Fclose(f) < 0 && !rc)
		rc = err_set(e, KS_EIO, "%s: close failed", fo->path);
	if (!rc)
		rc = file_out_commit(fo, 0, e);
	if (rc)
		file_out_abort(fo);
	return rc;
}

int gv_h5_write_table(hid_t file, const char *name, hid_t type, const void *rows, size_t n,
                      const char *path, err_t *e)
{
	hsize_t dims[1] = {n}, maxdims[1] = {H5S_UNLIMITED};
	hsize_t chunk[1] = {n < 1 ? 1 : n > 4096 ? 4096 : n};
	hid_t space = H5Screate_simple(1, dims, maxdims);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	int rc = 0;
	if (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0 ||
	    H5Pset_deflate(dcpl, 4) < 0) {
		rc = err_set(e, KS_EIO, "%s: %s: cannot set up dataset", path, name);
		goto out;
	}
	hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (ds < 0) {
		rc = err_set(e, KS_EIO, "%s: %s: cannot create dataset", path, name);
		goto out;
	}
	if (n && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
		rc = err_set(e, KS_EIO, "%s: %s: write failed", path, name);
	H5Dclose(ds);
out:
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	return rc;
}

int gv_h5_read_table(hid_t file, const char *name, hid_t type, const char *const *required,
                     size_t n_required, void **rows, size_t *n, const char *path, err_t *e)
{
	*rows = NULL;
	*n = 0;
	int rc = 0;
	hid_t ds = H5Dopen2(file, name, H5P_DEFAULT), ftype = -1, space = -1;
	if (ds < 0)
		return err_set(e, KS_EINPUT, "%s: no dataset %s", path, name);
	ftype = H5Dget_type(ds);
	space = H5Dget_space(ds);
	if (ftype < 0 || space < 0 || H5Tget_class(ftype) != H5T_COMPOUND ||
	    H5Sget_simple_extent_ndims(space) != 1) {
		rc = err_set(e, KS_EINPUT, "%s: %s: expected a 1-D compound table", path, name);
		goto out;
	}
	for (size_t i = 0; i < n_required; i++)
		if (H5Tget_member_index(ftype, required[i]) < 0) {
			rc = err_set(e, KS_EINPUT, "%s: %s: member '%s' missing", path, name,
			             required[i]);
			goto out;
		}
	hsize_t dims[1];
	H5Sget_simple_extent_dims(space, dims, NULL);
	if (dims[0]) {
		size_t sz = H5Tget_size(type);
		*rows = calloc(dims[0], sz);
		if (!*rows) {
			rc = err_set(e, KS_ENOMEM, "%s: %s: out of memory for %llu rows", path,
			             name, (unsigned long long)dims[0]);
			goto out;
		}
		if (H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) < 0) {
			free(*rows);
			*rows = NULL;
			rc = err_set(e, KS_EINPUT, "%s: %s: read failed (member types?)", path,
			             name);
			goto out;
		}
	}
	*n = dims[0];
out:
	if (space >= 0)
		H5Sclose(space);
	if (ftype >= 0)
		H5Tclose(ftype);
	H5Dclose(ds);
	return rc;
}

static int attr_write(hid_t obj, const char *name, hid_t type, const void *v)
{
	hid_t space = H5Screate(H5S_SCALAR);
	if (H5Aexists(obj, name) > 0)
		H5Adelete(obj, name);
	hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
	int rc = (a < 0 || H5Awrite(a, type, v) < 0) ? KS_EIO : 0;
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(space);
	return rc;
}

int gv_h5_attr_str(hid_t obj, const char *name, const char *value)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, strlen(value) + 1);
	H5Tset_strpad(t, H5T_STR_NULLTERM);
	int rc = attr_write(obj, name, t, value);
	H5Tclose(t);
	return rc;
}

int gv_h5_attr_i64(hid_t obj, const char *name, long long value)
{
	return attr_write(obj, name, H5T_NATIVE_LLONG, &value);
}

int gv_h5_attr_f64(hid_t obj, const char *name, double value)
{
	return attr_write(obj, name, H5T_NATIVE_DOUBLE, &value);
}

static hid_t attr_open(hid_t obj, const char *name)
{
	if (H5Aexists(obj, name) <= 0)
		return -1;
	return H5Aopen(obj, name, H5P_DEFAULT);
}

int gv_h5_get_str(hid_t obj, const char *name, char *out, size_t cap)
{
	hid_t a = attr_open(obj, name);
	if (a < 0)
		return 0;
	hid_t ft = H5Aget_type(a);
	int rc = -1;
	if (H5Tget_class(ft) == H5T_STRING && !H5Tis_variable_str(ft)) {
		size_t sz = H5Tget_size(ft);
		char *buf = calloc(1, sz + 1);
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, sz + 1);
		if (buf && H5Aread(a, mt, buf) >= 0) {
			snprintf(out, cap, "%s", buf);
			rc = 1;
		}
		H5Tclose(mt);
		free(buf);
	}
	H5Tclose(ft);
	H5Aclose(a);
	return rc;
}

/* A numeric attribute read as the native type mt: 1, 0 absent, -1 unreadable. */
static int get_num(hid_t obj, const char *name, hid_t mt, void *out)
{
	hid_t a = attr_open(obj, name);
	if (a < 0)
		return 0;
	int rc = H5Aread(a, mt, out) < 0 ? -1 : 1;
	H5Aclose(a);
	return rc;
}

int gv_h5_get_i64(hid_t obj, const char *name, long long *out)
{
	return get_num(obj, name, H5T_NATIVE_LLONG, out);
}

int gv_h5_get_f64(hid_t obj, const char *name, double *out)
{
	return get_num(obj, name, H5T_NATIVE_DOUBLE, out);
}

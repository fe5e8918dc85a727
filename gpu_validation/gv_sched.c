/* gv_sched — reads and writes /transfers schedules (see gv_sched.h). */
#include "gpu_validation/gv_sched.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu_validation/gv_h5.h"

/* Member names are the contract with the outputs module: exactly the field
 * names of res_transfer_t. */
static const char *const members[] = {
    "id",    "src_instance", "src_gpu",  "dst_instance", "dst_gpu", "bytes",    "blocks",
    "klass", "path_kind",    "granular", "start_ns",     "end_ns",  "cancelled"};
#define N_MEMBERS (sizeof members / sizeof members[0])

hid_t gv_sched_h5type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(res_transfer_t));
	if (t < 0)
		return t;
#define M(name, type) H5Tinsert(t, #name, HOFFSET(res_transfer_t, name), type)
	M(id, H5T_NATIVE_UINT64);
	M(src_instance, H5T_NATIVE_INT32);
	M(src_gpu, H5T_NATIVE_INT32);
	M(dst_instance, H5T_NATIVE_INT32);
	M(dst_gpu, H5T_NATIVE_INT32);
	M(bytes, H5T_NATIVE_UINT64);
	M(blocks, H5T_NATIVE_UINT32);
	M(klass, H5T_NATIVE_INT32);
	M(path_kind, H5T_NATIVE_INT32);
	M(granular, H5T_NATIVE_INT32);
	M(start_ns, H5T_NATIVE_INT64);
	M(end_ns, H5T_NATIVE_INT64);
	M(cancelled, H5T_NATIVE_INT32);
#undef M
	return t;
}

int gv_sched_read(gv_sched_t *s, const char *path, err_t *e)
{
	s->xfer = NULL;
	s->n = 0;
	s->is_plan = 0;
	hid_t f = gv_h5_open(path, e);
	if (f < 0)
		return e->code; /* KS_EINPUT for a path that is not an HDF5 file */
	hid_t t = gv_sched_h5type();
	void *rows = NULL;
	int rc = gv_h5_read_table(f, "/transfers", t, members, N_MEMBERS, &rows, &s->n, path, e);
	if (!rc) {
		long long plan = 0;
		s->is_plan = gv_h5_get_i64(f, "kvsim_plan", &plan) == 1 && plan;
		s->xfer = rows;
	}
	H5Tclose(t);
	H5Fclose(f);
	return rc;
}

void gv_sched_free(gv_sched_t *s)
{
	free(s->xfer);
	s->xfer = NULL;
	s->n = 0;
}

int gv_sched_write(const char *path, const res_transfer_t *t, size_t n, int is_plan, err_t *e)
{
	file_out_t fo;
	hid_t f = gv_h5_create(&fo, path, e);
	if (f < 0)
		return e && e->code ? e->code : KS_EIO;
	const char *tmp = fo.tmp;
	hid_t ty = gv_sched_h5type();
	int rc = gv_h5_write_table(f, "/transfers", ty, t, n, tmp, e);
	if (!rc && is_plan && gv_h5_attr_i64(f, "kvsim_plan", 1))
		rc = err_set(e, KS_EIO, "%s: cannot write attribute", tmp);
	H5Tclose(ty);
	return gv_h5_finish(f, &fo, rc, e);
}

/* gv_meas — measurement file I/O (see gv_meas.h). */
#include "gpu_validation/gv_meas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_validation/gv_h5.h"

const char *gv_copy_kind_name(int kind)
{
	static const char *const n[] = {"h2d", "d2h", "d2d", "p2p"};
	return kind >= 0 && kind < 4 ? n[kind] : "?";
}

static hid_t copy_type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(gv_copy_t));
#define M(name, type) H5Tinsert(t, #name, HOFFSET(gv_copy_t, name), type)
	M(id, H5T_NATIVE_UINT64);
	M(group, H5T_NATIVE_INT32);
	M(kind, H5T_NATIVE_INT32);
	M(link, H5T_NATIVE_INT32);
	M(shape, H5T_NATIVE_INT32);
	M(stream, H5T_NATIVE_INT32);
	M(src_dev, H5T_NATIVE_INT32);
	M(dst_dev, H5T_NATIVE_INT32);
	M(bytes, H5T_NATIVE_UINT64);
	M(blocks, H5T_NATIVE_UINT32);
	M(inner, H5T_NATIVE_UINT32);
	M(m_same, H5T_NATIVE_INT32);
	M(m_opp, H5T_NATIVE_INT32);
	M(reps, H5T_NATIVE_INT32);
	M(planned_start_ns, H5T_NATIVE_INT64);
	M(start_ns, H5T_NATIVE_INT64);
	M(end_ns, H5T_NATIVE_INT64);
	M(min_ns, H5T_NATIVE_INT64);
	M(max_ns, H5T_NATIVE_INT64);
#undef M
	return t;
}

static hid_t compute_type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(gv_compute_t));
	hid_t s = H5Tcopy(H5T_C_S1);
	H5Tset_size(s, sizeof(((gv_compute_t *)0)->op));
	H5Tset_strpad(s, H5T_STR_NULLTERM);
	H5Tinsert(t, "op", HOFFSET(gv_compute_t, op), s);
	H5Tclose(s);
#define M(name, type) H5Tinsert(t, #name, HOFFSET(gv_compute_t, name), type)
	M(m, H5T_NATIVE_INT64);
	M(n, H5T_NATIVE_INT64);
	M(k, H5T_NATIVE_INT64);
	M(flops, H5T_NATIVE_DOUBLE);
	M(bytes, H5T_NATIVE_DOUBLE);
	M(time_ns, H5T_NATIVE_INT64);
	M(flops_per_s, H5T_NATIVE_DOUBLE);
	M(bytes_per_s, H5T_NATIVE_DOUBLE);
#undef M
	return t;
}

static const char *const copy_required[] = {"id",     "kind",   "link",  "shape",    "bytes",
                                            "blocks", "m_same", "m_opp", "start_ns", "end_ns"};
static const char *const comp_required[] = {"op", "time_ns"};

int gv_meas_write(const char *path, const gv_meas_t *m, err_t *e)
{
	file_out_t fo;
	hid_t f = gv_h5_create(&fo, path, e);
	if (f < 0)
		return e && e->code ? e->code : KS_EIO;
	const char *tmp = fo.tmp;
	hid_t ct = copy_type(), pt = compute_type();
	int rc = gv_h5_write_table(f, "/copies", ct, m->copy, m->n_copy, tmp, e);
	if (!rc)
		rc = gv_h5_write_table(f, "/compute", pt, m->comp, m->n_comp, tmp, e);
	if (!rc && (gv_h5_attr_str(f, "backend", m->backend) ||
	            gv_h5_attr_str(f, "device_name", m->device) ||
	            gv_h5_attr_str(f, "driver_version", m->driver) ||
	            gv_h5_attr_str(f, "runtime_version", m->runtime) ||
	            gv_h5_attr_i64(f, "clock_khz", m->clock_khz) ||
	            gv_h5_attr_i64(f, "mem_clock_khz", m->mem_clock_khz) ||
	            gv_h5_attr_str(f, "command_line", m->cmdline) ||
	            gv_h5_attr_str(f, "schedule", m->schedule) ||
	            gv_h5_attr_str(f, "peer_access", m->peer) ||
	            gv_h5_attr_f64(f, "peak_flops", m->peak_flops) ||
	            gv_h5_attr_f64(f, "peak_bytes_per_s", m->peak_bytes_per_s)))
		rc = err_set(e, KS_EIO, "%s: cannot write attributes", tmp);
	H5Tclose(ct);
	H5Tclose(pt);
	return gv_h5_finish(f, &fo, rc, e);
}

int gv_meas_read(gv_meas_t *m, const char *path, err_t *e)
{
	memset(m, 0, sizeof *m);
	hid_t f = gv_h5_open(path, e);
	if (f < 0)
		return e->code; /* KS_EINPUT for a path that is not an HDF5 file */
	hid_t ct = copy_type(), pt = compute_type();
	void *rows = NULL;
	int rc = gv_h5_read_table(f, "/copies", ct, copy_required, 10, &rows, &m->n_copy, path, e);
	m->copy = rows;
	if (!rc && H5Lexists(f, "/compute", H5P_DEFAULT) > 0) {
		rc = gv_h5_read_table(f, "/compute", pt, comp_required, 2, &rows, &m->n_comp, path,
		                      e);
		m->comp = rows;
	}
	if (!rc) {
		long long v;
		gv_h5_get_str(f, "backend", m->backend, sizeof m->backend);
		gv_h5_get_str(f, "device_name", m->device, sizeof m->device);
		gv_h5_get_str(f, "driver_version", m->driver, sizeof m->driver);
		gv_h5_get_str(f, "runtime_version", m->runtime, sizeof m->runtime);
		gv_h5_get_str(f, "command_line", m->cmdline, sizeof m->cmdline);
		gv_h5_get_str(f, "schedule", m->schedule, sizeof m->schedule);
		gv_h5_get_str(f, "peer_access", m->peer, sizeof m->peer);
		if (gv_h5_get_i64(f, "clock_khz", &v) == 1)
			m->clock_khz = v;
		if (gv_h5_get_i64(f, "mem_clock_khz", &v) == 1)
			m->mem_clock_khz = v;
		gv_h5_get_f64(f, "peak_flops", &m->peak_flops);
		gv_h5_get_f64(f, "peak_bytes_per_s", &m->peak_bytes_per_s);
	}
	H5Tclose(ct);
	H5Tclose(pt);
	H5Fclose(f);
	if (rc)
		gv_meas_free(m);
	return rc;
}

void gv_meas_free(gv_meas_t *m)
{
	free(m->copy);
	free(m->comp);
	m->copy = NULL;
	m->comp = NULL;
	m->n_copy = m->n_comp = 0;
}

int gv_meas_append(gv_meas_t *dst, const gv_meas_t *src, err_t *e)
{
	gv_copy_t *c = realloc(dst->copy, (dst->n_copy + src->n_copy + 1) * sizeof *c);
	if (!c)
		return err_set(e, KS_ENOMEM, "out of memory");
	dst->copy = c;
	gv_compute_t *k = realloc(dst->comp, (dst->n_comp + src->n_comp + 1) * sizeof *k);
	if (!k)
		return err_set(e, KS_ENOMEM, "out of memory");
	dst->comp = k;
	if (src->n_copy)
		memcpy(c + dst->n_copy, src->copy, src->n_copy * sizeof *c);
	if (src->n_comp)
		memcpy(k + dst->n_comp, src->comp, src->n_comp * sizeof *k);
	dst->n_copy += src->n_copy;
	dst->n_comp += src->n_comp;
	if (!(dst->peak_flops > 0))
		dst->peak_flops = src->peak_flops;
	if (!(dst->peak_bytes_per_s > 0))
		dst->peak_bytes_per_s = src->peak_bytes_per_s;
	return 0;
}

/* out_hdf5 — see out_hdf5.h. */
#include "sim/out/out_hdf5.h"
#include "sim/base/file.h"
#include "sim/run/sim_params.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OUT_HDF5_FORMAT 1

enum { C_U64, C_I64, C_U32, C_I32, C_F64 };

typedef struct col {
	const char *name;
	size_t off;
	int kind;
	const char *unit;
	const char *values; /* enum codes, or NULL */
} col_t;

static const char st_values[] =
	"0=completed,1=rejected_too_long,2=rejected_slo,3=unfinished,4=failed_in_trace,"
	"5=rejected_overload,6=abandoned";
static const char kl_values[] = "0=foreground,1=background,2=handoff";
static const char pk_values[] = "0=nvlink,1=pcie_h2d,2=pcie_d2h,3=net,4=nvme_read,5=nvme_write,6=pool_get,7=pool_put";
static const char tk_values[] = "0=instance,1=link";

#define RQ(f, k, u, v) {#f, offsetof(res_request_t, f), k, u, v}
static const col_t req_cols[] = {
	RQ(id, C_U64, "", NULL),
	RQ(arrival_ns, C_I64, "ns", NULL),
	RQ(instance, C_I32, "", NULL),
	RQ(status, C_I32, "", st_values),
	RQ(ttft_ns, C_I64, "ns", NULL),
	RQ(tpot_ns, C_I64, "ns", NULL),
	RQ(tbt_p90_ns, C_I64, "ns", NULL),
	RQ(e2e_ns, C_I64, "ns", NULL),
	RQ(queue_ns, C_I64, "ns", NULL),
	RQ(fetch_wait_ns, C_I64, "ns", NULL),
	RQ(input_tokens, C_U32, "tokens", NULL),
	RQ(output_tokens, C_U32, "tokens", NULL),
	RQ(tok_local, C_U32, "tokens", NULL),
	RQ(tok_peer, C_U32, "tokens", NULL),
	RQ(tok_host, C_U32, "tokens", NULL),
	RQ(tok_recomputed, C_U32, "tokens", NULL),
	RQ(tok_spec_hit, C_U32, "tokens", NULL),
	RQ(decode_instance, C_I32, "", "-1=none"),
	RQ(handoff_wait_ns, C_I64, "ns", "-1=none"),
};
#define XF(f, k, u, v) {#f, offsetof(res_transfer_t, f), k, u, v}
static const col_t xfer_cols[] = {
	XF(id, C_U64, "", NULL),
	XF(src_instance, C_I32, "", "-1=a tier below HBM (path_kind)"),
	XF(src_gpu, C_I32, "", "-1=a tier below HBM (path_kind)"),
	XF(dst_instance, C_I32, "", "-1=a tier below HBM (path_kind)"),
	XF(dst_gpu, C_I32, "", "-1=a tier below HBM (path_kind)"),
	XF(bytes, C_U64, "bytes", NULL),
	XF(blocks, C_U32, "blocks", NULL),
	XF(klass, C_I32, "", kl_values),
	XF(path_kind, C_I32, "", pk_values),
	XF(granular, C_I32, "", "1=one copy per block,0=contiguous"),
	XF(start_ns, C_I64, "ns", NULL),
	XF(end_ns, C_I64, "ns", NULL),
	XF(cancelled, C_I32, "", "0=no,1=yes"),
	XF(requested_ns, C_I64, "ns", NULL),
};
#define TL(f, k, u, v) {#f, offsetof(res_sample_t, f), k, u, v}
static const col_t tl_cols[] = {
	TL(t_ns, C_I64, "ns", NULL),
	TL(kind, C_I32, "", tk_values),
	TL(index, C_I32, "", NULL),
	TL(queue_len, C_F64, "requests", NULL),
	TL(batch_size, C_F64, "requests", NULL),
	TL(kv_used_bytes, C_F64, "bytes", NULL),
	TL(spec_kv_bytes, C_F64, "bytes", NULL),
	TL(util_fg, C_F64, "fraction", NULL),
	TL(util_bg, C_F64, "fraction", NULL),
};
#define DC(f, k, u, v) {#f, offsetof(res_decision_t, f), k, u, v}
static const char dk_values[] = "0=route,1=copy,2=evict,3=admit";
static const char do_values[] =
	"0=ok (route: enqueued; copy: started; evict: evicted; admit: admitted),1=rejected_admission,"
	"2=rejected_overload,3=refused";
static const char dt_values[] = "-1=none (not evict),0=hbm,1=host,2=nvme,3=pool";
static const col_t dec_cols[] = {
	DC(t_ns, C_I64, "ns", NULL),
	DC(kind, C_I32, "", dk_values),
	DC(outcome, C_I32, "", do_values),
	DC(id, C_U64, "", NULL),
	DC(chosen, C_I32, "", NULL),
	DC(hinted, C_I32, "", "route: 1=replication policy's route hint; copy: 1=background"),
	DC(n_options, C_U32, "options", NULL),
	DC(chosen_matched, C_U32, "blocks", NULL),
	DC(src, C_I32, "", "-1=none (route, evict, admit)"),
	DC(blocks, C_U32, "blocks", NULL),
	DC(prefix, C_U64, "", "0=none"),
	DC(chosen_est_ns, C_I64, "ns", "-1=none (copy, evict)"),
	DC(best_est_ns, C_I64, "ns", "-1=none (copy, evict, admit)"),
	DC(regret_ns, C_I64, "ns", "-1=none (copy, evict, admit)"),
	DC(opt0_inst, C_I32, "", "-1=none"),
	DC(opt1_inst, C_I32, "", "-1=none"),
	DC(opt2_inst, C_I32, "", "-1=none"),
	DC(opt3_inst, C_I32, "", "-1=none"),
	DC(opt0_score, C_I64, "ns", "-1=none"),
	DC(opt1_score, C_I64, "ns", "-1=none"),
	DC(opt2_score, C_I64, "ns", "-1=none"),
	DC(opt3_score, C_I64, "ns", "-1=none"),
	DC(tier, C_I32, "", dt_values),
	DC(depth, C_U32, "blocks", NULL),
	DC(spec, C_I32, "", "evict: 1=speculative copy never used"),
	DC(used, C_I32, "", "evict: 1=matched by a request"),
	DC(age_ns, C_I64, "ns", "-1=none (not evict)"),
	DC(score, C_F64, "", "evict: eviction priority (lru: last use, ns); admit: estimate, ns; -1=none"),
	DC(slo_ns, C_I64, "ns", "-1=none (not admit)"),
	DC(seq, C_U64, "", "evict: the store's evictions before this one"),
};
#define NCOLS(a) (sizeof a / sizeof a[0])

typedef struct table {
	const char *name;
	const col_t *cols;
	size_t ncols, rowsize;
	const char *doc;
} table_t;

static const table_t t_req = {"requests", req_cols, NCOLS(req_cols), sizeof(res_request_t),
			      "one row per request"};
static const table_t t_xfer = {"transfers", xfer_cols, NCOLS(xfer_cols),
			       sizeof(res_transfer_t), "one row per KV copy"};
static const table_t t_tl = {"timeline", tl_cols, NCOLS(tl_cols), sizeof(res_sample_t),
			     "per instance and per link, sampled: a step function per series, "
			     "values holding until its next row (output.timeline)"};
static const table_t t_dec = {"decisions", dec_cols, NCOLS(dec_cols), sizeof(res_decision_t),
			      "one row per routing decision, policy copy, evicted KV block and admission call "
			      "(output.decisions): route scores are the estimated TTFT min_ttft minimises, "
			      "whichever router decided; regret_ns = chosen_est_ns - best_est_ns"};

static hid_t kind_mem(int k)
{
	switch (k) {
	case C_U64: return H5T_NATIVE_UINT64;
	case C_I64: return H5T_NATIVE_INT64;
	case C_U32: return H5T_NATIVE_UINT32;
	case C_I32: return H5T_NATIVE_INT32;
	default: return H5T_NATIVE_DOUBLE;
	}
}

static hid_t kind_file(int k, size_t *size)
{
	switch (k) {
	case C_U64: *size = 8; return H5T_STD_U64LE;
	case C_I64: *size = 8; return H5T_STD_I64LE;
	case C_U32: *size = 4; return H5T_STD_U32LE;
	case C_I32: *size = 4; return H5T_STD_I32LE;
	default: *size = 8; return H5T_IEEE_F64LE;
	}
}

/* Closes an object this file created or opened, by its kind; -1 (a failed
 * create) is skipped, so cleanup paths need no test per handle. */
static void h5_close(hid_t id)
{
	if (id < 0)
		return;
	switch (H5Iget_type(id)) {
	case H5I_DATASET: H5Dclose(id); break;
	case H5I_DATATYPE: H5Tclose(id); break;
	case H5I_DATASPACE: H5Sclose(id); break;
	case H5I_ATTR: H5Aclose(id); break;
	case H5I_GROUP: H5Gclose(id); break;
	case H5I_GENPROP_LST: H5Pclose(id); break;
	default: H5Idec_ref(id); break;
	}
}

/* In-memory compound type matching the C struct (padding included). */
static hid_t type_mem(const table_t *t)
{
	hid_t ty = H5Tcreate(H5T_COMPOUND, t->rowsize);
	if (ty < 0)
		return -1;
	for (size_t i = 0; i < t->ncols; i++)
		if (H5Tinsert(ty, t->cols[i].name, t->cols[i].off, kind_mem(t->cols[i].kind)) < 0) {
			H5Tclose(ty);
			return -1;
		}
	return ty;
}

/* On-disk type: packed, little-endian, same member names and order. */
static hid_t type_file(const table_t *t)
{
	size_t total = 0, sz;
	for (size_t i = 0; i < t->ncols; i++) {
		kind_file(t->cols[i].kind, &sz);
		total += sz;
	}
	hid_t ty = H5Tcreate(H5T_COMPOUND, total);
	if (ty < 0)
		return -1;
	size_t off = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		hid_t ft = kind_file(t->cols[i].kind, &sz);
		if (H5Tinsert(ty, t->cols[i].name, off, ft) < 0) {
			H5Tclose(ty);
			return -1;
		}
		off += sz;
	}
	return ty;
}

/* The type of every string here: variable length, UTF-8. -1 on failure. */
static hid_t vlen_str_type(void)
{
	hid_t ty = H5Tcopy(H5T_C_S1);
	if (ty >= 0 && (H5Tset_size(ty, H5T_VARIABLE) < 0 || H5Tset_cset(ty, H5T_CSET_UTF8) < 0)) {
		H5Tclose(ty);
		return -1;
	}
	return ty;
}

static int attr_str(hid_t obj, const char *name, const char *val)
{
	hid_t ty = vlen_str_type(), sp = H5Screate(H5S_SCALAR), a = -1;
	int rc = -1;
	if (ty < 0 || sp < 0)
		goto out;
	a = H5Acreate2(obj, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0)
		goto out;
	const char *v = val ? val : "";
	rc = H5Awrite(a, ty, &v) < 0 ? -1 : 0;
out:
	h5_close(a);
	h5_close(sp);
	h5_close(ty);
	return rc;
}

static int attr_num(hid_t obj, const char *name, hid_t file_ty, hid_t mem_ty, const void *v)
{
	hid_t sp = H5Screate(H5S_SCALAR);
	if (sp < 0)
		return -1;
	hid_t a = H5Acreate2(obj, name, file_ty, sp, H5P_DEFAULT, H5P_DEFAULT);
	int rc = (a < 0 || H5Awrite(a, mem_ty, v) < 0) ? -1 : 0;
	h5_close(a);
	H5Sclose(sp);
	return rc;
}

static hid_t chunked_dcpl(hsize_t chunk, int level)
{
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	if (p < 0)
		return -1;
	if (H5Pset_chunk(p, 1, &chunk) < 0 || (level > 0 && H5Pset_shuffle(p) < 0) ||
	    (level > 0 && H5Pset_deflate(p, (unsigned)level) < 0)) {
		H5Pclose(p);
		return -1;
	}
	return p;
}

/* Creates the extendible 1-D dataset loc/name of n rows (file type ft,
 * memory type mt; -1 for either fails) in chunks of chunk rows and writes
 * rows into it (NULL: written later). The open dataset, or -1. */
static hid_t rows_create(hid_t loc, const char *name, hid_t mt, hid_t ft, const void *rows,
			 size_t n, hsize_t chunk, int level)
{
	hsize_t dims = n, maxd = H5S_UNLIMITED;
	hid_t sp = H5Screate_simple(1, &dims, &maxd), dcpl = chunked_dcpl(chunk, level), d = -1;
	if (mt >= 0 && ft >= 0 && sp >= 0 && dcpl >= 0)
		d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (d >= 0 && n && rows && H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
		H5Dclose(d);
		d = -1;
	}
	h5_close(dcpl);
	h5_close(sp);
	return d;
}

/* A table's rows: every row of table `table` of r (spilled ones too), or,
 * r NULL, rows[0 .. n). */
typedef struct row_src {
	const sim_results_t *r;
	int table;
	const void *rows;
	size_t n;
} row_src_t;

static size_t src_count(const row_src_t *s)
{
	return s->r ? sim_results_count(s->r, s->table) : s->n;
}

/* fn on every row of s, in blocks. */
static int src_each(const row_src_t *s, res_rows_fn fn, void *ctx)
{
	if (s->r)
		return sim_results_rows(s->r, s->table, fn, ctx);
	return s->n ? fn(ctx, s->rows, s->n) : 0;
}

/* Rows written into dataset d a chunk at a time (buf holds up to chunk
 * rows), so a streamed table needs no more memory than a chunk. */
typedef struct h5_put {
	hid_t d, mt;
	char *buf;
	size_t rowsize, chunk, n;
	hsize_t at; /* rows written */
} h5_put_t;

static int put_flush(h5_put_t *p)
{
	hsize_t cnt = p->n;
	hid_t fs = p->n ? H5Dget_space(p->d) : -1, ms = p->n ? H5Screate_simple(1, &cnt, NULL) : -1;
	int rc = p->n && (fs < 0 || ms < 0 ||
			  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &p->at, NULL, &cnt, NULL) < 0 ||
			  H5Dwrite(p->d, p->mt, ms, fs, H5P_DEFAULT, p->buf) < 0)
		     ? KS_EIO
		     : 0;
	h5_close(ms);
	h5_close(fs);
	p->at += cnt;
	p->n = 0;
	return rc;
}

static int put_rows(void *ctx, const void *rows, size_t n)
{
	h5_put_t *p = ctx;
	const char *src = rows;
	while (n) {
		size_t k = p->chunk - p->n < n ? p->chunk - p->n : n;
		memcpy(p->buf + p->n * p->rowsize, src, k * p->rowsize);
		p->n += k;
		src += k * p->rowsize;
		n -= k;
		int rc = p->n == p->chunk ? put_flush(p) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

static int write_table(hid_t f, const table_t *t, const row_src_t *src,
		       const out_hdf5_opts_t *o)
{
	size_t n = src_count(src);
	hsize_t chunk = o->chunk_rows < n ? o->chunk_rows : (n ? n : 1);
	hid_t mt = type_mem(t), ft = type_file(t);
	hid_t d = rows_create(f, t->name, mt, ft, NULL, n, chunk, o->compression);
	h5_put_t put = {d, mt, malloc(chunk * t->rowsize), t->rowsize, chunk, 0, 0};
	int rc = -1;
	if (d < 0 || !put.buf || src_each(src, put_rows, &put) || put_flush(&put))
		goto out;
	if (attr_str(d, "doc", t->doc) < 0)
		goto out;
	for (size_t i = 0; i < t->ncols; i++) {
		char an[96];
		snprintf(an, sizeof an, "unit.%s", t->cols[i].name);
		if (attr_str(d, an, t->cols[i].unit) < 0)
			goto out;
		if (t->cols[i].values) {
			snprintf(an, sizeof an, "values.%s", t->cols[i].name);
			if (attr_str(d, an, t->cols[i].values) < 0)
				goto out;
		}
	}
	rc = 0;
out:
	free(put.buf);
	h5_close(d);
	h5_close(ft);
	h5_close(mt);
	return rc;
}

/* A NUL-terminated fixed string of n bytes. */
static hid_t fixed_str(size_t n)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, n);
	H5Tset_strpad(t, H5T_STR_NULLTERM);
	return t;
}

/* Metric table type; mem and file layouts coincide (fixed strings + f64). */
static hid_t metric_type(int file)
{
	hid_t s48 = fixed_str(sizeof((res_metric_t *)0)->name);
	hid_t s16 = fixed_str(sizeof((res_metric_t *)0)->unit);
	hid_t ty = H5Tcreate(H5T_COMPOUND, sizeof(res_metric_t));
	H5Tinsert(ty, "name", offsetof(res_metric_t, name), s48);
	H5Tinsert(ty, "unit", offsetof(res_metric_t, unit), s16);
	H5Tinsert(ty, "value", offsetof(res_metric_t, value),
		  file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
	H5Tclose(s48);
	H5Tclose(s16);
	return ty;
}

/* /windows row type (res_window_t); mem and file layouts coincide. */
static hid_t window_type(int file)
{
	hid_t s48 = fixed_str(sizeof((res_window_t *)0)->name);
	hid_t s16 = fixed_str(sizeof((res_window_t *)0)->unit);
	hid_t ty = H5Tcreate(H5T_COMPOUND, sizeof(res_window_t));
	H5Tinsert(ty, "window", offsetof(res_window_t, window),
		  file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
	H5Tinsert(ty, "kind", offsetof(res_window_t, kind), file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
	H5Tinsert(ty, "t0_ns", offsetof(res_window_t, t0_ns),
		  file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
	H5Tinsert(ty, "t1_ns", offsetof(res_window_t, t1_ns),
		  file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
	H5Tinsert(ty, "name", offsetof(res_window_t, name), s48);
	H5Tinsert(ty, "unit", offsetof(res_window_t, unit), s16);
	H5Tinsert(ty, "value", offsetof(res_window_t, value),
		  file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
	H5Tclose(s48);
	H5Tclose(s16);
	return ty;
}

/* /windows: one row per (window, metric), only for runs that have windows,
 * so other runs keep their files. */
static int write_windows(hid_t f, const sim_results_t *r, const out_hdf5_opts_t *o)
{
	hid_t mt = window_type(0), ft = window_type(1);
	hid_t d = rows_create(f, "windows", mt, ft, r->win, r->n_win,
			      o->chunk_rows < r->n_win ? o->chunk_rows : r->n_win, o->compression);
	int rc = d >= 0 &&
			 attr_str(d, "doc",
				  "per-window summaries: every /summary metric (same definitions) "
				  "over the requests that arrived in [t0_ns, t1_ns); kind 0: a "
				  "workload stage (window = its index), 1: output.windows") >= 0
		     ? 0
		     : -1;
	h5_close(d);
	h5_close(ft);
	h5_close(mt);
	return rc;
}

static int write_summary(hid_t f, const sim_results_t *r, const out_hdf5_opts_t *o)
{
	hid_t g = H5Gcreate2(f, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (g < 0)
		return -1;
	int rc = -1;
	for (size_t i = 0; i < r->n_metric; i++) {
		const res_metric_t *m = &r->metric[i];
		char an[80];
		snprintf(an, sizeof an, "unit.%s", m->name);
		/* A repeated name keeps its first value (attributes are unique). */
		if (H5Aexists(g, m->name) > 0)
			continue;
		if (attr_num(g, m->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &m->value) < 0 ||
		    attr_str(g, an, m->unit) < 0)
			goto out;
	}
	hid_t mt = metric_type(0), ft = metric_type(1);
	hid_t d = rows_create(g, "metrics", mt, ft, r->metric, r->n_metric,
			      r->n_metric ? r->n_metric : 1, o->compression);
	if (d >= 0) {
		H5Dclose(d);
		rc = 0;
	}
	h5_close(ft);
	h5_close(mt);
out:
	H5Gclose(g);
	return rc;
}

static int write_config(hid_t f, const char *text)
{
	hid_t ty = vlen_str_type(), sp = H5Screate(H5S_SCALAR), d = -1;
	int rc = -1;
	if (ty < 0 || sp < 0)
		goto out;
	d = H5Dcreate2(f, "config", ty, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	const char *v = text ? text : "";
	if (d >= 0 && H5Dwrite(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0 &&
	    attr_str(d, "doc", "resolved config (INI); saved as FILE it runs the same "
			       "experiment: kvsim run FILE") >= 0)
		rc = 0;
out:
	h5_close(d);
	h5_close(sp);
	h5_close(ty);
	return rc;
}

static void sha256_hex(const char *s, char out[65])
{
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&c);
	sha256_update(&c, strlen(s), (const uint8_t *)s);
	sha256_digest(&c, sizeof d, d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

const char *out_build_rev(void)
{
	return KVSIM_GITREV;
}

int out_rev_dirty(const char *rev)
{
	return rev && strstr(rev, "-dirty") != NULL;
}

static int write_provenance(hid_t f, const sim_results_t *r)
{
	char when[32] = "", cdig[65];
	time_t t = (time_t)r->start_unix;
	struct tm tmv;
	if (gmtime_r(&t, &tmv))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tmv);
	sha256_hex(r->config_text ? r->config_text : "", cdig);
	int fmt = OUT_HDF5_FORMAT;
	const char *rev = r->git_rev[0] ? r->git_rev : out_build_rev();
	int dirty = out_rev_dirty(rev);
	if (attr_str(f, "kvsim_version", KVSIM_VERSION) < 0 ||
	    attr_str(f, "kvsim_gitrev", rev) < 0 ||
	    attr_num(f, "kvsim_git_dirty", H5T_STD_I32LE, H5T_NATIVE_INT, &dirty) < 0 ||
	    attr_num(f, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT, &fmt) < 0 ||
	    attr_num(f, "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &r->seed) < 0 ||
	    attr_str(f, "trace_path", r->trace_path) < 0 ||
	    attr_str(f, "trace_sha256", r->trace_sha256) < 0 ||
	    attr_str(f, "config_sha256", cdig) < 0 ||
	    attr_num(f, "start_unix", H5T_STD_I64LE, H5T_NATIVE_INT64, &r->start_unix) < 0 ||
	    attr_str(f, "start_time", when) < 0 ||
	    attr_num(f, "wall_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &r->wall_s) < 0 ||
	    attr_num(f, "events", H5T_STD_U64LE, H5T_NATIVE_UINT64, &r->events) < 0)
		return -1;
	return 0;
}

/* HDF5 prints its error stack by default; callers get err_t instead.
 * Its exit-time cleanup is turned off (when this is the first HDF5 call):
 * after an H5Fclose that failed (a full disk), HDF 1.10's cleanup closes
 * that file again and crashes; every file here is closed explicitly. */
static void quiet_hdf5(void)
{
	H5dont_atexit();
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static herr_t find_errno(unsigned n, const H5E_error2_t *err, void *ctx)
{
	(void)n;
	const char *p = err->desc ? strstr(err->desc, "errno = ") : NULL;
	if (p && !*(int *)ctx)
		*(int *)ctx = atoi(p + 8);
	return 0;
}

/* Why the last HDF5 call failed at the system level: HDF5's file drivers
 * record "errno = N" in the error stack (H5FDsec2.c), which the next API
 * call clears, so ask right after the failure; else errno as it was left.
 * " (REASON)" for messages, "" when nothing says. */
static const char *io_reason(char *buf, size_t n)
{
	int en = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_errno, &en);
	if (!en)
		en = errno;
	if (en)
		snprintf(buf, n, ": %s", strerror(en));
	else
		buf[0] = '\0';
	return buf;
}

void out_hdf5_opts_from_cfg(const cfg_t *c, out_hdf5_opts_t *o)
{
	sim_out_params_t p;
	/* [output] is in every schema a run was made from (sim_run checks it) */
	if (sim_out_params_fill(c, &p, NULL))
		return;
	o->compression = (int)p.compression;
	o->chunk_rows = (size_t)p.chunk_rows;
}

int out_hdf5_write(const char *path, const sim_results_t *r, const out_hdf5_opts_t *opts,
		   err_t *e)
{
	out_hdf5_opts_t o = {4, 4096};
	if (opts)
		o = *opts;
	if (!o.chunk_rows)
		o.chunk_rows = 4096;
	if (o.compression < 0 || o.compression > 9)
		return err_set(e, KS_EINPUT, "%s: compression level %d not in 0..9", path,
			       o.compression);
	file_out_t fo;
	int rc = file_out_begin(&fo, path, FILE_OUT_SEEKABLE, e);
	if (rc)
		return rc;
	const char *tmp = fo.tmp;
	quiet_hdf5();
	if (fo.how == FILE_OUT_RENAME)
		unlink(tmp);
	char why[160];
	errno = 0;
	/* HDF5 1.8 object headers: /summary's hundreds of attributes go to
	 * dense storage instead of a header grown and copied at each one;
	 * readers need HDF5 1.8 (2008) or later. */
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
	hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	if (f < 0) {
		err_set(e, KS_EIO, "%s: cannot create HDF5 file%s", path,
			io_reason(why, sizeof why));
		file_out_abort(&fo);
		return KS_EIO;
	}
	const char *step = NULL;
	/* errno is cleared before each step so that io_reason's fallback is
	 * that step's */
	const row_src_t req = {r, RES_T_REQ, NULL, 0}, xfer = {r, RES_T_XFER, NULL, 0},
			tl = {r, RES_T_TL, NULL, 0}, dec = {NULL, 0, r->dec, r->n_dec};
	if ((errno = 0, write_table(f, &t_req, &req, &o) < 0))
		step = "/requests";
	else if ((errno = 0, write_table(f, &t_xfer, &xfer, &o) < 0))
		step = "/transfers";
	else if ((errno = 0, write_table(f, &t_tl, &tl, &o) < 0))
		step = "/timeline";
	else if (r->decisions && (errno = 0, write_table(f, &t_dec, &dec, &o) < 0))
		step = "/decisions";
	else if ((errno = 0, write_summary(f, r, &o) < 0))
		step = "/summary";
	else if (r->n_win && (errno = 0, write_windows(f, r, &o) < 0))
		step = "/windows";
	else if ((errno = 0, write_config(f, r->config_text) < 0))
		step = "/config";
	else if ((errno = 0, write_provenance(f, r) < 0))
		step = "provenance attributes";
	else
		errno = 0;
	/* the reason is read before anything else runs: a full disk must say so */
	if (step)
		io_reason(why, sizeof why);
	if (H5Fclose(f) < 0 && !step) {
		step = "close";
		io_reason(why, sizeof why);
	}
	if (step) {
		file_out_abort(&fo);
		return err_set(e, KS_EIO, "%s: writing %s failed%s", path, step, why);
	}
	/* data on disk before the name says "complete" */
	return file_out_commit(&fo, 1, e);
}

/* ---- reading ------------------------------------------------------------ */

/* Reads the 1-D dataset f/name as memory type mt (closed here; -1 fails)
 * into a new array of rowsize-byte rows: 0 with *rows (NULL when empty) and
 * *n, or -1 with nothing allocated. */
static int rows_read(hid_t f, const char *name, hid_t mt, size_t rowsize, void **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	hid_t d = mt < 0 ? -1 : H5Dopen2(f, name, H5P_DEFAULT);
	hid_t sp = d < 0 ? -1 : H5Dget_space(d);
	hsize_t dims = 0;
	int rc = -1;
	if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1)
		goto out;
	H5Sget_simple_extent_dims(sp, &dims, NULL);
	if (dims) {
		*rows = calloc(dims, rowsize);
		if (!*rows || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) < 0) {
			free(*rows);
			*rows = NULL;
			goto out;
		}
	}
	*n = dims;
	rc = 0;
out:
	h5_close(mt);
	h5_close(sp);
	h5_close(d);
	return rc;
}

static int read_table(hid_t f, const table_t *t, void **rows, size_t *n)
{
	return rows_read(f, t->name, type_mem(t), t->rowsize, rows, n);
}

static int read_metrics(hid_t f, sim_results_t *r)
{
	void *rows;
	int rc = rows_read(f, "summary/metrics", metric_type(0), sizeof *r->metric, &rows,
			   &r->n_metric);
	r->metric = rows;
	return rc;
}

/* Reads a scalar variable-length string from an attribute or dataset. */
static char *read_vlen(hid_t obj, int is_attr)
{
	hid_t ty = vlen_str_type();
	char *v = NULL, *out = NULL;
	herr_t st = ty < 0 ? -1 : is_attr ? H5Aread(obj, ty, &v)
			    : H5Dread(obj, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
	if (st >= 0) {
		out = strdup(v ? v : "");
		H5free_memory(v);
	}
	h5_close(ty);
	return out;
}

static int read_attr_str(hid_t f, const char *name, char *buf, size_t cap)
{
	hid_t a = H5Aopen(f, name, H5P_DEFAULT);
	if (a < 0)
		return -1;
	char *v = read_vlen(a, 1);
	H5Aclose(a);
	if (!v)
		return -1;
	snprintf(buf, cap, "%s", v);
	free(v);
	return 0;
}

static int read_attr_num(hid_t f, const char *name, hid_t mem_ty, void *v)
{
	hid_t a = H5Aopen(f, name, H5P_DEFAULT);
	if (a < 0)
		return -1;
	int rc = H5Aread(a, mem_ty, v) < 0 ? -1 : 0;
	H5Aclose(a);
	return rc;
}

int out_hdf5_probe(const char *path)
{
	quiet_hdf5();
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return -1;
	H5Fclose(f);
	return 0;
}

int out_hdf5_read_windows(const char *path, res_window_t **w, size_t *n, err_t *e)
{
	*w = NULL;
	*n = 0;
	quiet_hdf5();
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return err_set(e, KS_EIO, "%s: cannot open as HDF5", path);
	void *rows = NULL;
	int rc = 0;
	if (H5Lexists(f, "windows", H5P_DEFAULT) > 0) {
		if (rows_read(f, "windows", window_type(0), sizeof **w, &rows, n) < 0)
			rc = err_set(e, KS_EIO, "%s: reading /windows failed", path);
		else
			*w = rows;
	}
	H5Fclose(f);
	return rc;
}

int out_hdf5_read(const char *path, sim_results_t *r, err_t *e)
{
	memset(r, 0, sizeof *r);
	quiet_hdf5();
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return err_set(e, KS_EIO, "%s: cannot open as HDF5", path);
	const char *step = NULL;
	void *rows;
	if (read_table(f, &t_req, &rows, &r->n_req) < 0)
		step = "/requests";
	r->req = rows;
	if (!step && read_table(f, &t_xfer, &rows, &r->n_xfer) < 0)
		step = "/transfers";
	if (!step)
		r->xfer = rows;
	if (!step && read_table(f, &t_tl, &rows, &r->n_tl) < 0)
		step = "/timeline";
	if (!step)
		r->tl = rows;
	r->decisions = !step && H5Lexists(f, "decisions", H5P_DEFAULT) > 0;
	if (r->decisions && read_table(f, &t_dec, &rows, &r->n_dec) < 0)
		step = "/decisions";
	if (!step && r->decisions)
		r->dec = rows;
	if (!step && read_metrics(f, r) < 0)
		step = "/summary/metrics";
	if (!step && H5Lexists(f, "windows", H5P_DEFAULT) > 0) {
		if (rows_read(f, "windows", window_type(0), sizeof *r->win, &rows, &r->n_win) < 0)
			step = "/windows";
		else
			r->win = rows;
	}
	if (!step) {
		hid_t d = H5Dopen2(f, "config", H5P_DEFAULT);
		r->config_text = d >= 0 ? read_vlen(d, 0) : NULL;
		if (d >= 0)
			H5Dclose(d);
		if (!r->config_text)
			step = "/config";
	}
	if (!step && (read_attr_num(f, "seed", H5T_NATIVE_UINT64, &r->seed) < 0 ||
		      read_attr_str(f, "trace_path", r->trace_path, sizeof r->trace_path) < 0 ||
		      read_attr_str(f, "trace_sha256", r->trace_sha256,
				    sizeof r->trace_sha256) < 0 ||
		      read_attr_num(f, "start_unix", H5T_NATIVE_INT64, &r->start_unix) < 0 ||
		      read_attr_num(f, "wall_s", H5T_NATIVE_DOUBLE, &r->wall_s) < 0 ||
		      read_attr_num(f, "events", H5T_NATIVE_UINT64, &r->events) < 0))
		step = "provenance attributes";
	if (!step && H5Aexists(f, "kvsim_gitrev") > 0 &&
	    read_attr_str(f, "kvsim_gitrev", r->git_rev, sizeof r->git_rev) < 0)
		step = "kvsim_gitrev";
	H5Fclose(f);
	if (step) {
		sim_results_free(r);
		return err_set(e, KS_EIO, "%s: reading %s failed", path, step);
	}
	return 0;
}

/* ---- CSV export ---------------------------------------------------------- */

void out_csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Opens dir/name for writing: NULL with e naming the file. */
static FILE *csv_open(const char *dir, const char *name, char *path, size_t n, err_t *e)
{
	snprintf(path, n, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		err_set(e, err_path_code(errno), "%s: cannot create: %s", path, strerror(errno));
	return f;
}

/* Closes f, whose writes must all have gone through: 0 or KS_EIO naming it. */
static int csv_close(FILE *f, const char *path, err_t *e)
{
	int bad = ferror(f);
	if (fclose(f) || bad)
		return err_set(e, KS_EIO, "%s: write failed: %s", path, strerror(errno ? errno : EIO));
	return 0;
}

/* res_rows_fn: rows of table c->t as CSV lines on c->f. */
typedef struct csv_put {
	FILE *f;
	const table_t *t;
} csv_put_t;
static int csv_rows(void *ctx, const void *rows, size_t n)
{
	FILE *f = ((csv_put_t *)ctx)->f;
	const table_t *t = ((csv_put_t *)ctx)->t;
	for (size_t i = 0; i < n; i++) {
		const char *row = (const char *)rows + i * t->rowsize;
		for (size_t k = 0; k < t->ncols; k++) {
			const void *p = row + t->cols[k].off;
			if (k)
				fputc(',', f);
			switch (t->cols[k].kind) {
			case C_U64: fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
			case C_I64: fprintf(f, "%" PRId64, *(const int64_t *)p); break;
			case C_U32: fprintf(f, "%" PRIu32, *(const uint32_t *)p); break;
			case C_I32: fprintf(f, "%" PRId32, *(const int32_t *)p); break;
			default: fprintf(f, "%.17g", *(const double *)p); break;
			}
		}
		fputc('\n', f);
	}
	return 0;
}

/* Table t's rows as dir/<t->name>.csv: a header of the member names, then
 * one line per row, integers exact, doubles to 17 significant digits. */
static int csv_table(const char *dir, const table_t *t, const row_src_t *src, err_t *e)
{
	char name[64], path[4200];
	snprintf(name, sizeof name, "%s.csv", t->name);
	FILE *f = csv_open(dir, name, path, sizeof path, e);
	if (!f)
		return e->code;
	for (size_t k = 0; k < t->ncols; k++)
		fprintf(f, "%s%s", k ? "," : "", t->cols[k].name);
	fputc('\n', f);
	csv_put_t c = {f, t};
	int rc = src_each(src, csv_rows, &c);
	if (rc) {
		fclose(f);
		return err_set(e, rc, "%s: reading the rows back failed", path);
	}
	return csv_close(f, path, e);
}

int out_csv_write(const sim_results_t *r, const char *dir, err_t *e)
{
	const row_src_t req = {r, RES_T_REQ, NULL, 0}, xfer = {r, RES_T_XFER, NULL, 0},
			tl = {r, RES_T_TL, NULL, 0}, dec = {NULL, 0, r->dec, r->n_dec};
	int rc = csv_table(dir, &t_req, &req, e);
	if (!rc)
		rc = csv_table(dir, &t_xfer, &xfer, e);
	if (!rc)
		rc = csv_table(dir, &t_tl, &tl, e);
	if (!rc && r->decisions)
		rc = csv_table(dir, &t_dec, &dec, e);
	char path[4200];
	FILE *f;
	if (!rc && (f = csv_open(dir, "summary.csv", path, sizeof path, e))) {
		fputs("metric,unit,value\n", f);
		for (size_t i = 0; i < r->n_metric; i++) {
			out_csv_field(f, r->metric[i].name);
			fputc(',', f);
			out_csv_field(f, r->metric[i].unit);
			fprintf(f, ",%.17g\n", r->metric[i].value);
		}
		rc = csv_close(f, path, e);
	} else if (!rc) {
		rc = e->code;
	}
	if (!rc && r->n_win && (f = csv_open(dir, "windows.csv", path, sizeof path, e))) {
		fputs("window,kind,t0_ns,t1_ns,metric,unit,value\n", f);
		for (size_t i = 0; i < r->n_win; i++) {
			const res_window_t *w = &r->win[i];
			fprintf(f, "%" PRId32 ",%s,%" PRId64 ",%" PRId64 ",", w->window,
				w->kind == RES_WIN_STAGE ? "stage" : "output", w->t0_ns, w->t1_ns);
			out_csv_field(f, w->name);
			fputc(',', f);
			out_csv_field(f, w->unit);
			fprintf(f, ",%.17g\n", w->value);
		}
		rc = csv_close(f, path, e);
	} else if (!rc && r->n_win) {
		rc = e->code;
	}
	if (!rc && (f = csv_open(dir, "config.ini", path, sizeof path, e))) {
		fputs(r->config_text ? r->config_text : "", f);
		rc = csv_close(f, path, e);
	} else if (!rc) {
		rc = e->code;
	}
	return rc;
}

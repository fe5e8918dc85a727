/* Tests for sim/out_hdf5: layout, round trip, empty tables, atomic write,
 * provenance (revision, dirty flag, the build's revision script), and
 * reading with h5py + pandas (skipped when they are absent). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "gpu_validation/gv_sched.h"
#include <hdf5.h>

#include "sim/run/cli_common.h"
#include "sim/out/out_hdf5.h"
#include "sim/run/sim.h"
#include "tests/fixtures/fsize_fixture.h"
#include "tests/fixtures/out_fake.h"
#include "tests/fixtures/tmp_fixture.h"

static int exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

/* Fills r with fake_fill(seed, rate, n_req) and writes it with o (NULL:
 * defaults) to tmp_dir/name, whose path goes to path (512 bytes); returns
 * out_hdf5_write's status, its message in e. */
/* A fake result set (fake_fill) and the file written of it. */
typedef struct fake_h5 {
	sim_results_t r;
	char path[512]; /* tmp_dir/name */
	err_t e;        /* out_hdf5_write's error */
} fake_h5_t;

/* Fills w->r and writes it to tmp_dir/name with options o (NULL: the
 * defaults); returns out_hdf5_write's status. */
static int fake_h5_write(fake_h5_t *w, uint64_t seed, double rate, size_t n_req, const char *name,
                         const out_hdf5_opts_t *o)
{
	w->e = (err_t){0};
	assert_int_equal(fake_fill(&w->r, seed, rate, n_req), 0);
	snprintf(w->path, sizeof w->path, "%s/%s", tmp_dir, name);
	return out_hdf5_write(w->path, &w->r, o, &w->e);
}

static void test_round_trip_preserves_every_field(void **st)
{
	(void)st;
	fake_h5_t w;
	sim_results_t b;
	out_hdf5_opts_t o = {6, 128};
	assert_int_equal(fake_h5_write(&w, 42, 3.5, 1000, "run.h5", &o), 0);
	assert_true(exists(w.path));
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp", w.path);
	assert_false(exists(tmp));
	assert_int_equal(out_hdf5_read(w.path, &b, &w.e), 0);
	assert_int_equal(b.n_req, w.r.n_req);
	assert_int_equal(b.n_xfer, w.r.n_xfer);
	assert_int_equal(b.n_tl, w.r.n_tl);
	/* Structs are calloc'd on both sides, so padding compares equal too. */
	assert_memory_equal(b.req, w.r.req, w.r.n_req * sizeof *w.r.req);
	assert_memory_equal(b.xfer, w.r.xfer, w.r.n_xfer * sizeof *w.r.xfer);
	assert_memory_equal(b.tl, w.r.tl, w.r.n_tl * sizeof *w.r.tl);
	assert_int_equal(b.n_metric, w.r.n_metric);
	for (size_t i = 0; i < w.r.n_metric; i++) {
		assert_string_equal(b.metric[i].name, w.r.metric[i].name);
		assert_string_equal(b.metric[i].unit, w.r.metric[i].unit);
		assert_true(b.metric[i].value == w.r.metric[i].value);
	}
	assert_string_equal(b.config_text, w.r.config_text);
	assert_true(b.seed == 42);
	assert_string_equal(b.trace_path, w.r.trace_path);
	assert_string_equal(b.trace_sha256, w.r.trace_sha256);
	assert_true(b.start_unix == w.r.start_unix);
	assert_true(b.wall_s == w.r.wall_s);
	assert_true(b.events == w.r.events);
	sim_results_free(&w.r);
	sim_results_free(&b);
}

static void test_empty_tables_are_valid_zero_row_datasets(void **st)
{
	(void)st;
	sim_results_t r, b;
	assert_int_equal(fake_fill(&r, 7, 1.0, 0), 0);
	free(r.tl);
	r.tl = NULL;
	r.n_tl = 0;
	free(r.metric);
	r.metric = NULL;
	r.n_metric = 0;
	free(r.config_text);
	r.config_text = NULL;
	char path[512];
	snprintf(path, sizeof path, "%s/empty.h5", tmp_dir);
	err_t e = {0};
	assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
	assert_int_equal(out_hdf5_read(path, &b, &e), 0);
	assert_int_equal(b.n_req, 0);
	assert_int_equal(b.n_xfer, 0);
	assert_int_equal(b.n_tl, 0);
	assert_int_equal(b.n_metric, 0);
	assert_string_equal(b.config_text, "");
	sim_results_free(&r);
	sim_results_free(&b);
}

static void test_rewrite_replaces_file_atomically(void **st)
{
	(void)st;
	sim_results_t r, b;
	char path[512];
	snprintf(path, sizeof path, "%s/again.h5", tmp_dir);
	err_t e = {0};
	assert_int_equal(fake_fill(&r, 1, 1.0, 10), 0);
	assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
	sim_results_free(&r);
	/* A stale .tmp from a killed writer must not disturb the next write. */
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	tmp_write(tmp, "garbage from a killed run");
	assert_int_equal(fake_fill(&r, 2, 1.0, 20), 0);
	assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
	assert_false(exists(tmp));
	assert_int_equal(out_hdf5_read(path, &b, &e), 0);
	assert_int_equal(b.n_req, 20);
	assert_true(b.seed == 2);
	sim_results_free(&r);
	sim_results_free(&b);
}

static void test_failed_write_leaves_nothing_and_says_where(void **st)
{
	(void)st;
	fake_h5_t w;
	assert_int_equal(fake_h5_write(&w, 1, 1.0, 10, "no/such/dir/x.h5", NULL), KS_EIO);
	/* the name asked for, not the temporary file, and why */
	assert_non_null(
	    strstr(w.e.msg, "/no/such/dir/x.h5: cannot create HDF5 file: No such file"));
	assert_null(strstr(w.e.msg, ".tmp"));
	assert_false(exists(w.path));
	out_hdf5_opts_t bad = {12, 0};
	snprintf(w.path, sizeof w.path, "%s/bad.h5", tmp_dir);
	assert_int_equal(out_hdf5_write(w.path, &w.r, &bad, &w.e), KS_EINPUT);
	assert_false(exists(w.path));
	sim_results_free(&w.r);
}

/* Writes 20000 fake requests uncompressed to the file ctx names: well past
 * the child's limit. */
static int write_big_h5(void *ctx, err_t *e)
{
	sim_results_t r;
	if (fake_fill(&r, 1, 1.0, 20000))
		return KS_ENOMEM;
	out_hdf5_opts_t o = {0, 4096};
	int rc = out_hdf5_write(ctx, &r, &o, e);
	sim_results_free(&r);
	return rc;
}

/* A write that the file system refuses (here RLIMIT_FSIZE: EFBIG, as a full
 * disk gives ENOSPC) says why, names the file asked for, leaves nothing,
 * and the process still exits cleanly afterwards (HDF5's exit-time cleanup
 * used to crash on the file whose close had failed). */
static void test_refused_write_reports_the_errno_text(void **st)
{
	(void)st;
	char path[512], tmp[600];
	snprintf(path, sizeof path, "%s/big.h5", tmp_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	char msg[1100];
	fsize_refused_write(16384, write_big_h5, path, 1, msg, sizeof msg);
	if (!strstr(msg, strerror(EFBIG)) || strncmp(msg, path, strlen(path)))
		fail_msg("message '%s' does not name %s and say '%s'", msg, path, strerror(EFBIG));
	assert_false(exists(path));
	assert_false(exists(tmp));
}

/* The unit a metric's name announces (a suffix or prefix), or NULL. */
static const char *unit_in_name(const char *m)
{
	static const struct {
		const char *end, *unit;
	} ends[] = {{"_gb_s", "GB-s"},   {"_per_s", "1/s"},   {"_ms", "ms"}, {"_s", "s"},
	            {"_tokens", "tokens"}, {"_bytes", "bytes"}, {"_rps", "1/s"}};
	const char *base = strrchr(m, '.') ? strrchr(m, '.') + 1 : m;
	if (!strncmp(base, "hit_rate", 8))
		return NULL; /* a ratio, weighted by tokens or blocks */
	if (!strncmp(base, "bytes", 5))
		return "bytes";
	if (!strncmp(base, "tok_", 4))
		return "tokens";
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
		size_t l = strlen(m), n = strlen(ends[i].end);
		if (l > n && !strcmp(m + l - n, ends[i].end))
			return ends[i].unit;
	}
	return NULL;
}

static herr_t check_root_attr(hid_t loc, const char *name, const H5A_info_t *info, void *ctx)
{
	(void)info;
	int *n = ctx;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = H5Aget_type(a);
	if (H5Tget_class(t) == H5T_STRING && !strstr(name, "sha256") && !strstr(name, "gitrev")) {
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		char *v = NULL;
		assert_true(H5Aread(a, mt, &v) >= 0);
		char *end;
		strtod(v, &end);
		if (*v && !*end)
			fail_msg("root attribute %s = '%s' is a number stored as a string", name, v);
		H5free_memory(v);
		H5Tclose(mt);
	}
	(*n)++;
	H5Tclose(t);
	H5Aclose(a);
	return 0;
}

/* A real run's file: every metric whose name carries a unit has it in its
 * unit.<metric> attribute, and no root attribute holds a number as text. */
static void test_metric_units_and_numeric_root_attributes(void **st)
{
	(void)st;
	cfg_t *c = NULL;
	err_t e = {0};
	const char *sets[] = {"trace.duration_s=20", "policy.replication.name=speculative"};
	assert_int_equal(cli_load_config(NULL, sets, 2, &c, &e), 0);
	sim_results_t r;
	assert_int_equal(sim_run(c, NULL, &r, &e), 0);
	char path[512];
	snprintf(path, sizeof path, "%s/units.h5", tmp_dir);
	assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hid_t g = H5Gopen2(f, "summary", H5P_DEFAULT);
	size_t checked = 0;
	for (size_t i = 0; i < r.n_metric; i++) {
		const char *want = unit_in_name(r.metric[i].name);
		if (!want)
			continue;
		char an[80];
		snprintf(an, sizeof an, "unit.%s", r.metric[i].name);
		hid_t a = H5Aopen(g, an, H5P_DEFAULT);
		assert_true(a >= 0);
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		char *v = NULL;
		assert_true(H5Aread(a, mt, &v) >= 0);
		if (strcmp(v, want))
			fail_msg("%s is in '%s', its name says '%s'", r.metric[i].name, v, want);
		H5free_memory(v);
		H5Tclose(mt);
		H5Aclose(a);
		checked++;
	}
	assert_true(checked >= 20); /* ttft_*_ms, bytes_*, spec.unused_vram_gb_s, ... */
	int n = 0;
	assert_true(H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, NULL, check_root_attr, &n) >= 0);
	assert_true(n >= 10);
	/* the doc of /config says how to run it again, and that is true */
	hid_t d = H5Dopen2(f, "config", H5P_DEFAULT);
	hid_t a = H5Aopen(d, "doc", H5P_DEFAULT), mt = H5Tcopy(H5T_C_S1);
	H5Tset_size(mt, H5T_VARIABLE);
	char *doc = NULL;
	assert_true(H5Aread(a, mt, &doc) >= 0);
	assert_non_null(strstr(doc, "kvsim run FILE"));
	H5free_memory(doc);
	H5Tclose(mt);
	H5Aclose(a);
	H5Dclose(d);
	H5Gclose(g);
	H5Fclose(f);
	cfg_t *back = NULL;
	char ini[600];
	snprintf(ini, sizeof ini, "%s/config.ini", tmp_dir);
	tmp_write(ini, r.config_text);
	assert_int_equal(cli_load_config(ini, NULL, 0, &back, &e), 0);
	char d1[65], d2[65];
	cfg_digest(c, d1);
	cfg_digest(back, d2);
	assert_string_equal(d1, d2);
	cli_config_free(back);
	cli_config_free(c);
	sim_results_free(&r);
}

static void test_reading_a_non_hdf5_file_is_an_io_error(void **st)
{
	(void)st;
	char path[512];
	snprintf(path, sizeof path, "%s/not.h5", tmp_dir);
	tmp_write(path, "not hdf5");
	sim_results_t b;
	err_t e = {0};
	assert_int_equal(out_hdf5_read(path, &b, &e), KS_EIO);
	assert_non_null(strstr(e.msg, "not.h5"));
}

static void test_gpu_replayer_reads_transfers_by_member_name(void **st)
{
	(void)st;
	fake_h5_t w;
	assert_int_equal(fake_h5_write(&w, 9, 2.0, 64, "replay.h5", NULL), 0);
	gv_sched_t s;
	assert_int_equal(gv_sched_read(&s, w.path, &w.e), 0);
	assert_int_equal(s.n, w.r.n_xfer);
	for (size_t i = 0; i < s.n; i++) {
		const res_transfer_t *a = &w.r.xfer[i], *b = &s.xfer[i];
		assert_true(a->id == b->id && a->bytes == b->bytes && a->blocks == b->blocks);
		assert_true(a->src_instance == b->src_instance && a->dst_gpu == b->dst_gpu);
		assert_true(a->start_ns == b->start_ns && a->end_ns == b->end_ns);
		assert_true(a->klass == b->klass && a->path_kind == b->path_kind);
		assert_true(a->granular == b->granular && a->cancelled == b->cancelled);
	}
	gv_sched_free(&s);
	sim_results_free(&w.r);
}

/* Closes prev (unless NULL) and returns dir/name opened for writing, its
 * header line written: one call a table. */
static FILE *csv_next(FILE *prev, const char *dir, const char *name, const char *header)
{
	if (prev)
		fclose(prev);
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(header, f);
	return f;
}

/* Expected values as CSV, one file per table, for the Python check. */
static void write_expected(const sim_results_t *r, const char *dir)
{
	FILE *f = csv_next(NULL, dir, "requests.csv",
	                   "id,arrival_ns,instance,status,ttft_ns,tpot_ns,tbt_p90_ns,e2e_ns,"
	                   "queue_ns,fetch_wait_ns,input_tokens,output_tokens,tok_local,tok_peer,"
	                   "tok_host,tok_recomputed,tok_spec_hit,decode_instance,handoff_wait_ns\n");
	for (size_t i = 0; i < r->n_req; i++) {
		const res_request_t *q = &r->req[i];
		fprintf(f, "%llu,%lld,%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%u,%u,%u,%u,%u,%u,%u,%d,%lld\n",
			(unsigned long long)q->id, (long long)q->arrival_ns, q->instance,
			q->status, (long long)q->ttft_ns, (long long)q->tpot_ns,
			(long long)q->tbt_p90_ns, (long long)q->e2e_ns, (long long)q->queue_ns,
			(long long)q->fetch_wait_ns, q->input_tokens, q->output_tokens,
			q->tok_local, q->tok_peer, q->tok_host, q->tok_recomputed,
			q->tok_spec_hit, q->decode_instance, (long long)q->handoff_wait_ns);
	}
	f = csv_next(f, dir, "transfers.csv",
	             "id,src_instance,src_gpu,dst_instance,dst_gpu,bytes,blocks,klass,path_kind,"
	             "granular,start_ns,end_ns,cancelled,requested_ns\n");
	for (size_t i = 0; i < r->n_xfer; i++) {
		const res_transfer_t *x = &r->xfer[i];
		fprintf(f, "%llu,%d,%d,%d,%d,%llu,%u,%d,%d,%d,%lld,%lld,%d,%lld\n",
			(unsigned long long)x->id, x->src_instance, x->src_gpu, x->dst_instance,
			x->dst_gpu, (unsigned long long)x->bytes, x->blocks, x->klass,
			x->path_kind, x->granular, (long long)x->start_ns, (long long)x->end_ns,
			x->cancelled, (long long)x->requested_ns);
	}
	f = csv_next(f, dir, "timeline.csv",
	             "t_ns,kind,index,queue_len,batch_size,kv_used_bytes,spec_kv_bytes,util_fg,"
	             "util_bg\n");
	for (size_t i = 0; i < r->n_tl; i++) {
		const res_sample_t *s = &r->tl[i];
		fprintf(f, "%lld,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", (long long)s->t_ns,
			s->kind, s->index, s->queue_len, s->batch_size, s->kv_used_bytes,
			s->spec_kv_bytes, s->util_fg, s->util_bg);
	}
	fclose(f);
}

static const char py_check[] =
	"import sys, numpy as np, pandas as pd, h5py\n"
	"h5, d = sys.argv[1], sys.argv[2]\n"
	"f = h5py.File(h5, 'r')\n"
	"for t in ('requests', 'transfers', 'timeline'):\n"
	"    exp = pd.read_csv(f'{d}/{t}.csv', float_precision='round_trip')\n"
	"    df = pd.DataFrame(f[t][:])\n"
	"    assert list(df.columns) == list(exp.columns), (t, list(df.columns))\n"
	"    assert len(df) == len(exp), (t, len(df), len(exp))\n"
	"    for c in exp.columns:\n"
	"        assert np.array_equal(df[c].to_numpy(), exp[c].to_numpy()), (t, c)\n"
	"        assert isinstance(f[t].attrs['unit.' + c], str), (t, c)\n"
	"    assert f[t].chunks is not None, t\n"
	"assert f['requests'].compression == 'gzip'\n"
	"assert f['requests'].attrs['unit.ttft_ns'] == 'ns'\n"
	"assert f['transfers'].attrs['unit.bytes'] == 'bytes'\n"
	"assert 'completed' in f['requests'].attrs['values.status']\n"
	"assert '5=rejected_overload' in f['requests'].attrs['values.status']\n"
	"s = f['summary']\n"
	"assert s.attrs['throughput_rps'] == 3.5 * 0.97, s.attrs['throughput_rps']\n"
	"assert s.attrs['unit.throughput_rps'] == 'req/s'\n"
	"m = pd.DataFrame(s['metrics'][:])\n"
	"assert list(m.columns) == ['name', 'unit', 'value']\n"
	"assert m['name'][0] == b'ttft_mean_ns', m['name'][0]\n"
	"assert f['config'].asstr()[()] == '[fake]\\nrate = 1\\n'\n"
	"a = f.attrs\n"
	"assert a['seed'] == 42 and a['trace_path'] == 'synthetic:poisson'\n"
	"assert a['trace_sha256'] == 'a' * 64 and a['start_time'] == '2023-11-14T22:13:20Z'\n"
	"assert a['wall_s'] == 0.125 and a['events'] == 12345 + 42\n"
	"for k in ('kvsim_version', 'kvsim_gitrev', 'config_sha256', 'format_version'):\n"
	"    assert k in a, k\n"
	"print('python-ok')\n";

/* Whether python3 with h5py and pandas is there to read the files back. */
/* Skips the calling test (cmocka's skip leaves it at once) unless
 * python3 with h5py and pandas is there. */
static void skip_without_h5py(void)
{
	if (access("/usr/bin/python3", X_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import h5py, pandas' >/dev/null 2>&1") != 0)
		skip();
}

static void test_h5py_and_pandas_read_every_column(void **st)
{
	(void)st;
	skip_without_h5py();
	fake_h5_t w;
	char script[512], cmd[1600];
	out_hdf5_opts_t o = {4, 64};
	assert_int_equal(fake_h5_write(&w, 42, 3.5, 300, "py.h5", &o), 0);
	write_expected(&w.r, tmp_dir);
	snprintf(script, sizeof script, "%s/check.py", tmp_dir);
	tmp_write(script, py_check);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s", script, w.path, tmp_dir);
	assert_int_equal(system(cmd), 0);
	/* The same check on an empty file: zero rows, right columns. */
	sim_results_free(&w.r);
}

static void test_h5py_reads_empty_tables_with_columns(void **st)
{
	(void)st;
	skip_without_h5py();
	fake_h5_t w;
	char cmd[1200];
	assert_int_equal(fake_h5_write(&w, 3, 1.0, 0, "empty_py.h5", NULL), 0);
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 -c \"import h5py, pandas as pd; f = h5py.File('%s', 'r'); "
		 "d = pd.DataFrame(f['requests'][:]); "
		 "assert len(d) == 0 and list(d.columns)[0] == 'id' and len(d.columns) == 19; "
		 "t = pd.DataFrame(f['transfers'][:]); "
		 "assert len(t) == 0 and 'src_gpu' in t.columns\"",
		 w.path);
	assert_int_equal(system(cmd), 0);
	sim_results_free(&w.r);
}

/* kvsim_gitrev is the revision the results carry (this build's when they
 * carry none) and kvsim_git_dirty says whether it had uncommitted changes. */
static void test_provenance_records_revision_and_dirty_flag(void **st)
{
	(void)st;
	static const char *const revs[] = {"0123456789ab-dirty.cafe0123", "0123456789ab", ""};
	for (size_t i = 0; i < sizeof revs / sizeof revs[0]; i++) {
		sim_results_t r, b;
		assert_int_equal(fake_fill(&r, 7, 1.0, 10), 0);
		snprintf(r.git_rev, sizeof r.git_rev, "%s", revs[i]);
		char path[512];
		snprintf(path, sizeof path, "%s/rev%zu.h5", tmp_dir, i);
		err_t e = {0};
		assert_int_equal(out_hdf5_write(path, &r, NULL, &e), 0);
		assert_int_equal(out_hdf5_read(path, &b, &e), 0);
		const char *want = *revs[i] ? revs[i] : out_build_rev();
		assert_string_equal(b.git_rev, want);
		hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), a;
		int dirty = -1;
		assert_true(f >= 0);
		assert_true((a = H5Aopen(f, "kvsim_git_dirty", H5P_DEFAULT)) >= 0);
		assert_true(H5Aread(a, H5T_NATIVE_INT, &dirty) >= 0);
		H5Aclose(a);
		H5Fclose(f);
		assert_int_equal(dirty, i == 0 ? 1 : i == 1 ? 0 : out_rev_dirty(out_build_rev()));
		assert_int_equal(out_hdf5_probe(path), 0);
		sim_results_free(&r);
		sim_results_free(&b);
	}
}

/* A file cut short no longer opens (what a resume relies on for rows that
 * recorded no digest). */
static void test_probe_refuses_a_truncated_file(void **st)
{
	(void)st;
	fake_h5_t w;
	assert_int_equal(fake_h5_write(&w, 9, 2.0, 500, "cut.h5", NULL), 0);
	struct stat sb;
	assert_int_equal(stat(w.path, &sb), 0);
	assert_int_equal(truncate(w.path, sb.st_size / 2), 0);
	assert_int_equal(out_hdf5_probe(w.path), -1);
	snprintf(w.path, sizeof w.path, "%s/none.h5", tmp_dir);
	assert_int_equal(out_hdf5_probe(w.path), -1);
	sim_results_free(&w.r);
}

/* sim/gitrev.sh (the Makefile's GITREV) in a scratch repository: the bare
 * commit when the listed paths match it; "-dirty.<hex>" for tracked or
 * untracked changes there, a different hex for a different change, and
 * changes outside the listed paths do not count. */
static void test_build_revision_marks_and_digests_uncommitted_sources(void **st)
{
	(void)st;
	char script[4096], repo[512], cmd[9000];
	if (system("command -v git >/dev/null 2>&1") != 0 || !getcwd(script, 4000)) {
		skip();
		return;
	}
	strcat(script, "/sim/gitrev.sh");
	assert_int_equal(access(script, R_OK), 0);
	snprintf(repo, sizeof repo, "%s/repo", tmp_dir);
	snprintf(cmd, sizeof cmd,
		 "set -e; mkdir -p %s/src; cd %s; git init -q .; echo a > src/x.c; echo d > doc;"
		 " git add .; git -c user.name=t -c user.email=t@t commit -qm one", repo, repo);
	assert_int_equal(system(cmd), 0);
	char revs[6][128];
	/* 0 clean, 1 doc edited (not listed), 2 src edited, 3 another src edit,
	 * 4 the first edit again, 5 the commit back plus an untracked source */
	static const char *const steps[] = {
		"true", "echo e >> doc", "echo b >> src/x.c", "echo c >> src/x.c",
		"git checkout -q src/x.c && echo b >> src/x.c",
		"git checkout -q src/x.c && echo n > src/new.c"};
	for (int i = 0; i < 6; i++) {
		snprintf(cmd, sizeof cmd, "cd %s && %s && sh %s src > rev.out", repo, steps[i],
			 script);
		assert_int_equal(system(cmd), 0);
		snprintf(cmd, sizeof cmd, "%s/rev.out", repo);
		FILE *f = fopen(cmd, "r");
		assert_non_null(f);
		assert_non_null(fgets(revs[i], sizeof revs[i], f));
		fclose(f);
		revs[i][strcspn(revs[i], "\n")] = '\0';
	}
	assert_int_equal(strlen(revs[0]), 12);
	assert_int_equal(out_rev_dirty(revs[0]), 0);
	assert_string_equal(revs[1], revs[0]);
	for (int i = 2; i < 6; i++) {
		assert_int_equal(strncmp(revs[i], revs[0], 12), 0);
		assert_int_equal(strncmp(revs[i] + 12, "-dirty.", 7), 0);
		assert_int_equal(strlen(revs[i]), 12 + 7 + 8);
		assert_int_equal(out_rev_dirty(revs[i]), 1);
	}
	assert_string_not_equal(revs[2], revs[3]);
	assert_string_equal(revs[2], revs[4]);
	assert_string_not_equal(revs[5], revs[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_preserves_every_field),
		cmocka_unit_test(test_empty_tables_are_valid_zero_row_datasets),
		cmocka_unit_test(test_rewrite_replaces_file_atomically),
		cmocka_unit_test(test_failed_write_leaves_nothing_and_says_where),
		cmocka_unit_test(test_refused_write_reports_the_errno_text),
		cmocka_unit_test(test_metric_units_and_numeric_root_attributes),
		cmocka_unit_test(test_reading_a_non_hdf5_file_is_an_io_error),
		cmocka_unit_test(test_gpu_replayer_reads_transfers_by_member_name),
		cmocka_unit_test(test_h5py_and_pandas_read_every_column),
		cmocka_unit_test(test_h5py_reads_empty_tables_with_columns),
		cmocka_unit_test(test_provenance_records_revision_and_dirty_flag),
		cmocka_unit_test(test_probe_refuses_a_truncated_file),
		cmocka_unit_test(test_build_revision_marks_and_digests_uncommitted_sources),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}

/* Tests for gpu_validation: schedule and measurement HDF5 I/O, the replay
 * builder (devices, kinds, streams, concurrency), the calibration plan, the
 * fit (recovers known parameters from synthetic measurements) and check. */
#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_validation/gv_check.h"
#include "gpu_validation/gv_fit.h"
#include "gpu_validation/gv_h5.h"
#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_plan.h"
#include "gpu_validation/gv_replay.h"
#include "gpu_validation/gv_sched.h"
#include "tests/fixtures/tmp_fixture.h"
#include "tests/fixtures/test_main.h"

static const char *tmp(const char *name)
{
	static char buf[4][256];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", tmp_dir, name);
	return buf[i];
}

static res_transfer_t xf(uint64_t id, int si, int sg, int di, int dg, uint64_t bytes, int64_t start,
                         int64_t end)
{
	return (res_transfer_t){.id = id,
	                        .src_instance = si,
	                        .src_gpu = sg,
	                        .dst_instance = di,
	                        .dst_gpu = dg,
	                        .bytes = bytes,
	                        .blocks = 1,
	                        .start_ns = start,
	                        .end_ns = end};
}

/* ---- schedule I/O -------------------------------------------------------------- */

/* A /transfers table as another writer might lay it out: members in a
 * different order, a different row struct and an extra column. */
typedef struct other_row {
	int64_t end_ns, start_ns;
	int32_t cancelled, granular, path_kind, klass;
	double extra;
	uint32_t blocks;
	uint64_t bytes;
	int32_t dst_gpu, dst_instance, src_gpu, src_instance;
	uint64_t id;
} other_row_t;

static int write_other_layout(const char *path, const other_row_t *rows, size_t n,
                              const char *skip_member)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(other_row_t));
#define M(name, type)                                                                              \
	if (!skip_member || strcmp(skip_member, #name))                                            \
	H5Tinsert(t, #name, HOFFSET(other_row_t, name), type)
	M(end_ns, H5T_NATIVE_INT64);
	M(start_ns, H5T_NATIVE_INT64);
	M(cancelled, H5T_NATIVE_INT32);
	M(granular, H5T_NATIVE_INT32);
	M(path_kind, H5T_NATIVE_INT32);
	M(klass, H5T_NATIVE_INT32);
	M(extra, H5T_NATIVE_DOUBLE);
	M(blocks, H5T_NATIVE_UINT32);
	M(bytes, H5T_NATIVE_UINT64);
	M(dst_gpu, H5T_NATIVE_INT32);
	M(dst_instance, H5T_NATIVE_INT32);
	M(src_gpu, H5T_NATIVE_INT32);
	M(src_instance, H5T_NATIVE_INT32);
	M(id, H5T_NATIVE_UINT64);
#undef M
	err_t e = {0};
	file_out_t fo;
	hid_t f = gv_h5_create(&fo, path, &e);
	int rc = gv_h5_write_table(f, "/transfers", t, rows, n, path, &e);
	H5Tclose(t);
	return gv_h5_finish(f, &fo, rc, &e);
}

static void test_schedule_members_are_read_by_name_not_position(void **state)
{
	(void)state;
	other_row_t rows[2] = {{.end_ns = 900,
	                        .start_ns = 100,
	                        .cancelled = 0,
	                        .granular = 1,
	                        .path_kind = 1,
	                        .klass = 1,
	                        .extra = 3.5,
	                        .blocks = 4,
	                        .bytes = 65536,
	                        .dst_gpu = 1,
	                        .dst_instance = 2,
	                        .src_gpu = -1,
	                        .src_instance = -1,
	                        .id = 77},
	                       {.end_ns = 50,
	                        .start_ns = 10,
	                        .cancelled = 1,
	                        .bytes = 8,
	                        .blocks = 1,
	                        .id = 78,
	                        .src_instance = 3,
	                        .src_gpu = 0,
	                        .dst_instance = 4,
	                        .dst_gpu = 1}};
	const char *p = tmp("other.h5");
	assert_int_equal(write_other_layout(p, rows, 2, NULL), 0);
	gv_sched_t s;
	err_t e = {0};
	assert_int_equal(gv_sched_read(&s, p, &e), 0);
	assert_int_equal(s.n, 2);
	assert_false(s.is_plan);
	const res_transfer_t *t = &s.xfer[0];
	assert_int_equal(t->id, 77);
	assert_int_equal(t->src_instance, -1);
	assert_int_equal(t->dst_instance, 2);
	assert_int_equal(t->dst_gpu, 1);
	assert_int_equal(t->bytes, 65536);
	assert_int_equal(t->blocks, 4);
	assert_int_equal(t->klass, 1);
	assert_int_equal(t->path_kind, 1);
	assert_int_equal(t->granular, 1);
	assert_int_equal(t->start_ns, 100);
	assert_int_equal(t->end_ns, 900);
	assert_int_equal(s.xfer[1].cancelled, 1);
	gv_sched_free(&s);
}

static void test_schedule_without_a_member_is_rejected_naming_it(void **state)
{
	(void)state;
	other_row_t row = {.bytes = 1, .id = 1};
	const char *p = tmp("missing.h5");
	assert_int_equal(write_other_layout(p, &row, 1, "granular"), 0);
	gv_sched_t s;
	err_t e = {0};
	assert_int_equal(gv_sched_read(&s, p, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "'granular' missing"));
	assert_int_equal(gv_sched_read(&s, tmp("absent.h5"), &e), KS_EINPUT); /* a path the user gave */
}

static void test_schedule_written_then_read_is_identical_and_keeps_plan_mark(void **state)
{
	(void)state;
	res_transfer_t t[3] = {xf(1, -1, -1, 0, 0, 4096, 0, 10), xf(2, 0, 0, -1, -1, 8192, 5, 20),
	                       xf(3, 0, 0, 1, 0, 1 << 20, 7, 99)};
	t[2].granular = 1;
	t[2].blocks = 16;
	t[2].cancelled = 1;
	const char *p = tmp("rt.h5");
	err_t e = {0};
	assert_int_equal(gv_sched_write(p, t, 3, 1, &e), 0);
	gv_sched_t s;
	assert_int_equal(gv_sched_read(&s, p, &e), 0);
	assert_true(s.is_plan);
	assert_int_equal(s.n, 3);
	assert_memory_equal(s.xfer, t, sizeof t);
	gv_sched_free(&s);
	assert_int_equal(access(tmp("rt.h5.tmp"), F_OK), -1); /* temporary renamed away */
}

/* ---- replay builder ------------------------------------------------------------ */

static void test_endpoints_map_to_devices_and_kinds(void **state)
{
	(void)state;
	res_transfer_t t[5] = {xf(1, -1, -1, 0, 0, 100, 0, 10),   /* host -> (0,0) */
	                       xf(2, 0, 0, -1, -1, 100, 0, 10),   /* (0,0) -> host */
	                       xf(3, 0, 0, 0, 1, 100, 0, 10),     /* (0,0) -> (0,1) */
	                       xf(4, -1, -1, -1, -1, 100, 0, 10), /* host -> host: skipped */
	                       xf(5, 1, 0, 0, 0, 100, 0, 10)};    /* (1,0) -> (0,0) */
	t[4].cancelled = 1;
	gv_sched_t s = {t, 5, 0};
	gv_replay_t r;
	err_t e = {0};
	gv_replay_opts_t o = {.n_dev = 2, .groups = 0};
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.n_op, 3);
	assert_int_equal(r.skipped_host, 1);
	assert_int_equal(r.skipped_cancelled, 1);
	int seen = 0;
	for (size_t i = 0; i < r.n_op; i++) {
		const gv_op_t *op = &r.op[i];
		if (op->id == 1) {
			assert_int_equal(op->kind, GV_COPY_H2D);
			assert_int_equal(op->link, MDL_LINK_PCIE_H2D);
			assert_int_equal(op->src_dev, -1);
			assert_int_equal(op->dst_dev, 0);
		} else if (op->id == 2) {
			assert_int_equal(op->kind, GV_COPY_D2H);
			assert_int_equal(op->link, MDL_LINK_PCIE_D2H);
		} else {
			assert_int_equal(op->id, 3);
			assert_int_equal(op->kind, GV_COPY_P2P);
			assert_int_equal(op->link, MDL_LINK_NVLINK);
			assert_int_equal(op->dst_dev, 1);
		}
		seen |= 1 << op->id;
	}
	assert_int_equal(seen, 0xe);
	assert_true(r.uses_p2p[0][1]);
	assert_int_equal(r.host_src, 100);
	assert_int_equal(r.dev_dst[1], 100);
	gv_replay_free(&r);
	/* one device: the GPU-to-GPU copy becomes a local one */
	o.n_dev = 1;
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	for (size_t i = 0; i < r.n_op; i++)
		if (r.op[i].id == 3) {
			assert_int_equal(r.op[i].kind, GV_COPY_D2D);
			assert_int_equal(r.op[i].link, MDL_LINK_LOCAL);
		}
	gv_replay_free(&r);
}

static void test_overlapping_flows_get_their_own_streams_and_sequential_ones_share(void **state)
{
	(void)state;
	res_transfer_t t[5] = {
	    xf(1, -1, -1, 0, 0, 100, 1000, 2000), xf(2, -1, -1, 0, 0, 100, 1500, 2500),
	    xf(3, 0, 0, -1, -1, 100, 1600, 1700), xf(4, -1, -1, 0, 0, 100, 2000, 3000),
	    xf(5, -1, -1, 0, 0, 100, 9000, 9100)};
	gv_sched_t s = {t, 5, 0};
	gv_replay_t r;
	err_t e = {0};
	gv_replay_opts_t o = {.n_dev = 1, .groups = -1, .inner_bytes = 1 << 20};
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.n_phase, 1);
	assert_int_equal(r.n_streams, 3);
	const gv_op_t *op = r.op; /* sorted by offset */
	assert_int_equal(op[0].id, 1);
	assert_int_equal(op[0].offset_ns, 0);
	assert_int_equal(op[3].id, 4);
	assert_int_equal(op[4].offset_ns, 8000);
	/* flow 4 takes flow 1's stream (1 ended at 2000), and so does flow 5 */
	static const int stream[5] = {0, 1, 2, 0, 0};
	for (int i = 0; i < 5; i++)
		assert_int_equal(op[i].stream, stream[i]);
	/* flow 2 overlaps 1, 4 (same direction) and 3 (reverse) */
	assert_int_equal(op[1].m_same, 3);
	assert_int_equal(op[1].m_opp, 1);
	assert_int_equal(op[4].m_same, 1);
	assert_int_equal(op[4].m_opp, 0);
	for (size_t i = 0; i < r.n_op; i++)
		assert_int_equal(op[i].inner, 1); /* schedules are replayed as planned */
	gv_replay_free(&r);
	/* --limit and --span-s keep the earliest transfers */
	o.limit = 3;
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.n_op, 3);
	assert_int_equal(r.skipped_limit, 2);
	gv_replay_free(&r);
	o.limit = 0;
	o.span_ns = 1000;
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.n_op, 4); /* starts 1000..2000; 9000 is out */
	gv_replay_free(&r);
}

static void test_plan_groups_are_isolated_phases_with_batched_tiny_copies(void **state)
{
	(void)state;
	res_transfer_t t[5] = {
	    xf(1, -1, -1, 0, 0, 4096, 0, 10), xf(2, -1, -1, 0, 0, 4096, 100, 110),
	    xf(3, -1, -1, 0, 0, 4096, 100, 110), xf(4, 0, 0, -1, -1, 4096, 100, 110),
	    xf(5, -1, -1, 0, 0, 1 << 21, 200, 300)};
	t[4].granular = 1;
	t[4].blocks = 32;
	gv_sched_t s = {t, 5, 1};
	gv_replay_t r;
	err_t e = {0};
	gv_replay_opts_t o = {.n_dev = 1, .groups = -1, .batch = 1, .inner_bytes = 65536};
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.n_phase, 3);
	assert_int_equal(r.phase_first[1], 1);
	assert_int_equal(r.phase_first[2], 4);
	for (size_t i = 1; i < 4; i++) {
		assert_int_equal(r.op[i].offset_ns, 0);
		assert_int_equal(r.op[i].m_same + r.op[i].m_opp, 3);
		assert_int_equal(r.op[i].inner, 16); /* 65536 / 4096 */
	}
	assert_int_equal(r.n_streams, 3);
	assert_int_equal(r.op[4].shape, MDL_SHAPE_BATCH);
	assert_int_equal(r.op[4].inner, 1);
	assert_int_equal(r.op[4].blocks, 32);
	gv_replay_free(&r);
	/* layer slices multiply the copies of granular transfers only */
	o.batch = 0;
	o.slices = 4;
	assert_int_equal(gv_replay_build(&r, &s, &o, &e), 0);
	assert_int_equal(r.op[4].shape, MDL_SHAPE_GRANULAR);
	assert_int_equal(r.op[4].blocks, 128);
	assert_int_equal(r.op[0].blocks, 1);
	gv_replay_free(&r);
	gv_sched_t none = {t, 0, 0};
	assert_int_equal(gv_replay_build(&r, &none, &o, &e), KS_EINPUT);
}

/* ---- plan ---------------------------------------------------------------------- */

static void test_plan_covers_sizes_directions_shapes_and_concurrency(void **state)
{
	(void)state;
	gv_plan_opts_t o;
	gv_plan_defaults(&o);
	o.max_bytes = 1 << 20;
	res_transfer_t *t;
	size_t n;
	err_t e = {0};
	assert_int_equal(gv_plan_build(&o, &t, &n, &e), 0);
	uint64_t lo = UINT64_MAX, hi = 0;
	int h2d = 0, d2h = 0, g2g = 0, gran = 0, opp_groups = 0, max_group = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int fwd = 0, rev = 0;
		while (j < n && t[j].start_ns == t[i].start_ns) {
			const res_transfer_t *x = &t[j];
			assert_true(x->bytes <= o.max_bytes);
			assert_true(x->end_ns > x->start_ns);
			assert_int_equal(x->id, j);
			lo = x->bytes < lo ? x->bytes : lo;
			hi = x->bytes > hi ? x->bytes : hi;
			h2d += x->src_instance < 0;
			d2h += x->dst_instance < 0;
			g2g += x->src_instance >= 0 && x->dst_instance >= 0;
			gran += x->granular && x->blocks > 1;
			fwd += x->src_instance < 0 || (x->dst_instance >= 0 && x->src_gpu == 0);
			rev += x->dst_instance < 0 || (x->src_instance >= 0 && x->src_gpu == 1);
			j++;
		}
		if (j < n)
			assert_true(t[j].start_ns >= t[j - 1].end_ns); /* groups do not overlap */
		opp_groups += fwd && rev;
		max_group = (int)(j - i) > max_group ? (int)(j - i) : max_group;
		i = j;
	}
	assert_int_equal(lo, 4096);
	assert_int_equal(hi, 1 << 20);
	assert_true(h2d > 20 && d2h > 20 && g2g > 20);
	assert_true(gran >= 3 * 10);
	assert_true(opp_groups > 0);
	assert_int_equal(max_group, 8);
	free(t);
	o.per_octave = 0;
	assert_int_equal(gv_plan_build(&o, &t, &n, &e), KS_EINPUT);
}

/* ---- fit ------------------------------------------------------------------------ */

static const mdl_xfer_link_t truth = {
    .n_pieces = 3,
    .piece = {{65536, 4000, 8}, {2097152, 6000, 30}, {UINT64_MAX, 9000, 52}},
    .overhead_ns = 1800,
    .batch_overhead_ns = 400,
    .share_same = 0.85,
    .share_opp = 0.12};

/* Deterministic noise in [-amp, amp] (a fixed LCG, so the test never flakes). */
static double noise(uint64_t *s, double amp)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return amp * (2.0 * (double)(*s >> 11) / 9007199254740992.0 - 1.0);
}

static size_t synth(gv_copy_t *c, size_t cap, int link, double amp)
{
	mdl_xfer_t x;
	mdl_xfer_default(&x);
	x.link[link] = truth;
	size_t n = 0;
	uint64_t rng = 42;
#define ADD(shape_, bytes_, blocks_, ms_, mo_)                                                     \
	do {                                                                                       \
		assert_true(n < cap);                                                              \
		gv_copy_t *k = &c[n];                                                              \
		*k = (gv_copy_t){.id = n,                                                          \
		                 .link = link,                                                     \
		                 .shape = shape_,                                                  \
		                 .bytes = bytes_,                                                  \
		                 .blocks = blocks_,                                                \
		                 .m_same = ms_,                                                    \
		                 .m_opp = mo_,                                                     \
		                 .reps = 1};                                                       \
		double t = mdl_xfer_predict_ns(&x, link, shape_, bytes_, blocks_, ms_, mo_);       \
		k->start_ns = 1000000 * (int64_t)n;                                                \
		k->end_ns = k->start_ns + llround(t * (1 + noise(&rng, amp)));                     \
		n++;                                                                               \
	} while (0)
	for (int i = 0; i <= 4 * 14; i++) /* 4 KiB .. 64 MiB, 4 per octave */
		ADD(MDL_SHAPE_CONTIG, (uint64_t)llround(4096 * pow(2, i / 4.0)), 1, 1, 0);
	static const uint64_t bs[] = {4096, 16384, 65536, 262144, 1048576};
	static const uint32_t nb[] = {2, 8, 32, 128};
	for (int s = MDL_SHAPE_GRANULAR; s <= MDL_SHAPE_BATCH; s++)
		for (int i = 0; i < 5; i++)
			for (int j = 0; j < 4; j++)
				ADD(s, bs[i] * nb[j], nb[j], 1, 0);
	for (int i = 0; i <= 14; i += 2)
		for (int m = 2; m <= 8; m *= 2) {
			uint64_t b = 4096ull << i;
			ADD(MDL_SHAPE_CONTIG, b, 1, m, 0);
			ADD(MDL_SHAPE_CONTIG, b, 1, m / 2, m / 2);
		}
#undef ADD
	return n;
}

static void assert_close(double got, double want, double rel, const char *what)
{
	if (fabs(got - want) > rel * fabs(want))
		fail_msg("%s: fitted %.6g, true %.6g (%.3f%% off)", what, got, want,
		         100 * fabs(got - want) / fabs(want));
}

/* Fits m with the default options into x, reset to the default model
 * first (far from any synthetic truth); gv_fit's status, its message in e. */
static int fit_default(const gv_meas_t *m, mdl_xfer_t *x, gv_fit_report_t *rep, err_t *e)
{
	gv_fit_opts_t fo;
	gv_fit_defaults(&fo);
	mdl_xfer_default(x);
	return gv_fit(m, &fo, x, rep, e);
}

static void test_fit_recovers_known_parameters_within_one_percent(void **state)
{
	(void)state;
	gv_copy_t c[400];
	gv_meas_t m = {.copy = c};
	m.n_copy = synth(c, 400, MDL_LINK_PCIE_H2D, 0.0005); /* +-0.05% timing noise */
	gv_fit_opts_t fo;
	gv_fit_defaults(&fo);
	assert_int_equal(fo.n_edges, 2);
	assert_true(fo.edges[0] == 65536 && fo.edges[1] == 2097152);
	mdl_xfer_t x;
	gv_fit_report_t rep;
	err_t e = {0};
	assert_int_equal(fit_default(&m, &x, &rep, &e), 0);
	const mdl_xfer_link_t *l = &x.link[MDL_LINK_PCIE_H2D];
	assert_int_equal(l->n_pieces, 3);
	char what[64];
	for (int i = 0; i < 3; i++) {
		snprintf(what, sizeof what, "alpha[%d]", i);
		assert_close(l->piece[i].alpha_ns, truth.piece[i].alpha_ns, 0.01, what);
		snprintf(what, sizeof what, "bw[%d]", i);
		assert_close(l->piece[i].bw_gbps, truth.piece[i].bw_gbps, 0.01, what);
		assert_true(l->piece[i].max_bytes == truth.piece[i].max_bytes);
	}
	assert_close(l->overhead_ns, truth.overhead_ns, 0.01, "overhead");
	assert_close(l->batch_overhead_ns, truth.batch_overhead_ns, 0.01, "batch overhead");
	assert_close(l->share_same, truth.share_same, 0.01, "share_same");
	assert_close(l->share_opp, truth.share_opp, 0.01, "share_opp");
	const gv_fit_link_t *lr = &rep.link[MDL_LINK_PCIE_H2D];
	assert_true(lr->fit_overhead && lr->fit_batch && lr->fit_share_same && lr->fit_share_opp);
	assert_int_equal(lr->n_fit + lr->n_test, m.n_copy);
	assert_true(lr->n_fit - lr->n_test <= 1);
	assert_true(rep.test.mape < 0.1 && rep.test.p95 < 0.1); /* percent */
	assert_int_equal(rep.link[MDL_LINK_NVLINK].n_fit, 0);
}

static void test_fit_drops_a_piece_without_data_and_says_when_too_little(void **state)
{
	(void)state;
	gv_copy_t c[400];
	gv_meas_t m = {.copy = c};
	size_t n = synth(c, 400, MDL_LINK_PCIE_D2H, 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) /* keep only copies of <= 64 KiB per call */
		if ((c[i].shape == MDL_SHAPE_CONTIG ? c[i].bytes : c[i].bytes / c[i].blocks) <=
		    65536)
			c[k++] = c[i];
	m.n_copy = k;
	mdl_xfer_t x;
	gv_fit_report_t rep;
	err_t e = {0};
	assert_int_equal(fit_default(&m, &x, &rep, &e), 0);
	assert_int_equal(x.link[MDL_LINK_PCIE_D2H].n_pieces, 1);
	assert_true(x.link[MDL_LINK_PCIE_D2H].piece[0].max_bytes == UINT64_MAX);
	assert_close(x.link[MDL_LINK_PCIE_D2H].piece[0].bw_gbps, 8, 0.01, "bw");
	/* a second link with two copies: it keeps its values, the first is fitted */
	c[k] = c[0];
	c[k].link = MDL_LINK_NET;
	c[k + 1] = c[1];
	c[k + 1].link = MDL_LINK_NET;
	m.n_copy = k + 2;
	mdl_xfer_t d;
	mdl_xfer_default(&d);
	assert_int_equal(fit_default(&m, &x, &rep, &e), 0);
	assert_int_equal(rep.link[MDL_LINK_NET].status, KS_EINPUT);
	assert_non_null(strstr(rep.link[MDL_LINK_NET].error, "net: 1 copies"));
	assert_memory_equal(&x.link[MDL_LINK_NET], &d.link[MDL_LINK_NET], sizeof d.link[0]);
	assert_int_equal(rep.link[MDL_LINK_PCIE_D2H].status, 0);
	m.n_copy = 2;
	assert_int_equal(fit_default(&m, &x, &rep, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "copies for"));
	m.n_copy = 0;
	assert_int_equal(fit_default(&m, &x, &rep, &e), KS_EINPUT);
}

static void test_fit_turns_compute_rows_into_mfu_and_mbu(void **state)
{
	(void)state;
	gv_copy_t c[400];
	gv_compute_t comp[4] = {{.op = "gemm_qkv", .m = 16, .flops_per_s = 100e12},
	                        {.op = "gemm_o", .m = 512, .flops_per_s = 500e12},
	                        {.op = "gemm_down", .m = 2048, .flops_per_s = 700e12},
	                        {.op = "read", .m = 1 << 30, .bytes_per_s = 4e12}};
	gv_meas_t m = {
	    .copy = c, .comp = comp, .n_comp = 4, .peak_flops = 1000e12, .peak_bytes_per_s = 5e12};
	m.n_copy = synth(c, 400, MDL_LINK_PCIE_H2D, 0);
	mdl_xfer_t x;
	gv_fit_report_t rep;
	err_t e = {0};
	assert_int_equal(fit_default(&m, &x, &rep, &e), 0);
	assert_close(x.mfu, 0.6, 1e-9, "mfu"); /* median of 0.5 and 0.7 (m >= 256) */
	assert_close(x.mbu, 0.8, 1e-9, "mbu");
	assert_int_equal(rep.n_gemm, 3);
	m.peak_flops = 0; /* unknown peak: no MFU */
	assert_int_equal(fit_default(&m, &x, &rep, &e), 0);
	assert_true(isnan(x.mfu));
}

static void test_error_summary_uses_absolute_values_and_nearest_rank(void **state)
{
	(void)state;
	double r[20];
	for (int i = 0; i < 20; i++)
		r[i] = (i % 2 ? -1 : 1) * (i + 1) / 100.0; /* |r| = 1..20 % */
	gv_err_summary_t s;
	gv_err_summarize(r, 20, &s);
	assert_int_equal(s.n, 20);
	assert_true(fabs(s.mape - 10.5) < 1e-9);
	assert_true(fabs(s.p95 - 19) < 1e-9);
	assert_true(fabs(s.p50 - 10) < 1e-9);
	assert_true(fabs(s.max - 20) < 1e-9);
	gv_err_summarize(r, 0, &s);
	assert_true(isnan(s.mape));
}

/* ---- measurements and check --------------------------------------------------- */

static void test_measurements_round_trip_with_attributes(void **state)
{
	(void)state;
	gv_copy_t c[2] = {{.id = 5,
	                   .kind = GV_COPY_P2P,
	                   .link = MDL_LINK_NVLINK,
	                   .bytes = 1 << 20,
	                   .blocks = 1,
	                   .inner = 1,
	                   .m_same = 1,
	                   .start_ns = 10,
	                   .end_ns = 30,
	                   .src_dev = 0,
	                   .dst_dev = 1,
	                   .reps = 5,
	                   .min_ns = 19,
	                   .max_ns = 25},
	                  {.id = 6,
	                   .kind = GV_COPY_H2D,
	                   .shape = MDL_SHAPE_GRANULAR,
	                   .bytes = 4096,
	                   .blocks = 4,
	                   .inner = 16,
	                   .m_same = 2,
	                   .m_opp = 1,
	                   .start_ns = 5,
	                   .end_ns = 9,
	                   .src_dev = -1}};
	gv_compute_t k = {.op = "gemm_o",
	                  .m = 16,
	                  .n = 4096,
	                  .k = 4096,
	                  .flops = 5.4e8,
	                  .time_ns = 1234,
	                  .flops_per_s = 4.4e14};
	gv_meas_t m = {.copy = c,
	               .n_copy = 2,
	               .comp = &k,
	               .n_comp = 1,
	               .clock_khz = 1980000,
	               .peak_flops = 9.894e14};
	snprintf(m.backend, sizeof m.backend, "cuda");
	snprintf(m.device, sizeof m.device, "NVIDIA H200");
	snprintf(m.cmdline, sizeof m.cmdline, "kvreplay plan.h5");
	snprintf(m.peer, sizeof m.peer, "0->1 enabled");
	const char *p = tmp("meas.h5");
	err_t e = {0};
	assert_int_equal(gv_meas_write(p, &m, &e), 0);
	gv_meas_t r;
	assert_int_equal(gv_meas_read(&r, p, &e), 0);
	assert_int_equal(r.n_copy, 2);
	assert_memory_equal(r.copy, c, sizeof c);
	assert_int_equal(r.n_comp, 1);
	assert_memory_equal(r.comp, &k, sizeof k);
	assert_string_equal(r.device, "NVIDIA H200");
	assert_string_equal(r.backend, "cuda");
	assert_string_equal(r.cmdline, "kvreplay plan.h5");
	assert_string_equal(r.peer, "0->1 enabled");
	assert_int_equal(r.clock_khz, 1980000);
	assert_true(r.peak_flops == 9.894e14);
	gv_meas_free(&r);
	assert_int_equal(gv_meas_read(&r, tmp("absent.h5"), &e), KS_EINPUT);
	res_transfer_t t = xf(1, -1, -1, 0, 0, 1, 0, 1); /* a schedule is no measurement */
	assert_int_equal(gv_sched_write(tmp("sched.h5"), &t, 1, 0, &e), 0);
	assert_int_equal(gv_meas_read(&r, tmp("sched.h5"), &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "/copies"));
}

static void test_check_joins_by_id_and_reports_model_and_simulator_error(void **state)
{
	(void)state;
	mdl_xfer_t x;
	mdl_xfer_default(&x);
	x.link[MDL_LINK_PCIE_H2D] = truth;
	res_transfer_t t[2] = {xf(10, -1, -1, 0, 0, 8 << 20, 0, 200000),
	                       xf(11, -1, -1, 0, 0, 8 << 20, 0, 100000)};
	double pred =
	    mdl_xfer_predict_ns(&x, MDL_LINK_PCIE_H2D, MDL_SHAPE_CONTIG, 8 << 20, 1, 1, 0);
	gv_copy_t c[3] = {{.id = 11,
	                   .link = MDL_LINK_PCIE_H2D,
	                   .bytes = 8 << 20,
	                   .blocks = 1,
	                   .m_same = 1,
	                   .start_ns = 0,
	                   .end_ns = llround(pred)},
	                  {.id = 10,
	                   .link = MDL_LINK_PCIE_H2D,
	                   .bytes = 8 << 20,
	                   .blocks = 1,
	                   .m_same = 1,
	                   .start_ns = 0,
	                   .end_ns = llround(pred * 1.25)},
	                  {.id = 99,
	                   .link = MDL_LINK_PCIE_H2D,
	                   .bytes = 1,
	                   .blocks = 1,
	                   .m_same = 1,
	                   .start_ns = 0,
	                   .end_ns = 5}};
	gv_sched_t s = {t, 2, 0};
	gv_meas_t m = {.copy = c, .n_copy = 3};
	gv_check_row_t *rows;
	gv_check_summary_t sum;
	err_t e = {0};
	assert_int_equal(gv_check(&s, &m, &x, &rows, &sum, &e), 0);
	assert_int_equal(sum.n_rows, 2);
	assert_int_equal(sum.n_unmatched, 1);
	assert_int_equal(rows[0].id, 11);
	assert_true(fabs(rows[0].sim_ns - 100000) < 1e-9);
	/* model errors: 0 and 1 - 1/1.25 = 20% -> MAPE 10% */
	assert_true(fabs(sum.model.mape - 10) < 0.01);
	assert_true(fabs(sum.model.max - 20) < 0.01);
	free(rows);
	m.n_copy = 0;
	assert_int_equal(gv_check(&s, &m, &x, &rows, &sum, &e), KS_EINPUT);
}

/* A finished write lands at its path; a failed one leaves neither file. */
static void test_h5_finish_renames_on_success_and_removes_on_failure(void **st)
{
	(void)st;
	char t[256], p[256];
	snprintf(t, sizeof t, "%s", tmp("ok.h5.tmp"));
	snprintf(p, sizeof p, "%s", tmp("ok.h5"));
	err_t e = {0};
	file_out_t fo;
	hid_t f = gv_h5_create(&fo, p, &e);
	assert_true(f >= 0);
	assert_string_equal(fo.tmp, t);
	assert_int_equal(gv_h5_finish(f, &fo, 0, &e), 0);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_not_equal(access(t, F_OK), 0);
	snprintf(t, sizeof t, "%s", tmp("bad.h5.tmp"));
	snprintf(p, sizeof p, "%s", tmp("bad.h5"));
	assert_true((f = gv_h5_create(&fo, p, &e)) >= 0);
	assert_int_equal(gv_h5_finish(f, &fo, KS_EIO, &e), KS_EIO);
	assert_int_not_equal(access(p, F_OK), 0);
	assert_int_not_equal(access(t, F_OK), 0);
}

TEST_MAIN_FIXTURE(
    tmp_group_setup, tmp_group_teardown,
    cmocka_unit_test(test_h5_finish_renames_on_success_and_removes_on_failure),
    cmocka_unit_test(test_schedule_members_are_read_by_name_not_position),
    cmocka_unit_test(test_schedule_without_a_member_is_rejected_naming_it),
    cmocka_unit_test(test_schedule_written_then_read_is_identical_and_keeps_plan_mark),
    cmocka_unit_test(test_endpoints_map_to_devices_and_kinds),
    cmocka_unit_test(test_overlapping_flows_get_their_own_streams_and_sequential_ones_share),
    cmocka_unit_test(test_plan_groups_are_isolated_phases_with_batched_tiny_copies),
    cmocka_unit_test(test_plan_covers_sizes_directions_shapes_and_concurrency),
    cmocka_unit_test(test_fit_recovers_known_parameters_within_one_percent),
    cmocka_unit_test(test_fit_drops_a_piece_without_data_and_says_when_too_little),
    cmocka_unit_test(test_fit_turns_compute_rows_into_mfu_and_mbu),
    cmocka_unit_test(test_error_summary_uses_absolute_values_and_nearest_rank),
    cmocka_unit_test(test_measurements_round_trip_with_attributes),
    cmocka_unit_test(test_check_joins_by_id_and_reports_model_and_simulator_error))

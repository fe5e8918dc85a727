/* gv_fit — calibration fit (see gv_fit.h). */
#include "sim/base/mem.h"
#include "gpu_validation/gv_fit.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void gv_fit_defaults(gv_fit_opts_t *o)
{
	memset(o, 0, sizeof *o);
	/* Where pinned PCIe/NVLink copies change regime: below ~64 KiB the
	 * latency dominates, above ~2 MiB the link runs at its streaming rate. */
	o->edges[0] = 64 << 10;
	o->edges[1] = 2 << 20;
	o->n_edges = 2;
	o->holdout = 1;
}

double gv_fit_predict(const mdl_xfer_t *x, const gv_copy_t *c)
{
	return mdl_xfer_predict_ns(x, c->link, c->shape, c->bytes, c->blocks, c->m_same, c->m_opp);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(const double *sorted, size_t n, double q)
{
	/* nearest rank on the sorted sample */
	size_t i = (size_t)ceil(q * (double)n);
	return sorted[i ? i - 1 : 0];
}

void gv_err_summarize(double *rel, size_t n, gv_err_summary_t *s)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	if (!n) {
		s->mape = s->p50 = s->p95 = s->max = NAN;
		return;
	}
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		rel[i] = fabs(rel[i]);
		sum += rel[i];
	}
	qsort(rel, n, sizeof *rel, cmp_double);
	s->mape = 100 * sum / (double)n;
	s->p50 = 100 * pct(rel, n, 0.50);
	s->p95 = 100 * pct(rel, n, 0.95);
	s->max = 100 * rel[n - 1];
}

/* ---- one link ----------------------------------------------------------------- */

typedef struct fit_ctx {
	const gv_copy_t **obs;
	size_t n;
	mdl_xfer_t *x;
	int link;
	int n_pieces;
	int i_over, i_batch, i_same, i_opp; /* parameter index or -1 */
} fit_ctx_t;

static double duration(const gv_copy_t *c)
{
	return (double)(c->end_ns - c->start_ns);
}

/* Writes parameter vector p into the model's link. p = a_0, h_0, ... then
 * the optional extras; every model parameter is the square of its entry
 * (alpha = a^2, 1/beta = h^2, ...), which keeps latencies, overheads and
 * sharing factors >= 0 and bandwidths > 0 without a bounded solver. */
static void params_to_link(const fit_ctx_t *c, const double *p)
{
	mdl_xfer_link_t *l = &c->x->link[c->link];
	for (int i = 0; i < c->n_pieces; i++) {
		double g = p[2 * i + 1] * p[2 * i + 1];
		l->piece[i].alpha_ns = p[2 * i] * p[2 * i];
		l->piece[i].bw_gbps = 1.0 / (g > 1e-12 ? g : 1e-12);
	}
	if (c->i_over >= 0)
		l->overhead_ns = p[c->i_over] * p[c->i_over];
	if (c->i_batch >= 0)
		l->batch_overhead_ns = p[c->i_batch] * p[c->i_batch];
	if (c->i_same >= 0)
		l->share_same = p[c->i_same] * p[c->i_same];
	if (c->i_opp >= 0)
		l->share_opp = p[c->i_opp] * p[c->i_opp];
}

/* The solver's entry for a starting value v (see params_to_link). */
static double root(double v, double floor)
{
	return sqrt(v > floor ? v : floor);
}

static int residuals(const gsl_vector *p, void *data, gsl_vector *f)
{
	fit_ctx_t *c = data;
	params_to_link(c, p->data);
	for (size_t i = 0; i < c->n; i++) {
		double t = duration(c->obs[i]);
		gsl_vector_set(f, i, (gv_fit_predict(c->x, c->obs[i]) - t) / t);
	}
	return GSL_SUCCESS;
}

static int piece_of(const mdl_xfer_link_t *l, const gv_copy_t *c)
{
	uint64_t b =
	    c->shape == MDL_SHAPE_CONTIG ? c->bytes : c->bytes / (c->blocks ? c->blocks : 1);
	int i = 0;
	while (i + 1 < l->n_pieces && b > l->piece[i].max_bytes)
		i++;
	return i;
}

/* Starting point: per piece, the relative-error least squares line through
 * the isolated copies (closed form of the 2x2 weighted normal equations). */
static void initial_guess(const fit_ctx_t *c, double *p)
{
	const mdl_xfer_link_t *l = &c->x->link[c->link];
	for (int k = 0; k < c->n_pieces; k++) {
		double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0, gsum = 0;
		int cnt = 0;
		for (size_t i = 0; i < c->n; i++) {
			const gv_copy_t *o = c->obs[i];
			if (piece_of(l, o) != k)
				continue;
			double t = duration(o), n = (double)o->bytes, w = 1 / (t * t);
			gsum += t / n;
			cnt++;
			if (o->shape != MDL_SHAPE_CONTIG || o->m_same > 1 || o->m_opp)
				continue;
			s11 += w;
			s12 += w * n;
			s22 += w * n * n;
			r1 += w * t;
			r2 += w * t * n;
		}
		double det = s11 * s22 - s12 * s12;
		double a = 0, g = cnt ? gsum / cnt : 0.02;
		if (det > 1e-12 * s11 * s22 && s11 > 0) {
			a = (r1 * s22 - r2 * s12) / det;
			g = (s11 * r2 - s12 * r1) / det;
		}
		if (!(g > 0))
			g = cnt ? gsum / cnt : 0.02;
		p[2 * k] = root(a, 1);
		p[2 * k + 1] = root(g, 1e-6);
	}
	if (c->i_over >= 0)
		p[c->i_over] = root(1000, 1);
	if (c->i_batch >= 0)
		p[c->i_batch] = root(300, 1);
	if (c->i_same >= 0)
		p[c->i_same] = root(0.8, 1e-3);
	if (c->i_opp >= 0)
		p[c->i_opp] = root(0.2, 1e-3);
}

static int fit_link(fit_ctx_t *c, const gv_fit_opts_t *o, gv_fit_link_t *out, err_t *e)
{
	mdl_xfer_link_t *l = &c->x->link[c->link];
	/* pieces from the edges, dropping those with copies of fewer than 3
	 * distinct sizes: alpha and beta need a spread of sizes */
	l->n_pieces = 0;
	uint64_t lo = 0;
	for (int i = 0; i <= o->n_edges; i++) {
		uint64_t hi = i < o->n_edges ? o->edges[i] : UINT64_MAX, sizes[3];
		size_t cnt = 0;
		for (size_t j = 0; j < c->n && cnt < 3; j++) {
			const gv_copy_t *ob = c->obs[j];
			uint64_t b =
			    ob->shape == MDL_SHAPE_CONTIG ? ob->bytes : ob->bytes / ob->blocks;
			size_t k = 0;
			while (k < cnt && sizes[k] != b)
				k++;
			if (b > lo && b <= hi && k == cnt)
				sizes[cnt++] = b;
		}
		if (cnt >= 3 || (i == o->n_edges && !l->n_pieces)) {
			l->piece[l->n_pieces++].max_bytes = hi;
		} else if (i == o->n_edges) {
			l->piece[l->n_pieces - 1].max_bytes = UINT64_MAX; /* merge into the last */
		}
		lo = hi;
	}
	/* a dropped piece's copies fall into the next kept one (or the last) */
	c->n_pieces = l->n_pieces;
	int np = 2 * c->n_pieces;
	int has_gran = 0, has_batch = 0, has_same = 0, has_opp = 0;
	for (size_t j = 0; j < c->n; j++) {
		has_gran |= c->obs[j]->shape == MDL_SHAPE_GRANULAR;
		has_batch |= c->obs[j]->shape == MDL_SHAPE_BATCH;
		has_same |= c->obs[j]->m_same > 1;
		has_opp |= c->obs[j]->m_opp > 0;
	}
	c->i_over = has_gran ? np++ : -1;
	c->i_batch = has_batch ? np++ : -1;
	c->i_same = has_same ? np++ : -1;
	c->i_opp = has_opp ? np++ : -1;
	out->n_pieces = c->n_pieces;
	out->fit_overhead = has_gran;
	out->fit_batch = has_batch;
	out->fit_share_same = has_same;
	out->fit_share_opp = has_opp;
	if (c->n < (size_t)np)
		return err_set(e, KS_EINPUT, "fit: link %s: %zu copies for %d parameters",
		               mdl_xfer_link_name(c->link), c->n, np);

	double p0[2 * MDL_XFER_MAX_PIECES + 4];
	initial_guess(c, p0);
	gsl_vector_view x0 = gsl_vector_view_array(p0, (size_t)np);
	gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
	fp.scale = gsl_multifit_nlinear_scale_more;
	fp.h_df = 1e-7;
	gsl_multifit_nlinear_workspace *w =
	    gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, c->n, (size_t)np);
	if (!w)
		return err_set(e, KS_ENOMEM, "fit: out of memory");
	gsl_multifit_nlinear_fdf fdf = {
	    .f = residuals, .df = NULL, .fvv = NULL, .n = c->n, .p = (size_t)np, .params = c};
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	int info = 0, rc = gsl_multifit_nlinear_init(&x0.vector, &fdf, w);
	if (!rc)
		rc = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 0, NULL, NULL, &info, w);
	gsl_set_error_handler(old);
	/* GSL_EMAXITER still leaves the best point found; anything else is fatal */
	if (rc && rc != GSL_EMAXITER) {
		gsl_multifit_nlinear_free(w);
		return err_set(e, KS_ERUNTIME, "fit: link %s: solver failed: %s",
		               mdl_xfer_link_name(c->link), gsl_strerror(rc));
	}
	params_to_link(c, gsl_multifit_nlinear_position(w)->data);
	out->iterations = (int)gsl_multifit_nlinear_niter(w);
	gsl_multifit_nlinear_free(w);
	for (int i = 0; i < c->n_pieces; i++)
		if (!(l->piece[i].bw_gbps > 0) || !isfinite(l->piece[i].alpha_ns))
			return err_set(e, KS_ERUNTIME,
			               "fit: link %s piece %d: non-physical bandwidth %g GB/s "
			               "(too few sizes in this piece?)",
			               mdl_xfer_link_name(c->link), i, l->piece[i].bw_gbps);
	return 0;
}

/* Order used for the alternate split: similar copies end up side by side, so
 * each half covers every configuration. */
static int cmp_obs(const void *a, const void *b)
{
	const gv_copy_t *x = *(const gv_copy_t *const *)a, *y = *(const gv_copy_t *const *)b;
#define C(f)                                                                                       \
	if (x->f != y->f)                                                                          \
	return x->f < y->f ? -1 : 1
	C(shape);
	C(m_same);
	C(m_opp);
	C(bytes);
	C(blocks);
	C(id);
#undef C
	return 0;
}

static void summarize_set(const mdl_xfer_t *x, const gv_copy_t **obs, size_t n, double *buf,
                          gv_err_summary_t *s)
{
	for (size_t i = 0; i < n; i++) {
		double t = duration(obs[i]);
		buf[i] = (gv_fit_predict(x, obs[i]) - t) / t;
	}
	gv_err_summarize(buf, n, s);
}

static void fit_compute(const gv_meas_t *m, mdl_xfer_t *x, gv_fit_report_t *rep)
{
	double *r = malloc((m->n_comp + 1) * sizeof *r);
	size_t n = 0, n_all = 0;
	double best_read = 0;
	if (!r)
		return;
	for (int pass = 0; pass < 2 && !n; pass++)
		for (size_t i = 0; i < m->n_comp; i++) {
			const gv_compute_t *c = &m->comp[i];
			if (strncmp(c->op, "gemm", 4))
				continue;
			n_all += !pass;
			if (pass == 0 && c->m < 256)
				continue;
			r[n++] = c->flops_per_s / m->peak_flops;
		}
	for (size_t i = 0; i < m->n_comp; i++)
		if (!strcmp(m->comp[i].op, "read")) {
			rep->n_read++;
			if (m->comp[i].bytes_per_s > best_read)
				best_read = m->comp[i].bytes_per_s;
		}
	rep->n_gemm = n_all;
	if (n && m->peak_flops > 0) {
		qsort(r, n, sizeof *r, cmp_double);
		x->mfu = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
	}
	if (best_read > 0 && m->peak_bytes_per_s > 0)
		x->mbu = best_read / m->peak_bytes_per_s;
	free(r);
}

int gv_fit(const gv_meas_t *m, const gv_fit_opts_t *o, mdl_xfer_t *x, gv_fit_report_t *rep,
           err_t *e)
{
	memset(rep, 0, sizeof *rep);
	if (o->n_edges < 0 || o->n_edges > MDL_XFER_MAX_PIECES - 1)
		return err_set(e, KS_EINPUT, "fit: at most %d edges", MDL_XFER_MAX_PIECES - 1);
	for (int i = 1; i < o->n_edges; i++)
		if (o->edges[i] <= o->edges[i - 1])
			return err_set(e, KS_EINPUT, "fit: edges must increase");
	const gv_copy_t **all = malloc((m->n_copy + 1) * sizeof *all);
	const gv_copy_t **train = malloc((m->n_copy + 1) * sizeof *train);
	const gv_copy_t **test = malloc((m->n_copy + 1) * sizeof *test);
	double *buf = malloc((m->n_copy + 1) * sizeof *buf);
	double *test_all = malloc((m->n_copy + 1) * sizeof *test_all);
	int rc = 0, fitted = 0;
	size_t n_test_all = 0;
	err_t first_err = {0};
	if (!all || !train || !test || !buf || !test_all) {
		rc = err_set(e, KS_ENOMEM, "fit: out of memory");
		goto out;
	}
	for (int k = 0; k < MDL_LINK_N && !rc; k++) {
		size_t n = 0, nt = 0, nv = 0;
		for (size_t i = 0; i < m->n_copy; i++)
			if (m->copy[i].link == k && m->copy[i].end_ns > m->copy[i].start_ns)
				all[n++] = &m->copy[i];
		if (!n)
			continue;
		qsort(all, n, sizeof *all, cmp_obs);
		for (size_t i = 0; i < n; i++) {
			if (!o->holdout || i % 2 == 0)
				train[nt++] = all[i];
			if (!o->holdout || i % 2 == 1)
				test[nv++] = all[i];
		}
		fit_ctx_t c = {.obs = train, .n = nt, .x = x, .link = k};
		gv_fit_link_t *lr = &rep->link[k];
		lr->n_fit = nt;
		lr->n_test = nv;
		mdl_xfer_link_t before = x->link[k];
		err_t le = {0};
		lr->status = fit_link(&c, o, lr, &le);
		if (lr->status) {
			x->link[k] = before;
			snprintf(lr->error, sizeof lr->error, "%.255s", le.msg);
			if (!first_err.code)
				first_err = le;
			continue;
		}
		fitted++;
		summarize_set(x, train, nt, buf, &lr->train);
		summarize_set(x, test, nv, buf, &lr->test);
		for (size_t i = 0; i < nv; i++) {
			double t = duration(test[i]);
			test_all[n_test_all++] = (gv_fit_predict(x, test[i]) - t) / t;
		}
	}
	if (!rc && !fitted) {
		if (first_err.code)
			rc = err_set(e, first_err.code, "%s", first_err.msg);
		else
			rc = err_set(e, KS_EINPUT, "fit: no timed copies in the measurements");
	}
	if (!rc) {
		gv_err_summarize(test_all, n_test_all, &rep->test);
		fit_compute(m, x, rep);
	}
out:
	FREE_ALL(all, train, test, buf, test_all);
	return rc;
}

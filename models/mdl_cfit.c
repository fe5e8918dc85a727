/* mdl_cfit — the compute model against measured profiles: per-row
 * prediction, the held-out split, the fit (GSL) and calibration files. See
 * mdl_prof.h. Kept apart from mdl_prof.c, which mdl_cost.c calls, so the two
 * never call each other. */
#include <errno.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl_prof.h"
#include "sim/base/ini_scan.h"
#include "sim/base/ini_typed.h"

/* ---- prediction ------------------------------------------------------------------ */

/* A one-layer model of a row's shape (SwiGLU, BF16, untied embeddings). */
static void row_llm(const mdl_prof_row_t *r, mdl_llm_t *m)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "profile-%ux%u", r->n_embd, r->n_expanded_embd);
	double h = r->n_embd, d = h / r->n_head;
	m->layers = 1;
	m->hidden = r->n_embd;
	m->heads = r->n_head;
	m->kv_heads = r->n_kv_head;
	m->head_dim = (uint32_t)d;
	m->intermediate = r->n_expanded_embd;
	m->vocab = 32000;
	m->dtype_bytes = 2;
	m->weight_bytes = 2;
	double layer = h * (r->n_head + 2.0 * r->n_kv_head) * d + r->n_head * d * h +
	               3 * h * r->n_expanded_embd;
	m->params_total = m->params_active = (uint64_t)(layer + 2 * h * m->vocab);
	m->attention = MDL_ATTN_GQA;
}

int mdl_prof_predict_row(const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                         const mdl_prof_row_t *r, double *ns, err_t *e)
{
	static _Thread_local mdl_compute_t c; /* large (curves): not on the stack */
	mdl_llm_t m;
	row_llm(r, &m);
	mdl_compute_params_t p = *cp;
	p.model = MDL_MODEL_ROOFLINE; /* the terms, not a table */
	int rc = mdl_compute_init(&c, hw, &m, r->tp, &p, e);
	if (rc)
		return rc;
	double g, s;
	mdl_layer_terms(&c, r->tokens, &g, &s);
	*ns = g + (r->small_ns > 0 ? s : 0); /* like with like */
	return 0;
}

double mdl_prof_predict_ar(const mdl_hw_t *hw, const mdl_compute_params_t *cp, uint32_t workers,
                           double bytes)
{
	double lat = (double)cp->allreduce_lat_ns, eff = cp->allreduce_bw_eff, best = INFINITY;
	for (size_t i = 0; i < cp->n_ar; i++) {
		double d = fabs(log2((double)cp->ar[i].tp / workers));
		if (d < best) {
			best = d;
			lat = cp->ar[i].lat_ns;
			eff = cp->ar[i].bw_eff;
		}
	}
	double link = hw->nvlink_bw > 0 ? hw->nvlink_bw : hw->pcie_bw, p = workers;
	return lat + 2 * (p - 1) / p * bytes / (link * eff) * 1e9;
}

/* ---- split, regimes, statistics --------------------------------------------------- */

const char *mdl_regime_name(int r)
{
	static const char *const n[MDL_REG_N] = {"prefill", "decode<=8", "decode>=32",
	                                         "all-reduce"};
	return r >= 0 && r < MDL_REG_N ? n[r] : "?";
}

static int regime_of(uint32_t tokens)
{
	return tokens > 256 ? MDL_REG_PREFILL
	       : tokens <= 8 ? MDL_REG_DEC_SMALL
	       : tokens >= 32 ? MDL_REG_DEC_LARGE
	                      : -1;
}

/* Rank of x among the distinct values of the same group (tp / workers). */
int mdl_prof_held_out(const mdl_prof_t *p, int allreduce, size_t i)
{
	size_t n = allreduce ? p->n_ar : p->n_row;
	uint32_t grp = allreduce ? p->ar[i].workers : p->row[i].tp;
	double x = allreduce ? p->ar[i].bytes : p->row[i].tokens;
	/* count distinct smaller values in the group: O(n^2) over a few
	 * thousand rows, once per fit */
	size_t rank = 0;
	for (size_t j = 0; j < n; j++) {
		uint32_t g = allreduce ? p->ar[j].workers : p->row[j].tp;
		double y = allreduce ? p->ar[j].bytes : p->row[j].tokens;
		if (g != grp || !(y < x))
			continue;
		int first = 1; /* count each distinct y once: at its first row */
		for (size_t k = 0; k < j && first; k++) {
			uint32_t g2 = allreduce ? p->ar[k].workers : p->row[k].tp;
			double y2 = allreduce ? p->ar[k].bytes : p->row[k].tokens;
			first = !(g2 == grp && y2 == y);
		}
		rank += first;
	}
	return (int)(rank % 2);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void stat_of(double *err, size_t n, mdl_err_stat_t *s)
{
	s->n = n;
	s->mape = s->p95 = 0;
	if (!n)
		return;
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += err[i];
	qsort(err, n, sizeof *err, cmp_dbl);
	s->mape = 100 * sum / n;
	/* nearest rank */
	size_t k = (size_t)ceil(0.95 * n);
	s->p95 = 100 * err[k ? k - 1 : 0];
}

int mdl_prof_check(const mdl_prof_t *p, const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                   mdl_cfit_report_t *rep, err_t *e)
{
	size_t n = p->n_row + p->n_ar;
	double *err = malloc((2 * MDL_REG_N * n + 1) * sizeof *err);
	size_t cnt[2][MDL_REG_N] = {{0}};
	if (!err)
		return err_set(e, KS_ENOMEM, "out of memory");
	memset(rep, 0, sizeof *rep);
	for (size_t i = 0; i < n; i++) {
		int ar = i >= p->n_row;
		size_t j = ar ? i - p->n_row : i;
		double pred, meas;
		int reg;
		if (ar) {
			pred = mdl_prof_predict_ar(hw, cp, p->ar[j].workers, p->ar[j].bytes);
			meas = p->ar[j].ns;
			reg = MDL_REG_ALLREDUCE;
		} else {
			int rc = mdl_prof_predict_row(hw, cp, &p->row[j], &pred, e);
			if (rc) {
				free(err);
				return rc;
			}
			meas = p->row[j].gemm_ns + p->row[j].small_ns;
			reg = regime_of(p->row[j].tokens);
		}
		if (reg < 0)
			continue;
		double x = fabs(pred - meas) / meas;
		err[(0 * MDL_REG_N + reg) * n + cnt[0][reg]++] = x;
		if (mdl_prof_held_out(p, ar, j))
			err[(1 * MDL_REG_N + reg) * n + cnt[1][reg]++] = x;
	}
	for (int r = 0; r < MDL_REG_N; r++) {
		stat_of(err + (0 * MDL_REG_N + r) * n, cnt[0][r], &rep->fit[r]);
		stat_of(err + (1 * MDL_REG_N + r) * n, cnt[1][r], &rep->held_out[r]);
	}
	free(err);
	return 0;
}

/* ---- fit ---------------------------------------------------------------------------- */

/* Layer terms, each fitted as scale*exp(theta) so it stays positive. */
enum { F_MFU, F_HALF, F_MBU, F_KGEMM, F_KSMALL, F_ELT, F_Q, F_N };
static const double f_scale[F_N] = {0.6, 1e9, 0.8, 5000, 5000, 0.5, 4};

typedef struct {
	const mdl_prof_t *p;
	const mdl_hw_t *hw;
	const size_t *rows; /* indices fitted */
	double *weight;     /* per fitted row: each regime weighs the same */
	size_t n;
	mdl_compute_params_t base;
	uint32_t workers; /* all-reduce fit: the worker count */
	int failed;
	err_t *e;
} fit_ctx_t;

/* The fitted parameters are x's entries for the free terms (all, or all but
 * the small kernels' when no row measured them, which keep cp's values). */
static void layer_params(const gsl_vector *x, mdl_compute_params_t *cp)
{
	double v[F_N];
	int no_small = x->size < F_N;
	for (int i = 0, j = 0; i < F_N; i++) {
		if (no_small && (i == F_KSMALL || i == F_ELT))
			continue;
		v[i] = f_scale[i] * exp(gsl_vector_get(x, (size_t)j++));
	}
	if (no_small) {
		v[F_KSMALL] = cp->small_kernel_ns;
		v[F_ELT] = cp->elt_bw_eff;
	}
	cp->gemm_mfu = fmin(v[F_MFU], 1);
	cp->gemm_half_flops = v[F_HALF];
	cp->weight_mbu = fmin(v[F_MBU], 1);
	cp->gemm_kernel_ns = v[F_KGEMM];
	cp->small_kernel_ns = v[F_KSMALL];
	cp->elt_bw_eff = fmin(v[F_ELT], 1);
	cp->roofline_q = 1 + v[F_Q];
}

/* Two residuals per row, relative: the row's total and its small kernels. */
static int layer_f(const gsl_vector *x, void *data, gsl_vector *f)
{
	fit_ctx_t *c = data;
	static _Thread_local mdl_compute_t mc;
	mdl_compute_params_t cp = c->base;
	layer_params(x, &cp);
	cp.model = MDL_MODEL_ROOFLINE;
	for (size_t k = 0; k < c->n; k++) {
		const mdl_prof_row_t *r = &c->p->row[c->rows[k]];
		mdl_llm_t m;
		row_llm(r, &m);
		double g = 0, s = 0;
		if (mdl_compute_init(&mc, c->hw, &m, r->tp, &cp, c->e))
			c->failed = 1;
		else
			mdl_layer_terms(&mc, r->tokens, &g, &s);
		double w = c->weight[k];
		/* the row's total, as reported; the small kernels' own share
		 * (down-weighted) tells their constant from the GEMMs' */
		if (r->small_ns > 0) {
			gsl_vector_set(f, 2 * k, w * ((g + s) / (r->gemm_ns + r->small_ns) - 1));
			gsl_vector_set(f, 2 * k + 1, 0.3 * w * (s / r->small_ns - 1));
		} else { /* a GEMM-only profile */
			gsl_vector_set(f, 2 * k, w * (g / r->gemm_ns - 1));
			gsl_vector_set(f, 2 * k + 1, 0);
		}
	}
	return c->failed ? GSL_EDOM : GSL_SUCCESS;
}

static int ar_f(const gsl_vector *x, void *data, gsl_vector *f)
{
	fit_ctx_t *c = data;
	mdl_compute_params_t cp = c->base;
	cp.n_ar = 1;
	cp.ar[0] = (mdl_ar_point_t){c->workers, 1e4 * exp(gsl_vector_get(x, 0)),
	                            fmin(0.5 * exp(gsl_vector_get(x, 1)), 1)};
	for (size_t k = 0; k < c->n; k++) {
		const mdl_ar_row_t *a = &c->p->ar[c->rows[k]];
		double t = mdl_prof_predict_ar(c->hw, &cp, a->workers, a->bytes);
		gsl_vector_set(f, k, c->weight[k] * (t / a->ns - 1));
	}
	return GSL_SUCCESS;
}

/* Runs the trust-region solver from x (n params, nres residuals). */
static int solve(int (*fn)(const gsl_vector *, void *, gsl_vector *), fit_ctx_t *ctx,
                 gsl_vector *x, size_t nres, int *iters, err_t *e)
{
	gsl_multifit_nlinear_fdf fdf = {0};
	fdf.f = fn;
	fdf.n = nres;
	fdf.p = x->size;
	fdf.params = ctx;
	gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
	    gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, nres, x->size);
	if (!w)
		return err_set(e, KS_ENOMEM, "out of memory");
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	int info = 0;
	int st = gsl_multifit_nlinear_init(x, &fdf, w);
	if (!st)
		st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
	gsl_set_error_handler(old);
	if (st == GSL_EMAXITER)
		st = 0; /* the best point so far; the report shows the error */
	if (!st && !ctx->failed)
		gsl_vector_memcpy(x, gsl_multifit_nlinear_position(w));
	*iters += (int)gsl_multifit_nlinear_niter(w);
	gsl_multifit_nlinear_free(w);
	if (ctx->failed)
		return e->code ? e->code : err_set(e, KS_EINPUT, "fit: the model failed");
	if (st)
		return err_set(e, KS_EINPUT, "fit: %s", gsl_strerror(st));
	return 0;
}

/* Fits the layer terms to the operator rows (all, or those not held out)
 * for each GEMM tile, the lowest cost winning: out's layer terms and tile,
 * *nfit the rows used. rows is ctx's, writable. */
static int fit_layer(fit_ctx_t *ctx, size_t *rows, int holdout, const mdl_compute_params_t *cp,
                     mdl_compute_params_t *out, int *iters, size_t *nfit)
{
	const mdl_prof_t *p = ctx->p;
	double *weight = ctx->weight;
	err_t *e = ctx->e;
	int rc = 0;
	for (size_t i = 0; i < p->n_row; i++)
		if (!holdout || !mdl_prof_held_out(p, 0, i))
			rows[ctx->n++] = i;
	if (!ctx->n)
		return 0;
	/* rows per regime (the token counts between are one more group):
	 * a regime's residuals are scaled by 1/sqrt(its rows) so the many
	 * prefill rows do not outvote the few decode ones */
	size_t per[MDL_REG_N + 1] = {0};
	for (size_t k = 0; k < ctx->n; k++) {
		int r = regime_of(p->row[rows[k]].tokens);
		per[r < 0 ? MDL_REG_N : r]++;
	}
	for (size_t k = 0; k < ctx->n; k++) {
		int r = regime_of(p->row[rows[k]].tokens);
		weight[k] = 1 / sqrt((double)per[r < 0 ? MDL_REG_N : r]);
	}
	if (ctx->n * 2 < F_N)
		return err_set(e, KS_EINPUT, "fit: %zu operator rows: too few", ctx->n);
	/* the tile is discrete: each candidate is fitted, the lowest cost on
	 * the fitted rows wins (GEMM kernels tile M by 64..256 rows) */
	static const double tiles[] = {0, 32, 64, 96, 128, 192, 256};
	double best = INFINITY;
	int small = 0;
	for (size_t k = 0; k < ctx->n && !small; k++)
		small = p->row[rows[k]].small_ns > 0;
	gsl_vector *x = gsl_vector_alloc(small ? F_N : F_N - 2),
	           *res = gsl_vector_alloc(2 * ctx->n);
	for (size_t t = 0; t < sizeof tiles / sizeof tiles[0] && x && res && !rc; t++) {
		gsl_vector_set_zero(x);
		ctx->base.gemm_tile_tokens = tiles[t];
		rc = solve(layer_f, ctx, x, 2 * ctx->n, iters, e);
		double cost;
		if (rc || (rc = layer_f(x, ctx, res) ? KS_EINPUT : 0))
			break;
		gsl_blas_ddot(res, res, &cost);
		if (cost < best) {
			best = cost;
			layer_params(x, out);
			out->gemm_tile_tokens = tiles[t];
		}
	}
	if (!x || !res)
		rc = err_set(e, KS_ENOMEM, "out of memory");
	gsl_vector_free(x);
	gsl_vector_free(res);
	ctx->base = *cp;
	*nfit += ctx->n;
	return rc;
}

/* all-reduce: one (alpha, efficiency) per worker count, into out->ar */
static int fit_ar(fit_ctx_t *ctx, size_t *rows, int holdout, mdl_compute_params_t *out,
                  int *iters, size_t *nfit)
{
	const mdl_prof_t *p = ctx->p;
	double *weight = ctx->weight;
	err_t *e = ctx->e;
	int rc = 0;
	out->n_ar = 0;
	for (size_t i = 0; i < p->n_ar && !rc; i++) {
		uint32_t w = p->ar[i].workers;
		int seen = w < 2;
		for (size_t k = 0; k < out->n_ar && !seen; k++)
			seen = out->ar[k].tp == w;
		if (seen)
			continue;
		if (out->n_ar == MDL_AR_POINTS)
			return err_set(e, KS_EINPUT, "fit: more than %d worker counts", MDL_AR_POINTS);
		ctx->n = 0;
		ctx->workers = w;
		for (size_t j = 0; j < p->n_ar; j++)
			if (p->ar[j].workers == w && (!holdout || !mdl_prof_held_out(p, 1, j)))
				rows[ctx->n++] = j;
		if (ctx->n < 2)
			continue;
		/* sizes are spaced evenly, so most rows are large messages: weigh
		 * each octave of size the same, as decode's small messages matter
		 * as much as prefill's large ones */
		for (size_t k = 0; k < ctx->n; k++) {
			size_t same = 0;
			int oct = (int)floor(log2(p->ar[rows[k]].bytes));
			for (size_t j = 0; j < ctx->n; j++)
				same += (int)floor(log2(p->ar[rows[j]].bytes)) == oct;
			weight[k] = 1 / sqrt((double)same);
		}
		gsl_vector *x = gsl_vector_calloc(2);
		if (!x)
			return err_set(e, KS_ENOMEM, "out of memory");
		rc = solve(ar_f, ctx, x, ctx->n, iters, e);
		if (!rc)
			out->ar[out->n_ar++] = (mdl_ar_point_t){w, 1e4 * exp(gsl_vector_get(x, 0)),
			                                        fmin(0.5 * exp(gsl_vector_get(x, 1)), 1)};
		gsl_vector_free(x);
		*nfit += ctx->n;
	}
	return rc;
}

int mdl_prof_fit(const mdl_prof_t *p, const mdl_hw_t *hw, int holdout, mdl_compute_params_t *cp,
                 mdl_cfit_report_t *rep, err_t *e)
{
	size_t n = p->n_row > p->n_ar ? p->n_row : p->n_ar;
	size_t *rows = malloc((n + 1) * sizeof *rows);
	if (!rows)
		return err_set(e, KS_ENOMEM, "out of memory");
	mdl_compute_params_t out = *cp;
	int iters = 0;
	size_t nfit = 0;
	double *weight = malloc((n + 1) * sizeof *weight);
	fit_ctx_t ctx = {p, hw, rows, weight, 0, *cp, 0, 0, e};
	if (!weight) {
		free(rows);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	int rc = fit_layer(&ctx, rows, holdout, cp, &out, &iters, &nfit);
	if (!rc)
		rc = fit_ar(&ctx, rows, holdout, &out, &iters, &nfit);
	free(rows);
	free(weight);
	if (rc)
		return rc;
	if (!out.n_ar)
		out.n_ar = cp->n_ar, memcpy(out.ar, cp->ar, sizeof out.ar);
	rc = mdl_prof_check(p, hw, &out, rep, e);
	if (rc)
		return rc;
	rep->iterations = iters;
	rep->n_fit_rows = nfit;
	*cp = out;
	return 0;
}

/* ---- calibration files ---------------------------------------------------------------- */

/* A term: the [compute] config key (default -1: from compute.calibration)
 * and the calibration file's key, [0, hi] ((0, 1] for a fraction). */
#define TERM(key, hi, unit, doc, member, frac)                                                     \
	{{{"compute", key, CFG_FLOAT, "-1", -1, hi, NULL, unit,                                    \
	   doc " (-1: from compute.calibration)", NULL},                                           \
	  CFG_AT(DOUBLE, mdl_compute_params_t, member)},                                           \
	 {{{"compute", key, CFG_FLOAT, "0", 0, hi, NULL, unit, doc, NULL},                         \
	   CFG_AT(DOUBLE, mdl_compute_params_t, member)},                                          \
	  (frac) ? INI_ABOVE_MIN : 0,                                                              \
	  0,                                                                                       \
	  NULL}}
/* In the order config listings show them (after the other [compute] keys). */
const mdl_term_key_t mdl_term_keys[] = {
    TERM("gemm_mfu", 1, "", "peak MFU of large weight GEMMs (Vidur H100/A100 profile fit)",
         gemm_mfu, 1),
    TERM("gemm_half_flops", 1e30, "FLOP",
         "FLOPs of one GEMM on one GPU at which its MFU is half of gemm_mfu (0: flat)",
         gemm_half_flops, 0),
    TERM("weight_mbu", 1, "", "weight-read bandwidth / peak HBM bandwidth (profile fit)",
         weight_mbu, 1),
    TERM("gemm_kernel_ns", 1e9, "ns", "fixed cost per GEMM kernel (profile fit)", gemm_kernel_ns,
         0),
    TERM("small_kernel_ns", 1e9, "ns",
         "fixed cost per norm, rope, activation or add kernel, 5 per layer (profile fit)",
         small_kernel_ns, 0),
    TERM("elt_bw_eff", 1, "",
         "bandwidth of those small kernels / peak HBM bandwidth (profile fit; 0: no term)",
         elt_bw_eff, 1),
    TERM("gemm_tile_tokens", 1e6, "tokens",
         "GEMM compute pays for tokens rounded up to this tile (profile fit, 0: none)",
         gemm_tile_tokens, 0),
    TERM("roofline_q", 1e3, "",
         "compute and memory sides combined as a q-norm (profile fit; 0: max)", roofline_q, 0),
    TERM("attn_prefill_eff", 1, "",
         "prefill attention FLOP/s / peak (default 0.37: FlashAttention-2 on H100, FA3 paper)",
         attn_prefill_eff, 1),
    TERM("attn_decode_eff", 1, "",
         "decode attention KV-read bandwidth / peak HBM bandwidth (default 0.75: own choice)",
         attn_decode_eff, 1),
};
#undef TERM
const size_t mdl_term_keys_n = sizeof mdl_term_keys / sizeof mdl_term_keys[0];

/* The calibration file's keys beside the terms: [compute] iter_overhead_ns
 * (the [compute] config key's range) and the per-TP all-reduce fit. */
static const ini_key_t calib_keys[] = {
    {{{"compute", "iter_overhead_ns", CFG_INT, "0", 0, 1e12, NULL, "ns",
       "scheduler/launch overhead per iteration", NULL},
      CFG_AT(I64, mdl_compute_params_t, iter_overhead_ns)},
     INI_WHOLE_E,
     0,
     NULL},
    {{{"allreduce.tpN", "lat_ns", CFG_FLOAT, "0", 0, 1e12, NULL, "ns",
       "alpha: fixed cost of one all-reduce at TP N", NULL},
      CFG_AT(DOUBLE, mdl_ar_point_t, lat_ns)},
     0,
     0,
     NULL},
    {{{"allreduce.tpN", "bw_eff", CFG_FLOAT, "1", 0, 1, NULL, "",
       "achieved ring bus bandwidth / link bandwidth at TP N", NULL},
      CFG_AT(DOUBLE, mdl_ar_point_t, bw_eff)},
     INI_ABOVE_MIN,
     0,
     NULL},
};

/* [allreduce.tpN]: N a TP degree in [2, 65536], digits only (a number
 * past 32 bits must not wrap to a small one). */
static int tp_param(const char *arg, char *why, size_t n)
{
	size_t digits = strspn(arg, "0123456789");
	if (!digits || arg[digits]) {
		snprintf(why, n, "expected allreduce.tpN, N a TP degree");
		return -1;
	}
	unsigned long long v = digits < 8 ? strtoull(arg, NULL, 10) : 0;
	if (v < 2 || v > 65536) {
		snprintf(why, n, "tp %s is out of range [2, 65536]", arg);
		return -1;
	}
	return (int)v;
}

/* The all-reduce point of TP tp, added at its section's first key. */
static void *tp_instance(void *dst, int tp, char *why, size_t n)
{
	mdl_compute_params_t *p = dst;
	size_t i = 0;
	while (i < p->n_ar && p->ar[i].tp != (uint32_t)tp)
		i++;
	if (i == MDL_AR_POINTS) {
		snprintf(why, n, "more than %d [allreduce.tpN] sections", MDL_AR_POINTS);
		return NULL;
	}
	if (i == p->n_ar)
		p->ar[p->n_ar++] = (mdl_ar_point_t){(uint32_t)tp, 0, 1};
	return &p->ar[i];
}

static const ini_section_t calib_sections[] = {
    {"compute", 0, 0, NULL, NULL},
    {"allreduce.tpN", 12, 0, tp_param, tp_instance},
};
static const ini_rows_t calib_rows[] = {
    {&mdl_term_keys[0].file, sizeof mdl_term_keys / sizeof mdl_term_keys[0],
     sizeof mdl_term_keys[0]},
    {calib_keys, sizeof calib_keys / sizeof calib_keys[0], 0},
};
static const ini_table_t calib_table = {calib_sections, 2, calib_rows, 2, NULL};

int mdl_calib_parse(const char *origin, const char *text, mdl_compute_params_t *cp, err_t *e)
{
	mdl_compute_params_t tmp = *cp; /* never half-load */
	tmp.n_ar = 0;
	int rc = ini_read(&calib_table, origin, text, &tmp, e);
	if (rc)
		return rc;
	if (!tmp.n_ar) /* no all-reduce sections: keep what cp had */
		tmp.n_ar = cp->n_ar;
	snprintf(tmp.calibration, sizeof tmp.calibration, "%s", origin);
	*cp = tmp;
	return 0;
}

static int calib_parse(void *cp, const char *origin, const char *text, err_t *e)
{
	return mdl_calib_parse(origin, text, cp, e);
}

int mdl_calib_load(const char *path, mdl_compute_params_t *cp, err_t *e)
{
	return ini_file_parse(path, calib_parse, cp, e);
}

int mdl_calib_builtin(const char *gpu, mdl_compute_params_t *cp, err_t *e)
{
	char name[MDL_NAME_MAX + 16];
	const char *path;
	snprintf(name, sizeof name, "compute-%s", gpu);
	const char *text = mdl_builtin_text("calibration", name, &path);
	if (!text)
		return 1;
	char origin[MDL_PATH_MAX];
	snprintf(origin, sizeof origin, "models/%s (built in)", path);
	return mdl_calib_parse(origin, text, cp, e);
}

int mdl_calib_write(FILE *f, const mdl_compute_params_t *cp, const char *comment)
{
	for (const char *s = comment; s && *s;) {
		const char *nl = strchr(s, '\n');
		int len = nl ? (int)(nl - s) : (int)strlen(s);
		fprintf(f, "# %.*s\n", len, s);
		s += len + (nl != NULL);
	}
	fprintf(f,
	        "[compute]\n"
	        "gemm_mfu = %.4f          ; peak MFU of large GEMMs\n"
	        "gemm_half_flops = %.4g   ; FLOPs of one GEMM at half that MFU\n"
	        "weight_mbu = %.4f        ; weight-read bandwidth / peak HBM\n"
	        "gemm_kernel_ns = %.0f        ; fixed cost per GEMM kernel\n"
	        "small_kernel_ns = %.0f       ; fixed cost per norm/rope/act/add kernel\n"
	        "elt_bw_eff = %.4f        ; those kernels' bandwidth / peak HBM\n"
	        "gemm_tile_tokens = %.0f    ; GEMM compute rounds tokens up to this tile\n"
	        "roofline_q = %.4f        ; compute and memory sides as a q-norm\n"
	        "attn_prefill_eff = %.4f  ; not fitted (no attention table)\n"
	        "attn_decode_eff = %.4f   ; not fitted (no attention table)\n",
	        cp->gemm_mfu, cp->gemm_half_flops, cp->weight_mbu, cp->gemm_kernel_ns,
	        cp->small_kernel_ns, cp->elt_bw_eff, cp->gemm_tile_tokens, cp->roofline_q,
	        cp->attn_prefill_eff, cp->attn_decode_eff);
	for (size_t i = 0; i < cp->n_ar; i++)
		fprintf(f, "\n[allreduce.tp%u]\nlat_ns = %.0f\nbw_eff = %.4f\n", cp->ar[i].tp,
		        cp->ar[i].lat_ns, cp->ar[i].bw_eff);
	return ferror(f) ? KS_EIO : 0;
}

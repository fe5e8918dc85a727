/* gv_fit — fits the transfer model (models/mdl_xfer.h) to measured copies.
 *
 * For each link kind with measurements, GSL nonlinear least squares
 * (gsl_multifit_nlinear, trust region with Levenberg-Marquardt steps) over
 * the relative residuals (predicted - measured) / measured, i.e. weighted for
 * relative error, fits per size piece alpha and 1/beta, and, where the data
 * exercise them, the per-copy overhead (granular, batch) and the sharing
 * factors (same / opposite direction). With holdout the copies, sorted by
 * (shape, concurrency, size), are split alternately: even ones fit, odd ones
 * are the held-out half on which MAPE and p95 relative error are reported.
 * Compute rows (if any) give MFU = median achieved/peak FLOP/s over GEMMs with
 * m >= 256 tokens (all GEMMs when none) and MBU = best read bandwidth / peak.
 * A link whose fit fails (too few copies, solver failure, non-physical
 * result) keeps its starting values and reports why in its gv_fit_link_t;
 * gv_fit fails (KS_EINPUT / KS_ERUNTIME, the first reason) only when no link
 * could be fitted.
 */
#ifndef KVSIM_GV_FIT_H
#define KVSIM_GV_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_validation/gv_meas.h"
#include "models/mdl_xfer.h"
#include "sim/base/err.h"

typedef struct gv_err_summary {
	size_t n;
	double mape;          /* mean |rel err|, percent */
	double p50, p95, max; /* |rel err| percentiles, percent */
} gv_err_summary_t;

typedef struct gv_fit_opts {
	uint64_t edges[MDL_XFER_MAX_PIECES - 1]; /* piece boundaries, bytes per copy */
	int n_edges;
	int holdout; /* 1: fit on half, test on the other half; 0: fit on all */
} gv_fit_opts_t;

typedef struct gv_fit_link {
	size_t n_fit, n_test;
	int n_pieces;
	int fit_overhead, fit_batch, fit_share_same, fit_share_opp;
	int iterations;
	int status;      /* 0 fitted; else the KS_* code, link left as it was */
	char error[256]; /* why, when status != 0 */
	gv_err_summary_t train, test;
} gv_fit_link_t;

typedef struct gv_fit_report {
	gv_fit_link_t link[MDL_LINK_N];
	gv_err_summary_t test; /* all links together */
	size_t n_gemm, n_read;
} gv_fit_report_t;

void gv_fit_defaults(gv_fit_opts_t *o);
/* x: starting values and output (links without data keep their values). */
int gv_fit(const gv_meas_t *m, const gv_fit_opts_t *o, mdl_xfer_t *x, gv_fit_report_t *rep,
           err_t *e);
/* The model's time for one measured copy. */
double gv_fit_predict(const mdl_xfer_t *x, const gv_copy_t *c);
/* Summary of |relative errors| (fractions in, percent out); rel is sorted. */
void gv_err_summarize(double *rel, size_t n, gv_err_summary_t *s);

#endif

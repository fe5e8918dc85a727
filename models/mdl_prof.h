/* mdl_prof — measured per-operator GPU profiles: reading them, the PROFILE
 * cost model's interpolation, and fitting and checking the roofline terms
 * against them (`kvsim calibrate compute`).
 *
 * Format (Vidur's profiling CSVs, MLSys'24, read by header name so column
 * order is free):
 *   operators  one row per layer shape and (num_tensor_parallel_workers,
 *              num_tokens): time_stats.<op>.median in ms for one layer's
 *              input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
 *              post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj,
 *              add; shape columns n_head, n_kv_head, n_embd, n_expanded_embd,
 *              use_gated_mlp. No attention kernel. The five small operators
 *              may be absent together (a GEMM-only profile, as the GPU
 *              harness writes).
 *   all-reduce time_stats.all_reduce.median (ms), num_workers, size (bytes).
 * A file is one or the other, told apart by its header.
 *
 * Reading and interpolation live in mdl_prof.c (the PROFILE model uses
 * them); prediction, fit, check and calibration files in mdl_cfit.c.
 * Units here: ns and bytes. A mdl_prof_t owns its rows (mdl_prof_free).
 * Errors: 0 or KS_E* with "PATH:LINE: column: reason" in err_t.
 */
#ifndef KVSIM_MDL_PROF_H
#define KVSIM_MDL_PROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/mdl.h"
#include "sim/base/ini_typed.h"

typedef struct mdl_prof_row {
	uint32_t tp, tokens;
	uint32_t n_head, n_kv_head, n_embd, n_expanded_embd;
	double gemm_ns;  /* qkv + o + up + down projections */
	double small_ns; /* 2 norms, rope, activation, add; 0: not measured (a
	                  * file without those columns), compared without them */
} mdl_prof_row_t;

typedef struct mdl_ar_row {
	uint32_t workers;
	double bytes, ns;
} mdl_ar_row_t;

typedef struct mdl_prof {
	mdl_prof_row_t *row;
	size_t n_row;
	mdl_ar_row_t *ar;
	size_t n_ar;
} mdl_prof_t;

/* Appends the rows of one CSV file (either kind) to p; all or nothing. */
int mdl_prof_read(mdl_prof_t *p, const char *path, err_t *e);
int mdl_prof_read_string(mdl_prof_t *p, const char *origin, const char *text, err_t *e);
void mdl_prof_free(mdl_prof_t *p);
/* Writes rows as an operator CSV that mdl_prof_read reads back (the GEMM
 * time is put in the four projections in proportion to their weights, the
 * small-kernel time in the five small operators equally; no small-operator
 * columns unless every row has small_ns > 0). */
int mdl_prof_write_rows(FILE *f, const mdl_prof_row_t *rows, size_t n);

/* A whole-string finite number (strtod): 0, or nonzero when it is none. */
int mdl_prof_number(const char *s, double *v);

/* Interpolates a curve log-linearly: linear in ln(x) between points; below
 * the first point its y; above the last, y scaled in proportion to x (both
 * tables end in the bandwidth- or compute-bound regime). */
double mdl_curve_at(const mdl_curve_t *c, double x);
/* The all-reduce rows of `workers` as a curve (repeated sizes averaged);
 * -1 when there are more than MDL_PROF_POINTS sizes. */
int mdl_prof_ar_curve(const mdl_prof_t *p, uint32_t workers, mdl_curve_t *c);
/* MDL_MODEL_PROFILE: fills c->layer from c->p.profile (rows at c->tp and the
 * model's layer shape; tokens measured twice are averaged) and c->arc from
 * c->p.ar_profile (rows with num_workers = tp), "" = roofline all-reduce. */
int mdl_prof_curves(mdl_compute_t *c, err_t *e);

/* One layer's non-attention time, split (mdl_cost.c's separated terms;
 * the single-efficiency roofline when gemm_mfu = 0). */
void mdl_layer_terms(const mdl_compute_t *c, double tokens, double *gemm_ns, double *small_ns);

/* ---- fit and check ---------------------------------------------------------
 * Regimes by tokens per iteration: decode <= 8, decode 32..256, prefill
 * > 256; all-reduce rows their own. Held-out half: every other distinct
 * token count (sizes for all-reduce) in ascending order, starting with the
 * second, per TP; the fit uses the rest. */
enum { MDL_REG_PREFILL, MDL_REG_DEC_SMALL, MDL_REG_DEC_LARGE, MDL_REG_ALLREDUCE, MDL_REG_N };
const char *mdl_regime_name(int r);

typedef struct mdl_err_stat {
	size_t n;
	double mape, p95; /* percent */
} mdl_err_stat_t;

typedef struct mdl_cfit_report {
	mdl_err_stat_t fit[MDL_REG_N];      /* on the rows fitted */
	mdl_err_stat_t held_out[MDL_REG_N]; /* on the held-out rows */
	int iterations;
	size_t n_fit_rows;
} mdl_cfit_report_t;

/* Row i is held out (the split above). */
int mdl_prof_held_out(const mdl_prof_t *p, int allreduce, size_t i);
/* Fits gemm_mfu, gemm_half_flops, weight_mbu, gemm_kernel_ns,
 * small_kernel_ns and elt_bw_eff to the operator rows, and the all-reduce
 * alpha and efficiency per worker count to the all-reduce rows, by GSL
 * nonlinear least squares (gsl_multifit_nlinear, trust region) on relative
 * error, using only the fit half (all rows when holdout = 0). Other fields
 * of *cp are kept; rep gets errors on both halves. */
int mdl_prof_fit(const mdl_prof_t *p, const mdl_hw_t *hw, int holdout, mdl_compute_params_t *cp,
                 mdl_cfit_report_t *rep, err_t *e);
/* Errors of cp's model on every row (rep->fit: all rows; rep->held_out: the
 * held-out half). */
int mdl_prof_check(const mdl_prof_t *p, const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                   mdl_cfit_report_t *rep, err_t *e);
/* Predicted non-attention time of one operator row (ns) and of one
 * all-reduce (ns, tp = workers) under cp. */
int mdl_prof_predict_row(const mdl_hw_t *hw, const mdl_compute_params_t *cp,
                         const mdl_prof_row_t *r, double *ns, err_t *e);
double mdl_prof_predict_ar(const mdl_hw_t *hw, const mdl_compute_params_t *cp, uint32_t workers,
                           double bytes);

/* ---- calibration files -------------------------------------------------------
 * INI, `#` comment lines first (source, shapes, errors); [compute] with the
 * six terms above plus optional attn_prefill_eff, attn_decode_eff and
 * iter_overhead_ns; [allreduce.tpN] with lat_ns and bw_eff per TP. Read by
 * the typed INI reader (sim/base/ini_typed.h): errors are KS_EINPUT
 * "FILE:LINE: [section] key: reason". */
/* The terms a calibration file and [compute] name alike, declared once: the
 * [compute] key (default -1: from compute.calibration) and the calibration
 * file's key (at least 0; a fraction in (0, 1]), both filling the same
 * double member of mdl_compute_params_t. */
typedef struct mdl_term_key {
	cfg_tkey_t cfg;
	ini_key_t file;
} mdl_term_key_t;
extern const mdl_term_key_t mdl_term_keys[];
extern const size_t mdl_term_keys_n;

int mdl_calib_parse(const char *origin, const char *text, mdl_compute_params_t *cp, err_t *e);
int mdl_calib_load(const char *path, mdl_compute_params_t *cp, err_t *e);
/* The embedded calibration of a built-in GPU (models/calibration/
 * compute-NAME.ini): 0 and cp filled, 1 when there is none. */
int mdl_calib_builtin(const char *gpu, mdl_compute_params_t *cp, err_t *e);
int mdl_calib_write(FILE *f, const mdl_compute_params_t *cp, const char *comment);

#endif

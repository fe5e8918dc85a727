/* mdl_decode_run — the cost of a run of decode steps of one batch at once
 * (mdl_decode_run_ns and its kin, mdl.h): the separated terms fixed by the
 * batch size are computed once, and the roofline's q-norm is interpolated
 * over pieces of the run with a certified 1 ns bound (the argument is at
 * run_piece), else every step is costed exactly by mdl_cost.c's steps.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_int.h"

/* A run of decode steps of one batch (mdl_decode_run_ns): step j has the
 * sums of n_seqs sequences whose contexts sum to ctx_sum + j*n_seqs and,
 * in a sliding layer, read sw + j*sw_grow tokens (a piece of the run where
 * no sequence reaches its window: affine in j like the rest). */
typedef struct {
	const mdl_compute_t *c;
	uint32_t n_seqs;
	uint64_t ctx_sum;
	uint64_t sw, sw_grow; /* sliding reads at step 0, sequences still growing */
	int split;            /* the separated terms (cost_terms), base below valid */
	mdl_iter_cost_t base; /* terms_by_size of the batch */
	double f, wb;
} run_t;

static void run_init(run_t *R, const mdl_compute_t *c, uint32_t n_seqs, uint64_t ctx_sum,
                     uint64_t sw, uint64_t sw_grow)
{
	memset(R, 0, sizeof *R);
	R->c = c;
	R->n_seqs = n_seqs;
	R->ctx_sum = ctx_sum;
	R->sw = sw;
	R->sw_grow = sw_grow;
	R->split = n_seqs && c->p.model != MDL_MODEL_LINEAR &&
	           (c->p.gemm_mfu > 0 || c->p.model == MDL_MODEL_PROFILE);
	if (R->split)
		mdl_cost_size_terms(c, n_seqs, n_seqs, &R->base, &R->f, &R->wb);
}

/* Step j's sums: those mdl_iter_cost adds up, exact in double below 2^53
 * tokens. */
static mdl_sums_t run_sums(const run_t *R, uint32_t j)
{
	double n = R->n_seqs, ctx = (double)(R->ctx_sum + (uint64_t)j * R->n_seqs);
	double sw = (double)(R->sw + (uint64_t)j * R->sw_grow);
	return (mdl_sums_t){.tokens = n,
	                    .seqs = n,
	                    .dec_seqs = n,
	                    .pairs_dec = ctx + n,
	                    .kv_read = ctx,
	                    .dec_ctx = ctx,
	                    .pairs_sw = R->c->layers_sw ? sw + n : 0,
	                    .kv_read_sw = sw,
	                    .dec_ctx_sw = sw};
}

/* Step j exactly: mdl_iter_cost's value, bit for bit. */
static int64_t run_exact(const run_t *R, uint32_t j)
{
	mdl_sums_t s = run_sums(R, j);
	if (!R->split)
		return mdl_cost_from_sums(R->c, &s, NULL);
	mdl_iter_cost_t r = R->base;
	return mdl_cost_terms_finish(R->c, &s, &r, R->f, R->wb);
}

/* Step j's terms without the roofline (R->split): r gets the two sides. */
static void run_sides(const run_t *R, uint32_t j, mdl_iter_cost_t *r)
{
	mdl_sums_t s = run_sums(R, j);
	*r = R->base;
	mdl_cost_terms_sides(R->c, &s, r, R->f, R->wb);
}

static uint32_t run_exact_all(const run_t *R, uint32_t steps, int64_t *out)
{
	for (uint32_t j = 0; j < steps; j++)
		out[j] = run_exact(R, j);
	return steps;
}

/* Bound on the q-norm's error budget per step: the interpolated time stays
 * within this of the exact one before rounding up, so the two round to
 * integers at most 1 ns apart, and to the same one unless the exact time
 * lies within this of an integer (at most that fraction of steps; fewer
 * flips keep segment runs from drifting off step runs). Own choice: at
 * 2^-12 ns the Mooncake run needs ~3 exact q-norms per segment. */
#define RUN_TOL_NS (1.0 / 4096)

/* phi(t) = (1 + t^q)^(1/q), the q-norm of (1, t): for sides x > 0, y > 0,
 * roof(x, y) = x * phi(y / x) whichever side is larger (phi(t) = t phi(1/t)).
 * With u = t^q and w = u/(1+u) (so w' = q w (1-w)/t), differentiating
 * ln phi = ln(1+u)/q gives
 *   phi'   = phi w / t
 *   phi''  = (q-1) phi w (1-w) / t^2
 *   phi''' = (q-1) phi w (1-w) (q(1-2w) + w - 2) / t^3.
 * *p3 gets a bound on |phi'''| over [lo, hi] (0 < lo <= hi): phi is
 * increasing, so phi <= phi(hi); the factor (q-2) + w(1-2q) is affine in w
 * and w is increasing in t, so its largest magnitude is at an end; and
 * w(1-w)/t^3 = t^(q-3)/(1+t^q)^2 <= max(lo^(q-3), hi^(q-3))/(1+lo^q)^2
 * (t^(q-3) is monotone). The bound is inflated by 1e-9 relative for the
 * rounding of its own pow() calls (glibc's pow is correctly rounded to
 * within 1 ulp). */
static double phi3_bound(double q, double lo, double hi)
{
	double ul = pow(lo, q), uh = pow(hi, q);
	double phi = pow(1 + uh, 1 / q);
	double wl = ul / (1 + ul), wh = uh / (1 + uh);
	double aff = fmax(fabs(q - 2 + wl * (1 - 2 * q)), fabs(q - 2 + wh * (1 - 2 * q)));
	double num = fmax(ul / (lo * lo * lo), uh / (hi * hi * hi));
	return (q - 1) * phi * aff * num / ((1 + ul) * (1 + ul)) * (1 + 1e-9);
}

/* The two roofline sides along a run: x(j) = x0 + j sx is the larger side
 * (t = y/x stays near or below 1), y(j) = y0 + j sy the other; k holds the
 * terms added after the roofline (mdl_cost_terms_time). */
typedef struct {
	double x0, sx, y0, sy;
	const mdl_iter_cost_t *k;
} line_t;

/* Fills out[a..b] (b > a) from one q-norm evaluation at the middle of the
 * piece's ratio range, when its bound allows; 0 done, -1 not (the caller
 * evaluates the piece exactly).
 *
 * Why the result is within 1 ns of the exact step. The real sides are
 * affine in j (attention pairs and KV tokens grow by n_seqs a step, the
 * rest is fixed by the batch size), and L is the line through the exact
 * step's sides at both ends of the run, so L's sides differ from the exact
 * step's doubles by rounding only; the q-norm is 1-Lipschitz in the l1
 * norm, so that moves the roofline by a few ulps of the sides. Here the
 * roofline is x * P(t), t = y/x and P the Taylor polynomial of phi of
 * degree 2 at tc, whose remainder is |phi'''(xi)| |t - tc|^3 / 6 with xi
 * between tc and t (Taylor, Lagrange form). t(j) is a ratio of two affine
 * functions of j with x > 0, so monotone in j: over the piece it stays
 * between t(a) and t(b), |t - tc| <= d, and xi lies in the run's ratio
 * range, where p3 bounds |phi'''|. So x*P(t) is within xmax p3 d^3 / 6 <=
 * tol of x*phi(t) = roof(x, y) in real arithmetic. Rounding in both
 * evaluations adds at most margin (mdl_decode_run_ns). The two pre-rounding
 * times then differ by less than 1, so their ceilings (and
 * mdl_cost_total_ns's clamp at 1, monotone) differ by at most 1 ns. */
static int run_piece(const line_t *L, double q, uint32_t a, uint32_t b, double p3, double tol,
                     int64_t *out)
{
	double xa = L->x0 + a * L->sx, xb = L->x0 + b * L->sx;
	double ta = (L->y0 + a * L->sy) / xa, tb = (L->y0 + b * L->sy) / xb;
	double tc = (ta + tb) / 2;
	/* the half width, and some ulps for the rounding of t and tc */
	double d = fabs(tb - ta) / 2 + 8 * DBL_EPSILON * fmax(ta, tb);
	if (fmax(xa, xb) * p3 * d * d * d / 6 > tol)
		return -1;
	double u = pow(tc, q);
	double phi = pow(1 + u, 1 / q), w = u / (1 + u);
	double d1 = phi * w / tc, d2 = (q - 1) * phi * w * (1 - w) / (tc * tc) / 2;
	for (uint32_t j = a; j <= b; j++) {
		double x = L->x0 + j * L->sx;
		double e = (L->y0 + j * L->sy) / x - tc;
		out[j - a] =
		    mdl_cost_total_ns(mdl_cost_terms_time(L->k, x * (phi + e * (d1 + e * d2))));
	}
	return 0;
}

/* The closed form over a run whose sides are affine in j (R). */
static uint32_t run_affine(const run_t *R0, uint32_t steps, int64_t *out)
{
	const run_t R = *R0;
	const mdl_compute_t *c = R.c;
	double q = c->p.roofline_q;
	/* Exact steps where they cost no pow(): max() (q = 0), the linear and
	 * single-efficiency models (whose sides are the exact arithmetic
	 * already); and for runs too short to save anything. */
	if (!R.split || q <= 0 || steps < 8)
		return run_exact_all(&R, steps, out);
	/* The sides grow with j (attention FLOPs and KV bytes grow with the
	 * contexts), so their extremes are at the ends. */
	mdl_iter_cost_t r0, r1;
	run_sides(&R, 0, &r0);
	run_sides(&R, steps - 1, &r1);
	double c0 = r0.t_compute_ns, m0 = r0.t_memory_ns, c1 = r1.t_compute_ns, m1 = r1.t_memory_ns;
	/* Rounding: each evaluation of the time is within a few ulps of its
	 * real value (sums and products of positive terms; pow within 1 ulp;
	 * the line's sides within a few ulps of the exact ones); 64 ulps of the
	 * largest time is a generous margin for both. */
	double tmax = mdl_cost_terms_time(&r1, 2 * fmax(c1, m1));
	double margin = 64 * DBL_EPSILON * tmax;
	if (!(c0 > 0 && m0 > 0 && c1 >= c0 && m1 >= m0) || RUN_TOL_NS + margin >= 0.5)
		return run_exact_all(&R, steps, out);
	/* the larger side as x: t stays near or below 1 */
	int x_is_c = c0 + c1 >= m0 + m1;
	double sc = (c1 - c0) / (steps - 1), sm = (m1 - m0) / (steps - 1);
	line_t L = x_is_c ? (line_t){c0, sc, m0, sm, &r0} : (line_t){m0, sm, c0, sc, &r0};
	double t0 = L.y0 / L.x0, t1 = (L.y0 + (steps - 1) * L.sy) / (L.x0 + (steps - 1) * L.sx);
	double lo = fmin(t0, t1), hi = fmax(t0, t1);
	double p3 = phi3_bound(q, lo * (1 - 1e-12), hi * (1 + 1e-12));
	/* pieces from the whole run's bound, which shrinks as the cube of the
	 * piece's ratio range */
	double whole = (x_is_c ? c1 : m1) * p3 * pow((hi - lo) / 2, 3) / 6;
	double want = whole > RUN_TOL_NS ? ceil(1.25 * cbrt(whole / RUN_TOL_NS)) : 1;
	if (!(want * 3 < steps)) /* each piece costs two pow(), each step as much */
		return run_exact_all(&R, steps, out);
	uint32_t pieces = (uint32_t)want, evals = 1; /* phi3_bound's */
	for (uint32_t k = 0; k < pieces; k++) {
		uint32_t a = (uint32_t)((uint64_t)steps * k / pieces);
		uint32_t b = (uint32_t)((uint64_t)steps * (k + 1) / pieces) - 1;
		if (b > a && !run_piece(&L, q, a, b, p3, RUN_TOL_NS, out + a)) {
			evals++;
			continue;
		}
		for (uint32_t j = a; j <= b; j++)
			out[j] = run_exact(&R, j);
		evals += b - a + 1;
	}
	return evals;
}

/* Context of sequence i: ctx[i], or without ctx the even split of the sum
 * (the first r sequences q + 1, the rest q). */
static uint64_t seq_ctx(const uint32_t *ctx, uint64_t q, uint32_t r, uint32_t i)
{
	return ctx ? ctx[i] : q + (i < r);
}

/* A run cut where the sliding reads stop being affine in the step. A
 * sequence of context x reads min(x + j, W - 1) at step j: it grows until
 * step W - 1 - x and stays after, so the sum over sequences is affine
 * between consecutive such steps; each piece [a, e] ends at the first
 * growing sequence's stop (inclusive) and runs through run_affine (or every
 * step exactly). O(n_seqs) per piece, at most one piece per sequence that
 * reaches its window inside the run, plus one. */
static uint32_t run_pieces(const mdl_compute_t *c, uint32_t n, const uint32_t *ctx,
                           uint64_t ctx_sum, uint32_t steps, int64_t *out, int exact)
{
	uint64_t q = n ? ctx_sum / n : 0;
	uint32_t r = n ? (uint32_t)(ctx_sum % n) : 0;
	uint64_t wm = c->llm.window - 1; /* cached tokens a sliding layer reads at most */
	uint32_t evals = 0;
	for (uint32_t a = 0; a < steps;) {
		uint64_t sw = 0, grow = 0, stop = UINT64_MAX;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t x = seq_ctx(ctx, q, r, i) + a;
			if (x < wm) {
				grow++;
				stop = wm - x < stop ? wm - x : stop; /* steps after a it grows */
			}
			sw += x < wm ? x : wm;
		}
		uint32_t len = stop < (uint64_t)(steps - a) ? (uint32_t)stop + 1 : steps - a;
		run_t R;
		run_init(&R, c, n, ctx_sum + (uint64_t)a * n, sw, grow);
		evals += exact ? run_exact_all(&R, len, out + a) : run_affine(&R, len, out + a);
		a += len;
	}
	return evals;
}

static uint32_t run_any(const mdl_compute_t *c, uint32_t n, const uint32_t *ctx,
                        uint64_t ctx_sum, uint32_t steps, int64_t *out, int exact)
{
	if (c->layers_sw)
		return run_pieces(c, n, ctx, ctx_sum, steps, out, exact);
	run_t R;
	run_init(&R, c, n, ctx_sum, 0, 0);
	return exact ? run_exact_all(&R, steps, out) : run_affine(&R, steps, out);
}

uint32_t mdl_decode_run_ns(const mdl_compute_t *c, uint32_t n_seqs, uint64_t ctx_sum,
                           uint32_t steps, int64_t *out)
{
	return run_any(c, n_seqs, NULL, ctx_sum, steps, out, 0);
}

uint32_t mdl_decode_run_exact_ns(const mdl_compute_t *c, uint32_t n_seqs, uint64_t ctx_sum,
                                 uint32_t steps, int64_t *out)
{
	return run_any(c, n_seqs, NULL, ctx_sum, steps, out, 1);
}

static uint64_t ctx_total(uint32_t n, const uint32_t *ctx)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += ctx[i];
	return sum;
}

uint32_t mdl_decode_run_seqs_ns(const mdl_compute_t *c, uint32_t n_seqs, const uint32_t *ctx,
                                uint32_t steps, int64_t *out)
{
	return run_any(c, n_seqs, ctx, ctx_total(n_seqs, ctx), steps, out, 0);
}

uint32_t mdl_decode_run_seqs_exact_ns(const mdl_compute_t *c, uint32_t n_seqs,
                                      const uint32_t *ctx, uint32_t steps, int64_t *out)
{
	return run_any(c, n_seqs, ctx, ctx_total(n_seqs, ctx), steps, out, 1);
}

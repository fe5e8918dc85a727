/* mdl_cost_blame — which [gpu] or [compute] figure makes an iteration's
 * cost absurd (mdl_cost_blame), and the check that refuses a model whose
 * one-token iteration outlasts the simulated time (mdl.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "models/mdl.h"

/* The cost of b as a double (mdl_cost_total_ns saturates): the largest of
 * its terms when one is not finite. */
static double cost_exact_ns(const mdl_compute_t *c, const mdl_batch_t *b, mdl_iter_cost_t *r)
{
	mdl_iter_cost_t x;
	int64_t t = mdl_iter_cost(c, b, &x);
	if (r)
		*r = x;
	if (t < INT64_MAX)
		return (double)t;
	const double terms[] = {x.t_compute_ns, x.t_memory_ns, x.t_comm_ns, x.t_overhead_ns,
	                        x.t_gemm_ns,    x.t_attn_ns,   x.t_weight_ns, x.t_kv_ns,
	                        x.t_fixed_ns};
	double m = 9.2e18;
	for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
		if (!(terms[i] <= m)) /* NaN counts as infinite */
			m = isnan(terms[i]) ? INFINITY : terms[i];
	return m;
}

double mdl_cost_blame(const mdl_compute_t *c, const mdl_batch_t *b, double limit_ns, char *why,
                      size_t n)
{
	mdl_iter_cost_t r;
	double t = cost_exact_ns(c, b, &r);
	/* section, key, where it is (0: hw, 1: params), offset, kind (0 rate:
	 * 1e18; 1 efficiency: 1; 2 fixed cost: 0) */
	static const struct {
		const char *sec, *key;
		int in_p;
		size_t off;
		int kind;
	} fig[] = {
	    {"gpu", "flops_bf16", 0, offsetof(mdl_hw_t, flops_bf16), 0},
	    {"gpu", "flops_fp8", 0, offsetof(mdl_hw_t, flops_fp8), 0},
	    {"gpu", "hbm_bw", 0, offsetof(mdl_hw_t, hbm_bw), 0},
	    {"gpu", "nvlink_bw", 0, offsetof(mdl_hw_t, nvlink_bw), 0},
	    {"compute", "mfu", 1, offsetof(mdl_compute_params_t, mfu), 1},
	    {"compute", "mbu", 1, offsetof(mdl_compute_params_t, mbu), 1},
	    {"compute", "gemm_mfu", 1, offsetof(mdl_compute_params_t, gemm_mfu), 1},
	    {"compute", "weight_mbu", 1, offsetof(mdl_compute_params_t, weight_mbu), 1},
	    {"compute", "attn_prefill_eff", 1, offsetof(mdl_compute_params_t, attn_prefill_eff), 1},
	    {"compute", "attn_decode_eff", 1, offsetof(mdl_compute_params_t, attn_decode_eff), 1},
	    {"compute", "elt_bw_eff", 1, offsetof(mdl_compute_params_t, elt_bw_eff), 1},
	    {"compute", "allreduce_bw_eff", 1, offsetof(mdl_compute_params_t, allreduce_bw_eff), 1},
	    {"compute", "gemm_half_flops", 1, offsetof(mdl_compute_params_t, gemm_half_flops), 2},
	    {"compute", "gemm_kernel_ns", 1, offsetof(mdl_compute_params_t, gemm_kernel_ns), 2},
	    {"compute", "small_kernel_ns", 1, offsetof(mdl_compute_params_t, small_kernel_ns), 2},
	};
	for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
		mdl_hw_t hw = c->hw;
		mdl_compute_params_t p = c->p;
		double *v = (double *)(void *)((char *)(fig[i].in_p ? (void *)&p : (void *)&hw) +
		                               fig[i].off);
		double was = *v, sane = fig[i].kind == 0 ? 1e18 : fig[i].kind == 1 ? 1 : 0;
		/* an unused figure (no FP8, elementwise or GEMM-curve terms off)
		 * stays unused; a figure already harmless is not the cause */
		if (was == sane || (fig[i].kind != 2 && was == 0 &&
		                    (!strcmp(fig[i].key, "flops_fp8") || !strcmp(fig[i].key, "elt_bw_eff") ||
		                     !strcmp(fig[i].key, "gemm_mfu"))))
			continue;
		*v = sane;
		mdl_compute_t x;
		if (mdl_compute_init(&x, &hw, &c->llm, c->tp, &p, NULL))
			continue;
		if (cost_exact_ns(&x, b, NULL) < limit_ns) {
			snprintf(why, n, "[%s] %s: %.6g", fig[i].sec, fig[i].key, was);
			return t / 1e9;
		}
	}
	const char *term = !(r.t_attn_ns < limit_ns)     ? "prefill attention"
	                   : !(r.t_weight_ns < limit_ns) ? "weight read"
	                   : !(r.t_kv_ns < limit_ns)     ? "KV read"
	                   : !(r.t_comm_ns < limit_ns)   ? "all-reduce"
	                   : !(r.t_memory_ns < limit_ns) ? "memory side"
	                   : !(r.t_fixed_ns < limit_ns)  ? "fixed kernels"
	                                                 : "compute side";
	snprintf(why, n, "the %s of the cost model ([gpu] and [compute] figures together)", term);
	return t / 1e9;
}

int mdl_compute_check_finite(const mdl_compute_t *c, err_t *e)
{
	uint32_t one = 1, none = 0;
	mdl_batch_t pre = {.n_prefill = 1, .prefill_new = &one, .prefill_cached = &none};
	mdl_batch_t dec = {.n_decode = 1, .decode_ctx = &one};
	const mdl_batch_t *probe[] = {&pre, &dec};
	for (int i = 0; i < 2; i++) {
		if (mdl_iter_cost(c, probe[i], NULL) < INT64_MAX)
			continue;
		char why[160];
		double sec = mdl_cost_blame(c, probe[i], 9.2e18, why, sizeof why);
		return err_set(e, KS_EINPUT,
		               "%s makes one iteration of one %s token take %.3g s, past the largest "
		               "simulated time (%.3g s): no run can finish",
		               why, i ? "decode" : "prefill", sec, (double)INT64_MAX / 1e9);
	}
	return 0;
}

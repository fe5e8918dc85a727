/* gv_prof — kvreplay compute rows to profile rows. See gv_prof.h. */
#include "gpu_validation/gv_prof.h"

#include <stdlib.h>
#include <string.h>

static const char *const ops[] = {"gemm_qkv", "gemm_o", "gemm_gate_up", "gemm_down"};
#define N_OPS 4

int gv_prof_rows(const char *origin, const gv_meas_t *m, const mdl_llm_t *llm,
                 mdl_prof_row_t **rows, size_t *n, err_t *e)
{
	int64_t q = (int64_t)llm->heads * llm->head_dim, tp = 0;
	for (size_t i = 0; i < m->n_comp && !tp; i++)
		if (!strcmp(m->comp[i].op, "gemm_o") && m->comp[i].k > 0)
			tp = q / m->comp[i].k;
	if (tp < 1 || q % tp || (int64_t)llm->heads % tp)
		return err_set(e, KS_EINPUT,
		               "%s: gemm_o's input width is not %s's heads*head_dim / tp "
		               "(measured with another model's shapes?)",
		               origin, llm->name);
	/* the per-GPU shapes (n, k) kvreplay was given for this tp */
	int64_t h = llm->hidden, ffn = llm->intermediate / tp, d = llm->head_dim;
	int64_t kv = llm->kv_heads >= tp ? llm->kv_heads / tp : 1;
	const int64_t want[N_OPS][2] = {
	    {(llm->heads / tp + 2 * kv) * d, h}, {h, q / tp}, {2 * ffn, h}, {h, ffn}};
	size_t base = *n;
	for (size_t i = 0; i < m->n_comp; i++) {
		const gv_compute_t *c = &m->comp[i];
		if (strcmp(c->op, "gemm_qkv"))
			continue; /* one row per token count, keyed by its qkv GEMM */
		mdl_prof_row_t r = {(uint32_t)tp, (uint32_t)c->m, llm->heads, llm->kv_heads,
		                    llm->hidden, llm->intermediate, 0, 0};
		for (int k = 0; k < N_OPS; k++) {
			const gv_compute_t *hit = NULL;
			for (size_t j = 0; j < m->n_comp && !hit; j++)
				if (!strcmp(m->comp[j].op, ops[k]) && m->comp[j].m == c->m)
					hit = &m->comp[j];
			if (!hit || hit->time_ns <= 0) {
				*n = base;
				return err_set(e, KS_EINPUT, "%s: %s at %lld tokens: missing", origin,
				               ops[k], (long long)c->m);
			}
			if (hit->n != want[k][0] || hit->k != want[k][1]) {
				*n = base;
				return err_set(e, KS_EINPUT,
				               "%s: %s is %lldx%lld, not %s's %lldx%lld at tp %lld", origin,
				               ops[k], (long long)hit->k, (long long)hit->n, llm->name,
				               (long long)want[k][1], (long long)want[k][0], (long long)tp);
			}
			r.gemm_ns += (double)hit->time_ns;
		}
		mdl_prof_row_t *g = realloc(*rows, (*n + 1) * sizeof **rows);
		if (!g) {
			*n = base;
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		*rows = g;
		(*rows)[(*n)++] = r;
	}
	if (*n == base)
		return err_set(e, KS_EINPUT, "%s: no GEMM rows (run kvreplay with --compute)",
		               origin);
	return 0;
}

/* gv_check — join a run schedule with measurements (see gv_check.h). */
#include "gpu_validation/gv_check.h"

#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const res_transfer_t *)a)->id, y = ((const res_transfer_t *)b)->id;
	return (x > y) - (x < y);
}

int gv_check(const gv_sched_t *run, const gv_meas_t *m, const mdl_xfer_t *x, gv_check_row_t **rows,
             gv_check_summary_t *s, err_t *e)
{
	memset(s, 0, sizeof *s);
	*rows = NULL;
	size_t nr = run->n ? run->n : 1;
	res_transfer_t *sorted = malloc(nr * sizeof *sorted);
	gv_check_row_t *out = calloc(m->n_copy + 1, sizeof *out);
	double *em = malloc((m->n_copy + 1) * sizeof *em),
	       *es = malloc((m->n_copy + 1) * sizeof *es);
	if (!sorted || !out || !em || !es) {
		free(sorted);
		free(out);
		free(em);
		free(es);
		return err_set(e, KS_ENOMEM, "check: out of memory");
	}
	memcpy(sorted, run->xfer, run->n * sizeof *sorted);
	qsort(sorted, run->n, sizeof *sorted, cmp_id);
	size_t n = 0;
	for (size_t i = 0; i < m->n_copy; i++) {
		const gv_copy_t *c = &m->copy[i];
		res_transfer_t key = {.id = c->id};
		const res_transfer_t *t = bsearch(&key, sorted, run->n, sizeof *sorted, cmp_id);
		if (!t || c->end_ns <= c->start_ns) {
			s->n_unmatched++;
			continue;
		}
		gv_check_row_t *r = &out[n];
		*r = (gv_check_row_t){.id = c->id,
		                      .kind = c->kind,
		                      .link = c->link,
		                      .shape = c->shape,
		                      .bytes = c->bytes,
		                      .blocks = c->blocks,
		                      .m_same = c->m_same,
		                      .m_opp = c->m_opp,
		                      .sim_ns = (double)(t->end_ns - t->start_ns),
		                      .model_ns = gv_fit_predict(x, c),
		                      .meas_ns = (double)(c->end_ns - c->start_ns)};
		em[n] = (r->model_ns - r->meas_ns) / r->meas_ns;
		es[n] = (r->sim_ns - r->meas_ns) / r->meas_ns;
		n++;
	}
	free(sorted);
	int rc = 0;
	if (!n) {
		rc = err_set(e, KS_EINPUT,
		             "check: no measured copy matches a transfer id of the run");
		free(out);
		out = NULL;
	} else {
		s->n_rows = n;
		gv_err_summarize(em, n, &s->model);
		gv_err_summarize(es, n, &s->sim);
	}
	free(em);
	free(es);
	*rows = out;
	return rc;
}

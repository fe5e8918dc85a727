/* results — see results.h. */
#include "sim/base/mem.h"
#include "sim/base/vec.h"
#include "sim/base/results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/err.h"

void sim_results_free(sim_results_t *r)
{
	if (!r)
		return;
	FREE_ALL(r->req, r->xfer, r->tl, r->metric, r->dec, r->win, r->config_text);
	for (int t = 0; t < RES_T_N; t++)
		if (r->spill_fd_[t])
			close(r->spill_fd_[t] - 1);
	memset(r, 0, sizeof *r);
}

int sim_results_metric(sim_results_t *r, const char *name, const char *unit, double v)
{
	if (VEC_GROW(r->metric, r->cap_metric, r->n_metric + 1, 16))
		return KS_ENOMEM;
	res_metric_t *m = &r->metric[r->n_metric++];
	memset(m, 0, sizeof *m);
	strncpy(m->name, name, sizeof m->name - 1);
	strncpy(m->unit, unit ? unit : "", sizeof m->unit - 1);
	m->value = v;
	return 0;
}

double sim_results_get(const sim_results_t *r, const char *name)
{
	for (size_t i = 0; i < r->n_metric; i++)
		if (!strcmp(r->metric[i].name, name))
			return r->metric[i].value;
	return NAN;
}
